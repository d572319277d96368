import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sessionviewer.readers import (
    ASSISTANT,
    COMPACTION,
    IMAGE,
    MESSAGE,
    RAW,
    SUMMARY,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Entry,
    claude_code,
    decode_line,
    read_session,
)

FORMAT = claude_code.FORMAT
FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
from tests.conftest import SAMPLES  # noqa: E402

CLAUDE_SAMPLES = SAMPLES / "claude-code"

MAIN_ID = "11111111-1111-4111-8111-111111111111"
OLD_ID = "22222222-2222-4222-8222-222222222222"
OTHER_ID = "33333333-3333-4333-8333-333333333333"


def read(name):
    return read_session(FIXTURES / name, FORMAT)


def entries(name):
    return read(name).entries


def by_id(name):
    return {e.id: e for e in entries(name)}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def session_line(session_id: str, **fields) -> str:
    obj = {
        "parentUuid": None,
        "sessionId": session_id,
        "type": "user",
        "message": {"role": "user", "content": "hi"},
        "uuid": f"u-{session_id[:4]}",
        "timestamp": "2026-02-10T21:00:00.000Z",
        **fields,
    }
    return json.dumps(obj) + "\n"


# message content


def test_claude_reader_reads_string_content_as_one_text_block():
    entry = by_id("string_and_list_content.jsonl")["u-1"]
    assert entry.kind == MESSAGE
    assert entry.role == USER
    assert [(b.type, b.text) for b in entry.blocks] == [(TEXT, "why does the server not start?")]


def test_claude_reader_reads_list_content_as_text_blocks():
    entry = by_id("string_and_list_content.jsonl")["u-2"]
    assert [(b.type, b.text) for b in entry.blocks] == [(TEXT, "first part"), (TEXT, "second part")]


def test_claude_reader_keeps_uuid_parent_and_timestamp():
    first, second = entries("string_and_list_content.jsonl")[:2]
    assert (first.id, first.parent_id) == ("u-1", None)
    assert (second.id, second.parent_id) == ("u-2", "u-1")
    assert first.timestamp == datetime(2026, 2, 10, 21, 11, 56, 846000, tzinfo=UTC)


def test_claude_reader_keeps_line_fields_in_extra_as_written():
    extra = by_id("string_and_list_content.jsonl")["a-1"].extra
    assert extra["cwd"] == "/home/user/project"
    assert extra["gitBranch"] == "main"
    assert extra["version"] == "2.1.39"
    assert extra["sessionId"] == MAIN_ID
    assert extra["requestId"] == "req_01"


def test_claude_reader_reads_model_usage_and_message_id_of_assistant_lines():
    entry = by_id("string_and_list_content.jsonl")["a-1"]
    assert entry.role == ASSISTANT
    assert entry.model == "claude-opus-4-6"
    assert entry.message_id == "msg_01A"
    assert entry.usage == {"input": 3, "output": 13, "cache_read": 11515, "cache_write": 13835}


def test_claude_reader_reads_thinking_block():
    entry = by_id("thinking_block.jsonl")["a-1"]
    assert [(b.type, b.text) for b in entry.blocks] == [(THINKING, "Simple arithmetic; no tools needed.")]


def test_claude_reader_turns_tool_use_into_tool_call_block():
    (block,) = by_id("tool_call_and_result.jsonl")["a-1"].blocks
    assert block.type == TOOL_CALL
    assert block.name == "Bash"
    assert block.call_id == "toolu_ls"
    assert block.arguments == {"command": "ls -la", "description": "List files"}


def test_claude_reader_gives_tool_role_to_user_line_of_only_tool_results():
    entry = by_id("tool_call_and_result.jsonl")["u-2"]
    assert entry.role == TOOL
    assert not entry.is_prompt
    (block,) = entry.blocks
    assert (block.type, block.call_id, block.text, block.is_error) == (
        TOOL_RESULT,
        "toolu_ls",
        "total 0\nREADME.md",
        False,
    )


