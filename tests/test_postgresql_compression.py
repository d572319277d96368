"""Long values are compressed with LZ4 on PostgreSQL (migration 0043): the entries' COPY spent
a quarter of its bare time in pglz. The test server is PostgreSQL 15 from Debian, built with LZ4."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection

from sessionviewer.models import Entry, Session, Source

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's compression"),
]

migration = importlib.import_module("sessionviewer.migrations.0043_lz4_for_long_values")


def compression_of_columns() -> dict[tuple[str, str], str]:
    with connection.cursor() as cursor:
        cursor.execute(
            migration.COLUMNS.replace("c.relname, a.attname", "c.relname, a.attname, a.attcompression")
        )
        return {(table, column): method for table, column, method in cursor.fetchall()}


def test_this_server_has_lz4():
    with connection.cursor() as cursor:
        assert migration.lz4_supported(cursor)


# The tables whose values grow long: the migration set every table of ours as it stood.
LONG_VALUES = (
    "sessionviewer_entry",
    "sessionviewer_session",
    "sessionviewer_threadsnapshot",
    "sessionviewer_threadpiece",
    "sessionviewer_memorysnapshot",
    "sessionviewer_revision",
)


def test_every_compressible_column_of_the_long_values_tables_is_lz4():
    columns = compression_of_columns()
    for column in ("text", "blocks", "extra", "usage", "summary", "raw", "search_words"):
        assert ("sessionviewer_entry", column) in columns
    assert ("sessionviewer_threadpiece", "data") in columns
    assert ("sessionviewer_memorysnapshot", "content") in columns
    assert {method for (table, _), method in columns.items() if table in LONG_VALUES} == {"l"}


def test_a_long_entry_is_stored_by_lz4_and_reads_back_whole():
    source = Source.objects.create(path="/tmp/x", format="claude_code")
    session = Session.objects.create(source=source, key="k", path="/tmp/x/a.jsonl")
    text = "".join(f"line {n}: the tool printed this\n" for n in range(2_000))  # compressible, 60 KB
    entry = Entry.objects.create(
        session=session, line=1, offset=0, entry_id="e1", kind="tool_result", text=text
    )
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_column_compression(text), pg_column_size(text) FROM sessionviewer_entry WHERE id = %s",
            [entry.id],
        )
        method, stored = cursor.fetchone()
    assert method == "lz4"
    assert stored < len(text) // 4
    assert Entry.objects.get(id=entry.id).text == text
