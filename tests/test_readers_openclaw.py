from pathlib import Path

import orjson
import pytest

from sessionviewer.readers import (
    ASSISTANT,
    BRANCH,
    COMPACTION,
    HEADER,
    IMAGE,
    MESSAGE,
    RAW,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    openclaw,
    read_session,
)
from tests.conftest import SAMPLES as SHARED_SAMPLES

FIXTURES = Path(__file__).parent / "fixtures" / "openclaw"
SAMPLES = SHARED_SAMPLES / "openclaw"
MYCLAW = FIXTURES / "myclaw" / "sessions"
AGENTS = FIXTURES / "agents_layout"
TELEGRAM = "agent__main__channel__telegram__account__default__peer__direct__user_1001"


def read(path: Path):
    result = read_session(path, openclaw.FORMAT)
    assert result.problems == []
    return result.entries


def by_id(entries, entry_id):
    return next(e for e in entries if e.id == entry_id)


def v3(entry_id):
    return by_id(read(FIXTURES / "pi_v3_all_kinds.jsonl"), entry_id)


def write(path: Path, *objects) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objects))
    return path


PI_HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-03-08T12:00:00Z", "cwd": "/p"}


# pi entries


def test_openclaw_reader_reads_v3_header_with_cwd_and_parent_session():
    header = read(FIXTURES / "pi_v3_all_kinds.jsonl")[0]
    assert header.kind == HEADER
    assert header.extra["session_id"] == "5a5a5a5a-0000-4000-8000-000000000003"
    assert header.extra["cwd"] == "/home/user/work"
    assert header.extra["version"] == 3
    assert header.extra["parent_session_path"].endswith("4b4b4b4b-0000-4000-8000-000000000002.jsonl")


def test_openclaw_reader_links_v3_entries_by_id_and_parent_id():
    entries = read(FIXTURES / "pi_v3_all_kinds.jsonl")
    assert (entries[1].id, entries[1].parent_id) == ("e0000001", None)
    assert (entries[2].id, entries[2].parent_id) == ("e0000002", "e0000001")


def test_openclaw_reader_reads_string_user_content_as_text():
    entry = v3("e0000001")
    assert (entry.kind, entry.role) == (MESSAGE, USER)
    assert [(b.type, b.text) for b in entry.blocks] == [(TEXT, "Read the notes, please.")]
    assert entry.is_prompt


def test_openclaw_reader_reads_thinking_text_and_parallel_tool_calls():
    entry = v3("e0000002")
    assert entry.role == ASSISTANT
    assert [b.type for b in entry.blocks] == [THINKING, TEXT, TOOL_CALL, TOOL_CALL]
    assert [(b.call_id, b.name, b.arguments) for b in entry.blocks[2:]] == [
        ("call_a", "read", {"path": "notes.md"}),
        ("call_b", "read", {"path": "photo.png"}),
    ]


def test_openclaw_reader_maps_usage_and_keeps_provider_api_and_stop_reason():
    entry = v3("e0000002")
    assert entry.model == "claude-sonnet-4-5"
    assert entry.usage == {"input": 100, "output": 40, "cache_read": 60, "cache_write": 10}
    assert entry.extra == {"provider": "anthropic", "api": "anthropic-messages", "stop_reason": "toolUse"}


def test_openclaw_reader_turns_tool_result_into_tool_result_block_with_details():
    entry = v3("e0000003")
    assert entry.role == TOOL
    result = entry.blocks[0]
    assert (result.type, result.call_id, result.name, result.is_error) == (
        TOOL_RESULT,
        "call_a",
        "read",
        False,
    )
    assert result.text == "# Notes\nbuy milk"
    assert entry.extra["details"] == {"lines": 2}


def test_openclaw_reader_keeps_tool_result_images_and_error_flag():
    entry = v3("e0000004")
    assert [b.type for b in entry.blocks] == [TOOL_RESULT, IMAGE]
    assert entry.blocks[0].is_error
    assert entry.blocks[1].mime_type == "image/png"


