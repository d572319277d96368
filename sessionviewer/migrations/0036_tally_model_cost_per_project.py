"""A project's usage by model, kept in the tally (issue 28): its rows now hold "model_cost"
too, beside the list's facets (0032's IN_PROJECT).

A project page of 30,000 sessions (bench/load.py's seed) read every session's model_costs and
added them up in Python, most of the page's 190-456 ms under load. All time, the page now
reads the project's per-model rows, a few per machine and format (projects.usage_report).

PostgreSQL only, as the tally: the trigger's function is made again with the new facet, and
the project rows of the sessions already indexed are added, in one statement.
"""

from importlib import import_module

from django.db import migrations

tally = import_module("sessionviewer.migrations.0032_session_tally")

IN_PROJECT = (*tally.IN_PROJECT, "model_cost")
SESSIONS = "sessionviewer_session r"


def _remake(schema_editor, in_project: tuple[str, ...]) -> None:
    for statement in tally.DROP:
        schema_editor.execute(statement, params=None)
    for statement in tally._statements(in_project)[1:]:  # not 0032's backfill
        schema_editor.execute(statement, params=None)


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _remake(schema_editor, IN_PROJECT)
    shares = tally._shares("r.", "1", SESSIONS, in_project=("model_cost",), whole_index=False)
    schema_editor.execute(tally._added(shares, pending=False), params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    _remake(schema_editor, tally.IN_PROJECT)
    schema_editor.execute(
        f"DELETE FROM {tally.TABLE} WHERE facet = 'model_cost' AND project <> ''", params=None
    )


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0035_session_links_after_line")]

    operations = [migrations.RunPython(forwards, backwards)]
