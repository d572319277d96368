"""A project's sessions newest first, with what its page adds up (issue 28).

The project page lists a page of a project's sessions by updated_at DESC NULLS LAST (as the
ORM writes it), counts its top-level sessions and sums their tokens, cost and days. With
30,000 sessions in a project (bench/load.py's seed) each of those read every session's row:
the page's rows took 91 ms and each sum about 30 ms. This index gives the page in its order,
and on PostgreSQL carries the columns the counts and sums read (INCLUDE), so that they read
the index alone. SQLite refuses NULLS LAST in an index, where DESC already puts nulls last.
"""

from django.db import migrations

NAME = "session_project_updated_id"
# What projects.usage_report and the Activity sums it shares read of each session.
COVERED = (
    "parent_id",
    "source_id",
    "started_at",
    "git_branch",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost",
    "message_count",
    "unpriced_tokens",
)


def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        covered = ", ".join(f'"{name}"' for name in COVERED)
        columns = f'"project", "updated_at" DESC NULLS LAST, "id" DESC) INCLUDE ({covered}'
    else:
        columns = '"project", "updated_at" DESC, "id" DESC'
    schema_editor.execute(f'CREATE INDEX "{NAME}" ON "sessionviewer_session" ({columns})', params=None)


def drop(apps, schema_editor):
    schema_editor.execute(f'DROP INDEX "{NAME}"', params=None)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0030_harness_lines_by_format")]

    operations = [migrations.RunPython(create, drop)]
