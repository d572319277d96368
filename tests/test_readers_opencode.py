"""opencode sessions: the JSON storage of 1.1 and the database of 1.2, read alike; a session in
both listed once; read on from where the last pass stopped; priced, threaded, searched, exported."""

from __future__ import annotations

import os
import re
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import orjson
import pytest
from django.urls import reverse

from sessionviewer import prices, readers, threads
from sessionviewer.filters import matching_session_ids
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.readers import opencode, opencode_store
from sessionviewer.roots import RootSpec
from tests.opencode_files import Database, fixture, write_message_files, write_storage

T_LATER = 1767229200000  # ms, an hour after the fixtures' first session


def in_storage(root: Path, *names: str) -> Path:
    for name in names:
        write_storage(root, fixture(name))
    return root


def in_database(root: Path, *names: str) -> Database:
    database = Database(root)
    for name in names:
        database.add_session(fixture(name))
    return database


def found(root: Path) -> list[readers.SessionFile]:
    return [item for item in opencode.discover(root) if isinstance(item, readers.SessionFile)]


def entries(root: Path, key: str) -> list[readers.Entry]:
    session = next(s for s in found(root) if s.key == key)
    result = readers.read_session(session.path, "opencode")
    assert result.problems == []
    return result.entries


def reply(message_id: str, session_id: str, text: str, created: int) -> dict:
    """A finished reply of one text part, as opencode writes it."""
    return {
        "info": {
            "id": message_id,
            "sessionID": session_id,
            "role": "assistant",
            "parentID": "msg_04both01",
            "modelID": "claude-haiku-4-5",
            "providerID": "anthropic",
            "mode": "plan",
            "agent": "plan",
            "path": {"cwd": "/home/alice/shop", "root": "/home/alice/shop"},
            "cost": 0,
            "tokens": {"input": 10, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}},
            "time": {"created": created, "completed": created + 1000},
        },
        "parts": [
            {
                "id": f"prt_{message_id[4:]}a",
                "sessionID": session_id,
                "messageID": message_id,
                "type": "text",
                "text": text,
            }
        ],
    }


TOOLS = "a1b2c3d4shop/ses_01tools"
BOTH = "a1b2c3d4shop/ses_04both"


# Every part type


def test_text_reasoning_and_file_parts_are_blocks_of_their_messages(tmp_path):
    read = entries(in_storage(tmp_path, "tool_calls.json"), TOOLS)
    assert read[0].kind == readers.HEADER and read[0].extra["cwd"] == "/home/alice/shop"
    prompt, image, attached, synthetic = read[1:5]
    assert (prompt.role, prompt.text) == ("user", "The cart total test fails; fix it. Screenshot attached.")
    assert (image.blocks[0].type, image.blocks[0].mime_type) == (readers.IMAGE, "image/png")
    assert image.blocks[0].data.startswith("iVBORw0KGgo")
    assert (attached.blocks[0].type, attached.blocks[0].name) == (readers.ATTACHMENT, "shop/cart.py")
    assert synthetic.is_meta and opencode.harness_line(synthetic)["kind"] == "meta"
    thinking = next(e for e in read if e.blocks and e.blocks[0].type == readers.THINKING)
    assert thinking.text == "The total skips the discount; run the test first."
    assert thinking.model == "claude-sonnet-4-5" and thinking.extra["provider"] == "anthropic"


def test_a_tool_part_is_its_call_then_its_output_or_its_error(tmp_path):
    read = entries(in_storage(tmp_path, "tool_calls.json"), TOOLS)
    calls = {e.blocks[0].call_id: e for e in read if e.blocks and e.blocks[0].type == readers.TOOL_CALL}
    results = {e.blocks[0].call_id: e for e in read if e.role == readers.TOOL}
    assert calls["toolu_bash01"].blocks[0].arguments["command"] == "pytest tests/test_cart.py -q"
    assert read.index(results["toolu_bash01"]) == read.index(calls["toolu_bash01"]) + 1
    assert "1 failed, 1 passed" in results["toolu_bash01"].text
    assert not results["toolu_bash01"].blocks[0].is_error
    failed = results["toolu_read01"].blocks[0]
    assert failed.is_error and failed.text == "File not found: /home/alice/shop/discounts.py"