def test_claude_reader_marks_tool_result_error():
    (block,) = by_id("tool_call_and_result.jsonl")["u-3"].blocks
    assert block.is_error
    assert block.text.startswith("Error: Exit code 1")


def test_claude_reader_flattens_tool_result_list_and_keeps_its_image():
    result, image = by_id("tool_call_and_result.jsonl")["u-4"].blocks
    assert (result.type, result.call_id, result.text) == (
        TOOL_RESULT,
        "toolu_shot",
        "Screenshot of the login page",
    )
    assert (image.type, image.call_id, image.mime_type) == (IMAGE, "toolu_shot", "image/png")
    assert image.data.startswith("iVBORw0KGgo")


def test_claude_reader_keeps_scalar_parts_of_tool_use_result():
    found = by_id("tool_call_and_result.jsonl")
    assert found["u-2"].extra["tool_use_result"] == {
        "stdout": "total 0\nREADME.md",
        "interrupted": False,
        "isImage": False,
    }
    assert found["u-3"].extra["tool_use_result"].startswith("Error: Exit code 1")
    assert found["u-4"].extra["tool_use_result"] == {"type": "image"}


def test_claude_reader_keeps_message_id_shared_by_streamed_reply_lines():
    replies = [e for e in entries("streamed_reply_shared_message_id.jsonl") if e.role == ASSISTANT]
    assert [e.message_id for e in replies] == ["msg_01S"] * 3
    assert [e.parent_id for e in replies] == ["u-1", "a-1", "a-2"]
    assert [b.type for e in replies for b in e.blocks] == [THINKING, TEXT, TOOL_CALL]


def test_claude_reader_keeps_text_of_message_written_as_string():
    entry = by_id("odd_shapes.jsonl")["o-1"]
    assert (entry.kind, entry.role, entry.text) == (MESSAGE, USER, "error")


def test_claude_reader_never_raises_on_odd_but_valid_json():
    result = read("odd_shapes.jsonl")
    assert result.problems == []
    assert [e.line for e in result.entries] == list(range(1, 17))
    odd = result.entries[3]
    assert (odd.id, odd.parent_id, odd.is_sidechain, odd.message_id) == ("line:4", None, False, "")
    assert odd.usage == {"cache_read": 7}


# sidechains and subagents


def test_claude_reader_marks_sidechain_lines_and_keeps_agent_id():
    found = entries("sidechain_agent.jsonl")
    assert all(e.is_sidechain for e in found)
    assert {e.extra["agentId"] for e in found} == {"af1ff21"}


def test_claude_reader_keeps_subagent_named_by_task_result():
    extra = by_id("task_subagent_result.jsonl")["u-2"].extra
    assert extra["subagent_id"] == "a1b2c3d"
    assert extra["subagent_call_id"] == "toolu_task1"
    assert extra["tool_use_result"]["totalToolUseCount"] == 9
    assert "prompt" not in extra["tool_use_result"]


@pytest.mark.parametrize(
    ("fixture", "call_id"),
    [("task_subagent_result.jsonl", "toolu_task1"), ("agent_subagent_result.jsonl", "toolu_agent1")],
)
def test_subagent_links_map_agent_id_to_task_or_agent_tool_call(fixture, call_id):
    # Claude Code renamed its Task tool to Agent: both start a subagent.
    assert claude_code.subagent_links(entries(fixture)) == {"a1b2c3d": call_id}


def test_subagent_links_keep_first_call_when_agent_is_resumed():
    started = Entry(
        id="a", parent_id=None, kind=MESSAGE, extra={"subagent_id": "x1", "subagent_call_id": "toolu_1"}
    )
    resumed = Entry(
        id="b", parent_id=None, kind=MESSAGE, extra={"subagent_id": "x1", "subagent_call_id": "toolu_2"}
    )
    assert claude_code.subagent_links([started, resumed]) == {"x1": "toolu_1"}


# summaries and compaction


def test_claude_reader_reads_summary_line_with_leaf():
    entry = entries("summary_line.jsonl")[0]
    assert (entry.kind, entry.id, entry.parent_id) == (SUMMARY, "line:1", None)
    assert entry.summary == "Phoenix server startup fix"
    assert entry.leaf_id == "a-1"


