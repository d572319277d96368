"""Loading a session's rows back into reader entries, the in-memory cache of built threads,
and the thread snapshots kept in the database (ThreadSnapshot)."""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from threading import Lock

import orjson
from django.db import connection

from sessionviewer import readers, threads
from sessionviewer.index import rows
from sessionviewer.models import Entry, Session, ThreadSnapshot
from sessionviewer.transcripts import layout

UnknownLeaf = threads.UnknownLeaf


def _select_entries(where: str, params: list) -> list[readers.Entry]:
    """Entries from a plain cursor rather than the ORM: a long session has tens of
    thousands of rows, and Django's per-value converters cost several times the query."""
    table = connection.ops.quote_name(Entry._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in rows.LOADED_COLUMNS)
    query = f"SELECT {columns} FROM {table} WHERE {where} ORDER BY line"  # noqa: S608 - names are ours
    with connection.cursor() as cursor:
        cursor.execute(query, params)
        entries = rows.entries_from_rows(cursor.fetchall())
    _load_raw(table, [e for e in entries if e.kind == readers.RAW], params[0])
    return entries


def _load_raw(table: str, unknown: list[readers.Entry], session_id: int) -> None:
    """The whole line of each unknown entry (its raw column), which the page shows folded.
    Only these rows have one worth reading, and most sessions have none."""
    by_line = {e.line: e for e in unknown}
    lines = sorted(by_line)
    for at in range(0, len(lines), 500):
        batch = lines[at : at + 500]
        marks = ", ".join(["%s"] * len(batch))
        query = f"SELECT line, raw FROM {table} WHERE session_id = %s AND line IN ({marks})"  # noqa: S608
        with connection.cursor() as cursor:
            cursor.execute(query, [session_id, *batch])
            for line, raw in cursor.fetchall():
                if raw is not None:
                    by_line[line].raw = orjson.loads(raw)


def load_entries(session: Session) -> list[readers.Entry]:
    """The session's entries in file order, as the reader produced them."""
    return _select_entries("session_id = %s", [session.id])


def _light_entries(session_id: int, after: int = -1) -> tuple[list[readers.Entry], array, array]:
    """The session's entries without their text (rows.light_entries_from_rows), with the
    lines and text_facts of each, read a batch at a time: a thread snapshot needs ids,
    parents and kinds, and a 2 GB session's text would not fit in memory. after: only the
    lines after this one."""
    table = connection.ops.quote_name(Entry._meta.db_table)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(c) for c in rows.LIGHT_COLUMNS)
    # The text only where the thread needs it: a compact summary's, or a row without text_facts.
    text = f"CASE WHEN {quote('text_facts')} = 0 OR {quote('extra')} LIKE %s THEN {quote('text')} ELSE '' END"
    where = "session_id = %s AND line > %s"
    query = f"SELECT {columns}, {text} FROM {table} WHERE {where} ORDER BY line"  # noqa: S608 - names are ours
    entries, lines, facts = [], array("q"), array("H")
    with connection.cursor() as cursor:
        cursor.execute(query, ['%"is_compact_summary":true%', session_id, after])
        while batch := cursor.fetchmany(500):
            for entry, known in rows.light_entries_from_rows(batch):
                entries.append(entry)
                lines.append(entry.line)
                facts.append(known)
    return entries, lines, facts


def load_entry(session_id: int, line: int) -> readers.Entry | None:
    """The entry at this line of the session, whole."""
    return _load_lines(session_id, line, line).get(line)


def _load_lines(session_id: int, first: int, last: int) -> dict[int, readers.Entry]:
    entries = _select_entries("session_id = %s AND line BETWEEN %s AND %s", [session_id, first, last])
    return {e.line: e for e in entries}


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
    noise: frozenset[int] = frozenset()  # items hidden until "show all entries" (layout.is_noise)
    first_prompt: int | None = None  # the first prompt a person typed: never folded away
    folds: layout.Folds = field(default_factory=lambda: layout.Folds([]))  # one per compaction
    compactions: tuple[int, ...] = ()  # the items of the thread's compaction boundaries
    open_calls: dict[str, tuple[int, int]] = field(default_factory=dict)  # calls still without a result

    @property
    def items(self) -> list[threads.ThreadItem]:
        return self.thread.items


