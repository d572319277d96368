"""Long values compressed with LZ4 rather than pglz (PostgreSQL only).

PostgreSQL compresses a row's values past about 2 KB before it stores them, with pglz unless
a column says otherwise. On the history corpus the entries' binary COPY into a bare copy of
their table took 2.49-2.70 s of the server's time with pglz and 1.88-2.21 s with LZ4, for the
same size on disk (159 MB each; bench/README.md). LZ4 reads back faster too: a page shows
long tool outputs and thread snapshots, which are such values.

Every compressible column of this app's tables is set, as they stand at this migration; a
table made later says so itself. The setting changes no stored value: those written before
stay pglz, and PostgreSQL reads both. A server built without LZ4 (it has been an option of
the build since PostgreSQL 14) keeps pglz, and so does one older than 14.
"""

from django.db import migrations

COLUMNS = """
    SELECT c.relname, a.attname
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE n.nspname = current_schema() AND c.relkind = 'r' AND c.relname LIKE 'sessionviewer\\_%'
      AND a.attnum > 0 AND NOT a.attisdropped AND a.attstorage IN ('x', 'm')
    ORDER BY c.relname, a.attnum
"""


def lz4_supported(cursor) -> bool:
    cursor.execute(
        "SELECT current_setting('server_version_num')::int >= 140000"
        " AND 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    )
    row = cursor.fetchone()
    return bool(row and row[0])


def set_compression(method: str):
    def run(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return
        with connection.cursor() as cursor:
            if not lz4_supported(cursor):
                return
            cursor.execute(COLUMNS)
            quote = schema_editor.quote_name
            for table, column in cursor.fetchall():
                schema_editor.execute(
                    f"ALTER TABLE {quote(table)} ALTER COLUMN {quote(column)} SET COMPRESSION {method}"
                )

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0042_entry_session_locked_by_the_writer")]

    operations = [migrations.RunPython(set_compression("lz4"), set_compression("DEFAULT"))]
