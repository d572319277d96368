"""The Gemini CLI reader, on sessions written from Gemini CLI's own types, and a Gemini session
through the index: read again whole when it changes, threaded, searched, priced and exported.

Sources of the fixture files: tests/fixtures/gemini_cli/README.md.
"""

import hashlib
import json
import os
import shutil
import time
from decimal import Decimal
from pathlib import Path

import pytest
from django.urls import reverse

from sessionviewer import prices, readers
from sessionviewer.index import index_roots
from sessionviewer.index.fold import SessionState, fold_entries
from sessionviewer.models import Session
from sessionviewer.readers import (
    ASSISTANT,
    HEADER,
    SYSTEM,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Entry,
    gemini_cli,
    read_session,
)
from sessionviewer.roots import RootSpec
from sessionviewer.search import matching_entries
from sessionviewer.threads import build_thread

FIXTURES = Path(__file__).parent / "fixtures" / "gemini_cli"
LINES = FIXTURES / "session-2026-03-02T09-14-5f1c2a9e.jsonl"
DOCUMENT = FIXTURES / "session-2025-11-20T16-02-0c9e4d11.json"
SUBAGENT = FIXTURES / "5f1c2a9e-7b3d-4c21-9e8a-0d6f4b2c1a77" / "codebase_investigator-9d2e41.jsonl"
PROJECT = "/home/user/parser"
# Message ids of the JSON Lines fixture.
PROMPT, FIRST_REPLY, SECOND_REPLY, ERROR, INFO, REWOUND, REWOUND_REPLY, NEXT_PROMPT, LAST_REPLY = (
    f"a1b2c3d4-000{n}-4000-8000-00000000000{n}" for n in range(1, 10)
)


def entries(path: Path) -> list[Entry]:
    result = read_session(path, "gemini_cli")
    assert result.problems == []
    return result.entries


def by_id(path: Path) -> dict[str, Entry]:
    return {e.id: e for e in entries(path)}


