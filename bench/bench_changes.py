"""The Changes page's replay (transcripts/changes.py) on a synthetic thread: one whole Read of a
file of --lines lines, then --edits Edit calls each changing one line of it, every call with its
result. Prints the median, min and max of --runs timings of session_changes, and the diff's size.

    SECRET_KEY=bench .venv/bin/python bench/bench_changes.py --lines 2000 --edits 1000
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessionviewer.settings")

import django  # noqa: E402

django.setup()

from sessionviewer.readers import TOOL_CALL, TOOL_RESULT, Block, Entry  # noqa: E402
from sessionviewer.transcripts.changes import session_changes  # noqa: E402


def thread(lines: int, edits: int) -> list[Entry]:
    def turn(n: int, name: str, arguments: dict, output: str) -> list[Entry]:
        call = Block(TOOL_CALL, name=name, call_id=f"c{n}", arguments=arguments)
        return [
            Entry(f"a{n}", None, "message", "assistant", blocks=[call]),
            Entry(
                f"r{n}", None, "message", "user", blocks=[Block(TOOL_RESULT, text=output, call_id=f"c{n}")]
            ),
        ]

    read = "".join(f"{n:6}→line {n} of the file\n" for n in range(1, lines + 1))
    entries = turn(0, "Read", {"file_path": "/w/big.py"}, read)
    for n in range(1, edits + 1):
        at = n * (lines // edits or 1) % lines + 1
        old = f"line {at} of the file\n"
        entries += turn(
            n,
            "Edit",
            {"file_path": "/w/big.py", "old_string": old, "new_string": f"line {at} edited\n"},
            "ok",
        )
    return entries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--edits", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    entries = thread(args.lines, args.edits)
    timings = []
    for _ in range(args.runs):
        started = time.perf_counter()
        [changed] = session_changes(entries, "claude_code")
        timings.append(time.perf_counter() - started)
    print(
        f"{args.lines} lines, {args.edits} edits: median {statistics.median(timings):.3f} s "
        f"(min {min(timings):.3f}, max {max(timings):.3f}); known={changed.known} "
        f"+{changed.added} -{changed.removed} in {len(changed.hunks)} hunks"
    )


if __name__ == "__main__":
    main()
