"""What the transcript page shows before anyone asks for more: the conversation first.

Two rules, both computed once per built thread (store.py keeps them with its snapshot):

- Noise is hidden until the reader switches on "show all entries": the harness's bookkeeping
  (progress and hook lines, file-history snapshots, queue operations, session headers,
  setting changes but those a reader marks, such as a model switch), meta and
  system-reminder lines, local-command caveats and output, and the compaction summary
  line that its boundary's banner already shows. A line of a type no
  reader knows is not noise: it shows.
- Each compaction boundary gets one fold holding what it compacted away; the first prompt
  stays outside the first fold, so a page opens on what the person asked for.

Which lines a format's harness writes is that format's reader's knowledge
(``claude_code.harness_line``, ``claude_code.is_reminder``); this module only says what the
page keeps in sight. Plain Python: no Django.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence

from sessionviewer import readers
from sessionviewer.readers import claude_code


def is_noise(entry: readers.Entry, facts: int = 0) -> bool:
    """Whether the page hides this entry until asked to show all entries. facts: what the
    index kept of its text (claude_code.text_facts), for an entry loaded without it."""
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
    if facts & claude_code.FACTS_KNOWN:
        return bool(facts & claude_code.FACTS_ALL_HIDDEN)
    return all(is_hidden_block(block) for block in entry.blocks)  # a message with nothing to show


def _harness_kind(entry: readers.Entry, facts: int) -> str | None:
    if facts & claude_code.FACTS_KNOWN:
        return claude_code.harness_kind(facts)
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


def is_prompt(entry: readers.Entry, facts: int = 0) -> bool:
    """A prompt a person typed, as the index's titles read one (Entry.is_prompt, no harness
    line), that the page shows (not noise)."""
    return entry.is_prompt and _harness_kind(entry, facts) is None and not is_noise(entry, facts)


def first_prompt(
    entries: Iterable[readers.Entry], facts: Callable[[readers.Entry], int] | None = None
) -> int | None:
    """The index of the first prompt among entries, if any; facts as is_noise takes them."""
    if facts is None:
        return next((i for i, entry in enumerate(entries) if is_prompt(entry)), None)
    return next((i for i, entry in enumerate(entries) if is_prompt(entry, facts(entry))), None)


def fold_ranges(
    compacted: Iterable[int], compactions: Iterable[int], noise: frozenset[int], prompt: int | None
) -> list[tuple[int, int]]:
    """Item ranges [start, stop) shown folded: the runs of compacted items, one per compaction
    boundary (a boundary inside a run ends one fold and shows as its banner), without the
    first prompt. A range of nothing but noise is no fold: there is nothing to show in it."""
    cuts = set(compactions)
    if prompt is not None:
        cuts.add(prompt)
    ranges: list[tuple[int, int]] = []
    start = previous = None
    # A range is sorted already: a long thread's compacted items are most of it.
    for index in compacted if isinstance(compacted, range) else sorted(compacted):
        if index in cuts or (previous is not None and index != previous + 1):
            if start is not None:
                ranges.append((start, previous + 1))
            start = None
        if index not in cuts and start is None:
            start = index
        previous = index
    if start is not None:
        ranges.append((start, previous + 1))
    return [(a, b) for a, b in ranges if any(i not in noise for i in range(a, b))]


class Folds:
    """Sorted fold ranges, asked where an item is."""

    def __init__(self, ranges: Sequence[tuple[int, int]]):
        self.ranges = list(ranges)
        self.starts = [a for a, _ in self.ranges]
        self.stop_of = dict(self.ranges)

    def __iter__(self):
        return iter(self.ranges)

    def __len__(self) -> int:
        return len(self.ranges)

    def around(self, index: int) -> tuple[int, int] | None:
        """The fold holding index, if any."""
        at = bisect_right(self.starts, index) - 1
        if at >= 0 and index < self.ranges[at][1]:
            return self.ranges[at]
        return None
