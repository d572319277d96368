"""Search for a very common word: one session of a million entries that all hold it.

    SECRET_KEY=bench .venv/bin/python bench/bench_search.py             # 1,000,000 entries
    SECRET_KEY=bench .venv/bin/python bench/bench_search.py --reuse     # measure again on the last database

The 2 GB session of bench_sizes.py takes 20 minutes to generate and index; what its search
figures depend on is how many entries match, so this writes the rows straight into a migrated
SQLite database instead: --entries rows in one Claude Code session (users, assistants with
text, thinking or a tool call, tool outputs), each text distinct and holding --word, plus
--others small sessions with a few hits each, then builds the FTS index. `/?q=` and
`/api/search?q=` are requested with Django's test client; each figure is the median of --runs
after a warm-up. The database is kept under bench/out/ for --reuse.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
sys.path.insert(0, str(ROOT))

import bench_pages  # noqa: E402 (bench/ is not a package: the script's folder is on the path)

TARGET_MS = 200

KINDS = [  # role, blocks' type, the text around the word
    ("user", "text", "please check why request {n} was served late"),
    ("assistant", "text", "request {n} was served from the cache after a retry"),
    ("assistant", "thinking", "the log says {n} served twice, so the cache is stale"),
    ("assistant", "tool_use", "grep -n served logs/worker-{n}.log"),
    ("tool", "tool_result", "worker {n}: GET /api/items 200 served in 12ms"),
]


def build(database: Path, entries: int, others: int) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "0", "SECRET_KEY": "bench"}
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, check=True)
    bench_pages.setup_django(database)
    from django.db import connection, transaction
    from django.utils import timezone

    from sessionviewer.models import Session, Source

    source = Source.objects.create(path="/bench/claude-code", format="claude_code")
    now = timezone.now()
    big = Session.objects.create(
        source=source, format="claude_code", key="big", path="/bench/big.jsonl", title="The big one",
        started_at=now, updated_at=now, entry_count=entries,
    )  # fmt: skip
    small = [
        Session.objects.create(
            source=source,
            format="claude_code",
            key=f"s{n}",
            path=f"/bench/s{n}.jsonl",
            title=f"Small {n}",
            started_at=now,
            updated_at=now,
            entry_count=20,
        )  # fmt: skip
        for n in range(others)
    ]
    empty = (
        "sender",
        "model",
        "message_id",
        "subtype",
        "logical_parent_id",
        "first_kept_id",
        "summary",
        "leaf_id",
    )
    columns = ", ".join(["session_id, line, offset, entry_id, kind, role, text, blocks", *empty])
    constants = ", ".join(["''"] * len(empty))
    insert = (
        f"INSERT INTO sessionviewer_entry ({columns}, usage, extra, is_sidechain, is_meta, text_facts) "  # noqa: S608
        f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, {constants}, '{{}}', '{{}}', 0, 0, 0)"
    )

    def row(session_id: int, line: int) -> tuple:
        role, block, text = KINDS[line % len(KINDS)]
        text = text.format(n=line)
        blocks = json.dumps([{"type": block, "text": text}], separators=(",", ":"))
        kind = "user" if role == "tool" else role
        return (session_id, line, line * 1700, f"e{line}", kind, role, text, blocks)

    started = time.perf_counter()
    with transaction.atomic(), connection.cursor() as cursor:
        raw = cursor.connection
        for start in range(1, entries + 1, 100_000):
            raw.executemany(insert, [row(big.id, n) for n in range(start, min(start + 100_000, entries + 1))])
        for session in small:
            raw.executemany(insert, [row(session.id, n) if n % 5 == 0 else (
                session.id, n, n * 100, f"e{n}", "user", "user", f"nothing here {n}", "[]"
            ) for n in range(1, 21)])  # fmt: skip
        raw.execute("INSERT INTO entry_fts(entry_fts) VALUES ('rebuild')")
    bench_pages.say(f"built {entries:,} + {others * 20:,} entries in {time.perf_counter() - started:.0f} s")


def timed(client, url: str, runs: int) -> dict:
    times = []
    for n in range(runs + 1):
        started = time.perf_counter()
        response = client.get(url)
        elapsed = (time.perf_counter() - started) * 1000
        assert response.status_code == 200, (url, response.status_code)
        if n:  # the first is a warm-up
            times.append(elapsed)
    return {"median_ms": round(statistics.median(times), 1), "max_ms": round(max(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=1_000_000, help="entries of the big session")
    parser.add_argument("--others", type=int, default=200, help="small sessions with a few hits each")
    parser.add_argument("--word", default="served", help="the word every entry of the big session holds")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--reuse", action="store_true", help="measure on the database a previous run built")
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    database = OUT / f"search-{args.entries}e-{args.others}s.sqlite3"
    if not (args.reuse and database.exists()):
        database.unlink(missing_ok=True)
        build(database, args.entries, args.others)
    else:
        bench_pages.setup_django(database)
    client = bench_pages.bench_client()
    figures = {
        "list": timed(client, f"/?q={args.word}", args.runs),
        "api": timed(client, f"/api/search?q={args.word}", args.runs),
        "rare": timed(client, "/?q=nothing", args.runs),
    }
    for name, figure in figures.items():
        verdict = "ok" if figure["median_ms"] < TARGET_MS else "MISSED"
        print(f"{name:6} median {figure['median_ms']:8.1f} ms  max {figure['max_ms']:8.1f} ms  {verdict}")
    (OUT / "search.json").write_text(json.dumps({"args": vars(args), "figures": figures}, indent=1))


if __name__ == "__main__":
    main()
