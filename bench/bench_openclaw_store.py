"""One OpenClaw database session of many small events, against the same lines as a JSONL file
(issue 26): the peak RSS of `manage.py index` for each.

    SECRET_KEY=bench .venv/bin/python bench/bench_openclaw_store.py            # 1,000,000 events
    SECRET_KEY=bench .venv/bin/python bench/bench_openclaw_store.py --quick    # 100,000 events

The events are written into an agent database built with OpenClaw's own DDL
(tests/fixtures/openclaw_sqlite/), numbered from seq 0 as OpenClaw numbers them, and the same
objects, one a line, into <root>/agents/main/sessions/<id>.jsonl of another root. Each root is
indexed into a fresh app database by bench_sizes.run_index (the peak RSS of the command's
processes). The target: the database session within 1.25x of the JSONL file. The figures go to
bench/out/openclaw_store.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench_sizes import OUT, fresh, migrate, run_index  # noqa: E402 (bench/ is not a package)

DDL = ROOT / "tests" / "fixtures" / "openclaw_sqlite" / "openclaw-agent-schema.sql"
SESSION = "8555a0a4-bench"
TARGET = 1.25


def events(count: int):
    """A session header, then small prompts and replies, each the child of the one before."""
    yield {"type": "session", "version": 3, "id": SESSION, "timestamp": "2026-09-21T14:13:20Z", "cwd": "/w"}
    parent = None
    for n in range(1, count):
        role = "user" if n % 2 else "assistant"
        yield {
            "type": "message",
            "id": f"e{n}",
            "parentId": parent,
            "timestamp": "2026-09-21T14:13:21Z",
            "message": {"role": role, "content": [{"type": "text", "text": f"{role} says {n}"}]},
        }
        parent = f"e{n}"


def write_database(root: Path, count: int) -> Path:
    path = root / "agents" / "main" / "agent" / "openclaw-agent.sqlite"
    path.parent.mkdir(parents=True)
    with closing(sqlite3.connect(path)) as connection:
        connection.executescript(DDL.read_text())
        connection.execute(
            "INSERT INTO session_windows (session_id, session_key, reason, created_at, updated_at) "
            "VALUES (?, 'agent:main:main', 'initial', 1, 1)",
            (SESSION,),
        )
        connection.executemany(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
            ((SESSION, seq, orjson.dumps(obj).decode(), seq) for seq, obj in enumerate(events(count))),
        )
        connection.commit()
    return root / "agents"


def write_jsonl(root: Path, count: int) -> Path:
    folder = root / "agents" / "main" / "sessions"
    folder.mkdir(parents=True)
    with open(folder / f"{SESSION}.jsonl", "wb") as handle:
        for obj in events(count):
            handle.write(orjson.dumps(obj) + b"\n")
    return root / "agents"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=None, help="default 1,000,000 (100,000 with --quick)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    count = args.events or (100_000 if args.quick else 1_000_000)
    folder = Path(tempfile.mkdtemp(prefix="sessionviewer-bench-openclaw-store-"))
    results: dict = {"events": count}
    try:
        template = folder / "template.sqlite3"
        migrate(template)
        started = time.perf_counter()
        roots = {
            "jsonl": write_jsonl(folder / "jsonl", count),
            "database": write_database(folder / "db", count),
        }
        print(f"generated {count:,} events twice in {time.perf_counter() - started:.0f} s", flush=True)
        for name, root in roots.items():
            database = fresh(template, folder / f"{name}.sqlite3")
            results[name] = run_index(database, str(root), "openclaw")
            with closing(sqlite3.connect(database)) as connection:
                (results[name]["entries"],) = connection.execute(
                    "SELECT count(*) FROM sessionviewer_entry"
                ).fetchone()
            print(f"index {name}: {results[name]}", flush=True)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    results["ratio"] = round(results["database"]["peak_rss_mb"] / results["jsonl"]["peak_rss_mb"], 2)
    OUT.mkdir(exist_ok=True)
    (OUT / "openclaw_store.json").write_text(json.dumps(results, indent=2))
    print(
        f"peak RSS of manage.py index, one session of {count:,} events: JSONL file "
        f"{results['jsonl']['peak_rss_mb']} MB ({results['jsonl']['seconds']} s), database "
        f"{results['database']['peak_rss_mb']} MB ({results['database']['seconds']} s): "
        f"{results['ratio']}x  {'ok' if results['ratio'] <= TARGET else 'MISSED'}"
    )


if __name__ == "__main__":
    main()
