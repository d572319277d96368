"""What the transcript page shows before anyone asks for more: the conversation first.

Two rules, both computed once per built thread (store.py keeps them with its snapshot):

- Noise is hidden until the reader switches on "show all entries": the harness's bookkeeping
  (progress and hook lines, file-history snapshots, queue operations, session headers,
  setting changes but those a reader marks, such as a model switch), meta and
  system-reminder lines, local-command caveats and output, and the compaction summary
  line that its boundary's banner already shows. A line of a type no
  reader knows is not noise: it shows.
- Nothing is folded away: a compaction changes what the model remembers, not what happened,
  so it shows where it happened, as a banner, with the command that asked for it
  (``compaction_cause``) just before it rather than after it, where the harness writes it.

Which lines a format's harness writes is that format's reader's knowledge
(``claude_code.harness_line``, ``claude_code.is_reminder``); this module only says what the
page keeps in sight. Plain Python: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionviewer import readers
from sessionviewer.index import rows
from sessionviewer.readers import claude_code


def is_noise(entry: readers.Entry, facts: int = 0) -> bool:
    """Whether the page hides this entry until asked to show all entries. facts: what the
    index kept of its text (index.rows.text_facts), for an entry loaded without it."""
    kind = entry.kind
    if kind in (readers.COMPACTION, readers.BRANCH, readers.RAW):
        return False  # a line of a type no reader knows stays in sight: it may be what matters
    if kind != readers.MESSAGE:
        return not (_is_error(entry) or entry.extra.get("marker"))  # a marker shows where (a model switch)
    if entry.extra.get("is_compact_summary"):
        return True  # its text is the summary its boundary's banner shows
    if _is_error(entry):
        return False
    harness = _harness_kind(entry, facts)
    if harness is not None:
        return harness not in ("command", "interrupt")  # what the person did stays in sight
    if entry.is_meta:
        return True
    if facts & rows.FACTS_KNOWN:
        return bool(facts & rows.FACTS_ALL_HIDDEN)
    return all(is_hidden_block(block) for block in entry.blocks)  # a message with nothing to show


def _harness_kind(entry: readers.Entry, facts: int) -> str | None:
    if facts & rows.FACTS_KNOWN:
        return rows.harness_kind(facts)
    harness = claude_code.harness_line(entry)
    return None if harness is None else harness["kind"]


def is_hidden_block(block: readers.Block) -> bool:
    """A block the page leaves out: text that is only whitespace or a system reminder,
    thinking with nothing written."""
    return claude_code.is_hidden_block(block)


def _is_error(entry: readers.Entry) -> bool:
    extra = entry.extra
    return bool(
        extra.get("error_message") or extra.get("stop_reason") == "error" or extra.get("level") == "error"
    )


# How many lines after a compaction boundary its cause is looked for: Claude Code writes the
# boundary, its summary, a caveat, then the /compact command.
CAUSE_WITHIN = 4


def compaction_cause(following: Sequence[readers.Entry]) -> int | None:
    """Which of the entries right after a compaction boundary (at most CAUSE_WITHIN) is the
    command that asked for it, shown before the boundary's banner; None if none is."""
    for at, entry in enumerate(following[:CAUSE_WITHIN]):
        if claude_code.is_compact_command(entry):
            return at
        if not is_noise(entry):
            return None  # the conversation went on: a later /compact is another compaction's
    return None
