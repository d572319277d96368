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

Which lines a format's harness writes, and which blocks have nothing to show, are that
format's knowledge (its readers.Format: harness_line, is_hidden_block, compaction_command);
this module only says what the page keeps in sight. Plain Python: no Django.
"""

from __future__ import annotations

from collections.abc import Sequence

from sessionviewer import readers
from sessionviewer.index import rows


def is_noise(entry: readers.Entry, facts: int, rules: readers.Format) -> bool:
    """Whether the page hides this entry until asked to show all entries. facts: what the
    index kept of its text (index.rows.text_facts), for an entry loaded without it, else 0;
    rules: its session's format."""
    kind = entry.kind
    if kind in (readers.COMPACTION, readers.BRANCH, readers.RAW):
        return False  # a line of a type no reader knows stays in sight: it may be what matters
    if kind != readers.MESSAGE:
        return not (_is_error(entry) or entry.extra.get("marker"))  # a marker shows where (a model switch)
    if entry.extra.get("is_compact_summary"):
        return True  # its text is the summary its boundary's banner shows
    if _is_error(entry):
        return False
    harness = _harness_kind(entry, facts, rules)
    if harness is not None:
        return harness not in ("command", "interrupt")  # what the person did stays in sight
    if entry.is_meta:
        return True
    if facts & rows.FACTS_KNOWN:
        return bool(facts & rows.FACTS_ALL_HIDDEN)
    return all(rules.is_hidden_block(block) for block in entry.blocks)  # a message with nothing to show


def _harness_kind(entry: readers.Entry, facts: int, rules: readers.Format) -> str | None:
    if facts & rows.FACTS_KNOWN:
        return rows.harness_kind(facts)
    harness = harness_line(entry, rules)
    return None if harness is None else harness["kind"]


# Who a harness line is from, by its kind (harness_line's): the page's label and the
# export's heading say the same. A kind not named here ("meta": another tag) is a "harness message".
_HARNESS_WHO = {
    "command": "command",
    "output": "command output",
    "caveat": "harness note",
    "interrupt": "interrupted",
}


def harness_who(kind: str) -> str:
    return _HARNESS_WHO.get(kind, "harness message")


def harness_line(entry: readers.Entry, rules: readers.Format) -> dict | None:
    """What a user line the session's harness wrote is (readers.Format.harness_line), or None."""
    return rules.harness_line(entry) if rules.harness_line is not None else None


def is_hidden_block(block: readers.Block, rules: readers.Format) -> bool:
    """A block the page leaves out, by the session's format: blank text or thinking, and in
    Claude Code's a system reminder."""
    return rules.is_hidden_block(block)


def _is_error(entry: readers.Entry) -> bool:
    extra = entry.extra
    return bool(
        extra.get("error_message") or extra.get("stop_reason") == "error" or extra.get("level") == "error"
    )


# How many lines after a compaction boundary its cause is looked for: Claude Code writes the
# boundary, its summary, a caveat, then the /compact command.
CAUSE_WITHIN = 4


def compaction_cause(following: Sequence[readers.Entry], rules: readers.Format) -> int | None:
    """Which of the entries right after a compaction boundary (at most CAUSE_WITHIN) is the
    command that asked for it, shown before the boundary's banner; None if none is."""
    for at, entry in enumerate(following[:CAUSE_WITHIN]):
        if rules.compaction_command is not None and rules.compaction_command(entry):
            return at
        if not is_noise(entry, 0, rules):
            return None  # the conversation went on: a later /compact is another compaction's
    return None
