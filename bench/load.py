"""Issue 28's load bench: many machines' sessions in one PostgreSQL, people reading while
indexers append.

    export DATABASE_URL=postgres://postgres@127.0.0.1:54329/sv_load   # dropped and made again
    .venv/bin/python bench/load.py seed --sessions 10000 --copies 40 --machines 10
    .venv/bin/python bench/load.py run --users 50 --seconds 300 --appenders 4

`seed` writes bench/generate.py's history shape (--sessions files, in every format), indexes it
as machine-00 with `manage.py index`, then copies its rows inside PostgreSQL (--copies times in
all, over --machines machine names; copies past the machines are other roots of the same
machines), as if each machine had indexed a tree of its own: sessions, entries, problems and
thread snapshots, with their full-text index. Reading the files again for every copy would
take the indexer's time, which is not what this bench measures (bench/engines.py does).

`run` starts two web processes as `make cluster` does (gunicorn, gthread), --appenders indexers
(`manage.py index --watch`, each its own machine over a small tree of its own) while a thread
here appends a turn to one of their sessions every --append-every seconds, and then locust
(bench/locustfile.py) with --users people over both web processes. It prints p50, p95 and p99
per page, over the whole run, over the requests after the last login, and over those from
SETTLE_SECONDS after it (once the logins' backlog has cleared), and writes them to
bench/out/load.json. Locust is not in requirements-dev.txt (CI
has no use for it): `run` installs it the first time, into a virtualenv of its own
(data/load/locust-venv), so that its dependencies never change the app's.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DATA = ROOT / "data" / "load"
OUT = BENCH / "out"
LOCUST = "locust==2.47.0"
USER, PASSWORD = "load", "load-bench-password"
WEB_PORTS = (8001, 8002)
BASE_MACHINE = "machine-00"

sys.path.insert(0, str(BENCH))
import cluster  # noqa: E402
import generate  # noqa: E402
import whole_command  # noqa: E402


def environment(database_url: str, **added: str) -> dict[str, str]:
    """As bench/whole_command.py runs a command (the same throwaway key everywhere, no demo),
    with no roots unless added: the web processes have none."""
    return {**whole_command.environment(database_url, []), "PYTHONUNBUFFERED": "1", **added}


def manage(database_url: str, *args: str, **env: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environment(database_url, **env), check=True
    )


# --- seed ---------------------------------------------------------------------------------------


def seed(args: argparse.Namespace) -> None:
    url = database_url()
    tree = DATA / f"tree-{args.sessions}"
    if not tree.is_dir():
        print(f"generating {args.sessions:,} sessions in {tree} ...", flush=True)
        generate.generate_history(tree, args.sessions, seed=0)
    whole_command.migrate(ROOT, url)  # the database dropped and made again, then migrated
    started = time.monotonic()
    roots = "\n".join(cluster.tree_roots(tree))
    manage(url, "index", SESSIONVIEWER_ROOTS=roots, SESSIONVIEWER_MACHINE=BASE_MACHINE)
    print(f"indexed the base tree as {BASE_MACHINE} in {time.monotonic() - started:.1f} s", flush=True)
    code = (
        "import sys; sys.path.insert(0, 'bench'); import load; "
        f"load.copy_machines({args.copies}, {args.machines}); load.make_reader()"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment(url), check=True)


def database_url() -> str:
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        raise SystemExit("set DATABASE_URL to a PostgreSQL database this bench may drop and make again")
    return url


def copy_machines(copies: int, machines: int) -> None:
    """Copy machine-00's rows copies - 1 times, each as another machine's (or root's)."""
    import django

    django.setup()
    from django.db import connection, transaction

    from sessionviewer.index.tally import fold_pending
    from sessionviewer.models import Entry, Problem, Session, Source, ThreadPiece, ThreadSnapshot

    base_sources = list(Source.objects.filter(machine=BASE_MACHINE).values_list("id", flat=True))
    for copy in range(1, copies):
        started = time.monotonic()
        machine = f"machine-{copy % machines:02d}"
        suffix = "" if copy < machines else f"/copy-{copy // machines}"
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("CREATE TEMP TABLE source_map (old_id bigint, new_id bigint) ON COMMIT DROP")
            for old in base_sources:
                table = Source._meta.db_table
                insert = (
                    f"INSERT INTO {table} (machine, path, format, indexed_at) "  # noqa: S608 - the model's name
                    f"SELECT %s, path || %s, format, indexed_at FROM {table} WHERE id = %s RETURNING id"
                )
                cursor.execute(insert, [machine, suffix, old])
                cursor.execute("INSERT INTO source_map VALUES (%s, %s)", [old, cursor.fetchone()[0]])
            session_map = _id_map(cursor, Session, "session_map", f"source_id IN ({_ids(base_sources)})")
            _copy(
                cursor,
                Session,
                {
                    "id": "m.new_id",
                    "source_id": "sm.new_id",
                    "parent_id": "pm.new_id",
                    "path": f"t.path || '{suffix}'",
                },
                f"JOIN {session_map} m ON m.old_id = t.id JOIN source_map sm ON sm.old_id = t.source_id "
                f"LEFT JOIN {session_map} pm ON pm.old_id = t.parent_id",
            )
            for model in (Entry, Problem):
                _copy(
                    cursor,
                    model,
                    {"session_id": "m.new_id"},
                    f"JOIN {session_map} m ON m.old_id = t.session_id",
                )
            snapshot_map = _id_map(
                cursor,
                ThreadSnapshot,
                "snapshot_map",
                f"session_id IN (SELECT old_id FROM {session_map})",  # noqa: S608
            )
            _copy(
                cursor,
                ThreadSnapshot,
                {"id": "s.new_id", "session_id": "m.new_id"},
                f"JOIN {snapshot_map} s ON s.old_id = t.id JOIN {session_map} m ON m.old_id = t.session_id",
            )
            _copy(
                cursor,
                ThreadPiece,
                {"snapshot_id": "s.new_id"},
                f"JOIN {snapshot_map} s ON s.old_id = t.snapshot_id",
            )
        fold_pending()  # the copied sessions' counts, as an indexer's pass folds them (index/tally.py)
        print(f"copy {copy} ({machine}{suffix}): {time.monotonic() - started:.1f} s", flush=True)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"{Source.objects.values('machine').distinct().count()} machines, {Session.objects.count():,} sessions, "
        f"{Entry.objects.count():,} entries",
        flush=True,
    )