def test_openclaw_reader_shrinks_large_tool_details():
    entry = openclaw.parse_line(
        {"type": "message", "id": "x", "message": {"role": "toolResult", "details": {"diff": "x" * 10_000}}},
        2,
    )
    assert list(entry.extra["details"]) == ["truncated"]
    assert len(entry.extra["details"]["truncated"]) < 2100


def test_openclaw_reader_keeps_empty_error_turn_as_an_entry():
    entry = v3("e0000005")
    assert (entry.kind, entry.role, entry.blocks) == (MESSAGE, ASSISTANT, [])
    assert entry.extra["stop_reason"] == "error"
    assert entry.extra["error_message"] == "fetch failed"


def test_openclaw_reader_shows_bash_execution_as_tool_call_and_result():
    entry = v3("e0000006")
    assert (entry.role, entry.subtype) == (TOOL, "bashExecution")
    call, result = entry.blocks
    assert (call.type, call.name, call.arguments) == (TOOL_CALL, "bash", {"command": "git status"})
    assert (result.type, result.call_id, result.is_error) == (TOOL_RESULT, call.call_id, True)
    assert result.text == "fatal: not a git repository"
    assert entry.extra["exit_code"] == 128
    assert not entry.is_prompt


def test_openclaw_reader_keeps_custom_role_message_as_written():
    entry = v3("e0000007")
    assert (entry.kind, entry.role, entry.subtype) == (MESSAGE, "custom", "reminder")
    assert entry.text == "Remember the deadline."
    assert entry.extra["display"] is True


def test_openclaw_reader_marks_compaction_first_kept_entry():
    entry = v3("e0000008")
    assert entry.kind == COMPACTION
    assert entry.first_kept_id == "e0000005"
    assert entry.summary == "User asked to read notes."
    assert entry.extra == {"tokens_before": 50000}


def test_openclaw_reader_reads_branch_summary_as_branch():
    entry = v3("e0000009")
    assert (entry.kind, entry.parent_id) == (BRANCH, "e0000002")
    assert entry.summary == "The abandoned branch read the notes."
    assert entry.extra == {"from_id": "e0000008"}


@pytest.mark.parametrize(
    ("entry_id", "kind", "text"),
    [
        ("e0000010", "model_change", "model: openai/gpt-5.1"),
        ("e0000011", "thinking_level_change", "thinking level: high"),
        ("e0000012", "custom", 'model-snapshot: {"provider":"openai","modelId":"gpt-5.1"}'),
        ("e0000013", "custom_message", "Injected context."),
        ("e0000014", "label", "label: start"),
        ("e0000015", "session_info", "Reading notes"),
    ],
)
def test_openclaw_reader_keeps_setting_entries_under_their_type_with_short_text(entry_id, kind, text):
    entry = v3(entry_id)
    assert entry.kind == kind
    assert entry.text == text


def test_openclaw_reader_gives_session_info_name_as_summary():
    assert v3("e0000015").summary == "Reading notes"


def test_openclaw_reader_keeps_model_of_model_change_as_a_marker():
    entry = v3("e0000010")
    assert entry.model == "gpt-5.1"
    assert entry.extra == {"provider": "openai", "model_id": "gpt-5.1", "marker": "model"}


def test_openclaw_reader_keeps_unknown_type_raw():
    entry = v3("e0000016")
    assert (entry.kind, entry.subtype, entry.parent_id) == (RAW, "future_kind", "e0000015")
    assert entry.raw["whatever"] == [1, 2]


def test_openclaw_reader_marks_gateway_injected_turn_as_meta():
    entry = v3("e0000017")
    assert entry.is_meta
    assert entry.role == ASSISTANT
    assert not v3("e0000002").is_meta


