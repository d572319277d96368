"""The SQL the indexer runs per file (index/statements.py): what its plain statements store
is what the ORM would, NULL and empty values included."""

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from django.db import connection

from sessionviewer import row_codec
from sessionviewer.index import index_roots, statements
from sessionviewer.models import Entry, Session
from sessionviewer.roots import RootSpec
from sessionviewer.tokens import binary_tsvector

from .fluux_history import HEADER, message, run

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """One Fluux session, as tests/test_index_passes.py's root holds it."""
    jid = tmp_path / "memory" / "alice@example.com"
    jid.mkdir(parents=True)
    (jid / "history.jsonl").write_text(HEADER + message(1) + message(2, "assistant"))
    return tmp_path / "memory"


def index_claude_lines(tmp_path, lines: list[dict]) -> None:
    """Index one Claude Code session file holding these lines."""
    folder = tmp_path / "projects" / "-work-project"
    folder.mkdir(parents=True)
    (folder / "S.jsonl").write_text("".join(orjson.dumps(line).decode() + "\n" for line in lines))
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])


def test_missing_values_are_stored_as_null_and_text_that_looks_like_zero_as_text(tmp_path):
    # The SQLite insert binds a stand-in for NULL (row_codec.SQLITE_NULL): no text may be taken for it.
    lines = [
        {"type": "user", "uuid": "0", "parentUuid": None, "cwd": "/w", "message": {"role": "user", "content": "0"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "0", "timestamp": "2025-02-08T19:00:00Z",
         "message": {"role": "assistant", "content": "0"}},
        {"type": "a-kind-nobody-knows", "uuid": "b", "parentUuid": "a", "value": 0},
    ]  # fmt: skip
    index_claude_lines(tmp_path, lines)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT entry_id, parent_id, timestamp IS NULL, raw IS NULL, text FROM {Entry._meta.db_table} ORDER BY line"  # noqa: S608
        )
        rows = cursor.fetchall()
    assert [row[:4] for row in rows] == [
        ("0", None, True, True),
        ("a", "0", False, True),
        ("b", "a", True, False),
    ]
    assert [row[4] for row in rows[:2]] == ["0", "0"]
    assert Entry.objects.get(entry_id="b").raw["value"] == 0


def test_mostly_empty_columns_read_back_empty_and_text_that_looks_like_zero_stays_text(tmp_path):
    # The SQLite insert binds a stand-in for the empty value of the mostly empty
    # columns (row_codec.SQLITE_EMPTY): empty must come back empty, and "0" as "0".
    lines = [
        {"type": "user", "uuid": "u", "parentUuid": None, "cwd": "/w", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "requestId": "r",
         "message": {"role": "assistant", "id": "0", "model": "0", "content": "0",
                     "usage": {"input_tokens": 3, "output_tokens": 0}}},
        {"type": "system", "uuid": "s", "parentUuid": "a", "subtype": "0", "content": "x", "logicalParentUuid": "0"},
        {"type": "summary", "summary": "0", "leafUuid": "0"},
    ]  # fmt: skip
    index_claude_lines(tmp_path, lines)
    columns = [c for c in row_codec.EMPTY_BY_DEFAULT if c not in ("usage", "extra")]
    stored = {e.line: e for e in Entry.objects.order_by("line")}
    user, assistant, system, summary = (stored[n] for n in (1, 2, 3, 4))
    assert {c: getattr(user, c) for c in columns} == dict.fromkeys(columns, "")
    assert (user.usage, user.extra) == ({}, {})
    assert (assistant.model, assistant.message_id) == ("0", "0")
    assert assistant.usage["input"] == 3
    assert (system.subtype, system.logical_parent_id) == ("0", "0")
    assert (summary.summary, summary.leaf_id) == ("0", "0")
    if connection.vendor != "sqlite":
        return  # the rest is of SQLite's insert, which binds the stand-in
    with connection.cursor() as cursor:  # text, never an integer, in every one of them
        kinds = ", ".join(f"typeof({connection.ops.quote_name(c)})" for c in row_codec.EMPTY_BY_DEFAULT)
        cursor.execute(f"SELECT {kinds} FROM {Entry._meta.db_table}")  # noqa: S608
        assert {kind for row in cursor.fetchall() for kind in row} <= {"text"}


def _session_with_every_kind_of_value(source, key: str, parent=None) -> Session:
    return Session(
        source=source,
        key=key,
        format="claude_code",
        path=f"/sessions/{key}.jsonl",
        title="Réunion 📅 du matin",
        parent=parent,
        started_at=datetime(2025, 2, 8, 21, 0, 5, 250, tzinfo=timezone(timedelta(hours=2))),
        updated_at=datetime(2025, 2, 8, 19, 30, tzinfo=UTC),
        indexed_at=None,
        entry_count=12,
        input_tokens=2**40,
        models_used=["claude-sonnet-4", "gpt-5"],
        extra={"room": True, 7: "a key that is not a string", "when": date(2025, 2, 8)},
    )


def _stored_row(session_id: int) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {Session._meta.db_table} WHERE id = %s", [session_id])  # noqa: S608
        names = [column[0] for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))


