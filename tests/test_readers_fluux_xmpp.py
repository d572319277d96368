from datetime import UTC, datetime
from pathlib import Path

import pytest

from sessionviewer.readers import ATTACHMENT, HEADER, MESSAGE, RAW, REACTION, TEXT, fluux_xmpp, read_session
from tests.conftest import SAMPLES as SHARED_SAMPLES

FIXTURES = Path(__file__).parent / "fixtures" / "fluux_xmpp"
SAMPLES = SHARED_SAMPLES / "fluux" / "memory"


def read(name):
    return read_session(FIXTURES / name, "fluux_xmpp")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# parse_line


def test_header_becomes_session_entry_with_jid_and_version():
    entry = read("one_to_one.jsonl").entries[0]
    assert entry.kind == HEADER
    assert entry.id == "line:1"
    assert entry.extra == {"jid": "alice@example.com", "version": 1}
    assert entry.timestamp == datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC)


def test_one_to_one_messages_keep_ids_roles_and_senders():
    entries = read("one_to_one.jsonl").entries
    user, assistant = entries[1], entries[2]
    assert (user.kind, user.role, user.id, user.sender) == (
        MESSAGE,
        "user",
        "stanza-101",
        "alice@example.com",
    )
    assert user.blocks[0].type == TEXT
    assert user.text == "Can you look at my shopping list page?"
    assert (assistant.role, assistant.sender) == ("assistant", "")
    assert assistant.id == "6f1c2a3e-0b4d-4c5e-8f90-1a2b3c4d5e6f"


def test_messages_have_no_parent_links():
    assert all(entry.parent_id is None for entry in read("one_to_one.jsonl").entries)


def test_attachments_become_one_block_each():
    entry = read("one_to_one.jsonl").entries[3]
    attachments = [b for b in entry.blocks if b.type == ATTACHMENT]
    assert [(b.name, b.mime_type, b.size) for b in attachments] == [
        ("list.png", "image/png", "48KB"),
        ("notes.txt", "text/plain", "1KB"),
    ]
    # Searchable: the message, then the files' names.
    assert entry.text == "Here it is\nlist.png\nnotes.txt"


def test_reaction_becomes_reaction_block_targeting_the_message():
    entry = read("one_to_one.jsonl").entries[5]
    assert entry.id == "line:6"  # reactions carry no msg_id
    assert [b.type for b in entry.blocks] == [REACTION]  # empty content adds no text block
    reaction = entry.blocks[0]
    assert reaction.target_id == "7a2d3b4f-1c5e-4d6f-9a01-2b3c4d5e6f70"
    assert reaction.emojis == ["👍", "🎉"]
    assert reaction.text == "👍 🎉"


def test_group_room_senders_are_nick_at_muc():
    entries = read("group_room_with_bad_last_line.jsonl").entries
    assert [e.sender for e in entries if e.role == "user"] == ["carol@muc", "dave@muc", "carol@muc"]
    assert entries[2].blocks[0].mime_type == "unknown"


def test_timestamps_with_nanoseconds_and_z_are_parsed():
    room = read("group_room_with_bad_last_line.jsonl").entries
    assert room[0].timestamp == datetime(2025, 6, 3, 9, 0, 0, 123456, tzinfo=UTC)
    assert room[1].timestamp == datetime(2025, 6, 3, 9, 0, 1, 987654, tzinfo=UTC)
    assert room[2].timestamp == datetime(2025, 6, 3, 9, 0, 5, 500000, tzinfo=UTC)
    assert read("one_to_one.jsonl").entries[1].timestamp == datetime(2025, 6, 1, 14, 30, 23, tzinfo=UTC)


def test_last_line_not_json_becomes_problem_and_rest_is_kept(tmp_path):
    path = tmp_path / "history.jsonl"
    path.write_bytes((FIXTURES / "group_room_with_bad_last_line.jsonl").read_bytes())
    result = read_session(path, "fluux_xmpp")
    assert len(result.entries) == 5
    assert [(p.line, p.text) for p in result.problems] == [
        (6, '{"type":"message","role":"user","content":"thanks, fixing')
    ]
    assert result.end_line == 6


def test_blank_and_whitespace_lines_are_skipped():
    result = read("blank_and_whitespace_lines.jsonl")
    assert result.problems == []
    assert [(e.line, e.id) for e in result.entries] == [(1, "line:1"), (4, "b-1"), (6, "b-2")]


def test_odd_but_valid_json_never_raises():
    result = read("odd_but_valid_values.jsonl")
    assert result.problems == []
    header, odd, numeric, typing, untyped, listed = result.entries
    assert header.extra == {"jid": "", "version": "2"}
    assert (odd.kind, odd.role, odd.id, odd.blocks) == (MESSAGE, "", "line:2", [])
    assert numeric.text == "42"
    assert [b.size for b in numeric.blocks if b.type == ATTACHMENT] == ["1024"]
    assert [(b.target_id, b.emojis) for b in numeric.blocks if b.type == REACTION] == [("", [])]
    assert (typing.kind, typing.subtype, typing.raw["state"]) == (RAW, "typing", "composing")
    assert untyped.kind == listed.kind == RAW


