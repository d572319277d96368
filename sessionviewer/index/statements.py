"""The SQL the indexer runs for every file and batch, on SQLite or PostgreSQL.

Plain statements on the driver's own cursor, built once per database: the ORM's
save() and bulk_create() cost a cold index several times the parse itself. On
SQLite, NULL and the empty value travel as 0 (row_codec.SQLITE_NULL, row_codec.SQLITE_EMPTY)
and the insert turns them back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, models, transaction

from sessionviewer import readers
from sessionviewer.index import tally
from sessionviewer.index.findings import Finding
from sessionviewer.models import Entry, OrjsonField, Problem, Session, SessionFinding
from sessionviewer.row_codec import (
    EMPTY_BY_DEFAULT,
    ENTRY_COLUMNS,
    POSTGRESQL_ENTRY_COLUMNS,
    SQLITE_EMPTY,
    SQLITE_NULL,
    db_datetime,
    db_text,
    json_text,
)

# Problems per insert: a file of bad lines has as many as it has lines.
PROBLEM_BATCH = 500


@contextmanager
def file_savepoint() -> Iterator[None]:
    """A savepoint per file: a read that fails halfway leaves none of its rows.

    On SQLite it is two plain statements on the driver's connection: a nested
    atomic() costs more in Python than the savepoint costs SQLite, once per file.
    """
    if connection.vendor != "sqlite":
        with transaction.atomic():
            yield
        return
    with driver_cursor() as cursor:
        cursor.execute('SAVEPOINT "indexer_file"')
    try:
        yield
    except BaseException:
        with driver_cursor() as cursor:
            cursor.execute('ROLLBACK TO "indexer_file"')
            cursor.execute('RELEASE "indexer_file"')
        # The file's ORM statements may have marked the group for rollback; the savepoint undid them.
        transaction.set_rollback(False)
        raise
    with driver_cursor() as cursor:
        cursor.execute('RELEASE "indexer_file"')


@contextmanager
def driver_cursor() -> Iterator[Any]:
    """A cursor for the statements the indexer runs per file and per batch, which
    Statements writes in the driver's own placeholders.

    On SQLite it is sqlite3's own cursor: Django's rewrites the placeholders of
    every statement with a regular expression. Errors still come out as Django's.
    """
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the proxy looks the connection up
    if db.vendor != "sqlite":
        with db.cursor() as cursor:
            yield cursor
        return
    if db.connection is None:
        db.ensure_connection()
    with db.wrap_database_errors:
        cursor = db.connection.cursor()
        try:
            yield cursor
        finally:
            cursor.close()


def save_session(session: Session) -> None:
    """Session.save() in one plain statement: the ORM's save compiles its SQL and
    prepares every field's value on every call, which cost a cold index most of what
    its ~400 session saves took (bench/bench_index.py)."""
    sql = statements_for(connection.vendor)
    adding = session.id is None
    values = [to_db(session, attname) for attname, to_db in sql.session_values]
    with driver_cursor() as cursor:
        if adding:
            cursor.execute(sql.insert_session, values)
            # SQLite's RETURNING costs three times the insert itself: its rowid is at hand.
            session.id = cursor.lastrowid if connection.vendor == "sqlite" else cursor.fetchone()[0]
            session._state.adding, session._state.db = False, connection.alias
        else:
            cursor.execute(sql.update_session, [*values, session.id])


def insert_sessions(sessions: list[Session]) -> None:
    """Insert these new sessions in one executemany (SQLite) or COPY (PostgreSQL), their
    ids taken first in one statement: a pass of thousands of small files saved them one
    statement each."""
    if not sessions:
        return
    sql = statements_for(connection.vendor)
    with driver_cursor() as cursor:
        if connection.vendor == "sqlite":
            # The write transaction is this process's alone (BEGIN IMMEDIATE), and the id
            # is AUTOINCREMENT: the next ids are past the largest the table ever held.
            cursor.execute(sql.largest_session_id)
            first = (cursor.fetchone()[0] or 0) + 1
            ids = range(first, first + len(sessions))
        else:  # the sequence hands out ids no other indexer will take
            cursor.execute(sql.next_session_ids, [len(sessions)])
            ids = [row[0] for row in cursor.fetchall()]
        rows = []
        for session, session_id in zip(sessions, ids, strict=True):
            rows.append([session_id, *(to_db(session, attname) for attname, to_db in sql.session_values)])
        if sql.copy_sessions:  # one statement, so the tally's trigger runs once (migration 0037)
            copy_rows(cursor, sql.copy_sessions, rows)
        else:
            cursor.executemany(sql.insert_session_with_id, rows)
    for session, session_id in zip(sessions, ids, strict=True):
        session.id = session_id
        session._state.adding, session._state.db = False, connection.alias


def _value_to_db(field: models.Field, for_sqlite: bool) -> Callable[[Session, str], Any]:
    """How one Session field's value goes into the statement: as the ORM would send it.

    The usual types take a short way; anything else goes through the field itself.
    Strings come from files (titles, paths), so NUL is escaped as db_text does.
    """

    def by_field(session: Session, attname: str):
        value = field.get_db_prep_save(getattr(session, attname), connection)
        return db_text(value) if isinstance(value, str) else value

    if isinstance(field, OrjsonField):

        def to_db(session: Session, attname: str):
            value = getattr(session, attname)
            return None if value is None else json_text(value)

    elif isinstance(field, models.DateTimeField):

        def to_db(session: Session, attname: str):
            value = getattr(session, attname)
            if value is None or (type(value) is datetime and value.tzinfo is not None):
                return db_datetime(value, for_sqlite)
            return by_field(session, attname)  # naive: Django warns, and says how it is taken

    elif isinstance(field, (*_PLAIN_FIELDS, models.ForeignKey)):

        def to_db(session: Session, attname: str):
            value = getattr(session, attname)
            if value is None or type(value) is int:
                return value
            if type(value) is str:
                return db_text(value)
            return by_field(session, attname)

    else:
        to_db = by_field
    return to_db


def write_files(files: list[tuple[Session, list[list], list[readers.Problem], list[Finding]]]) -> None:
    """The rows, problems and possible secrets of several saved sessions, in one statement each."""
    every_row, every_problem, every_finding = [], [], []
    for session, rows, problems, findings in files:
        session_id, source_id = session.id, session.source_id
        every_finding += [
            SessionFinding(session_id=session_id, source_id=source_id, line=line, entry_id=entry_id,
                           block=block, kind=kind, masked=masked, fingerprint=fp)
            for line, entry_id, block, kind, masked, fp in findings
        ]  # fmt: skip
        for row in rows:
            row[0] = session_id
        every_row += rows
        every_problem += [
            Problem(
                session=session,
                line=p.line,
                offset=p.offset,
                message=db_text(p.message),
                text=db_text(p.text),
            )
            for p in problems
        ]
    if every_row:
        sql = statements_for(connection.vendor)
        with driver_cursor() as cursor:
            if sql.copy_entries:
                _lock_sessions(cursor, sql, {session.id for session, *_ in files})
                copy_rows(cursor, sql.copy_entries, every_row, sql.entry_types)
            else:
                cursor.executemany(sql.insert_entry, every_row)
    # The full-text rows follow once per group (NewRows), in one statement (migration 0005).
    if every_problem:
        Problem.objects.bulk_create(every_problem, batch_size=PROBLEM_BATCH)
    if every_finding:
        SessionFinding.objects.bulk_create(every_finding, batch_size=PROBLEM_BATCH)


def _lock_sessions(cursor, sql: Statements, session_ids: set[int]) -> None:
    """PostgreSQL: what the entries' foreign key did, once per group rather than per row
    (migration 0042). Each session the rows go to is locked against its delete until this
    transaction ends; one deleted before the lock is found gone, and nothing is written."""
    cursor.execute(sql.lock_sessions, [sorted(session_ids)])
    if missing := session_ids.difference(row[0] for row in cursor.fetchall()):
        raise IntegrityError(
            f'insert or update on table "{Entry._meta.db_table}" violates its session key: '
            f'session {min(missing)} is not present in table "{Session._meta.db_table}"'
        )


def copy_rows(cursor, statement: str, rows: list[list], types: tuple[str, ...] = ()) -> None:
    """PostgreSQL: rows in one COPY, streamed. An executemany sends a statement per row
    (pipelined, still parsed and planned each), which took a cold index several times what
    COPY does for the same rows (bench/README.md). With types, one per column, a COPY ...
    (FORMAT BINARY) statement's rows go in PostgreSQL's binary form: each value must then be
    of its column's Python type (None for NULL). Errors come out as Django's, as the cursor's
    own would."""
    with connections[DEFAULT_DB_ALIAS].wrap_database_errors, cursor.copy(statement) as copy:
        if types:
            copy.set_types(types)
        for row in rows:
            copy.write_row(row)


@dataclass(frozen=True)
class Statements:
    """The SQL the indexer runs for every file, built once per database vendor, in
    its driver's placeholders (driver_cursor runs them)."""

    # Each field's attname, and how its value goes to the database (_value_to_db).
    session_values: tuple[tuple[str, Callable[[Session, str], Any]], ...]
    insert_session: str
    insert_session_with_id: str
    copy_sessions: str  # PostgreSQL: the same columns in one COPY; SQLite: none
    largest_session_id: str  # SQLite: past every id the table held (AUTOINCREMENT)
    next_session_ids: str  # PostgreSQL: as many ids as the parameter says, from the sequence
    update_session: str
    insert_entry: str
    # PostgreSQL: its columns (rows.POSTGRESQL_ENTRY_COLUMNS) in one binary COPY, of entry_types;
    # SQLite: none. Binary, the server parses no text and the writer escapes none: the entries'
    # COPY took 0.5x the writer's CPU and 0.8x the server's (bench/README.md).
    copy_entries: str
    entry_types: tuple[str, ...]
    lock_sessions: str  # PostgreSQL: the sessions entries go to, locked as a foreign key's check does
    largest_entry_id: str
    index_new_text: str  # SQLite: the entries in an id range, into the full-text index


