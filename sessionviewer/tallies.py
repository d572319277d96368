"""Counts the index keeps as it writes on PostgreSQL (models.SessionTally, migration 0032; SQLite
keeps none, and filters.tally_scope then answers None): the list's
facets and count and Activity's totals, read from a few hundred rows per source instead of
counting every session at each request.

The tally is kept per source and format, so it answers the sessions of some sources
(a machine or a root) and of one format; filters.tally_scope says when a page's filters
are only those. Any other filter (a project, a date, a search) counts the sessions
themselves, as before. What it returns has the shapes activity.py and filters.py use.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date

from django.db import connection
from django.db.models import QuerySet, Sum

from sessionviewer.models import SessionTally, SessionTallyTotal, TallyFolds

# Between a place's project, JID and agent in its value (the trigger's chr(31)).
PLACE_SEPARATOR = "\x1f"


@dataclass(frozen=True)
class Scope:
    """The sessions a tally query counts: those of these sources (None: every source), of
    this format and of this project ("": every format, every project). A project's rows
    hold the list's facets only, not Activity's (migration 0032's IN_PROJECT)."""

    sources: frozenset[int] | None
    format: str
    project: str = ""

    def holds(self, source_id: int, fmt: str) -> bool:
        in_sources = self.sources is None or source_id in self.sources
        return in_sources and (not self.format or fmt == self.format)


# --- Session counts kept between requests -----------------------------------------------------------
# What the list's facets, its count and a project's facets read (facet_values, by_source,
# sessions, format_counts) are session counts. They change when a session is added, deleted
# or moves to another value, not when an indexer appends a turn: that changes its tokens,
# messages and cost only, and the trigger's rows for it count no session. So a web process
# keeps what it read until counts_version() changes, read once per request
# (middleware.tally_counts_per_request). Out of a request (the indexer, a command) nothing is
# kept.

_VERSION_SQL = (
    f"SELECT (SELECT folds FROM {TallyFolds._meta.db_table} WHERE id = 1), COUNT(*), MAX(id) "  # noqa: S608 - constants
    f"FROM {SessionTally._meta.db_table} WHERE pending AND sessions <> 0"
)
KEPT_MAX = 256  # kept answers per process: a few per page and filter; past it, all forgotten
_NOT_READ = object()
_request = threading.local()
_kept: dict[tuple, tuple[tuple, object]] = {}


def counts_version() -> tuple:
    """What changes whenever a session count the tally answers may have: how many folds took
    away pending rows that count a session (index/tally.py counts them), and how many pending
    rows count a session. Between two counted folds those rows are only added (a fold alone
    deletes pending rows, and one that deletes none of those is not counted), so a version
    never comes back. The last one's id too, which no emptied table gives again (its
    sequence goes on)."""
    with connection.cursor() as cursor:
        cursor.execute(_VERSION_SQL)
        return tuple(cursor.fetchone())


@contextmanager
def counts_kept_for_request() -> Iterator[None]:
    """Within it (one request), the session counts below are answered from what this process
    read at the same counts_version, read once, at the first of them."""
    _request.version = _NOT_READ
    try:
        yield
    finally:
        _request.version = None


def forget_kept_counts() -> None:
    """Forget every kept answer (a test's database is emptied under the process)."""
    _kept.clear()


def _copied(value):
    """A kept answer as its caller may change it: its dict and lists new."""
    if isinstance(value, dict):
        return {key: list(v) if isinstance(v, list) else v for key, v in value.items()}
    return list(value) if isinstance(value, list) else value


def _kept_between_requests(function: Callable) -> Callable:
    """function's answers kept per process and counts_version, in a request."""

    @functools.wraps(function)
    def answer(*args):
        version = getattr(_request, "version", None)
        if version is None:
            return function(*args)
        if version is _NOT_READ:
            # Before the counts: one written between the two is then in the answer kept
            # under the older version, which no later request reads again.
            version = _request.version = counts_version()
        key = (function.__name__, *(tuple(a) if isinstance(a, list) else a for a in args))
        found = _kept.get(key)
        if found is not None and found[0] == version:
            return _copied(found[1])
        value = function(*args)
        if len(_kept) >= KEPT_MAX:
            _kept.clear()
        _kept[key] = (version, value)
        return _copied(value)

    return answer


def _rows(facet: str | list[str], scope: Scope) -> QuerySet[SessionTally]:
    """The tally's rows of a facet (or of several) in the scope."""
    rows = SessionTally.objects.filter(project=scope.project)
    rows = rows.filter(facet__in=facet) if isinstance(facet, list) else rows.filter(facet=facet)
    if scope.sources is not None:
        rows = rows.filter(source_id__in=scope.sources)
    if scope.format:
        rows = rows.filter(format=scope.format)
    return rows


def _summed(rows: QuerySet[SessionTally], *by: str, figures: tuple[str, ...] = ()) -> QuerySet:
    """rows summed by some columns, the values that hold no session left out."""
    sums = {name: Sum(name) for name in ("sessions", *figures)}
    return rows.values(*by).annotate(**sums).filter(sessions__gt=0)


def _sums(
    facet: str | list[str],
    scope: Scope,
    by: tuple[str, ...],
    figures: tuple[str, ...] = (),
    order: tuple[str, ...] = (),
) -> list[dict]:
    """A facet's (or several facets') rows in the scope, summed by the columns `by` (none: one
    row), as dicts of `by` and sessions and figures; a value that holds no session left out
    when summed by something; in order (`-name`: descending).

    Summed over every source and format, they are read from the total (models.SessionTallyTotal):
    a row per value, and the tally's rows still pending. Else from the tally's rows."""
    names = ("sessions", *figures)
    if not _from_total(scope, by):
        rows = _rows(facet, scope)
        if not by:
            return [rows.aggregate(**{name: Sum(name) for name in names})]
        summed = _summed(rows, *by, figures=figures)
        return list(summed.order_by(*order) if order else summed)
    sql, params = _total_sums(facet, scope, by, names)
    if order:
        sql += " ORDER BY " + _order_by(order)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        found = [dict(zip((*by, *names), row, strict=True)) for row in cursor.fetchall()]
    return found


def _from_total(scope: Scope, by: tuple[str, ...]) -> bool:
    """Whether these sums are read from the total (every source and format)."""
    return scope.sources is None and not scope.format and not {"source_id", "format"} & set(by)


def _total_sums(
    facet: str | list[str], scope: Scope, by: tuple[str, ...], names: tuple[str, ...]
) -> tuple[str, list]:
    """The statement summing a facet's (or several facets') rows of the total and the
    tally's rows still pending, by the columns `by`, and its parameters."""
    facets = facet if isinstance(facet, list) else [facet]
    columns = ", ".join((*by, *names))
    where = "project = %s AND facet = ANY(%s)"
    # Integer sums are numeric in PostgreSQL: back to bigint, as the ORM's Sum gives them.
    sums = ", ".join(f"SUM({n})" + ("" if n == "cost" else "::bigint") + f" AS {n}" for n in names)
    sql = (
        f"SELECT {', '.join((*by, sums))} FROM ("  # noqa: S608 - column names of this module
        f"SELECT {columns} FROM {SessionTallyTotal._meta.db_table} WHERE {where} "
        f"UNION ALL SELECT {columns} FROM {SessionTally._meta.db_table} WHERE pending AND {where}) AS rows"
    )
    if by:
        sql += f" GROUP BY {', '.join(by)} HAVING SUM(sessions) > 0"
    return sql, [scope.project, facets, scope.project, facets]


def _order_by(order: tuple[str, ...]) -> str:
    return ", ".join(f"{o[1:]} DESC" if o.startswith("-") else o for o in order)


@_kept_between_requests
def format_counts(scope: Scope) -> list[tuple[str, int]]:
    """Sessions per format, the most first."""
    found = _summed(_rows("", scope).exclude(format=""), "format").order_by("-sessions", "format")
    return [(row["format"], row["sessions"]) for row in found]


# The facets whose values the tally keeps as rows of their own, by the list's names for them;
# "updated" by month, the latest first, the others the most sessions first.
VALUE_FACETS = ("project", "jid", "agent", "channel", "peer_kind", "kind", "model", "updated")


@_kept_between_requests
def facet_values(facets: list[str], scope: Scope, limit: int) -> dict[str, list[tuple[str, int]]]:
    """Each facet's first values as (value, sessions), in one statement; "" left out but
    for a model (the list counts a blank model name as one)."""
    found: dict[str, list[tuple[str, int]]] = {facet: [] for facet in facets}
    # In the database's order, as a facet counted from the sessions is (its collation).
    by, order = ("facet", "value"), ("facet", "-sessions", "value")
    rows = (
        _first_values(facets, scope, limit, order)
        if _from_total(scope, by)
        else _sums(facets, scope, by, order=order)
    )
    for row in rows:
        facet, value, n = row["facet"], row["value"], row["sessions"]
        if value or facet == "model":
            found[facet].append((value, n))
    if "updated" in found:
        found["updated"].sort(reverse=True)
    for values in found.values():
        del values[limit:]
    return found


def _first_values(facets: list[str], scope: Scope, limit: int, order: tuple[str, ...]) -> list[dict]:
    """facet_values' rows from the total, only the first `limit` of each facet: the total
    holds hundreds of projects and JIDs, and the list shows twelve of each."""
    summed, params = _total_sums(facets, scope, ("facet", "value"), ("sessions",))
    # The months the latest first, the others the most sessions first (as facet_values
    # sorts them); "" left out but for a model, before they are numbered.
    first = (
        "row_number() OVER (PARTITION BY facet ORDER BY CASE WHEN facet = 'updated' THEN value END "
        "DESC NULLS LAST, sessions DESC, value)"
    )
    sql = (
        f"SELECT facet, value, sessions FROM (SELECT facet, value, sessions, {first} AS n "  # noqa: S608 - this module's SQL
        f"FROM ({summed}) AS summed WHERE value <> '' OR facet = 'model') AS numbered "
        f"WHERE n <= %s ORDER BY {_order_by(order)}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return [{"facet": f, "value": v, "sessions": n} for f, v, n in cursor.fetchall()]


@_kept_between_requests
def by_source(scope: Scope) -> dict[int, int]:
    """Sessions per source."""
    return {row["source_id"]: row["sessions"] for row in _summed(_rows("", scope), "source_id")}


@_kept_between_requests
def sessions(scope: Scope, nested: bool) -> int:
    """How many sessions; nested: less the subagents listed under their parent, those whose
    parent is in the scope too (filters.nested)."""
    total = _sums("", scope, ())[0]["sessions"] or 0
    if not nested:
        return total
    for row in _sums("under", scope, ("value",)):
        parent, n = row["value"], row["sessions"]
        source_id, _, fmt = parent.partition(" ")
        if scope.holds(int(source_id), fmt):
            total -= n
    return max(total, 0)  # a tally gone wrong must not break the page (a negative slice)


def totals(scope: Scope) -> dict:
    """Sessions, tokens, messages, cost, unpriced tokens and undated sessions, as
    activity.totals_of counts them (without "last")."""
    names = ("sessions", "tokens", "messages", "cost", "unpriced_tokens", "undated")
    found = _sums("", scope, (), figures=names[1:])[0]
    figures = {name: found[name] or 0 for name in names}
    figures["cost"] = float(figures["cost"])
    return figures


def by_day(scope: Scope) -> dict[date, dict]:
    """Sessions, tokens and cost by the UTC day the sessions started."""
    found = _sums("day", scope, ("value",), figures=("tokens", "cost", "priced"))
    return {
        date.fromisoformat(row["value"]): {
            "sessions": row["sessions"],
            "tokens": row["tokens"],
            "cost": row["cost"] if row["priced"] else None,
        }
        for row in found
    }


def places(scope: Scope) -> list[dict]:
    """Sessions, tokens and cost per project, JID and agent, as activity.report groups them:
    project, jid, agent, n, t, c."""
    found = _sums("place", scope, ("value",), figures=("tokens", "cost", "priced"))
    rows = []
    for row in found:
        project, jid, agent = row["value"].split(PLACE_SEPARATOR, 2)
        cost = row["cost"] if row["priced"] else None
        rows.append(
            {
                "project": project,
                "jid": jid,
                "agent": agent,
                "n": row["sessions"],
                "t": row["tokens"],
                "c": cost,
            }
        )
    return rows


def formats(scope: Scope) -> list[dict]:
    """Sessions, tokens and cost per format, the most sessions first: format, n, t, c."""
    found = _summed(_rows("", scope), "format", figures=("tokens", "cost", "priced")).order_by(
        "-sessions", "format"
    )
    return [
        {
            "format": row["format"],
            "n": row["sessions"],
            "t": row["tokens"],
            "c": row["cost"] if row["priced"] else None,
        }
        for row in found
    ]


def model_usage(scope: Scope) -> dict[str, dict]:
    """Per model of the sessions' turns (Session.model_costs): the sessions using it, its
    tokens, its cost (None: no token of it priced) and its unpriced tokens."""
    found = _sums("model_cost", scope, ("value",), figures=("tokens", "cost", "priced", "unpriced_tokens"))
    return {
        row["value"]: {
            "model": row["value"] or "(no model)",
            "sessions": row["sessions"],
            "tokens": row["tokens"],
            "cost": row["cost"] if row["priced"] else None,
            "unpriced_tokens": row["unpriced_tokens"],
        }
        for row in found
    }