def _version(session: Session) -> tuple:
    # read_offset moves on every append; indexed_at on every rewrite the indexer made.
    return (session.id, session.read_offset, session.read_line, session.indexed_at)


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
    key = _version(session)
    found = _recall(_entries_cache, key)
    return found if found is not None else _remember(_entries_cache, key, load_entries(session))


def transcript(session: Session, leaf: str | None = None) -> Transcript:
    """The thread ending at leaf (or the active leaf), built once per (session, version, leaf).

    Threads are also kept in the database as snapshots (ThreadSnapshot): the active
    one always, other branches of long sessions too. After a restart, in another
    worker, or for a session too long to load whole quickly, the first screen then
    reads only the rows it shows.
    """
    key = (*_version(session), leaf)
    found = _recall(_cache, key)
    if found is not None:
        return found
    if (snapshot := _from_snapshot(session, leaf)) is not None:
        return _remember(_cache, key, snapshot)
    built = _index(threads.build_thread(cached_entries(session), leaf))
    if leaf is None or session.entry_count >= PREPARE_FROM:
        save_snapshot(session, built, leaf)
    return _remember(_cache, key, built)


# The version of what a snapshot keeps for the page's layout (noise, first prompt) and its
# thread (3: a summary's leafUuid picks the active leaf): a snapshot of another version is
# built again.
LAYOUT = 3
# Sessions shorter than this build their thread faster than a snapshot is worth.
PREPARE_FROM = 2000
# Branches prepared per session at most: each costs a pass over the session.
PREPARE_LEAVES = 20


def prepare_snapshots(session_ids: list[int]) -> int:
    """Build the threads of the long sessions an index pass touched (the active one and
    every other branch), so their first screen stays fast right after the file grew.
    Returns how many threads were built. The entries are loaded without their text
    (_light_entries): the page reads the rows it shows when it shows them."""
    built = 0
    for session in Session.objects.filter(id__in=session_ids, entry_count__gte=PREPARE_FROM).iterator():
        version = version_text(session)
        active = ThreadSnapshot.objects.filter(session=session, leaf="").first()
        if active is not None and active.version == version:
            continue
        if active is not None and extend_snapshot(session, active):
            built += 1
            continue
        # Branches are built again below; a leaf that is no more would keep a stale one.
        ThreadSnapshot.objects.filter(session=session).exclude(version=version).delete()
        entries, lines, kept = _light_entries(session.id)
        facts = partial(_facts_of, lines, kept)
        active = _index(threads.build_thread(entries), facts)
        save_snapshot(session, active, None)
        built += 1
        for leaf in [x for x in active.thread.leaves if x != active.thread.leaf_id][:PREPARE_LEAVES]:
            save_snapshot(session, _index(threads.build_thread(entries, leaf), facts), leaf)
            built += 1
    return built


def extend_snapshot(session: Session, snapshot: ThreadSnapshot) -> bool:
    """Extend the active thread's snapshot (and rename the leaf in the other branches'
    snapshots) with the lines appended since it was built, reading only those lines.
    False when threads.extend_thread cannot (the new lines do not just go on from the
    active leaf, a line reuses an id written before them, or the snapshot predates
    tails): the caller builds it again from every line. A file the indexer read again
    from the start has lost its snapshots (index.passes), so an old snapshot is one the
    file has grown from."""
    data = snapshot.data
    tail = data.get("tail")
    if data.get("layout") != LAYOUT or not tail:
        return False
    entries, _, facts = _light_entries(session.id, after=tail["line"])
    if _reuses_ids(session.id, tail["line"], [e.id for e in entries]):
        return False
    extension = threads.extend_thread(tail, entries)
    if extension is None:
        return False
    known = {e.line: f for e, f in zip(entries, facts, strict=True)}
    base = len(data["lines"])
    open_calls = data["open_calls"]
    for k, entry in enumerate(extension.entries):
        i = base + k
        data["lines"].append(entry.line)
        data["ids"].append(entry.id)
        if layout.is_noise(entry, known[entry.line]):
            data["noise"].append(i)
        if data["first_prompt"] is None and layout.is_prompt(entry, known[entry.line]):
            data["first_prompt"] = i
        owned = False
        for b, block in enumerate(entry.blocks):
            if not block.call_id:
                continue
            if block.type == readers.TOOL_CALL:
                open_calls[block.call_id] = [i, b]
            elif block.type == readers.TOOL_RESULT and (call := open_calls.pop(block.call_id, None)):
                data["results"].append([*call, i, b])
                if not owned:  # shown under the first call it answers
                    data["owner"].append([i, call[0]])
                    owned = True
    old_leaf, version = data["leaf_id"], version_text(session)
    data["tail"] = extension.tail
    for other in ThreadSnapshot.objects.filter(session=session).exclude(leaf=""):
        if other.version == snapshot.version:
            _rename_leaf(other.data, old_leaf, extension.leaf_id)
            ThreadSnapshot.objects.filter(id=other.id).update(version=version, data=other.data)
    _rename_leaf(data, old_leaf, extension.leaf_id)
    ThreadSnapshot.objects.filter(id=snapshot.id).update(version=version, data=data)
    return True