def test_claude_reader_reads_compact_boundary_as_compaction():
    entry = by_id("compact_boundary_and_summary.jsonl")["c-1"]
    assert (entry.kind, entry.subtype, entry.role) == (COMPACTION, "compact_boundary", SYSTEM)
    assert entry.parent_id is None
    assert entry.logical_parent_id == "a-1"
    assert entry.summary == ""
    assert (entry.extra["trigger"], entry.extra["preTokens"]) == ("manual", 18069)


def test_claude_reader_keeps_compact_summary_line_as_meta_message():
    entry = by_id("compact_boundary_and_summary.jsonl")["u-2"]
    assert (entry.kind, entry.role, entry.parent_id) == (MESSAGE, USER, "c-1")
    assert entry.is_meta
    assert entry.extra["is_compact_summary"] is True
    assert entry.text.startswith("This session is being continued")


# local commands


def test_claude_reader_marks_local_command_caveat_and_output_meta_but_not_the_command():
    found = by_id("local_command_wrappers.jsonl")
    assert [found[i].is_meta for i in ("u-1", "u-2", "u-3", "u-4")] == [True, False, True, True]


def test_claude_reader_keeps_command_name_and_args():
    found = by_id("local_command_wrappers.jsonl")
    assert found["u-2"].extra["command"] == "/mcp"
    assert "command_args" not in found["u-2"].extra
    assert (found["u-5"].extra["command"], found["u-5"].extra["command_args"]) == ("/review", "src/ only")


# bookkeeping lines


def test_claude_reader_keeps_progress_line_in_the_chain_with_hook_text():
    entry = by_id("bookkeeping_lines.jsonl")["p-1"]
    assert (entry.kind, entry.subtype) == ("progress", "hook_progress")
    assert entry.text == "SessionStart:startup: bd prime"
    assert by_id("bookkeeping_lines.jsonl")["u-1"].parent_id == "p-1"


def test_claude_reader_keeps_file_history_snapshot_with_tracked_files():
    entry = entries("bookkeeping_lines.jsonl")[0]
    assert (entry.kind, entry.id, entry.parent_id) == ("file-history-snapshot", "line:1", None)
    assert entry.text == "plan.md"
    assert entry.timestamp == datetime(2026, 2, 10, 21, 11, 56, 906000, tzinfo=UTC)


def test_claude_reader_keeps_queue_operations():
    queued = [e for e in entries("bookkeeping_lines.jsonl") if e.kind == "queue-operation"]
    assert [(e.subtype, e.text) for e in queued] == [("enqueue", "/mcp"), ("remove", "")]


@pytest.mark.parametrize(
    ("uuid", "subtype", "text"),
    [
        ("s-1", "local_command", "<command-name>/model</command-name>"),
        ("s-2", "stop_hook_summary", ""),
        ("s-3", "turn_duration", ""),
        ("s-4", "api_error", '{"status":529,"message":"Overloaded"}'),
        ("s-5", "informational", "Context left until auto-compact: 8%"),
    ],
)
def test_claude_reader_keeps_system_subtypes(uuid, subtype, text):
    entry = by_id("bookkeeping_lines.jsonl")[uuid]
    assert (entry.kind, entry.role, entry.subtype, entry.text) == ("system", SYSTEM, subtype, text)


def test_claude_reader_keeps_stop_hook_commands_and_turn_duration():
    found = by_id("bookkeeping_lines.jsonl")
    assert found["s-2"].extra["hook_commands"] == ["tmux-waiting.sh mark", "stop-hook.sh"]
    assert found["s-3"].extra["durationMs"] == 38799