def _ids(ids: list[int]) -> str:
    return ",".join(str(int(i)) for i in ids) or "NULL"


def _id_map(cursor, model, name: str, where: str) -> str:
    """A temporary table of old id -> a new id from the model's sequence, for the rows where."""
    table = model._meta.db_table
    create = (
        f"CREATE TEMP TABLE {name} ON COMMIT DROP AS SELECT id AS old_id, "  # noqa: S608 - the model's name
        f"nextval(pg_get_serial_sequence('{table}', 'id')) AS new_id FROM {table} WHERE {where}"
    )
    cursor.execute(create)
    cursor.execute(f"CREATE INDEX ON {name} (old_id)")
    return name


def _copy(cursor, model, replaced: dict[str, str], joins: str) -> None:
    """INSERT the joined rows again, every column as it is but the replaced ones; a column
    the copy leaves out (an id from the sequence) is one whose replacement is not given."""
    table = model._meta.db_table
    cursor.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "AND is_generated = 'NEVER' ORDER BY ordinal_position",
        [table],
    )
    columns = [name for (name,) in cursor.fetchall() if name != "id" or "id" in replaced]
    values = [replaced.get(name, f't."{name}"') for name in columns]
    names = ", ".join(f'"{name}"' for name in columns)
    insert = f"INSERT INTO {table} ({names}) SELECT {', '.join(values)} FROM {table} t {joins}"  # noqa: S608
    cursor.execute(insert)


