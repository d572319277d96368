"""Compare the cold index of two versions of the code, run alternately on one corpus.

On a shared machine a single `make bench` cannot show a change under about 15%: the
same code reads 8x in one run and 13x in the next. Two versions run one after the
other, many times, drift together; the median of the paired ratios is what to quote.

    .venv/bin/python bench/compare.py OLD_TREE NEW_TREE [--pairs 11] [--mb 50]
    .venv/bin/python bench/compare.py OLD_TREE NEW_TREE --shape history [--sessions 6387] [--pairs 5]
    .venv/bin/python bench/compare.py OLD_TREE NEW_TREE --shape small-history [--pairs 5]
    .venv/bin/python bench/compare.py OLD_TREE NEW_TREE --shape history --database-url postgres://.../sv_compare

A tree is a folder holding a version's `sessionviewer/` package, for example
`git worktree add /tmp/old HEAD~3`. Each version migrates its own template database,
and every run is a fresh process that copies it and indexes the corpus cold.
The order within a pair alternates, so neither version always runs first.

The default shape (`--shape corpus`, generate.generate) times index_roots inside the
process, as it always has. The history shapes (generate.generate_history and
generate_small_history), or `--command` with any shape, time what a user waits for:
`manage.py index` as a whole command (whole_command.py), start-up included, three
ways in each pair: a cold index into a fresh database, a pass again with nothing
changed, and a pass over an empty root (start-up and little else). Each cold index
is also divided by the parse floor taken at the start of its pair; the phases of the
pass are shown for a tree that prints them (`index -v 2`). Only the formats both trees
read are indexed (a tree from before the Codex reader leaves the Codex root out).
With --database-url, the commands index into that PostgreSQL database (dropped and made
again for each run, from a template per tree beside it) rather than SQLite.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import generate
import orjson
from bench_index import parse_floor, session_files  # the floor bench_index.py pairs a cold index with
from whole_command import (
    formats_of,
    fresh,
    index,
    median_phases,
    migrate,
    phase_line,
    sessions_by_format,
)

OUT = Path(__file__).resolve().parent / "out"
SHAPES = ("corpus", "history", "small-history")
KINDS = {"cold": "cold index", "nochange": "no-change pass", "nothing": "nothing to read"}

# Run in a fresh interpreter with the tree first on sys.path: argv is the tree, the
# database to create from the template, the template, then (format, root) pairs.
RUN = """
import os, shutil, sys, time
from pathlib import Path
tree, database, template, *pairs = sys.argv[1:]
sys.path.insert(0, tree)
os.environ.update(DATABASE_URL=f"sqlite:///{database}", DJANGO_SETTINGS_MODULE="sessionviewer.settings",
                  DEBUG="0", SECRET_KEY="bench-only")
import django
django.setup()
if template == "-":
    from django.core.management import call_command
    call_command("migrate", verbosity=0)
    sys.exit()
shutil.copyfile(template, database)
try:
    from sessionviewer.index import index_roots
except ImportError:  # a tree from before the index was a package
    from sessionviewer.indexer import index_roots