def test_openclaw_reader_reads_v1_without_ids_as_line_ids_without_parents():
    entries = read(FIXTURES / "pi_v1_without_ids.jsonl")
    assert [(e.id, e.parent_id, e.kind) for e in entries] == [
        ("6c6c6c6c-0000-4000-8000-000000000001", None, HEADER),
        ("line:2", None, MESSAGE),
        ("line:3", None, "model_change"),
        ("line:4", None, MESSAGE),
        ("line:5", None, MESSAGE),
        ("line:6", None, "thinking_level_change"),
    ]


def test_openclaw_reader_reads_v1_header_model_and_thinking_level():
    header = read(FIXTURES / "pi_v1_without_ids.jsonl")[0]
    assert header.model == "claude-sonnet-4-5"
    assert header.extra["provider"] == "anthropic"
    assert header.extra["thinking_level"] == "off"
    assert "version" not in header.extra


def test_openclaw_reader_copes_with_wrong_types_without_raising():
    odd = [
        {"type": "message", "id": 5, "parentId": [], "message": "text"},
        {
            "type": "message",
            "message": {"role": "assistant", "content": [None, 3, {"type": "audio"}], "usage": []},
        },
        {"type": "compaction", "summary": 1, "firstKeptEntryId": None, "tokensBefore": "many"},
        {"type": "label", "label": None},
        {"type": None, "role": None, "content": {"a": 1}},
        {},
    ]
    entries = [openclaw.parse_line(obj, n) for n, obj in enumerate(odd, 1)]
    assert entries[0].id == "5" and entries[0].parent_id is None
    assert entries[1].blocks[0].text.startswith("[audio]")
    assert entries[2].first_kept_id == ""
    assert entries[3].text == "label cleared"
    assert entries[4].kind == MESSAGE
    assert entries[5].kind == RAW


# myclaw flat lines


def test_openclaw_reader_reads_myclaw_header_with_session_key_and_created_at():
    header = read(MYCLAW / f"{TELEGRAM}.jsonl")[0]
    assert header.kind == HEADER
    assert header.extra == {
        "session_key": "agent:main:channel:telegram:account:default:peer:direct:user_1001"
    }
    assert header.timestamp.isoformat() == "2024-02-15T12:26:40+00:00"


def test_openclaw_reader_gives_flat_lines_line_ids_and_no_parent():
    entries = read(MYCLAW / f"{TELEGRAM}.jsonl")
    assert [(e.id, e.parent_id) for e in entries[1:]] == [
        ("line:2", None),
        ("line:3", None),
        ("line:4", None),
        ("line:5", None),
    ]
    assert entries[1].text == "What's the weather?"


def test_openclaw_reader_reads_flat_assistant_content_blocks_and_meta():
    entry = read(MYCLAW / f"{TELEGRAM}.jsonl")[2]
    assert [(b.type, b.call_id, b.name) for b in entry.blocks] == [(TOOL_CALL, "toolu_1", "weather")]
    assert entry.model == "claude-sonnet-4-5"
    assert entry.usage == {"input": 10, "output": 5, "cache_read": 0, "cache_write": 0}
    assert entry.extra["stop_reason"] == "toolUse"


def test_openclaw_reader_reads_flat_tool_line_as_tool_result():
    entry = read(MYCLAW / f"{TELEGRAM}.jsonl")[3]
    assert entry.role == TOOL
    result = entry.blocks[0]
    assert (result.type, result.call_id, result.name, result.text) == (
        TOOL_RESULT,
        "toolu_1",
        "weather",
        "Sunny, 21°C",
    )


def test_openclaw_reader_reads_flat_block_content():
    entry = read(MYCLAW / "agent__main__channel__slack__account__work__peer__group__c0ffee.jsonl")[1]
    assert entry.text == "Standup notes?"


