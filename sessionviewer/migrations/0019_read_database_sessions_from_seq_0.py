"""Read OpenClaw's database sessions again whole at the next pass.

OpenClaw numbers a session's events from seq 0, and the reader read only the events after
the last seq it had read, with 0 standing for "nothing read": every database session lost
its first event (its header, which names the working folder). A session's offset is now one
past the last seq read (readers/openclaw_store.py), so this marks each database session
changed and not appendable (read_offset 0): the next pass reads it again whole, in place,
keeping the session and its id. Sessions read from files stay as they are.
"""

from django.db import migrations


def read_database_sessions_again(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    # "<database>#<session id>" and archives' "<database>#<session id>#<generation>".
    database_sessions = Session.objects.filter(format="openclaw", path__contains="openclaw-agent.sqlite#")
    database_sessions.update(file_size=-1, read_offset=0, read_line=0)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0018_thread_pieces")]

    # Backwards there is nothing to undo: the rows read again are rows the old code can show.
    operations = [migrations.RunPython(read_database_sessions_again, migrations.RunPython.noop)]
