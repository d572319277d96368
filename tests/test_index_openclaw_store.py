"""OpenClaw's agent database in the index: read without disturbing the agent, read on from
the last seq, kept as it was while locked, read again after a rewrite, windows linked."""

import os
import sqlite3
from pathlib import Path

import pytest
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import Entry, Session
from sessionviewer.readers import openclaw_store
from sessionviewer.roots import RootSpec
from tests.openclaw_store_files import AgentStore, header, one_session_store, said

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(tmp_path: Path) -> AgentStore:
    return one_session_store(tmp_path)


@pytest.fixture
def reads(monkeypatch) -> list[tuple[str, int, int]]:
    """Each read of a database session: (session id, the seq it read after, events it read)."""
    seen = []
    read = openclaw_store.read

    def noting(path, start_offset, start_line, parse_line):
        result = read(path, start_offset, start_line, parse_line)
        seen.append((str(path).rsplit("#", 1)[1], start_offset, len(result.entries)))
        return result

    monkeypatch.setattr(openclaw_store, "read", noting)
    return seen


def run(root: Path):
    return index_roots([RootSpec(root / "agents", "openclaw")])


def texts(session_key_end: str) -> list[str]:
    session = Session.objects.get(key__endswith=session_key_end)
    return list(session.entries.order_by("line").values_list("text", flat=True))


def test_a_database_session_is_indexed_with_its_entries(store, tmp_path):
    summary = run(tmp_path)
    assert summary.errors == []
    session = Session.objects.get()
    assert (session.key, session.path) == ("main/agent/openclaw-agent.sqlite#s1", f"{store.path}#s1")
    assert (session.first_prompt, session.message_count, session.project) == (
        "Fix the upload test",
        2,
        "/home/alice/project",
    )
    assert (session.read_offset, session.read_line) == (3, 3)


def test_a_pass_leaves_the_database_bytes_and_mtime_as_they_were(store, tmp_path):
    before = (store.path.read_bytes(), os.stat(store.path).st_mtime_ns, sorted(os.listdir(store.path.parent)))
    run(tmp_path)
    after = (store.path.read_bytes(), os.stat(store.path).st_mtime_ns, sorted(os.listdir(store.path.parent)))
    assert after == before


def test_a_wal_database_no_one_has_open_gets_no_wal_file_from_a_pass(tmp_path):
    store = AgentStore(tmp_path, wal=True)
    store.window("s1")
    store.events("s1", header("s1"))
    assert os.listdir(store.path.parent) == ["openclaw-agent.sqlite"]
    run(tmp_path)
    assert os.listdir(store.path.parent) == ["openclaw-agent.sqlite"]
    assert Session.objects.get().entry_count == 1


def test_the_next_pass_reads_only_the_new_events(store, tmp_path, reads):
    run(tmp_path)
    store.events("s1", said("m3", "user", "and the docs", "m2"))
    summary = run(tmp_path)
    assert reads == [("s1", 0, 3), ("s1", 3, 1)]
    assert summary.entries == 1
    assert texts("#s1")[-1] == "and the docs"


def test_a_pass_over_an_unchanged_database_opens_nothing(store, tmp_path, reads, monkeypatch):
    run(tmp_path)
    opened = []
    connect = openclaw_store.connect
    monkeypatch.setattr(openclaw_store, "connect", lambda path: opened.append(path) or connect(path))
    summary = run(tmp_path)
    assert (summary.opened, opened, reads[1:]) == (0, [], [])


def test_a_locked_database_is_left_for_the_next_pass_and_reported_nowhere(store, tmp_path, monkeypatch):
    monkeypatch.setattr(openclaw_store, "BUSY_TIMEOUT", 0.05)
    run(tmp_path)
    store.events("s1", said("m3", "user", "while locked", "m2"))
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        summary = run(tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (summary.errors, summary.removed, len(summary.busy)) == ([], 0, 1)
    session = Session.objects.get()
    assert (session.index_error, session.problem_count, session.entry_count) == ("", 0, 3)
    run(tmp_path)
    assert texts("#s1")[-1] == "while locked"


def test_a_rewritten_session_is_read_again_from_its_start(store, tmp_path, reads):
    run(tmp_path)
    store.rewrite("s1", "2", header("s1"), said("r1", "user", "rewritten"))
    run(tmp_path)
    assert reads[-1] == ("s1", 0, 2)
    assert texts("#s1") == ["", "rewritten"]


def test_a_window_links_to_the_window_before_it(store, tmp_path):
    store.window("s2", previous="s1", reason="reset")
    store.events("s2", header("s2"), said("n1", "user", "new start"))
    run(tmp_path)
    first, second = Session.objects.get(key__endswith="#s1"), Session.objects.get(key__endswith="#s2")
    assert (second.parent_id, second.kind, second.extra["window_reason"]) == (
        first.id,
        "continuation",
        "reset",
    )


def test_a_session_in_both_jsonl_and_the_database_is_indexed_once_from_the_database(store, tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir()
    (sessions / "s1.jsonl").write_text('{"type":"session","version":3,"id":"s1"}\n')
    run(tmp_path)
    assert list(Session.objects.values_list("key", flat=True)) == ["main/agent/openclaw-agent.sqlite#s1"]


def test_a_database_lacking_transcript_events_shows_its_error_on_the_list(tmp_path, client, viewer):
    path = tmp_path / "agents" / "main" / "agent" / openclaw_store.DATABASE_NAME
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE session_windows (session_id TEXT)")
    summary = run(tmp_path)
    session = Session.objects.get()
    assert "no transcript_events table" in session.index_error
    assert summary.errors and "no transcript_events table" in summary.errors[0]
    assert "no transcript_events table" in client.get(reverse("session-list")).content.decode()


def test_a_database_session_page_opens_without_a_raw_file_link(store, tmp_path, client, viewer):
    run(tmp_path)
    session = Session.objects.get()
    page = client.get(session.get_absolute_url()).content.decode()
    assert "Fix the upload test" in page
    assert reverse("api-session-raw", args=[session.id]) not in page
    assert Entry.objects.filter(session=session, entry_id="m2").exists()


def test_a_root_may_be_the_database_file_itself(store):
    summary = index_roots([RootSpec(store.path, "openclaw")])
    assert summary.errors == []
    assert list(Session.objects.values_list("key", "entry_count")) == [("openclaw-agent.sqlite#s1", 3)]


def test_a_database_session_without_a_label_is_titled_by_its_first_prompt(tmp_path):
    store = AgentStore(tmp_path / "openclaw")
    store.window("w9")
    store.events("w9", header("w9"), said("p9", "user", "Any orders overnight?"))
    index_roots([RootSpec(tmp_path / "openclaw" / "agents", "openclaw")])
    assert Session.objects.get().display_title == "Any orders overnight?"
