"""A first index sends statements by the batch, not by the session: a pass over 200 small
sessions sends no more than one over 20, but for the batches their rows fill.

Counted as the database sees them: on PostgreSQL every statement Django's cursor runs
(the indexer's own statements go through it); on SQLite the connection's trace, which
also sees the writer's plain cursor. SQLite traces each row of an executemany as a
statement of its own, so a run of one statement with only its values changing counts once,
as the executemany that sent it; SQLite's own statements for FTS5 (they start with "--")
are not ours and are not counted.
"""

import math
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessionviewer.index import index_roots, passes
from sessionviewer.models import Entry, Session
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).parent / "fixtures"


def write_history(root: Path, per_format: int) -> list[RootSpec]:
    """per_format sessions in each of five formats, from the fixtures: Claude Code sessions
    with a subagent, Go agent forks holding copies of their parent's replies, Codex
    rollouts, OpenClaw transcripts and Fluux histories with their memory files."""
    claude = root / "claude"
    go = root / "go"
    codex = root / "codex"
    openclaw = root / "openclaw" / "agents" / "main" / "sessions"
    fluux = root / "fluux"
    for n in range(per_format):
        shutil.copytree(FIXTURES / "claude_code" / "cost" / "-home-me-shop", claude / f"-home-me-p{n}")
        for name in sorted((FIXTURES / "go_agent" / "fork_family").iterdir()):
            stamp, _ = name.name.rsplit("-", 1)
            if n % 2 == 0 or name.name.startswith("20260226-143012"):  # half of them fork it
                target = go / f"{stamp}-{n:08x}.jsonl"
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(name, target)
        day = codex / "2025" / "09" / f"{n % 28 + 1:02d}"
        day.mkdir(parents=True, exist_ok=True)
        shutil.copy(
            FIXTURES / "codex" / "tools_and_compaction.jsonl",
            day / f"rollout-2025-09-01T10-00-00-0199a000-0000-7000-8000-{n:012x}.jsonl",
        )
        openclaw.mkdir(parents=True, exist_ok=True)
        shutil.copy(
            FIXTURES / "openclaw" / "tool_views.jsonl", openclaw / f"6f6f6f6f-0000-4000-8000-{n:012x}.jsonl"
        )
        jid = fluux / f"user{n}@example.com"
        jid.mkdir(parents=True)
        shutil.copy(FIXTURES / "fluux_xmpp" / "one_to_one.jsonl", jid / "history.jsonl")
        (jid / "memory.md").write_text(f"# Memory\n- user {n} likes tea\n")
    return [
        RootSpec(claude, "claude_code"),
        RootSpec(go, "go_agent"),
        RootSpec(codex, "codex"),
        RootSpec(root / "openclaw", "openclaw"),
        RootSpec(fluux, "fluux_xmpp"),
    ]


def _template(sql: str) -> str:
    """A statement without its values (quoted strings, blobs, numbers, NULL), and an insert
    without its VALUES: what stays the same across the rows of one executemany."""
    sql = sql.split(" VALUES", 1)[0] if sql.startswith("INSERT") else sql
    sql = re.sub(r"[xX]?'(?:[^']|'')*'", "S", sql)
    return re.sub(r"\bNULL\b", "N", re.sub(r"\d+(\.\d+)?", "N", sql))


def statements_of_a_pass(root: Path, per_format: int) -> Counter:
    specs = write_history(root, per_format)
    counted: Counter = Counter()
    if connection.vendor == "sqlite":
        # Not CaptureQueriesContext: on SQLite it asks the database to quote every
        # parameter of every statement it records, statements the pass never sends.
        connection.ensure_connection()
        last = [None]

        def trace(sql: str) -> None:
            if sql.startswith("--"):
                return  # SQLite's own, for FTS5
            template = _template(sql)
            if template != last[0]:  # an executemany's rows trace one by one
                counted[template[:80]] += 1
            last[0] = template

        connection.connection.set_trace_callback(trace)
        try:
            summary = index_roots(specs, memory=[root / "fluux"])
        finally:
            connection.connection.set_trace_callback(None)
    else:
        with CaptureQueriesContext(connection) as captured:
            summary = index_roots(specs, memory=[root / "fluux"])
        for query in captured.captured_queries:
            counted[_template(query["sql"])[:80]] += 1
    assert not summary.errors and not summary.bad_lines
    assert Session.objects.count() == summary.sessions
    return counted


def test_a_first_index_sends_statements_by_the_batch_not_by_the_session(tmp_path):
    few = statements_of_a_pass(tmp_path / "few", 4)  # 20 sessions' files, and subagents
    sessions_few, rows_few = Session.objects.count(), Entry.objects.count()
    Session.objects.all().delete()
    many = statements_of_a_pass(tmp_path / "many", 40)  # 200
    sessions_many, rows_many = Session.objects.count() - 0, Entry.objects.count()
    assert sessions_many >= 9 * sessions_few
    # Each 500 rows more may cost a statement of each kind that writes rows (entries, their
    # text for search, problems) and each 200 sessions one of each that writes sessions.
    batches = math.ceil(rows_many / passes.BATCH) + math.ceil(sessions_many / passes._NewFiles.FILES)
    allowed = 4 * batches
    grown = {sql: many[sql] - few.get(sql, 0) for sql in many if many[sql] > few.get(sql, 0)}
    assert sum(many.values()) - sum(few.values()) <= allowed, sorted(grown.items(), key=lambda g: -g[1])
    # and none of them one per session
    assert all(count < sessions_many for count in many.values()), many.most_common(5)
    assert rows_few and rows_many
