"""A reply's usage counted once, however many files hold it.

Claude Code's clones and forks, and its older resumes, copy earlier lines into a new
file; a Go agent fork copies its parent's last messages. The copied reply keeps its
message id and its usage, so summing each file's replies would count it twice. Within
one file fold.py counts a message once; across files this module does: of the sessions
holding a reply, one counts it, and every other one keeps a CopiedUsage row for it with
its tokens taken off its totals (tokens, usage lines, cost), so the list, Activity and
project pages add it up once, and the cost page can say where it is counted.

Which session counts it: a main session before a fork or subagent, then the one whose
first line is oldest, then the one indexed first.

Only a file read from its first line (new, or rewritten) can bring a copy: an append is
lines the agent just wrote. So appends cost nothing here, and a first index looks each
reply up once, by the entry_message index.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from contextlib import suppress
from datetime import datetime

import orjson
from django.db import connection
from django.db.models import Count, F, Max, Min, QuerySet
from django.db.models.expressions import RawSQL

from sessionviewer import prices
from sessionviewer.index import pending
from sessionviewer.index.fold import turn_line, usage_of
from sessionviewer.index.links import links_made
from sessionviewer.index.locks import take_turn
from sessionviewer.index.statements import update_sessions
from sessionviewer.models import CopiedUsage, Entry, Session
from sessionviewer.row_codec import json_text

CHUNK = 2000  # message ids per query: well under SQLite's limit on a statement's parameters
# Past this many sessions read whole, one pass over the entry_message index costs less than
# looking their replies up (measured on the bench's corpus: 10 ms against 70 ms for 380).
LOOKUPS = 100
TOKENS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
TOTALS = (*TOKENS, "usage_lines")
PRICED = ("cost", "unpriced_tokens", "model_costs")


def count_once_pending(read_whole: list[Session], linked: Iterable[Session] = ()) -> None:
    """count_once for the sessions this pass read from their first line, and for those an
    earlier pass read and was cut off (killed, the machine down) before it settled: their
    files have not changed since, so no later pass reads them again. Each one's copies mark
    (models.PendingWork) goes in the same transaction.

    linked: sessions whose links the pass made (links.link_sessions), still marked: their
    links marks go in the same transaction too."""
    ours = {session.id for session in read_whole}
    others = pending.marked(pending.COPIES) - ours
    count_once([*read_whole, *(Session(id=session_id) for session_id in sorted(others))])
    pending.unmark(ours | others, pending.COPIES)
    linked = [s for s in linked if s.links_pending]
    links_made(linked)


def count_once(read_whole: Iterable[Session]) -> None:
    """After a pass: settle the replies of the sessions it read from their first line that
    another session holds too. The database finds them, by the entry_message index alone:
    for a few sessions, by looking up their replies' ids; for many (a first index), by one
    pass over the whole index. Most replies are held once: none of those comes to Python.

    Their own CopiedUsage rows went when they were read again (their totals started
    over); the rows of other sessions that they counted are settled again here too.

    Indexers sharing a PostgreSQL index take turns here (take_turn): two settling one
    reply at once would both give its copies back and both take them off again."""
    take_turn("copies")
    session_ids = [s.id for s in read_whole]
    # One pass over every reply costs less than looking many sessions' replies up, when
    # they are most of the index (a first index). Beside other machines' sessions it read
    # all of theirs, and settled every reply they share again (bench/README.md, issue 28).
    whole_index = len(session_ids) > LOOKUPS and 2 * len(session_ids) >= Session.objects.count()
    # Asked in as few statements as the parameters allow (one, up to CHUNK sessions): most
    # passes find no reply held twice, and that answer should cost a single query.
    asked: list[QuerySet] = [_held_twice(_replies())] if whole_index else []
    for start in range(0, len(session_ids), CHUNK):
        chunk = session_ids[start : start + CHUNK]
        if not whole_index:
            theirs = _replies().filter(session_id__in=chunk).values("message_id")
            asked.append(_held_twice(_replies().filter(message_id__in=theirs)))
        asked.append(CopiedUsage.objects.filter(counted_in__in=chunk).values_list("message_id", flat=True))
    message_ids: set[str] = set()
    for start in range(0, len(asked), 2):  # two at a time: a statement's parameters stay few
        message_ids.update(asked[start].union(*asked[start + 1 : start + 2]))
    settle(message_ids)


def totals_of(session: Session) -> dict:
    """A session's totals as a pass read them when it planned an append (passes.plan_file)."""
    return {name: getattr(session, name) for name in TOTALS}


