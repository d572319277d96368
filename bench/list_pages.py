"""Server time of the session list, its JSON twin and Activity on an index (issue 28's load).

    DATABASE_URL=postgres://postgres@127.0.0.1:54329/sv_load_list .venv/bin/python bench/list_pages.py
    .venv/bin/python bench/list_pages.py --runs 5 --database bench/out/pages.sqlite3

Each page is requested once to warm up, then --runs times through Django's test client (no
HTTP server, no network): the median, the statements of the last request and its slowest
one. The pages are the ones bench/locustfile.py asks for and their filtered forms: the list
unfiltered, by a machine, a format and a project (the most common of each in the index),
page 20 and page 50; Activity over each range and by a machine. The database is read, never
written, except a superuser "bench" the client logs in as (bench_pages.bench_client).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_pages import (  # bench/ is the script's folder, on the path
    bench_client,
    setup_django,
    slowest_statement,
    timed_page,
)


def pages() -> dict[str, str]:
    from django.db.models import Count
    from django.urls import reverse

    from sessionviewer.models import Session

    def most(field: str) -> str:
        rows = Session.objects.exclude(**{field: ""}).values(field).annotate(n=Count("id")).order_by("-n")
        return rows.first()[field] if rows.exists() else ""

    machines = Session.objects.exclude(source__machine="").values("source__machine").annotate(n=Count("id"))
    machine = machines.order_by("-n").values_list("source__machine", flat=True).first()
    listing, api, activity = reverse("session-list"), reverse("api-session-list"), reverse("activity")
    found = {
        "list /": listing,
        "list ?_page=20": f"{listing}?_page=20",
        "list ?_page=50": f"{listing}?_page=50",
        f"list ?machine={machine}": f"{listing}?machine={machine}",
        "list ?machine=…&_page=50": f"{listing}?machine={machine}&_page=50",
        "list ?format=<most>": f"{listing}?format={most('format')}",
        "list ?project=<most>": f"{listing}?{urlencode({'project': most('project')})}",
        "/api/sessions": api,
        "/api/sessions?_page=50": f"{api}?_page=50",
        "activity (all)": activity,
        "activity ?_range=7": f"{activity}?_range=7",
        "activity ?_range=30": f"{activity}?_range=30",
        "activity ?_range=90": f"{activity}?_range=90",
        f"activity ?machine={machine}": f"{activity}?machine={machine}",
        "activity ?_range=30&machine=…": f"{activity}?_range=30&machine={machine}",
    }
    return {label: url for label, url in found.items() if machine or "machine" not in url}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database", help="a SQLite file (else DATABASE_URL)")
    args = parser.parse_args()
    database = Path(args.database).resolve() if args.database else os.environ.get("DATABASE_URL")
    setup_django(database or sys.exit("set DATABASE_URL or --database"))
    client = bench_client()
    print(f"{'page':34} {'median ms':>9} {'SQL ms':>6} {'statements':>10}  slowest statement (ms)")
    for label, url in pages().items():
        median, queries = timed_page(client, url, args.runs)
        in_sql = sum(float(q["time"]) for q in queries) * 1000
        print(f"{label:34} {median:9.1f} {in_sql:6.1f} {len(queries):10}  {slowest_statement(queries, 70)}")


if __name__ == "__main__":
    main()
