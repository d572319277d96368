"""The entries' foreign key to their session, kept by the indexer's writer and triggers
(issue 28, PostgreSQL only).

Django makes a foreign key DEFERRABLE INITIALLY DEFERRED, and PostgreSQL checks it with a
row trigger: each entry queued an event, and at COMMIT each event looked its session up and
locked it (KEY SHARE). A cold index of the history corpus (154,980 entries) paid 1.5-2.5 s
of the server's time in its commits for that alone (bench/README.md), on the one core its
connection runs on. A statement trigger reading the new rows from a transition table was
tried first: the transition table holds a copy of every row written, and the entries' COPY
took as much longer as the commits saved.

What the key guaranteed is kept:
- the one writer of entries (statements.write_files) locks the sessions it writes to
  against their delete (KEY SHARE, as the key's check did), in one statement per group of
  files, and refuses to write when one is gone, with the key's error;
- a delete of sessions fails when an entry still names one of them (a statement trigger,
  over the delete's transition table, which the tally's trigger already makes). Django
  deletes a session's entries before the session (its collector's fast delete);
- an update that moves an entry to another session, or changes a session's id, is checked
  per row (nothing does either; a WHEN leaves every other update out).

So a purge racing an indexer that appends to the session still fails instead of leaving
entries without a session: whichever locks or deletes the session first, the other waits for
it, then finds it gone (the write fails) or finds the committed entries (the delete fails).
tests/test_entry_session.py races them on a real server.

SQLite keeps its foreign key (its check costs little), and the model's field still says
db_constraint, so nothing changes there.
"""


from django.db import migrations

TABLE, SESSIONS = "sessionviewer_entry", "sessionviewer_session"
FOREIGN_KEY = "sessionviewer_entry_session_id_4a2b5994_fk_sessionvi"

# (trigger, table, when, function)
TRIGGERS = (
    ("entry_session_moved", TABLE, "BEFORE UPDATE OF session_id",
     "FOR EACH ROW WHEN (NEW.session_id IS DISTINCT FROM OLD.session_id)", "sessionviewer_entry_session_moved"),
    ("session_entries_left", SESSIONS, "AFTER DELETE", "REFERENCING OLD TABLE AS session_old FOR EACH STATEMENT",
     "sessionviewer_session_entries_left"),
    ("session_id_changed", SESSIONS, "BEFORE UPDATE OF id", "FOR EACH ROW WHEN (NEW.id IS DISTINCT FROM OLD.id)",
     "sessionviewer_session_id_changed"),
)  # fmt: skip


def _missing(session_ids: str) -> str:
    """Lock the sessions named (in id order, so that two writers never wait on each other
    crosswise), then fail if one is not there: a delete that committed first is not locked."""
    return f"""
    PERFORM 1 FROM {SESSIONS} s WHERE s.id IN ({session_ids}) ORDER BY s.id FOR KEY SHARE OF s;
    SELECT n.session_id INTO missing FROM ({session_ids}) n (session_id)
    WHERE NOT EXISTS (SELECT 1 FROM {SESSIONS} s WHERE s.id = n.session_id) LIMIT 1;
    IF FOUND THEN
        RAISE foreign_key_violation USING
            MESSAGE = 'insert or update on table "{TABLE}" violates foreign key constraint "{FOREIGN_KEY}"',
            DETAIL = format('Key (session_id)=(%s) is not present in table "{SESSIONS}".', missing);
    END IF;"""


def _still_named(session_ids: str) -> str:
    return f"""
    SELECT e.session_id INTO missing FROM {TABLE} e WHERE e.session_id IN ({session_ids}) LIMIT 1;
    IF FOUND THEN
        RAISE foreign_key_violation USING
            MESSAGE = 'update or delete on table "{SESSIONS}" violates foreign key constraint '
                      '"{FOREIGN_KEY}" on table "{TABLE}"',
            DETAIL = format('Key (id)=(%s) is still referenced from table "{TABLE}".', missing);
    END IF;"""


BODIES = {
    "sessionviewer_entry_session_moved": (_missing("SELECT NEW.session_id"), "NEW"),
    "sessionviewer_session_entries_left": (_still_named("SELECT id FROM session_old"), "NULL"),
    "sessionviewer_session_id_changed": (_still_named("SELECT OLD.id"), "NEW"),
}


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:  # Django's name for it, whatever made it
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = %s::regclass "
            "AND confrelid = %s::regclass",
            [TABLE, SESSIONS],
        )
        keys = [name for (name,) in cursor.fetchall()]
    for key in keys:
        schema_editor.execute(f'ALTER TABLE {TABLE} DROP CONSTRAINT "{key}"', params=None)
    for function, (body, returned) in BODIES.items():
        schema_editor.execute(
            f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"DECLARE missing bigint;\nBEGIN{body}\nRETURN {returned};\nEND $$",
            params=None,
        )
    for trigger, table, event, when, function in TRIGGERS:
        schema_editor.execute(f"CREATE TRIGGER {trigger} {event} ON {table} {when} EXECUTE FUNCTION {function}()",
                              params=None)  # fmt: skip


def backwards(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for trigger, table, _event, _when, _function in TRIGGERS:
        schema_editor.execute(f"DROP TRIGGER IF EXISTS {trigger} ON {table}", params=None)
    for function in BODIES:
        schema_editor.execute(f"DROP FUNCTION IF EXISTS {function}()", params=None)
    schema_editor.execute(
        f"ALTER TABLE {TABLE} ADD CONSTRAINT {FOREIGN_KEY} FOREIGN KEY (session_id) "
        f"REFERENCES {SESSIONS} (id) DEFERRABLE INITIALLY DEFERRED",
        params=None,
    )


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0041_tally_folds")]
    operations = [migrations.RunPython(forwards, backwards, elidable=False)]
