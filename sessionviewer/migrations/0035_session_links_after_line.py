"""Which of a pending session's summary lines still wait to be linked (index/links.py): the
next pass applied them all again, so an older title could win over another file's newer
one. A session pending at the upgrade has 0: all its lines, as before.

The column is added in place, on both engines: Django's AddField would rebuild SQLite's
session table, and with it the list's indexes, which SQLite refuses as the ORM writes them
(0032: DESC NULLS LAST)."""

from django.db import migrations, models

ADD = (
    'ALTER TABLE "sessionviewer_session" ADD COLUMN "links_after_line" integer NOT NULL DEFAULT 0 '
    'CHECK ("links_after_line" >= 0)'
)
DROP = 'ALTER TABLE "sessionviewer_session" DROP COLUMN "links_after_line"'


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0034_session_findings")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="session",
                    name="links_after_line",
                    field=models.PositiveIntegerField(default=0),
                )
            ],
            database_operations=[migrations.RunSQL(ADD, reverse_sql=DROP)],
        )
    ]
