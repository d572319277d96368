"""The list's "possible secrets" facet and filter (issue 31) on a large PostgreSQL index: the
time of the pages they add to, and EXPLAIN ANALYZE of each statement that reads the findings.

    export DATABASE_URL=postgres://postgres@127.0.0.1:54329/sv_secret_facet   # made, migrated, filled
    SECRET_KEY=bench .venv/bin/python bench/secret_facet.py seed --sessions 400000
    SECRET_KEY=bench .venv/bin/python bench/secret_facet.py explain

`seed` writes sessions straight into the tables (no files, no entries: the facet reads none):
--sessions over 4 machines and 12 roots, in 4 formats, updated over a year, and --share of
them with 1 to 4 findings each, whose fingerprints come from a pool so that a value recurs
across sessions; a tenth of the pool is dismissed. The tally is folded and the tables analysed,
as after an index pass. `explain` asks for each page with Django's test client (logged in as
a superuser "bench"), prints the median of --runs and the statements' count, then EXPLAIN
(ANALYZE, BUFFERS) of the statements that read the findings.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_pages import (  # bench/ is the script's folder, on the path
    bench_client,
    setup_django,
    slowest_statement,
    timed_page,
)

FORMATS = ("claude_code", "codex", "openclaw", "go_agent")
KINDS = ("github_token", "aws_access_key", "anthropic_key", "npm_token")


def seed(args: argparse.Namespace) -> None:
    from django.core.management import call_command
    from django.db import connection

    from sessionviewer.index.tally import fold_pending
    from sessionviewer.models import SecretDismissal, Session, SessionFinding, Source

    call_command("migrate", verbosity=0)
    rng = random.Random(0)
    sources = [
        Source.objects.create(machine=f"machine-{n % 4:02}", path=f"/roots/{n}", format=FORMATS[n % 4])
        for n in range(12)
    ]
    start = datetime(2025, 1, 1, tzinfo=UTC)
    pool = [f"{n:064x}" for n in range(args.sessions // 20 + 1)]
    made, batch = 0, 5000
    started = time.monotonic()
    while made < args.sessions:
        sessions = []
        for n in range(made, min(made + batch, args.sessions)):
            source = sources[n % len(sources)]
            when = start + timedelta(minutes=rng.randrange(525_600))
            sessions.append(
                Session(
                    source=source,
                    format=source.format,
                    key=f"s{n}",
                    path=f"{source.path}/s{n}.jsonl",
                    project=f"~/work/p{rng.randrange(200)}",
                    title=f"session {n}",
                    started_at=when,
                    updated_at=when + timedelta(minutes=rng.randrange(120)),
                    message_count=rng.randrange(200),
                )
            )
        Session.objects.bulk_create(sessions)
        findings = [
            SessionFinding(
                session=session,
                source_id=session.source_id,
                line=line,
                entry_id=f"e{line}",
                block=0,
                kind=rng.choice(KINDS),
                masked="ghp_****ab",
                fingerprint=rng.choice(pool),
            )
            for session in sessions
            if rng.random() < args.share
            for line in rng.sample(range(1, 500), rng.randint(1, 4))
        ]
        SessionFinding.objects.bulk_create(findings)
        made += len(sessions)
        print(f"{made:,} sessions ({time.monotonic() - started:.0f} s)", flush=True)
    SecretDismissal.objects.bulk_create(
        SecretDismissal(fingerprint=fp, kind="github_token") for fp in rng.sample(pool, len(pool) // 10)
    )
    fold_pending()
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    print(
        f"{Session.objects.count():,} sessions, {SessionFinding.objects.count():,} findings, "
        f"{SecretDismissal.objects.count():,} dismissed fingerprints"
    )


def explain(args: argparse.Namespace) -> None:
    from django.db import connection
    from django.urls import reverse

    client = bench_client()
    listing, api, facets = reverse("session-list"), reverse("api-session-list"), reverse("api-session-facets")
    pages = {
        "list /": listing,
        "list ?possible_secrets=1": f"{listing}?possible_secrets=1",
        "list ?possible_secrets=1&_page=20": f"{listing}?possible_secrets=1&_page=20",
        "list ?machine=machine-01": f"{listing}?machine=machine-01",
        "list ?kind=main (another live filter)": f"{listing}?kind=main",
        "list ?possible_secrets=1&machine=…": f"{listing}?possible_secrets=1&machine=machine-01",
        "/api/sessions?possible_secrets=1": f"{api}?possible_secrets=1",
        "/api/sessions/facets": facets,
    }
    plans: dict[str, str] = {}
    seen: set[str] = set()
    print(f"{'page':36} {'median ms':>9} {'statements':>10}  slowest statement (ms)")
    for label, url in pages.items():
        median, queries = timed_page(client, url, args.runs)
        print(f"{label:36} {median:9.1f} {len(queries):10}  {slowest_statement(queries, 60)}")
        for query in queries:
            # One plan per statement shape: the same statement for other ids or another page
            # is planned alike.
            shape = re.sub(r"\d+", "N", query["sql"])
            if "sessionfinding" in query["sql"] and shape not in seen:
                seen.add(shape)
                plans[query["sql"]] = f"{label} ({float(query['time']) * 1000:.0f} ms)"
    with connection.cursor() as cursor:
        for sql, label in plans.items():
            cursor.execute(f"EXPLAIN (ANALYZE, BUFFERS) {sql}")
            print(f"\n--- {label}: {' '.join(sql.split())[:300]}")
            print("\n".join(row[0] for row in cursor.fetchall()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("step", choices=("seed", "explain"))
    parser.add_argument("--sessions", type=int, default=400_000)
    parser.add_argument("--share", type=float, default=0.05, help="of sessions, with findings")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    setup_django(os.environ.get("DATABASE_URL") or sys.exit("set DATABASE_URL to a PostgreSQL database"))
    if args.step == "seed":
        seed(args)
    else:
        explain(args)


if __name__ == "__main__":
    main()
