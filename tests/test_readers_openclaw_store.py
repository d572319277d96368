"""OpenClaw's agent database: its sessions found, their events read as JSONL lines are,
compressed events and archives decoded, and a database without what is needed said so."""

import sqlite3
import tracemalloc
from pathlib import Path

import orjson
import pytest

from sessionviewer.readers import (
    Kept,
    SessionReader,
    SourceBusy,
    agent_database,
    openclaw,
    openclaw_store,
    read_session,
)
from tests.openclaw_store_files import AgentStore, frame, header, one_session_store, said, zeros_frame

MB = 1024 * 1024


@pytest.fixture
def store(tmp_path: Path) -> AgentStore:
    return one_session_store(tmp_path)


def found(root: Path):
    return list(openclaw.discover(root))


def test_discovery_finds_one_session_per_session_id_under_the_agents_folder(store, tmp_path):
    sessions = found(tmp_path / "agents")
    assert [s.key for s in sessions] == ["main/agent/openclaw-agent.sqlite#s1"]
    assert sessions[0].path == Path(f"{store.path}#s1")
    assert sessions[0].agent == "main"
    assert sessions[0].stamp.st_size == 3  # one past its last seq: where a read of it ends


def test_discovery_takes_the_database_file_itself_as_a_root(store):
    assert [s.key for s in found(store.path)] == ["openclaw-agent.sqlite#s1"]


def test_the_format_is_detected_from_a_database_or_its_agents_folder(store, tmp_path):
    from sessionviewer.readers import detect_format

    assert detect_format(store.path) == "openclaw"
    assert detect_format(tmp_path / "agents") == "openclaw"


def test_events_read_as_the_jsonl_reader_reads_their_lines(store):
    result = read_session(Path(f"{store.path}#s1"), openclaw.FORMAT)
    assert result.problems == []
    assert [(e.id, e.line, e.role) for e in result.entries] == [
        ("s1", 1, ""),
        ("m1", 2, "user"),
        ("m2", 3, "assistant"),
    ]
    assert result.entries[0].extra["cwd"] == "/home/alice/project"
    assert (result.end_offset, result.end_line) == (3, 3)


def test_reading_on_from_a_seq_reads_only_the_events_after_it(store):
    result = read_session(Path(f"{store.path}#s1"), openclaw.FORMAT, start_offset=2, start_line=2)
    assert [e.id for e in result.entries] == ["m2"]


def test_compressed_events_are_decoded_with_zstandard(store):
    store.events("s1", said("m3", "user", "a long pasted log " * 200, "m2"), compress=True)
    result = read_session(Path(f"{store.path}#s1"), openclaw.FORMAT, start_offset=3, start_line=3)
    assert result.problems == []
    assert result.entries[0].text.startswith("a long pasted log")


def test_a_compressed_event_whose_length_disagrees_is_a_problem_on_its_seq(store):
    event = said("m3", "user", "hello")
    store.events("s1", event, compress=True)
    store.sql("UPDATE transcript_events SET event_utf8_bytes = 3 WHERE seq = 3")
    result = read_session(Path(f"{store.path}#s1"), openclaw.FORMAT, start_offset=3, start_line=3)
    assert [(p.line, p.message) for p in result.problems] == [
        (4, f"event_zstd holds {len(orjson.dumps(event))} bytes, event_utf8_bytes says 3")
    ]


def test_events_numbered_from_0_are_read_from_0_as_lines_from_1(store):
    # OpenClaw numbers a session's events from 0 (readNextTranscriptSeq: max(seq) + 1, or 0).
    result = read_session(Path(f"{store.path}#s1"), openclaw.FORMAT)
    assert [(e.kind, e.line, e.offset) for e in result.entries][0] == ("session", 1, 0)
    assert (result.end_offset, result.end_line) == (3, 3)  # the next read starts at seq 3


def test_events_numbered_from_any_seq_are_all_read_from_the_smallest(tmp_path):
    store = AgentStore(tmp_path)
    store.window("s1")
    with store.connect() as connection:
        connection.executemany(
            "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES ('s1', ?, ?, ?)",
            [(7, orjson.dumps(header("s1")).decode(), 1), (9, '{"type":"x"}', 2)],
        )
    result = read_session(Path(f"{store.path}#s1"), openclaw.FORMAT)
    assert [e.line for e in result.entries] == [8, 10]
    assert read_session(Path(f"{store.path}#s1"), openclaw.FORMAT, 10, 10).entries == []


