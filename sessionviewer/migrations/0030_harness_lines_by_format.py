"""Read again the sessions where Claude Code's harness rules decided another format's lines.

Which user lines a harness wrote (a command, its output, an interruption, a caveat) was
Claude Code's rule for every format: a Codex, pi, OpenClaw, Go agent or Fluux prompt that
looked like one of Claude Code's was hidden as harness text and titled nothing. Each format
now says its own (readers.Format.harness_line), and only Claude Code has harness lines.

What the index kept of those lines (text_facts: the harness kind, index/rows.py) and the
titles folded from them are stale in exactly the other formats' sessions holding a row the
old rule marked, so those are marked changed and not appendable, as 0024 did: the next
pass reads each again whole, in place, keeping the session and its id.
"""

from django.db import migrations
from django.db.models import Exists, F, OuterRef

HARNESS_BITS = 0b111 << 2  # index/rows.py: a harness line's kind, in text_facts


def read_again(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    Entry = apps.get_model("sessionviewer", "Entry")
    marked = Entry.objects.annotate(harness=F("text_facts").bitand(HARNESS_BITS)).filter(
        session_id=OuterRef("id"), harness__gt=0
    )
    stale = Session.objects.exclude(format="claude_code").filter(Exists(marked))
    stale.update(file_size=-1, read_offset=0, read_line=0)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0029_revision_and_audit_machine")]

    # Backwards there is nothing to undo: the rows read again are rows the old code can show.
    operations = [migrations.RunPython(read_again, migrations.RunPython.noop)]
