"""Keep the exact bytes of both sides of a revision.

The text columns hold what a page shows: a file that is not UTF-8 came out of them with
U+FFFD in place of its bytes, and CRLF saves were kept as LF, so a restore could not give
the file back as it was. Revisions saved before this one keep their text only.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0011_session_index_error")]

    operations = [
        migrations.AddField(
            model_name="revision",
            name="before_bytes",
            field=models.BinaryField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="revision",
            name="after_bytes",
            field=models.BinaryField(blank=True, null=True),
        ),
    ]