def test_step_finish_parts_carry_each_model_calls_tokens_and_cost(tmp_path):
    read = entries(in_storage(tmp_path, "tool_calls.json"), TOOLS)
    steps = [e for e in read if e.kind == opencode.STEP]
    assert [e.subtype for e in steps] == ["start", "finish", "start", "finish"]
    first, second = (e for e in steps if e.subtype == "finish")
    # Reasoning is billed as output, as opencode's own cost counts it.
    assert first.usage == {"input": 1200, "output": 350, "cache_read": 8000, "cache_write": 2000}
    assert first.extra["cost"] == 0.0213 and first.extra["stop_reason"] == "tool-calls"
    assert second.usage["cache_read"] == 11000
    assert first.message_id != second.message_id  # two model calls, each counted


def test_a_patch_part_names_the_files_it_changed_and_shows(tmp_path):
    patch = next(
        e for e in entries(in_storage(tmp_path, "tool_calls.json"), TOOLS) if e.kind == opencode.PATCH
    )
    assert patch.extra["files"] == ["/home/alice/shop/cart.py"]
    assert patch.summary == "Changed 1 file: /home/alice/shop/cart.py"


def test_a_failed_reply_carries_its_error_and_its_retries_show(tmp_path):
    read = entries(in_storage(tmp_path, "api_error.json"), "a1b2c3d4shop/ses_02error")
    failed = read[-1]
    assert failed.role == readers.ASSISTANT and failed.extra["stop_reason"] == "error"
    assert failed.extra["error_message"] == "APIError: Rate limit reached for gpt-5 in organization org-shop"
    assert [e.summary for e in read if e.kind == "retry"] == ["APIError: Rate limit reached"]


def test_an_aborted_reply_ends_with_the_persons_stop_and_its_running_tool_unfinished(tmp_path):
    read = entries(in_storage(tmp_path, "aborted.json"), "a1b2c3d4shop/ses_03abort")
    stop = read[-1]
    assert opencode.harness_line(stop) == {
        "kind": "interrupt",
        "text": "[The reply was aborted]",
        "during_tool": True,
    }
    unfinished = next(e for e in read if e.role == readers.TOOL)
    assert unfinished.extra["interrupted"] and unfinished.blocks[0].is_error
    # No step-finish was written: the reply's own tokens stand for its call.
    assert [e.usage for e in read if e.usage] == [
        {"input": 900, "output": 50, "cache_read": 0, "cache_write": 0}
    ]


def test_an_unknown_part_is_kept_raw(tmp_path):
    session = fixture("in_both.json")
    session["messages"][1]["parts"].append(
        {
            "id": "prt_04both02z",
            "sessionID": "ses_04both",
            "messageID": "msg_04both02",
            "type": "hologram",
            "beam": 1,
        }
    )
    write_storage(tmp_path, session)
    raw = [e for e in entries(tmp_path, BOTH) if e.kind == readers.RAW]
    assert [(e.subtype, e.raw["beam"]) for e in raw] == [("hologram", 1)]


def test_a_part_that_is_not_json_is_a_problem_and_the_rest_reads(tmp_path):
    write_storage(tmp_path, fixture("in_both.json"))
    (tmp_path / "storage/part/msg_04both02/prt_04both02b.json").write_text("{not json")
    session = next(s for s in found(tmp_path) if s.key == BOTH)
    result = readers.read_session(session.path, "opencode")
    assert [p.message.split(":")[0] for p in result.problems] == ["part prt_04both02b"]
    assert [e.id for e in result.entries if e.kind == opencode.STEP] == ["prt_04both02a", "prt_04both02c"]


def test_a_part_past_the_event_limit_is_a_problem_and_the_rest_reads(tmp_path):
    session = fixture("in_both.json")
    session["messages"][1]["parts"][1]["text"] = "zone " * 1000
    in_database(tmp_path).add_session(session)
    session_file = next(s for s in found(tmp_path) if s.key == BOTH)
    result = readers.read_session(session_file.path, "opencode", max_event_bytes=2000)
    assert [re.sub(r"[\d,]+ bytes", "N bytes", p.message) for p in result.problems] == [
        "part prt_04both02b: N bytes, past the limit of 2,000"
    ]
    assert "How are shipping costs computed?" in [e.text for e in result.entries]


