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
    go_agent,
    read_session,
)
from tests.conftest import SAMPLES as SHARED_SAMPLES

FIXTURES = Path(__file__).parent / "fixtures" / "go_agent"
SAMPLES = SHARED_SAMPLES / "go-agent"


def read(name: str):
    result = read_session(FIXTURES / name, go_agent.FORMAT)
    assert result.problems == []
    return result.entries


def by_id(entries, entry_id):
    return next(e for e in entries if e.id == entry_id)


def write(path: Path, *objects) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(o) + b"\n" for o in objects))
    return path


GO_HEADER = {
    "type": "session",
    "id": "a3f7c901-0000",
    "version": 1,
    "timestamp": "2026-02-26T14:30:12Z",
    "cwd": "/p",
}


def test_go_reader_reads_header_as_session_entry_with_cwd_and_session_id():
    header = read("all_block_types.jsonl")[0]
    assert header.kind == HEADER
    assert header.extra == {
        "session_id": "11111111-2222-4333-8444-555555555555",
        "cwd": "/home/user/project",
        "version": 1,
    }
    assert header.timestamp.isoformat() == "2026-02-26T14:30:12+00:00"


def test_go_reader_reads_text_and_image_blocks_of_user_message():
    entry = by_id(read("all_block_types.jsonl"), "aaaa0001")
    assert (entry.kind, entry.role) == (MESSAGE, USER)
    assert [b.type for b in entry.blocks] == [TEXT, IMAGE]
    assert entry.blocks[1].mime_type == "image/png"
    assert entry.blocks[1].data == "iVBORw0KGgo="


def test_go_reader_reads_thinking_text_and_tool_call_blocks_of_assistant_message():
    entry = by_id(read("all_block_types.jsonl"), "aaaa0002")
    assert entry.role == ASSISTANT
    assert [b.type for b in entry.blocks] == [THINKING, TEXT, TOOL_CALL]
    assert entry.blocks[0].text == "Look at the folder first."
    call = entry.blocks[2]
    assert (call.name, call.call_id, call.arguments) == ("bash", "call_1", {"command": "ls"})


def test_go_reader_maps_usage_model_provider_and_stop_reason():
    entry = by_id(read("all_block_types.jsonl"), "aaaa0002")
    assert entry.model == "claude-sonnet-4-5"
    assert entry.usage == {"input": 100, "output": 50, "cache_read": 80, "cache_write": 20}
    assert entry.extra == {"provider": "anthropic", "stop_reason": "tool_use"}


def test_go_reader_turns_tool_result_message_into_one_tool_result_block():
    entry = by_id(read("all_block_types.jsonl"), "aaaa0003")
    assert entry.role == TOOL
    assert len(entry.blocks) == 1
    result = entry.blocks[0]
    assert result.type == TOOL_RESULT
    assert (result.call_id, result.name, result.is_error) == ("call_1", "bash", True)
    assert result.text == "ls: cannot open directory\nexit status 2"
    assert not entry.is_prompt


def test_go_reader_treats_empty_parent_id_as_no_parent():
    entries = read("all_block_types.jsonl")
    assert by_id(entries, "aaaa0001").parent_id is None
    assert by_id(entries, "aaaa0002").parent_id == "aaaa0001"


def test_go_reader_marks_compaction_first_kept_entry():
    entry = by_id(read("compaction.jsonl"), "bbbb0003")
    assert entry.kind == COMPACTION
    assert entry.first_kept_id == "bbbb0002"
    assert entry.summary.startswith("## Goal")
    assert entry.extra == {"tokens_before": 45000}
    assert entry.parent_id == "bbbb0002"


def test_go_reader_reads_branch_entry_with_parent_session_path_and_fork_entry():
    entries = read("fork_with_branch.jsonl")
    branch = entries[1]
    assert (branch.kind, branch.id, branch.parent_id) == (BRANCH, "cccc0001", None)
    assert branch.summary == "User was refactoring the auth module."
    assert branch.extra == {
        "parent_session_path": "/home/user/.config/agent/sessions/20260226-143012-22222222.jsonl",
        "fork_entry_id": "bbbb0002",
    }


def test_go_reader_keeps_copied_parent_messages_with_their_ids_in_a_fork():
    entries = read("fork_with_branch.jsonl")
    assert [(e.id, e.parent_id) for e in entries[2:]] == [
        ("bbbb0001", None),
        ("bbbb0002", "bbbb0001"),
        ("cccc0002", "bbbb0002"),
    ]


def test_go_reader_keeps_unknown_type_raw():
    entry = by_id(read("odd_but_valid.jsonl"), "dddd0001")
    assert (entry.kind, entry.subtype) == (RAW, "label")
    assert entry.raw["label"] == "checkpoint"


def test_go_reader_reads_string_content_and_falls_back_to_message_timestamp():
    entry = by_id(read("odd_but_valid.jsonl"), "dddd0002")
    assert [b.text for b in entry.blocks] == ["plain string content"]
    assert entry.timestamp.isoformat() == "2026-02-26T15:30:01+00:00"


def test_go_reader_copes_with_wrong_types_without_raising():
    entries = read("odd_but_valid.jsonl")
    odd = by_id(entries, "dddd0003")
    assert odd.parent_id == "7"
    assert odd.timestamp is None
    assert odd.model == ""
    assert odd.usage == {"cache_read": 3}
    assert [b.type for b in odd.blocks] == [TEXT, TOOL_CALL]
    assert odd.blocks[0].text.startswith("[audio]")
    assert odd.blocks[1].arguments == "ls"
    no_message = by_id(entries, "dddd0004")
    assert (no_message.kind, no_message.role) == (MESSAGE, TOOL)
    assert by_id(entries, "dddd0005").first_kept_id == ""