# Fields whose str, int or None value the ORM would pass on unchanged.
_PLAIN_FIELDS = (models.CharField, models.TextField, models.IntegerField, models.BigIntegerField)
_PLAIN_FIELDS += (models.PositiveIntegerField,)


@functools.cache
def statements_for(vendor: str) -> Statements:
    quote = connection.ops.quote_name
    mark = placeholder(vendor)
    fields = [f for f in Session._meta.concrete_fields if not f.primary_key]
    session_table, entry_table = quote(Session._meta.db_table), quote(Entry._meta.db_table)
    session_columns = ", ".join(quote(f.column) for f in fields)
    assignments = ", ".join(f"{quote(f.column)} = {mark}" for f in fields)
    entry_columns = ", ".join(quote(c) for c in ENTRY_COLUMNS)
    # The names are ours, not a request's.
    return Statements(
        session_values=tuple((f.attname, _value_to_db(f, vendor == "sqlite")) for f in fields),
        insert_session=f"INSERT INTO {session_table} ({session_columns}) "  # noqa: S608
        f"VALUES ({', '.join([mark] * len(fields))})" + ("" if vendor == "sqlite" else " RETURNING id"),
        insert_session_with_id=f"INSERT INTO {session_table} (id, {session_columns}) "  # noqa: S608
        f"VALUES ({', '.join([mark] * (len(fields) + 1))})",
        copy_sessions=f"COPY {session_table} (id, {session_columns}) FROM STDIN"
        if vendor == "postgresql"
        else "",
        largest_session_id="SELECT max(n) FROM (SELECT max(id) AS n FROM "  # noqa: S608
        f"{session_table} UNION ALL SELECT seq FROM sqlite_sequence WHERE name = '{Session._meta.db_table}')"
        if vendor == "sqlite"
        else "",
        next_session_ids=f"SELECT nextval(pg_get_serial_sequence('{session_table}', 'id')) "  # noqa: S608
        f"FROM generate_series(1, {mark})"
        if vendor != "sqlite"
        else "",
        update_session=f"UPDATE {session_table} SET {assignments} WHERE id = {mark}",  # noqa: S608
        insert_entry=f"INSERT INTO {entry_table} ({entry_columns}) "  # noqa: S608
        f"VALUES ({', '.join(_entry_value(column, vendor) for column in ENTRY_COLUMNS)})",
        copy_entries=f"COPY {entry_table} ({', '.join(quote(c) for c in POSTGRESQL_ENTRY_COLUMNS)}) "
        "FROM STDIN (FORMAT BINARY)"
        if vendor == "postgresql"
        else "",
        entry_types=tuple(_binary_type(column) for column in POSTGRESQL_ENTRY_COLUMNS)
        if vendor == "postgresql"
        else (),
        # In id order, so that two writers never wait for each other crosswise.
        lock_sessions=f"SELECT id FROM {session_table} WHERE id = ANY({mark}) ORDER BY id FOR KEY SHARE"  # noqa: S608
        if vendor == "postgresql"
        else "",
        largest_entry_id=f"SELECT max(id) FROM {entry_table}",  # noqa: S608
        index_new_text=f"INSERT INTO entry_fts(rowid, text) SELECT id, text FROM {entry_table} "  # noqa: S608
        f"WHERE id > {mark} AND id <= {mark}",
    )


