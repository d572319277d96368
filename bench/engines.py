"""The cold index on PostgreSQL beside SQLite: one tree, the same corpus, alternating.

    .venv/bin/python bench/engines.py --database-url postgres://postgres@127.0.0.1:54329/sv_engines
    .venv/bin/python bench/engines.py --database-url URL --shape history --pairs 3
    .venv/bin/python bench/engines.py --database-url URL --shape history --server-cpus 1

Each pair runs `manage.py index -v 2` as a whole command (whole_command.py), cold into a
fresh database on each engine, then a pass again with nothing changed; the order within a
pair alternates. The URL names a database this bench drops and makes again (and one beside
it, NAME_template, migrated once): never point it at an index you keep. The server is the
machine's own here, so its CPU is shared with the indexer's: on two cores, what PostgreSQL
spends on its GIN index is time the indexer does not get.

On a machine others share, the wall clock moves with their load; the CPU a cold index takes
moves less. So each cold index's CPU is measured too: the indexer's processes (its own and
its reading worker's, from the rusage of children) and, on PostgreSQL, its server backends
(/proc/PID/stat, read every 50 ms while the command runs: the server must be on this machine).

The server shares the commands' CPUs unless --server-cpus moves it onto CPUs of its own (the
commands then run on the others, both engines' alike): issue 28's shape, where PostgreSQL
has a host of its own and an indexer's machine spends no CPU on the server's work.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import generate
from bench_index import parse_floor, session_files
from whole_command import fresh, index, median_phases, migrate, phase_line, process_cpu, sessions_by_format

TREE = Path(__file__).resolve().parents[1]
ENGINES = ("sqlite", "postgresql")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="a PostgreSQL database to drop and make again")
    parser.add_argument("--shape", choices=("history", "small-history"), default="history")
    parser.add_argument("--sessions", type=int, default=generate.HISTORY_SESSIONS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--server-cpus",
        type=lambda text: {int(cpu) for cpu in text.split(",")},
        help="CPUs (as 1 or 2,3) to move the PostgreSQL server onto, while every command runs on "
        "the others: the server on a host of its own, as in issue 28's shape",
    )
    args = parser.parse_args()
    if args.server_cpus:
        split_cpus(args.database_url, args.server_cpus)
    folder = Path(tempfile.mkdtemp(prefix="sessionviewer-engines-"))
    try:
        print(f"generating the {args.shape} shape in {folder} ...", file=sys.stderr)
        if args.shape == "history":
            corpus = generate.generate_history(folder / "data", args.sessions, args.seed)
        else:
            corpus = generate.generate_small_history(folder / "data", args.seed)
        print(report(args, corpus, measure(args, corpus, folder)))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def split_cpus(url: str, server_cpus: set[int]) -> None:
    """The server's processes onto server_cpus (the backends it starts later inherit them from
    the postmaster) and this process, with the commands it starts, onto the other CPUs; the
    server is given every CPU back when this process ends. The server must run on this
    machine, and this process may set its processes' CPUs (as root, or as their user)."""
    import atexit

    import psycopg

    every = os.sched_getaffinity(0)
    if not server_cpus < every:
        raise SystemExit(
            f"--server-cpus {sorted(server_cpus)}: leave the commands some of CPUs {sorted(every)}"
        )
    server, _ = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        pids = {pid for (pid,) in connection.execute("SELECT pid FROM pg_stat_activity") if pid}
    postmasters = {_parent(pid) for pid in pids}
    for pid in postmasters | pids:
        try:
            os.sched_setaffinity(pid, server_cpus)
        except (PermissionError, ProcessLookupError) as error:
            raise SystemExit(
                f"could not move the server's process {pid} onto CPUs {sorted(server_cpus)}: {error}"
            ) from error
    atexit.register(_give_back, postmasters, every)
    os.sched_setaffinity(0, every - server_cpus)
    print(
        f"server on CPUs {sorted(server_cpus)}, every command on {sorted(every - server_cpus)}",
        file=sys.stderr,
    )


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _give_back(postmasters: set[int], cpus: set[int]) -> None:
    """Every CPU to the server's processes again (the backends it started meanwhile have ended)."""
    for postmaster in postmasters:
        children = Path(f"/proc/{postmaster}/task/{postmaster}/children")
        for pid in {postmaster, *map(int, children.read_text().split() if children.exists() else [])}:
            with suppress(OSError):  # it ended
                os.sched_setaffinity(pid, cpus)


