"""A long session's thread snapshots built over columns, in memory that does not grow with
the file's text or its entries' fields: what threads.build_thread and store._index make of
a session, written as store.save_snapshot writes it, without one object per line.

Two passes over the session's rows, in line order:

1. The tree (Tree): one row of small columns per line, parents already resolved to lines
   by the database (the latest earlier line with the parent id, on entry_session_id). It
   finds regions, leaves, branches and the active leaf as threads._Tree does, on the same
   rules, keeping about a byte a line for each of its columns (Back: the parent, the line
   whose message id it carries, the line whose time is its clock; the region, counted back
   among regions) and a few ints a region: what a line's column names is nearly always a
   few lines or regions back. Message ids and times are read again for the few lines
   that need them (replies whose parent is far back, the leaves).
2. Per thread (the active one, then other branches): the rows on it, read again a batch at
   a time as text-free entries (rows.light_entries_from_rows), give each item's noise,
   prompt and tool pairs; pieces of snapshots.PIECE items are written as they fill.

A file whose parents are broken (a parent written later, missing, a cycle) is built the
object way, which names the problems: Fallback.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections import OrderedDict
from datetime import UTC, datetime, timedelta

import orjson
from django.db import connection, transaction
from django.db.models import Max

from sessionviewer import readers, row_codec, threads
from sessionviewer.index import rows
from sessionviewer.models import Entry, Session, ThreadPiece, ThreadSnapshot
from sessionviewer.transcripts import layout, snapshots
from sessionviewer.transcripts.entries import load_entry

NO = -1  # no line index: None in threads._Tree
NO_CLOCK = -(2**63)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TALK = (readers.USER, readers.ASSISTANT, readers.TOOL)
_BATCH = 500
NEAR = 255  # a Back or region step this far or farther is kept in a dict (at most 255: a byte)
RECENT = 4096  # replies' message ids kept by line index, to check a reply against its parent's
SUMMARIES_KEPT = 64  # summary texts kept while the threads' writers go through the rows
PENDING = 2  # pieces a writer keeps before writing them (a result further back is added later)


class Fallback(Exception):
    """The file has broken parents: threads.build_thread reports them, from whole entries."""


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def _table() -> str:
    return _q(Entry._meta.db_table)


def _sidechains_left_out(session_id: int) -> bool:
    """threads._Tree.sidechains_left_out: a main-thread message exists."""
    return Entry.objects.filter(
        session_id=session_id, kind=readers.MESSAGE, role__in=_TALK, is_sidechain=False
    ).exists()


def _micros(stamp: datetime | None) -> int:
    return NO_CLOCK if stamp is None else (stamp - _EPOCH) // timedelta(microseconds=1)


def _clock_text(micros: int) -> str | None:
    return None if micros == NO_CLOCK else (_EPOCH + timedelta(microseconds=micros)).isoformat()


class Bits:
    """Flags by index, a bit each: a thread's regions, its noise."""

    __slots__ = ("bits", "size")

    def __init__(self, size: int):
        self.bits, self.size = bytearray((size >> 3) + 1), size

    def set(self, index: int) -> None:
        self.bits[index >> 3] |= 1 << (index & 7)

    def __getitem__(self, index: int) -> int:
        return self.bits[index >> 3] >> (index & 7) & 1

    def __contains__(self, index) -> bool:
        return isinstance(index, int) and 0 <= index < self.size and bool(self[index])

    def spread(self) -> bytes:
        """The flags a byte each, for loops that ask for every index: a lookup in C, not a call."""
        return b"".join(map(_SPREAD.__getitem__, self.bits))[: self.size]


_SPREAD = [bytes((byte >> bit) & 1 for bit in range(8)) for byte in range(256)]  # a byte of flags, spread


