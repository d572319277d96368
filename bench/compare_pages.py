"""Compare the list, search and transcript pages in two versions of the code, run alternately.

    .venv/bin/python bench/compare_pages.py OLD_TREE NEW_TREE [--rounds 3] [--drop-snapshots]

A tree is a folder holding a version's `sessionviewer/` and `bench/` (for example
`git worktree add /tmp/old HEAD~5`). Both measure the database `bench/bench_pages.py --quick`
built in this tree's `bench/out/` (each tree gets its own copy, migrated by its own code).
Every measurement is a fresh process; the versions take turns, so the machine's drift falls
on both. Prints each run and the median of each figure per version, in milliseconds: wall time,
and for the warm first screens the process's CPU time too (steadier on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
NAME = "pages-1000s-100000e-20000b-seed0"

# The start of a run in a fresh interpreter with the tree first on sys.path (argv: the tree):
# Django on the tree's copy of the database, its meta, a logged-in client. count_pages.py too.
SETUP = """
import json, os, statistics, sys, time
from pathlib import Path
tree = Path(sys.argv[1])
sys.path[:0] = [str(tree), str(tree / "bench")]
os.chdir(tree)
import bench_pages
bench_pages.setup_django(tree / "bench/out/NAME.sqlite3")
from django.core.management import call_command
call_command("migrate", verbosity=0)
meta = json.loads((tree / "bench/out/NAME.json").read_text())
from django.urls import reverse
client = bench_pages.bench_client()
""".replace("NAME", NAME)
RUN = (
    SETUP
    + """
from sessionviewer import render, transcripts

def median_ms(url, runs, cold=False, clock=time.perf_counter):
    client.get(url).getvalue()
    times = []
    for _ in range(runs):
        if cold:
            transcripts.clear_cache()
            if (memo := getattr(render, "MEMO", None)) is not None:  # rendered HTML, since issue 29
                memo.clear()
        started = clock()
        response = client.get(url)
        response.getvalue()  # an export streams: read to its end
        assert response.status_code == 200
        times.append(clock() - started)
    return round(statistics.median(times) * 1000, 1)

from urllib.parse import urlencode
common = urlencode({"q": meta["words"]["common"]})
lists = {
    "list page /": reverse("session-list"),
    "list ?q=<common word>": reverse("session-list") + "?" + common,
    "/api/search?q=<common word>": reverse("api-search") + "?" + common,
}
small = reverse("session-detail", args=[meta["small_session"]])
big = reverse("session-detail", args=[meta["big_session"]])
print(json.dumps({
    **{label: median_ms(url, 15) for label, url in lists.items()},
    "first screen, small, warm": median_ms(small, 15),
    "first screen, 20,000 entries, warm": median_ms(big, 15),
    # The process's CPU time, which a busy machine's waits for a core leave out.
    "first screen, 20,000 entries, warm, CPU": median_ms(big, 15, clock=time.process_time),
    "first screen, small, warm, CPU": median_ms(small, 15, clock=time.process_time),
    "first screen, 20,000 entries, cold": median_ms(big, 7, cold=True),
    **({} if os.environ.get("NO_EXPORT") else {
        "export.html, 20,000 entries": median_ms(reverse("session-export-html", args=[meta["big_session"]]), 2),
    }),
}))
""".replace("NAME", NAME)
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-export", action="store_true", help="leave out export.html (seconds a run)")
    parser.add_argument(
        "--drop-snapshots",
        action="store_true",
        help="empty each copy's stored thread snapshots first: a tree that reads another snapshot "
        "format (10cf4b7) builds its own on the warm-up request, and both trees do the same",
    )
    args = parser.parse_args()
    source = BENCH / "out"
    if not (source / f"{NAME}.sqlite3").exists():
        sys.exit(f"no {source / NAME}.sqlite3: run bench/bench_pages.py --quick first")
    trees = [args.old.resolve(), args.new.resolve()]
    for tree in trees:
        out = tree / "bench" / "out"
        out.mkdir(parents=True, exist_ok=True)
        for suffix in (".sqlite3", ".json"):
            if source / f"{NAME}{suffix}" != out / f"{NAME}{suffix}":
                shutil.copyfile(source / f"{NAME}{suffix}", out / f"{NAME}{suffix}")
        if args.drop_snapshots:
            with sqlite3.connect(out / f"{NAME}.sqlite3") as db:
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                for table in ("sessionviewer_threadpiece", "sessionviewer_threadsnapshot"):
                    if table in tables:
                        db.execute(f"DELETE FROM {table}")  # noqa: S608 - a name from the list above
    runs: dict[Path, list[dict]] = {tree: [] for tree in trees}
    env = {"SECRET_KEY": "bench-only", "DEBUG": "0", "PATH": "/usr/bin:/bin"}
    if args.no_export:
        env["NO_EXPORT"] = "1"
    for _ in range(args.rounds):
        for tree in trees:
            done = subprocess.run(
                [sys.executable, "-c", RUN, str(tree)], capture_output=True, text=True, env=env, check=True
            )
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            runs[tree].append(figures)
            print(tree, figures, flush=True)
    print()
    for key in runs[trees[0]][0]:
        old, new = (statistics.median(run[key] for run in runs[tree]) for tree in trees)
        print(f"{key:40} old {old:9.1f}  new {new:9.1f}  new/old {new / old:.2f}x")


if __name__ == "__main__":
    main()