def measure(args: argparse.Namespace, corpus: dict, folder: Path) -> dict:
    roots = [(fmt, str(path)) for fmt, path in corpus["roots"]]
    databases = {"sqlite": folder / "run.sqlite3", "postgresql": args.database_url}
    templates = {"sqlite": folder / "template.sqlite3", "postgresql": f"{args.database_url}_template"}
    for engine in ENGINES:
        migrate(TREE, templates[engine])
    paths = session_files(roots)
    parse_floor(paths)  # warm the page cache
    runs = {engine: {"cold": [], "nochange": []} for engine in ENGINES}
    floors, counts, load = [], {}, [os.getloadavg()]
    for pair in range(args.pairs):
        floors.append(parse_floor(paths))
        for engine in ENGINES if pair % 2 == 0 else ENGINES[::-1]:
            fresh(templates[engine], databases[engine])
            with cpu_of(databases[engine]) as cpu:
                runs[engine]["cold"].append(index(TREE, databases[engine], roots))
            runs[engine]["cold"][-1].cpu = cpu
            counts[engine] = counts.get(engine) or sessions_by_format(databases[engine])
            runs[engine]["nochange"].append(index(TREE, databases[engine], roots))
        cold = {engine: runs[engine]["cold"][-1].seconds for engine in ENGINES}
        print(
            f"pair {pair + 1}: floor {floors[-1]:.3f} s; cold SQLite {cold['sqlite']:.3f} s, "
            f"PostgreSQL {cold['postgresql']:.3f} s; load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
    load.append(os.getloadavg())
    return {"runs": runs, "floors": floors, "counts": counts, "load": load}


class _Cpu(dict):
    """Seconds of CPU: "indexer" (its processes) and "server" (its PostgreSQL backends)."""

    @property
    def total(self) -> float:
        return self["indexer"] + self["server"]


@contextmanager
def cpu_of(database) -> Iterator[_Cpu]:
    """The CPU the command run inside takes, filled in when it ends."""
    cpu = _Cpu(indexer=0.0, server=0.0)
    backends: dict[int, float] = {}
    done = threading.Event()
    watcher = None
    if isinstance(database, str):
        watcher = threading.Thread(target=_watch_backends, args=(database, backends, done))
        watcher.start()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        yield cpu
    finally:
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        done.set()
        if watcher is not None:
            watcher.join()
        cpu["indexer"] = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
        cpu["server"] = sum(backends.values())


def _watch_backends(url: str, backends: dict[int, float], done: threading.Event) -> None:
    """Each backend of url's database, and the CPU it had taken when last seen."""
    import psycopg

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        while not done.wait(0.05):
            for (pid,) in connection.execute("SELECT pid FROM pg_stat_activity WHERE datname = %s", [name]):
                if (found := process_cpu(pid)) is not None:  # None: it ended, or the server is elsewhere
                    backends[pid] = found[2]


def report(args: argparse.Namespace, corpus: dict, result: dict) -> str:
    runs, floors = result["runs"], result["floors"]
    floor = statistics.median(floors)
    lines = [
        f"corpus: {args.shape}, {corpus['bytes'] / generate.MB:.1f} MB, {corpus['files']:,} files, "
        f"{corpus['lines']:,} lines",
        "load average (1, 5, 15 min): "
        + " at the end ".join(" ".join(f"{x:.2f}" for x in load) for load in result["load"])
        + f"; {os.cpu_count()} CPUs"
        + (
            f", PostgreSQL's server on {sorted(args.server_cpus)}, the commands on {sorted(os.sched_getaffinity(0))}"
            if args.server_cpus
            else ""
        ),
        f"parse floor (orjson.loads per line): median {floor:.3f} s",
        f"sessions by format: SQLite {result['counts']['sqlite']}, PostgreSQL {result['counts']['postgresql']}",
        f"{'':17}{'SQLite: median':24}{'PostgreSQL: median':24}PostgreSQL / SQLite, median of {args.pairs} pairs",
    ]
    for kind, label in (("cold", "cold index"), ("nochange", "no-change pass")):
        medians = {engine: statistics.median(run.seconds for run in runs[engine][kind]) for engine in ENGINES}
        cells = [
            f"{medians[engine]:.3f} s"
            + (f" ({medians[engine] / floor:.1f}x floor)" if kind == "cold" else "")
            for engine in ENGINES
        ]
        pairs = [
            pg.seconds / sq.seconds
            for sq, pg in zip(runs["sqlite"][kind], runs["postgresql"][kind], strict=True)
        ]
        lines.append(
            f"{label:17}{cells[0]:24}{cells[1]:24}{statistics.median(pairs):.2f}x ({min(pairs):.2f}-{max(pairs):.2f})"
        )
    cpu = {engine: [run.cpu for run in runs[engine]["cold"]] for engine in ENGINES}
    pairs = [pg.total / sq.total for sq, pg in zip(cpu["sqlite"], cpu["postgresql"], strict=True)]
    lines.append(
        "cold index CPU, medians: SQLite "
        f"{statistics.median(c.total for c in cpu['sqlite']):.3f} s, PostgreSQL "
        f"{statistics.median(c['indexer'] for c in cpu['postgresql']):.3f} s indexer + "
        f"{statistics.median(c['server'] for c in cpu['postgresql']):.3f} s server; PostgreSQL / SQLite "
        f"{statistics.median(pairs):.2f}x ({min(pairs):.2f}-{max(pairs):.2f})"
    )
    lines.append("phases of the cold index, medians:")
    for engine in ENGINES:
        lines.append(f"  {engine}: {phase_line(median_phases(runs[engine]['cold']))}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