class Back:
    """For each index, an index at or before it (or NO), kept as how far back it is: a byte
    each, the rare far ones in a dict. Grows by append, or is made at its length."""

    __slots__ = ("near", "far")

    def __init__(self, size: int = 0):
        self.near, self.far = bytearray(size), {}

    def __len__(self) -> int:
        return len(self.near)

    def _put(self, at: int, back: int) -> int:
        if back < NEAR:
            return back
        self.far[at] = back
        return NEAR

    def __setitem__(self, at: int, index: int) -> None:
        self.near[at] = self._put(at, 0 if index == NO else at - index + 1)

    def append(self, index: int) -> None:
        at = len(self.near)
        self.near.append(self._put(at, 0 if index == NO else at - index + 1))

    def __getitem__(self, at: int) -> int:
        back = self.near[at]
        if back == NEAR:
            back = self.far[at]
        return NO if back == 0 else at - back + 1


class Lines:
    """The lines the tree holds, by index: runs of consecutive lines (most files are one)."""

    __slots__ = ("firsts", "at", "count")

    def __init__(self):
        self.firsts, self.at, self.count = array("q"), array("i"), 0  # each run's first line, its index

    def append(self, line: int) -> None:
        if not self.count or line != self.firsts[-1] + self.count - self.at[-1]:
            self.firsts.append(line)
            self.at.append(self.count)
        self.count += 1

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> int:
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(index)
        run = bisect_right(self.at, index) - 1
        return self.firsts[run] + index - self.at[run]

    def __iter__(self):
        ends = [*self.at[1:], self.count]
        for first, at, end in zip(self.firsts, self.at, ends, strict=True):
            yield from range(first, first + end - at)

    def index_of(self, line: int) -> int:
        run = bisect_right(self.firsts, line) - 1
        if run < 0:
            return NO
        index = self.at[run] + line - self.firsts[run]
        end = self.at[run + 1] if run + 1 < len(self.at) else self.count
        return index if index < end else NO


def _newer(a: int, clock_a: int, b: int, clock_b: int) -> tuple[int, int]:
    """threads._Tree's newer of two leaves, with its clock."""
    if a == NO or b == NO:
        return (b, clock_b) if a == NO else (a, clock_a)
    if clock_a != NO_CLOCK and clock_b != NO_CLOCK and clock_a != clock_b:
        return (a, clock_a) if clock_a > clock_b else (b, clock_b)
    return (a, clock_a) if a > b else (b, clock_b)


