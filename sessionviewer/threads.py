"""Reply threads: which entries of one session file make up the conversation shown.

Pure functions over the entries of one file in file order (``read_session(...).entries``).
No Django, so the indexer, the views and the tests call them directly.

    build_thread(entries, leaf=None) -> Thread
        The thread ending at ``leaf`` (any entry id), or at the active leaf when
        ``leaf`` is None. Raises ``UnknownLeaf`` when ``leaf`` names no entry of
        the main thread (the API answers 404).
    active_leaf(entries) -> str | None
        The id of the entry the session ended on; None when nothing was said.
    summaries_by_leaf(entries) -> dict[str, str]
        Claude Code ``summary`` lines, leafUuid -> title (a later line wins).

``Thread``: ``items`` (a ``ThreadItem`` per entry shown, in file order), ``leaf_id``,
``leaves`` (every leaf a branch selector can switch to, in file order, the active one
included), ``branch_points`` (entry id -> ``[(child id, leaf id)]``, one pair per
alternative, the child being the alternative's first entry), ``compactions`` (this
thread's compaction items) and ``problems`` (broken links, as text with line numbers).

``ThreadItem``: ``entry``, ``compacted`` (summarised away by a later compaction),
``summary`` (compaction items: the summary text), ``alternatives`` (branch point items:
one leaf id per alternative, in file order) and ``current`` (the index in
``alternatives`` this thread follows; None when the thread stops before the branch).

How the thread is found:

- Parents. An entry's parent is the latest entry written before it with its parent id:
  ids repeat, and every walk then runs backwards through the file and cannot loop. A
  Claude Code compact boundary continues at its ``logical_parent_id``, or at the last
  message written before it when that id is not in the file. A message with no usable
  parent (none at all, not in the file, written later, a cycle) follows the last
  message written before it, so files without parent links read in file order. A
  non-conversational line without a parent (file-history-snapshot, summary, header)
  hangs off the line before it and never breaks the chain. Subagent sidechain lines
  inside a main file are left out. A fork (a branch or header line naming its
  ``parent_session_path``) copies its parent's last messages, whose parents are in the
  parent file: that is how forks are written, not a problem to report.
- Regions. Prompts and new replies start a region; everything else (tool results,
  later lines of the same streamed reply, meta lines, progress, system and other
  non-conversational lines) belongs to its parent's region. A thread is the chain of
  regions from the first line to the leaf's, so tool results and the parts of a
  streamed reply that hang off the chain come along, and a prompt that starts another
  branch does not.
- Leaves. A region with no region below it ends a thread. Its leaf is its newest
  conversational entry with no conversational descendant: by timestamp, a missing
  timestamp counting as the previous line's, ties to the later line. The active leaf is
  the newest of these, unless a Claude ``summary`` line names (``leafUuid``) a message of
  this file: then it is the newest leaf at or below that message (the last such line
  wins), whatever the clocks say. A summary naming a message of another file changes
  nothing here; ``last-prompt`` pointers are not used. A
  region with more than one region below it (a rewind, an edit, a pi branch) is a branch
  point; each alternative offers the newest leaf below it, so every message is on the
  thread of the active leaf or of a listed one.
- Compaction. Items before a Claude compact boundary are compacted; the boundary's
  summary is the text of the following ``is_compact_summary`` line. A Go agent or
  OpenClaw compaction compacts the items before its ``first_kept_id``.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime

from sessionviewer.readers import (
    ASSISTANT,
    BRANCH,
    COMPACTION,
    HEADER,
    MESSAGE,
    SUMMARY,
    TOOL,
    TOOL_RESULT,
    USER,
    Entry,
)


class UnknownLeaf(LookupError):
    """The leaf asked for names no entry of the session's main thread."""

    def __init__(self, leaf: str):
        super().__init__(f"no entry {leaf!r} in this session")
        self.leaf = leaf


@dataclass(slots=True)
class ThreadItem:
    entry: Entry
    compacted: bool = False
    summary: str = ""
    alternatives: tuple[str, ...] = ()
    current: int | None = None

    def to_dict(self) -> dict:
        return {
            "entry": self.entry.to_dict(),
            "compacted": self.compacted,
            "summary": self.summary,
            "alternatives": list(self.alternatives),
            "current": self.current,
        }