def test_claude_reader_puts_titles_in_summary():
    titles = {e.kind: e.summary for e in entries("bookkeeping_lines.jsonl") if e.kind.endswith("title")}
    assert titles == {"custom-title": "Fix the server start", "ai-title": "Phoenix startup debugging"}


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        ("last-prompt", "run the tests"),
        ("agent-name", "reviewer"),
        ("pr-link", "https://github.com/example/project/pull/42"),
        ("attachment", "Remember to run the linter"),
    ],
)
def test_claude_reader_keeps_other_line_types_under_their_own_kind(kind, text):
    (entry,) = [e for e in entries("bookkeeping_lines.jsonl") if e.kind == kind]
    assert entry.text == text


def test_claude_reader_keeps_unknown_line_type_as_raw():
    entry = entries("unknown_type.jsonl")[0]
    assert (entry.kind, entry.subtype, entry.id, entry.parent_id) == (RAW, "brand-new-record", "x-1", "u-1")
    assert entry.raw["payload"] == {"answer": 42}


def test_claude_reader_keeps_line_without_type_as_raw():
    entry = entries("unknown_type.jsonl")[1]
    assert (entry.kind, entry.subtype, entry.id) == (RAW, "", "line:2")
    assert entry.raw == {"silly": "this"}


# bad input


def test_claude_reader_records_problem_for_json_string_line():
    result = read("json_string_line.jsonl")
    assert [(p.line, p.message) for p in result.problems] == [(2, "not a JSON object but str")]
    assert [e.line for e in result.entries] == [1, 3]


def test_claude_reader_leaves_truncated_last_line_for_next_read(tmp_path):
    path = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "truncated_last_line.jsonl", path)  # a fresh file: still being written
    result = read_session(path, FORMAT)
    assert [e.id for e in result.entries] == ["u-1", "a-1"]
    assert result.problems == []
    assert result.end_line == 2


def test_claude_reader_records_a_settled_cut_off_last_line_as_a_problem(tmp_path):
    path = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "truncated_last_line.jsonl", path)
    long_ago = path.stat().st_mtime - 3600
    os.utime(path, (long_ago, long_ago))
    result = read_session(path, FORMAT)
    assert [e.id for e in result.entries] == ["u-1", "a-1"]
    (problem,) = result.problems
    assert problem.line == 3
    assert problem.message.startswith("cut off")
    assert result.end_line == 2


def test_claude_reader_reads_a_whole_last_object_without_newline(tmp_path):
    path = tmp_path / "session.jsonl"
    lines = (FIXTURES / "summary_line.jsonl").read_bytes().rstrip(b"\n")
    path.write_bytes(lines)
    result = read_session(path, FORMAT)
    assert result.end_offset == len(lines)
    assert result.entries[-1].line == lines.count(b"\n") + 1


def test_claude_reader_reads_completed_last_line_from_start_offset(tmp_path):
    path = tmp_path / "session.jsonl"
    shutil.copy(FIXTURES / "truncated_last_line.jsonl", path)
    first = read_session(path, FORMAT)
    with open(path, "ab") as handle:
        handle.write(b' jumps in."}]},"uuid":"a-2","timestamp":"2026-02-10T21:00:02.000Z"}\n')
    second = read_session(path, FORMAT, first.end_offset, first.end_line)
    (entry,) = second.entries
    assert (entry.id, entry.line, entry.offset) == ("a-2", 3, first.end_offset)
    assert entry.text == "Old pond, a frog jumps in."
    assert second.problems == []


def test_claude_reader_records_problem_for_bad_utf8_line_and_reads_on():
    result = read("bad_utf8_line.jsonl")
    (problem,) = result.problems
    assert problem.line == 2
    assert problem.message.startswith("not valid UTF-8")
    assert [e.id for e in result.entries] == ["u-1", "u-3"]


def test_claude_reader_leaves_missing_timestamp_empty():
    found = entries("missing_timestamp.jsonl")
    assert [e.timestamp for e in found] == [None, None, None]
    assert [e.kind for e in found] == [MESSAGE] * 3


# discover