class Tree:
    """threads._Tree over columns: indexes are positions among the lines the thread reads
    (sidechains left out when the file has a main thread)."""

    def __init__(self, session_id: int):
        self.session_id = session_id
        self.left_out = _sidechains_left_out(session_id)
        # A byte a line each, made at their full length; a region's ints grow by append.
        n = self.count = self._count()
        self.filled = 0  # lines read so far
        self.lines = Lines()
        self.parent = Back(n)
        self.carried_from = Back(n)  # the line whose message id is the reply it belongs to
        self.clock_from = Back(n)  # the last line with a time, at or before it
        self.back = bytearray(n)  # its region: how many regions before the newest one so far
        self.far_regions: dict[int, int] = {}  # the rare ones 255 or more before
        self.talk = Bits(n)
        self.starts = array("i")  # region -> the index that starts it
        self.start_parent = Back()  # region -> the region above it, in regions
        self.compactions: list[int] = []
        self.children: dict[int, list[int]] = {}
        self.named = NO  # the index the last summary line names (leafUuid)
        self.last_any = self.last_message = NO
        self.first_kept: dict[int, str] | None = None  # a compaction's line -> its first kept id
        # The summaries' texts, by where each comes from: the few the writers are at (they
        # go through the rows together), not every compaction's (3,500 at 2 GB, 14 MB).
        self.summaries: OrderedDict[tuple[int, bool], str | None] = OrderedDict()
        self._link()
        self._find_leaves()

    def _count(self) -> int:
        found = Entry.objects.filter(session_id=self.session_id)
        return (found.filter(is_sidechain=False) if self.left_out else found).count()

    def _rows(self):
        t, q = _table(), _q
        side = f"AND p.{q('is_sidechain')} = %s" if self.left_out else ""

        def latest(column: str) -> str:
            return (
                f"(SELECT MAX(p.{q('line')}) FROM {t} p WHERE p.{q('session_id')} = e.{q('session_id')}"  # noqa: S608
                f" AND p.{q('entry_id')} = e.{q(column)} AND p.{q('line')} < e.{q('line')} {side})"
            )

        named = (
            f"(SELECT MAX(p.{q('line')}) FROM {t} p WHERE p.{q('session_id')} = e.{q('session_id')}"  # noqa: S608
            f" AND p.{q('entry_id')} = e.{q('leaf_id')} {side})"
        )
        kind, role, extra = f"e.{q('kind')}", f"e.{q('role')}", f"e.{q('extra')}"
        query = (
            f"SELECT e.{q('line')}, {kind}, {role}, e.{q('timestamp')}, e.{q('message_id')},"  # noqa: S608 - names are ours
            f" e.{q('is_sidechain')}, e.{q('is_meta')},"
            f" CASE WHEN {kind} = %s AND {role} = %s THEN e.{q('blocks')} ELSE '' END,"
            f" CASE WHEN {kind} IN (%s, %s) THEN {extra} ELSE '' END,"
            f" e.{q('parent_id')} <> '',"
            f" CASE WHEN e.{q('parent_id')} <> '' THEN {latest('parent_id')} END,"
            f" CASE WHEN e.{q('parent_id')} = '' AND {kind} = %s AND e.{q('logical_parent_id')} <> ''"
            f" THEN {latest('logical_parent_id')} END,"
            f" e.{q('logical_parent_id')} <> '',"
            f" CASE WHEN {kind} = %s AND e.{q('leaf_id')} <> '' THEN {named} END"
            f" FROM {t} e WHERE e.{q('session_id')} = %s {'AND e.' + q('is_sidechain') + ' = %s' if self.left_out else ''}"
            f" ORDER BY e.{q('line')}"
        )
        side_params = [False] if self.left_out else []
        params = [readers.MESSAGE, readers.USER, readers.BRANCH, readers.HEADER]
        params += side_params + [readers.COMPACTION] + side_params + [readers.SUMMARY] + side_params
        params += [self.session_id] + side_params
        with connection.cursor() as cursor:
            cursor.execute(query, params)
            while batch := cursor.fetchmany(_BATCH):
                yield from batch

    def index_of(self, line: int | None) -> int:
        """The index of a line the tree holds, NO for None or a line it left out."""
        return NO if line is None else self.lines.index_of(line)

    def region(self, index: int) -> int:
        """The region an index is in (regions are numbered in the order they start)."""
        back = self.back[index]
        if back == NEAR:
            back = self.far_regions[index]
        return bisect_right(self.starts, index) - 1 - back

    def regions(self):
        """Each index's region, in order: the region() of every index, without a search each."""
        starts, back, far, near = self.starts, self.back, self.far_regions, NEAR
        newest, upcoming = -1, starts[0] if starts else NO
        for index in range(self.count):
            while index == upcoming:
                newest += 1
                upcoming = starts[newest + 1] if newest + 1 < len(starts) else NO
            step = back[index]
            yield newest - (far[index] if step == near else step)

    def _set_region(self, index: int, region: int) -> None:
        back = len(self.starts) - 1 - region
        if back >= NEAR:
            self.far_regions[index] = back
            back = NEAR
        self.back[index] = back

    def _message_hash(self, index: int, recent_at: array, recent_hash: array) -> int:
        """hash() of the message id of an index that carries one (threads._Tree's reply check)."""
        if recent_at[index % RECENT] == index:
            return recent_hash[index % RECENT]
        line = self.lines[index]
        return hash(_column(self.session_id, [line], "message_id")[line])

    def _link(self) -> None:
        lines, parent, talk, starts = self.lines, self.parent, self.talk, self.starts
        carried_from, clock_from, region_of = self.carried_from, self.clock_from, self.region
        recent_at, recent_hash = array("i", [NO]) * RECENT, array("q", [0]) * RECENT
        n = self.count
        first_child = array("i")  # region -> the first start below it
        start_parent = self.start_parent
        children, compactions = self.children, self.compactions
        last_any = last_message = NO
        forked = False
        now = NO
        index_of = self.index_of
        for row in self._rows():
            (line, kind, role, stamp, mid, sidechain, meta, blocks, extra, has_parent, parent_line, logical_line,
             has_logical, named_line) = row  # fmt: skip
            i = self.filled
            if i == n:
                raise Fallback("the rows changed while the thread was built")
            lines.append(line)
            self.filled = i + 1
            conv = kind == readers.MESSAGE and role in _TALK
            threads_on = conv or kind == readers.COMPACTION
            follow = last_message if last_message != NO else last_any
            if has_parent:
                p = index_of(parent_line)
                if p == NO:
                    p = follow
                    if not sidechain and not forked:
                        raise Fallback(f"line {line}: its parent is not written before it")
            elif threads_on and not conv and has_logical:
                p = index_of(logical_line)
                if p == NO:
                    p = follow
            else:
                p = follow if threads_on else last_any
            parent[i] = p
            if extra and orjson.loads(extra).get("parent_session_path"):
                forked = True
            last_any = i
            if threads_on:
                last_message = i
                if not conv:
                    compactions.append(i)
            if stamp is not None:
                now = i
            clock_from[i] = now
            if named_line is not None and (found := index_of(named_line)) != NO:
                self.named = found

            starts_region = prompt = False
            if conv and not meta:
                if role == readers.USER:
                    stored = orjson.loads(blocks) if blocks and blocks != "[]" else ()
                    starts_region = prompt = not any(b.get("type") == readers.TOOL_RESULT for b in stored)
                elif role == readers.ASSISTANT:
                    source = carried_from[p] if p != NO else NO
                    starts_region = not (
                        source != NO
                        and mid
                        and hash(mid) == self._message_hash(source, recent_at, recent_hash)
                    )
            if mid:
                carried_from[i] = i
                recent_at[i % RECENT], recent_hash[i % RECENT] = i, hash(mid)
            elif p != NO and not prompt:
                carried_from[i] = carried_from[p]
            else:
                carried_from[i] = NO
            if conv:
                talk.set(i)
            if p != NO and not starts_region:
                self._set_region(i, region_of(p))
                continue
            starts.append(i)
            first_child.append(NO)
            self._set_region(i, len(starts) - 1)
            if p == NO:
                start_parent.append(NO)
                continue
            up = region_of(p)
            start_parent.append(up)
            if first_child[up] != NO:
                children.setdefault(starts[up], [first_child[up]]).append(i)
            else:
                first_child[up] = i
        if self.filled != n:
            raise Fallback("the rows changed while the thread was built")
        self.last_any, self.last_message, self.first_child = last_any, last_message, first_child

    def _clocks(self, indexes: list[int]) -> list[int]:
        """The clocks of these indexes, in microseconds: the time of the line each one's comes from."""
        lines, clock_from = self.lines, self.clock_from
        sources = [clock_from[i] for i in indexes]
        stamps = _column(self.session_id, [lines[j] for j in sources if j != NO], "timestamp")
        return [
            NO_CLOCK if j == NO else _micros(row_codec.stored_timestamp(stamps[lines[j]])) for j in sources
        ]

    def _find_leaves(self) -> None:
        parent, talk, region = self.parent, self.talk, self.region
        n, count = self.count, len(self.starts)
        below = self.below = Bits(n)
        # Each region's newest leaf (a talk line with no talk line below it) and its clock;
        # the leaves' clocks are read a batch at a time.
        tip, tip_clock = array("i", [NO]) * count, array("q", [NO_CLOCK]) * count

        def fold(leaves: list[int]) -> None:
            for i, clock in zip(leaves, self._clocks(leaves), strict=True):
                r = region(i)
                tip[r], tip_clock[r] = _newer(tip[r], tip_clock[r], i, clock)

        leaves = []
        for i in range(n - 1, -1, -1):
            p = parent[i]
            if talk[i]:
                if not below[i]:
                    leaves.append(i)
                    if len(leaves) == _BATCH:
                        fold(leaves)
                        leaves = []
                if p != NO:
                    below.set(p)
            elif below[i] and p != NO:
                below.set(p)
        fold(leaves)
        # Each region's best leaf: its tip where no region starts below it, else the newest
        # of its children's best. Worked out in place in the tips' arrays (a region's
        # children come after it, so from the last region up), not in two more.
        first_child, start_parent = self.first_child, self.start_parent
        for s in range(count):
            if first_child[s] != NO:
                tip[s], tip_clock[s] = NO, NO_CLOCK
        best, best_clock = tip, tip_clock
        for s in range(count - 1, -1, -1):
            found, clock = best[s], best_clock[s]
            up = start_parent[s]
            if up != NO and found != NO:
                best[up], best_clock[up] = _newer(best[up], best_clock[up], found, clock)
        self.active, active_clock = (best[0], best_clock[0]) if count else (NO, NO_CLOCK)
        if self.named != NO and (found := best[region(self.named)]) != NO:
            self.active, active_clock = found, best_clock[region(self.named)]
        self.branches: list[tuple[int, list[tuple[int, int]]]] = []
        leaves = set() if self.active == NO else {self.active}
        for s, kids in sorted(self.children.items()):
            pairs = [(kid, best[self.region(kid)]) for kid in kids if best[self.region(kid)] != NO]
            shared = {parent[kid] for kid in kids}
            self.branches.append((shared.pop() if len(shared) == 1 else s, pairs))
            leaves.update(found for _, found in pairs)
        self.leaves = sorted(leaves)
        # What the tail needs of the clocks.
        self.active_clock = active_clock
        self.last_clock = self._clocks([n - 1])[0] if n else NO_CLOCK
        del self.first_child

    def name_lines(self, session_id: int) -> None:
        """The ids of the leaves and of the branch points' keys and children, and the
        branch points by id (threads.Thread.branch_points)."""
        wanted = [x for key, pairs in self.branches for x in (key, *(y for pair in pairs for y in pair))]
        wanted += self.leaves
        lines = self.lines
        self.ids = _column(session_id, [lines[i] for i in wanted], "entry_id")
        name = self.name
        self.branch_points = {
            name(key): [[name(child), name(found)] for child, found in pairs] for key, pairs in self.branches
        }

    def first_kept_ids(self, session_id: int) -> dict[int, str]:
        """line -> first_kept_id of the compactions, read once for every thread."""
        if self.first_kept is None:
            lines = [self.lines[i] for i in self.compactions]
            self.first_kept = _column(session_id, lines, "first_kept_id")
        return self.first_kept

    def summary_text(self, source: tuple[int, bool]) -> str | None:
        """The text of a compact summary line (line, True), or the summary a compaction
        line holds (line, False)."""
        found = self.summaries
        if source in found:
            return found[source]
        line, written = source
        if written:
            text = load_entry(self.session_id, line).text
        else:
            text = _column(self.session_id, [line], "summary")[line]
        found[source] = text
        if len(found) > SUMMARIES_KEPT:
            found.popitem(last=False)
        return text

    def name(self, index: int) -> str:
        return self.ids[self.lines[index]]

    def path(self, tip: int) -> Bits | None:
        """The regions from the first line to tip's, as flags by region; None: every line shows."""
        on, count = Bits(len(self.starts)), 0
        start = self.region(tip)
        while start != NO:
            on.set(start)
            count += 1
            start = self.start_parent[start]
        return None if count == len(self.starts) else on