# How psycopg writes a value of each of the entries' field types in a binary COPY.
# A field of another type fails here at once, not in a COPY. A time is its microseconds
# since 2000 (row_codec.db_microseconds), which is what a timestamptz's eight bytes hold in
# binary form: written as an int8, they are read by the column's own type (a binary COPY
# names no types), and the server checks the range as for any timestamp.
_BINARY_TYPES = {
    "ForeignKey": "int8", "BigIntegerField": "int8", "PositiveIntegerField": "int4",
    "PositiveSmallIntegerField": "int2", "CharField": "text", "TextField": "text",
    "BooleanField": "bool", "DateTimeField": "int8",
}  # fmt: skip


def _binary_type(column: str) -> str:
    """An entry column's type in copy_entries' binary rows: a tsvector's are bytes already
    (tokens.binary_tsvector), which go as they are."""
    if column == "search_words":
        return "bytea"
    field = Entry._meta.get_field(column.removesuffix("_id") if column == "session_id" else column)
    return _BINARY_TYPES[field.get_internal_type()]


def placeholder(vendor: str) -> str:
    """A parameter in the driver's own style (driver_cursor runs the statements)."""
    return "?" if vendor == "sqlite" else "%s"


def _entry_value(column: str, vendor: str) -> str:
    """A column's placeholder in the entry insert (rows.entry_rows makes the rows)."""
    if vendor == "sqlite" and column != "session_id" and Entry._meta.get_field(column).null:
        return f"NULLIF(?, {SQLITE_NULL})"  # SQLITE_NULL: NULL, bound cheaply
    if vendor == "sqlite" and column in EMPTY_BY_DEFAULT:
        # SQLITE_EMPTY: the column's empty value, bound cheaply. A literal of ours.
        return f"IFNULL(NULLIF(?, {SQLITE_EMPTY}), '{EMPTY_BY_DEFAULT[column]}')"
    return placeholder(vendor)