# Legacy Markdown


def test_legacy_markdown_archive_becomes_messages():
    result = read("legacy_archive.md")
    assert result.problems == []
    assert [(e.id, e.role, e.sender) for e in result.entries] == [
        ("line:1", "user", "alice@example.com"),
        ("line:6", "assistant", ""),
        ("line:15", "user", "alice@example.com"),
        ("line:18", "assistant", ""),
    ]
    assert (
        result.entries[0].text == "Can you help me plan the checkout page?\n1. Cart summary\n2. Payment form"
    )
    assert result.end_offset == (FIXTURES / "legacy_archive.md").stat().st_size


def test_legacy_markdown_headings_inside_a_reply_stay_in_it():
    reply = read("legacy_archive.md").entries[1]
    assert reply.text.startswith("Sure! Here is a plan:\n\n### Step 1\n")
    assert reply.text.endswith("### Step 2\nAdd the payment form.")


def test_legacy_markdown_records_problem_for_text_before_first_heading():
    result = read("legacy_archive_with_preamble.md")
    assert [(p.line, p.text) for p in result.problems] == [(1, "Exported from an old notebook")]
    assert [(e.line, e.role, e.sender, e.text) for e in result.entries] == [
        (3, "user", "", "Hello!"),
        (6, "assistant", "", "Hi there!"),
        (9, "user", "bob@muc", "How are you?"),
        (12, "assistant", "", ""),
    ]


def test_legacy_markdown_returns_only_turns_after_start_offset():
    path = FIXTURES / "legacy_archive.md"
    first = read_session(path, "fluux_xmpp")
    again = read_session(path, "fluux_xmpp", first.end_offset, first.end_line)
    middle = read_session(path, "fluux_xmpp", first.entries[2].offset, 14)
    assert again.entries == []
    assert [e.line for e in middle.entries] == [15, 18]


def test_jsonl_files_are_left_to_the_generic_reader():
    assert fluux_xmpp.read(FIXTURES / "one_to_one.jsonl", 0, 0) is None


# discover


@pytest.fixture
def memory(tmp_path):
    root = tmp_path / "memory"
    write(root / "identity.md", "You are Fluux Agent.\n")
    write(root / "README.md", "notes\n")
    alice = root / "alice@example.com"
    write(alice / "history.jsonl", (FIXTURES / "one_to_one.jsonl").read_text())
    write(alice / "user.md", "- Name: Alice\n")
    write(alice / "knowledge.jsonl", '{"key":"k","content":"v","ts":"2025-06-01T00:00:00Z"}\n')
    write(alice / "files" / "0b9f_notes.txt", "notes\n")
    write(alice / "sessions" / "20250601-143022.jsonl", (FIXTURES / "one_to_one.jsonl").read_text())
    write(alice / "sessions" / "20250530-080000.md", (FIXTURES / "legacy_archive.md").read_text())
    write(alice / "sessions" / "notes.txt", "not a session\n")
    write(root / "carol@example.com" / "history.md", "### user (carol@example.com)\nHi\n\n")
    write(
        root / "dev@conference.example.com" / "history.jsonl",
        (FIXTURES / "group_room_with_bad_last_line.jsonl").read_text(),
    )
    write(
        root / "team@example.org" / "history.jsonl",
        '{"type":"message","role":"user","content":"hi","sender":"eve@muc"}\n',
    )
    write(root / "backups" / "history.jsonl", "{}\n")
    return root


def test_discover_finds_active_and_archived_sessions(memory):
    found = {s.key: s for s in fluux_xmpp.discover(memory)}
    assert (
        sorted(found)
        == list(found)
        == [
            "alice@example.com/history.jsonl",
            "alice@example.com/sessions/20250530-080000.md",
            "alice@example.com/sessions/20250601-143022.jsonl",
            "carol@example.com/history.md",
            "dev@conference.example.com/history.jsonl",
            "team@example.org/history.jsonl",
        ]
    )
    assert found["alice@example.com/history.jsonl"].status == "active"
    assert found["carol@example.com/history.md"].status == "active"
    archive = found["alice@example.com/sessions/20250601-143022.jsonl"]
    assert (archive.status, archive.jid, archive.format) == ("archived", "alice@example.com", "fluux_xmpp")
    assert archive.title == "2025-06-01 14:30:22"
    assert archive.extra["archived_at"] == "2025-06-01T14:30:22+00:00"


def test_discover_marks_rooms_by_domain_without_opening_files(memory):
    # Rooms on other domains (team@example.org) are found by the indexer from their
    # "nick@muc" senders: tests/test_index_passes.py.
    rooms = {s.jid: s.extra["room"] for s in fluux_xmpp.discover(memory)}
    assert rooms == {
        "alice@example.com": False,
        "carol@example.com": False,
        "dev@conference.example.com": True,
        "team@example.org": False,
    }


def test_discover_on_a_missing_root_finds_nothing(tmp_path):
    assert list(fluux_xmpp.discover(tmp_path / "missing")) == []


# looks_like