def on_totals_now(session: Session, read: dict) -> None:
    """An append's totals: what its new lines added to those the pass read (`read`), put on
    the totals the index holds now. Between the two, another machine's indexer may have
    settled copies (count_once), taking a reply off this session or giving one back: totals
    written as read would undo that. The row stays locked until the pass commits
    (PostgreSQL), so settling waits for the append, and it in turn for a settling (_load)."""
    now = Session.objects.select_for_update().only("id", *TOTALS).get(id=session.id)
    for name in TOKENS:
        setattr(session, name, getattr(now, name) + getattr(session, name) - read[name])
    ours, before = session.usage_lines, read["usage_lines"]
    lines = {key: dict(line) for key, line in now.usage_lines.items()}
    for key in ours.keys() | before.keys():
        new, old = ours.get(key, {}), before.get(key, {})
        line = lines.setdefault(key, {})
        for kind in new.keys() | old.keys():
            line[kind] = line.get(kind, 0) + new.get(kind, 0) - old.get(kind, 0)
        # As _add: a line a copy took the last turn off goes. One of this append's own lines
        # with no turn (fold leaves some) stays, and so does another's that still holds tokens.
        gone = ours[key].get("turns", 0) > 0 if key in ours else not any(line.values())
        if gone and line.get("turns", 0) <= 0:
            del lines[key]
    session.usage_lines = lines


def _held_twice(replies: QuerySet[Entry]) -> QuerySet:
    """The message ids of these replies that more than one session holds."""
    held = replies.values("message_id")
    if connection.vendor == "postgresql":
        # Held by two sessions or more: the smallest differs from the largest. COUNT(DISTINCT)
        # sorted every reply first (spilling to disk past work_mem, 90 ms of a first index
        # of the history corpus's 48,000 replies); these two are summed in a hash, 55 ms.
        # SQLite reads the replies in message id order from its index either way.
        held = held.annotate(first=Min("session"), last=Max("session")).filter(first__lt=F("last"))
    else:
        held = held.annotate(holders=Count("session", distinct=True)).filter(holders__gt=1)
    return held.order_by().values_list("message_id", flat=True)


def _replies():
    """The entries that carry a reply's usage under its message id."""
    return Entry.objects.exclude(message_id="").exclude(usage={})


def delete_sessions(gone: QuerySet[Session]) -> None:
    """Delete these sessions; the replies they counted go back to the sessions holding
    copies of them, which count them now. Indexers take turns, as in count_once."""
    take_turn("copies")
    message_ids = release(list(gone.values_list("id", flat=True)))
    gone.delete()
    settle(message_ids)


def release(gone: list[int]) -> set[str]:
    """Before these sessions are deleted: give back to their holders the replies they
    counted; the message ids to settle() once they are gone."""
    rows = list(CopiedUsage.objects.filter(counted_in__in=gone).exclude(session__in=gone))
    sessions = _load({row.session_id for row in rows})
    for row in rows:
        _add(sessions[row.session_id], row.line_key, row.tokens, 1)
    CopiedUsage.objects.filter(id__in=[row.id for row in rows]).delete()
    _save(sessions.values())
    return {row.message_id for row in rows}


def settle(message_ids: Iterable[str]) -> None:
    """Decide again, for each of these replies, which session counts it."""
    ordered = sorted(message_ids)
    for start in range(0, len(ordered), CHUNK):
        _settle_chunk(ordered[start : start + CHUNK])