def update_sessions(sessions: list[Session], attnames: tuple[str, ...]) -> None:
    """Write these fields (attnames) of these sessions: a save() per session cost a cold
    index more than the queries that found the links, and bulk_update's CASE expressions
    took as long to compile.

    On SQLite, one executemany: a statement per row costs it no round trip. On PostgreSQL,
    one UPDATE ... FROM (VALUES ...) per UPDATE_PARAMETERS: an executemany there is a
    statement per row, each parsed, planned and answered, and each row whose counted
    columns changed called the tally's trigger; the statement tallies them itself
    (bench/README.md, issue 28)."""
    if not sessions:
        return
    quote, mark = connection.ops.quote_name, placeholder(connection.vendor)
    to_db = dict(statements_for(connection.vendor).session_values)  # as the session saves send them
    # One row per session, its last: of two for one row, PostgreSQL would apply either.
    rows = list({s.id: [*(to_db[name](s, name) for name in attnames), s.id] for s in sessions}.values())
    if connection.vendor == "postgresql":
        with transaction.atomic(savepoint=False):  # the tally's mark lasts as long as its transaction
            _update_on_postgresql([Session._meta.get_field(name) for name in attnames], rows)
        return
    columns = ", ".join(f"{quote(Session._meta.get_field(name).column)} = {mark}" for name in attnames)
    with driver_cursor() as cursor:
        cursor.executemany(f"UPDATE {quote(Session._meta.db_table)} SET {columns} WHERE id = {mark}", rows)  # noqa: S608