def _reuses_ids(session_id: int, line: int, ids: list[str]) -> bool:
    """Whether a line up to line has one of these ids: a later line taking an id over
    changes which line the id names."""
    for at in range(0, len(ids), 500):
        batch = ids[at : at + 500]
        if Entry.objects.filter(session_id=session_id, line__lte=line, entry_id__in=batch).exists():
            return True
    return False


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


def version_text(session: Session) -> str:
    return ":".join(str(part) for part in _version(session))


def save_snapshot(session: Session, t: Transcript, leaf: str | None) -> None:
    thread = t.thread
    compactions = {id(item) for item in thread.compactions}
    items = thread.items
    # Parallel arrays and sparse maps: a 20,000-item thread reads back in milliseconds.
    data = {
        "lines": [item.entry.line for item in items],
        "ids": [item.entry.id for item in items],
        "compacted": [i for i, item in enumerate(items) if item.compacted],
        "summaries": {i: item.summary for i, item in enumerate(items) if item.summary},
        "alternatives": {i: list(item.alternatives) for i, item in enumerate(items) if item.alternatives},
        "current": {i: item.current for i, item in enumerate(items) if item.current is not None},
        "leaf_id": thread.leaf_id,
        "leaves": thread.leaves,
        "branch_points": {k: [list(pair) for pair in v] for k, v in thread.branch_points.items()},
        "problems": thread.problems,
        "compactions": [i for i, item in enumerate(items) if id(item) in compactions],
        "results": [[*call, *result] for call, result in t.results.items()],
        "owner": [[i, j] for i, j in t.owner.items()],
        "layout": LAYOUT,
        "noise": sorted(t.noise),
        "first_prompt": t.first_prompt,
        # What extend_snapshot goes on from (the active thread only).
        "tail": thread.tail if leaf is None else None,
        "open_calls": {call: list(at) for call, at in t.open_calls.items()} if leaf is None else {},
    }
    ThreadSnapshot.objects.update_or_create(
        session_id=session.id, leaf=leaf or "", defaults={"version": version_text(session), "data": data}
    )


def _from_snapshot(session: Session, leaf: str | None) -> Transcript | None:
    snapshot = ThreadSnapshot.objects.filter(
        session_id=session.id, leaf=leaf or "", version=version_text(session)
    ).first()
    if snapshot is None:
        return None
    data = snapshot.data
    if data.get("layout") != LAYOUT:
        return None  # written before the page's layout rules: built again, and saved anew
    ids = data["ids"]
    items = LazyItems(data, _LazyEntries(session.id, data["lines"]))
    thread = threads.Thread(
        items=items,
        leaf_id=data["leaf_id"],
        leaves=data["leaves"],
        branch_points={k: [tuple(pair) for pair in v] for k, v in data["branch_points"].items()},
        compactions=[items[i] for i in data["compactions"]],
        problems=data["problems"],
    )
    results = {(a, b): (c, d) for a, b, c, d in data["results"]}
    noise = frozenset(data["noise"])
    prompt = data["first_prompt"]
    return Transcript(
        thread,
        positions=dict(zip(ids, range(len(ids)), strict=True)),
        results=results,
        absorbed=set(results.values()),
        owner=dict(data["owner"]),
        noise=noise,
        first_prompt=prompt,
        folds=layout.Folds(layout.fold_ranges(data["compacted"], data["compactions"], noise, prompt)),
        compactions=tuple(data["compactions"]),
    )