@dataclass(slots=True)
class Thread:
    items: list[ThreadItem]
    leaf_id: str | None
    leaves: list[str]
    branch_points: dict[str, list[tuple[str, str]]]
    compactions: list[ThreadItem]
    problems: list[str]
    tail: dict | None = None  # what extend_thread needs to go on from the active leaf

    def to_dict(self) -> dict:
        return {
            "leaf_id": self.leaf_id,
            "leaves": self.leaves,
            "branch_points": {
                key: [{"child": child, "leaf": leaf} for child, leaf in pairs]
                for key, pairs in self.branch_points.items()
            },
            "compactions": [item.entry.id for item in self.compactions],
            "problems": self.problems,
            "items": [item.to_dict() for item in self.items],
        }


def build_thread(entries: list[Entry], leaf: str | None = None) -> Thread:
    """The thread ending at ``leaf``, or at the active leaf; see the module docstring."""
    tree = _Tree(entries)
    tip = tree.active if leaf is None else tree.find(leaf)
    region = tree.region
    path: set[int] = set()
    if tip is None:
        # Nothing was said: show what there is, in file order.
        shown = tree.order
    else:
        start = region[tip]
        while start is not None:
            path.add(start)
            start = tree.start_parent.get(start)
        # A thread without branches shows every line.
        shown = tree.order if len(path) == len(tree.starts) else [i for i in tree.order if region[i] in path]

    items = [ThreadItem(entries[i]) for i in shown]
    branch_points = {}
    position = None
    for key, pairs in tree.branches:
        branch_points[entries[key].id] = [(entries[child].id, entries[found].id) for child, found in pairs]
        if region[key] in path:
            position = position or {index: pos for pos, index in enumerate(shown)}
            item = items[position[key]]
            item.alternatives = tuple(entries[found].id for _, found in pairs)
            item.current = next((n for n, (child, _) in enumerate(pairs) if child in path), None)

    problems = list(tree.problems)
    return Thread(
        items=items,
        leaf_id=None if tip is None else entries[tip].id,
        leaves=[entries[i].id for i in tree.leaves],
        branch_points=branch_points,
        compactions=_mark_compactions(items, shown, tree.compactions, problems),
        problems=problems,
        tail=tree.tail() if leaf is None else None,
    )


# Rows of the active leaf's region after the leaf that a tail keeps at most.
TAIL_LIMIT = 1000


def _clock_text(clock: datetime | None) -> str | None:
    return None if clock is None else clock.isoformat()


def _newer(a: tuple[datetime | None, int], b: tuple[datetime | None, int]) -> bool:
    """Whether leaf a = (clock, line) wins over leaf b, as _Tree._find_leaves decides."""
    if a[0] is not None and b[0] is not None and a[0] != b[0]:
        return a[0] > b[0]  # a naive and an aware clock raise TypeError: the caller rebuilds
    return a[1] > b[1]


@dataclass(slots=True)
class Extension:
    """What extend_thread found: the entries the thread gains, its new leaf and tail."""

    entries: list[Entry]
    leaf_id: str
    tail: dict | None


def extend_thread(tail: dict, entries: list[Entry]) -> Extension | None:
    """The active thread after lines were appended, from the tail of the thread built
    before them (Thread.tail) and the new entries alone, in file order.

    This is build_thread's answer only when the new lines just go on from the active leaf,
    the usual case of a live session: then None is returned and the caller builds the
    thread again from every line. That is when a new line
    - hangs off a line outside the leaf's region, or off a line of it before the leaf (a
      rewind, an edit, a late result of an earlier call), or names a parent not written
      before it in the region;
    - starts a second region below the same region (a branch);
    - is a compaction, a summary line, a compaction's summary or a fork's branch line, or
      the first main-thread message of a file that had only sidechain messages;
    - makes a leaf that is not newer than the old one (the clock stepped back), or leaves
      the old leaf with nothing newer below it.
    """
    try:
        return _extend(tail, entries)
    except TypeError:  # clocks that do not compare (naive and aware)
        return None


