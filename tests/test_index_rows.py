"""The entry row (index/rows.py): what the index keeps of a line, and how it comes back."""

import dataclasses
import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from sessionviewer import readers, row_codec, transcripts
from sessionviewer.index import index_roots, rows
from sessionviewer.models import Entry, Session
from sessionviewer.roots import RootSpec

from .fixture_files import FIXTURES, FORMAT_OF_FOLDER


def test_a_block_keeps_every_field_that_says_something():
    # Block.to_dict names each field by hand: a field added to Block must be added there too.
    filled = readers.Block(
        readers.TOOL_CALL,
        text="out",
        name="bash",
        call_id="c1",
        arguments={"command": "ls"},
        is_error=True,
        mime_type="image/png",
        data="iVBOR",
        size="926KB",
        target_id="m1",
        emojis=["+1"],
    )
    assert set(filled.to_dict()) == {f.name for f in dataclasses.fields(readers.Block)}
    for empty in ("", False, [], None):
        assert readers.Block(readers.TOOL_CALL, arguments=empty).to_dict() == {"type": readers.TOOL_CALL}
    assert readers.Block(readers.TOOL_CALL, arguments=0).to_dict()["arguments"] == 0


def test_timestamps_for_sqlite_are_the_text_djangos_backend_writes():
    # db_datetimes trusts orjson to write what isoformat() writes: check that it does.
    # Django's SQLite backend stores an aware datetime as str() of its naive UTC time.
    cet = timezone(timedelta(hours=1))
    values = [
        datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC),
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),  # no microseconds: isoformat writes none
        datetime(2026, 1, 2, 3, 4, 5, 120000, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 30, tzinfo=cet),  # the day before, in UTC
        datetime(1, 1, 1, 12, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        None,
    ]
    texts = row_codec.db_datetimes(values, row_codec.SQLITE_NULL)
    django_text = [
        str(v.astimezone(UTC).replace(tzinfo=None)) if v else row_codec.SQLITE_NULL for v in values
    ]
    assert texts == django_text
    assert [row_codec.db_datetime(v, as_text=True) or row_codec.SQLITE_NULL for v in values] == django_text
    assert texts[1] == "2026-01-02 03:04:05" and texts[3] == "2025-12-31 23:30:00"
    assert row_codec.db_datetimes([], row_codec.SQLITE_NULL) == []