class _LazyEntries:
    """A snapshot's entries, loaded from the index a block of items at a time."""

    BLOCK = 200

    def __init__(self, session_id: int, lines: list[int]):
        self.session_id, self.lines = session_id, lines
        self.loaded: dict[int, readers.Entry] = {}

    def entry(self, index: int) -> readers.Entry:
        line = self.lines[index]
        if line not in self.loaded:
            start = index // self.BLOCK * self.BLOCK
            block = self.lines[start : start + self.BLOCK]
            self.loaded.update(_load_lines(self.session_id, block[0], block[-1]))
        return self.loaded[line]

    def prefetch(self, indexes: list[int]) -> None:
        """Load these items' entries in one query: a page of compaction banners needs one
        entry here and one there, not a block of 200 around each."""
        lines = [self.lines[i] for i in indexes if self.lines[i] not in self.loaded]
        for at in range(0, len(lines), 500):
            batch = lines[at : at + 500]
            marks = ", ".join(["%s"] * len(batch))
            found = _select_entries(f"session_id = %s AND line IN ({marks})", [self.session_id, *batch])
            self.loaded.update((e.line, e) for e in found)


class LazyItems(Sequence):
    """A snapshot's items, each made when first asked for: a 20,000-item thread
    should not cost 20,000 objects to show its first 50."""

    def __init__(self, data: dict, source: _LazyEntries):
        self.source = source
        self.count = len(data["lines"])
        self.compacted = set(data["compacted"])
        # JSON keys are strings.
        self.summaries = {int(k): v for k, v in data["summaries"].items()}
        self.alternatives = {int(k): tuple(v) for k, v in data["alternatives"].items()}
        self.current = {int(k): v for k, v in data["current"].items()}
        self.made: dict[int, LazyItem] = {}

    def __len__(self) -> int:
        return self.count

    def prefetch(self, indexes: list[int]) -> None:
        self.source.prefetch(indexes)

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
                self.source,
                index in self.compacted,
                self.summaries.get(index, ""),
                self.alternatives.get(index, ()),
                self.current.get(index),
            )
        return item


class LazyItem:
    """Quacks like threads.ThreadItem; its entry is read from the index when first needed."""

    __slots__ = ("_index", "_source", "compacted", "summary", "alternatives", "current")

    def __init__(self, index, source, compacted, summary, alternatives, current):
        self._index, self._source = index, source
        self.compacted, self.summary, self.alternatives, self.current = (
            compacted,
            summary,
            alternatives,
            current,
        )

    @property
    def entry(self) -> readers.Entry:
        return self._source.entry(self._index)

    @property
    def line(self) -> int:
        return self._source.lines[self._index]


def item_line(item) -> int:
    """An item's line without loading a lazy item's entry."""
    return item.line if isinstance(item, LazyItem) else item.entry.line


def clear_cache() -> None:
    with _lock:
        _cache.clear()
        _entries_cache.clear()


def _index(thread: threads.Thread, facts: Callable[[readers.Entry], int] | None = None) -> Transcript:
    """What the page needs to find things in the thread; facts: what the index kept of an
    entry's text (layout.is_noise), for entries loaded without it."""
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
        noise = frozenset(i for i, entry in enumerate(entries) if layout.is_noise(entry))
    else:
        noise = frozenset(i for i, entry in enumerate(entries) if layout.is_noise(entry, facts(entry)))
    prompt = layout.first_prompt(entries, facts)
    where = {id(item): i for i, item in enumerate(thread.items)} if thread.compactions else {}
    compactions = tuple(where[id(item)] for item in thread.compactions)
    compacted = (i for i, item in enumerate(thread.items) if item.compacted)
    folds = layout.Folds(layout.fold_ranges(compacted, compactions, noise, prompt))
    return Transcript(
        thread, positions, results, absorbed, owner, noise, prompt, folds, compactions, open_calls
    )


def transcript_with_entry(session: Session, entry_id: str) -> Transcript | None:
    """The active thread if it holds entry_id, else the first other branch that does."""
    shown = transcript(session)
    if entry_id in shown.positions:
        return shown
    for leaf in shown.thread.leaves:
        if leaf != shown.thread.leaf_id and entry_id in (other := transcript(session, leaf)).positions:
            return other
    return None
