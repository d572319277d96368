"""The two roles: viewers read transcripts, workspaces and memory; editors also write."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

VIEW = [("sessionviewer", "view_session"), ("sessionviewer", "view_workspace")]
EDIT = [*VIEW, ("sessionviewer", "edit_workspace")]


def create_groups(apps, schema_editor):
    # Permissions are normally created after migrations; the groups need them now.
    for config in apps.get_app_configs():
        config.models_module = True
        create_permissions(config, verbosity=0, apps=apps)
        config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for name, perms in (("viewers", VIEW), ("editors", EDIT)):
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(
            [Permission.objects.get(content_type__app_label=app, codename=code) for app, code in perms]
        )


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=["viewers", "editors"]).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sessionviewer", "0003_revisions_and_audit"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
