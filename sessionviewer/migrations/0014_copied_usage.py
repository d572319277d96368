"""A reply copied into another file is counted once (index/copies.py); every git branch
a session's lines named is kept (the project page's branches).

Sessions that hold a reply another session holds too are read again whole at the next
pass, in place, so that the pass finds their copies, and so are Codex rollouts, whose token
counts now take the model of their turn; the rest stay as they are.
"""

import django.db.models.deletion
import sessionviewer.models
from django.db import migrations, models


def read_sharing_sessions_again(apps, schema_editor):
    Entry = apps.get_model("sessionviewer", "Entry")
    Session = apps.get_model("sessionviewer", "Session")
    shared = (
        Entry.objects.exclude(message_id="")
        .exclude(usage={})
        .values("message_id")
        .annotate(holders=models.Count("session", distinct=True))
        .filter(holders__gt=1)
        .values("message_id")
    )
    holding = Entry.objects.filter(message_id__in=shared).values("session")
    Session.objects.filter(id__in=holding).update(file_size=-1, read_offset=0, read_line=0)
    # Codex's token counts name no model: they now take the model of their turn.
    Session.objects.filter(format="codex").update(file_size=-1, read_offset=0, read_line=0)


class Migration(migrations.Migration):
    dependencies = [
        ("sessionviewer", "0013_session_cost"),
    ]

    operations = [
        migrations.AddField(
            model_name="session",
            name="git_branches",
            field=sessionviewer.models.OrjsonField(default=list),
        ),
        migrations.CreateModel(
            name="CopiedUsage",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("message_id", models.CharField(max_length=256)),
                ("line_key", sessionviewer.models.OrjsonField(default=str)),
                ("tokens", sessionviewer.models.OrjsonField(default=dict)),
            ],
        ),
        migrations.AddIndex(
            model_name="entry",
            index=models.Index(
                condition=models.Q(models.Q(("message_id", ""), _negated=True), models.Q(("usage", {}), _negated=True)),
                fields=["message_id", "session"],
                name="entry_message",
            ),
        ),
        migrations.AddField(
            model_name="copiedusage",
            name="counted_in",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE, related_name="+", to="sessionviewer.session"
            ),
        ),
        migrations.AddField(
            model_name="copiedusage",
            name="session",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="copied_usage",
                to="sessionviewer.session",
            ),
        ),
        migrations.AddIndex(
            model_name="copiedusage",
            index=models.Index(fields=["message_id"], name="copied_usage_message"),
        ),
        migrations.AddConstraint(
            model_name="copiedusage",
            constraint=models.UniqueConstraint(fields=("session", "message_id"), name="copied_usage_once"),
        ),
        # Backwards there is nothing to undo: the rows read again are rows the old code can show.
        migrations.RunPython(read_sharing_sessions_again, migrations.RunPython.noop),
    ]