def _column(session_id: int, lines: list[int], column: str) -> dict[int, object]:
    """line -> column, for these lines."""
    found: dict[int, object] = {}
    lines = sorted(set(lines))
    for at in range(0, len(lines), _BATCH):
        batch = lines[at : at + _BATCH]
        values = Entry.objects.filter(session_id=session_id, line__in=batch).values_list("line", column)
        found.update(values)
    return found


def _lines_of(session_id: int, entry_id: str, left_out: bool) -> list[int]:
    found = Entry.objects.filter(session_id=session_id, entry_id=entry_id)
    if left_out:
        found = found.filter(is_sidechain=False)
    return sorted(found.values_list("line", flat=True))


def _last_lines(session_id: int, ids: set[str], left_out: bool) -> dict[str, int]:
    """id -> the last line the tree holds with it."""
    found: dict[str, int] = {}
    ids = sorted(ids)
    for at in range(0, len(ids), _BATCH):
        rows_ = Entry.objects.filter(session_id=session_id, entry_id__in=ids[at : at + _BATCH])
        if left_out:
            rows_ = rows_.filter(is_sidechain=False)
        found.update(rows_.values("entry_id").annotate(last=Max("line")).values_list("entry_id", "last"))
    return found


def _compact_summary_lines(session_id: int) -> list[int]:
    query = f"SELECT {_q('line')} FROM {_table()} WHERE {_q('session_id')} = %s AND {_q('extra')} LIKE %s"  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(query, [session_id, '%"is_compact_summary":true%'])
        return [line for (line,) in cursor.fetchall()]


