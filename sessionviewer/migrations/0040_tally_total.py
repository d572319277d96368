"""The tally summed over every source and format (models.SessionTallyTotal), issue 28"s load.

A list page filtered by nothing summed 34,000 tally rows for its facets (30 ms of PostgreSQL
at 400,000 sessions on 40 roots), and Activity over all time 81,000 day rows (36 ms): each
value has a row per source and format. Pages filtered by no machine, root or format now read
a row per value. index/tally.py"s fold keeps it; here the folded rows are summed once.

Stop every indexer before migrating: an indexer of the old code would fold without adding
here. PostgreSQL only, as the tally; the table is made on both engines and stays empty on SQLite.
"""

from importlib import import_module

from django.db import migrations, models

FIGURES = import_module("sessionviewer.migrations.0032_session_tally").FIGURES
BACKFILL = (
    f"INSERT INTO sessionviewer_sessiontallytotal (project, facet, value, {', '.join(FIGURES)}) "
    f"SELECT project, facet, value, {', '.join(f'SUM({name})' for name in FIGURES)} "
    "FROM sessionviewer_sessiontally WHERE NOT pending GROUP BY project, facet, value"
)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(BACKFILL, params=None)


class Migration(migrations.Migration):
    dependencies = [
        ("sessionviewer", "0039_finding_source"),
    ]

    operations = [
        migrations.CreateModel(
            name="SessionTallyTotal",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("project", models.CharField(blank=True, default="", max_length=1024)),
                ("facet", models.CharField(max_length=16)),
                ("value", models.TextField()),
                ("sessions", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
                ("messages", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0)),
                ("priced", models.BigIntegerField(default=0)),
                ("unpriced_tokens", models.BigIntegerField(default=0)),
                ("undated", models.BigIntegerField(default=0)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(fields=("facet", "project", "value"), name="tally_total_value")
                ],
            },
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop, elidable=True),
    ]
