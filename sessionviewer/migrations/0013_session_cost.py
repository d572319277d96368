"""Cost per session: its tokens by model, day and context size, and their price.

The lines come from reading the files (index/fold.py), so every file is read again
whole at the next pass, in place, keeping the sessions and their ids (as 0010 does).
"""

from django.db import migrations, models

import sessionviewer.models


def read_every_file_again(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    Session.objects.update(file_size=-1, read_offset=0, read_line=0)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0012_revisions_keep_exact_bytes")]

    operations = [
        migrations.AddField(
            model_name="session",
            name="cost",
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="session",
            name="unpriced_tokens",
            field=models.BigIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="session",
            name="model_costs",
            field=sessionviewer.models.OrjsonField(default=dict),
        ),
        migrations.AddField(
            model_name="session",
            name="usage_lines",
            field=sessionviewer.models.OrjsonField(default=dict),
        ),
        # Backwards there is nothing to undo: the rows read again are rows the old code can show.
        migrations.RunPython(read_every_file_again, migrations.RunPython.noop),
    ]
