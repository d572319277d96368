"""The CPU one web process spends on each of the load bench's pages, and on the list's parts.

    DATABASE_URL=postgres://postgres@127.0.0.1:54329/sv_load .venv/bin/python bench/page_cpu.py
    DATABASE_URL=... .venv/bin/python bench/page_cpu.py --tree /tmp/old --reps 4   # another version
    DATABASE_URL=... .venv/bin/python bench/page_cpu.py --only '' --url '/activity/?_range=all' --reps 50

The pages bench/locustfile.py asks for (the list's first 20 pages, its six searches, Activity's
four ranges, ten projects and twenty transcripts from the list), through Django's test client
as the load bench's viewer "load" (bench/load.py seed makes it): no HTTP server, no network.
Each page is asked once to warm up, then --reps times; the figure is the process's CPU
(time.process_time) per page, which PostgreSQL's time leaves out, and beside it the page's
wall time less that CPU ("waiting": for PostgreSQL, almost all of it). For the list and a search,
the view's parts too: the facets, the page of rows, the search's statements, the rendering.

--tree puts another version's sessionviewer/ first on the path: run the two versions one after
the other, several times, and compare medians (the machine's load moves every figure).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from pathlib import Path

PAGES = ("list", "search", "activity", "project", "transcript")
QUERIES = ("index", "database+request", "parse", "%22return+path%22", "config*", "session+reader")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--reps", type=int, default=4)
    parser.add_argument(
        "--only", default=",".join(PAGES), help="pages to time, comma-separated ('' for none)"
    )
    parser.add_argument(
        "--url", action="append", default=[], help="a page of the index to time on its own (repeatable)"
    )
    args = parser.parse_args()
    sys.path.insert(0, str(args.tree.resolve()))
    os.chdir(args.tree)  # its static files' manifest
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessionviewer.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-" * 5)
    os.environ.setdefault("ALLOWED_HOSTS", "testserver")
    os.environ["SESSIONVIEWER_ROOTS"] = ""
    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    # As a web worker starts (gunicorn loads it): each tree's own start-up, which in this tree
    # warms the templates and freezes the heap, so a collection lands as it would there.
    import sessionviewer.wsgi  # noqa: F401
    from sessionviewer import activity, search
    from sessionviewer.views import pages as views

    spent: collections.Counter = collections.Counter()

    def timed(module, name: str) -> None:
        function = getattr(module, name)

        def wrapper(*a, **kw):
            started = time.process_time()
            try:
                return function(*a, **kw)
            finally:
                spent[name] += time.process_time() - started

        setattr(module, name, wrapper)

    for module, name in (
        (views, "render"),
        (views, "session_page"),
        (activity, "facets"),
        (search, "first_matches"),
        (search, "search_hits_for"),
    ):
        timed(module, name)

    client = Client()
    client.force_login(User.objects.get(username="load"))
    listing = client.get("/?_size=100").content.decode()
    urls = {
        "list": [f"/?_page={n}" for n in range(1, 21)],
        "search": [f"/?q={q}" for q in QUERIES],
        "activity": [f"/activity/?_range={r}" for r in ("7", "30", "90", "all")],
        "project": sorted(set(re.findall(r'href="(/projects/[^"?#]+/)"', listing)))[:10],
        "transcript": sorted(set(re.findall(r'href="(/sessions/\d+/)"', listing)))[:20],
    }
    print(
        f"{args.tree}: CPU per page and the wall time beside it, ms (median of {args.reps} rounds);"
        " parts of the list and a search"
    )
    urls |= {url: [url] for url in args.url}
    for name in [*filter(None, args.only.split(",")), *args.url]:
        for url in urls[name]:
            client.get(url)
        rounds, waits = [], []
        spent.clear()
        for _ in range(args.reps):
            started, wall = time.process_time(), time.perf_counter()
            for url in urls[name]:
                response = client.get(url)
                if response.status_code != 200:
                    raise SystemExit(f"{url}: {response.status_code}")
            cpu = time.process_time() - started
            rounds.append(cpu / len(urls[name]))
            waits.append((time.perf_counter() - wall - cpu) / len(urls[name]))
        rounds.sort()
        waits.sort()
        parts = ""
        if name in ("list", "search"):
            asked = args.reps * len(urls[name])
            parts = ", ".join(f"{part} {1000 * s / asked:.1f}" for part, s in spent.most_common() if s)
        cpu, wait = rounds[len(rounds) // 2], waits[len(waits) // 2]
        print(f"  {name:11s} {1000 * cpu:6.1f}  waiting {1000 * wait:5.1f}   {parts}")


if __name__ == "__main__":
    main()
