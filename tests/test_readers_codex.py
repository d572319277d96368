"""The Codex CLI reader on real rollouts and on one written from Codex's own types.

Sources of the fixture files: tests/fixtures/codex/README.md.
"""

import os
from pathlib import Path

import orjson
import pytest

from sessionviewer import prices, readers
from sessionviewer.index.fold import SessionState, fold_entries
from sessionviewer.readers import (
    ASSISTANT,
    COMPACTION,
    HEADER,
    IMAGE,
    SYSTEM,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Entry,
    Problem,
    codex,
    read_session,
)
from sessionviewer.threads import build_thread

FIXTURES = Path(__file__).parent / "fixtures" / "codex"
REAL = FIXTURES / "real_exec_rollout_0.135.jsonl"
LEGACY = FIXTURES / "legacy_shapes_2025_09.jsonl"
TOOLS = FIXTURES / "tools_and_compaction.jsonl"


def entries(path: Path) -> list[Entry]:
    result = read_session(path, "codex")
    assert result.problems == []
    return result.entries


def at(path: Path, line: int) -> Entry:
    return next(e for e in entries(path) if e.line == line)


def line_of(kind: str, payload) -> dict:
    return {"timestamp": "2025-11-03T10:00:00.000Z", "type": kind, "payload": payload}


# --- Each line type ----------------------------------------------------------------------------------


def test_codex_reader_reads_session_meta_as_the_header_with_cwd_and_session_id():
    header = at(REAL, 1)
    assert header.kind == HEADER
    assert header.extra["session_id"] == "019e9625-802f-7e91-840a-cfe88d14117a"
    assert header.extra["cwd"] == "/tmp/agent-history-real-agent/codex/workspace"
    assert (header.extra["cli_version"], header.extra["originator"]) == ("0.135.0", "codex_exec")


def test_codex_reader_takes_the_model_from_turn_context():
    context = at(REAL, 5)
    assert (context.kind, context.model) == ("turn_context", "gpt-5.5")


def test_codex_reader_marks_developer_and_environment_messages_as_harness_lines():
    developer, environment, prompt = at(REAL, 3), at(REAL, 4), at(REAL, 6)
    assert (developer.role, developer.is_meta) == (SYSTEM, True)
    assert (environment.role, environment.is_meta) == (USER, True)
    assert (prompt.role, prompt.is_meta, prompt.text) == (USER, False, "[REDACTED_PROMPT]")


def test_codex_reader_reads_assistant_messages_and_their_phase():
    reply = at(REAL, 9)
    assert (reply.role, reply.text, reply.extra["phase"]) == (
        ASSISTANT,
        "[REDACTED_ASSISTANT_TEXT]",
        "final_answer",
    )


def test_codex_reader_keeps_the_ui_events_that_repeat_response_items_out_of_the_conversation():
    kinds = {e.subtype: e.kind for e in entries(REAL) if e.kind == "event"}
    assert kinds == dict.fromkeys(
        ("task_started", "user_message", "agent_message", "token_count", "task_complete"), "event"
    )
    assert [e.line for e in entries(REAL) if e.is_conversational] == [4, 6, 9]


def test_codex_reader_reads_reasoning_summaries_as_thinking():
    reasoning = at(TOOLS, 7)
    assert [(b.type, b.text) for b in reasoning.blocks] == [
        (THINKING, "**Looking at greet()**\n\nI'll read the module before changing it.")
    ]


def test_codex_reader_reads_raw_reasoning_content_after_its_summary():
    obj = line_of(
        "response_item",
        {
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "Plan"}],
            "content": [{"type": "reasoning_text", "text": "Step by step"}],
        },
    )
    assert codex.parse_line(obj, 1).blocks[0].text == "Plan\n\nStep by step"


def test_codex_reader_pairs_function_calls_with_their_outputs_by_call_id():
    call, output = at(TOOLS, 8), at(TOOLS, 9)
    assert (call.role, call.blocks[0].type, call.blocks[0].name) == (ASSISTANT, TOOL_CALL, "shell")
    assert orjson.loads(call.blocks[0].arguments)["command"] == ["bash", "-lc", "sed -n '1,20p' src/app.py"]
    assert (output.role, output.blocks[0].type) == (TOOL, TOOL_RESULT)
    assert call.blocks[0].call_id == output.blocks[0].call_id == "call_read_1"
    assert output.extra["details"] == {"exit_code": 0, "wall_time": "0.1 seconds"}
    assert output.blocks[0].text == "def greet(name):\n    return 'Hello ' + name\n"  # below Codex's header