# session keys


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        (
            "agent:main:channel:telegram:account:default:peer:direct:user_123456",
            {
                "agent": "main",
                "channel": "telegram",
                "account": "default",
                "peer_kind": "direct",
                "peer_id": "user_123456",
            },
        ),
        ("agent:main:main", {"agent": "main", "main_key": "main"}),
        (
            "agent:main:telegram:group:123",
            {"agent": "main", "channel": "telegram", "peer_kind": "group", "peer_id": "123"},
        ),
        (
            "agent:main:discord:work:direct:42",
            {
                "agent": "main",
                "channel": "discord",
                "account": "work",
                "peer_kind": "direct",
                "peer_id": "42",
            },
        ),
        ("agent:main:direct:+15551234", {"agent": "main", "peer_kind": "direct", "peer_id": "+15551234"}),
        (
            "agent:main:matrix:channel:!room:example.org:thread:$ev",
            {
                "agent": "main",
                "channel": "matrix",
                "peer_kind": "channel",
                "peer_id": "!room:example.org",
                "thread": "$ev",
            },
        ),
        ("agent:ops:subagent:1b2c", {"agent": "ops", "scope": "subagent"}),
        ("agent:main:channel:telegram", {"agent": "main", "channel": "telegram"}),
        ("telegram:group:123", {"channel": "telegram", "peer_kind": "group", "peer_id": "123"}),
        ("not a key", {}),
        ("", {}),
        (None, {}),
    ],
)
def test_parse_session_key_keeps_the_parts_that_parse(key, expected):
    empty = {"agent": "", "channel": "", "account": "", "peer_kind": "", "peer_id": ""}
    assert openclaw.parse_session_key(key) == empty | expected


# discovery


def found(root: Path) -> dict:
    return {f.key: f for f in openclaw.discover(root)}


def test_openclaw_discover_fills_session_from_myclaw_sessions_json():
    session = found(MYCLAW)[TELEGRAM]
    assert session.path == MYCLAW / f"{TELEGRAM}.jsonl"
    assert (session.agent, session.channel, session.account) == ("main", "telegram", "default")
    assert (session.peer_kind, session.peer_id) == ("direct", "user_1001")
    assert session.title == "Weather chat"
    assert session.status == "active"
    assert session.extra["model"] == "anthropic/claude-sonnet-4-5"
    assert session.extra["totalTokens"] == 1234
    assert session.extra["updatedAt"] == 1708000060000
    assert session.extra["chatType"] == "direct"
    assert session.extra["session_key"] == "agent:main:channel:telegram:account:default:peer:direct:user_1001"
    assert "skillsSnapshot" not in session.extra


def test_openclaw_discover_parses_key_of_unlisted_myclaw_transcript_from_its_name():
    session = found(MYCLAW)["agent__main__channel__slack__account__work__peer__group__c0ffee"]
    assert (session.channel, session.account, session.peer_kind, session.peer_id) == (
        "slack",
        "work",
        "group",
        "c0ffee",
    )


def test_openclaw_discover_matches_transcripts_by_session_id_in_agents_layout():
    sessions = found(AGENTS)
    main = sessions["agents/main/sessions/1a1a1a1a-0000-4000-8000-000000000001"]
    assert main.agent == "main"
    assert main.extra["session_key"] == "agent:main:main"
    assert main.extra["model"] == "gpt-5.4"
    assert main.title == "Alice"
    group = sessions["agents/main/sessions/2b2b2b2b-0000-4000-8000-000000000002"]
    assert (group.channel, group.peer_kind, group.peer_id) == ("telegram", "group", "-100123")
    assert group.extra["thread"] == "42"
    assert group.title == "Family"


def test_openclaw_discover_includes_transcripts_sessions_json_does_not_list():
    session = found(AGENTS)["agents/main/sessions/5e5e5e5e-0000-4000-8000-000000000005"]
    assert (session.agent, session.status, session.extra) == ("main", "active", {})


def test_openclaw_discover_includes_reset_and_deleted_transcripts_with_status_and_time():
    sessions = found(AGENTS)
    reset = sessions["agents/main/sessions/3c3c3c3c-0000-4000-8000-000000000003"]
    assert reset.status == "reset"
    assert reset.extra["retired_at"] == "2026-01-01T00:00:00+00:00"
    deleted = sessions["agents/main/sessions/4d4d4d4d-0000-4000-8000-000000000004"]
    assert deleted.status == "deleted"
    assert deleted.extra["retired_at"] == "2026-02-03T04:05:06.789000+00:00"
    assert read(deleted.path)[1].text == "hello"