def make_reader() -> None:
    """The person locust logs in as: a viewer (reads sessions and workspaces, edits nothing)."""
    import django

    django.setup()
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username=USER)
    user.set_password(PASSWORD)
    user.save()
    user.groups.add(Group.objects.get(name="viewers"))


# --- run ----------------------------------------------------------------------------------------


def run(args: argparse.Namespace) -> None:
    url = database_url()
    locust = DATA / "locust-venv" / "bin" / "locust"
    if not locust.exists():  # a virtualenv of its own: locust's dependencies stay out of the app's
        subprocess.run([sys.executable, "-m", "venv", str(DATA / "locust-venv")], check=True)
        subprocess.run([str(locust.parent / "pip"), "install", "--quiet", LOCUST], check=True)
    logs = DATA / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    manage(url, "collectstatic", "--noinput", "--verbosity", "0")  # as `make cluster` does first
    pieces, stop = [], threading.Event()
    try:
        for port in WEB_PORTS:
            pieces.append(
                _start(
                    cluster.web_command(f"127.0.0.1:{port}", args.workers, args.threads),
                    url,
                    logs / f"web-{port}",
                )
            )
        live = []
        for n in range(args.appenders):
            tree = DATA / "live" / f"appender-{n}"
            shutil.rmtree(tree, ignore_errors=True)
            generate.generate_history(tree, 40, seed=100 + n, large_lines=0, formats=("claude_code",))
            files = sorted(tree.rglob("*.jsonl"))
            # A live session was written a moment ago: a turn of today's, before its indexer's
            # first pass, so that an append during the run moves no session to another month
            # or model, as an agent's next turn does not (the generated history is a year old).
            for path in files:
                _append_turn(path, f"start-{n}-{len(live)}")
                live.append(path)
            roots = "\n".join(cluster.tree_roots(tree))
            env = {"SESSIONVIEWER_ROOTS": roots, "SESSIONVIEWER_MACHINE": f"appender-{n}"}
            pieces.append(_start(cluster.INDEXER, url, logs / f"indexer-{n}", **env))
        _wait_for_web()
        appending = threading.Thread(target=_append, args=(live, args.append_every, stop), daemon=True)
        appending.start()
        OUT.mkdir(exist_ok=True)
        prefix = OUT / "load"
        load_before = os.getloadavg()
        reference = [machine_reference()]
        cpu = CpuWatch(url.rsplit("/", 1)[1])
        subprocess.run(
            [
                str(locust), "-f", str(BENCH / "locustfile.py"), "--headless", "--users", str(args.users),
                "--spawn-rate", str(args.spawn_rate), "--run-time", f"{args.seconds}s", "--csv", str(prefix),
                "--only-summary", "--host", f"http://127.0.0.1:{WEB_PORTS[0]}",
            ],
            cwd=ROOT,
            env={
                **os.environ,
                "LOAD_HOSTS": ",".join(f"http://127.0.0.1:{port}" for port in WEB_PORTS),
                "LOAD_USER": USER,
                "LOAD_PASSWORD": PASSWORD,
                "LOAD_REQUESTS": str(OUT / "load_requests.csv"),
            },
            check=False,
        )  # fmt: skip
        stop.set()
        parts = {
            "web": [p.pid for p in pieces[: len(WEB_PORTS)]],
            "indexers": [p.pid for p in pieces[len(WEB_PORTS) :]],
            "this script (appends)": [os.getpid()],
        }
        cpu_seconds = cpu.stop(parts)
        reference.append(machine_reference())
        figures = _figures(Path(f"{prefix}_stats.csv"))
        requests = [line.split(",") for line in (OUT / "load_requests.csv").read_text().splitlines()]
        result = {
            "users": args.users,
            "seconds": args.seconds,
            "appenders": args.appenders,
            "workers": args.workers,
            "threads": args.threads,
            "appended": appending_count[0],
            "load": [load_before, os.getloadavg()],
            "cpus": os.cpu_count(),
            "pages": figures,
            "after_logins": _after_logins(requests),
            "settled": _after_logins(requests, SETTLE_SECONDS),
            "cpu_seconds": cpu_seconds,
            "reference_ms": reference,
        }
        (OUT / "load.json").write_text(json.dumps(result, indent=2))
        print(report(result))
    finally:
        stop.set()
        for process in pieces:
            cluster.stop_group(process.pid, process.args)


