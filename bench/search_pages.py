"""Server time of the search, project and transcript pages on an index that exists already
(issue 28: many machines in one PostgreSQL, bench/load.py's seed).

    DATABASE_URL=postgres://postgres@127.0.0.1:54329/sv_load_copy SECRET_KEY=bench \
        .venv/bin/python bench/search_pages.py --runs 7
    DATABASE_URL=sqlite:///bench/out/pages-....sqlite3 ... bench/search_pages.py   # SQLite alike

Nothing is written to the index but a user to log in as ("bench", as bench_pages.py makes)
and the thread snapshots a transcript builds if it has none. Each figure is the median of
--runs requests through Django's test client after one warm-up; "cold" empties the thread
cache before each request (another web process, a restart), "rebuild" removes the session's
thread snapshot too (its first view ever). The searches are
bench/locustfile.py's, so these are the pages bench/load.py's people ask for. --queries
FIGURE ... prints each statement of one request of those figures with its time.
"""

from __future__ import annotations

import argparse
import ast
import os
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import bench_pages  # noqa: E402 (bench/ is not a package: the script's folder is on the path)


def _locust_queries() -> tuple[str, ...]:
    """bench/locustfile.py's QUERIES, read without importing locust (it has a virtualenv of its own)."""
    tree = ast.parse((BENCH / "locustfile.py").read_text())
    found = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "QUERIES" for t in node.targets)
    )
    return ast.literal_eval(found)


QUERIES = _locust_queries()

TARGET_MS = 50  # each page's own server time, so that 50 people fit in two cores


def figures() -> list[dict]:
    """key, label, URL, mode (bench_pages.WARM, COLD or REBUILD) and session of every figure."""
    from django.db.models import Count, Max
    from django.urls import reverse

    from sessionviewer.models import Session

    home, api = reverse("session-list"), reverse("api-search")
    rows = []
    for n, q in enumerate(QUERIES):
        rows.append((f"search_{n}", f"/?q={q}", home + "?" + urlencode({"q": q}), bench_pages.WARM, None))
        rows.append(
            (f"api_search_{n}", f"/api/search?q={q}", api + "?" + urlencode({"q": q}), bench_pages.WARM, None)
        )
    # The project on most machines with the most sessions, and a middling one of those machines.
    projects = list(
        Session.objects.exclude(project="")
        .values("project")
        .annotate(n=Count("id"), machines=Count("source__machine", distinct=True))
        .order_by("-machines", "-n", "project")[:200]
    )
    crowded, middling = projects[0], projects[len(projects) // 2]
    for key, project in (("project", crowded), ("project_middling", middling)):
        label = f"project, {project['n']:,} sessions on {project['machines']} machines"
        url = reverse("project-detail", args=[project["project"]])
        rows.append((key, label, url, bench_pages.WARM, None))
        rows.append(
            (
                "api_" + key,
                "/api" + label.removeprefix("project"),
                reverse("api-project-detail", args=[project["project"]]),
                bench_pages.WARM,
                None,
            )
        )
    longest = Session.objects.aggregate(n=Max("entry_count"))["n"]
    big = Session.objects.filter(entry_count=longest).order_by("id").only("id", "entry_count").first()
    short = (
        Session.objects.filter(entry_count__range=(20, 40)).order_by("id").only("id", "entry_count").first()
    )
    # A long session's snapshot is the indexer's to prepare (transcripts.prepare_snapshots); a
    # short one's is saved by its first view, which "rebuild" times.
    cold = (bench_pages.COLD, bench_pages.WARM)
    for key, session, modes in (
        ("transcript_long", big, cold),
        ("transcript_short", short, (bench_pages.REBUILD, *cold)),
    ):
        url = reverse("session-detail", args=[session.id])
        for mode in modes:
            label = f"first screen, {session.entry_count:,} entries, {mode}"
            rows.append((f"{key}_{mode}", label, url, mode, session.id))
    return [
        {"key": key, "label": label, "url": url, "mode": mode, "htmx": False, "session": sid}
        for key, label, url, mode, sid in rows
    ]  # fmt: skip


def statements(client, figure: dict) -> str:
    """Each statement one request of figure sends, with its time, the slowest marked."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    bench_pages.forget(figure["mode"], figure["session"])
    with CaptureQueriesContext(connection) as captured:
        started = time.perf_counter()
        client.get(figure["url"]).getvalue()
        elapsed = (time.perf_counter() - started) * 1000
    lines = [f"{figure['label']}: {elapsed:.1f} ms, {len(captured)} statements"]
    for query in captured.captured_queries:
        lines.append(f"  {float(query['time']) * 1000:8.1f} ms  {query['sql'][:400]}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed requests per figure")
    parser.add_argument("--only", nargs="+", metavar="FIGURE", help="measure these figures only (by key)")
    parser.add_argument("--queries", nargs="+", default=[], metavar="FIGURE", help="print their statements")
    args = parser.parse_args()
    url = os.environ.get("DATABASE_URL", "")
    if not url:
        sys.exit("DATABASE_URL names the index to measure (postgres://... or sqlite:///...)")
    bench_pages.setup_django(url)
    client = bench_pages.bench_client()
    rows = [row for row in figures() if not args.only or row["key"] in args.only]
    print(f"{'figure':<26} {'median':>9} {'min':>9} {'max':>9}  target {TARGET_MS} ms  page")
    for row in rows:
        result = bench_pages.measure(client, row, args.runs)
        verdict = "ok" if result["median_ms"] <= TARGET_MS else "MISSED"
        print(
            f"{row['key']:<26} {result['median_ms']:>9.1f} {result['min_ms']:>9.1f} {result['max_ms']:>9.1f}"
            f"  {verdict:<14} {row['label']}",
            flush=True,
        )
    for key in args.queries:
        figure = next((row for row in rows if row["key"] == key), None)
        print("\n" + (statements(client, figure) if figure else f"no figure {key!r}"))


if __name__ == "__main__":
    main()
