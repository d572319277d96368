"""The reading worker's CPU on the history's files, and its batches' trip through the pipe.

    .venv/bin/python bench/generate.py --history 6387 /tmp/hcorpus
    .venv/bin/python bench/pipe_cpu.py /tmp/hcorpus/history OLD_TREE NEW_TREE --rounds 3

Each round runs, for each tree in turn, a process that reads every JSONL file of the history
(Claude Code, the Go agent, Codex) as the reading worker does for a cold index on PostgreSQL
(`read_job`, the secrets' scan on), then encodes and decodes each batch as the pipe between
the worker and the writer does (`_for_the_pipe`, `_from_the_pipe`), and prints the CPU
(`time.process_time`) of each part. No database, no Django: the worker's own code. `--sqlite`
makes SQLite's rows instead. Compare the trees' medians: the machine's speed moves between
rounds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

# Run in a process of its own, with the tree's code first on the path.
MEASURE = """
import sys, time
from pathlib import Path
from sessionviewer.index import fold, worker

corpus, for_sqlite = Path(sys.argv[1]), sys.argv[2] == "sqlite"
formats = {"claude-code/projects": "claude_code", "go-agent/sessions": "go_agent", "codex/sessions": "codex"}
jobs = [
    worker.Job(path, fmt, 0, 0, fold.SessionState(format=fmt), for_sqlite=for_sqlite, findings_key="bench")
    for folder, fmt in formats.items()
    for path in sorted((corpus / folder).rglob("*.jsonl"))
]
started = time.process_time()
batches = [batch for number, job in enumerate(jobs) for batch in worker.read_job(job, number)]
read = time.process_time() - started
started = time.process_time()
for batch in batches:
    worker._from_the_pipe(worker._for_the_pipe(batch))
pipe = time.process_time() - started
print(len(jobs), len(batches), read, pipe)
"""


def measure(tree: Path, corpus: Path, engine: str) -> tuple[int, int, float, float]:
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(corpus), engine],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    files, batches, read, pipe = done.stdout.split()
    return int(files), int(batches), float(read), float(pipe)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "corpus", type=Path, help="a history written by generate.py --history (its history/ folder)"
    )
    parser.add_argument(
        "trees", type=Path, nargs="+", help="checkouts to compare (git worktree add --detach ...)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sqlite", action="store_true", help="SQLite's rows rather than PostgreSQL's")
    args = parser.parse_args()
    engine = "sqlite" if args.sqlite else "postgresql"
    seen: dict[Path, list[tuple[float, float]]] = {tree: [] for tree in args.trees}
    for round_ in range(1, args.rounds + 1):
        for tree in args.trees:
            files, batches, read, pipe = measure(tree.resolve(), args.corpus.resolve(), engine)
            seen[tree].append((read, pipe))
            print(
                f"round {round_}: {tree}: {files:,} files, {batches:,} batches; read {read:.3f} s, pipe {pipe:.3f} s"
            )
    print(f"CPU, median of {args.rounds} rounds ({engine}'s rows):")
    for tree, runs in seen.items():
        read = statistics.median(r for r, _ in runs)
        pipe = statistics.median(p for _, p in runs)
        print(f"  {tree}: read {read:.3f} s, pipe (both ends) {pipe:.3f} s")


if __name__ == "__main__":
    main()
