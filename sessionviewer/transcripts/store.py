"""The in-memory cache of built threads, and the thread snapshots kept in the database
(ThreadSnapshot). entries.py reads the rows back into reader entries; snapshots.py says
what a snapshot holds."""

from __future__ import annotations

import gc
from array import array
from bisect import bisect_left, bisect_right, insort
from collections import OrderedDict
from collections.abc import Callable, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from threading import Lock

from django.db import transaction
from django.db.models import F

from sessionviewer import readers, threads
from sessionviewer.index.locks import in_turn
from sessionviewer.models import Entry, Session, ThreadPiece, ThreadSnapshot
from sessionviewer.transcripts import changes, flat, layout, snapshots
from sessionviewer.transcripts.entries import light_entries, load_entries, load_lines, select_entries

UnknownLeaf = threads.UnknownLeaf


# --- Cached threads and their snapshots ---------------------------------------------------------------

_CACHE_SIZE = 16
_cache: OrderedDict[tuple, Transcript] = OrderedDict()
_entries_cache: OrderedDict[tuple, list[readers.Entry]] = OrderedDict()
_lock = Lock()


@dataclass(slots=True)
class Transcript:
    """A built thread and what the page needs to find things in it, computed once per version."""

    thread: threads.Thread
    positions: dict[str, int]  # entry id -> index in thread.items (the last one, ids may repeat)
    results: dict[tuple[int, int], tuple[int, int]]  # (call item, block) -> (result item, block)
    absorbed: set[tuple[int, int]]  # (result item, block) shown under their call
    owner: dict[int, int]  # result item -> the item of the call it is shown under (the first)
    rules: readers.Format  # the session's format: which lines its harness wrote, which blocks hide
    noise: frozenset[int] = frozenset()  # items hidden until "show all entries" (layout.is_noise)
    compactions: tuple[int, ...] = ()  # the items of the thread's compaction boundaries
    open_calls: dict[str, tuple[int, int]] = field(default_factory=dict)  # calls still without a result

    @property
    def items(self) -> list[threads.ThreadItem]:
        return self.thread.items


def _remember(cache: OrderedDict, key: tuple, value):
    with _lock:
        cache[key] = value
        cache.move_to_end(key)
        while len(cache) > _CACHE_SIZE:
            cache.popitem(last=False)
    return value


def _recall(cache: OrderedDict, key: tuple):
    with _lock:
        value = cache.get(key)
        if value is not None:
            cache.move_to_end(key)
        return value


def cached_entries(session: Session) -> list[readers.Entry]:
    key = snapshots.session_version(session)
    found = _recall(_entries_cache, key)
    return found if found is not None else _remember(_entries_cache, key, load_entries(session))


def transcript(session: Session, leaf: str | None = None) -> Transcript:
    """The thread ending at leaf (or the active leaf), built once per (session, version, leaf).

    Threads are also kept in the database as snapshots (ThreadSnapshot): the active
    one always, other branches of long sessions too. After a restart, in another
    worker, or for a session too long to load whole quickly, the first screen then
    reads only the rows it shows.
    """
    key = (*snapshots.session_version(session), leaf)
    found = _recall(_cache, key)
    if found is not None:
        return found
    if (snapshot := _from_snapshot(session, leaf)) is not None:
        return _remember(_cache, key, snapshot)
    if session.entry_count >= PREPARE_FROM:
        # Built as the indexer builds it, over columns (from entries without their text
        # where the parents are broken, or for an entry that is not a leaf), then read back
        # as a snapshot: the page loads the rows it shows when it shows them. Never one
        # entry per line in a web worker: for a 2 GB session that was 2 GB and 22 s.
        # Web processes and indexers sharing the index take turns per session: the one
        # that waited finds the snapshot the other built.
        with in_turn("snapshot", session.id):
            if _from_snapshot(session, leaf) is None and not _built_over_columns(session, leaf):
                save_snapshot(session, _light_transcript(session, leaf), leaf)
        if (snapshot := _from_snapshot(session, leaf)) is not None:
            return _remember(_cache, key, snapshot)
    built = _index(threads.build_thread(cached_entries(session), leaf), readers.format_of(session.format))
    if leaf is None:
        with in_turn("snapshot", session.id):  # another process's save of it goes first
            save_snapshot(session, built, leaf)
    return _remember(_cache, key, built)