def test_a_session_is_streamed_one_event_at_a_time_not_read_whole(store, monkeypatch):
    store.events("s1", *[said(f"m{n}", "user", "more") for n in range(3, 50)])
    parsed = []
    parse_line = openclaw.parse_line
    monkeypatch.setattr(
        openclaw, "parse_line", lambda obj, line: parsed.append(line) or parse_line(obj, line)
    )
    items = iter(SessionReader(Path(f"{store.path}#s1"), openclaw.FORMAT))
    assert next(items).id == "s1"
    assert parsed == [1]  # one event read, not the session's 50
    assert len(list(items)) == 49


def reading(path: Path, limit: int):
    return read_session(path, openclaw.FORMAT, max_event_bytes=limit)


@pytest.mark.parametrize("claim", [None, 1000, 4 * MB])
def test_an_event_whose_header_declares_more_than_the_limit_is_a_problem_and_the_rest_is_read(store, claim):
    store.packed("s1", zeros_frame(4 * MB), claim)
    store.events("s1", said("m4", "user", "after the bomb", "m2"))
    result = reading(Path(f"{store.path}#s1"), MB)
    assert [(p.line, p.message) for p in result.problems] == [(4, "event 3 inflates past 1 MB")]
    assert [e.text for e in result.entries][1:] == ["Fix the upload test", "Done.", "after the bomb"]
    assert result.end_offset == 5


def test_an_event_is_refused_on_its_header_before_any_of_it_is_inflated(store):
    declared = zeros_frame(4 * MB)
    store.packed("s1", declared[:-40] + bytes(40), 1000)  # its blocks broken: inflating it would fail
    result = reading(Path(f"{store.path}#s1"), MB)
    assert [p.message for p in result.problems] == ["event 3 inflates past 1 MB"]


@pytest.mark.parametrize("claim", [None, 1000])
def test_an_event_without_its_size_in_the_header_stops_inflating_at_the_limit(store, claim):
    store.packed("s1", zeros_frame(64 * MB, declared=False), claim)
    store.events("s1", said("m4", "user", "after the bomb", "m2"))
    result = reading(Path(f"{store.path}#s1"), MB)
    assert [(p.line, p.message) for p in result.problems] == [(4, "event 3 inflates past 1 MB")]
    assert result.entries[-1].text == "after the bomb"


def test_an_event_within_the_limit_with_no_claim_is_read(store):
    store.packed("s1", frame(orjson.dumps(said("m3", "user", "unclaimed", "m2"))), None)
    result = reading(Path(f"{store.path}#s1"), MB)
    assert (result.problems, result.entries[-1].text) == ([], "unclaimed")


def test_the_limit_is_the_default_unless_told(store):
    assert openclaw_store.read.__defaults__[-1] == 256 * MB


def test_an_archive_line_past_the_limit_is_a_problem_and_its_other_lines_are_read(store, tmp_path):
    lines = b"".join(orjson.dumps(o) + b"\n" for o in (header("old"), said("a1", "user", "before")))
    blob = (
        frame(lines)
        + zeros_frame(8 * MB, declared=False)
        + frame(b"\n" + orjson.dumps(said("a2", "user", "after")))
    )
    store.archive("old", "g1", "reset", header("old"), blob=blob)
    result = reading(Path(f"{store.path}#old#g1"), MB)
    assert [(p.line, p.message) for p in result.problems] == [
        (3, "line 3 inflates past 1 MB"),
        (1, "the archive does not match its archive_sha256"),
    ]
    assert [e.text for e in result.entries][1:] == ["before", "after"]
    assert result.end_line == 4


def peak_reading(path: Path) -> int:
    """The most memory Python held while the session was read and its entries dropped."""
    tracemalloc.start()
    try:
        assert sum(1 for _ in SessionReader(path, openclaw.FORMAT)) > 0
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_archive_is_inflated_a_line_at_a_time(store):
    for generation, count in (("g2", 2), ("g24", 24)):
        store.archive("old", generation, "reset", *[said(f"a{n}", "user", "x" * MB) for n in range(count)])
    two, many = (peak_reading(Path(f"{store.path}#old#{g}")) for g in ("g2", "g24"))
    assert many - two < 3 * MB  # the same few lines held at a time, not the 24 of the archive