def _extend(tail: dict, entries: list[Entry]) -> Extension | None:
    # Per line, by line number: [parent line, carried message id, talk, below, region].
    rows: dict[int, list] = {}
    ids: dict[str, int] = {}
    for id_, line, parent, carried, talk, below in tail["rows"]:
        rows[line] = [parent, carried, talk, below, 0]
        if id_ is not None:
            ids[id_] = line
    leaf_line = tail["rows"][0][1]
    leaf_id = tail["leaf"]
    names = {row[1]: row[0] for row in tail["rows"]}  # None where a later line took the id
    clock = None if tail["now"] is None else datetime.fromisoformat(tail["now"])
    leaf_key = (None if tail["clock"] is None else datetime.fromisoformat(tail["clock"]), leaf_line)
    last_any, last_message = tail["last_any"], tail["last_message"]
    left_out = tail["sidechains_left_out"]
    child: dict[int, int] = {}  # region -> the region below it (0: the leaf's)
    deepest = 0
    added: list[Entry] = []
    clocks: dict[int, datetime | None] = {}
    for e in entries:
        talk = e.kind == MESSAGE and e.role in _TALK
        if e.is_sidechain and left_out:
            continue
        if talk and not e.is_sidechain and not left_out:
            return None  # the first main-thread message: sidechains leave the thread
        if e.kind in (COMPACTION, SUMMARY) or e.extra.get("is_compact_summary"):
            return None
        if e.kind in (BRANCH, HEADER) and e.extra.get("parent_session_path"):
            return None
        if e.parent_id:
            p = ids.get(e.parent_id)
        else:
            p = (last_message if last_message is not None else last_any) if talk else last_any
        if p is None or p not in rows:
            return None
        parent = rows[p]
        mid = e.message_id
        prompt = False
        if talk and e.role == USER:
            starts = prompt = not e.is_meta and not any(b.type == TOOL_RESULT for b in e.blocks)
        elif talk and e.role == ASSISTANT:
            starts = not e.is_meta and not (mid and mid == parent[1])
        else:
            starts = False
        carried = mid or ("" if prompt else parent[1])
        region = parent[4]
        if starts:
            if region in child:
                return None  # a second region below one: a branch
            child[region] = deepest = len(child) + 1
            region = deepest
        if talk:
            # Every line above has a message below it now (those above a message had already).
            up = p
            while up is not None and up in rows and not rows[up][3]:
                rows[up][3] = True
                if rows[up][2]:
                    break
                up = rows[up][0]
        rows[e.line] = [p, carried, talk, False, region]
        ids[e.id] = e.line
        names[e.line] = e.id
        last_any = e.line
        if talk:
            last_message = e.line
        if e.timestamp is not None:
            clock = e.timestamp
        clocks[e.line] = clock
        added.append(e)

    by_line = {e.line: e for e in added}
    best = None
    for line, (_, _, talk, below, region) in rows.items():
        if region == deepest and talk and not below and line in by_line:
            key = (clocks[line], line)
            if best is None or _newer(key, best):
                best = key
    old_leaf = rows[leaf_line]
    if best is None or not _newer(best, leaf_key):
        if deepest or old_leaf[3]:
            return None  # the old leaf has something below it, yet nothing newer
        tip, tip_id = leaf_line, leaf_id
    else:
        tip, tip_id = best[1], by_line[best[1]].id
    tip_region = rows[tip][4]
    kept = sorted(line for line, row in rows.items() if row[4] == tip_region and line >= tip)
    new_tail = None
    if len(kept) <= TAIL_LIMIT:
        keep = set(kept)
        new_tail = {
            "line": max([tail["line"], *(e.line for e in entries)]),
            "leaf": tip_id,
            "rows": [
                [
                    names[line] if ids.get(names[line]) == line else None,
                    line,
                    rows[line][0] if rows[line][0] in keep else None,
                    rows[line][1],
                    rows[line][2],
                    rows[line][3],
                ]
                for line in kept
            ],
            "clock": _clock_text(clocks[tip]) if tip in clocks else tail["clock"],
            "now": _clock_text(clock),
            "last_any": last_any if last_any in keep else None,
            "last_message": last_message if last_message in keep else None,
            "sidechains_left_out": left_out,
        }
    return Extension(added, tip_id, new_tail)


