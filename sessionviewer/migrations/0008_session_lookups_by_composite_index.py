"""Drop the single-column session index of entries and problems.

The composite indexes (session, line) and (session, entry_id) start with the
session, so they serve every lookup by session; the extra index only cost each
inserted row its upkeep (bench/bench_index.py).

The index is dropped by name rather than through AlterField, which on SQLite
rebuilds the whole table and with it would drop the full-text triggers.
"""

from django.db import migrations, models

# Django's own names for the indexes db_index=True made (the same on every database).
INDEXES = [
    ("sessionviewer_entry", "sessionviewer_entry_session_id_4a2b5994"),
    ("sessionviewer_problem", "sessionviewer_problem_session_id_f7c866f8"),
]


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0007_fts_without_positions")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="entry",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="entries",
                        to="sessionviewer.session",
                    ),
                ),
                migrations.AlterField(
                    model_name="problem",
                    name="session",
                    field=models.ForeignKey(
                        db_index=False,
                        on_delete=models.deletion.CASCADE,
                        related_name="problems",
                        to="sessionviewer.session",
                    ),
                ),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{index}"',
                    reverse_sql=f'CREATE INDEX "{index}" ON "{table}" ("session_id")',
                )
                for table, index in INDEXES
            ],
        )
    ]