@pytest.fixture
def claude_home(tmp_path):
    """~/.claude with a main session, a new-style subagent, an old flat agent file and an index."""
    home = tmp_path / ".claude"
    project = home / "projects" / "-home-user-project"
    write(project / f"{MAIN_ID}.jsonl", session_line(MAIN_ID))
    write(
        project / MAIN_ID / "subagents" / "agent-a1b2c3d.jsonl",
        session_line(MAIN_ID, isSidechain=True, agentId="a1b2c3d"),
    )
    write(
        project / MAIN_ID / "subagents" / "agent-a1b2c3d.meta.json",
        json.dumps({"agentType": "Plan", "description": "Draft beads", "toolUseId": "toolu_task1"}),
    )
    write(project / f"{OLD_ID}.jsonl", session_line(OLD_ID))
    write(project / "agent-9f8e7d6.jsonl", session_line(OLD_ID, isSidechain=True, agentId="9f8e7d6"))
    index = {
        "version": 1,
        "originalPath": "/home/user/project",
        "entries": [
            {"sessionId": MAIN_ID, "summary": "Fix the server start", "firstPrompt": "hi", "messageCount": 4}
        ],
    }
    write(project / "sessions-index.json", json.dumps(index))
    write(project / "memory" / "MEMORY.md", "# notes\n")
    write(home / "projects" / "-home-user-other" / f"{OTHER_ID}.jsonl", session_line(OTHER_ID))
    write(home / "history.jsonl", '{"display": "hi", "timestamp": 1760000000000}\n')
    return home


def discovered(root):
    return {f.key: f for f in claude_code.discover(root)}


def test_discover_finds_main_subagent_and_flat_agent_files_in_sorted_order(claude_home):
    keys = [f.key for f in claude_code.discover(claude_home)]
    assert keys == [
        f"projects/-home-user-other/{OTHER_ID}.jsonl",
        f"projects/-home-user-project/{MAIN_ID}.jsonl",
        f"projects/-home-user-project/{MAIN_ID}/subagents/agent-a1b2c3d.jsonl",
        f"projects/-home-user-project/{OLD_ID}.jsonl",
        "projects/-home-user-project/agent-9f8e7d6.jsonl",
    ]


def test_discover_names_project_by_folder(claude_home):
    assert {f.project for f in claude_code.discover(claude_home)} == {
        "-home-user-project",
        "-home-user-other",
    }
    assert {f.format for f in claude_code.discover(claude_home)} == {FORMAT}


def test_discover_links_new_style_subagent_to_main_session(claude_home):
    found = discovered(claude_home)[f"projects/-home-user-project/{MAIN_ID}/subagents/agent-a1b2c3d.jsonl"]
    assert found.parent_path == claude_home / "projects" / "-home-user-project" / f"{MAIN_ID}.jsonl"
    assert found.agent_id == "a1b2c3d"
    assert found.project == "-home-user-project"


def test_discover_keeps_subagent_meta_json_fields(claude_home):
    found = discovered(claude_home)[f"projects/-home-user-project/{MAIN_ID}/subagents/agent-a1b2c3d.jsonl"]
    assert found.extra["agentType"] == "Plan"
    assert found.extra["description"] == "Draft beads"
    assert found.parent_tool_id == "toolu_task1"


def test_discover_links_flat_agent_file_by_its_session_id(claude_home):
    found = discovered(claude_home)["projects/-home-user-project/agent-9f8e7d6.jsonl"]
    assert found.parent_path == claude_home / "projects" / "-home-user-project" / f"{OLD_ID}.jsonl"
    assert found.agent_id == "9f8e7d6"


def test_discover_leaves_flat_agent_unlinked_when_main_file_is_missing(tmp_path):
    write(
        tmp_path / "agent-9f8e7d6.jsonl",
        session_line("44444444-4444-4444-8444-444444444444", isSidechain=True),
    )
    (found,) = claude_code.discover(tmp_path)
    assert found.parent_path is None
    assert found.agent_id == "9f8e7d6"


def test_discover_takes_title_and_index_fields_from_sessions_index(claude_home):
    found = discovered(claude_home)
    main = found[f"projects/-home-user-project/{MAIN_ID}.jsonl"]
    assert main.title == "Fix the server start"
    assert main.extra["sessions_index"]["messageCount"] == 4
    assert found[f"projects/-home-user-project/{OLD_ID}.jsonl"].title == ""