def _settle_chunk(message_ids: list[str]) -> None:
    # What is settled now goes back first: the holders may have changed since.
    old = list(CopiedUsage.objects.filter(message_id__in=message_ids))
    # Every holder's reply lines in one query: the last line of each (message id, session)
    # is the one it counts. A query per holding session cost a cold index of 6,000
    # sessions, a tenth of them Go forks, a quarter of its time.
    counted_lines: dict[str, dict[int, Entry]] = defaultdict(dict)  # message id: {session id: entry}
    for entry in _replies_of(message_ids):
        held = counted_lines[entry.message_id]
        if (known := held.get(entry.session_id)) is None or known.line < entry.line:
            held[entry.session_id] = entry
    shared = {mid: found for mid, found in counted_lines.items() if len(found) > 1}
    sessions = _load({row.session_id for row in old} | {sid for found in shared.values() for sid in found})
    new_rows = []
    for message_id, found in shared.items():
        # A copy keeps its reply's usage and time: holders that differ are not copies of one
        # reply (a short id two formats' files happen to share, a copy cut mid-stream).
        alike: dict[tuple, list[Entry]] = defaultdict(list)
        for entry in found.values():
            alike[json_text(entry.usage), entry.timestamp].append(entry)
        for group in alike.values():
            if len(group) < 2:
                continue
            owner = min(group, key=lambda e: _precedence(sessions[e.session_id]))
            for entry in group:
                if entry is owner:
                    continue
                key, tokens = turn_line(entry)
                new_rows.append(
                    CopiedUsage(
                        session_id=entry.session_id,
                        message_id=message_id,
                        counted_in_id=owner.session_id,
                        line_key=key,
                        tokens=tokens,
                    )
                )
    # A copy settled as it was stays as it is: no row written, no session's totals
    # touched. A pass that read a whole machine's files settles every reply they share
    # again, and most are settled already.
    old_said = [(_settled(row), row) for row in old]
    new_said = [(_settled(row), row) for row in new_rows]
    kept = {said for said, _ in old_said} & {said for said, _ in new_said}
    gone = [row for said, row in old_said if said not in kept]
    for row in gone:
        if row.session_id in sessions:
            _add(sessions[row.session_id], row.line_key, row.tokens, 1)
    CopiedUsage.objects.filter(id__in=[row.id for row in gone]).delete()
    added = [row for said, row in new_said if said not in kept]
    for row in added:
        _add(sessions[row.session_id], row.line_key, row.tokens, -1)
    CopiedUsage.objects.bulk_create(added)
    _save(sessions.values())


def _settled(row: CopiedUsage) -> tuple:
    """What a CopiedUsage row says: a row saying the same again changes nothing."""
    tokens = orjson.dumps(row.tokens, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return (row.session_id, row.message_id, row.counted_in_id, row.line_key, tokens)


_TURN_FIELDS = ("session_id", "line", "usage", "model", "timestamp", "extra")  # what turn_line reads


def _replies_of(message_ids: list[str]) -> Iterable[Entry]:
    """The replies holding these message ids (message_id and _TURN_FIELDS).

    On PostgreSQL, looked up one id at a time (LATERAL), each by the entry_message index: a
    first index settles its copies before the entries have statistics, and PostgreSQL,
    guessing that IN with hundreds of ids matches most of the table, read all of it (50 ms
    of the history corpus's 150,000 entries, for 378 replies)."""
    replies = _replies().only("message_id", *_TURN_FIELDS).order_by()
    if connection.vendor != "postgresql":
        return replies.filter(message_id__in=message_ids)
    inner, params = replies.filter(message_id=RawSQL("m.id", ())).query.sql_with_params()
    return Entry.objects.raw(
        f"SELECT e.* FROM (SELECT DISTINCT unnest(%s::text[]) AS id) AS m CROSS JOIN LATERAL ({inner}) AS e",  # noqa: S608 - the ORM's SQL
        [message_ids, *params],
    )


_NEVER = datetime.max.replace(tzinfo=None)


def _precedence(session: Session) -> tuple:
    started = session.started_at.replace(tzinfo=None) if session.started_at else _NEVER
    return (session.kind != "main", started, session.id)


def _load(session_ids: set[int]) -> dict[int, Session]:
    """The sessions whose totals settling changes, locked until the pass commits (PostgreSQL):
    an append another indexer is writing waits, and is waited for (on_totals_now)."""
    found = Session.objects.select_for_update().only("id", "kind", "started_at", *TOTALS)
    return {session.id: session for session in found.filter(id__in=session_ids).order_by("id")}


def _add(session: Session, key: str, tokens: dict[str, int], sign: int) -> None:
    """Put a reply's tokens back on a session (sign 1) or take them off (-1)."""
    usage = usage_of(tokens)
    session.input_tokens += sign * usage["input"]
    session.output_tokens += sign * usage["output"]
    session.cache_read_tokens += sign * usage["cache_read"]
    session.cache_write_tokens += sign * usage["cache_write"]
    lines = dict(session.usage_lines)
    line = dict(lines.get(key, {}))
    for kind in prices.KINDS:
        line[kind] = line.get(kind, 0) + sign * int(tokens.get(kind, 0))
    line["turns"] = line.get("turns", 0) + sign
    if line["turns"] > 0:
        lines[key] = line
    else:
        lines.pop(key, None)
    session.usage_lines = lines
    session.changed_totals = True


def _save(sessions: Iterable[Session]) -> None:
    changed = [s for s in sessions if getattr(s, "changed_totals", False)]
    for session in changed:
        # As the pass itself: with a bad prices file the costs wait for `manage.py reprice`.
        with suppress(prices.PricesFileError):
            session.apply_prices()
    update_sessions(changed, (*TOTALS, *PRICED))