def test_an_archived_transcript_is_a_session_of_its_own_with_the_archive_reason(store, tmp_path):
    store.archive("old", "g1", "reset", header("old"), said("a1", "user", "before the reset"))
    archived = [s for s in found(tmp_path) if "old" in s.key]
    assert [(s.key, s.status) for s in archived] == [
        ("agents/main/agent/openclaw-agent.sqlite#old#g1", "reset")
    ]
    result = read_session(archived[0].path, openclaw.FORMAT)
    assert [e.text for e in result.entries][1:] == ["before the reset"]


def test_a_window_names_its_previous_window_and_why_it_began(store, tmp_path):
    store.window("s2", previous="s1", reason="reset")
    store.window("s3", key="agent:main:fork", previous="s2", reason="fork")
    sessions = {s.key.rsplit("#", 1)[1]: s for s in found(tmp_path)}
    assert sessions["s2"].parent_path == Path(f"{store.path}#s1")
    assert (sessions["s2"].parent_kind, sessions["s2"].extra["window_reason"]) == ("continuation", "reset")
    assert sessions["s3"].parent_kind == "fork"
    assert sessions["s1"].parent_path is None


def test_the_session_key_and_conversation_give_channel_peer_and_label(store, tmp_path):
    store.window("s2", key="agent:main:telegram:group:-100123")
    store.conversation("s2", "telegram", "group", "-100123", "Family chat")
    store.node("agent:main:telegram:group:-100123", label="Groceries")
    session = next(s for s in found(tmp_path) if s.key.endswith("#s2"))
    assert (session.channel, session.peer_kind, session.peer_id) == ("telegram", "group", "-100123")
    assert session.title == "Groceries"  # the label the user set wins, as in sessions.json
    assert session.extra["conversation_label"] == "Family chat"


def test_an_unchanged_database_is_not_opened_again(store, tmp_path, monkeypatch):
    found(tmp_path)
    opened = []
    connect = openclaw_store.connect
    monkeypatch.setattr(openclaw_store, "connect", lambda path: opened.append(path) or connect(path))
    found(tmp_path)
    assert opened == []
    store.events("s1", said("m3", "user", "more"))
    assert found(tmp_path)[0].stamp.st_size == 4
    assert opened == [store.path]


def test_a_database_without_transcript_events_is_reported_as_such(tmp_path):
    path = tmp_path / "agents" / "main" / "agent" / openclaw_store.DATABASE_NAME
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE session_windows (session_id TEXT)")
    (session,) = found(tmp_path)
    assert session.path == path
    assert "no transcript_events table" in session.extra["database_error"]
    with pytest.raises(openclaw_store.Unreadable, match="no transcript_events table"):
        read_session(path, openclaw.FORMAT)


def test_a_locked_database_keeps_its_agent_as_it_was(store, tmp_path, monkeypatch):
    monkeypatch.setattr(agent_database, "BUSY_TIMEOUT", 0.05)
    store.events("s1", said("m3", "user", "more"))  # changed: discovery must look inside
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        (kept,) = found(tmp_path)
        with pytest.raises(SourceBusy):
            read_session(Path(f"{store.path}#s1"), openclaw.FORMAT)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert isinstance(kept, Kept)
    assert kept.key_prefix == "agents/main/"


def test_a_table_being_rebuilt_by_a_migration_is_busy_not_unreadable(store):
    store.sql("ALTER TABLE transcript_events RENAME TO transcript_events_compressed")
    with pytest.raises(SourceBusy, match="being migrated"):
        read_session(Path(f"{store.path}#s1"), openclaw.FORMAT)


def test_a_jsonl_transcript_imported_into_the_database_is_found_once(store, tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "s1.jsonl").write_text('{"type":"session","version":3,"id":"s1"}\n')
    (sessions / "legacy.jsonl").write_text('{"type":"session","version":3,"id":"legacy"}\n')
    assert sorted(s.key for s in found(tmp_path)) == [
        "agents/main/agent/openclaw-agent.sqlite#s1",
        "agents/main/sessions/legacy",
    ]