def test_the_indexers_session_statement_stores_what_the_orm_would(root):
    # _save_session skips the ORM's save for speed: every field must still reach the
    # database as the ORM sends it, whatever its type (dates in any zone, JSON, keys).
    run(root)
    source = Session.objects.get().source
    parent = Session.objects.get()
    by_orm = _session_with_every_kind_of_value(source, "by-orm", parent)
    by_orm.save()
    by_indexer = _session_with_every_kind_of_value(source, "by-indexer", parent)
    statements.save_session(by_indexer)  # an insert
    orm_row, indexer_row = _stored_row(by_orm.id), _stored_row(by_indexer.id)
    for row in (orm_row, indexer_row):
        del row["id"], row["key"], row["path"]
    assert indexer_row == orm_row
    by_indexer.title, by_indexer.started_at = "Second title", None
    statements.save_session(by_indexer)  # an update
    by_indexer.refresh_from_db()
    assert by_indexer.title == "Second title"
    assert (by_indexer.started_at, by_indexer.parent_id) == (None, parent.id)
    assert by_indexer.extra == {"room": True, "7": "a key that is not a string", "when": "2025-02-08"}


def test_the_indexers_session_statement_escapes_nul_in_text_from_files(root):
    run(root)
    session = Session.objects.get()
    session.title = "a title with \x00 in it"
    statements.save_session(session)
    session.refresh_from_db()
    assert session.title == "a title with \\u0000 in it"


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="COPY is PostgreSQL's; SQLite inserts in batches"
)
def test_rows_copied_on_postgresql_read_back_and_a_refused_one_is_djangos_error(root):
    """The entries go in by a binary COPY on PostgreSQL: text with tabs, backslashes and
    newlines, a time (sent as its microseconds since 2000), booleans and the words read back
    as written, and a row the database refuses raises Django's IntegrityError, as an insert
    would, which a pass records on the file (passes._left_out)."""
    from django.db import IntegrityError, transaction

    index_roots([RootSpec(root, "fluux_xmpp")])
    session = Session.objects.get()
    stamp = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    row = [session.id, 99, 0, "copied", None, "message", "user", *row_codec.db_microseconds([stamp]),
           "[]", "", "", "{}", "", "", True, False, "", "", "", "", "{}", "tab\there \\ back\nslash", None, 1, binary_tsvector([b"tab", b"here", b"back", b"slash"])]  # fmt: skip
    # The times furthest apart that the readers keep, one before 2000, one with microseconds, and none.
    times = [
        datetime(1, 1, 1, 12, tzinfo=UTC),
        datetime(1999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 1, 1, 0, 30, 0, 7, tzinfo=timezone(timedelta(hours=1))),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        None,
    ]
    timed = [
        [*row[:3], f"timed-{n}", *row[4:7], us, *row[8:]]
        for n, us in enumerate(row_codec.db_microseconds(times))
    ]
    sql = statements.statements_for(connection.vendor)
    with transaction.atomic(), statements.driver_cursor() as cursor:
        statements.copy_rows(cursor, sql.copy_entries, [row, *timed], sql.entry_types)
    assert [Entry.objects.get(entry_id=f"timed-{n}").timestamp for n in range(len(times))] == times
    copied = Entry.objects.get(entry_id="copied")
    assert (copied.text, copied.is_sidechain, copied.is_meta, copied.timestamp, copied.parent_id) == (
        "tab\there \\ back\nslash",
        True,
        False,
        datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
        None,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(search_words) FROM sessionviewer_entry WHERE id = %s", [copied.id]
        )
        assert cursor.fetchone()[0] == ["back", "here", "slash", "tab"]
    refused = [*row[:1], -1, *row[2:]]  # a line number below 0: the CHECK refuses it
    with pytest.raises(IntegrityError), transaction.atomic(), statements.driver_cursor() as cursor:
        statements.copy_rows(cursor, sql.copy_entries, [refused], sql.entry_types)


def test_update_sessions_writes_what_a_save_per_session_would(root, monkeypatch):
    """update_sessions writes many sessions' fields in few statements (on PostgreSQL one
    UPDATE ... FROM (VALUES ...) per chunk): each row must come out as the ORM's save of
    that session gives it, whatever the field's type, NULLs and a repeated session too."""
    run(root)
    source = Session.objects.get().source
    parent = Session.objects.get()
    by_orm = [_session_with_every_kind_of_value(source, f"by-orm-{n}", parent) for n in range(5)]
    by_rows = [_session_with_every_kind_of_value(source, f"by-rows-{n}", parent) for n in range(5)]
    for session in [*by_orm, *by_rows]:
        session.save()
    fields = (
        "title",
        "parent_id",
        "started_at",
        "input_tokens",
        "cost",
        "models_used",
        "extra",
        "links_after_line",
    )
    for n, (one, other) in enumerate(zip(by_orm, by_rows, strict=True)):
        for session in (one, other):
            session.title = f"Titre n° {n} \U0001f4c5" if n % 2 else ""
            session.parent = None if n % 2 else parent
            session.started_at = None if n == 3 else datetime(2025, 3, n + 1, 8, 0, 0, 123, tzinfo=UTC)
            session.input_tokens = 2**41 + n
            session.cost = None if n == 2 else 0.125 * n
            session.models_used = [] if n == 1 else ["gpt-5", f"model-{n}"]
            session.extra = {"n": n, "text": "tab\there \\ 'quoted'"}
            session.links_after_line = n % 2
        one.save(update_fields=[name.removesuffix("_id") for name in fields])
    monkeypatch.setattr(statements, "UPDATE_PARAMETERS", 2 * (len(fields) + 1))  # two rows a statement
    repeated = _session_with_every_kind_of_value(source, "stale", parent)
    repeated.id, repeated.title = by_rows[0].id, "an earlier value, given first"
    statements.update_sessions([repeated, *by_rows], fields)
    for one, other in zip(by_orm, by_rows, strict=True):
        orm_row, rows_row = _stored_row(one.id), _stored_row(other.id)
        for row in (orm_row, rows_row):
            del row["id"], row["key"], row["path"]
        assert rows_row == orm_row
