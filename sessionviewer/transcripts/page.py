"""The transcript page: its rows and groups, the items of one chunk, the API's view of a thread,
and the page's query-string parameters."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field

from sessionviewer import readers, search, threads
from sessionviewer.models import Session
from sessionviewer.transcripts import layout, tools
from sessionviewer.transcripts.store import (
    LazyItems,
    Transcript,
    find_positions,
    first_item_after,
    item_line,
    results_crossing,
    transcript,
    transcript_with_entry,
)


def thread_to_dict(
    session: Session, thread: threads.Thread, text_url: TextUrl, offset: int = 0, limit: int | None = None
) -> dict:
    """The API's view of a thread; offset/limit select a slice of its entries (all by default).
    text_url(line, block): where a text cut at TEXT_LIMIT is whole (the view's links)."""
    stop = len(thread.items) if limit is None else min(offset + limit, len(thread.items))
    return {
        "total": len(thread.items),
        "offset": offset,
        "session": session.to_dict(),
        "leaf": thread.leaf_id,
        "leaves": thread.leaves,
        "problems": [p.to_dict() for p in session.problems.order_by("line")],
        "thread_problems": thread.problems,
        "children": [
            {"id": c.id, "title": c.display_title, "kind": c.kind, "parent_tool_id": c.parent_tool_id}
            for c in session.children.order_by("id")
        ],
        "entries": [item_to_dict(thread.items[i], text_url) for i in range(offset, stop)],
    }


# A block's text past this many characters shows folded and cut, on the page and in the API:
# the rest comes on request (views.pages.entry_text), so one 60 MB line is never sent whole.
TEXT_LIMIT = 100_000
TextUrl = Callable[[int, int], str]


def _cut_long_texts(entry: readers.Entry, data: dict, text_url: TextUrl) -> None:
    """The API's entry with each text past TEXT_LIMIT cut: "truncated" and "length" say so,
    and "text_url" gives the whole text."""
    if len(data["text"]) > TEXT_LIMIT:
        data["text"], data["text_truncated"] = data["text"][:TEXT_LIMIT], True
    for at, block in enumerate(data["blocks"]):
        text = block.get("text", "")
        if len(text) > TEXT_LIMIT:
            block["text"], block["truncated"], block["length"] = text[:TEXT_LIMIT], True, len(text)
            block["text_url"] = text_url(entry.line, at)


def item_to_dict(item: threads.ThreadItem, text_url: TextUrl) -> dict:
    data = item.entry.to_dict()
    _cut_long_texts(item.entry, data, text_url)
    data["compacted"] = item.compacted
    if item.alternatives:
        data["alternatives"] = item.alternatives
    return data


PROBLEM_LIMIT = 500
CHUNK = 50  # messages per fetch as the reader scrolls, and around a permalink
# Messages on the page a session opens on: more than a screen holds, and nothing folded away
# any more, so a long session's first page costs what these do.
FIRST_SCREEN = 20

_ANCHOR_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def anchor(entry_id: str) -> str:
    """A stable, HTML- and CSS-safe element id for an entry id: other characters as _hex_."""
    if _ANCHOR_SAFE.issuperset(entry_id):  # most ids (UUIDs): one pass in C, not one a character
        return "entry-" + entry_id
    return "entry-" + "".join(c if c in _ANCHOR_SAFE else f"_{ord(c):x}_" for c in entry_id)


def result_slot(call_id: str) -> str:
    """The element id of the place a tool call keeps for its result while it has none."""
    return "result-of-" + anchor(call_id).removeprefix("entry-")


@dataclass(slots=True)
class LateResult:
    """A tool result that live polling brought for a call the page already shows:
    it takes the place the call kept for it (an out-of-band swap)."""

    slot: str
    position: tuple[int, int]  # the result's (item, block) in the transcript
    result: readers.Block
    result_entry: readers.Entry
    result_anchor: str = ""


@dataclass(slots=True)
class Piece:
    """One block of an entry as the page shows it, with its tool result when paired."""

    block: readers.Block
    result: readers.Block | None = None
    result_entry: readers.Entry | None = None
    result_anchor: str = ""  # set on the first absorbed result of an entry: its permalink
    children: list = field(default_factory=list)  # subagent sessions started by this call
    # An edit's file as a later Read showed it, by line number: where the edit landed.
    later_lines: dict[int, str] = field(default_factory=dict)
    rules: readers.Format | None = None  # the session's format: what its tools' results say
    line: int = 0  # the line of the entry holding the block, and its place there: where
    at: int = 0  # the rest of a long text is asked for (TEXT_LIMIT)


@dataclass(slots=True)
class Row:
    """One message on the page: a thread item, with the items that continue the same reply
    (Claude Code writes each block of one message.id as its own line)."""

    item: threads.ThreadItem
    index: int
    anchor: str
    pieces: list[Piece]
    hidden: bool  # every block was shown under its call: no row of its own
    role_class: str
    anchors: list[str] = field(default_factory=list)  # the other lines shown in this row
    usage_entry: readers.Entry | None = None  # the reply's last line with usage: the turn's
    noise: bool = False  # hidden by default, shown here (all entries, or a permalink to it)
    compaction_number: int = 0  # 1 for the thread's first compaction boundary, and so on
    jump_anchor: str = ""  # "compaction-N" on the first row a jump to compaction N shows

    @property
    def entry(self) -> readers.Entry:
        return self.item.entry

    @property
    def usage(self) -> dict:
        return (self.usage_entry or self.entry).usage

    @property
    def show_usage(self) -> bool:
        return any(isinstance(v, int | float) and v for v in self.usage.values())

    @property
    def branches(self) -> dict | None:
        """The switcher at a branch point: position, count, neighbours and every alternative."""
        alternatives, current = self.item.alternatives, self.item.current
        if not alternatives:
            return None
        return {
            "position": None if current is None else current + 1,
            "count": len(alternatives),
            "prev": alternatives[current - 1] if current else None,
            "next": alternatives[current + 1]
            if current is not None and current + 1 < len(alternatives)
            else None,
            "all": [(n + 1, leaf, n == current) for n, leaf in enumerate(alternatives)],
        }

    @property
    def compaction(self) -> dict:
        """Trigger and token counts of a compaction, whatever the format calls them."""
        extra = self.entry.extra
        return {
            "trigger": extra.get("trigger") or "",
            "before": extra.get("preTokens") or extra.get("tokens_before") or extra.get("tokensBefore"),
            "after": extra.get("postTokens") or extra.get("tokens_after") or extra.get("tokensAfter"),
        }

    @property
    def usage_total(self) -> int:
        return sum(int(v or 0) for v in self.usage.values() if isinstance(v, int | float))

    # Plain properties rather than lookups into extra/usage in the template: a key the
    # dict lacks costs Django an exception per row, and a long export has thousands.
    @property
    def usage_title(self) -> str:
        usage = self.usage
        return " · ".join(
            f"{label} {usage.get(key) or 0}"
            for key, label in (
                ("input", "input"),
                ("output", "output"),
                ("cache_read", "cache read"),
                ("cache_write", "cache write"),
            )
        )

    @property
    def error_message(self) -> str:
        return str(self.entry.extra.get("error_message") or "")

    @property
    def stop_reason(self) -> str:
        return str(self.entry.extra.get("stop_reason") or "")

    @property
    def provider(self) -> str:
        """The provider the reply came from, where the format records one (Go agent, OpenClaw)."""
        provider = self.entry.extra.get("provider")
        return provider if isinstance(provider, str) else ""


@dataclass(slots=True)
class Group:
    """Rows in page order."""

    rows: list[Row]


@dataclass(slots=True)
class Chunk:
    """The groups of a stretch of items, and the item after the last one it took."""

    groups: list[Group]
    stop: int


def role_class(entry: readers.Entry) -> str:
    if entry.kind == readers.COMPACTION:
        return "compaction"
    if entry.kind == readers.RAW:
        return "unknown"  # a line of a type its reader does not know: shown as its raw JSON
    if entry.extra.get("is_compact_summary"):
        return "compact-summary"
    if entry.kind != readers.MESSAGE:
        return "meta"
    if entry.role == readers.TOOL or any(b.type == readers.TOOL_RESULT for b in entry.blocks):
        return "tool"
    return entry.role or "meta"


def rows_for(
    t: Transcript,
    start: int,
    stop: int,
    children_by_tool: dict[str, list] | None = None,
    absorb_from: int | None = 0,
    target: str = "",
    shown_with_call: frozenset[tuple[int, int]] = frozenset(),
    *,
    show_all: bool = False,
    limit: int | None = None,
) -> Chunk:
    """The groups of items[start:stop], at most limit messages (and the rest of the last reply).

    A tool result whose call is at absorb_from or later is shown under its call instead of
    on its own; None shows every result on its own. shown_with_call: (item, block) results
    shown under a call elsewhere (live updates: LateResult). Noise is left out unless
    show_all, or target names it. A compaction shows where it happened, the command that
    asked for it just before its banner (wherever the chunk ends), not after it.
    """
    items = t.items
    stop = min(stop, len(items))
    children_by_tool = children_by_tool or {}
    at_target = t.positions.get(target) if target else None
    numbers = {at: n for n, at in enumerate(t.compactions, 1)}
    if limit is not None and isinstance(items, LazyItems):
        items.prefetch(_planned(t, start, stop, 2 * limit, show_all))
    rows: list[Row] = []
    last: Row | None = None  # the last message shown: a line of the same reply joins it
    shown = 0
    i = start
    while i < stop:
        noise = i in t.noise
        if (noise and not show_all and i != at_target) or _moved_before_compaction(t, i):
            if (
                last is not None
                and last.entry.message_id
                and items[i].entry.message_id == last.entry.message_id
            ):
                last.anchors.append(anchor(items[i].entry.id))  # a line of the reply that shows nothing
            elif (
                last is not None
                and last.role_class == readers.ASSISTANT
                and not last.usage
                and items[i].entry.usage
            ):
                # A format that writes a turn's usage on a line of its own (Codex's token
                # counts): the hidden line's usage shows in the header of the reply it follows.
                last.usage_entry = items[i].entry
            i += 1
            continue
        row = _row(t, i, children_by_tool, absorb_from, shown_with_call, show_all)
        entry = row.entry
        if (
            last is not None
            and entry.message_id
            and entry.message_id == last.entry.message_id
            and row.role_class == last.role_class
        ):
            last.pieces.extend(row.pieces)  # one reply, one message
            last.anchors.append(row.anchor)
            if entry.usage:
                last.usage_entry = entry
            i += 1
            continue
        if not row.hidden and limit is not None and shown >= limit:
            break
        row.noise = noise
        if i in numbers:
            row.compaction_number = numbers[i]
            if (cause := _compaction_cause(t, i)) is not None:
                before = _row(t, cause, children_by_tool, absorb_from, shown_with_call, show_all)
                before.jump_anchor = f"compaction-{numbers[i]}"
                rows.append(before)
            else:
                row.jump_anchor = f"compaction-{numbers[i]}"
        rows.append(row)
        if not row.hidden:
            last = row
            shown += 1
        i += 1
    return Chunk([Group(rows)] if rows else [], i)


def _compaction_cause(t: Transcript, index: int) -> int | None:
    """The item of the command that asked for the compaction at index, if it follows it."""
    following = range(index + 1, min(index + 1 + layout.CAUSE_WITHIN, len(t.items)))
    at = layout.compaction_cause([t.items[j].entry for j in following], t.rules)
    return None if at is None else index + 1 + at


def _moved_before_compaction(t: Transcript, index: int) -> bool:
    """Whether the item is the command a compaction shortly before it shows before its banner."""
    at = bisect_right(t.compactions, index - 1) - 1
    if at < 0 or index - t.compactions[at] > layout.CAUSE_WITHIN:
        return False
    return _compaction_cause(t, t.compactions[at]) == index


def _planned(t: Transcript, start: int, stop: int, count: int, show_all: bool) -> list[int]:
    """The items a chunk will most likely show (noise skipped), to load at once."""
    planned: list[int] = []
    i = start
    while i < stop and len(planned) < count:
        if show_all or i not in t.noise:
            planned.append(i)
        i += 1
    return planned


def _row(t: Transcript, i: int, children_by_tool, absorb_from, shown_with_call, show_all: bool) -> Row:
    items = t.items
    entry = items[i].entry
    pieces = []
    absorb = absorb_from is not None and t.owner.get(i, -1) >= absorb_from
    shown_elsewhere = False  # a block of it shown under its call: the row may be left out
    for b, block in enumerate(entry.blocks):
        if (absorb and (i, b) in t.absorbed) or (i, b) in shown_with_call:
            shown_elsewhere = True
            continue
        if not show_all and layout.is_hidden_block(block, t.rules):
            continue
        piece = Piece(block, line=entry.line, at=b)
        if block.type == readers.TOOL_CALL:
            piece.children = children_by_tool.get(block.call_id, [])
            if absorb_from is not None and (found := t.results.get((i, b))):
                r_item, r_block = found
                result_entry = items[r_item].entry
                piece.result = result_entry.blocks[r_block]
                piece.result_entry = result_entry
                if (r_item, r_block) == _first_absorbed(t, r_item):
                    piece.result_anchor = anchor(result_entry.id)
            if tools.kind_of(block.name, block.arguments) == tools.EDIT and not tools.numbers_in(
                piece.result_entry
            ):
                piece.later_lines = _later_lines(t, i, b, tools.edit_path(block))
            piece.rules = t.rules
        pieces.append(piece)
    hidden = not pieces and shown_elsewhere
    return Row(items[i], i, anchor(entry.id), pieces, hidden, role_class(entry), usage_entry=entry)


# How far after an edit a Read of its file is looked for: a few turns, read from the rows
# the page has loaded anyway.
READ_WITHIN = 40


def _later_lines(t: Transcript, index: int, block_index: int, path: str) -> dict[int, str]:
    """The file's lines by number, as the first Read of path after the edit (block
    block_index of item index) showed them, read by the session's format's rule, if nothing
    else edited or wrote the file in between; {} otherwise."""
    text = _later_read(t, index, block_index, path)
    if not text or not tools.small_enough(text):
        return {}
    found = readers.read_output(t.rules.key, text, None)
    return dict(zip(found.numbers, found.lines, strict=True)) if found else {}


def _later_read(t: Transcript, index: int, block_index: int, path: str) -> str:
    """The output of the first Read of path after the edit (block block_index of item index),
    if nothing else edited or wrote the file in between; "" otherwise."""
    if not path:
        return ""
    items = t.items
    for j in range(index, min(index + 1 + READ_WITHIN, len(items))):
        for b, block in enumerate(items[j].entry.blocks):
            if (j == index and b <= block_index) or block.type != readers.TOOL_CALL:
                continue
            if tools.edit_path(block) != path:
                continue
            if tools.kind_of(block.name, block.arguments) != tools.READ:
                return ""  # written again before anything read it
            found = t.results.get((j, b))
            return items[found[0]].entry.blocks[found[1]].text if found else ""
    return ""


def walk_back(t: Transcript, index: int, count: int, show_all: bool) -> int:
    """The item count messages before index."""
    i, seen = index, 0
    while i > 0 and seen < count:
        i -= 1
        if i in t.noise and not show_all:
            continue
        seen += 1
    return i


def _late_results(t: Transcript, start: int, pending: set[str]) -> list[LateResult]:
    """Results at start or later whose call is before start and among the pending calls."""
    if not pending:
        return []
    late = []
    for (call_item, call_block), (r_item, r_block) in results_crossing(t, start):
        call_id = t.items[call_item].entry.blocks[call_block].call_id
        if call_id in pending:
            entry = t.items[r_item].entry
            late.append(LateResult(result_slot(call_id), (r_item, r_block), entry.blocks[r_block], entry))
    return sorted(late, key=lambda result: result.position)


def display_index(t: Transcript, entry_id: str) -> int:
    """Where the entry is shown: its own row, or its call's row when its result is shown there."""
    i = t.positions[entry_id]
    blocks = t.items[i].entry.blocks
    if blocks and all((i, b) in t.absorbed for b in range(len(blocks))):
        return t.owner[i]
    return i


def _first_absorbed(t: Transcript, item_index: int) -> tuple[int, int] | None:
    blocks = t.items[item_index].entry.blocks
    return next(((item_index, b) for b in range(len(blocks)) if (item_index, b) in t.absorbed), None)


class UnknownEntry(LookupError):
    def __init__(self, entry_id: str):
        super().__init__(f"no entry {entry_id!r} in this session")
        self.entry_id = entry_id


# What the page shows of a session's children: title, kind, the call that started it, cost.
CHILD_FIELDS = (
    "id",
    "parent_id",
    "kind",
    "parent_tool_id",
    "key",
    "title",
    "summary_title",
    "first_prompt",
    "cost",
    "unpriced_tokens",
)


def transcript_page(session: Session, params: dict, show_all: bool = False, fragment: bool = False) -> dict:
    """What the transcript page shows for its query string (forms.TranscriptForm cleaned it):
    leaf, entry, _offset, _stop, _before, _after and _pending; show_all: the noise too;
    fragment: a chunk for a page already shown, which has its search hits (q) already.
    Raises UnknownLeaf or UnknownEntry (404).

    The first screen opens on the first prompt, and the rest follows in the order it was
    written, CHUNK messages at a time, compactions where they happened. A permalink opens
    where its entry is; _offset continues from an item, up to _stop when given (_before:
    the stretch before the one shown).
    """
    leaf = params.get("leaf") or None
    entry_id = params.get("entry") or None
    offset = params.get("_offset")
    after = params.get("_after")
    if entry_id and not leaf:
        t = transcript_with_entry(session, entry_id)
        if t is None:
            raise UnknownEntry(entry_id)
    else:
        t = transcript(session, leaf)
        if entry_id and entry_id not in t.positions:
            raise UnknownEntry(entry_id)
    # Read once, with what the header and the tool calls show of them (a session may start
    # hundreds): the header lists them and sums their cost, a tool call links its own.
    children = list(session.children.only(*CHILD_FIELDS).order_by("id"))
    children_by_tool: dict[str, list] = {}
    for child in children:
        if child.parent_tool_id:
            children_by_tool.setdefault(child.parent_tool_id, []).append(child)
    total = len(t.items)
    end = total
    late_results: list[LateResult] = []
    limit: int | None = FIRST_SCREEN if offset is None and not entry_id else CHUNK
    if after is not None:
        # Live updates: what was written after the last line the page shows. A result whose
        # call came in the same poll goes under it; one whose call the page shows already
        # and still waits for (_pending: the calls' ids) takes the place the call kept.
        start = first_item_after(t, after)
        limit = None
        late_results = _late_results(t, start, set(params.get("_pending") or ()))
    elif entry_id:
        shown_at = display_index(t, entry_id)
        start = walk_back(t, shown_at, CHUNK // 2, show_all)
    else:
        start = min(offset or 0, max(total - 1, 0))
        if params.get("_stop") is not None:
            end = min(end, params["_stop"])
            limit = None if params.get("_before") else CHUNK
    shown_with_call = frozenset(late.position for late in late_results)
    chunk = rows_for(
        t,
        start,
        end,
        children_by_tool,
        start,
        entry_id or "",
        shown_with_call,
        show_all=show_all,
        limit=limit,
    )
    hidden = {row.index for group in chunk.groups for row in group.rows if row.hidden}
    for late in late_results:  # a result whose entry has no row left keeps its permalink
        item = late.position[0]
        if item in hidden and late.position == _first_absorbed(t, item):
            late.result_anchor = anchor(late.result_entry.id)
    stop = chunk.stop
    earlier = None
    if after is None and start > 0:
        earlier = walk_back(t, start, CHUNK, show_all)
    return {
        "transcript": t,
        "thread": t.thread,
        "groups": chunk.groups,
        "start": start,
        "stop": stop,
        "total": total,
        "late_results": late_results,
        "next_offset": stop if stop < end and (after is None) else None,
        "prev_offset": earlier,
        "inline": bool(params.get("_inline")),
        "end": end,
        "compactions": t.compactions,
        "show_all": show_all,
        "hidden_count": len(t.noise),
        "leaf": leaf,
        "target": entry_id,
        "hits": None if fragment else search_hits(session, t, params.get("q"), entry_id),
        "last_line": _last_line(t, stop, after),
        "export": False,
        # A page on the active thread follows the file as it grows.
        "live": leaf is None and session.status == "active",
        "children": children,
        "problems": list(session.problems.order_by("line")[:PROBLEM_LIMIT]),
        "fork_copies_until": fork_copies_until(session, t),
    }


def fork_copies_until(session: Session, t: Transcript) -> int:
    """The last line of a fork's copies of its parent's messages (0: none known).

    A Go agent fork writes its branch line, then its parent's last messages up to
    fork_entry_id with their ids: the page links each to the same entry in the parent."""
    if session.kind != "fork" or not session.parent_id or not session.fork_entry_id:
        return 0
    at = t.positions.get(session.fork_entry_id)
    return 0 if at is None else item_line(t.items[at])


@dataclass(slots=True)
class Hits:
    """The entries of this thread a search matched, in page order, and where the page is."""

    query: str
    terms: list[str]
    entries: list[str]  # entry ids
    position: int | None  # 1-based: the hit the page opened at

    @property
    def count(self) -> int:
        return len(self.entries)

    @property
    def previous(self) -> str | None:
        if self.position is None:
            return None
        return self.entries[self.position - 2] if self.position > 1 else None

    @property
    def next(self) -> str | None:
        if self.position is None:
            return self.entries[0] if self.entries else None
        return self.entries[self.position] if self.position < len(self.entries) else None


def search_hits(
    session: Session, t: Transcript, query: search.ParsedQuery | None, entry_id: str | None
) -> Hits | None:
    """The search hits of query on this thread (None without one): opened from a search result,
    the page marks the words and steps from hit to hit."""
    if query is None:
        return None
    found = search.matching_entries(query).filter(session_id=session.id).values_list("entry_id", flat=True)
    shown = sorted((at, e) for e, at in find_positions(t, set(found)).items())
    entries = [e for _, e in shown]
    position = entries.index(entry_id) + 1 if entry_id in entries else None
    return Hits(query.text, query.terms, entries, position)


def compaction_summary(session: Session, params: dict) -> str:
    """The summary of the compaction at item _summary of the thread (leaf): the page renders only
    the latest one's, the others load when opened. Raises UnknownLeaf or UnknownEntry (404)."""
    t = transcript(session, params.get("leaf") or None)
    index = params["_summary"]
    if index >= len(t.items) or not t.items[index].summary:
        raise UnknownEntry(f"_summary={index}")
    return t.items[index].summary


def _last_line(t: Transcript, stop: int, after: int | None) -> int:
    """The last line the page shows: where live polling goes on from."""
    return item_line(t.items[stop - 1]) if stop else (after or 0)
