"""The indexer fills the FTS5 table itself, one statement per batch of entries.

A trigger per inserted row cost 60% of a cold index (bench/bench_index.py); one
INSERT ... SELECT over the rows a batch just wrote does the same work in bulk.
Deletes and updates keep their triggers.
"""

from django.db import migrations

INSERT_TRIGGER = (
    "CREATE TRIGGER entry_fts_insert AFTER INSERT ON sessionviewer_entry BEGIN "
    "INSERT INTO entry_fts(rowid, text) VALUES (new.id, new.text); END"
)


def _run(statement):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0004_roles")]

    operations = [
        migrations.RunPython(_run("DROP TRIGGER IF EXISTS entry_fts_insert"), _run(INSERT_TRIGGER)),
    ]
