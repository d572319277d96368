"""A session's rows read back into reader entries: all of them, some lines, or all
without their text (what a thread snapshot needs). Used by store.py and flat.py."""

from __future__ import annotations

from array import array

import orjson
from django.db import connection

from sessionviewer import readers, row_codec
from sessionviewer.index import rows
from sessionviewer.models import Entry, Session


def select_entries(where: str, params: list) -> list[readers.Entry]:
    """Entries from a plain cursor rather than the ORM: a long session has tens of
    thousands of rows, and Django's per-value converters cost several times the query."""
    table = connection.ops.quote_name(Entry._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in row_codec.LOADED_COLUMNS)
    query = f"SELECT {columns} FROM {table} WHERE {where} ORDER BY line"  # noqa: S608 - names are ours
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        entries = row_codec.entries_from_rows(cursor.fetchall())
    _load_raw(table, [e for e in entries if e.kind == readers.RAW], params[0])
    return entries


def _load_raw(table: str, unknown: list[readers.Entry], session_id: int) -> None:
    """The whole line of each unknown entry (its raw column), which the page shows folded.
    Only these rows have one worth reading, and most sessions have none."""
    by_line = {e.line: e for e in unknown}
    lines = sorted(by_line)
    for at in range(0, len(lines), 500):
        batch = lines[at : at + 500]
        marks = ", ".join(["%s"] * len(batch))
        query = f"SELECT line, raw FROM {table} WHERE session_id = %s AND line IN ({marks})"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(query, [session_id, *batch])
            for line, raw in cursor.fetchall():
                if raw is not None:
                    by_line[line].raw = orjson.loads(raw)


def load_entries(session: Session) -> list[readers.Entry]:
    """The session's entries in file order, as the reader produced them."""
    return select_entries("session_id = %s", [session.id])


def light_entries(
    session_id: int, rules: readers.Format, after: int = -1
) -> tuple[list[readers.Entry], array, array]:
    """The session's entries without their text (rows.light_entries_from_rows), with the
    lines and text_facts of each, read a batch at a time: a thread snapshot needs ids,
    parents and kinds, and a 2 GB session's text would not fit in memory. rules: the
    session's format's; after: only the lines after this one."""
    table = connection.ops.quote_name(Entry._meta.db_table)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in row_codec.LIGHT_COLUMNS)
    # The text only where the thread needs it: a compact summary's, or a row without text_facts.
    text = f"CASE WHEN {quote('text_facts')} = 0 OR {quote('extra')} LIKE %s THEN {quote('text')} ELSE '' END"
    where = "session_id = %s AND line > %s"
    query = f"SELECT {columns}, {text} FROM {table} WHERE {where} ORDER BY line"  # noqa: S608 - names are ours
    entries, lines, facts = [], array("q"), array("H")
    with connection.cursor() as cursor:
        cursor.execute(query, ['%"is_compact_summary":true%', session_id, after])
        while batch := cursor.fetchmany(500):
            for entry, known in rows.light_entries_from_rows(batch, rules):
                entries.append(entry)
                lines.append(entry.line)
                facts.append(known)
    return entries, lines, facts


def load_entry(session_id: int, line: int) -> readers.Entry | None:
    """The entry at this line of the session, whole."""
    return load_lines(session_id, line, line).get(line)


def load_lines(session_id: int, first: int, last: int) -> dict[int, readers.Entry]:
    entries = select_entries("session_id = %s AND line BETWEEN %s AND %s", [session_id, first, last])
    return {e.line: e for e in entries}