def test_openclaw_discover_keeps_the_key_when_a_transcript_is_reset(tmp_path):
    write(tmp_path / "sessions" / "abc.jsonl", PI_HEADER)
    before = list(openclaw.discover(tmp_path))
    (tmp_path / "sessions" / "abc.jsonl").rename(
        tmp_path / "sessions" / "abc.jsonl.reset.2026-01-01T00-00-00.000Z"
    )
    after = list(openclaw.discover(tmp_path))
    assert [f.key for f in before] == [f.key for f in after] == ["sessions/abc"]
    assert after[0].status == "reset"


def test_openclaw_discover_skips_trajectory_and_checkpoint_files():
    names = [f.path.name for f in openclaw.discover(AGENTS)]
    assert not [n for n in names if ".trajectory." in n or ".checkpoint." in n]
    assert len(names) == 6


def test_openclaw_discover_survives_sessions_json_that_is_not_json():
    session = found(AGENTS)["agents/ops/sessions/6f6f6f6f-0000-4000-8000-000000000006"]
    assert session.agent == "ops"
    assert session.extra["sessions_json_error"].startswith("sessions.json unreadable")


def test_openclaw_discover_accepts_agents_folder_and_sessions_folder_as_root():
    assert len(found(AGENTS / "agents")) == 6
    assert set(found(AGENTS / "agents" / "main" / "sessions")) == {
        "1a1a1a1a-0000-4000-8000-000000000001",
        "2b2b2b2b-0000-4000-8000-000000000002",
        "3c3c3c3c-0000-4000-8000-000000000003",
        "4d4d4d4d-0000-4000-8000-000000000004",
        "5e5e5e5e-0000-4000-8000-000000000005",
    }


def test_openclaw_discover_reads_folder_of_loose_pi_files_and_nested_layouts():
    keys = list(found(FIXTURES))
    assert keys[:4] == ["gateway_client_envelope", "gateway_turns", "pi_v1_without_ids", "pi_v3_all_kinds"]
    assert f"myclaw/sessions/{TELEGRAM}" in keys
    assert "agents_layout/agents/ops/sessions/6f6f6f6f-0000-4000-8000-000000000006" in keys
    assert keys == [f.key for f in openclaw.discover(FIXTURES)]


def test_openclaw_discover_leaves_other_formats_out_of_loose_folders(tmp_path):
    write(tmp_path / "pi.jsonl", PI_HEADER)
    write(tmp_path / "claude.jsonl", {"type": "user", "parentUuid": None, "sessionId": "s"})
    write(tmp_path / "go.jsonl", {"type": "session", "id": "g", "version": 1, "timestamp": "t", "cwd": "/p"})
    assert list(found(tmp_path)) == ["pi"]


# detection


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (PI_HEADER, True),
        ({"type": "session", "version": 2, "id": "s", "timestamp": "t", "cwd": "/p"}, True),
        (
            {
                "type": "session",
                "id": "s",
                "timestamp": "t",
                "cwd": "/p",
                "provider": "anthropic",
                "modelId": "m",
            },
            True,
        ),
        ({"type": "session", "sessionKey": "agent:main:main", "createdAt": 1}, True),
        ({"type": "message", "id": "a", "parentId": None, "message": {"role": "user"}}, True),
        ({"type": "message", "timestamp": "t", "message": {"role": "user"}}, True),
        ({"role": "user", "content": "hi", "ts": 1}, True),
        ({"type": "session", "id": "g", "version": 1, "timestamp": "t", "cwd": "/p"}, False),  # Go agent
        ({"type": "message", "id": "a", "parent_id": "", "message": {}}, False),  # Go agent
        ({"type": "user", "parentUuid": None, "sessionId": "s", "uuid": "u"}, False),  # Claude Code
        ({"type": "summary", "summary": "t", "leafUuid": "u"}, False),  # Claude Code
        ({"type": "session", "version": 1, "created": "t", "jid": "a@example.com"}, False),  # Fluux
        ({"type": "message", "role": "user", "content": "hi", "msg_id": "m", "ts": "t"}, False),  # Fluux
        (None, False),
    ],
)
def test_openclaw_looks_like_recognises_its_files_only(tmp_path, first, expected):
    assert openclaw.looks_like(tmp_path / "x.jsonl", first) is expected


