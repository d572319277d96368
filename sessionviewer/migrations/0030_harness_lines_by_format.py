"""Read again the sessions where Claude Code's harness rules decided another format's lines.

Which user lines a harness wrote (a command, its output, an interruption, a caveat) was
Claude Code's rule for every format: a Codex, pi, OpenClaw, Go agent or Fluux prompt that
looked like one of Claude Code's was hidden as harness text and titled nothing. Each format
now says its own (readers.Format.harness_line), and only Claude Code has harness lines.

So was Claude Code's rule for blocks with nothing to show (a text that is only a
<system-reminder>). What the index kept of such lines (text_facts, index/rows.py) and the
titles folded from them are stale in the other formats' sessions holding a row the old
rules marked that is not meta; those are marked changed and not appendable, as 0024 did:
the next pass reads each again whole, in place, keeping the session and its id. A meta row
(Codex's <environment_context>, which Claude Code's rule took for its own meta text) is
hidden either way, and titles nothing either way: its session is not read again for it.
"""

from django.db import migrations
from django.db.models import Exists, F, OuterRef, Q

HARNESS_BITS = 0b111 << 2  # index/rows.py: a harness line's kind, in text_facts
ALL_HIDDEN = 2  # index/rows.py: every block of the line has nothing to show


def read_again(apps, schema_editor):
    Session = apps.get_model("sessionviewer", "Session")
    Entry = apps.get_model("sessionviewer", "Entry")
    facts = Entry.objects.annotate(
        harness=F("text_facts").bitand(HARNESS_BITS), hidden=F("text_facts").bitand(ALL_HIDDEN)
    )
    marked = facts.filter(session_id=OuterRef("id"), is_meta=False).filter(
        Q(harness__gt=0) | Q(hidden__gt=0, text__contains="<system-reminder>")
    )
    stale = Session.objects.exclude(format="claude_code").filter(Exists(marked))
    stale.update(file_size=-1, read_offset=0, read_line=0)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0029_revision_and_audit_machine")]

    # Backwards there is nothing to undo: the rows read again are rows the old code can show.
    operations = [migrations.RunPython(read_again, migrations.RunPython.noop)]