def test_discover_skips_non_session_files(claude_home):
    keys = discovered(claude_home)
    assert not [k for k in keys if k.endswith((".json", ".md")) or k == "history.jsonl"]


@pytest.mark.parametrize(("where", "count"), [("", 5), ("projects", 5), ("projects/-home-user-project", 4)])
def test_discover_accepts_claude_folder_projects_folder_or_project_folder(claude_home, where, count):
    root = claude_home / where
    found = list(claude_code.discover(root))
    assert len(found) == count
    assert all(f.key == f.path.relative_to(root).as_posix() for f in found)
    subagent = next(f for f in found if f.agent_id == "a1b2c3d")
    assert subagent.parent_path.name == f"{MAIN_ID}.jsonl"


def test_discover_reads_loose_folder_of_jsonl_files(tmp_path):
    for name in ("representative_messages.jsonl", "session_b.jsonl"):
        write(tmp_path / "handmade" / name, session_line(MAIN_ID))
    found = list(claude_code.discover(tmp_path / "handmade"))
    assert [(f.key, f.project, f.parent_path) for f in found] == [
        ("representative_messages.jsonl", "handmade", None),
        ("session_b.jsonl", "handmade", None),
    ]


def test_read_sessions_index_maps_session_ids_to_entries(claude_home):
    index = claude_code.read_sessions_index(claude_home / "projects" / "-home-user-project")
    assert list(index) == [MAIN_ID]
    assert index[MAIN_ID]["firstPrompt"] == "hi"


@pytest.mark.parametrize(
    "text", [None, "", "not json", "[]", '{"entries": "none"}', '{"entries": [1, {"no": "id"}]}']
)
def test_read_sessions_index_returns_empty_for_missing_or_malformed_file(tmp_path, text):
    if text is not None:
        write(tmp_path / "sessions-index.json", text)
    assert claude_code.read_sessions_index(tmp_path) == {}


# looks_like


@pytest.mark.parametrize(
    "first",
    [
        {
            "parentUuid": None,
            "type": "user",
            "sessionId": "s",
            "uuid": "u",
            "message": {"role": "user", "content": "hi"},
        },
        {"type": "summary", "summary": "A title", "leafUuid": "u-9"},
        {"type": "file-history-snapshot", "messageId": "u-1", "snapshot": {}, "isSnapshotUpdate": False},
        {
            "type": "queue-operation",
            "operation": "enqueue",
            "timestamp": "2026-02-10T22:57:58Z",
            "content": "/mcp",
        },
        {"type": "progress", "data": {"type": "hook_progress"}, "toolUseID": "t"},
        {"type": "assistant", "message": {"role": "assistant", "content": []}},
    ],
)
def test_looks_like_accepts_claude_code_first_lines(first):
    assert claude_code.looks_like(Path("session.jsonl"), first)


@pytest.mark.parametrize(
    "first",
    [
        None,
        {
            "type": "session",
            "id": "a3f7c901",
            "version": 1,
            "timestamp": "2026-02-26T14:30:12Z",
            "cwd": "/home/user",
        },
        {"type": "message", "id": "e2", "parent_id": "e1", "message": {"role": "user"}},
        {"type": "session", "sessionKey": "agent:main:channel:telegram", "createdAt": 1708000000000},
        {"type": "message", "id": "m1", "parentId": "m0", "message": {"role": "user", "content": "hi"}},
        {"role": "user", "content": "hi", "ts": 1708000000000},
        {"type": "session", "version": 1, "created": "2025-02-08T19:00:00Z", "jid": "alice@example.com"},
        {"type": "message", "msg_id": "x1", "from": "alice@example.com", "body": "hi"},
        {"type": "summary"},
    ],
)
def test_looks_like_rejects_other_formats_first_lines(first):
    assert not claude_code.looks_like(Path("session.jsonl"), first)


