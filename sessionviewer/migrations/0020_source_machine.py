"""A root belongs to a machine: its identity is (machine, path).

The roots already indexed stay without one (""): the first indexer that indexes one of
those paths claims it with its sessions (index/passes.py), so a web host that runs
migrate never names them."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0019_read_database_sessions_from_seq_0'),
    ]

    operations = [
        migrations.AddField(
            model_name='source',
            name='machine',
            field=models.CharField(blank=True, default='', max_length=100),
        ),
        migrations.AlterField(
            model_name='source',
            name='path',
            field=models.CharField(max_length=1024),
        ),
        migrations.AddConstraint(
            model_name='source',
            constraint=models.UniqueConstraint(fields=('machine', 'path'), name='source_machine_path'),
        ),
    ]
