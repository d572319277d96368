"""Keep no token positions in the FTS5 index (detail=none, columnsize=0).

Positions were most of the index and half the time a cold index spent in FTS5
(bench/bench_index.py: 1.48 s against 0.82 s over the same 37 MB of text). They
only serve phrase and NEAR queries and bm25 ranking, and the search uses none of
them: hits are ordered by session, and a word with punctuation in it ("app.py",
"error_code") or a quoted phrase is matched as written, by a substring test on
the rows that hold every one of its tokens (see search.matching_entries).
"""

from django.db import migrations

TOKENIZE = "tokenize='unicode61 remove_diacritics 2'"
WITHOUT_POSITIONS = [
    "DROP TABLE IF EXISTS entry_fts",
    "CREATE VIRTUAL TABLE entry_fts USING fts5(text, content='sessionviewer_entry', content_rowid='id', "
    f"{TOKENIZE}, detail=none, columnsize=0)",
    "INSERT INTO entry_fts(entry_fts) VALUES ('rebuild')",
]
WITH_POSITIONS = [
    "DROP TABLE IF EXISTS entry_fts",
    f"CREATE VIRTUAL TABLE entry_fts USING fts5(text, content='sessionviewer_entry', content_rowid='id', {TOKENIZE})",
    "INSERT INTO entry_fts(entry_fts) VALUES ('rebuild')",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            for statement in statements:
                schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0006_thread_snapshot")]

    operations = [migrations.RunPython(_run(WITHOUT_POSITIONS), _run(WITH_POSITIONS))]
