"""Let FTS5 gather 16 segments on a level before it merges them, not 4 (automerge).

Every time FTS5 writes what it holds in memory it adds a segment, and with the
default it merged each 4 of a level into one on the next, rewriting the index
again at every level: a tenth of a cold index (bench/compare.py, 0.91x the wall
time with 16). Searches read a segment more per level: over the bench's 37 MB
of text the index ends with 15 segments rather than 4, and a one-word search
took the same 1.1 ms on both.
"""

from django.db import migrations

MERGE_SEGMENTS = 16  # FTS5's largest; its default is 4


def _automerge(segments: int):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "sqlite":
            schema_editor.execute(f"INSERT INTO entry_fts(entry_fts, rank) VALUES ('automerge', {int(segments)})")

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0008_session_lookups_by_composite_index")]

    operations = [migrations.RunPython(_automerge(MERGE_SEGMENTS), _automerge(4))]
