"""Editor revisions and audit events belong to the machine whose tree they were written on, as
memory snapshots do (0026): two machines' trees at one path are two histories, and a purge
of one rewrites only its own.

Existing rows are named as well as the index can tell. A revision saved since snapshots were
kept has one, recorded with the machine that saved it; an edit's event goes with its revision,
and a purge's event names the machine whose history it rewrote. Any other row goes to the
machine whose source has its root's path, or, when no source has it, to the index's one
machine. Where two machines' sources have the path, or none has claimed one yet, it stays
unclaimed (""): the first indexer that snapshots the path claims it with the snapshots
(MemorySnapshot.claim), so a web host that runs migrate never names them."""

from django.db import migrations, models


def name_machines(apps, schema_editor):
    Revision = apps.get_model("sessionviewer", "Revision")
    AuditEvent = apps.get_model("sessionviewer", "AuditEvent")
    MemorySnapshot = apps.get_model("sessionviewer", "MemorySnapshot")
    Source = apps.get_model("sessionviewer", "Source")
    claimed = Source.objects.exclude(machine="")
    only = set(claimed.values_list("machine", flat=True).distinct())
    at_path: dict[str, str] = {}

    def machine_at(root: str) -> str:
        if root not in at_path:
            machines = set(claimed.filter(path=root).values_list("machine", flat=True).distinct())
            if not machines and not Source.objects.filter(path=root, machine="").exists():
                machines = only
            at_path[root] = machines.pop() if len(machines) == 1 else ""
        return at_path[root]

    saved = MemorySnapshot.objects.exclude(machine="").exclude(revision=None)
    for machine in saved.values_list("machine", flat=True).distinct():
        ids = saved.filter(machine=machine).values("revision_id")
        Revision.objects.filter(id__in=ids).update(machine=machine)
    for root in Revision.objects.filter(machine="").values_list("root", flat=True).distinct():
        if machine := machine_at(root):
            Revision.objects.filter(machine="", root=root).update(machine=machine)

    revision_machines = dict(Revision.objects.values_list("id", "machine"))
    by_machine: dict[str, list[int]] = {}
    for id_, root, detail in AuditEvent.objects.values_list("id", "root", "detail"):
        detail = detail if isinstance(detail, dict) else {}
        machine = detail.get("machine") or revision_machines.get(detail.get("revision")) or machine_at(root)
        if machine:
            by_machine.setdefault(str(machine), []).append(id_)
    for machine, ids in by_machine.items():
        for start in range(0, len(ids), 500):  # under SQLite's limit on parameters
            AuditEvent.objects.filter(id__in=ids[start : start + 500]).update(machine=machine)


class Migration(migrations.Migration):

    dependencies = [
        ("sessionviewer", "0028_search_words_from_the_indexer"),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="revision",
            name="revision_file",
        ),
        migrations.AddField(
            model_name="auditevent",
            name="machine",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.AddField(
            model_name="revision",
            name="machine",
            field=models.CharField(blank=True, default="", max_length=100),
        ),
        migrations.RunPython(name_machines, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name="auditevent",
            index=models.Index(fields=["machine", "root"], name="audit_machine_root"),
        ),
        migrations.AddIndex(
            model_name="revision",
            index=models.Index(
                fields=["machine", "root", "jid", "filename", "-created_at"], name="revision_file"
            ),
        ),
    ]
