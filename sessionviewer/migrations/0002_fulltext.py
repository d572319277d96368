"""Full-text search: an FTS5 table kept by triggers on SQLite, a GIN index on PostgreSQL."""

from django.db import migrations

SQLITE_UP = [
    "CREATE VIRTUAL TABLE entry_fts USING fts5(text, content='sessionviewer_entry', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 2')",
    "CREATE TRIGGER entry_fts_insert AFTER INSERT ON sessionviewer_entry BEGIN "
    "INSERT INTO entry_fts(rowid, text) VALUES (new.id, new.text); END",
    "CREATE TRIGGER entry_fts_delete AFTER DELETE ON sessionviewer_entry BEGIN "
    "INSERT INTO entry_fts(entry_fts, rowid, text) VALUES ('delete', old.id, old.text); END",
    "CREATE TRIGGER entry_fts_update AFTER UPDATE OF text ON sessionviewer_entry BEGIN "
    "INSERT INTO entry_fts(entry_fts, rowid, text) VALUES ('delete', old.id, old.text); "
    "INSERT INTO entry_fts(rowid, text) VALUES (new.id, new.text); END",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS entry_fts_update",
    "DROP TRIGGER IF EXISTS entry_fts_delete",
    "DROP TRIGGER IF EXISTS entry_fts_insert",
    "DROP TABLE IF EXISTS entry_fts",
]
POSTGRES_UP = [
    "CREATE INDEX entry_text_search ON sessionviewer_entry USING gin (to_tsvector('simple'::regconfig, COALESCE(text, '')))",
]
POSTGRES_DOWN = ["DROP INDEX IF EXISTS entry_text_search"]


def _run(statements_by_vendor):
    def run(apps, schema_editor):
        for statement in statements_by_vendor.get(schema_editor.connection.vendor, []):
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE_UP, "postgresql": POSTGRES_UP}),
            _run({"sqlite": SQLITE_DOWN, "postgresql": POSTGRES_DOWN}),
        )
    ]
