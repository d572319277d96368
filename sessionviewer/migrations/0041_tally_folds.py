"""How many times the tally's pending rows have been folded (models.TallyFolds), issue 28's load.

A web process keeps the session counts it read from the tally (tallies.py) until they may
have changed: until the fold count or the pending rows' session counts move. The row is made
by the first fold that takes away a session count; the table stays empty on SQLite, which keeps
no tally.

Stop every indexer before migrating, and start them again on this version: an indexer of the
old code would fold without counting it, and web processes could keep counts it changed.
"""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessionviewer", "0040_tally_total"),
    ]

    operations = [
        migrations.CreateModel(
            name="TallyFolds",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("folds", models.BigIntegerField(default=0)),
            ],
        ),
    ]