def test_looks_like_accepts_folder_with_projects(claude_home):
    assert claude_code.looks_like(claude_home, None)
    assert claude_code.looks_like(claude_home / "projects", None)
    assert claude_code.looks_like(claude_home / "projects" / "-home-user-project", None)


def test_looks_like_accepts_empty_projects_folder(tmp_path):
    (tmp_path / "projects").mkdir()
    assert claude_code.looks_like(tmp_path, None)


def test_looks_like_rejects_folder_of_go_agent_files(tmp_path):
    write(
        tmp_path / "sessions" / "20260226-143012-a3f7c901.jsonl",
        '{"type":"session","id":"a3f7c901","version":1}\n',
    )
    assert not claude_code.looks_like(tmp_path, None)
    assert not claude_code.looks_like(tmp_path / "sessions", None)


@pytest.mark.parametrize(
    "folder", ["go-agent", "go-agent/sessions", "openclaw", "openclaw/myclaw/sessions", "fluux/memory"]
)
def test_looks_like_rejects_sample_folders_of_other_formats(folder):
    if not (SAMPLES / folder).is_dir():
        pytest.skip(f"{SAMPLES / folder} is not present")
    assert not claude_code.looks_like(SAMPLES / folder, None)


# the real samples


def claude_samples() -> list[Path]:
    if not CLAUDE_SAMPLES.is_dir():
        pytest.skip(f"{CLAUDE_SAMPLES} is not present")
    return sorted(CLAUDE_SAMPLES.rglob("*.jsonl"))


def test_claude_reader_reads_every_sample_without_reader_errors():
    for path in claude_samples():
        result = read_session(path, FORMAT)
        assert [p for p in result.problems if p.message.startswith("reader error")] == [], path


def test_claude_reader_turns_every_sample_user_and_assistant_line_into_a_message():
    checked = 0
    for path in claude_samples():
        by_line = {e.line: e for e in read_session(path, FORMAT).entries}
        for number, raw in enumerate(path.read_bytes().splitlines(), start=1):
            decoded = decode_line(path, number, 0, raw)
            if isinstance(decoded, dict) and decoded.get("type") in ("user", "assistant"):
                assert by_line[number].kind == MESSAGE, (path, number)
                checked += 1
    assert checked > 200


def test_subagent_links_find_the_task_call_in_the_spotter_sample():
    path = CLAUDE_SAMPLES / "projects" / "-home-USER-projects-spotter" / "subagent.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not present")
    links = claude_code.subagent_links(read_session(path, FORMAT).entries)
    assert links == {"afb92ff": "toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"}


def test_discover_links_claudeless_subagents_to_their_main_session():
    root = CLAUDE_SAMPLES / "claudeless" / "compact-command"
    if not root.is_dir():
        pytest.skip(f"{root} is not present")
    found = list(claude_code.discover(root))
    main, *subagents = found
    assert main.parent_path is None
    assert [f.agent_id for f in subagents] == ["aprompt_suggestion-029c25", "aprompt_suggestion-e6d768"]
    assert {f.parent_path for f in subagents} == {main.path}


# line types


def _line_types() -> list[tuple[str, dict]]:
    lines = (FIXTURES / "line_types.jsonl").read_text().splitlines()
    return [(json.loads(line)["type"], json.loads(line)) for line in lines]


def test_the_line_types_fixture_has_one_line_of_every_type_the_reader_knows():
    assert sorted(kind for kind, _ in _line_types()) == sorted(claude_code.LINE_TYPES)


@pytest.mark.parametrize(("kind", "obj"), _line_types(), ids=[kind for kind, _ in _line_types()])
def test_claude_reader_reads_each_known_line_type_as_a_known_entry(kind, obj):
    entry = claude_code.parse_line(obj, 1)
    assert entry.kind != RAW
    assert entry.raw is None


def test_claude_reader_reads_the_line_types_fixture_without_a_problem():
    result = read("line_types.jsonl")
    assert result.problems == []
    assert len(result.entries) == len(claude_code.LINE_TYPES)
