"""Read OpenClaw's sessions again whole at the next pass, and cut long titles on a word.

The OpenClaw reader now keeps what its gateway adds to a message apart from the text (the
sender's metadata, reply directives), shows a run that failed before any reply, marks a
tool's failure, titles a session by what a person said rather than a heartbeat, and tells
pi's own sessions apart (format "pi"). The indexer opens a file only when it changed: this
marks each OpenClaw session changed and not appendable (read_offset 0), so the next pass
reads it again whole, in place, keeping the session and its id.

Titles of the other formats were cut at 200 characters inside a word (index/fold.py,
title_of); one that long is cut again here on its last word, with an ellipsis, as a new
one is: no file needs reading for that.
"""

from django.db import migrations
from django.db.models.functions import Length

TITLE_LENGTH = 200  # index/fold.py's, when this migration was written


def _cut(title: str) -> str:
    # fold.cut_title as it was written then, for a title already cut at TITLE_LENGTH.
    head = title[: TITLE_LENGTH - 1]
    if title[TITLE_LENGTH - 1].isspace():
        return head.rstrip() + "…"
    space = head.rfind(" ")
    if space >= TITLE_LENGTH // 2:
        head = head[:space]
    return head.rstrip() + "…"


def read_openclaw_again_and_cut_titles(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    Session.objects.filter(format="openclaw").update(file_size=-1, read_offset=0, read_line=0)
    others = Session.objects.exclude(format="openclaw")
    for field in ("first_prompt", "summary_title"):
        cut = others.annotate(length=Length(field)).filter(length=TITLE_LENGTH)
        for session in cut.only("id", field).iterator():
            setattr(session, field, _cut(getattr(session, field)))
            session.save(update_fields=[field])


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0023_search_words_as_fts5_reads_them")]

    # Backwards there is nothing to undo: the rows read again are rows the old code can show.
    operations = [migrations.RunPython(read_openclaw_again_and_cut_titles, migrations.RunPython.noop)]