def thread_changes(session: Session, leaf: str | None = None) -> list[changes.FileChanges]:
    """The files the thread ending at leaf (or the active one) edited or wrote (changes.py)."""
    # A long session's thread is read a stretch at a time, as an export walks it, and only
    # the entries with tool blocks are kept.
    t = transcript_to_walk(session, leaf)
    tool_entries = []
    for start in range(0, len(t.items), WALK_STRETCH):
        walk_to(t, start, WALK_STRETCH)
        for item in t.items[start : start + WALK_STRETCH]:
            if any(b.type in (readers.TOOL_CALL, readers.TOOL_RESULT) for b in item.entry.blocks):
                tool_entries.append(item.entry)
    return changes.session_changes(tool_entries, session.format)


WALK_STRETCH = 500  # items read at a time by thread_changes


def transcript_to_walk(session: Session, leaf: str | None = None) -> Transcript:
    """The thread for one walk from its start to its end (an export), which lets each stretch
    of items go once past it (walk_to): read anew from its snapshot, never the cached one,
    whose items other requests keep. A thread built from its entries (a short session) is
    the cached one: its entries are in memory already."""
    t = transcript(session, leaf)
    if isinstance(t.items, LazyItems):
        return _from_snapshot(session, leaf) or t
    return t


def transcript_of_entries(entries: list[readers.Entry], format_key: str) -> Transcript:
    """The latest thread of these entries, outside the cache and the snapshots: a redacted
    export's, built from entries whose text was changed."""
    return _index(threads.build_thread(entries), readers.format_of(format_key))


def walk_to(t: Transcript, start: int, ahead: int) -> None:
    """A walk (an export) is at item start: forget what it read of the items before (asked for
    again, they are read again) and read the entries of the next `ahead` items it has not, the
    noise among them, which a page's prefetch leaves to blocks of 200 lines read one by one."""
    if isinstance(t.items, LazyItems):
        t.items.walk_to(start, ahead)


def _built_over_columns(session: Session, leaf: str | None) -> bool:
    try:
        flat.build_snapshots(session, 0, leaf)
    except flat.Fallback:
        return False
    return True


def _light_transcript(session: Session, leaf: str | None) -> Transcript:
    rules = readers.format_of(session.format)
    with _without_gc():
        entries, lines, kept = light_entries(session.id, rules)
        return _index(threads.build_thread(entries, leaf), rules, partial(_facts_of, lines, kept))