def test_a_part_the_reader_fails_on_is_a_problem_kept_raw(tmp_path, monkeypatch):
    write_storage(tmp_path, fixture("in_both.json"))
    real = opencode.part_entries

    def failing(part, message):
        if part["id"] == "prt_04both02b":
            raise KeyError("boom")
        return real(part, message)

    monkeypatch.setattr(opencode, "part_entries", failing)
    session = next(s for s in found(tmp_path) if s.key == BOTH)
    result = readers.read_session(session.path, "opencode")
    assert [p.message for p in result.problems] == ["reader error: KeyError('boom')"]
    kept = next(e for e in result.entries if e.kind == readers.RAW)
    assert kept.raw["text"].startswith("Shipping is a flat rate")


# Both storages


def test_the_database_and_the_json_storage_read_to_the_same_entries(tmp_path):
    from_json = entries(in_storage(tmp_path / "json", "tool_calls.json"), TOOLS)
    in_database(tmp_path / "db", "tool_calls.json")
    from_db = entries(tmp_path / "db", TOOLS)
    assert [e.to_dict() for e in from_db] == [e.to_dict() for e in from_json]
    assert len(from_db) == 19


def test_a_session_in_both_is_listed_once_from_the_database(tmp_path):
    in_storage(tmp_path, "in_both.json", "api_error.json")
    in_database(tmp_path, "in_both.json")
    listed = {s.key: s for s in found(tmp_path)}
    assert sorted(listed) == ["a1b2c3d4shop/ses_02error", BOTH]
    assert str(listed[BOTH].path).endswith("opencode.db#ses_04both")
    assert listed[BOTH].identity == "database" and listed["a1b2c3d4shop/ses_02error"].identity == "json"


def test_a_default_title_is_left_for_the_first_prompt(tmp_path):
    listed = {s.key: s.title for s in found(in_storage(tmp_path, "api_error.json", "aborted.json"))}
    assert listed == {
        "a1b2c3d4shop/ses_02error": "",
        "a1b2c3d4shop/ses_03abort": "Rename the checkout module",
    }


def test_a_child_session_links_to_its_parent(tmp_path):
    child = fixture("in_both.json")
    child["info"] |= {"id": "ses_05child", "parentID": "ses_01tools"}
    for message in child["messages"]:
        message["info"]["id"] = message["info"]["id"].replace("04both", "05child")
        message["info"]["sessionID"] = "ses_05child"
        for part in message["parts"]:
            part |= {"id": part["id"].replace("04both", "05child"), "messageID": message["info"]["id"]}
    database = in_database(tmp_path, "tool_calls.json")
    database.add_session(child)
    listed = {s.key: s for s in found(tmp_path)}
    assert listed["a1b2c3d4shop/ses_05child"].parent_path == listed[TOOLS].path
    assert listed["a1b2c3d4shop/ses_05child"].parent_kind == "subagent"


def test_the_format_is_told_from_the_data_folder_and_the_database(tmp_path):
    in_database(tmp_path / "a", "in_both.json")
    in_storage(tmp_path / "b", "in_both.json")
    assert readers.detect_format(tmp_path / "a") == "opencode"
    assert readers.detect_format(tmp_path / "a" / "opencode.db") == "opencode"
    assert readers.detect_format(tmp_path / "b") == "opencode"


# The database is only read


def test_reading_the_database_leaves_its_bytes_and_makes_no_wal(tmp_path):
    database = in_database(tmp_path, "tool_calls.json")
    before = database.path.read_bytes(), os.stat(database.path).st_mtime_ns
    entries(tmp_path, TOOLS)
    assert (database.path.read_bytes(), os.stat(database.path).st_mtime_ns) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]


def test_a_locked_database_keeps_every_session_as_indexed(tmp_path, monkeypatch):
    database = in_database(tmp_path, "in_both.json")
    in_storage(tmp_path, "api_error.json")
    monkeypatch.setattr(opencode_store, "_LOOKED", {})
    with closing(sqlite3.connect(database.path, isolation_level=None)) as writer:
        writer.execute("BEGIN EXCLUSIVE")
        monkeypatch.setattr(opencode_store, "connect", _impatient(opencode_store.connect))
        listed = list(opencode.discover(tmp_path))
        writer.execute("ROLLBACK")
    assert [type(item) for item in listed] == [readers.Kept] and listed[0].key_prefix == ""


