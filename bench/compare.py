"""Compare the cold index of two versions of the code, run alternately on one corpus.

On a shared machine a single `make bench` cannot show a change under about 15%: the
same code reads 8x in one run and 13x in the next. Two versions run one after the
other, many times, drift together; the median of the paired ratios is what to quote.

    .venv/bin/python bench/compare.py OLD_TREE NEW_TREE [--pairs 11] [--mb 50]

A tree is a folder holding a version's `sessionviewer/` package, for example
`git worktree add /tmp/old HEAD~3`. Each version migrates its own template database,
and every run is a fresh process that copies it and indexes the corpus cold.
The order within a pair alternates, so neither version always runs first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import generate

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path, help="the tree to compare against")
    parser.add_argument("new", type=Path, help="the tree being measured")
    parser.add_argument("--pairs", type=int, default=11)
    parser.add_argument("--mb", type=float, default=50, help="megabytes of sessions in the corpus")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    trees = [args.old.resolve(), args.new.resolve()]
    for tree in trees:
        if not (tree / "sessionviewer" / "models.py").is_file():
            parser.error(f"{tree} holds no sessionviewer/ package")

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
