"""An entry always has its session. On PostgreSQL the foreign key is kept by the indexer's
writer, which locks the sessions it writes to, and by triggers (migration 0042): these tests
race a purge against a writer on a real server, as the key's own check would. SQLite keeps
Django's foreign key, checked at commit (and by Django's tests when each ends)."""

from __future__ import annotations

import threading

import pytest
from django.db import IntegrityError, connection, connections, transaction

from sessionviewer.index.statements import write_files
from sessionviewer.models import Entry, Session, Source
from sessionviewer.row_codec import POSTGRESQL_ENTRY_COLUMNS

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite keeps the foreign key")


def _session(name: str = "a") -> Session:
    source, _ = Source.objects.get_or_create(path="/r", format="claude_code", machine="laptop")
    return Session.objects.create(source=source, key=name, title=name, format="claude_code")


def _row(line: int) -> list:
    """One entry's row as rows.entry_rows makes it for PostgreSQL (write_files sets the
    session's id)."""
    columns = POSTGRESQL_ENTRY_COLUMNS
    values = {
        "line": line, "offset": line * 10, "entry_id": f"e{line}", "kind": "message", "role": "user",
        "text": "hello", "blocks": "[]", "usage": "{}", "extra": "{}", "text_facts": 0,
        "is_sidechain": False, "is_meta": False,
    }  # fmt: skip
    row = [values.get(column, "") for column in columns]
    for nullable in ("parent_id", "timestamp", "raw", "search_words"):
        if nullable in columns:
            row[columns.index(nullable)] = None
    return row


def _write(session: Session, lines: range) -> None:
    write_files([(session, [_row(n) for n in lines], [], [])])


@pytest.mark.django_db
def test_rows_for_a_session_that_is_gone_are_refused_and_nothing_is_written():
    session = _session()
    _write(session, range(2))
    gone = Session(id=session.id + 1000, source_id=session.source_id)
    with pytest.raises(IntegrityError), transaction.atomic():
        write_files([(session, [_row(5)], [], []), (gone, [_row(0)], [], [])])
    assert sorted(Entry.objects.values_list("line", flat=True)) == [0, 1]


@pytest.mark.django_db
def test_a_session_cannot_be_deleted_while_entries_name_it():
    session = _session()
    _write(session, range(3))
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Session._meta.db_table} WHERE id = %s", [session.id])  # noqa: S608
    assert Session.objects.filter(id=session.id).exists()
    session.delete()  # the ORM deletes its entries first
    assert not Entry.objects.exists()


@pytest.mark.django_db
def test_moving_an_entry_to_a_missing_session_is_refused():
    session = _session()
    _write(session, range(1))
    with pytest.raises(IntegrityError), transaction.atomic():
        Entry.objects.update(session_id=session.id + 1000)
    assert Entry.objects.get().session_id == session.id


def _purge(session_id: int, started: threading.Event, outcome: dict) -> None:
    """A purge in another connection: the session's entries, then the session."""
    try:
        with transaction.atomic():
            started.set()
            Entry.objects.filter(session_id=session_id).delete()
            Session.objects.filter(id=session_id).delete()
        outcome["purge"] = "deleted"
    except IntegrityError:
        outcome["purge"] = "refused"
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_a_purge_waiting_for_a_writer_that_appends_fails_rather_than_leave_entries_behind():
    session = _session()
    _write(session, range(2))
    outcome: dict = {}
    started = threading.Event()
    with transaction.atomic():
        _write(session, range(2, 4))  # the session is locked until this commits
        purge = threading.Thread(target=_purge, args=(session.id, started, outcome))
        purge.start()
        started.wait(5)
        purge.join(1)
        assert purge.is_alive(), "the purge waits for the writer's lock"
    purge.join(10)
    assert outcome == {"purge": "refused"}
    assert Session.objects.filter(id=session.id).exists()
    assert Entry.objects.filter(session_id=session.id).count() == 4


@pytest.mark.django_db(transaction=True)
def test_a_writer_waiting_for_a_purge_writes_nothing_once_the_session_is_gone():
    session = _session()
    _write(session, range(2))
    deleting, commit = threading.Event(), threading.Event()
    outcome: dict = {}

    def purge() -> None:
        try:
            with transaction.atomic():
                Entry.objects.filter(session_id=session.id).delete()
                Session.objects.filter(id=session.id).delete()
                deleting.set()
                commit.wait(10)
            outcome["purge"] = "deleted"
        finally:
            connections.close_all()

    thread = threading.Thread(target=purge)
    thread.start()
    assert deleting.wait(10)
    writer = threading.Thread(target=lambda: outcome.update(write=_write_or_refused(session)))
    writer.start()
    writer.join(1)
    assert writer.is_alive(), "the writer waits for the purge's delete"
    commit.set()
    thread.join(10)
    writer.join(10)
    assert outcome == {"purge": "deleted", "write": "refused"}
    assert not Entry.objects.exists()
    assert not Session.objects.exists()


def _write_or_refused(session: Session) -> str:
    try:
        with transaction.atomic():
            _write(session, range(2, 4))
        return "written"
    except IntegrityError:
        return "refused"
    finally:
        connections.close_all()