def test_timestamps_for_postgresql_are_microseconds_since_2000():
    # What a timestamptz's binary form holds: the writer's COPY sends these as its eight bytes.
    cet = timezone(timedelta(hours=1))
    values = [
        datetime(2000, 1, 1, tzinfo=UTC),
        datetime(2000, 1, 1, 0, 0, 0, 1, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2000, 1, 1, 1, tzinfo=cet),  # midnight in UTC
        datetime(1, 1, 1, 12, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        None,
    ]
    got = row_codec.db_microseconds(values)
    assert got[:4] == [0, 1, -1, 0] and got[-1] is None
    assert all(type(n) is int for n in got[:-1])
    # Exact at the ends, where a float's 53 bits would round.
    seconds = (datetime(9999, 12, 31, tzinfo=UTC) - datetime(2000, 1, 1, tzinfo=UTC)).days * 86_400
    assert got[5] == (seconds + 86_399) * 1_000_000 + 999_999
    assert [row_codec.POSTGRESQL_EPOCH + timedelta(microseconds=n) for n in got[:-1]] == values[:-1]


ENTRY_COLUMNS_AT = {name: n for n, name in enumerate(row_codec.ENTRY_COLUMNS)}


def read_back_shape(entry) -> tuple:
    return (
        entry.line,
        entry.offset,
        entry.id,
        entry.parent_id,
        entry.kind,
        entry.role,
        entry.timestamp,
        [b.to_dict() for b in entry.blocks],
        entry.text,
        entry.sender,
        entry.model,
        entry.usage,
        entry.message_id,
        entry.subtype,
        (entry.is_sidechain, entry.is_meta),
        (entry.logical_parent_id, entry.first_kept_id, entry.summary, entry.leaf_id),
    )


@pytest.mark.django_db
def test_every_entry_reads_back_from_the_index_as_the_reader_gave_it():
    hostile = FIXTURES / "hostile"
    specs = [RootSpec(FIXTURES / folder, fmt) for folder, fmt in FORMAT_OF_FOLDER.items()]
    specs += [RootSpec(hostile / "claude", "claude_code"), RootSpec(hostile / "go", "go_agent")]
    specs += [RootSpec(hostile / "fluux", "fluux_xmpp")]
    assert index_roots(specs).errors == []
    checked = 0
    for session in Session.objects.all():
        read = [
            item
            for item in readers.SessionReader(Path(session.path), session.format, 0, 0)
            if isinstance(item, readers.Entry)
        ]
        assert [read_back_shape(e) for e in transcripts.load_entries(session)] == [
            read_back_shape(e) for e in read
        ], session.path
        checked += len(read)
    assert checked > 100


@pytest.mark.django_db
def test_a_blocks_text_is_stored_once_and_cut_back_out(tmp_path):
    lines = [
        {"type": "session", "version": 1, "id": "s1", "timestamp": "2026-02-01T10:00:00Z", "cwd": "/w"},
        {
            "type": "message",
            "id": "m1",
            "parentId": None,
            "timestamp": "2026-02-01T10:00:01Z",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "first\nthought"},
                    {"type": "text", "text": ""},
                    {"type": "tool_call", "id": "c1", "name": "read", "arguments": {"path": "a.py"}},
                    {"type": "text", "text": "é ✓ 🚀 done"},
                ],
            },
        },
        {
            "type": "message",
            "id": "m2",
            "parentId": "m1",
            "timestamp": "2026-02-01T10:00:02Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "a NUL \u0000 here"}]},
        },
    ]
    (tmp_path / "20260201-100000-0000abcd.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    index_roots([RootSpec(tmp_path, "go_agent")])
    stored = dict(Entry.objects.values_list("entry_id", "blocks"))
    assert stored["m1"][0] == {"type": "thinking", row_codec.TEXT_LENGTH: len("first\nthought")}
    # The blocks' texts come first, then what is only searched: the tool's name and arguments.
    assert Entry.objects.get(entry_id="m1").text == "first\nthought\né ✓ 🚀 done\nread\na.py"
    # The text column escapes NUL (PostgreSQL cannot hold it), so that block keeps its own text.
    assert stored["m2"] == [{"type": "text", "text": "a NUL \x00 here"}]
    session = Session.objects.get()
    by_id = {e.id: e for e in transcripts.load_entries(session)}
    assert [(b.type, b.text) for b in by_id["m1"].blocks] == [
        ("thinking", "first\nthought"),
        ("text", ""),
        ("tool_call", ""),
        ("text", "é ✓ 🚀 done"),
    ]
    assert by_id["m2"].blocks[0].text == "a NUL \x00 here"


@pytest.mark.django_db
def test_a_nul_anywhere_in_a_file_indexes_on_every_database(tmp_path):
    # PostgreSQL text cannot hold NUL: ids, prompts, titles and bad lines keep it as its escape.
    project = tmp_path / "projects" / "-w"
    project.mkdir(parents=True)
    lines = [
        {"type": "summary", "summary": "title\u0000one", "leafUuid": "a\u00002"},
        {
            "type": "user",
            "uuid": "u\u00001",
            "parentUuid": None,
            "sessionId": "s",
            "cwd": "/w\u0000",
            "timestamp": "2026-02-01T10:00:00Z",
            "message": {"role": "user", "content": "first\u0000prompt"},
        },
        {
            "type": "assistant",
            "uuid": "a\u00002",
            "parentUuid": "u\u00001",
            "sessionId": "s",
            "timestamp": "2026-02-01T10:00:01Z",
            "message": {"role": "assistant", "model": "m\u0000", "content": [{"type": "text", "text": "ok"}]},
        },
    ]
    body = "".join(json.dumps(line) + "\n" for line in lines) + '{"bad\u0000line\n'
    (project / "s.jsonl").write_text(body)
    assert index_roots([RootSpec(tmp_path / "projects", "claude_code")]).errors == []
    session = Session.objects.get()
    assert session.first_prompt == "first\\u0000prompt"
    assert session.summary_title == "title\\u0000one"
    assert session.problem_count == 1
    thread = transcripts.transcript(session).thread
    assert [item.entry.id for item in thread.items if item.entry.is_conversational] == [
        "u\\u00001",
        "a\\u00002",
    ]


def test_every_entry_column_is_a_column_of_the_entry_table():
    from sessionviewer.models import ENTRY_FIELDS, Entry

    assert ENTRY_FIELDS is row_codec.ENTRY_FIELDS
    assert row_codec.ENTRY_COLUMNS[1:-2] == row_codec.LOADED_COLUMNS  # all but session_id, raw and text_facts
    assert {Entry._meta.get_field(name).column for name in row_codec.ENTRY_COLUMNS} == set(
        row_codec.ENTRY_COLUMNS
    )


@pytest.mark.parametrize("folder", FORMAT_OF_FOLDER)
def test_entries_decoded_from_their_encoded_rows_are_the_entries_the_reader_gave(folder):
    # No database between the two: the encode and the decode agree on every column's place.
    checked = 0
    for path in sorted((FIXTURES / folder).rglob("*.json*")):
        read = [
            item
            for item in readers.SessionReader(path, FORMAT_OF_FOLDER[folder], 0, 0)
            if isinstance(item, readers.Entry)
        ]
        encoded = rows.entry_rows(
            read, readers.format_of(FORMAT_OF_FOLDER[folder]), for_sqlite=False, problems=[], path=str(path)
        )
        assert all(len(row) == len(row_codec.POSTGRESQL_ENTRY_COLUMNS) for row in encoded)
        # The timestamps as PostgreSQL reads their microseconds back: as datetimes.
        at = ENTRY_COLUMNS_AT["timestamp"]
        for row in encoded:
            row[at] = (
                None if row[at] is None else row_codec.POSTGRESQL_EPOCH + timedelta(microseconds=row[at])
            )
        decoded = row_codec.entries_from_rows([row[1 : len(row_codec.LOADED_COLUMNS) + 1] for row in encoded])
        assert [read_back_shape(e) for e in decoded] == [read_back_shape(e) for e in read], path
        checked += len(read)
    assert checked > 10