@pytest.mark.parametrize(
    "folder",
    [MYCLAW, MYCLAW.parent, AGENTS, AGENTS / "agents", AGENTS / "agents" / "main" / "sessions", FIXTURES],
    ids=lambda p: p.name,
)
def test_openclaw_looks_like_recognises_its_layouts(folder):
    assert openclaw.looks_like(folder, None)


def test_openclaw_looks_like_rejects_folders_of_other_formats(tmp_path):
    write(
        tmp_path / "go" / "20260226-143012-a3f7c901.jsonl",
        {"type": "session", "id": "g", "version": 1, "cwd": "/p"},
    )
    write(
        tmp_path / "claude" / "-home-user-p" / "s.jsonl",
        {"type": "user", "parentUuid": None, "sessionId": "s"},
    )
    write(
        tmp_path / "fluux" / "a@example.com" / "history.jsonl",
        {"type": "session", "version": 1, "jid": "a@b"},
    )
    for name in ("go", "claude", "fluux"):
        assert not openclaw.looks_like(tmp_path / name, None)


# samples


def _is_message_line(obj) -> bool:
    return isinstance(obj, dict) and (obj.get("type") == "message" or ("type" not in obj and "role" in obj))


def _sample_files() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.rglob("*") if p.is_file() and openclaw._transcript_name(p.name))


@pytest.mark.skipif(not _sample_files(), reason="OpenClaw samples not present")
@pytest.mark.parametrize("path", _sample_files(), ids=lambda p: p.name)
def test_openclaw_reader_reads_every_sample_without_reader_errors(path):
    result = read_session(path, openclaw.FORMAT)
    assert not [p for p in result.problems if p.message.startswith("reader error")]
    kinds = {e.line: e.kind for e in result.entries}
    lines = path.read_bytes().splitlines()
    message_lines = [
        n for n, raw in enumerate(lines, 1) if raw.strip() and _is_message_line(orjson.loads(raw))
    ]
    assert message_lines
    assert all(kinds.get(n) == MESSAGE for n in message_lines)
    assert openclaw.looks_like(path, orjson.loads(lines[0]))


@pytest.mark.skipif(not SAMPLES.is_dir(), reason="OpenClaw samples not present")
def test_openclaw_discover_finds_every_sample_transcript():
    assert sorted(f.path for f in openclaw.discover(SAMPLES)) == _sample_files()


def test_a_prompt_through_the_gateway_titles_with_what_the_person_wrote():
    from sessionviewer.readers import Block, Entry

    text = (
        'Conversation info (untrusted metadata):\n```json\n{"channel": "telegram"}\n```\n\n'
        'Sender (untrusted metadata):\n```json\n{"label": "openclaw-tui", "id": "gateway-client"}\n```\n\n'
        "[Sun 2026-03-08 22:03 GMT+9] Plan the release notes"
    )
    entry = Entry(id="u", parent_id=None, kind="message", role="user", blocks=[Block("text", text=text)])
    assert openclaw.prompt_text(entry) == "Plan the release notes"
    bare = Entry(
        id="v", parent_id=None, kind="message", role="user", blocks=[Block("text", text="just this")]
    )
    assert openclaw.prompt_text(bare) == "just this"


def test_the_sample_excerpt_is_titled_with_the_message_not_its_envelope(samples_dir):
    from sessionviewer.index import fold

    result = read_session(
        samples_dir / "openclaw" / "openclaw-excerpt" / "8555a0a4-excerpt.jsonl", "openclaw"
    )
    state = fold.SessionState(format="openclaw")
    fold.fold_entries(state, result.entries)
    assert state.first_prompt == "はくあ"  # what the person wrote, after the envelope and its time stamp