def test_codex_reader_reads_a_custom_tool_calls_text_input_and_output():
    call, output = at(TOOLS, 12), at(TOOLS, 13)
    assert call.blocks[0].name == "apply_patch"
    assert call.blocks[0].arguments.startswith("*** Begin Patch\n*** Update File: src/app.py")
    assert output.blocks[0].text == "Success. Updated the following files:\nM src/app.py\n"
    assert output.extra["details"] == {"exit_code": 0, "duration_seconds": 0.0}


def test_codex_reader_reads_exec_commands_exit_code_from_its_output():
    output = at(TOOLS, 16)
    assert output.extra["details"] == {"exit_code": 1, "wall_time": "1.2 seconds"}
    assert output.blocks[0].text.startswith("F.\nFAILED tests/test_app.py::test_greet")


def test_codex_reader_keeps_an_output_that_only_looks_like_a_header_whole():
    obj = line_of(
        "response_item",
        {"type": "function_call_output", "call_id": "c", "output": "Exit code: 0\nnot a header\nOutput:\nx"},
    )
    assert codex.parse_line(obj, 1).blocks[0].text == "Exit code: 0\nnot a header\nOutput:\nx"


def test_codex_reader_names_a_local_shell_call_and_keeps_its_action():
    call = at(TOOLS, 17).blocks[0]
    assert (call.name, call.call_id, call.arguments["command"]) == (
        "local_shell",
        "call_local_1",
        ["git", "diff", "--stat"],
    )


def test_codex_reader_marks_an_unsuccessful_output_as_an_error():
    result = at(TOOLS, 18).blocks[0]
    assert (result.text, result.is_error) == ("error: sandbox denied git", True)


def test_codex_reader_reads_an_output_given_as_content_items_with_images():
    obj = line_of(
        "response_item",
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": [
                {"type": "input_text", "text": "a screenshot"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        },
    )
    blocks = codex.parse_line(obj, 1).blocks
    assert [(b.type, b.text, b.mime_type, b.data) for b in blocks] == [
        (TOOL_RESULT, "a screenshot", "", ""),
        (IMAGE, "", "image/png", "iVBORw0KGgo="),
    ]


def test_codex_reader_reads_compacted_as_a_compaction_with_its_summary():
    compaction = at(TOOLS, 24)
    assert compaction.kind == COMPACTION
    assert compaction.summary.startswith("The user asked to make greet() use an f-string.")
    assert compaction.extra == {"kept_items": 1}


def test_codex_reader_keeps_an_error_event_in_sight():
    error = at(TOOLS, 30)
    assert (error.kind, error.extra["error_message"]) == ("event", "stream disconnected before completion")


def test_codex_reader_keeps_response_items_it_does_not_know_raw():
    snapshot = at(TOOLS, 26)
    assert (snapshot.kind, snapshot.subtype, snapshot.role) == ("event", "ghost_snapshot", "")
    assert snapshot.raw["ghost_commit"]["id"] == "9d2e1f0"


# --- Token counts ---------------------------------------------------------------------------------------


def test_codex_reader_reads_the_last_requests_tokens_with_the_cached_part_apart():
    assert at(REAL, 10).usage == {"input": 22539 - 20864, "cache_read": 20864, "output": 10}


def test_codex_token_counts_add_up_to_the_sessions_running_total_without_double_counting():
    # Line 11 repeats line 10 (only the rate limits moved) and line 19 has no info.
    state = SessionState(format="codex")
    fold_entries(state, entries(TOOLS))
    assert (state.input_tokens, state.cache_read_tokens, state.output_tokens) == (16400 - 12000, 12000, 420)