from sessionviewer.roots import RootSpec
specs = [RootSpec(Path(root), fmt) for fmt, root in zip(pairs[::2], pairs[1::2])]
started = time.perf_counter()
summary = index_roots(specs)
print(time.perf_counter() - started, summary.entries)
"""


def run(tree: Path, database: Path, template: str, roots: list) -> tuple[float, int]:
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    pairs = [str(item) for fmt, root in roots for item in (fmt, root)]
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(tree), str(database), template, *pairs],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
    )
    if done.returncode != 0:
        raise SystemExit(f"{tree}: the run failed:\n{done.stderr[-3000:]}")
    if template == "-":
        return 0.0, 0
    seconds, entries = done.stdout.split()
    return float(seconds), int(entries)


def make_corpus(shape: str, target: Path, args: argparse.Namespace) -> dict:
    if shape == "history":
        return generate.generate_history(target, args.sessions, args.seed)
    if shape == "small-history":
        return generate.generate_small_history(target, args.seed)
    return generate.generate(target, args.mb, args.seed, generate.FORMATS)


def compare_commands(
    trees: list[Path], corpus: dict, folder: Path, pairs: int, url: str | None = None
) -> dict:
    """Whole `manage.py index` commands of both trees, alternating: cold, no change, nothing;
    into SQLite, or the PostgreSQL database at url."""
    known = formats_of(trees[0]) & formats_of(trees[1])
    roots = [(fmt, str(path)) for fmt, path in corpus["roots"] if fmt in known]
    empty = folder / "empty"
    empty.mkdir()
    if url:
        templates, database = [f"{url}_template_{number}" for number in range(2)], url
    else:
        templates, database = (
            [folder / f"template-{number}.sqlite3" for number in range(2)],
            folder / "run.sqlite3",
        )
    for tree, template in zip(trees, templates, strict=True):
        migrate(tree, template)
    paths = session_files(roots)
    parse_floor(paths)  # warm the page cache: the floor and the index read the files from memory
    runs: dict[str, list[list]] = {kind: [[], []] for kind in KINDS}
    floors, counts, load = [], [{}, {}], [os.getloadavg()]
    for pair in range(pairs):
        floors.append(parse_floor(paths))
        for side in (0, 1) if pair % 2 == 0 else (1, 0):
            fresh(templates[side], database)
            runs["cold"][side].append(index(trees[side], database, roots))
            counts[side] = counts[side] or sessions_by_format(database)
            runs["nochange"][side].append(index(trees[side], database, roots))
            fresh(templates[side], database)
            runs["nothing"][side].append(index(trees[side], database, [("claude_code", str(empty))]))
        cold = runs["cold"]
        print(
            f"pair {pair + 1}: floor {floors[-1]:.3f} s; cold old {cold[0][-1].seconds:.3f} s, "
            f"new {cold[1][-1].seconds:.3f} s; load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
    load.append(os.getloadavg())
    return {
        "roots": roots,
        "left_out": sorted({fmt for fmt, _ in corpus["roots"]} - known),
        "floors": floors,
        "runs": runs,
        "sessions_by_format": counts,
        "load": load,
    }


def command_report(trees: list[Path], args: argparse.Namespace, corpus: dict, result: dict) -> str:
    runs, floors = result["runs"], result["floors"]
    lines = [
        f"corpus: {args.shape}, {corpus['bytes'] / generate.MB:.1f} MB, {corpus['files']:,} files, "
        f"{corpus['lines']:,} lines; indexed: {', '.join(fmt for fmt, _ in result['roots'])}"
        + (
            f" (left out, not read by both trees: {', '.join(result['left_out'])})"
            if result["left_out"]
            else ""
        ),
        f"load average (1, 5, 15 min): {' '.join(f'{x:.2f}' for x in result['load'][0])} at the start, "
        f"{' '.join(f'{x:.2f}' for x in result['load'][1])} at the end; {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}",
        f"parse floor (orjson.loads per line): median {statistics.median(floors):.3f} s",
    ]
    for side, name in enumerate(("old", "new")):
        cold = runs["cold"][side][0]
        lines.append(
            f"{name} {trees[side]}: {cold.sessions:,} sessions, {cold.entries:,} entries, "
            f"{cold.bad_lines} bad lines, {cold.errors} errors; by format {result['sessions_by_format'][side]}"
        )
    header = ("", "old: median", "new: median", f"new / old, median of {len(floors)} pairs (range)")
    rows = [header]
    for kind, label in KINDS.items():
        old, new = ([run.seconds for run in side] for side in runs[kind])
        cells = []
        for times in (old, new):
            cell = f"{statistics.median(times):.3f} s"
            if kind == "cold":
                ratio = statistics.median(t / f for t, f in zip(times, floors, strict=True))
                cell += f" ({ratio:.1f}x floor)"
            cells.append(cell)
        ratios = [b / a for a, b in zip(old, new, strict=True)]
        rows.append(
            (label, *cells, f"{statistics.median(ratios):.3f}x ({min(ratios):.2f}-{max(ratios):.2f})")
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    for kind in ("cold", "nochange"):
        lines.append(f"phases of the {KINDS[kind]}, medians:")
        for side, name in enumerate(("old", "new")):
            lines.append(f"  {name}: {phase_line(median_phases(runs[kind][side]))}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="the tree to compare against")
    parser.add_argument("new", type=Path, help="the tree being measured")
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument("--mb", type=float, default=50, help="megabytes of sessions in the corpus")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--shape", choices=SHAPES, default="corpus", help="the corpus (generate.py)")
    parser.add_argument(
        "--sessions", type=int, default=generate.HISTORY_SESSIONS, help="session files of --shape history"
    )
    parser.add_argument(
        "--command", action="store_true", help="time whole manage.py index commands (the history shapes do)"
    )
    parser.add_argument(
        "--database-url",
        help="whole commands into this PostgreSQL database (dropped and made again), not SQLite",
    )
    args = parser.parse_args()
    trees = [args.old.resolve(), args.new.resolve()]
    for tree in trees:
        if not (tree / "sessionviewer" / "models.py").is_file():
            parser.error(f"{tree} holds no sessionviewer/ package")

    if args.command or args.shape != "corpus" or args.database_url:
        folder = Path(tempfile.mkdtemp(prefix="sessionviewer-compare-"))
        try:
            print(f"generating the {args.shape} shape in {folder} ...", file=sys.stderr)
            corpus = make_corpus(args.shape, folder / "data", args)
            result = compare_commands(trees, corpus, folder, args.pairs, args.database_url)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        print(command_report(trees, args, corpus, result))
        OUT.mkdir(exist_ok=True)
        saved = {"trees": trees, "options": vars(args), "corpus": corpus, **result}
        (OUT / f"compare-{args.shape}.json").write_bytes(
            orjson.dumps(saved, option=orjson.OPT_INDENT_2, default=str)
        )
        print(f"every run written to {OUT / f'compare-{args.shape}.json'}")
        return

    folder = Path(tempfile.mkdtemp(prefix="sessionviewer-compare-"))
    try:
        print(f"generating {args.mb} MB in {folder} ...", file=sys.stderr)
        corpus = generate.generate(folder / "data", args.mb, args.seed, generate.FORMATS)
        templates = []
        for number, tree in enumerate(trees):
            template = folder / f"template-{number}.sqlite3"
            run(tree, template, "-", [])  # the version's own migrations
            templates.append(str(template))
        times: list[list[float]] = [[], []]
        entries = set()
        for pair in range(args.pairs):
            order = (0, 1) if pair % 2 == 0 else (1, 0)
            for side in order:
                seconds, count = run(trees[side], folder / "run.sqlite3", templates[side], corpus["roots"])
                times[side].append(seconds)
                entries.add(count)
            print(f"pair {pair + 1}: old {times[0][-1]:.3f} s, new {times[1][-1]:.3f} s", file=sys.stderr)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    ratios = [new / old for old, new in zip(*times, strict=True)]
    print(
        f"corpus: {corpus['bytes'] / generate.MB:.1f} MB, {corpus['lines']:,} lines; entries written: {sorted(entries)}"
    )
    print(f"old  {args.old}: median {statistics.median(times[0]):.3f} s")
    print(f"new  {args.new}: median {statistics.median(times[1]):.3f} s")
    print(
        f"new / old, median of {args.pairs} pairs: {statistics.median(ratios):.3f}x "
        f"(range {min(ratios):.2f}-{max(ratios):.2f})"
    )


if __name__ == "__main__":
    main()