def test_looks_like_accepts_memory_root_with_jid_folders(memory):
    (memory / "identity.md").unlink()
    assert fluux_xmpp.looks_like(memory, None)


def test_looks_like_accepts_root_with_only_global_files(tmp_path):
    write(tmp_path / "personality.md", "Friendly.\n")
    assert fluux_xmpp.looks_like(tmp_path, None)


def test_looks_like_rejects_other_folders(tmp_path):
    write(tmp_path / "IDENTITY.md", "OpenClaw workspace\n")
    write(tmp_path / "projects" / "-home-demo" / "a.jsonl", "{}\n")
    assert not fluux_xmpp.looks_like(tmp_path, None)


@pytest.mark.parametrize(
    "first",
    [
        {"type": "session", "version": 1, "created": "2025-06-01T14:30:22Z", "jid": "alice@example.com"},
        {"type": "message", "role": "user", "content": "hi", "msg_id": "s-1"},
        {"type": "message", "role": "user", "content": "hi", "sender": "bob@muc"},
    ],
)
def test_looks_like_accepts_fluux_first_lines(tmp_path, first):
    assert fluux_xmpp.looks_like(write(tmp_path / "x.jsonl", "{}\n"), first)


@pytest.mark.parametrize(
    "first",
    [
        {
            "type": "user",
            "parentUuid": None,
            "sessionId": "s",
            "uuid": "u",
            "message": {"role": "user", "content": "hi"},
        },
        {"type": "summary", "summary": "Title", "leafUuid": "u"},
        {
            "type": "session",
            "id": "a3f7c901",
            "version": 1,
            "timestamp": "2026-02-26T14:30:12Z",
            "cwd": "/home/demo",
        },
        {
            "type": "message",
            "id": "d4e5",
            "parent_id": "",
            "role": "user",
            "message": {"role": "user", "content": []},
        },
        {
            "type": "session",
            "version": 3,
            "id": "x",
            "timestamp": "2026-01-01T00:00:00Z",
            "cwd": "/home/demo",
        },
        {"type": "message", "id": "a1", "parentId": None, "message": {"role": "user", "content": "hi"}},
        {"type": "session", "sessionKey": "agent:main:channel:telegram", "createdAt": 1708000000000},
        {"role": "user", "content": "Hello", "ts": 1708000000000},
    ],
)
def test_looks_like_rejects_other_formats(tmp_path, first):
    assert not fluux_xmpp.looks_like(write(tmp_path / "x.jsonl", "{}\n"), first)


def test_looks_like_accepts_legacy_markdown_in_a_jid_folder(memory):
    assert fluux_xmpp.looks_like(memory / "alice@example.com" / "sessions" / "20250530-080000.md", None)
    assert fluux_xmpp.looks_like(memory / "carol@example.com" / "history.md", None)
    assert not fluux_xmpp.looks_like(memory / "alice@example.com" / "user.md", None)


# The shared samples


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_samples_every_message_line_becomes_an_entry():
    for session in fluux_xmpp.discover(SAMPLES):
        if session.path.suffix != ".jsonl":
            continue
        result = read_session(session.path, "fluux_xmpp")
        message_lines = [
            n for n, line in enumerate(session.path.read_text().splitlines(), 1) if '"type":"message"' in line
        ]
        assert [e.line for e in result.entries if e.kind == MESSAGE] == message_lines, session.key


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="shared samples not present")
def test_samples_room_bad_last_line_becomes_a_problem():
    path = SAMPLES / "room@conference.example.com" / "history.jsonl"
    result = read_session(path, "fluux_xmpp")
    last = len(path.read_text().splitlines())
    assert [p.line for p in result.problems] == [last]
    assert len(result.entries) == last - 1


# The demo tree the project ships


def test_demo_memory_tree_reads_without_problems():
    demo = Path(__file__).resolve().parent.parent / "demo" / "fluux" / "memory"
    sessions = list(fluux_xmpp.discover(demo))
    assert {s.jid for s in sessions} == {
        "alice@example.com",
        "carol@example.com",
        "dev@conference.example.com",
    }
    assert {s.jid for s in sessions if s.extra["room"]} == {"dev@conference.example.com"}
    for session in sessions:
        result = read_session(session.path, "fluux_xmpp")
        assert result.problems == [], session.key
        assert any(e.kind == MESSAGE for e in result.entries), session.key


def test_an_archive_named_like_a_time_that_is_no_time_keeps_its_name(tmp_path):
    sessions = tmp_path / "alice@example.com" / "sessions"
    sessions.mkdir(parents=True)
    (sessions / "20251340-250000.jsonl").write_text('{"type":"message","role":"user","content":"hi"}\n')
    (sessions / "20251231-235959.jsonl").write_text('{"type":"message","role":"user","content":"hi"}\n')
    found = {s.path.name: s for s in fluux_xmpp.discover(tmp_path)}
    odd = found["20251340-250000.jsonl"]
    assert (odd.status, odd.title, "archived_at" in odd.extra) == ("archived", "20251340-250000", False)
    assert found["20251231-235959.jsonl"].extra["archived_at"] == "2025-12-31T23:59:59+00:00"
