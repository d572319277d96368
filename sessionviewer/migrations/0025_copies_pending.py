"""A session read whole says so until its copies are settled (index/copies.count_once_pending):
a pass cut off between its writes and its copies left replies counted twice, and no later
pass read those files again. Existing sessions are settled (False)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0024_read_openclaw_again_and_cut_titles_on_words'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='copies_pending',
            field=models.BooleanField(default=False),
        ),
        migrations.AddIndex(
            model_name='session',
            index=models.Index(condition=models.Q(('copies_pending', True)), fields=['copies_pending'], name='session_copies_pending'),
        ),
    ]
