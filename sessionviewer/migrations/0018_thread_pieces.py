"""Thread snapshots kept in pieces (ThreadPiece): a first screen reads only its pieces, and an
append rewrites only the last. Snapshots of the earlier layout are built again when next used."""

import django.db.models.deletion
import sessionviewer.models
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0017_memory_findings'),
    ]

    operations = [
        migrations.CreateModel(
            name='ThreadPiece',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('number', models.IntegerField()),
                ('data', sessionviewer.models.OrjsonField()),
                ('snapshot', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='pieces', to='sessionviewer.threadsnapshot')),
            ],
            options={
                'constraints': [models.UniqueConstraint(fields=('snapshot', 'number'), name='piece_snapshot_number')],
            },
        ),
    ]
