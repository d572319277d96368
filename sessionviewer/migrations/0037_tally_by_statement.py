"""The tally's trigger once per insert or delete statement, not once per row (issue 28,
PostgreSQL only).

0032's trigger ran its function for each session row written: a cold index of the history
corpus (6,387 sessions) sent 5,722 session inserts, each calling plpgsql to add its shares
(bench/README.md). Inserts and deletes now run it once per statement and read the
statement's rows from its transition tables, so the indexer's one COPY of a group's sessions
adds their shares in one INSERT ... SELECT.

Updates stay a row's: 0032's WHEN leaves out, in C and without calling the function, the
rows whose watched columns did not change, which most of the indexer's updates are (its
links_pending and copies_pending flags over thousands of rows). Per statement, those rows had
to be told apart by joining the old rows to the new, and PostgreSQL, knowing nothing of a
transition table's size, joined them in a nested loop: 20-30 s for one flag over 6,000 rows.

What each row adds is 0036's (0032's shares, model_cost per project too), and the rows are
pending as before (index/tally.py folds them).
"""

from importlib import import_module

from django.db import migrations

tally = import_module("sessionviewer.migrations.0032_session_tally")
per_project = import_module("sessionviewer.migrations.0036_tally_model_cost_per_project")

IN_PROJECT = per_project.IN_PROJECT
FUNCTIONS = {
    "added": "sessionviewer_session_tally_added",
    "removed": "sessionviewer_session_tally_removed",
    "changed": "sessionviewer_session_tally_changed",
}
_DISTINCT = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in tally.WATCHED)
TRIGGERS = (
    ("session_tally_added", "INSERT", "REFERENCING NEW TABLE AS tally_new FOR EACH STATEMENT", "added"),
    ("session_tally_removed", "DELETE", "REFERENCING OLD TABLE AS tally_old FOR EACH STATEMENT", "removed"),
    ("session_tally_changed", "UPDATE", f"FOR EACH ROW WHEN ({_DISTINCT})", "changed"),
)


def _bodies() -> dict[str, str]:
    def shares(r: str, sign: str, table: str = "") -> str:
        return tally._shares(r, sign, table, in_project=IN_PROJECT)

    return {
        "added": tally._added(shares("r.", "1", "tally_new r")),
        "removed": tally._added(shares("r.", "-1", "tally_old r")),
        "changed": tally._added(shares("OLD.", "-1") + "\nUNION ALL " + shares("NEW.", "1")),
    }


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in tally.DROP:
        schema_editor.execute(statement, params=None)
    for name, body in _bodies().items():
        schema_editor.execute(
            f"CREATE FUNCTION {FUNCTIONS[name]}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"BEGIN\n{body};\nRETURN NULL;\nEND $$",
            params=None,
        )
    for trigger, event, when, name in TRIGGERS:
        schema_editor.execute(
            f"CREATE TRIGGER {trigger} AFTER {event} ON sessionviewer_session {when} "
            f"EXECUTE FUNCTION {FUNCTIONS[name]}()",
            params=None,
        )


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for trigger, _event, _tables, _name in TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON sessionviewer_session", params=None)
    for function in FUNCTIONS.values():
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()", params=None)
    per_project._remake(schema_editor, IN_PROJECT)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0036_tally_model_cost_per_project")]

    operations = [migrations.RunPython(forwards, backwards)]
