"""Keep what a thread's layout needs of an entry's text beside the row (Entry.text_facts),
so that the thread snapshot of a long session is built without loading its text.

Rows written before hold 0, "not known": their text is read for them instead, so nothing
needs reading again. On SQLite the column is added in place: Django would rebuild the
table, and dropping the old one drops the full-text index's triggers with it.
"""

from django.db import migrations, models


def _field() -> models.Field:
    # The state without the field yet: database operations run before the state ones.
    field = models.PositiveSmallIntegerField(default=0)
    field.set_attributes_from_name("text_facts")
    return field


def add_column(apps, schema_editor):
    Entry = apps.get_model("sessionviewer", "Entry")
    if schema_editor.connection.vendor == "sqlite":
        table = schema_editor.quote_name(Entry._meta.db_table)
        schema_editor.execute(
            f'ALTER TABLE {table} ADD COLUMN "text_facts" smallint unsigned NOT NULL DEFAULT 0 '
            'CHECK ("text_facts" >= 0)'
        )
    else:
        schema_editor.add_field(Entry, _field())


def drop_column(apps, schema_editor):
    Entry = apps.get_model("sessionviewer", "Entry")
    schema_editor.remove_field(Entry, Entry._meta.get_field("text_facts"))  # the state has it, backwards


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0015_memory_snapshots")]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddField(
                    model_name="entry",
                    name="text_facts",
                    field=models.PositiveSmallIntegerField(default=0),
                ),
            ],
            database_operations=[migrations.RunPython(add_column, drop_column)],
        )
    ]
