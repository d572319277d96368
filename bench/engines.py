"""The cold index on PostgreSQL beside SQLite: one tree, the same corpus, alternating.

    .venv/bin/python bench/engines.py --database-url postgres://postgres@127.0.0.1:54329/sv_engines
    .venv/bin/python bench/engines.py --database-url URL --shape history --pairs 3

Each pair runs `manage.py index -v 2` as a whole command (whole_command.py), cold into a
fresh database on each engine, then a pass again with nothing changed; the order within a
pair alternates. The URL names a database this bench drops and makes again (and one beside
it, NAME_template, migrated once): never point it at an index you keep. The server is the
machine's own here, so its CPU is shared with the indexer's: on two cores, what PostgreSQL
spends on its GIN index is time the indexer does not get.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

import generate
from bench_index import parse_floor, session_files
from whole_command import fresh, index, median_phases, migrate, phase_line, sessions_by_format

TREE = Path(__file__).resolve().parents[1]
ENGINES = ("sqlite", "postgresql")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True, help="a PostgreSQL database to drop and make again")
    parser.add_argument("--shape", choices=("history", "small-history"), default="history")
    parser.add_argument("--sessions", type=int, default=generate.HISTORY_SESSIONS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pairs", type=int, default=3)
    args = parser.parse_args()
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
            runs[engine]["cold"].append(index(TREE, databases[engine], roots))
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


def report(args: argparse.Namespace, corpus: dict, result: dict) -> str:
    runs, floors = result["runs"], result["floors"]
    floor = statistics.median(floors)
    lines = [
        f"corpus: {args.shape}, {corpus['bytes'] / generate.MB:.1f} MB, {corpus['files']:,} files, "
        f"{corpus['lines']:,} lines",
        "load average (1, 5, 15 min): "
        + " at the end ".join(" ".join(f"{x:.2f}" for x in load) for load in result["load"])
        + f"; {os.cpu_count()} CPUs",
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
    lines.append("phases of the cold index, medians:")
    for engine in ENGINES:
        lines.append(f"  {engine}: {phase_line(median_phases(runs[engine]['cold']))}")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