RESET = FIXTURES / "reset_keeps_identity" / "sessions"


def test_a_reset_transcript_keeps_its_own_identity_not_the_live_sessions():
    sessions = {f.status: f for f in openclaw.discover(RESET)}
    live, reset = sessions["active"], sessions["reset"]
    assert live.extra["sessionId"] == "0e0e0e0e-0000-4000-8000-000000000002"
    assert live.extra["model"] == "anthropic/claude-opus-4-6" and live.extra["totalTokens"] == 98765
    # The live session's id, model and token total are not the reset one's.
    assert not {"sessionId", "sessionFile", "model", "totalTokens", "updatedAt"} & reset.extra.keys()
    # What names the conversation both belong to stays.
    assert reset.extra["session_key"] == live.extra["session_key"]
    assert (reset.channel, reset.peer_id, reset.title) == ("telegram", "user_1001", "Weather chat")


# gateway turns

GATEWAY = FIXTURES / "gateway_turns.jsonl"


def gateway(entry_id):
    return by_id(read(GATEWAY), entry_id)


def test_gateway_envelope_becomes_a_sender_chip_and_leaves_what_the_person_wrote():
    entry = gateway("g0000004")
    assert entry.text == "Can you read the notes and tell me what is left for the launch?"
    assert entry.extra["sender"] == {"label": "Dana (1001)", "name": "Dana", "channel": "telegram"}
    # The JSON blocks stay one click away, as the gateway wrote them.
    assert entry.extra["envelope"].startswith("Conversation info (untrusted metadata):\n```json\n")
    assert '"username": "dana_w"' in entry.extra["envelope"]


def test_gateway_envelope_with_only_a_sender_block_and_a_time_stamp():
    entry = gateway("g0000009")
    assert entry.text == "Ok"
    assert entry.extra["sender"] == {"label": "openclaw-control-ui"}
    assert entry.extra["envelope"].endswith("[Mon 2026-04-06 09:52 GMT+0]")


CLIENT_ENVELOPE = FIXTURES / "gateway_client_envelope.jsonl"


def test_an_envelope_from_the_gateway_client_parts_into_its_json_and_its_time_stamp():
    entry = by_id(read(CLIENT_ENVELOPE), "c0000002")
    assert entry.text == "こんにちは"
    parts = openclaw.envelope_parts(entry.extra["envelope"])
    assert [(p.kind, p.block) for p in parts] == [("Sender", True), ("Sent", False)]
    assert parts[0].value["label"] == "openclaw-tui (gateway-client)"
    assert parts[1].text == "Sun 2026-03-08 22:03 GMT+9"


def test_an_envelope_block_that_is_not_json_is_kept_as_written():
    parts = openclaw.envelope_parts('Sender (untrusted metadata):\n```json\n{"label": oops}\n```\n')
    assert [(p.kind, p.value, p.text) for p in parts] == [("Sender", None, '{"label": oops}')]


def test_an_envelope_in_the_bracket_form_is_one_line_as_written():
    parts = openclaw.envelope_parts("[Telegram Dana id:424242001 Wed 2026-03-04 19:30 UTC]")
    assert [(p.kind, p.text, p.block) for p in parts] == [
        ("", "[Telegram Dana id:424242001 Wed 2026-03-04 19:30 UTC]", False)
    ]


def test_a_user_message_without_an_envelope_has_no_chip():
    assert "sender" not in gateway("g0000002").extra


def test_reply_to_current_is_left_out_of_the_text_and_kept_as_what_it_answered():
    entry = gateway("g0000008")
    assert (
        entry.text
        == "Neither file is there yet, so nothing is recorded for the launch. See [[Launch plan]] in the wiki?"
    )
    assert entry.extra["reply_to"] == "current"