@contextmanager
def _without_gc():
    """The cyclic garbage collector would walk every entry made so far, again and again,
    while a long session's are made (a third of the time); they hold no cycles."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


# Sessions shorter than this build their thread faster than a snapshot is worth.
PREPARE_FROM = 2000
# Branches prepared per session at most: each costs a pass over the session.
PREPARE_LEAVES = 20


def prepare_snapshots(session_ids: list[int]) -> int:
    """Build the threads of the long sessions an index pass touched (the active one and
    every other branch), so their first screen stays fast right after the file grew.
    Returns how many threads were built. The entries are loaded without their text
    (entries.light_entries): the page reads the rows it shows when it shows them."""
    built = 0
    for session in Session.objects.filter(id__in=session_ids, entry_count__gte=PREPARE_FROM).iterator():
        # Indexers sharing a PostgreSQL index take turns per session: both would build it.
        with in_turn("snapshot", session.id):
            built += _prepare(session)
    return built


def snapshots_to_prepare(session: Session) -> Callable[[], int] | None:
    """What prepare_snapshots would do for this session, to be done now or later
    (index/idle.py: while the indexer waits for its reading worker); None for a
    session too short to prepare."""
    if session.entry_count < PREPARE_FROM:
        return None
    return partial(prepare_snapshots, [session.id])


def _prepare(session: Session) -> int:
    """prepare_snapshots for one session: how many threads were built."""
    version = snapshots.version_text(session)
    active = ThreadSnapshot.objects.filter(session=session, leaf="").first()
    if active is not None and active.version == version and active.data.get("layout") == snapshots.LAYOUT:
        return 0
    if active is not None and extend_snapshot(session, active):
        return 1
    # Branches are built again below; a leaf that is no more would keep a stale one.
    ThreadSnapshot.objects.filter(session=session).exclude(version=version).delete()
    try:
        return flat.build_snapshots(session, PREPARE_LEAVES)
    except flat.Fallback:
        pass  # broken parents: built from entries, which name what is wrong
    with _without_gc():
        rules = readers.format_of(session.format)
        entries, lines, kept = light_entries(session.id, rules)
        facts = partial(_facts_of, lines, kept)
        active = _index(threads.build_thread(entries), rules, facts)
        save_snapshot(session, active, None)
        built = 1
        for leaf in [x for x in active.thread.leaves if x != active.thread.leaf_id][:PREPARE_LEAVES]:
            save_snapshot(session, _index(threads.build_thread(entries, leaf), rules, facts), leaf)
            built += 1
    return built


def unprepared_sessions() -> list[int]:
    """The long sessions whose active thread has no snapshot of this layout and version:
    every one after an upgrade that changed the layout, or those a pass cut off before it
    prepared them. The indexer prepares them when it starts, so that no page has to build
    a long thread while someone waits for it."""
    current = {
        session_id: (version, data.get("layout"))
        for session_id, version, data in ThreadSnapshot.objects.filter(
            leaf="", session__entry_count__gte=PREPARE_FROM
        ).values_list("session_id", "version", "data")
    }
    return [
        session.id
        for session in Session.objects.filter(entry_count__gte=PREPARE_FROM).only(
            "id", "read_offset", "read_line", "indexed_at"
        )
        if current.get(session.id) != (snapshots.version_text(session), snapshots.LAYOUT)
    ]


def extend_snapshot(session: Session, snapshot: ThreadSnapshot) -> bool:
    """Extend the active thread's snapshot (and rename the leaf in the other branches'
    snapshots) with the lines appended since it was built, reading only those lines and
    writing only the pieces they land in (and those of the calls they answer).
    False when threads.extend_thread cannot (the new lines do not just go on from the
    active leaf, a line reuses an id written before them, or the snapshot predates
    tails): the caller builds it again from every line. A file the indexer read again
    from the start has lost its snapshots (index.passes), so an old snapshot is one the
    file has grown from."""
    data = snapshot.data
    tail = data.get("tail")
    if data.get("layout") != snapshots.LAYOUT or not tail:
        return False
    rules = readers.format_of(session.format)
    entries, _, facts = light_entries(session.id, rules, after=tail["line"])
    if _reuses_ids(session.id, tail["line"], [e.id for e in entries]):
        return False
    extension = threads.extend_thread(tail, entries)
    if extension is None:
        return False
    known = {e.line: f for e, f in zip(entries, facts, strict=True)}
    count, firsts, open_calls = data["count"], data["firsts"], data["open_calls"]
    touched: set[int] = set()
    # The last piece and those of the calls still open: what the new lines may write to.
    pieces = _raw_pieces(
        snapshot.id,
        {(count - 1) // snapshots.PIECE} | {at[0] // snapshots.PIECE for at in open_calls.values()},
    )

    def piece(number: int) -> dict:
        touched.add(number)
        return pieces.setdefault(number, snapshots.empty_piece())

    for k, entry in enumerate(extension.entries):
        i = count + k
        n = i // snapshots.PIECE
        if n == len(firsts):
            firsts.append(entry.line)
        piece(n)["lines"].append(entry.line)
        if layout.is_noise(entry, known[entry.line], rules):
            piece(n)["noise"].append(i)
            data["noise_count"] += 1
        owned = False
        for b, block in enumerate(entry.blocks):
            if not block.call_id:
                continue
            if block.type == readers.TOOL_CALL:
                open_calls[block.call_id] = [i, b]
            elif block.type == readers.TOOL_RESULT and (call := open_calls.pop(block.call_id, None)):
                pair = [*call, i, b]
                for number in {call[0] // snapshots.PIECE, n}:
                    insort(piece(number)["results"], pair)
                if not owned:  # shown under the first call it answers
                    piece(n)["owner"].append([i, call[0]])
                    owned = True
    data["count"] = count + len(extension.entries)
    old_leaf, version = data["leaf_id"], snapshots.version_text(session)
    data["tail"] = extension.tail
    # The other branches' snapshots go on naming the active leaf as it was when they were
    # built (branches_leaf): _from_snapshot renames it as it reads one, so that an append
    # does not read and write every branch's (a 2 GB session's are 20 of 0.9 MB each).
    data.setdefault("branches_leaf", old_leaf)
    with transaction.atomic():
        others = ThreadSnapshot.objects.filter(session=session, version=snapshot.version).exclude(leaf="")
        others.update(version=version)
        _rename_leaf(data, old_leaf, extension.leaf_id)
        ThreadSnapshot.objects.filter(id=snapshot.id).update(version=version, data=data)
        for number in sorted(touched):
            ThreadPiece.objects.update_or_create(
                snapshot_id=snapshot.id, number=number, defaults={"data": pieces[number]}
            )
    return True


def _reuses_ids(session_id: int, line: int, ids: list[str]) -> bool:
    """Whether a line up to line has one of these ids: a later line taking an id over
    changes which line the id names."""
    # line + 0: SQLite would otherwise walk (session, line) up to line, every line of a
    # 2 GB session (2.2 s an append), rather than look the few ids up on (session, entry_id).
    earlier = Entry.objects.alias(at=F("line") + 0).filter(session_id=session_id, at__lte=line)
    return any(earlier.filter(entry_id__in=ids[at : at + 500]).exists() for at in range(0, len(ids), 500))


def _active_leaf_renamed(branch: ThreadSnapshot) -> tuple[str, str]:
    """(the active leaf a branch's snapshot names, the active leaf now): the active thread
    has grown since the branch's snapshot was built (extend_snapshot), or it has not (then
    the two are the same, or the first is not in the snapshot: nothing to rename)."""
    active = ThreadSnapshot.objects.filter(session_id=branch.session_id, leaf="", version=branch.version)
    data = next(iter(active.values_list("data", flat=True)), None)
    if data is None or "branches_leaf" not in data:
        return "", ""
    return data["branches_leaf"], data["leaf_id"]


def _rename_leaf(data: dict, old: str, new: str) -> None:
    """The active branch's leaf is now new: wherever a snapshot offers old, it offers new."""
    if old == new:
        return
    if data["leaf_id"] == old:
        data["leaf_id"] = new
    if old in data["leaves"]:
        data["leaves"].remove(old)
        data["leaves"].append(new)  # leaves are in file order, and new is the last line
    for pairs in data["branch_points"].values():
        for pair in pairs:
            if pair[1] == old:
                pair[1] = new
    for key, alternatives in data["alternatives"].items():
        data["alternatives"][key] = [new if x == old else x for x in alternatives]


