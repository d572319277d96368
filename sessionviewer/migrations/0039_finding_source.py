"""Each finding keeps its session's source (issue 31's facet, `facetsource`).

The list's "possible secrets" facet filtered by a machine or root ran an EXISTS for each
session of the filter: PostgreSQL read the machine's 100,000 sessions of 400,000 (65 ms of
the page's 90 ms, bench/README.md). With the source on the findings, it counts the distinct
sessions of the sources' findings alone, by (source_id, session_id).

The column is added nullable, filled from the sessions (one UPDATE ... FROM on PostgreSQL,
a correlated subquery on SQLite), then made NOT NULL: every writer sets it.
"""

from django.db import migrations, models


def forwards(apps, schema_editor):
    """Each finding's source_id from its session's: every finding, none has one before."""
    if schema_editor.connection.vendor == "postgresql":
        statement = (
            "UPDATE sessionviewer_sessionfinding f SET source_id = s.source_id "
            "FROM sessionviewer_session s WHERE s.id = f.session_id"
        )
    else:
        statement = (
            "UPDATE sessionviewer_sessionfinding SET source_id = ("
            "SELECT s.source_id FROM sessionviewer_session s "
            "WHERE s.id = sessionviewer_sessionfinding.session_id)"
        )
    # On the connection's cursor: the tests run it inside their transaction, where SQLite's
    # schema editor cannot open.
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0038_tally_by_update_statement")]

    operations = [
        migrations.AddField(
            model_name="sessionfinding",
            name="source_id",
            field=models.BigIntegerField(null=True),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="sessionfinding",
            name="source_id",
            field=models.BigIntegerField(),
        ),
        migrations.AddIndex(
            model_name="sessionfinding",
            index=models.Index(fields=["source_id", "session"], name="finding_source_session"),
        ),
    ]