class CpuWatch:
    """Where the machine's CPU went while locust ran: every process's user and system time
    (/proc/PID/stat), read each half second so that processes that end are counted too, then
    summed by part: the web processes, the indexers and this script (each with every process
    under it), PostgreSQL's server (its backends of other databases apart), locust, and
    anything else running on the machine."""

    def __init__(self, database: str) -> None:
        self.database = database  # the bench's, by name
        self.titles: dict[int, str] = {}  # a PostgreSQL process's title, which names its database
        self.first: dict[int, float] = {}
        self.last: dict[int, tuple[str, int, float]] = {}  # pid: name, parent, CPU seconds
        self.started = time.monotonic()
        self._sample(first=True)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _sample(self, first: bool = False) -> None:
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            if (found := whole_command.process_cpu(pid)) is None:  # it ended meanwhile
                continue
            name, _parent, seconds = found
            if first:
                self.first[pid] = seconds
            self.last[pid] = found
            if name.startswith("postgres") and pid not in self.titles:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as title:
                        self.titles[pid] = title.read().replace(b"\0", b" ").decode(errors="replace")
                except OSError:
                    pass

    def _watch(self) -> None:
        while not self.done.wait(0.5):
            self._sample()

    def _server_part(self, pid: int, name: str) -> str:
        """A PostgreSQL backend's title names its database ("postgres: USER DB HOST ..."): the
        bench's, or another's (other jobs on the machine); the server's own processes count
        as the bench's."""
        if not name.startswith("postgres"):
            return "other"
        title = self.titles.get(pid, "").split()
        if (
            len(title) >= 3
            and title[0] == "postgres:"
            and "process" not in title
            and title[2] != self.database
        ):
            return "PostgreSQL, other databases"
        return "PostgreSQL"

    def stop(self, parts: dict[str, list[int]]) -> dict[str, float]:
        self.done.set()
        self.thread.join()
        self._sample()
        wall = time.monotonic() - self.started
        owner = {pid: name for name, pids in parts.items() for pid in pids}

        def part_of(pid: int) -> str:
            seen = set()
            while pid > 1 and pid not in seen:
                if pid in owner:
                    return owner[pid]
                seen.add(pid)
                pid = self.last[pid][1] if pid in self.last else 0
            return ""

        found = dict.fromkeys([*parts, "PostgreSQL", "PostgreSQL, other databases", "locust", "other"], 0.0)
        for pid, (name, _parent, seconds) in self.last.items():
            used = seconds - self.first.get(pid, 0.0)
            # locust runs under this script, so by its name first
            part = "locust" if "locust" in name else part_of(pid) or self._server_part(pid, name)
            found[part] += used
        found["wall"] = wall
        return found


def _start(argv: list[str], url: str, log: Path, **env: str) -> subprocess.Popen:
    with open(f"{log}.log", "ab") as out:
        return subprocess.Popen(
            cluster.resolved(argv),
            cwd=ROOT,
            env=environment(url, **env),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _wait_for_web(seconds: float = 60) -> None:
    import urllib.request

    deadline = time.monotonic() + seconds
    for port in WEB_PORTS:
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=5)  # noqa: S310 - loopback
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the web process on {port} did not answer in {seconds:.0f} s") from None
                time.sleep(0.5)