def active_leaf(entries: list[Entry]) -> str | None:
    """The id of the entry the session ended on, or None when nothing was said."""
    tree = _Tree(entries)
    return None if tree.active is None else entries[tree.active].id


def summaries_by_leaf(entries: list[Entry]) -> dict[str, str]:
    """Claude Code summary lines as leafUuid -> summary; the leaf may be in another file."""
    return {e.leaf_id: e.summary for e in entries if e.kind == SUMMARY and e.leaf_id and e.summary}


_TALK = (USER, ASSISTANT, TOOL)  # Entry.is_conversational, inlined: this runs once per line


class _Tree:
    """Parents, regions and leaves of one file, on list indexes (ids repeat)."""

    def __init__(self, entries: list[Entry]):
        self.entries = entries
        self.problems: list[str] = []
        self.talk = [e.kind == MESSAGE and e.role in _TALK for e in entries]
        self.sidechains_left_out = any(
            t and not e.is_sidechain for t, e in zip(self.talk, entries, strict=True)
        )
        if self.sidechains_left_out:
            self.order = [i for i, e in enumerate(entries) if not e.is_sidechain]
        else:
            self.order = list(range(len(entries)))
        self._link()
        self._find_leaves()

    def _line(self, index: int | None) -> str:
        return "starting the thread here" if index is None else f"following line {self.entries[index].line}"

    def _link(self) -> None:
        """Parents (always earlier lines), then regions, in one pass over the file."""
        entries, talk, n = self.entries, self.talk, len(self.entries)
        seen: dict[str, int] = {}  # id -> the latest entry written so far with it
        parent: list[int | None] = [None] * n
        linked: list[int | None] = [None] * n  # the parent as written, for naming cycles
        region: list[int | None] = [None] * n
        carried = [""] * n  # message id of the reply a line belongs to
        clock: list[datetime | None] = [None] * n  # a missing timestamp counts as the previous line's
        starts: list[int] = []
        start_parent: dict[int, int] = {}
        first_child: dict[int, int] = {}  # start -> the first start below it
        children: dict[int, list[int]] = {}  # start -> the starts below it, kept only for branches
        compactions: list[int] = []
        unresolved: list[tuple[int, int | None]] = []  # (index, the line followed instead)
        last_any = last_message = now = None
        forked = False  # past a fork's branch line: its copies' parents are in the parent file
        for i in self.order:
            e = entries[i]
            conv = talk[i]
            threads_on = conv or e.kind == COMPACTION  # a line a parentless message may follow
            follow = last_message if last_message is not None else last_any
            wanted = e.parent_id or (threads_on and not conv and e.logical_parent_id)
            if wanted:
                p = linked[i] = seen.get(wanted)
                if p is None:
                    p = follow
                    # Subagents point into the main file, a fork's copies into the parent's.
                    if wanted == e.parent_id and not e.is_sidechain and not forked:
                        unresolved.append((i, follow))
            else:
                p = follow if threads_on else last_any
            parent[i] = p
            seen[e.id] = i
            if e.kind in (BRANCH, HEADER) and e.extra.get("parent_session_path"):
                forked = True
            last_any = i
            if threads_on:
                last_message = i
                if not conv:
                    compactions.append(i)
            if e.timestamp is not None:
                now = e.timestamp
            clock[i] = now

            # Regions: prompts and new replies start one; tool results, meta lines, later
            # lines of the same streamed reply and non-conversational lines join their parent's.
            mid = e.message_id
            if conv:
                role = e.role
                if role == USER:
                    starts_region = not e.is_meta and not any(b.type == TOOL_RESULT for b in e.blocks)
                    prompt = starts_region
                else:
                    starts_region = (
                        role == ASSISTANT
                        and not e.is_meta
                        and not (p is not None and mid and mid == carried[p])
                    )
                    prompt = False
            else:
                starts_region = prompt = False
            if mid:
                carried[i] = mid
            elif p is not None and not prompt:
                carried[i] = carried[p]
            if p is not None and not starts_region:
                region[i] = region[p]
                continue
            region[i] = i
            starts.append(i)
            if p is not None:
                up = start_parent[i] = region[p]
                if up in first_child:
                    children.setdefault(up, [first_child[up]]).append(i)
                else:
                    first_child[up] = i

        self.parent, self.region, self.clock, self.compactions = parent, region, clock, compactions
        self.seen, self.carried, self.last_any, self.last_message = seen, carried, last_any, last_message
        self.starts, self.start_parent, self.children, self.first_child = (
            starts,
            start_parent,
            children,
            first_child,
        )
        if unresolved:
            self._report(unresolved, seen, linked)

    def _report(self, unresolved: list[tuple[int, int | None]], last: dict[str, int], linked: list) -> None:
        """Name what is wrong with parents that were not written before their child."""
        entries = self.entries
        first: dict[str, int] = {}
        for j in self.order:
            first.setdefault(entries[j].id, j)
        later: list[tuple[int, int, int | None]] = []  # (index, parent written later, followed)
        for i, follow in unresolved:
            e = entries[i]
            after = first.get(e.parent_id)
            if after == i:
                after = last[e.parent_id]
            if after is None:
                self.problems.append(
                    f"line {e.line}: parent {e.parent_id!r} is not in this file; {self._line(follow)}"
                )
            elif after == i:
                self.problems.append(f"line {e.line}: entry {e.id!r} is its own parent; {self._line(follow)}")
            else:
                later.append((i, after, follow))
        if later:
            self._report_later(later, linked)

    def _report_later(self, later: list[tuple[int, int, int | None]], linked: list[int | None]) -> None:
        """Parents written after their child: name the cycles they close."""
        entries = self.entries
        raw = {i: target for i, target, _ in later}
        state: dict[int, int] = {}  # 1 on the current walk, 2 done
        cycles: dict[int, list[int]] = {}
        for start, _, _ in later:
            walk, node = [], start
            while node is not None and node not in state:
                state[node] = 1
                walk.append(node)
                node = raw.get(node, linked[node])
            if node is not None and state[node] == 1:
                cycle = sorted(walk[walk.index(node) :])
                for member in cycle:
                    cycles[member] = cycle
            for node in walk:
                state[node] = 2
        for i, target, follow in later:
            e = entries[i]
            if i in cycles:
                lines = ", ".join(str(entries[m].line) for m in cycles[i])
                text = f"parent {e.parent_id!r} closes a cycle through lines {lines}"
            else:
                text = f"parent {e.parent_id!r} is written later, at line {entries[target].line}"
            self.problems.append(f"line {e.line}: {text}; {self._line(follow)}")

    def _find_leaves(self) -> None:
        parent, talk, region, clock = self.parent, self.talk, self.region, self.clock

        def newer(a: int | None, b: int | None) -> int | None:
            if a is None or b is None:
                return b if a is None else a
            ta, tb = clock[a], clock[b]
            if ta is not None and tb is not None and ta != tb:
                try:
                    return a if ta > tb else b
                except TypeError:  # a naive and an aware timestamp: fall back to file order
                    pass
            return max(a, b)

        # Newest conversational entry without a conversational descendant, per region.
        below = [False] * len(talk)
        region_tip: dict[int, int] = {}
        for i in reversed(self.order):
            p = parent[i]
            if talk[i]:
                if not below[i]:
                    r = region[i]
                    region_tip[r] = newer(region_tip.get(r), i)
                if p is not None:
                    below[p] = True
            elif below[i] and p is not None:
                below[p] = True

        self.below = below
        # Only regions with nothing below end a thread; a branch leads to its newest leaf.
        first_child, start_parent = self.first_child, self.start_parent
        best: dict[int, int | None] = {}
        for s in reversed(self.starts):
            found = best.get(s) if s in first_child else region_tip.get(s)
            best[s] = found
            up = start_parent.get(s)
            if up is not None and found is not None:
                other = best.get(up)
                best[up] = found if other is None else newer(other, found)
        self.active = best[self.starts[0]] if self.starts else None
        # A summary line naming a message of this file says which conversation it sums up:
        # that wins over clocks, which can step back. The message may have gone on since,
        # so the newest leaf at or below it. The last such line wins.
        named = self._summarised()
        if named is not None and (found := best.get(region[named])) is not None:
            self.active = found

        self.branches: list[tuple[int, list[tuple[int, int]]]] = []  # (key entry, [(child, leaf)])
        leaves = set() if self.active is None else {self.active}
        for s, kids in sorted(self.children.items()):
            pairs = [(kid, best[kid]) for kid in kids if best[kid] is not None]
            shared = {parent[kid] for kid in kids}
            # Rewinds and edits share the parent they branch from; else name the region.
            self.branches.append((shared.pop() if len(shared) == 1 else s, pairs))
            leaves.update(found for _, found in pairs)
        self.leaves = sorted(leaves)
        self.leaf_set = leaves

    def _summarised(self) -> int | None:
        """The entry the file's last summary line names (leafUuid), if this file holds it."""
        entries, seen = self.entries, self.seen
        for i in reversed(self.order):
            e = entries[i]
            if e.kind == SUMMARY and e.leaf_id and (found := seen.get(e.leaf_id)) is not None:
                return found
        return None

    def tail(self) -> dict | None:
        """The active leaf's region from the leaf on, as extend_thread takes it: new lines that
        hang below it extend the thread without reading the file again. None when there is
        nothing to go on from, or the region goes on too long after its leaf."""
        tip = self.active
        if tip is None or not self.entries:
            return None
        entries, order, region = self.entries, self.order, self.region
        inside = [i for i in order[bisect_left(order, tip) :] if region[i] == region[tip]]
        if len(inside) > TAIL_LIMIT:
            return None
        lines = {i: entries[i].line for i in inside}
        return {
            "line": max(e.line for e in entries),  # the last line read, on the thread or not
            "leaf": entries[tip].id,
            "rows": [
                [
                    entries[i].id
                    if self.seen.get(entries[i].id) == i
                    else None,  # None: a later line took the id
                    entries[i].line,
                    lines.get(self.parent[i]),
                    self.carried[i],
                    self.talk[i],
                    self.below[i],
                ]
                for i in inside
            ],
            "clock": _clock_text(self.clock[tip]),
            "now": _clock_text(self.clock[order[-1]]) if order else None,
            "last_any": lines.get(self.last_any),
            "last_message": lines.get(self.last_message),
            "sidechains_left_out": self.sidechains_left_out,
        }

    def find(self, leaf: str) -> int:
        """The entry ``leaf`` names: of repeated ids, a listed leaf, else the last written."""
        found = [i for i in self.order if self.entries[i].id == leaf]
        if not found:
            raise UnknownLeaf(leaf)
        listed = [i for i in found if i in self.leaf_set]
        return listed[-1] if listed else found[-1]