def _light_rows(session_id: int, left_out: bool, rules: readers.Format):
    """(entry, text_facts) of the lines the tree holds, in order, as entries.light_entries."""
    q = _q
    columns = ", ".join(q(c) for c in row_codec.LIGHT_COLUMNS)
    text = f"CASE WHEN {q('text_facts')} = 0 OR {q('extra')} LIKE %s THEN {q('text')} ELSE '' END"
    side = f" AND {q('is_sidechain')} = %s" if left_out else ""
    query = (
        f"SELECT {columns}, {text} FROM {_table()} WHERE {q('session_id')} = %s{side} ORDER BY {q('line')}"  # noqa: S608
    )
    params = ['%"is_compact_summary":true%', session_id] + ([False] if left_out else [])
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        while batch := cursor.fetchmany(_BATCH):
            yield from rows.light_entries_from_rows(batch, rules)


def build_snapshots(session: Session, leaves: int, leaf: str | None = None) -> int:
    """The active thread's snapshot and those of up to `leaves` other branches, saved as
    store.save_snapshot saves them; or, given `leaf` (a page asked for a branch no pass
    prepared), that branch's alone. Returns how many were built; raises Fallback (also
    for a `leaf` that is not one of the tree's leaves)."""
    tree = Tree(session.id)
    tree.name_lines(session.id)
    tail = _tail(session.id, tree)
    # The columns a line's parent, reply and clock were found with: not needed past here,
    # and gone before the writers' pieces and flags fill memory.
    del tree.parent, tree.carried_from, tree.clock_from, tree.below
    leaf_ids = [tree.name(i) for i in tree.leaves]
    active_id = None if tree.active == NO else tree.name(tree.active)

    def tip_of(leaf: str) -> int:
        return max((i for i, x in zip(tree.leaves, leaf_ids, strict=True) if x == leaf), default=NO)

    if leaf is not None:
        if (tip := tip_of(leaf)) == NO:
            raise Fallback(f"{leaf!r} is not a leaf: threads.build_thread resolves it")
        tips = [(tip, leaf)]
    else:
        tips = [(tree.active, None)]
        tips += [(tip_of(x), x) for x in leaf_ids if x != active_id][:leaves]
    with transaction.atomic():
        # One pass over the rows for every thread: a branch's writer takes the rows on it.
        # The compact summary lines are found once for every thread: a LIKE over the session's rows.
        summary_lines = _compact_summary_lines(session.id)
        writers = {leaf: _plan(session, tree, tip, leaf, leaf_ids, summary_lines) for tip, leaf in tips}
        lines, regions = iter(tree.lines), tree.regions()
        every = list(writers.values())
        rules = readers.format_of(session.format)
        for entry, facts in _light_rows(session.id, tree.left_out, rules):
            if entry.line != next(lines, None):
                raise Fallback(f"line {entry.line}: the rows changed while the thread was built")
            region = next(regions)
            on = [writer for writer in every if writer.shown(region)]
            if on:
                noise = layout.is_noise(
                    entry, facts, rules
                )  # once, not once a thread: most lines are on several
                for writer in on:
                    writer.add(entry, noise)
        for leaf, writer in writers.items():
            writer.finish(tail if leaf is None else None)
    return len(writers)