appending_count = [0]


def _append(files: list[Path], every: float, stop: threading.Event) -> None:
    """A turn (a prompt and its reply) appended to one live session at a time, as an agent
    writes them, so that the indexers read appends the whole run long."""
    rng = random.Random(0)
    while files and not stop.wait(every):
        _append_turn(rng.choice(files), str(appending_count[0]))
        appending_count[0] += 1


def _append_turn(path: Path, n: str) -> None:
    """A prompt and its reply at the end of a Claude Code session, stamped now, the reply by
    the model the session's last reply named."""
    lines = path.read_bytes().rstrip().split(b"\n")
    last = orjson.loads(lines[-1])
    parent, session = last.get("uuid"), last.get("sessionId", "s")
    model = "claude-sonnet-4-5"
    for line in reversed(lines):
        message = orjson.loads(line).get("message") if b'"model"' in line else None
        if isinstance(message, dict) and message.get("model"):
            model = message["model"]
            break
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    prompt = {
        "type": "user",
        "uuid": f"load-u{n}",
        "parentUuid": parent,
        "sessionId": session,
        "timestamp": stamp,
        "message": {"role": "user", "content": f"load prompt {n}: index the database request"},
    }
    reply = {
        "type": "assistant",
        "uuid": f"load-a{n}",
        "parentUuid": f"load-u{n}",
        "sessionId": session,
        "timestamp": stamp,
        "message": {
            "id": f"load-msg-{n}",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": f"load reply {n}: the session reader parses it"}],
            "usage": {"input_tokens": 100, "output_tokens": 20},
        },
    }
    with open(path, "ab") as out:
        out.write(orjson.dumps(prompt) + b"\n" + orjson.dumps(reply) + b"\n")


def _figures(stats: Path) -> dict[str, dict]:
    """Locust's per-request-name figures, in milliseconds."""
    figures = {}
    with open(stats, newline="") as rows:
        for row in csv.DictReader(rows):
            figures[row["Name"]] = {
                "requests": int(row["Request Count"]),
                "failures": int(row["Failure Count"]),
                "p50": float(row["50%"]),
                "p95": float(row["95%"]),
                "p99": float(row["99%"]),
                "rps": float(row["Requests/s"]),
            }
    return figures


def _after_logins(rows: list[list[str]], settle: float = 0.0) -> dict[str, dict]:
    """Each page's figures over the requests that ended after the last person logged in,
    and settle seconds more: the first seconds' 50 password hashes at once (Django's
    PBKDF2, 0.19 s of a core each) hold up every page then, which locust's figures of the
    whole run include. The pages queued behind them end in the second after the last
    login, and each person's first list (100 rows) follows their login: SETTLE_SECONDS
    leaves both out as well. rows: the lines of LOAD_REQUESTS, split."""
    logged_in = settle + max((float(end) for name, end, _, _ in rows if name == "login"), default=0.0)
    times: dict[str, list[float]] = {}
    failed: dict[str, int] = {}
    for name, end, ms, failure in rows:
        if float(end) > logged_in and not name.startswith("login"):
            times.setdefault(name, []).append(float(ms))
            failed[name] = failed.get(name, 0) + int(failure)
    times["Aggregated"] = sorted(ms for page in times.values() for ms in page)
    failed["Aggregated"] = sum(failed.values())

    def rank(ordered: list[float], share: float) -> float:  # the nearest rank
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)]

    figures = {}
    for name, page in times.items():
        ordered = sorted(page)
        figures[name] = {
            "requests": len(ordered),
            "failures": failed[name],
            "p50": rank(ordered, 0.50),
            "p95": rank(ordered, 0.95),
            "p99": rank(ordered, 0.99),
        }
    return figures


SETTLE_SECONDS = 10  # after the last login: the "settled" figures (_after_logins)