def test_go_reader_tool_result_images_follow_the_result_block():
    entry = go_agent.parse_line(
        {
            "type": "message",
            "id": "e1",
            "parent_id": "e0",
            "message": {
                "role": "tool_result",
                "tool_call_id": "c1",
                "content": [
                    {"type": "text", "text": "shot"},
                    {"type": "image", "data": "AA", "mime_type": "image/jpeg"},
                ],
            },
        },
        3,
    )
    assert [b.type for b in entry.blocks] == [TOOL_RESULT, IMAGE]
    assert entry.blocks[0].text == "shot"


def test_go_reader_gives_entries_without_id_a_line_id():
    entry = go_agent.parse_line({"type": "message", "message": {"role": "user", "content": "hi"}}, 9)
    assert entry.id == "line:9"


def test_go_discover_lists_jsonl_files_in_root_and_one_level_down(tmp_path):
    write(tmp_path / "20260226-143012-a3f7c901.jsonl", GO_HEADER)
    write(tmp_path / "sessions" / "20260227-090000-b2c3d4e5.jsonl", GO_HEADER)
    write(tmp_path / "sessions" / "deeper" / "20260228-090000-c3d4e5f6.jsonl", GO_HEADER)
    (tmp_path / "notes.txt").write_text("not a session")
    found = list(go_agent.discover(tmp_path))
    assert [f.key for f in found] == ["20260226-143012-a3f7c901", "20260227-090000-b2c3d4e5"]
    assert {f.format for f in found} == {"go_agent"}


def test_go_discover_falls_back_to_relative_path_when_names_clash(tmp_path):
    write(tmp_path / "a" / "20260226-143012-a3f7c901.jsonl", GO_HEADER)
    write(tmp_path / "b" / "20260226-143012-a3f7c901.jsonl", GO_HEADER)
    assert [f.key for f in go_agent.discover(tmp_path)] == [
        "20260226-143012-a3f7c901",
        "b/20260226-143012-a3f7c901",
    ]


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        (GO_HEADER, True),
        ({"type": "session", "version": 3, "id": "x", "timestamp": "t", "cwd": "/p"}, False),  # pi v3
        (
            {"type": "session", "id": "x", "timestamp": "t", "cwd": "/p", "provider": "a", "modelId": "m"},
            False,
        ),  # pi v1
        ({"type": "session", "sessionKey": "agent:main:main", "createdAt": 1}, False),  # myclaw
        ({"type": "session", "version": 1, "created": "t", "jid": "a@example.com"}, False),  # Fluux
        ({"type": "user", "parentUuid": None, "sessionId": "s", "uuid": "u"}, False),  # Claude Code
        ({"type": "message", "id": "m", "parentId": None, "message": {}}, False),  # pi v3 entry
        (None, False),
    ],
)
def test_go_looks_like_recognises_its_header_only(tmp_path, first, expected):
    assert go_agent.looks_like(tmp_path / "session.jsonl", first) is expected


def test_go_looks_like_accepts_headerless_file_by_name_and_parent_id(tmp_path):
    first = {"type": "message", "id": "d4e5f6a7", "parent_id": "", "message": {}}
    assert go_agent.looks_like(tmp_path / "20260226-143012-a3f7c901.jsonl", first)
    assert not go_agent.looks_like(tmp_path / "history.jsonl", first)


def test_go_looks_like_recognises_sessions_folder_by_file_names(tmp_path):
    write(tmp_path / "sessions" / "20260226-143012-a3f7c901.jsonl", GO_HEADER)
    assert go_agent.looks_like(tmp_path / "sessions", None)
    assert go_agent.looks_like(tmp_path, None)


def test_go_looks_like_rejects_other_folders(tmp_path):
    write(tmp_path / "fluux" / "sessions" / "20260226-143012.jsonl", {"type": "session", "jid": "a@b"})
    write(tmp_path / "openclaw" / "20260226-143012-a3f7c901.jsonl", GO_HEADER)
    (tmp_path / "openclaw" / "sessions.json").write_text("{}")
    assert not go_agent.looks_like(tmp_path / "fluux", None)
    assert not go_agent.looks_like(tmp_path / "openclaw", None)


def _message_lines(path: Path) -> list[int]:
    lines = []
    for number, raw in enumerate(path.read_bytes().splitlines(), 1):
        obj = orjson.loads(raw) if raw.strip() else None
        if isinstance(obj, dict) and obj.get("type") == "message":
            lines.append(number)
    return lines


def _sample_files() -> list[Path]:
    return sorted(SAMPLES.rglob("*.jsonl")) if SAMPLES.is_dir() else []


@pytest.mark.skipif(not _sample_files(), reason="Go agent samples not present")
@pytest.mark.parametrize("path", _sample_files(), ids=lambda p: p.name)
def test_go_reader_reads_every_sample_without_reader_errors(path):
    result = read_session(path, go_agent.FORMAT)
    assert not [p for p in result.problems if p.message.startswith("reader error")]
    kinds = {e.line: e.kind for e in result.entries}
    assert all(kinds.get(line) == MESSAGE for line in _message_lines(path))
    assert go_agent.looks_like(path, orjson.loads(path.read_bytes().splitlines()[0]))


def test_go_looks_like_recognises_folder_of_renamed_sessions_by_header():
    assert go_agent.looks_like(FIXTURES, None)