def _update_on_postgresql(fields: list[models.Field], rows: list[list]) -> None:
    quote, table = connection.ops.quote_name, connection.ops.quote_name(Session._meta.db_table)
    # The values' types are the columns' own (a VALUES list would take text for a string
    # or a NULL); a string column's is text, so an over-long value fails as it did.
    types = [f.db_type(connection) for f in fields]
    types = ["text" if db_type.startswith("varchar") else db_type for db_type in types]
    assignments = ", ".join(f"{quote(f.column)} = v.c{n}::{types[n]}" for n, f in enumerate(fields))
    names = ", ".join(f"c{n}" for n in range(len(fields)))
    columns = {f.column for f in fields}
    # A counted column changes: the rows' tally in the statement, not a trigger call per row.
    counted = bool(columns & set(tally.COUNTED)) and not columns & _PLACED
    counted_columns = ", ".join(quote(column) for column in tally.COUNTED)
    per_statement = max(1, UPDATE_PARAMETERS // (len(fields) + 1))
    with driver_cursor() as cursor:
        if counted:
            cursor.execute(tally.BY_STATEMENT, ["statement"])
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            new = f"(VALUES {', '.join(['(' + ', '.join(['%s'] * (len(fields) + 1)) + ')'] * len(chunk))}) AS v({names}, id)"
            params = [value for row in chunk for value in row]
            update = f"UPDATE {table} SET {assignments} FROM {new} WHERE {table}.id = v.id::bigint"  # noqa: S608
            if not counted:
                cursor.execute(update, params)
                continue
            # The rows locked first: the old values the statement reads are the ones it replaces.
            # Old and new shares go in apart, and cancel where a value did not change. Each
            # table is found by its ids alone: PostgreSQL plans these before it has statistics
            # of the sessions (a first index), and a join of the two looped over every session.
            ids = [row[-1] for row in chunk]
            cursor.execute(f"SELECT id FROM {table} WHERE id = ANY(%s) ORDER BY id FOR UPDATE", [ids])  # noqa: S608
            cursor.execute(
                f"WITH old_rows AS (SELECT {counted_columns} FROM {table} WHERE id = ANY(%s)), "  # noqa: S608
                f"new_rows AS ({update} RETURNING {', '.join(f'{table}.{quote(c)}' for c in tally.COUNTED)}) "
                + tally.changed_rows("old_rows", "new_rows"),
                [ids, *params],
            )
        if counted:
            cursor.execute(tally.BY_STATEMENT, [""])


# A row's shares of the tally read its parent's source, format and project as the statement
# finds them: an update of those is left to the row trigger.
_PLACED = {"source_id", "format", "project"}

# Parameters per UPDATE ... FROM (VALUES ...) on PostgreSQL: well under its limit of 65,535.
UPDATE_PARAMETERS = 20_000
