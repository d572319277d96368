"""Count what the list, search and transcript pages do in two versions of the code: load-free figures.

    .venv/bin/python bench/count_pages.py OLD_TREE NEW_TREE

Run bench/compare_pages.py on the same trees first: it leaves each tree a copy of the database
`bench/bench_pages.py --quick` built, in the tree's own bench/out/. For each page, one warm
request in a fresh process per tree: the SQL statements it sends (CaptureQueriesContext), the
Python function calls it makes (cProfile's count) and the bytes it sends back. Unlike a time,
none of these moves with the machine's load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from compare_pages import NAME, SETUP  # bench/ is the script's folder, on the path

RUN = (
    SETUP
    + """
import cProfile, pstats
from urllib.parse import urlencode
from django.db import connection
from django.test.utils import CaptureQueriesContext
common = urlencode({"q": meta["words"]["common"]})
pages = {
    "list page /": reverse("session-list"),
    "list ?q=<common word>": reverse("session-list") + "?" + common,
    "/api/search?q=<common word>": reverse("api-search") + "?" + common,
    "first screen, 20,000 entries": reverse("session-detail", args=[meta["big_session"]]),
}
counts = {}
for label, url in pages.items():
    client.get(url)
    client.get(url)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
        statements = len(queries)  # read now: the next request empties the log
    assert response.status_code == 200, (url, response.status_code)
    profile = cProfile.Profile()
    profile.enable()
    client.get(url)
    profile.disable()
    counts[label] = {
        "queries": statements,
        "calls": pstats.Stats(profile).total_calls,
        "KB": round(len(response.content) / 1024, 1),
    }
print(json.dumps(counts))
"""
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    args = parser.parse_args()
    env = {"SECRET_KEY": "bench-only", "DEBUG": "0", "PATH": "/usr/bin:/bin"}
    found = {}
    for tree in (args.old.resolve(), args.new.resolve()):
        if not (tree / "bench" / "out" / f"{NAME}.sqlite3").exists():
            sys.exit(f"no database in {tree}/bench/out: run bench/compare_pages.py on these trees first")
        done = subprocess.run(
            [sys.executable, "-c", RUN, str(tree)], capture_output=True, text=True, env=env, check=True
        )
        found[tree] = json.loads(done.stdout.strip().splitlines()[-1])
    old, new = found.values()
    for label in old:
        row = "  ".join(f"{key} {old[label][key]:>8} -> {new[label][key]:<8}" for key in old[label])
        print(f"{label:32} {row}")


if __name__ == "__main__":
    main()
