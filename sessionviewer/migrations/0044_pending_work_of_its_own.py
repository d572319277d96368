"""The work a pass owes a session it wrote, in a table of its own (models.PendingWork) rather
than two flags on the session (issue 28).

Clearing the flags after a cold index wrote each session row again, with all fourteen of
its indexes on PostgreSQL (two of them partial indexes on the flags themselves): 0.71 s of
the server's time in the pass's last phase over the history corpus (bench/README.md). The
marks left by a pass cut off before its work move into the table, and back.
"""

import django.db.models.deletion
from django.db import migrations, models

WORKS = (("copies", "copies_pending"), ("links", "links_pending"))
# In place, on both engines: Django's AddField, going back, would rebuild SQLite's session
# table and the list's indexes with it, which SQLite refuses as the ORM writes them (0035).
DROP = 'ALTER TABLE "sessionviewer_session" DROP COLUMN "{}"'
ADD = 'ALTER TABLE "sessionviewer_session" ADD COLUMN "{}" boolean NOT NULL DEFAULT false'


def flags_to_rows(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    PendingWork = apps.get_model("sessionviewer", "PendingWork")
    for work, flag in WORKS:
        ids = Session.objects.filter(**{flag: True}).values_list("id", flat=True)
        PendingWork.objects.bulk_create((PendingWork(session_id=i, work=work) for i in ids.iterator()), 1000)


def rows_to_flags(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    PendingWork = apps.get_model("sessionviewer", "PendingWork")
    for work, flag in WORKS:
        marked = PendingWork.objects.filter(work=work).values("session_id")
        Session.objects.filter(id__in=marked).update(**{flag: True})


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0043_lz4_for_long_values")]

    operations = [
        migrations.CreateModel(
            name="PendingWork",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("work", models.CharField(choices=[("copies", "copies"), ("links", "links")], max_length=8)),
                (
                    "session",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="pending_work",
                        to="sessionviewer.session",
                    ),
                ),
            ],
        ),
        migrations.AddConstraint(
            model_name="pendingwork",
            constraint=models.UniqueConstraint(fields=("session", "work"), name="pending_work_once"),
        ),
        migrations.RunPython(flags_to_rows, rows_to_flags),
        migrations.RemoveIndex(model_name="session", name="session_copies_pending"),
        migrations.RemoveIndex(model_name="session", name="session_links_pending"),
        *(
            migrations.SeparateDatabaseAndState(
                state_operations=[migrations.RemoveField(model_name="session", name=flag)],
                database_operations=[migrations.RunSQL(DROP.format(flag), reverse_sql=ADD.format(flag))],
            )
            for _, flag in WORKS
        ),
    ]