def test_codex_token_counts_are_not_double_counted_across_two_reads():
    lines = entries(TOOLS)
    state = SessionState(format="codex")
    fold_entries(state, lines[:10])  # ends on the first of the two equal counts
    fold_entries(state, lines[10:])
    assert (state.input_tokens, state.output_tokens) == (16400 - 12000, 420)


def test_codex_token_counts_are_priced_by_the_model_of_their_turn_context():
    state = SessionState(format="codex")
    lines = entries(TOOLS)
    fold_entries(state, lines[:12])
    fold_entries(state, lines[12:])  # an append: the turn's model is remembered
    assert {prices.split_key(key)[0] for key in state.usage_lines} == {"gpt-5-codex"}
    assert prices.price_lines(state.usage_lines)["unpriced_tokens"] == 0


def test_codex_session_folds_into_its_project_model_and_first_prompt():
    state = SessionState(format="codex")
    fold_entries(state, entries(TOOLS))
    assert (state.project, state.cwd) == ("~/projects/greeter", "/home/user/projects/greeter")
    assert (state.models_used, state.git_branch) == (["gpt-5-codex"], "main")
    assert state.session_uuid == "0199a4f2-6c1e-7c33-9b1a-2d5e8f0c4a11"
    assert state.first_prompt == "Make greet() use an f-string and run the tests."


# --- Rollouts from before the envelope -------------------------------------------------------------------


def test_codex_reader_reads_a_bare_session_meta_of_an_early_rollout():
    header = at(LEGACY, 1)
    assert header.kind == HEADER
    assert (header.extra["session_id"], header.extra["git_branch"]) == (
        "cf4def41-21e0-4b91-adb4-5397c1492084",
        "main",
    )


def test_codex_reader_takes_an_early_rollouts_cwd_from_its_environment_context():
    state = SessionState(format="codex")
    fold_entries(state, entries(LEGACY))
    assert state.project == "~/projects/webshop"  # the home folded: one project on every machine


def test_codex_reader_reads_state_lines_as_hidden_events():
    assert [(e.kind, e.subtype) for e in entries(LEGACY) if e.line in (2, 4)] == [("event", "state")] * 2


def test_codex_reader_unwraps_an_early_shell_outputs_json_and_exit_code():
    output = at(LEGACY, 11)
    assert output.blocks[0].text.startswith("total 252\n")
    assert output.extra["details"] == {"exit_code": 0, "duration_seconds": 0.0}


def test_codex_reader_reads_bare_response_items():
    kinds = [(e.role, e.subtype) for e in entries(LEGACY) if e.line in (5, 8, 9, 10)]
    assert kinds == [(USER, ""), (ASSISTANT, "reasoning"), (ASSISTANT, ""), (ASSISTANT, "function_call")]


# --- Threads ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [REAL, LEGACY, TOOLS], ids=lambda p: p.name)
def test_a_codex_rollout_is_one_thread_in_file_order(path):
    thread = build_thread(entries(path))
    assert [item.entry.line for item in thread.items] == [e.line for e in entries(path)]
    assert (len(thread.leaves), thread.problems) == (1, [])


def test_a_codex_compaction_folds_what_came_before_it():
    thread = build_thread(entries(TOOLS))
    assert [item.entry.line for item in thread.items if item.compacted] == list(range(1, 24))
    assert thread.compactions[0].summary.startswith("The user asked to make greet()")


# --- Odd values and bad lines ----------------------------------------------------------------------------

ODD = [None, True, 3, -1.5, "text", [], {}, [None, 1, "x", {}], {"type": None}, {"text": 5}]
PAYLOAD_FIELDS = (
    "type", "role", "content", "summary", "name", "arguments", "call_id", "output", "input", "action",
    "id", "info", "message", "cwd", "model", "git", "replacement_history", "last_token_usage",
)  # fmt: skip
ITEM_TYPES = (
    "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
    "custom_tool_call_output", "local_shell_call", "web_search_call", "ghost_snapshot", "token_count",
)  # fmt: skip


@pytest.mark.parametrize("kind", sorted(codex.ENVELOPE))
@pytest.mark.parametrize("value", ODD, ids=repr)
def test_codex_reader_takes_any_payload_without_raising(kind, value):
    entry = codex.parse_line(line_of(kind, value), 1)
    assert isinstance(entry, Entry)


