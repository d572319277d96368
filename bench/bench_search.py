"""Search for a very common word: one session of a million entries that all hold it.

    SECRET_KEY=bench .venv/bin/python bench/bench_search.py             # 1,000,000 entries
    SECRET_KEY=bench .venv/bin/python bench/bench_search.py --reuse     # measure again on the last database

The 2 GB session of bench_sizes.py takes 20 minutes to generate and index; what its search
figures depend on is how many entries match, so this writes the rows straight into a migrated
SQLite database instead: --entries rows in one Claude Code session (users, assistants with
text, thinking or a tool call, tool outputs), each text distinct and holding --word, plus
--others small sessions with a few hits each, then builds the FTS index (or, with
--database-url, loads them into an empty PostgreSQL database). `/?q=` and
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


def setup(url: str) -> None:
    sqlite = url.startswith("sqlite:///")
    bench_pages.setup_django(Path(url.removeprefix("sqlite:///")) if sqlite else url)


COLUMNS = (
    "session_id", "line", "offset", "entry_id", "kind", "role", "text", "blocks",
    "sender", "model", "message_id", "subtype", "logical_parent_id", "first_kept_id", "summary", "leaf_id",
    "usage", "extra", "is_sidechain", "is_meta", "text_facts",
)  # fmt: skip


def row(session_id: int, line: int, text: str | None = None) -> tuple:
    role, block, template = KINDS[line % len(KINDS)]
    if text is None:
        text = template.format(n=line)
    blocks = json.dumps([{"type": block, "text": text}], separators=(",", ":"))
    kind = "user" if role == "tool" else role
    return (
        session_id,
        line,
        line * 1700,
        f"e{line}",
        kind,
        role,
        text,
        blocks,
        *[""] * 8,
        "{}",
        "{}",
        0,
        0,
        0,
    )


def build(url: str, entries: int, others: int) -> None:
    env = {**os.environ, "DATABASE_URL": url, "DEBUG": "0", "SECRET_KEY": "bench"}
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, check=True)
    setup(url)
    from django.db import connection, transaction
    from django.utils import timezone

    from sessionviewer.models import Session, Source

    source = Source.objects.create(path="/bench/claude-code", format="claude_code")
    now = timezone.now()
    fields = {"source": source, "format": "claude_code", "started_at": now, "updated_at": now}
    big = Session.objects.create(key="big", path="/bench/big.jsonl", title="The big one", **fields)
    small = [
        Session.objects.create(key=f"s{n}", path=f"/s{n}.jsonl", title=f"Small {n}", **fields)
        for n in range(others)
    ]

    def rows():
        for n in range(1, entries + 1):
            yield row(big.id, n)
        for session in small:  # 20 entries, 4 of them hits
            for n in range(1, 21):
                yield row(session.id, n, None if n % 5 == 0 else f"nothing here {n}")

    started = time.perf_counter()
    names = ", ".join(f'"{c}"' for c in COLUMNS)
    with transaction.atomic(), connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            marks = ", ".join("?" * len(COLUMNS))
            insert = f"INSERT INTO sessionviewer_entry ({names}) VALUES ({marks})"  # noqa: S608
            cursor.connection.executemany(insert, rows())
            cursor.execute("INSERT INTO entry_fts(entry_fts) VALUES ('rebuild')")
        else:
            with cursor.cursor.copy(f"COPY sessionviewer_entry ({names}) FROM STDIN") as copy:
                for values in rows():
                    copy.write_row(
                        [bool(v) if c.startswith("is_") else v for c, v in zip(COLUMNS, values, strict=True)]
                    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE sessionviewer_entry")
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
    parser.add_argument(
        "--database-url", help="an empty PostgreSQL database (postgres://...) instead of SQLite in bench/out/"
    )
    args = parser.parse_args()
    OUT.mkdir(exist_ok=True)
    database = OUT / f"search-{args.entries}e-{args.others}s.sqlite3"
    url = args.database_url or f"sqlite:///{database}"
    if args.reuse and (args.database_url or database.exists()):
        setup(url)
    else:
        database.unlink(missing_ok=True)
        build(url, args.entries, args.others)
    client = bench_pages.bench_client()
    figures = {
        "list": timed(client, f"/?q={args.word}", args.runs),
        "api": timed(client, f"/api/search?q={args.word}", args.runs),
        "none": timed(client, "/?q=zyzzyva", args.runs),  # a word no entry holds
    }
    for name, figure in figures.items():
        verdict = "ok" if figure["median_ms"] < TARGET_MS else "MISSED"
        print(f"{name:6} median {figure['median_ms']:8.1f} ms  max {figure['max_ms']:8.1f} ms  {verdict}")
    (OUT / "search.json").write_text(json.dumps({"args": vars(args), "figures": figures}, indent=1))


if __name__ == "__main__":
    main()
