"""What the memory claim costs each pass: a measurement, not a test.

Every pass over a memory root gives the root's unclaimed history to its machine
(MemorySnapshot.claim, index/memory.py): its snapshots, and since 0029 its editor revisions
and audit events too, three UPDATEs where one was. Once claimed there is nothing to update,
so what a pass pays is three index lookups. This fills an index with --rows revisions, audit
events and snapshots, all claimed, over --roots roots, and times claim() per root against the
snapshots' UPDATE alone (what a pass ran before).

    .venv/bin/python bench/bench_memory_claim.py                       # a temporary SQLite file
    .venv/bin/python bench/bench_memory_claim.py --database-url postgres://postgres@127.0.0.1:54329/sv_claim
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def fresh_database(url: str) -> None:
    """An empty PostgreSQL database at url (dropped first if it exists)."""
    import psycopg

    parts = urlsplit(url)
    name = parts.path.lstrip("/")
    with psycopg.connect(parts._replace(path="/postgres").geturl(), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{name}"')
        connection.execute(f'CREATE DATABASE "{name}"')


def setup_django(url: str) -> None:
    os.environ["DATABASE_URL"] = url
    os.environ["DJANGO_SETTINGS_MODULE"] = "sessionviewer.settings"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(rows: int, roots: int) -> list[str]:
    from django.utils import timezone

    from sessionviewer.models import AuditEvent, MemorySnapshot, Revision

    paths = [f"/srv/memory-{n}" for n in range(roots)]
    now = timezone.now()
    for model, fields in (
        (Revision, {"jid": "a@example.com", "filename": "memory.md", "after": "x"}),
        (AuditEvent, {"jid": "a@example.com", "action": "edit"}),
        (
            MemorySnapshot,
            {"jid": "a@example.com", "filename": "memory.md", "who": "outside", "changed_at": now},
        ),
    ):
        made = [model(machine="laptop", root=paths[n % roots], **fields) for n in range(rows)]
        model.objects.bulk_create(made, batch_size=1000)
    return paths


def per_root(paths: list[str], claim, repeats: int) -> float:
    """The median over repeats of the time one claim of every root takes, per root, in µs."""
    from django.db import transaction

    runs = []
    for _ in range(repeats):
        began = time.perf_counter()
        for path in paths:
            with transaction.atomic():
                claim(path)
        runs.append((time.perf_counter() - began) / len(paths) * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="a PostgreSQL database to drop and fill (default: SQLite)")
    parser.add_argument("--rows", type=int, default=100_000, help="revisions, events and snapshots, each")
    parser.add_argument("--roots", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.database_url or f"sqlite:///{tmp}/bench.sqlite3"
        if args.database_url:
            fresh_database(url)
        setup_django(url)
        from sessionviewer.models import MemorySnapshot

        paths = fill(args.rows, args.roots)
        snapshots = per_root(
            paths, lambda p: MemorySnapshot.of_root("", p).update(machine="laptop"), args.repeats
        )
        claim = per_root(paths, lambda p: MemorySnapshot.claim("laptop", p), args.repeats)
    engine = "PostgreSQL" if args.database_url else "SQLite"
    print(f"{engine}, {args.rows:,} revisions, audit events and snapshots over {args.roots} roots")
    print(f"per root and pass: snapshots' UPDATE alone {snapshots:,.0f} µs, claim() {claim:,.0f} µs")


if __name__ == "__main__":
    main()