@pytest.mark.parametrize("item_type", ITEM_TYPES)
def test_codex_reader_takes_odd_field_values_without_raising(item_type):
    kind = "event_msg" if item_type == "token_count" else "response_item"
    for field in PAYLOAD_FIELDS:
        for value in ODD:
            payload = {"type": item_type, field: value} if field != "type" else {"type": value}
            entry = codex.parse_line(line_of(kind, payload), 1)
            entry.to_dict()  # and it can be stored and shown
            assert isinstance(entry.text, str)


def test_codex_reader_takes_odd_token_counts_without_counting_them():
    info = {"last_token_usage": {"input_tokens": "9", "cached_input_tokens": None, "output_tokens": True}}
    entry = codex.parse_line(line_of("event_msg", {"type": "token_count", "info": info}), 1)
    assert entry.usage == {}


def test_codex_reader_records_a_cut_off_last_line_as_a_problem(tmp_path):
    path = tmp_path / "rollout-2025-11-03T10-00-00-cut.jsonl"
    whole = TOOLS.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join(whole[:5]) + whole[5][:40])
    os.utime(path, (1, 1))  # long settled: no write is still under way
    result = read_session(path, "codex")
    assert [e.line for e in result.entries] == [1, 2, 3, 4, 5]
    assert [(p.line, p.message.startswith("cut off")) for p in result.problems] == [(6, True)]


def test_codex_reader_records_a_line_that_is_not_json_and_goes_on(tmp_path):
    path = tmp_path / "rollout-bad.jsonl"
    path.write_bytes(
        b'{"type":"session_meta","payload":{"id":"s"}}\nnot json\n'
        + REAL.read_bytes().splitlines()[5]
        + b"\n"
    )
    result = read_session(path, "codex")
    assert [p.line for p in result.problems] == [2] and isinstance(result.problems[0], Problem)
    assert [e.line for e in result.entries] == [1, 3]


# --- Discovery and detection -----------------------------------------------------------------------------


def sessions_tree(root: Path) -> list[Path]:
    day = root / "2025" / "11" / "03"
    day.mkdir(parents=True)
    paths = [
        day / "rollout-2025-11-03T10-00-00-0199a4f2-6c1e-7c33-9b1a-2d5e8f0c4a11.jsonl",
        root
        / "2026"
        / "06"
        / "05"
        / "rollout-2026-06-05T04-58-20-019e9625-802f-7e91-840a-cfe88d14117a.jsonl",
    ]
    paths[1].parent.mkdir(parents=True)
    paths[0].write_bytes(TOOLS.read_bytes())
    paths[1].write_bytes(REAL.read_bytes())
    (day / "notes.jsonl").write_text("{}\n")
    (root / ".hidden" / "2025").mkdir(parents=True)
    (root / ".hidden" / "2025" / "rollout-x.jsonl").write_text("{}\n")
    return paths


def test_codex_discover_lists_rollouts_in_their_date_folders(tmp_path):
    paths = sessions_tree(tmp_path)
    found = list(codex.discover(tmp_path))
    assert [(f.path, f.format) for f in found] == [(p, "codex") for p in paths]
    assert found[0].key == "2025/11/03/rollout-2025-11-03T10-00-00-0199a4f2-6c1e-7c33-9b1a-2d5e8f0c4a11"


def test_codex_discover_marks_archived_sessions(tmp_path):
    root = tmp_path / "archived_sessions"
    root.mkdir()
    (root / "rollout-a.jsonl").write_bytes(REAL.read_bytes())
    assert [f.status for f in codex.discover(root)] == ["archived"]


def test_a_codex_sessions_folder_and_its_rollouts_are_detected_as_codex(tmp_path):
    paths = sessions_tree(tmp_path)
    assert readers.detect_format(tmp_path) == "codex"
    assert [readers.detect_format(p) for p in (*paths, LEGACY, TOOLS)] == ["codex"] * 4


def test_other_formats_fixture_files_are_not_taken_for_codex():
    others = [p for p in (FIXTURES.parent).glob("*/*.jsonl") if p.parent.name != "codex"]
    assert others and not [p for p in others if codex.looks_like(p, readers.first_object(p))]