def _plan(
    session: Session, tree: Tree, tip: int, leaf: str | None, leaf_ids: list, summary_lines: list[int]
) -> _Writer:
    """What the thread ending at tip holds that is known before its rows are read
    (summary_lines: the session's compact summary lines, _compact_summary_lines)."""

    lines, region = tree.lines, tree.region
    on = tree.path(tip) if tip != NO else None
    shown = (lambda r: True) if on is None else on.spread().__getitem__  # by region  # noqa: E731

    name = tree.name
    marks = {}
    for key, pairs in tree.branches:
        if on is not None and on[region(key)]:
            current = next((n for n, (child, _) in enumerate(pairs) if on[region(child)]), None)
            marks[key] = ([name(found) for _, found in pairs], current)
        elif on is None and tip != NO:
            current = next((n for n, _ in enumerate(pairs)), None)  # every region is on the path
            marks[key] = ([name(found) for _, found in pairs], current)

    # Positions of the compactions and what they summarise (threads._mark_compactions).
    first_kept_of = tree.first_kept_ids(session.id)
    kept_at = {}  # compaction index -> the indexes of its first kept id
    special = {*tree.compactions, *marks}
    for i in tree.compactions:
        first_kept = first_kept_of[lines[i]]
        if first_kept and shown(region(i)):
            found = [
                j for j in map(tree.index_of, _lines_of(session.id, first_kept, tree.left_out)) if j != NO
            ]
            kept_at[i] = found
            special.update(found)
    summary_at = {}  # index of a compact summary line -> its line
    for line in summary_lines:
        if (i := tree.index_of(line)) != NO:
            summary_at[i] = line
            special.add(i)
    position, count = {}, 0
    for i, r in enumerate(tree.regions()):
        if shown(r):
            if i in special:
                position[i] = count
            count += 1
    compactions = [i for i in tree.compactions if i in position]
    problems: list[str] = []
    cut, summaries = 0, {}
    written = sorted((position[i], line) for i, line in summary_at.items() if i in position)
    written_at = [at for at, _ in written]
    for n, i in enumerate(compactions):
        pos = kept = position[i]
        first_kept = first_kept_of[lines[i]]
        if first_kept:
            found = [position[j] for j in kept_at[i] if j in position and position[j] < pos]
            if found:
                kept = max(found)
            else:
                problems.append(f"line {lines[i]}: first kept entry {first_kept!r} is not on this thread")
        cut = max(cut, kept)
        end = position[compactions[n + 1]] if n + 1 < len(compactions) else count
        # The first compact summary line written after it, before the next one; else its own.
        w = bisect_right(written_at, pos)
        summaries[pos] = (
            (written[w][1], True) if w < len(written) and written_at[w] < end else (lines[i], False)
        )
    head = {
        "count": count,
        "compacted": [[0, cut]] if cut else [],
        "alternatives": {position[i]: alternatives for i, (alternatives, _) in marks.items()},
        "current": {position[i]: current for i, (_, current) in marks.items() if current is not None},
        "leaf_id": None if tip == NO else name(tip),
        "leaves": leaf_ids,
        "branch_points": tree.branch_points,  # the same for every thread
        "problems": problems,
        "compactions": [position[i] for i in compactions],
    }
    return _Writer(session, leaf, shown, head, summaries, tree.summary_text)


