"""A project is the same project on every machine: its key is its path with the user's home
folded to "~" (index/fold.py's fold_home), so the projects already indexed are folded too.
One UPDATE per distinct project: a few hundred at most, whatever the number of sessions."""

from django.db import migrations

from sessionviewer.index.fold import fold_home

# The formats whose working directory made a project when this was written (now each
# format's readers.Format.makes_projects says).
PROJECT_FORMATS = ("claude_code", "go_agent", "openclaw", "pi", "codex")


def fold_projects(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    sessions = Session.objects.filter(format__in=PROJECT_FORMATS)
    for project in sessions.exclude(project="").values_list("project", flat=True).distinct().order_by():
        if (folded := fold_home(project)) != project:
            sessions.filter(project=project).update(project=folded)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0021_key_check")]

    operations = [migrations.RunPython(fold_projects, migrations.RunPython.noop)]
