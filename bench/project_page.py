"""Server time of the most crowded project page (issue 28), its usage by model read from
the tally (PostgreSQL, migration 0036) against counted from every session, as before.

    DATABASE_URL=postgres://postgres@127.0.0.1:54329/sv_load .venv/bin/python bench/project_page.py --runs 9
    DATABASE_URL=... .venv/bin/python bench/project_page.py --trees /tmp/main . --pairs 3 --runs 7

The project with the most sessions is requested through Django's test client (no HTTP
server), page and JSON twin, each way in turn --runs times after one warm-up: the medians,
then projects.usage_by_model alone. "counted" is the page as it was before the tally kept a
project's models: the tally's scope is refused, so the sessions are read. The database is
read, never written, except a superuser "bench" the client logs in as.

--trees: the page and its twin served by each tree's code in turn (a process each, --pairs
times), on the same database: another tree (a checkout of main) is timed as it is.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_pages import bench_client, setup_django  # bench/ is the script's folder, on the path


@contextmanager
def counted(on: bool):
    """While on: projects.usage_by_model counts the sessions, as before migration 0036."""
    from sessionviewer import projects

    kept = projects.tally_scope
    if on:
        projects.tally_scope = lambda params, sources=None: None
    try:
        yield
    finally:
        projects.tally_scope = kept


def median_ms(call, runs: int, way: bool) -> float:
    times = []
    for _ in range(runs):
        with counted(way):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def _rounded(rows: list[dict]) -> list[dict]:
    """Costs to a millionth of a cent: the tally adds them in another order."""
    return [{k: round(v, 8) if isinstance(v, float) else v for k, v in row.items()} for row in rows]


def _crowded() -> tuple[str, int, dict[str, str]]:
    """The project with the most sessions, their number, and its page's and twin's URLs."""
    from django.db.models import Count
    from django.urls import reverse

    from sessionviewer.models import Session

    row = Session.objects.exclude(project="").values("project").annotate(n=Count("id")).order_by("-n").first()
    project = row["project"]
    urls = {
        "page": reverse("project-detail", args=[project]),
        "JSON twin": reverse("api-project-detail", args=[project]),
    }
    return project, row["n"], urls


def _page_in_this_tree(runs: int) -> None:
    """One line per page: its label and median ms, served by the tree first on sys.path."""
    _, _, urls = _crowded()
    client = bench_client()
    for label, url in urls.items():
        assert client.get(url).status_code == 200, url
        times = []
        for _ in range(runs):
            started = time.perf_counter()
            client.get(url)
            times.append(time.perf_counter() - started)
        print(f"{label}\t{statistics.median(times) * 1000:.1f}", flush=True)


def _trees(trees: list[str], pairs: int, runs: int) -> None:
    found: dict[tuple[str, str], list[float]] = {}
    for _ in range(pairs):
        for tree in trees:
            command = [sys.executable, __file__, "--page-in", tree, "--runs", str(runs)]
            out = subprocess.run(command, capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                label, ms = line.split("\t")
                found.setdefault((tree, label), []).append(float(ms))
    for (tree, label), times in found.items():
        print(f"{tree:40} {label:10} " + " ".join(f"{t:7.1f}" for t in times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--trees", nargs="+", help="source trees whose pages are timed in turn")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--page-in", help=argparse.SUPPRESS)  # a tree's own process (--trees)
    args = parser.parse_args()
    if args.trees:
        return _trees([str(Path(tree).resolve()) for tree in args.trees], args.pairs, args.runs)
    if args.page_in:
        sys.path[:0] = [args.page_in]
        os.chdir(args.page_in)
    setup_django(os.environ.get("DATABASE_URL") or sys.exit("set DATABASE_URL"))
    if args.page_in:
        return _page_in_this_tree(args.runs)
    from sessionviewer import projects
    from sessionviewer.filters import filter_sessions
    from sessionviewer.models import Session

    project, sessions, urls = _crowded()
    client = bench_client()
    qs = filter_sessions({}, base=projects.project_sessions(project)).queryset.order_by()
    calls = {label: (lambda url=url: client.get(url)) for label, url in urls.items()}
    calls["usage_by_model alone"] = lambda: projects.usage_by_model(qs, project, "all")
    print(f"{project}: {sessions:,} sessions of {Session.objects.count():,}; median of {args.runs} runs, ms")
    print(f"{'':24} {'counted':>8} {'tally':>8} {'ratio':>6}")
    for label, call in calls.items():
        for way in (True, False):
            with counted(way):
                response = call()  # warm, and the same answer both ways
            assert getattr(response, "status_code", 200) == 200, label
        with counted(True):
            before_models = projects.usage_by_model(qs, project, "all")
        assert _rounded(projects.usage_by_model(qs, project, "all")) == _rounded(before_models)
        ways: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.runs):  # in turn, so that the machine's load falls on both alike
            for way in (True, False):
                ways[way].append(median_ms(call, 1, way))
        before, after = statistics.median(ways[True]), statistics.median(ways[False])
        print(f"{label:24} {before:8.1f} {after:8.1f} {after / before:6.2f}")


if __name__ == "__main__":
    main()