class _Writer:
    """One thread's snapshot: its pieces written as they fill, then its row."""

    def __init__(self, session: Session, leaf: str | None, shown, data: dict, summaries: dict, summary_text):
        self.size, self.empty = snapshots.PIECE, snapshots.empty_piece
        self.leaf, self.shown, self.data, self.summaries = leaf, shown, data, summaries
        self.summary_text = summary_text  # Tree.summary_text: summaries holds where each comes from
        ThreadSnapshot.objects.filter(session_id=session.id, leaf=leaf or "").delete()
        self.snapshot = ThreadSnapshot.objects.create(
            session_id=session.id, leaf=leaf or "", version=snapshots.version_text(session), data={}
        )
        self.firsts: list[int] = []
        self.pending: dict[int, dict] = {}  # pieces not written yet
        self.late: dict[int, list] = {}  # pairs for pieces written already
        self.open_calls: dict[str, tuple[int, int]] = {}
        self.noise_count = 0
        self.i = -1

    def flush(self, keep: int) -> None:
        pending = self.pending
        done = sorted(n for n in pending if n < keep)
        for n in done:
            pending[n]["results"].sort()
        ThreadPiece.objects.bulk_create(
            ThreadPiece(snapshot=self.snapshot, number=n, data=pending.pop(n)) for n in done
        )

    def add(self, entry: readers.Entry, noise: bool) -> None:
        i = self.i = self.i + 1
        size, pending = self.size, self.pending
        n = i // size
        if i % size == 0:
            if len(pending) >= PENDING:
                self.flush(n)
            self.firsts.append(entry.line)
            pending[n] = self.empty()
        piece = pending[n]
        piece["lines"].append(entry.line)
        if (source := self.summaries.get(i)) is not None and (summary := self.summary_text(source)):
            piece["summaries"].append([i, summary])
        if noise:
            piece["noise"].append(i)
            self.noise_count += 1
        owned = False
        open_calls = self.open_calls
        for b, block in enumerate(entry.blocks):
            if not block.call_id:
                continue
            if block.type == readers.TOOL_CALL:
                open_calls[block.call_id] = (i, b)
            elif block.type == readers.TOOL_RESULT and (call := open_calls.pop(block.call_id, None)):
                pair = [*call, i, b]
                piece["results"].append(pair)
                if (home := call[0] // size) != n:
                    (pending[home]["results"] if home in pending else self.late.setdefault(home, [])).append(
                        pair
                    )
                if not owned:  # shown under the first call it answers
                    piece["owner"].append([i, call[0]])
                    owned = True

    def finish(self, tail: dict | None) -> None:
        data, snapshot = self.data, self.snapshot
        if self.i + 1 != data["count"]:
            raise Fallback("the rows changed while the thread was built")
        self.flush(len(self.firsts))
        for number, pairs in self.late.items():
            written = ThreadPiece.objects.get(snapshot=snapshot, number=number)
            written.data["results"] = sorted(written.data["results"] + pairs)
            written.save(update_fields=["data"])
        data.update(
            layout=snapshots.LAYOUT,
            firsts=self.firsts,
            noise_count=self.noise_count,
            tail=tail,
            open_calls={call: list(at) for call, at in self.open_calls.items()} if self.leaf is None else {},
        )
        ThreadSnapshot.objects.filter(id=snapshot.id).update(data=data)


def _tail(session_id: int, tree: Tree) -> dict | None:
    """threads._Tree.tail over the columns."""
    tip = tree.active
    if tip == NO:
        return None
    region, lines = tree.region, tree.lines
    inside, own = [], region(tip)
    for i in range(tip, len(lines)):
        if region(i) == own:
            inside.append(i)
            if len(inside) > threads.TAIL_LIMIT:
                return None
    at = {i: lines[i] for i in inside}
    ids = _column(session_id, list(at.values()), "entry_id")
    sources = [tree.carried_from[i] for i in inside]
    carried = _column(session_id, [lines[j] for j in sources if j != NO], "message_id")
    last_line = (
        Entry.objects.filter(session_id=session_id).order_by("-line").values_list("line", flat=True)[0]
    )
    last_of = _last_lines(session_id, set(ids.values()), tree.left_out)
    rows_ = []
    for i, j in zip(inside, sources, strict=True):
        id_ = ids[lines[i]]
        latest = last_of[id_]
        rows_.append(
            [
                id_ if latest == lines[i] else None,
                lines[i],
                at.get(tree.parent[i]),
                carried[lines[j]] if j != NO else "",
                bool(tree.talk[i]),
                bool(tree.below[i]),
            ]
        )
    return {
        "line": last_line,
        "leaf": ids[lines[tip]],
        "rows": rows_,
        "clock": _clock_text(tree.active_clock),
        "now": _clock_text(tree.last_clock),
        "last_any": at.get(tree.last_any),
        "last_message": at.get(tree.last_message),
        "sidechains_left_out": tree.left_out,
    }
