"""A memory snapshot belongs to the machine whose tree it records: two machines' trees at one
path are two histories, as two machines' roots at one path are two sources (0020).

Existing snapshots go to the machine whose source has their root's path, or, when no source
has it, to the index's one machine. Where two machines' sources have the path (their changes
are mixed in one history) or none has claimed one yet, they stay unclaimed (""): the first
indexer that snapshots the path claims them (index/memory.py), so a web host that runs
migrate never names them."""

from django.db import migrations, models


def name_machines(apps, schema_editor):
    MemorySnapshot = apps.get_model("sessionviewer", "MemorySnapshot")
    Source = apps.get_model("sessionviewer", "Source")
    claimed = Source.objects.exclude(machine="")
    only = set(claimed.values_list("machine", flat=True).distinct())
    for root in MemorySnapshot.objects.values_list("root", flat=True).distinct():
        machines = set(claimed.filter(path=root).values_list("machine", flat=True).distinct())
        if not machines and not Source.objects.filter(path=root, machine="").exists():
            machines = only
        if len(machines) == 1:
            MemorySnapshot.objects.filter(root=root).update(machine=machines.pop())


class Migration(migrations.Migration):

    dependencies = [
        ('sessionviewer', '0025_copies_pending'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='memorysnapshot',
            name='snapshot_jid_changed',
        ),
        migrations.RemoveIndex(
            model_name='memorysnapshot',
            name='snapshot_root_current',
        ),
        migrations.AddField(
            model_name='memorysnapshot',
            name='machine',
            field=models.CharField(blank=True, default='', max_length=100),
        ),
        migrations.RunPython(name_machines, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name='memorysnapshot',
            index=models.Index(fields=['machine', 'root', 'jid', '-changed_at'], name='snapshot_jid_changed'),
        ),
        migrations.AddIndex(
            model_name='memorysnapshot',
            index=models.Index(fields=['machine', 'root', 'current'], name='snapshot_root_current'),
        ),
    ]
