"""A session written by a pass says so until its root's links are made (index/links.py): a
pass cut off between its groups and its links left subagents without their parent and
summary lines without the session they title, and no later pass read those files again.
Existing sessions are linked (False)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0026_memory_snapshot_machine'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='links_pending',
            field=models.BooleanField(default=False),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(condition=models.Q(('links_pending', True)), fields=['source', 'links_pending'], name='session_links_pending'),
        ),
    ]
