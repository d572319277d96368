"""The indexer's updates of many sessions tally their rows themselves, in the statement
(issue 28, PostgreSQL only).

0037's row trigger runs its function once for each row whose counted columns change: the
links of a cold index of the history corpus set ~470 subagents' parents, 0.2 s of plpgsql,
and settling the copies ~100 sessions' totals. index/statements.update_sessions now writes
such a batch in one UPDATE that returns each row's old and new values, and adds both shares
in the same statement (index/tally.py). While it does, it says so in its transaction
(sessionviewer.tally = 'statement'), and the row trigger leaves those rows alone; every other
write (the ORM, a purge, another indexer) is tallied by the trigger as before.
"""

from importlib import import_module

from django.db import migrations

tally = import_module("sessionviewer.migrations.0032_session_tally")
by_statement = import_module("sessionviewer.migrations.0037_tally_by_statement")

# Set, for its transaction, by a statement that tallies its own rows (index/tally.py).
SKIP = "current_setting('sessionviewer.tally', true) IS DISTINCT FROM 'statement'"


def _trigger(when: str) -> str:
    return (
        "CREATE TRIGGER session_tally_changed AFTER UPDATE ON sessionviewer_session "
        f"FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION {by_statement.FUNCTIONS['changed']}()"
    )


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP TRIGGER session_tally_changed ON sessionviewer_session", params=None)
    schema_editor.execute(_trigger(f"{SKIP} AND ({by_statement._DISTINCT})"), params=None)


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute("DROP TRIGGER session_tally_changed ON sessionviewer_session", params=None)
    schema_editor.execute(_trigger(by_statement._DISTINCT), params=None)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0037_tally_by_statement")]

    operations = [migrations.RunPython(forwards, backwards)]
