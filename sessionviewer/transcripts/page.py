"""The transcript page: its rows and groups, the items of one chunk, the API's view of a thread,
and the page's query-string parameters."""

from __future__ import annotations

from dataclasses import dataclass, field

from sessionviewer import readers, threads
from sessionviewer.models import Session
from sessionviewer.transcripts.store import Transcript, item_line, transcript, transcript_with_entry


def thread_to_dict(
    session: Session, thread: threads.Thread, offset: int = 0, limit: int | None = None
) -> dict:
    """The API's view of a thread; offset/limit select a slice of its entries (all by default)."""
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
        "entries": [item_to_dict(thread.items[i]) for i in range(offset, stop)],
    }


def item_to_dict(item: threads.ThreadItem) -> dict:
    data = item.entry.to_dict()
    data["compacted"] = item.compacted
    if item.alternatives:
        data["alternatives"] = item.alternatives
    return data


PROBLEM_LIMIT = 500
CHUNK = 50  # items on the first screen and per fetch; the rest load as the reader scrolls

_ANCHOR_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-")


def anchor(entry_id: str) -> str:
    """A stable, HTML- and CSS-safe element id for an entry id: other characters as _hex_."""
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


@dataclass(slots=True)
class Row:
    """One thread item on the page."""

    item: threads.ThreadItem
    index: int
    anchor: str
    pieces: list[Piece]
    hidden: bool  # every block was shown under its call: no row of its own
    show_usage: bool
    role_class: str

    @property
    def entry(self) -> readers.Entry:
        return self.item.entry

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
        return sum(int(v or 0) for v in self.entry.usage.values() if isinstance(v, int | float))

    # Plain properties rather than lookups into extra/usage in the template: a key the
    # dict lacks costs Django an exception per row, and a long export has thousands.
    @property
    def usage_title(self) -> str:
        usage = self.entry.usage
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


@dataclass(slots=True)
class Group:
    """Rows in page order; consecutive compacted rows fold into one group."""

    compacted: bool
    rows: list[Row]
    open: bool = False  # holds the entry a permalink asks for


def role_class(entry: readers.Entry) -> str:
    if entry.kind == readers.COMPACTION:
        return "compaction"
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
) -> list[Group]:
    """The rows of items[start:stop]. A tool result whose call is at absorb_from or later is shown
    under its call instead of on its own; None shows every result on its own. shown_with_call:
    (item, block) results shown under a call elsewhere (live updates: LateResult)."""
    items = t.items
    children_by_tool = children_by_tool or {}
    groups: list[Group] = []
    for i in range(start, min(stop, len(items))):
        item = items[i]
        entry = item.entry
        pieces = []
        absorb = absorb_from is not None and t.owner.get(i, -1) >= absorb_from
        shown_elsewhere = False  # a block of it shown under its call: the row may be left out
        for b, block in enumerate(entry.blocks):
            if (absorb and (i, b) in t.absorbed) or (i, b) in shown_with_call:
                shown_elsewhere = True
                continue
            piece = Piece(block)
            if block.type == readers.TOOL_CALL:
                piece.children = children_by_tool.get(block.call_id, [])
                if absorb_from is not None and (found := t.results.get((i, b))):
                    r_item, r_block = found
                    result_entry = items[r_item].entry
                    piece.result = result_entry.blocks[r_block]
                    piece.result_entry = result_entry
                    if (r_item, r_block) == _first_absorbed(t, r_item):
                        piece.result_anchor = anchor(result_entry.id)
            pieces.append(piece)
        hidden = not pieces and shown_elsewhere
        nxt = items[i + 1].entry if i + 1 < len(items) else None
        show_usage = bool(entry.usage) and not (
            entry.message_id and nxt is not None and nxt.message_id == entry.message_id
        )
        row = Row(item, i, anchor(entry.id), pieces, hidden, show_usage, role_class(entry))
        if groups and groups[-1].compacted == item.compacted:
            groups[-1].rows.append(row)
        else:
            groups.append(Group(item.compacted, [row]))
        if target and entry.id == target:
            groups[-1].open = True
    return groups


def _late_results(t: Transcript, start: int, pending: set[str]) -> list[LateResult]:
    """Results at start or later whose call is before start and among the pending calls."""
    if not pending:
        return []
    late = []
    for (call_item, call_block), (r_item, r_block) in t.results.items():
        if call_item < start <= r_item:
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


def transcript_page(session: Session, params: dict) -> dict:
    """What the transcript page shows for its query string (forms.TranscriptForm cleaned it):
    leaf, entry, _offset, _after and _pending. Raises UnknownLeaf or UnknownEntry (404)."""
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
    children_by_tool: dict[str, list] = {}
    for child in session.children.order_by("id"):
        if child.parent_tool_id:
            children_by_tool.setdefault(child.parent_tool_id, []).append(child)
    total = len(t.items)
    late_results: list[LateResult] = []
    if after is not None:
        # Live updates: what was written after the last line the page shows. A result whose
        # call came in the same poll goes under it; one whose call the page shows already
        # and still waits for (_pending: the calls' ids) takes the place the call kept.
        start = next((i for i, item in enumerate(t.items) if item_line(item) > after), total)
        stop, absorb_from = total, start
        late_results = _late_results(t, start, set(params.get("_pending") or ()))
    else:
        if entry_id:
            offset = display_index(t, entry_id) // CHUNK * CHUNK
        start = min(offset or 0, max(total - 1, 0))
        stop, absorb_from = start + CHUNK, start
    shown_with_call = frozenset(late.position for late in late_results)
    groups = rows_for(t, start, stop, children_by_tool, absorb_from, entry_id or "", shown_with_call)
    hidden = {row.index for group in groups for row in group.rows if row.hidden}
    for late in late_results:  # a result whose entry has no row left keeps its permalink
        item = late.position[0]
        if item in hidden and late.position == _first_absorbed(t, item):
            late.result_anchor = anchor(late.result_entry.id)
    stop = min(stop, total)
    return {
        "transcript": t,
        "thread": t.thread,
        "groups": groups,
        "start": start,
        "stop": stop,
        "total": total,
        "late_results": late_results,
        "next_offset": stop if stop < total else None,
        "prev_offset": max(start - CHUNK, 0) if start > 0 and after is None else None,
        "leaf": leaf,
        "target": entry_id,
        "last_line": item_line(t.items[stop - 1]) if stop else (after or 0),
        "export": False,
        # A page on the active thread follows the file as it grows.
        "live": leaf is None and session.status == "active",
        "children": list(session.children.order_by("id")),
        "problems": list(session.problems.order_by("line")[:PROBLEM_LIMIT]),
    }