# The machine's speed, measured beside each run: the CPU to parse a fixed corpus, as the parse
# floor does (bench_index.parse_floor). The same code's web CPU a request moved 1.5x between two days on this
# machine (bench/README.md), as much as a change would; divided by this, it moves less.
REFERENCE_SESSIONS = 400


def machine_reference() -> float:
    """CPU milliseconds to parse a fixed corpus (generated once) line by line with orjson, the
    least of 5: CPU, not wall, so that what else runs beside it counts little."""
    tree = DATA / "reference"
    if not (tree / "done").exists():
        shutil.rmtree(tree, ignore_errors=True)
        generate.generate_history(tree, REFERENCE_SESSIONS, seed=0, large_lines=0)
        (tree / "done").touch()
    lines = [
        line for path in sorted(tree.rglob("*.jsonl")) for line in path.read_bytes().splitlines() if line
    ]
    best = math.inf
    for _ in range(5):
        started = time.process_time()
        for line in lines:
            orjson.loads(line)
        best = min(best, time.process_time() - started)
    return 1000 * best


def report(result: dict) -> str:
    load = " then ".join(" ".join(f"{x:.2f}" for x in triple) for triple in result["load"])
    lines = [
        f"{result['users']} users for {result['seconds']} s over {len(WEB_PORTS)} web processes "
        f"({result.get('workers', 3)} workers of {result.get('threads', 4)} threads each), "
        f"{result['appenders']} indexers reading {result['appended']:,} appended turns; "
        f"load average {load} on {result['cpus']} CPUs",
        f"{'page':26}{'requests':>10}{'failures':>10}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}",
    ]
    if cpu := result.get("cpu_seconds"):
        wall, cores = cpu["wall"], result["cpus"] or 1
        shares = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in cpu.items() if name != "wall")
        used = sum(seconds for name, seconds in cpu.items() if name != "wall")
        lines.insert(1, f"CPU over {wall:.0f} s ({used / (wall * cores):.0%} of {cores} cores): {shares}")
        requests = result.get("pages", {}).get("Aggregated", {}).get("requests", 0)
        if requests and (web := cpu.get("web")):
            speed = ""
            if reference := result.get("reference_ms"):
                speed = (
                    f"; the machine's reference (CPU to parse a fixed corpus) {reference[0]:.1f} ms before the "
                    f"run and {reference[-1]:.1f} ms after, so a request is "
                    f"{1000 * web / requests / statistics.median(reference):.2f} references"
                )
            lines.insert(2, f"web CPU a request (logins included): {1000 * web / requests:.1f} ms{speed}")
    for title, part in (
        ("the whole run", "pages"),
        ("after the last login", "after_logins"),
        (f"settled: from {SETTLE_SECONDS} s after the last login", "settled"),
    ):
        lines.append(title)
        for name, row in result.get(part, {}).items():
            lines.append(
                f"{name:26}{row['requests']:>10,}{row['failures']:>10,}{row['p50']:>9.0f}{row['p95']:>9.0f}{row['p99']:>9.0f}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    seeding = commands.add_parser("seed", help="index a history and copy it as many machines'")
    seeding.add_argument("--sessions", type=int, default=10_000, help="session files of the base tree")
    seeding.add_argument("--copies", type=int, default=10, help="copies of the base tree's rows, in all")
    seeding.add_argument("--machines", type=int, default=10, help="machine names the copies go to")
    seeding.set_defaults(handler=seed)
    running = commands.add_parser("run", help="serve, append, and read with locust")
    running.add_argument("--users", type=int, default=50)
    running.add_argument("--spawn-rate", type=float, default=10)
    running.add_argument("--seconds", type=int, default=300)
    running.add_argument("--appenders", type=int, default=4)
    running.add_argument("--append-every", type=float, default=0.5, help="seconds between two appended turns")
    running.add_argument("--workers", type=int, default=3, help="gunicorn workers per web process")
    running.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker")
    running.set_defaults(handler=run)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
