"""Record on a session why its file could not be indexed.

A file whose reading or writing fails no longer stops the pass (indexer._record_failure):
the error is kept on its session, for the list and the session page to show, until a
pass indexes the file.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0010_read_every_file_again_for_tool_call_search'),
    ]

    operations = [
        migrations.AddField(
            model_name='session',
            name='index_error',
            field=models.TextField(blank=True, default=''),
        ),
    ]
