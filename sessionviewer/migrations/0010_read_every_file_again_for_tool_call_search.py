"""Read every session file again whole at the next pass.

The searchable text of an entry now holds what its tool calls were given (the
command, the path, the text an edit put in) and its attachments' file names
(readers.Entry.text). Rows written before hold only the tools' names, and the
indexer opens a file only when it changed: this marks every file as changed and
not appendable (read_offset 0), so that the next pass reads each one again whole,
in place, keeping the sessions and their ids.
"""

from django.db import migrations


def read_every_file_again(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    Session.objects.update(file_size=-1, read_offset=0, read_line=0)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0009_fts_merges_less_often")]

    # Backwards there is nothing to undo: the rows read again are rows the old code can show.
    operations = [migrations.RunPython(read_every_file_again, migrations.RunPython.noop)]
