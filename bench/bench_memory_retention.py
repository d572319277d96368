"""How much space a year of a busy JID's memory history takes: a measurement, not a test.

The agent's writes are simulated: each day, --per-day changes, spread over user.md (rewritten
whole, about 1 KB), memory.md (a note appended, the oldest dropped past --memory-lines) and
knowledge.jsonl (a fact appended, the oldest dropped past --facts). Each change is recorded by
the snapshot code the indexer runs (index/memory.py), in a fresh SQLite database; the figure
is what the database file grew by, after VACUUM, and the snapshots' own bytes.

    .venv/bin/python bench/bench_memory_retention.py              # a year, 20 changes a day
    .venv/bin/python bench/bench_memory_retention.py --per-day 50 --days 30
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

JID = "alice@example.com"
WORDS = [
    "tea",
    "coffee",
    "deadline",
    "proofs",
    "printer",
    "layout",
    "invoice",
    "meeting",
    "Friday",
    "Paris",
    "train",
    "budget",
    "draft",
    "review",
]


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "sessionviewer.settings"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "bench")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def sentence(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)).capitalize() + "."


def vacuumed_size(database: Path) -> int:
    from django.db import connection

    connection.close()
    with sqlite3.connect(database) as db:
        db.execute("VACUUM")
    return database.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--per-day", type=int, default=20, help="changes a day, over the three files")
    parser.add_argument("--memory-lines", type=int, default=120, help="notes memory.md keeps")
    parser.add_argument("--facts", type=int, default=300, help="facts knowledge.jsonl keeps")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "bench.sqlite3"
        setup_django(database)
        from sessionviewer.index.memory import snapshot_roots
        from sessionviewer.models import MemorySnapshot

        root = Path(tmp) / "memory"
        folder = root / JID
        folder.mkdir(parents=True)
        notes: list[str] = []
        facts: list[bytes] = []
        start = datetime(2025, 1, 1, tzinfo=UTC)
        snapshot_roots([root])
        empty = vacuumed_size(database)
        began = time.perf_counter()
        for day in range(args.days):
            for n in range(args.per_day):
                when = (start + timedelta(days=day, seconds=60 * n)).timestamp()
                which = n % 3
                if which == 0:
                    path = folder / "user.md"
                    lines = [f"- {sentence(rng, 8)}" for _ in range(12)]
                    path.write_text("# Alice\n" + "\n".join(lines) + "\n")
                elif which == 1:
                    path = folder / "memory.md"
                    notes = [*notes, f"- {start + timedelta(days=day):%Y-%m-%d}: {sentence(rng, 10)}"]
                    notes = notes[-args.memory_lines :]
                    path.write_text("\n".join(notes) + "\n")
                else:
                    path = folder / "knowledge.jsonl"
                    fact = {"key": rng.choice(WORDS), "content": sentence(rng, 12), "ts": f"{when}"}
                    facts = [*facts, orjson.dumps(fact) + b"\n"][-args.facts :]
                    path.write_bytes(b"".join(facts))
                os.utime(path, (when, when))
                snapshot_roots([root])
        seconds = time.perf_counter() - began
        count = MemorySnapshot.objects.count()
        content = sum(len(bytes(c or b"")) for c in MemorySnapshot.objects.values_list("content", flat=True))
        grown = vacuumed_size(database) - empty
    changes = args.days * args.per_day
    print(f"{args.days} days x {args.per_day} changes/day = {changes:,} changes, {count:,} snapshots")
    print(f"files at the end: memory.md {args.memory_lines} notes, knowledge.jsonl {args.facts} facts")
    print(f"snapshot bytes: {content / 1e6:,.1f} MB; SQLite file grew by {grown / 1e6:,.1f} MB after VACUUM")
    print(f"per change: {grown / changes / 1e3:,.1f} kB; recording took {seconds:,.1f} s")


if __name__ == "__main__":
    main()