def test_reply_to_an_id_and_audio_as_voice_are_left_out_too():
    entry = gateway("g000000a")
    assert entry.text == "Noted."
    assert entry.extra["reply_to"] == "812"
    assert entry.extra["audio_as_voice"] is True


def test_an_agent_failure_before_any_reply_is_an_error_notice():
    entry = gateway("g0000001")
    assert entry.is_meta  # the gateway wrote it, not a model
    assert entry.extra["level"] == "error"
    assert entry.text.endswith('No API key found for provider "anthropic".')


def test_a_tool_result_with_status_error_is_an_error():
    (result,) = gateway("g0000006").blocks
    assert result.is_error


def test_a_tool_result_starting_with_enoent_is_an_error():
    (result,) = gateway("g0000007").blocks
    assert result.is_error


def test_a_tool_result_that_only_mentions_an_error_is_not_one():
    entry = openclaw.parse_line(
        {
            "type": "message",
            "id": "r",
            "message": {
                "role": "toolResult",
                "toolCallId": "c",
                "content": [
                    {"type": "text", "text": '{"status": "ok", "error": null, "note": "ENOENT is fine"}'}
                ],
                "isError": False,
            },
        },
        1,
    )
    assert not entry.blocks[0].is_error


def test_a_heartbeat_is_not_a_title_but_the_first_real_message_is():
    from sessionviewer.index import fold

    state = fold.SessionState(format="openclaw")
    fold.fold_entries(state, read(GATEWAY))
    assert state.first_prompt == "Can you read the notes and tell me what is left for the launch?"


@pytest.mark.parametrize(
    "text",
    [
        "Read HEARTBEAT.md if it exists (workspace context). Follow it strictly.",
        "Check the inbox. If nothing needs attention, reply HEARTBEAT_OK.",
        "A new session was started via /new or /reset. Execute your Session Startup sequence now.",
        "Pre-compaction memory flush. Store durable memories now.",
        "System: [2026-04-06 09:00:00 UTC] Cron: stock report done",
        "/model",
    ],
)
def test_system_polls_and_bare_commands_title_nothing(text):
    from sessionviewer.readers import Block, Entry

    entry = Entry(id="u", parent_id=None, kind="message", role="user", blocks=[Block("text", text=text)])
    assert openclaw.prompt_text(entry) == ""


def test_the_sample_excerpt_reads_clean(samples_dir):
    entries = read_session(
        samples_dir / "openclaw" / "openclaw-excerpt" / "8555a0a4-excerpt.jsonl", "openclaw"
    ).entries
    failed = entries[1]
    assert failed.extra["level"] == "error"
    user = next(e for e in entries if e.role == USER)
    assert user.text == "はくあ" and user.extra["sender"]["label"] == "openclaw-tui (gateway-client)"
    missing = next(b for e in entries for b in e.blocks if b.type == TOOL_RESULT and "ENOENT" in b.text)
    assert missing.is_error
    reply = entries[-1]
    assert not reply.text.startswith("[[") and reply.extra["reply_to"] == "current"


def test_the_gateways_older_bracket_envelope_becomes_a_chip_too():
    entry = openclaw.parse_line(
        {
            "type": "message",
            "id": "u",
            "message": {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "[Telegram Dana id:424242001 Wed 2026-03-04 19:30 UTC] How many orders?",
                    }
                ],
            },
        },
        1,
    )
    assert entry.text == "How many orders?"
    assert entry.extra["sender"] == {"label": "Dana id:424242001", "channel": "telegram"}
    assert entry.extra["envelope"] == "[Telegram Dana id:424242001 Wed 2026-03-04 19:30 UTC]"


def test_a_bracket_that_is_no_envelope_stays_text():
    line = {
        "type": "message",
        "id": "u",
        "message": {"role": "user", "content": "[link](http://x) and [Note 2026] here"},
    }
    entry = openclaw.parse_line(line, 1)
    assert entry.text == "[link](http://x) and [Note 2026] here" and "sender" not in entry.extra
