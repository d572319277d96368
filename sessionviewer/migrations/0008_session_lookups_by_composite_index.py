"""Drop the single-column session index of entries and problems.

The composite indexes (session, line) and (session, entry_id) start with the
session, so they serve every lookup by session; the extra index only cost each
inserted row its upkeep (bench/bench_index.py).

The index is dropped by name rather than through AlterField, which on SQLite
rebuilds the whole table and with it would drop the full-text triggers.
"""

from django.db import migrations, models

# The model, its related name, its table, and Django's own name for the index
# db_index=True made (the same on every database).
SESSION_INDEXES = [
    ("entry", "entries", "sessionviewer_entry", "sessionviewer_entry_session_id_4a2b5994"),
    ("problem", "problems", "sessionviewer_problem", "sessionviewer_problem_session_id_f7c866f8"),
]


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0007_fts_without_positions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name=model,
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name=related_name,
                        to="sessionviewer.session",
                    ),
                )
                for model, related_name, _table, _index in SESSION_INDEXES
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("session_id")',
                )
                for _model, _related_name, table, index in SESSION_INDEXES
            ],
        )
    ]