def records_of(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write_records(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def project_tree(root: Path, *files: Path, slug: str = "parser") -> Path:
    """A ~/.gemini/tmp root with one slug project (its .project_root naming PROJECT) holding files."""
    chats = root / slug / "chats"
    chats.mkdir(parents=True)
    (root / slug / ".project_root").write_text(PROJECT + "\n")
    for path in files:
        shutil.copy(path, chats / path.name)
    return chats


# --- Each record and message type ------------------------------------------------------------


def test_gemini_reader_reads_the_metadata_as_the_header():
    header = entries(LINES)[0]
    assert (header.kind, header.id, header.line) == (HEADER, "session", 1)
    assert header.extra["session_id"] == "5f1c2a9e-7b3d-4c21-9e8a-0d6f4b2c1a77"
    assert header.extra["last_updated"] == "2026-03-02T09:15:41.000Z"  # the last $set's
    assert header.timestamp.isoformat() == "2026-03-02T09:14:05.120000+00:00"


def test_gemini_reader_reads_a_user_message_as_a_prompt():
    prompt = by_id(LINES)[PROMPT]
    assert (prompt.role, prompt.is_prompt, prompt.text) == (
        USER,
        True,
        "Why does `make test` fail on the parser module?",
    )


def test_gemini_reader_reads_a_reply_with_its_thoughts_text_model_and_tool_calls():
    reply = by_id(LINES)[FIRST_REPLY]
    assert (reply.role, reply.model, reply.extra["provider"]) == (ASSISTANT, "gemini-2.5-pro", "google")
    assert [b.type for b in reply.blocks] == [THINKING, "text", TOOL_CALL]
    assert (
        reply.blocks[0].text
        == "**Reproducing the failure**\n\nRun the test target first and read the traceback."
    )
    call = reply.blocks[2]
    assert (call.name, call.call_id, call.arguments["command"]) == (
        "run_shell_command",
        "run_shell_command-1772442855880-0",
        "make test",
    )


def test_gemini_reader_reads_tokens_with_the_cached_part_apart_and_thoughts_and_tool_use_counted():
    reply = by_id(LINES)[LAST_REPLY]
    # input 14010 counts the 12288 cached; the 12 tool-use prompt tokens are input, the 88 thoughts output.
    assert reply.usage == {"input": 14010 - 12288 + 12, "output": 60 + 88, "cache_read": 12288}
    assert reply.extra["tokens"] == {
        "input": 14010,
        "output": 60,
        "cached": 12288,
        "thoughts": 88,
        "tool": 12,
    }


def test_gemini_reader_gives_each_tool_calls_result_an_entry_paired_by_call_id():
    found = by_id(LINES)
    result = found[f"{FIRST_REPLY}/run_shell_command-1772442855880-0"]
    assert result.role == TOOL
    block = result.blocks[0]
    assert (block.type, block.call_id, block.is_error) == (
        TOOL_RESULT,
        "run_shell_command-1772442855880-0",
        False,
    )
    assert "KeyError: 'children'" in block.text
    assert result.extra["details"]["status"] == "success"


def test_gemini_reader_marks_a_failed_tool_call_as_an_error():
    result = by_id(LINES)[f"{SECOND_REPLY}/read_file-1772442861002-1"]
    assert result.blocks[0].is_error
    assert result.blocks[0].text == "File not found: /home/user/parser/src/parser.py"
    assert result.extra["error_message"] == result.blocks[0].text


def test_gemini_reader_reads_error_and_info_messages_as_system_lines():
    found = by_id(LINES)
    error, info = found[ERROR], found[INFO]
    assert (error.role, error.is_meta, error.extra["level"]) == (SYSTEM, False, "error")
    assert error.extra["error_message"].startswith("[API Error: 429")
    assert (info.role, info.is_meta, info.extra["level"]) == (SYSTEM, True, "info")


def test_gemini_reader_takes_the_summary_set_last_for_the_title():
    title = entries(LINES)[1]  # metadata, kept beside the header
    assert (title.kind, title.summary) == ("title", "Fix KeyError in parser tests")
    state = SessionState(format="gemini_cli")
    fold_entries(state, entries(LINES))
    assert state.summary_title == "Fix KeyError in parser tests"
    assert state.first_prompt == "Why does `make test` fail on the parser module?"


def test_gemini_reader_numbers_the_entries_by_their_place_in_the_session():
    read = entries(LINES)
    assert [e.line for e in read] == list(range(1, len(read) + 1))
    assert read_session(LINES, "gemini_cli").end_offset == LINES.stat().st_size


# --- Records that change what came before ----------------------------------------------------


def test_a_rewind_drops_its_prompt_and_what_followed_it():
    found = by_id(LINES)
    assert REWOUND not in found and REWOUND_REPLY not in found
    assert NEXT_PROMPT in found and LAST_REPLY in found
    assert entries(LINES)[0].extra["rewound_messages"] == 2


def test_a_rewind_to_an_unknown_id_drops_every_message(tmp_path):
    records = records_of(LINES)
    path = tmp_path / "session-x.jsonl"
    write_records(path, [*records[:5], {"$rewindTo": "not-a-message"}, records[12]])
    assert [e.id for e in entries(path)] == ["session", NEXT_PROMPT]


def test_a_message_written_again_keeps_its_first_place_and_its_last_content():
    read = entries(LINES)
    ids = [e.id for e in read]
    assert ids.count(FIRST_REPLY) == 1
    assert ids.index(PROMPT) < ids.index(FIRST_REPLY) < ids.index(SECOND_REPLY)
    reply = read[ids.index(FIRST_REPLY)]
    first_record = next(n for n, r in enumerate(records_of(LINES)) if r.get("id") == FIRST_REPLY)
    assert reply.offset == sum(len(line) + 1 for line in LINES.read_bytes().splitlines()[:first_record])
    # The last record's tool call has its result; the first had no tool calls at all.
    assert read[ids.index(FIRST_REPLY) + 1].id == f"{FIRST_REPLY}/run_shell_command-1772442855880-0"


def test_a_set_with_messages_replaces_them_all(tmp_path):
    records = records_of(LINES)
    path = tmp_path / "session-x.jsonl"
    write_records(path, [*records[:3], {"$set": {"messages": [records[12]], "lastUpdated": "x"}}])
    read = entries(path)
    assert [e.id for e in read] == ["session", NEXT_PROMPT]
    assert read[0].extra["last_updated"] == "x"


def test_a_tool_call_without_a_result_yet_has_no_result_entry(tmp_path):
    path = tmp_path / "session-x.jsonl"
    write_records(path, records_of(LINES)[:5])  # the reply re-appended with its call still executing
    read = entries(path)
    assert [e.id for e in read] == ["session", PROMPT, FIRST_REPLY]
    assert read[2].blocks[-1].type == TOOL_CALL


# --- The JSON document of earlier versions ---------------------------------------------------


def test_gemini_reader_reads_a_json_document_session():
    read = entries(DOCUMENT)
    assert [(e.kind, e.role) for e in read] == [
        (HEADER, ""),
        ("message", USER),
        ("message", ASSISTANT),
        ("message", TOOL),
    ]
    assert read[2].usage == {"input": 5210, "output": 94}
    assert read[3].blocks[0].text.startswith('Found 2 matches for pattern "TODO"')


def test_a_json_document_on_one_line_is_read_too(tmp_path):
    path = tmp_path / "session-x.json"
    path.write_text(json.dumps(json.loads(DOCUMENT.read_text())))
    assert [e.id for e in entries(path)] == [e.id for e in entries(DOCUMENT)]


def test_a_json_document_cut_off_mid_write_is_a_problem_not_an_error(tmp_path):
    path = tmp_path / "session-x.json"
    path.write_bytes(DOCUMENT.read_bytes()[:700])
    result = read_session(path, "gemini_cli")
    assert [p.message.split(" (")[0] for p in result.problems] == ["not a whole JSON document"]
    assert [e.kind for e in result.entries] == [HEADER]


# --- Bad input ---------------------------------------------------------------------------------


ODD = [None, 7, "text", [], {}, [None, 3, "x", {"text": 5}], {"nested": {"deeper": []}}]


@pytest.mark.parametrize(
    "field", ["content", "toolCalls", "thoughts", "tokens", "type", "timestamp", "displayContent"]
)
@pytest.mark.parametrize("value", ODD, ids=repr)
def test_gemini_reader_takes_odd_field_values_without_raising(tmp_path, field, value):
    records = records_of(LINES)
    reply = dict(records[5], **{field: value})
    path = tmp_path / "session-x.jsonl"
    write_records(path, [records[0], records[1], reply])
    read = entries(path)
    assert [e.id for e in read][:3] == ["session", PROMPT, FIRST_REPLY]


def test_gemini_reader_records_a_line_that_is_not_json_and_goes_on(tmp_path):
    path = tmp_path / "session-x.jsonl"
    lines = LINES.read_bytes().splitlines(keepends=True)
    path.write_bytes(b"".join([*lines[:2], b"{not json\n", *lines[2:]]))
    result = read_session(path, "gemini_cli")
    assert [(p.line, p.message.split(":")[0]) for p in result.problems] == [(3, "not valid JSON")]
    assert [e.id for e in result.entries] == [e.id for e in entries(LINES)]


def test_gemini_reader_leaves_a_fresh_cut_off_last_line_and_records_a_settled_one(tmp_path):
    path = tmp_path / "session-x.jsonl"
    path.write_bytes(LINES.read_bytes() + b'{"id": "half')
    assert read_session(path, "gemini_cli").problems == []
    old = time.time() - readers.SETTLE_SECONDS - 5
    os.utime(path, (old, old))
    (problem,) = read_session(path, "gemini_cli").problems
    assert problem.message.startswith("cut off")


def test_a_typed_slash_command_is_the_harnesss_not_a_prompt(tmp_path):
    records = records_of(LINES)
    command = {**records[1], "id": "c", "content": [{"text": "/stats model"}]}
    path = tmp_path / "session-x.jsonl"
    write_records(path, [records[0], command, records[1]])
    read = entries(path)
    assert gemini_cli.harness_line(read[1]) == {"kind": "command", "line": "/stats model"}
    assert gemini_cli.harness_line(read[2]) is None
    state = SessionState(format="gemini_cli")
    fold_entries(state, read)
    assert state.first_prompt == "Why does `make test` fail on the parser module?"


# --- Discovery ---------------------------------------------------------------------------------


def test_gemini_discover_finds_sessions_in_each_projects_chats_and_subagents_beside_their_parent(tmp_path):
    chats = project_tree(tmp_path, LINES, DOCUMENT)
    (chats / SUBAGENT.parent.name).mkdir()
    shutil.copy(SUBAGENT, chats / SUBAGENT.parent.name / SUBAGENT.name)
    hashed = tmp_path / hashlib.sha256(b"/elsewhere").hexdigest() / "chats"
    hashed.mkdir(parents=True)
    shutil.copy(DOCUMENT, hashed / "session-2025-11-01T10-00-11111111.json")
    (chats / "notes.txt").write_text("not a session")
    found = {f.key: f for f in gemini_cli.discover(tmp_path)}
    assert sorted(found) == sorted(
        [
            "parser/chats/session-2026-03-02T09-14-5f1c2a9e",
            "parser/chats/session-2025-11-20T16-02-0c9e4d11",
            "parser/chats/5f1c2a9e-7b3d-4c21-9e8a-0d6f4b2c1a77/codebase_investigator-9d2e41",
            f"{hashed.parent.name}/chats/session-2025-11-01T10-00-11111111",
        ]
    )
    subagent = found["parser/chats/5f1c2a9e-7b3d-4c21-9e8a-0d6f4b2c1a77/codebase_investigator-9d2e41"]
    assert subagent.parent_path == chats / LINES.name
    assert found["parser/chats/session-2026-03-02T09-14-5f1c2a9e"].project == "parser"


def test_a_json_session_carried_over_into_its_jsonl_is_listed_once(tmp_path):
    chats = project_tree(tmp_path, DOCUMENT)
    shutil.copy(LINES, chats / (DOCUMENT.name + "l"))  # resumed: Gemini CLI writes session-….jsonl beside it
    (found,) = gemini_cli.discover(tmp_path)
    assert found.path == chats / (DOCUMENT.name + "l")


def test_a_gemini_tmp_folder_and_its_session_files_are_detected_as_gemini(tmp_path):
    chats = project_tree(tmp_path, LINES, DOCUMENT)
    assert readers.detect_format(tmp_path) == "gemini_cli"
    # A lone .jsonl file: its first line has a sessionId, which Claude Code's rule, asked first, claims.
    assert gemini_cli.looks_like(chats / LINES.name, readers.first_object(chats / LINES.name))
    assert readers.detect_format(chats / DOCUMENT.name) == "gemini_cli"


@pytest.mark.parametrize("folder", ["claude_code", "codex", "go_agent", "fluux_xmpp"])
def test_other_formats_fixture_files_are_not_taken_for_gemini(folder):
    for path in (FIXTURES.parent / folder).rglob("*.jsonl"):
        assert not gemini_cli.looks_like(path, readers.first_object(path)), path


def test_the_project_root_marker_names_the_sessions_project(tmp_path):
    chats = project_tree(tmp_path, LINES)
    header = read_session(chats / LINES.name, "gemini_cli").entries[0]
    assert header.extra["cwd"] == PROJECT
    assert "cwd" not in entries(LINES)[0].extra  # no marker: a hash folder's path is unknown


# --- Through the index -------------------------------------------------------------------------


def indexed_entries(session: Session) -> list[tuple[str, int]]:
    return list(session.entries.order_by("line").values_list("entry_id", "line"))


def reader_entries(path: Path) -> list[tuple[str, int]]:
    return [(e.id, e.line) for e in entries(path)]


@pytest.mark.django_db
def test_a_rewritten_json_document_is_read_again_whole_and_only_then(tmp_path):
    chats = project_tree(tmp_path, DOCUMENT)
    path = chats / DOCUMENT.name
    document = json.loads(path.read_text())
    document["messages"][0]["content"] = [{"text": "List the TODO comments " + "in this repo " * 400}]
    path.write_text(json.dumps(document, indent=2))  # past the head a rewrite is told by
    spec = RootSpec(tmp_path, "gemini_cli")
    assert index_roots([spec]).opened == 1
    assert index_roots([spec]).opened == 0  # unchanged: not read
    # Rewritten in place as Gemini CLI did: the same file, longer, its first 4 KiB the same.
    inode, head = path.stat().st_ino, path.read_bytes()[:4096]
    reply = {
        **document["messages"][1],
        "id": "later-reply",
        "content": "One more thing: src/cli.py has no tests.",
    }
    document["messages"].append(reply)
    path.write_text(json.dumps(document, indent=2))
    assert (path.stat().st_ino, path.read_bytes()[:4096]) == (inode, head)
    summary = index_roots([spec])
    assert summary.opened == 1
    session = Session.objects.get()
    assert indexed_entries(session) == reader_entries(path)
    assert [e for e, _ in indexed_entries(session)].count("later-reply") == 1
    assert session.input_tokens == 2 * 5210  # both replies once each, nothing counted twice


@pytest.mark.django_db
def test_a_jsonl_session_that_grows_is_read_again_with_its_messages_replaced_not_repeated(tmp_path):
    chats = project_tree(tmp_path)
    path = chats / LINES.name
    records = records_of(LINES)
    write_records(path, records[:5])  # the first reply with its call still running
    spec = RootSpec(tmp_path, "gemini_cli")
    index_roots([spec])
    first = Session.objects.get()
    assert first.input_tokens == 12840 - 8192
    with path.open("a") as handle:  # the reply again with its result, then the rest
        handle.writelines(json.dumps(r) + "\n" for r in records[5:])
    assert index_roots([spec]).opened == 1
    session = Session.objects.get()
    assert indexed_entries(session) == reader_entries(LINES)
    assert session.input_tokens == sum(e.usage.get("input", 0) for e in entries(LINES))
    assert (session.cwd, session.project) == (PROJECT, "~/parser")  # from the slug folder's .project_root


@pytest.mark.django_db
def test_a_gemini_session_is_threaded_in_order_to_its_last_reply():
    thread = build_thread(entries(LINES))
    assert thread.leaf_id == LAST_REPLY
    shown = [item.entry.id for item in thread.items if item.entry.is_conversational]
    assert shown[:2] == [PROMPT, FIRST_REPLY]
    assert REWOUND not in shown
    assert thread.problems == []


@pytest.mark.django_db
def test_a_gemini_session_is_searched_priced_and_titled(tmp_path):
    project_tree(tmp_path, LINES, DOCUMENT)
    index_roots([RootSpec(tmp_path, "gemini_cli")])
    session = Session.objects.get(path__endswith=LINES.name)
    assert session.display_title == "Fix KeyError in parser tests"
    assert session.models_used == ["gemini-2.5-pro", "gemini-2.5-flash"]
    assert session.cost is not None and session.cost > 0 and session.unpriced_tokens == 0
    lines = [line for model in session.cost_to_dict()["models"] for line in model["lines"]]
    assert {line["provider"] for line in lines} == {"google"}
    assert all(
        line["source"].endswith(f"google {model}")
        for model in session.models_used
        for line in lines
        if model in line["source"]
    )
    expected = Decimal(0)
    for entry in entries(LINES):
        if entry.usage:
            rates = prices.rates_for(entry.model, "google", entry.timestamp.date().isoformat())
            expected += sum(
                rates.per_mtok[kind] * entry.usage.get(kind, 0) for kind in ("input", "output", "cache_read")
            )
    assert session.cost == pytest.approx(float(expected / 1_000_000))
    hits = set(matching_entries("children").values_list("session__path", "entry_id"))
    assert (session.path, LAST_REPLY) in hits
    assert not any(
        entry_id == REWOUND
        for _, entry_id in matching_entries("tests folder").values_list("session__path", "entry_id")
    )


@pytest.mark.django_db
def test_a_gemini_session_shows_and_exports_as_html_and_markdown(tmp_path, client, viewer, settings):
    project_tree(tmp_path, LINES)
    settings.SESSIONVIEWER_ROOTS = [f"gemini_cli={tmp_path}"]
    index_roots([RootSpec(tmp_path, "gemini_cli")])
    session = Session.objects.get()
    page = client.get(reverse("session-detail", args=[session.id]))
    assert page.status_code == 200
    body = page.content.decode()
    assert "Gemini CLI" in body and "marks/gemini_cli" in body
    assert "run_shell_command" in body and "Resource has been exhausted" in body
    html = streamed(client, "session-export-html", session)
    assert "Why does <code>make test</code> fail on the parser module?" in html
    assert "run_shell_command" in html and "File not found: /home/user/parser/src/parser.py" in html
    assert "Delete the whole tests folder" not in html  # rewound
    markdown = streamed(client, "session-export-md", session)
    assert "Why does `make test` fail on the parser module?" in markdown
    assert "The parser lives in src/parser/core.py" in markdown
    assert "Delete the whole tests folder" not in markdown


def streamed(client, name: str, session: Session) -> str:
    response = client.get(reverse(name, args=[session.id]))
    assert response.status_code == 200
    return b"".join(response.streaming_content).decode()