def _facts_of(lines: array, facts: array, entry: readers.Entry) -> int:
    return facts[bisect_left(lines, entry.line)]


def _raw_pieces(snapshot_id: int, numbers: set[int]) -> dict[int, dict]:
    found = ThreadPiece.objects.filter(snapshot_id=snapshot_id, number__in=sorted(numbers))
    return dict(found.values_list("number", "data"))


def _runs(indexes) -> list[list[int]]:
    """Sorted indexes as [start, stop) runs: compacted items are most of a long thread."""
    runs: list[list[int]] = []
    for i in indexes:
        if runs and runs[-1][1] == i:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return runs


def save_snapshot(session: Session, t: Transcript, leaf: str | None) -> None:
    """The snapshot (what does not grow with the thread) and its pieces (what does)."""
    thread = t.thread
    items = thread.items
    count = len(items)
    data = {
        "layout": snapshots.LAYOUT,
        "count": count,
        "firsts": [items[i].entry.line for i in range(0, count, snapshots.PIECE)],
        "compacted": _runs(i for i, item in enumerate(items) if item.compacted),
        "alternatives": {i: list(item.alternatives) for i, item in enumerate(items) if item.alternatives},
        "current": {i: item.current for i, item in enumerate(items) if item.current is not None},
        "leaf_id": thread.leaf_id,
        "leaves": thread.leaves,
        "branch_points": {k: [list(pair) for pair in v] for k, v in thread.branch_points.items()},
        "problems": thread.problems,
        "compactions": list(t.compactions),
        "noise_count": len(t.noise),
        # What extend_snapshot goes on from (the active thread only).
        "tail": thread.tail if leaf is None else None,
        "open_calls": {call: list(at) for call, at in t.open_calls.items()} if leaf is None else {},
    }
    pieces = [snapshots.empty_piece() for _ in range(0, count, snapshots.PIECE)]
    for i, item in enumerate(items):
        pieces[i // snapshots.PIECE]["lines"].append(item.entry.line)
        if item.summary:
            pieces[i // snapshots.PIECE]["summaries"].append([i, item.summary])
    for i in sorted(t.noise):
        pieces[i // snapshots.PIECE]["noise"].append(i)
    for call, result in t.results.items():
        for number in {call[0] // snapshots.PIECE, result[0] // snapshots.PIECE}:
            pieces[number]["results"].append([*call, *result])
    for i, call in sorted(t.owner.items()):
        pieces[i // snapshots.PIECE]["owner"].append([i, call])
    for piece in pieces:
        piece["results"].sort()
    with transaction.atomic():
        # A new row, not an update: a reader still on the old one finds its pieces gone
        # (StaleSnapshot) rather than another thread's.
        ThreadSnapshot.objects.filter(session_id=session.id, leaf=leaf or "").delete()
        snapshot = ThreadSnapshot.objects.create(
            session_id=session.id, leaf=leaf or "", version=snapshots.version_text(session), data=data
        )
        for at in range(0, len(pieces), 50):
            ThreadPiece.objects.bulk_create(
                ThreadPiece(snapshot=snapshot, number=n, data=pieces[n])
                for n in range(at, min(at + 50, len(pieces)))
            )


def _from_snapshot(session: Session, leaf: str | None) -> Transcript | None:
    snapshot = ThreadSnapshot.objects.filter(
        session_id=session.id, leaf=leaf or "", version=snapshots.version_text(session)
    ).first()
    if snapshot is None:
        return None
    data = snapshot.data
    if data.get("layout") != snapshots.LAYOUT:
        return None  # written before the page's layout rules: built again, and saved anew
    if leaf:
        _rename_leaf(data, *_active_leaf_renamed(snapshot))
    pieces = _Pieces(snapshot.id, data["count"], data["firsts"])
    items = LazyItems(data, pieces, _LazyEntries(session.id, pieces))
    thread = threads.Thread(
        items=items,
        leaf_id=data["leaf_id"],
        leaves=data["leaves"],
        branch_points={k: [tuple(pair) for pair in v] for k, v in data["branch_points"].items()},
        compactions=_ItemsAt(items, data["compactions"]),
        problems=data["problems"],
    )
    return Transcript(
        thread,
        positions=_Positions(session.id, pieces),
        results=_Results(pieces),
        absorbed=_Absorbed(pieces),
        owner=_Owner(pieces),
        rules=readers.format_of(session.format),
        noise=_Noise(pieces, data["noise_count"]),
        compactions=tuple(data["compactions"]),
    )


class StaleSnapshot(LookupError):
    """A snapshot's piece is gone: the snapshot was built again while it was being read."""


@dataclass(slots=True)
class _Piece:
    lines: list[int]
    noise: set[int]
    pairs: list[tuple[tuple[int, int], tuple[int, int]]]  # (call, result) with either here
    calls: dict[tuple[int, int], tuple[int, int]]  # call here -> its result
    absorbed: set[tuple[int, int]]  # results here shown under their call
    owner: dict[int, int]
    summaries: dict[int, str]


class _Pieces:
    """A snapshot's pieces, each read when first needed; items past count (lines a newer
    extension added after the snapshot was read) are left out."""

    def __init__(self, snapshot_id: int, count: int, firsts: list[int]):
        self.snapshot_id, self.count, self.firsts = snapshot_id, count, firsts
        self.loaded: dict[int, _Piece] = {}

    def load(self, numbers) -> None:
        wanted = {n for n in numbers if n not in self.loaded}
        if not wanted:
            return
        for number, raw in _raw_pieces(self.snapshot_id, wanted).items():
            self.loaded[number] = self._decode(number, raw)
        if missing := wanted - self.loaded.keys():
            raise StaleSnapshot(f"snapshot {self.snapshot_id} has no piece {min(missing)}")

    def _decode(self, number: int, raw: dict) -> _Piece:
        count, first = self.count, number * snapshots.PIECE
        pairs = [((a, b), (c, d)) for a, b, c, d in raw["results"] if c < count]
        return _Piece(
            lines=raw["lines"][: max(count - first, 0)],
            noise={i for i in raw["noise"] if i < count},
            pairs=pairs,
            calls={call: result for call, result in pairs if call[0] // snapshots.PIECE == number},
            absorbed={result for _, result in pairs if result[0] // snapshots.PIECE == number},
            owner={i: call for i, call in raw["owner"] if i < count},
            summaries=dict(raw["summaries"]),
        )

    def of(self, index: int) -> _Piece:
        number = index // snapshots.PIECE
        if number not in self.loaded:
            self.load([number])
        return self.loaded[number]

    def line(self, index: int) -> int:
        return self.of(index).lines[index % snapshots.PIECE]

    def index_of_line(self, line: int) -> int | None:
        """The item at this line, if the thread has one there."""
        number = bisect_right(self.firsts, line) - 1
        if number < 0:
            return None
        lines = self.of(number * snapshots.PIECE).lines
        at = bisect_left(lines, line)
        return number * snapshots.PIECE + at if at < len(lines) and lines[at] == line else None

    def index_after(self, line: int) -> int:
        """The first item after this line (count when none is)."""
        number = bisect_right(self.firsts, line) - 1
        if number < 0:
            return 0
        return min(
            number * snapshots.PIECE + bisect_right(self.of(number * snapshots.PIECE).lines, line), self.count
        )


class _Positions:
    """Entry id -> the last item with it, as Transcript.positions: the id's lines come from
    the index (entry_session_id), the items from the pieces that hold those lines."""

    def __init__(self, session_id: int, pieces: _Pieces):
        self.session_id, self.pieces = session_id, pieces
        self.found: dict[str, int | None] = {}

    def resolve(self, ids) -> dict[str, int]:
        """The positions of those of ids on the thread, in one query per 500."""
        wanted = sorted({x for x in ids if isinstance(x, str) and x not in self.found})
        lines: dict[str, list[int]] = {x: [] for x in wanted}
        for at in range(0, len(wanted), 500):
            found = Entry.objects.filter(session_id=self.session_id, entry_id__in=wanted[at : at + 500])
            for entry_id, line in found.values_list("entry_id", "line"):
                lines[entry_id].append(line)
        if lines:
            self.pieces.load({n for found in lines.values() for n in self._numbers(found)})
        for x, found in lines.items():
            at = (self.pieces.index_of_line(line) for line in sorted(found, reverse=True))
            self.found[x] = next((i for i in at if i is not None), None)
        return {x: self.found[x] for x in ids if self.found.get(x) is not None}

    def _numbers(self, lines: list[int]) -> set[int]:
        return {n for line in lines if (n := bisect_right(self.pieces.firsts, line) - 1) >= 0}

    def get(self, entry_id, default=None):
        found = self.resolve([entry_id]).get(entry_id)
        return default if found is None else found

    def __contains__(self, entry_id) -> bool:
        return self.get(entry_id) is not None

    def __getitem__(self, entry_id) -> int:
        found = self.get(entry_id)
        if found is None:
            raise KeyError(entry_id)
        return found


class _Results:
    """(call item, block) -> (result item, block), as Transcript.results, from the call's piece."""

    def __init__(self, pieces: _Pieces):
        self.pieces = pieces

    def get(self, call: tuple[int, int], default=None):
        if not 0 <= call[0] < self.pieces.count:
            return default
        return self.pieces.of(call[0]).calls.get(call, default)

    def __contains__(self, call) -> bool:
        return self.get(call) is not None

    def crossing(self, start: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """(call, result) pairs with the call before start and the result at start or later:
        read from the results' pieces only."""
        pieces = self.pieces
        numbers = range(start // snapshots.PIECE, len(pieces.firsts))
        pieces.load(numbers)
        return [
            (call, result)
            for n in numbers
            for call, result in pieces.loaded[n].pairs
            if result[0] // snapshots.PIECE == n and call[0] < start <= result[0]
        ]


class _Absorbed:
    """(result item, block) shown under their call, as Transcript.absorbed."""

    def __init__(self, pieces: _Pieces):
        self.pieces = pieces

    def __contains__(self, result) -> bool:
        return 0 <= result[0] < self.pieces.count and result in self.pieces.of(result[0]).absorbed


class _Owner:
    """Result item -> the item of the call it is shown under, as Transcript.owner."""

    def __init__(self, pieces: _Pieces):
        self.pieces = pieces

    def get(self, index: int, default=None):
        if not 0 <= index < self.pieces.count:
            return default
        return self.pieces.of(index).owner.get(index, default)

    def __getitem__(self, index: int) -> int:
        found = self.get(index)
        if found is None:
            raise KeyError(index)
        return found


class _Noise(AbstractSet):
    """The items hidden until "show all entries", as Transcript.noise; their count is known
    without reading a piece."""

    def __init__(self, pieces: _Pieces, count: int):
        self.pieces, self.count = pieces, count

    def __contains__(self, index) -> bool:
        return (
            isinstance(index, int) and 0 <= index < self.pieces.count and index in self.pieces.of(index).noise
        )

    def __len__(self) -> int:
        return self.count

    def __iter__(self):
        pieces = self.pieces
        pieces.load(range(len(pieces.firsts)))
        for number in range(len(pieces.firsts)):
            yield from sorted(pieces.loaded[number].noise)


def first_item_after(t: Transcript, line: int) -> int:
    """The first item of the thread written after line (len(items) when none was)."""
    if isinstance(t.items, LazyItems):
        return t.items.pieces.index_after(line)
    return bisect_right(t.items, line, key=item_line)


def results_crossing(t: Transcript, start: int) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(call, result) pairs with the call before item start and the result at start or later."""
    if isinstance(t.results, _Results):
        return t.results.crossing(start)
    return [(call, result) for call, result in t.results.items() if call[0] < start <= result[0]]


def find_positions(t: Transcript, ids) -> dict[str, int]:
    """The positions of those of ids on the thread: one query for all of them on a snapshot."""
    if isinstance(t.positions, _Positions):
        return t.positions.resolve(ids)
    return {x: t.positions[x] for x in ids if x in t.positions}


class _LazyEntries:
    """A snapshot's entries, loaded from the index a block of items at a time."""

    BLOCK = 200

    def __init__(self, session_id: int, pieces: _Pieces):
        self.session_id, self.pieces = session_id, pieces
        self.loaded: dict[int, readers.Entry] = {}

    def entry(self, index: int) -> readers.Entry:
        line = self.pieces.line(index)
        if line not in self.loaded:
            start = index // self.BLOCK * self.BLOCK
            stop = min(start + self.BLOCK, self.pieces.count) - 1
            self.loaded.update(load_lines(self.session_id, self.pieces.line(start), self.pieces.line(stop)))
        return self.loaded[line]

    def prefetch(self, indexes: list[int]) -> None:
        """Load these items' entries in one query: a page of compaction banners needs one
        entry here and one there, not a block of 200 around each."""
        self.pieces.load({i // snapshots.PIECE for i in indexes})
        lines = [line for i in indexes if (line := self.pieces.line(i)) not in self.loaded]
        for at in range(0, len(lines), 500):
            batch = lines[at : at + 500]
            marks = ", ".join(["%s"] * len(batch))
            found = select_entries(f"session_id = %s AND line IN ({marks})", [self.session_id, *batch])
            self.loaded.update((e.line, e) for e in found)


class _ItemsAt(Sequence):
    """The items at these positions, each made when asked for: a 2 GB session's 3,300
    compactions would otherwise make 3,300 items for a page that shows the latest."""

    def __init__(self, items: LazyItems, positions: list[int]):
        self.items, self.positions = items, positions

    def __len__(self) -> int:
        return len(self.positions)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self.items[i] for i in self.positions[index]]
        return self.items[self.positions[index]]


class LazyItems(Sequence):
    """A snapshot's items, each made when first asked for: a 20,000-item thread
    should not cost 20,000 objects to show its first 50."""

    def __init__(self, data: dict, pieces: _Pieces, source: _LazyEntries):
        self.pieces, self.source = pieces, source
        self.count = data["count"]
        self.compacted = data["compacted"]  # [start, stop) runs
        # JSON keys are strings.
        self.alternatives = {int(k): tuple(v) for k, v in data["alternatives"].items()}
        self.current = {int(k): v for k, v in data["current"].items()}
        self.made: dict[int, LazyItem] = {}

    def __len__(self) -> int:
        return self.count

    def prefetch(self, indexes: list[int]) -> None:
        self.source.prefetch(indexes)

    def walk_to(self, start: int, ahead: int) -> None:
        """Forget the items before start, their entries and pieces; read the next ahead items'."""
        if start >= self.count:
            self.made, self.source.loaded, self.pieces.loaded = {}, {}, {}
            return
        line, number = self.pieces.line(start), start // snapshots.PIECE
        self.made = {i: item for i, item in self.made.items() if i >= start}
        self.source.loaded = {n: e for n, e in self.source.loaded.items() if n >= line}
        self.pieces.loaded = {n: piece for n, piece in self.pieces.loaded.items() if n >= number}
        self.source.prefetch(list(range(start, min(start + ahead, self.count))))

    def is_compacted(self, index: int) -> bool:
        at = bisect_right(self.compacted, [index, float("inf")]) - 1
        return at >= 0 and index < self.compacted[at][1]

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.count))]
        if index < 0:
            index += self.count
        if not 0 <= index < self.count:
            raise IndexError(index)
        item = self.made.get(index)
        if item is None:
            item = self.made[index] = LazyItem(
                index,
                self,
                self.is_compacted(index),
                self.alternatives.get(index, ()),
                self.current.get(index),
            )
        return item


class LazyItem:
    """Quacks like threads.ThreadItem; its entry is read from the index when first needed,
    its summary from its piece."""

    __slots__ = ("_index", "_items", "compacted", "alternatives", "current")

    def __init__(self, index, items, compacted, alternatives, current):
        self._index, self._items = index, items
        self.compacted, self.alternatives, self.current = compacted, alternatives, current

    @property
    def entry(self) -> readers.Entry:
        return self._items.source.entry(self._index)

    @property
    def summary(self) -> str:
        return self._items.pieces.of(self._index).summaries.get(self._index, "")

    @property
    def line(self) -> int:
        return self._items.pieces.line(self._index)


def item_line(item) -> int:
    """An item's line without loading a lazy item's entry."""
    return item.line if isinstance(item, LazyItem) else item.entry.line


def forget_session(session_id: int) -> None:
    """Drop the threads built for one session: a snapshot they read from was built again."""
    with _lock:
        for cache in (_cache, _entries_cache):
            for key in [key for key in cache if key[0] == session_id]:
                del cache[key]


def clear_cache() -> None:
    with _lock:
        _cache.clear()
        _entries_cache.clear()


def _index(
    thread: threads.Thread, rules: readers.Format, facts: Callable[[readers.Entry], int] | None = None
) -> Transcript:
    """What the page needs to find things in the thread, by its session's format (rules);
    facts: what the index kept of an entry's text (layout.is_noise), for entries loaded
    without it."""
    positions: dict[str, int] = {}
    open_calls: dict[str, tuple[int, int]] = {}
    results: dict[tuple[int, int], tuple[int, int]] = {}
    absorbed: set[tuple[int, int]] = set()
    owner: dict[int, int] = {}
    for i, item in enumerate(thread.items):
        positions[item.entry.id] = i
        for b, block in enumerate(item.entry.blocks):
            if not block.call_id:
                continue
            if block.type == readers.TOOL_CALL:
                open_calls[block.call_id] = (i, b)
            elif block.type == readers.TOOL_RESULT and (call := open_calls.pop(block.call_id, None)):
                results[call] = (i, b)
                absorbed.add((i, b))
                owner.setdefault(i, call[0])
    entries = [item.entry for item in thread.items]
    if facts is None:
        noise = frozenset(i for i, entry in enumerate(entries) if layout.is_noise(entry, 0, rules))
    else:
        noise = frozenset(i for i, entry in enumerate(entries) if layout.is_noise(entry, facts(entry), rules))
    where = {id(item): i for i, item in enumerate(thread.items)} if thread.compactions else {}
    compactions = tuple(where[id(item)] for item in thread.compactions)
    return Transcript(thread, positions, results, absorbed, owner, rules, noise, compactions, open_calls)


def transcript_with_entry(session: Session, entry_id: str) -> Transcript | None:
    """The active thread if it holds entry_id, else the first other branch that does."""
    shown = transcript(session)
    if entry_id in shown.positions:
        return shown
    for leaf in shown.thread.leaves:
        if leaf != shown.thread.leaf_id and entry_id in (other := transcript(session, leaf)).positions:
            return other
    return None