def _impatient(connect):
    def quick(path):
        connection = connect(path)
        connection.execute("PRAGMA busy_timeout = 50")
        return connection

    return quick


def test_a_database_that_is_not_one_is_listed_with_why_and_the_json_still_reads(tmp_path):
    in_storage(tmp_path, "api_error.json")
    (tmp_path / "opencode.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    listed = found(tmp_path)
    assert [s.key for s in listed] == ["opencode.db", "a1b2c3d4shop/ses_02error"]
    assert "database_error" in listed[0].extra
    with pytest.raises(OSError):
        readers.read_session(listed[0].path, "opencode")


# A reply still being written


def test_a_reply_still_being_written_is_left_for_the_next_pass_until_it_settles(tmp_path, monkeypatch):
    session = fixture("in_both.json")
    writing = session["messages"][1]["info"]
    del writing["time"]["completed"]
    writing["time"]["created"] = int(time.time() * 1000)
    in_database(tmp_path, "api_error.json").add_session(session)
    session_file = next(s for s in found(tmp_path) if s.key == BOTH)
    result = readers.read_session(session_file.path, "opencode")
    assert (result.end_offset, [e.role for e in result.entries]) == (1, ["", "user"])
    monkeypatch.setattr(readers.opencode, "SETTLE_SECONDS", -1)
    later = readers.read_session(session_file.path, "opencode", result.end_offset, result.end_line)
    assert later.end_offset == 2 and [e.line for e in later.entries] == [3, 4, 5]


# In the index


pytestmark_db = pytest.mark.django_db


def index(root: Path):
    return index_roots([RootSpec(root, "opencode")])


@pytest.fixture
def reads(monkeypatch) -> list[tuple[str, int]]:
    """Each read of a session: (its path's last part, the message it read from)."""
    seen = []
    read = opencode.read

    def noting(path, start_offset, *args):
        seen.append((Path(str(path).split("#")[-1]).stem, start_offset))
        return (yield from read(path, start_offset, *args))

    monkeypatch.setattr(opencode, "read", noting)
    return seen


@pytestmark_db
def test_the_index_lists_a_session_in_both_storages_once_and_prices_its_tokens(tmp_path):
    in_storage(tmp_path, "in_both.json", "tool_calls.json")
    in_database(tmp_path, "in_both.json")
    summary = index(tmp_path)
    assert summary.errors == []
    sessions = {s.key: s for s in Session.objects.all()}
    assert sorted(sessions) == [TOOLS, BOTH]
    tools = sessions[TOOLS]
    assert (tools.input_tokens, tools.output_tokens, tools.cache_read_tokens) == (1500, 440, 19000)
    assert tools.models_used == ["claude-sonnet-4-5"]
    assert tools.project.endswith("shop")
    expected = prices.price_totals(tools.usage_lines)[0]
    assert tools.cost == expected and tools.cost > 0 and tools.unpriced_tokens == 0
    assert tools.title == "Fix the failing cart test"


@pytestmark_db
@pytest.mark.parametrize("storage", ["database", "json"])
def test_a_grown_session_is_read_on_from_its_new_messages(tmp_path, reads, storage):
    if storage == "database":
        database = in_database(tmp_path, "in_both.json")
    else:
        in_storage(tmp_path, "in_both.json")
    index(tmp_path)
    first = Session.objects.get(key=BOTH)
    assert first.entries.count() == 5
    prompt = {
        "info": {
            "id": "msg_04both03",
            "sessionID": "ses_04both",
            "role": "user",
            "time": {"created": T_LATER},
        },
        "parts": [
            {
                "id": "prt_04both03a",
                "sessionID": "ses_04both",
                "messageID": "msg_04both03",
                "type": "text",
                "text": "And for islands?",
            }
        ],
    }
    answer = reply("msg_04both04", "ses_04both", "Islands ship at the far zone's rate.", T_LATER + 1000)
    for message in (prompt, answer):
        if storage == "database":
            database.add_message(message)
        else:
            write_message_files(tmp_path / "storage", message)
    reads.clear()
    index(tmp_path)
    assert reads == [("ses_04both", 2)]
    grown = Session.objects.get(key=BOTH)
    assert grown.id == first.id
    assert list(grown.entries.filter(kind="message").order_by("line").values_list("text", flat=True))[
        -2:
    ] == [
        "And for islands?",
        "Islands ship at the far zone's rate.",
    ]
    reads.clear()
    index(tmp_path)
    assert reads == []  # nothing changed: nothing read


@pytestmark_db
def test_a_session_that_moves_into_the_database_is_read_again_whole_and_stays_one(tmp_path, reads):
    in_storage(tmp_path, "in_both.json")
    index(tmp_path)
    in_database(tmp_path, "in_both.json")
    reads.clear()
    index(tmp_path)
    assert reads == [("ses_04both", 0)]
    assert Session.objects.get().entries.count() == 5


# Threads, search and the pages


@pytest.fixture
def indexed(tmp_path, settings, db) -> Session:
    in_storage(tmp_path, "tool_calls.json", "aborted.json")
    in_database(tmp_path, "in_both.json")
    settings.SESSIONVIEWER_ROOTS = [f"opencode={tmp_path}"]
    index(tmp_path)
    return Session.objects.get(key=TOOLS)


def test_the_thread_is_the_session_in_message_order(tmp_path):
    read = entries(in_storage(tmp_path, "tool_calls.json"), TOOLS)
    thread = threads.build_thread(read)
    shown = [item.entry.id for item in thread.items]
    assert shown[0] == "ses_01tools" and shown[-1] == "prt_01tools03c"
    assert shown == [e.id for e in read]


def test_search_finds_a_tool_output_and_a_reply(indexed):
    assert list(matching_session_ids("discount")) == [indexed.id]
    assert list(matching_session_ids('"subtracts the discount"')) == [indexed.id]


def test_the_session_page_shows_the_tools_the_error_and_the_cost(client, indexed, viewer):
    response = client.get(indexed.get_absolute_url())
    body = response.content.decode()
    assert response.status_code == 200
    assert "pytest tests/test_cart.py -q" in body and "File not found" in body
    assert "Changed 1 file" in body
    assert '<img class="mark" src="/static/marks/opencode.svg"' in body


def test_the_aborted_reply_shows_as_stopped_by_the_person(client, indexed, viewer):
    aborted = Session.objects.get(key="a1b2c3d4shop/ses_03abort")
    body = client.get(aborted.get_absolute_url()).content.decode()
    assert "Stopped by the person during a tool call." in body


@pytest.mark.parametrize("kind", ["html", "md"])
def test_an_opencode_session_exports(client, indexed, viewer, kind):
    response = client.get(reverse(f"session-export-{kind}", args=[indexed.id]))
    assert response.status_code == 200
    body = response.getvalue().decode()
    assert "The cart total test fails; fix it." in body
    assert "now subtracts the discount" in body and "File not found" in body


@pytestmark_db
def test_a_reply_read_while_it_had_settled_unfinished_is_read_again_whole_once_it_finishes(tmp_path, reads):
    session = fixture("aborted.json")
    running = session["messages"][1]
    del running["info"]["error"], running["info"]["time"]["completed"]  # a tool that runs for minutes
    database = in_database(tmp_path)
    database.add_session(session)
    index(tmp_path)
    first = Session.objects.get()
    assert "No result: the call was still running" in " ".join(first.entries.values_list("text", flat=True))
    done = {**running["parts"][2]["state"], "status": "completed", "output": "checkout.py:1: import checkout"}
    done["time"] = {"start": 1767261603000, "end": 1767261900000}
    info = {k: v for k, v in running["info"].items() if k not in ("id", "sessionID")}
    info["time"] = {**info["time"], "completed": 1767261900000}
    part = {k: v for k, v in running["parts"][2].items() if k not in ("id", "sessionID", "messageID")}
    with database.connect() as connection:
        connection.execute(
            "UPDATE message SET data = ?, time_updated = 1767261900000 WHERE id = 'msg_03abort02'",
            (orjson.dumps(info).decode(),),
        )
        connection.execute(
            "UPDATE part SET data = ?, time_updated = 1767261900000 WHERE id = 'prt_03abort02c'",
            (orjson.dumps(part | {"state": done}).decode(),),
        )
    reads.clear()
    index(tmp_path)
    assert reads == [("ses_03abort", 0)]
    texts = " ".join(Session.objects.get().entries.values_list("text", flat=True))
    assert "checkout.py:1: import checkout" in texts and "still running" not in texts