def _mark_compactions(
    items: list[ThreadItem], shown: list[int], indexes: list[int], problems: list[str]
) -> list[ThreadItem]:
    """Mark what the thread's compactions summarised away; ``indexes``: the file's compactions."""
    compactions = []
    for index in indexes:
        pos = bisect_left(shown, index)
        if pos < len(shown) and shown[pos] == index:
            compactions.append(pos)
    if not compactions:
        return []
    positions: dict[str, list[int]] = {}
    for pos, item in enumerate(items):
        positions.setdefault(item.entry.id, []).append(pos)
    cut = 0
    for n, pos in enumerate(compactions):
        item, e = items[pos], items[pos].entry
        kept = pos
        if e.first_kept_id:
            found = positions.get(e.first_kept_id, [])
            k = bisect_left(found, pos)
            if k:
                kept = found[k - 1]
            else:
                problems.append(f"line {e.line}: first kept entry {e.first_kept_id!r} is not on this thread")
        cut = max(cut, kept)
        # Claude Code writes the summary on the next user line, flagged is_compact_summary.
        end = compactions[n + 1] if n + 1 < len(compactions) else len(items)
        written = next(
            (items[p].entry for p in range(pos + 1, end) if items[p].entry.extra.get("is_compact_summary")),
            None,
        )
        item.summary = written.text if written is not None else e.summary
    for item in items[:cut]:
        item.compacted = True
    return [items[pos] for pos in compactions]
