"""Session list filters, shared by the list, its facets, the activity page and their JSON twins;
the list's rows and columns.

filter_sessions takes the parameters forms.ActivityForm (or SessionListForm) cleaned from
the query string: a bad value is a 400 there, before anything here runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from django.conf import settings
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, Lower, NullIf
from django.utils import timezone
from django.utils.functional import cached_property

from sessionviewer import search, tallies
from sessionviewer.index.fold import fold_home
from sessionviewer.lookups import Ids, among_sql
from sessionviewer.models import Entry, SecretDismissal, Session, SessionFinding, Source
from sessionviewer.search import Matches, ParsedQuery, as_query, index_order_matches, matching_entries

TEXT_FILTERS = ("project", "agent", "channel", "peer_kind", "jid", "status", "kind", "account")
SORTS = {
    "updated": F("updated_at"),
    "started": F("started_at"),
    # As the column shows it (Session.display_title), without regard to case.
    "title": Lower(
        Coalesce(
            NullIf("summary_title", Value("")),
            NullIf("title", Value("")),
            NullIf("first_prompt", Value("")),
            "key",
        )
    ),
    "messages": F("message_count"),
    "entries": F("entry_count"),
    "tokens": F("token_total"),
    "cost": F("cost"),  # sessions without a price last, either way
    "format": F("format"),
    "machine": F("source__machine"),
    # As the column shows it: the project, or the JID where there is none (Fluux sessions).
    "project": Coalesce(NullIf("project", Value("")), "jid"),
    "agent": F("agent"),
    "channel": F("channel"),
    "models": F("models_used"),  # the JSON list as stored: by the first model's name on SQLite
}
# Activity's range, which its "these sessions" link carries to the list: the sessions
# started in the last N days (None: all of them).
RANGES = {"7": 7, "30": 30, "90": 90, "all": None}
DEFAULT_SIZE = 50
MAX_SIZE = 500


@dataclass
class SessionQuery:
    queryset: QuerySet[Session]
    page: int
    size: int
    sort: str
    descending: bool
    q: str  # the search as typed
    matched: list[int] | None = None  # sessions matching q, for the facets to reuse
    narrowed: bool = False  # a filter besides q: fewer sessions than every one matching q
    nested: bool = False  # subagents under their parents (nested())
    flat: bool = False  # _flat=1 asked for every session on a row of its own
    filtered: QuerySet[Session] | None = None  # every session the filters select, nested or not
    scope: tallies.Scope | None = None  # the tally counting them, when their filters are its (tally_scope)


# On PostgreSQL, the lines of each session where matching_session_ids looks for a common word first.
PROBE_LINES = 20


def matching_session_ids(q: str | ParsedQuery, first: Matches | None = None, narrowed: bool = False) -> Ids:
    """The sessions with an entry matching q, searched once: the list's facets each
    filter by it too, and repeating the full-text query for each would cost 9 times (Ids: their
    array literal written once for all of them).

    One pass over every match: on SQLite, starting from the FTS table, about 0.1 s for a
    million (bench/bench_search.py); on PostgreSQL 0.5 s through the GIN index, each match's
    row read for its session, and 2.5 s by the sequential scan the planner takes for a common
    word, computing the index's expression for every row. There, a word with more than HIT_CAP matches
    is first looked for among the first PROBE_LINES lines of each session (_probed_sessions):
    when every session either has one there or has no more lines, that is the answer, and the
    pass is not needed.

    first: search.first_matches(q), read already: when it holds every match, or nothing but q
    filters the sessions (narrowed False), its sessions are the answer, and no other statement
    is sent. Past search.HIT_CAP matches they are those of the newest HIT_CAP, as the page's
    hits are (search.search_hits)."""
    q = as_query(q)
    if first is not None and not (first.capped and narrowed):
        return Ids(first.session_ids)
    matches = index_order_matches(q).order_by().values_list("session_id", flat=True)
    if connection.vendor == "postgresql":
        if first is None:
            first_ids = list(matches[: search.HIT_CAP + 1])
            if len(first_ids) <= search.HIT_CAP:
                return Ids(dict.fromkeys(first_ids))
        found = _probed_sessions(q)
        if found is not None:
            return Ids(found)
    return Ids(matches.distinct())


def _probed_sessions(q: ParsedQuery) -> list[int] | None:
    """The sessions with a match among their first PROBE_LINES lines, if every session with
    more lines has one there (else None). The planner reads those lines by the (session_id,
    line) index, at most PROBE_LINES rows a session, or takes the matches from the GIN index
    where it expects few."""
    early = Exists(matching_entries(q).filter(session_id=OuterRef("id"), line__lt=PROBE_LINES))
    # Each session's last line, one row read backwards from the same index.
    last = Subquery(Entry.objects.filter(session_id=OuterRef("id")).order_by("-line").values("line")[:1])
    # Asked first, as it stops at the first such session: a word some long session lacks at
    # its start costs no more than the pass it leads to.
    if Session.objects.alias(last=last).filter(last__gte=PROBE_LINES).exclude(early).exists():
        return None
    return list(Session.objects.filter(early).values_list("id", flat=True))


def range_start(name: str, today: date) -> date | None:
    days = RANGES[name]
    return None if days is None else today - timedelta(days=days - 1)


def started_in_range(qs: QuerySet[Session], name: str, today: date | None = None) -> QuerySet[Session]:
    """The sessions started in the range's days, today's included (today: the current zone's)."""
    since = range_start(name, today or timezone.localdate())
    if since is None:
        return qs
    return qs.filter(started_at__gte=datetime.combine(since, time(0), tzinfo=timezone.get_current_timezone()))


# The parameters that filter sessions, q aside.
FILTERS = (
    "format",
    "machine",
    "root",
    *TEXT_FILTERS,
    "model",
    "updated_since",
    "updated_before",
    "updated_until",
    "_range",
    "parent",
    "possible_secrets",
)


def _undismissed_findings() -> QuerySet[SessionFinding]:
    """The findings (index/findings.py) whose fingerprint no one marked "not a secret"."""
    dismissed = SecretDismissal.objects.filter(fingerprint=OuterRef("fingerprint"))
    return SessionFinding.objects.exclude(Exists(dismissed))


def has_possible_secrets() -> Exists:
    """A session with a finding not dismissed: one whose every finding was dismissed is left
    out. Read from the findings' (session, line) index for each session asked about."""
    return Exists(_undismissed_findings().filter(session_id=OuterRef("id")))


def count_with_possible_secrets(
    params: Mapping, qs: QuerySet[Session], sources: dict | None = None, matched: list[int] | None = None
) -> int:
    """How many sessions of qs, which the cleaned params select, have a possible secret.
    Every session, or those of a machine or root and nothing else: counted from the findings
    alone (of those sources, each finding keeping its session's source), which are far fewer
    than the sessions. At 400,000 sessions and 50,000 findings on PostgreSQL: 12 ms for every
    session, where an EXISTS over every session took 49 ms, and over one machine's 100,000
    65 ms (bench/README.md). Any other filter: an EXISTS for each session of qs.
    sources: the dict of the sources looked up already (tally_scope). matched: the sessions
    matching the search, when a search is all that filters them: their findings are counted
    alone too, without an EXISTS per session (about a quarter of a search's facets' CPU)."""
    if selects_every_session(params):
        return _sessions_with_findings()
    if matched is not None and only_searched(params):
        return _sessions_with_findings("f.session_id", list(matched))
    if (ids := sources_only(params, sources)) is not None:
        return _sessions_with_findings("f.source_id", sorted(ids))
    return qs.filter(has_possible_secrets()).count()


def _sessions_with_findings(column: str | None = None, ids: list[int] | None = None) -> int:
    """The sessions with a finding not dismissed, those whose column is among ids (None: every
    one): the list and a search ask on every page, and the ORM built and compiled the
    statement each time."""
    if column is not None and not ids:
        return 0
    return _undismissed_findings_read("COUNT(DISTINCT f.session_id)", column, ids or [])[0][0]


def _undismissed_findings_read(
    select: str, column: str | None, ids: list[int], tail: str = ""
) -> list[tuple]:
    """What select reads of the findings no one dismissed (_undismissed_findings, in a statement
    of our own), those whose column is among ids (None: every one), then tail (a GROUP BY)."""
    quote = connection.ops.quote_name
    findings, dismissals = quote(SessionFinding._meta.db_table), quote(SecretDismissal._meta.db_table)
    where, params = among_sql(column, ids, connection.vendor) if column else ("1 = 1", [])
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {select} FROM {findings} f WHERE {where} "  # noqa: S608 - our tables and columns
            f"AND NOT EXISTS (SELECT 1 FROM {dismissals} d WHERE d.fingerprint = f.fingerprint) {tail}",
            params,
        )
        return cursor.fetchall()


def only_searched(params: Mapping) -> bool:
    """Whether the cleaned params filter by the search (q) and nothing else."""
    return bool(params.get("q")) and not _filtered(params)


def selects_every_session(params: Mapping) -> bool:
    """Whether the cleaned params filter nothing: every session of the index."""
    return not params.get("q") and not _filtered(params)


def _filtered(params: Mapping) -> bool:
    """Whether a filter besides the search (q) is set."""
    return any(params.get(name) for name in FILTERS)


def filter_sessions(
    params: Mapping,
    base: QuerySet[Session] | None = None,
    matched: list[int] | None = None,
    first: Matches | None = None,
    by_text: bool = True,
    sources: dict | None = None,
) -> SessionQuery:
    """The sessions the cleaned params select (a parameter absent or empty filters nothing);
    matched, when given, is matching_session_ids(q) already; first, search.first_matches(q).
    by_text=False leaves q to the caller, whose hits say which sessions match it.
    sources: the sources of a machine or root looked up already, for tally_scope."""
    qs = base if base is not None else Session.objects.all()
    qs = qs.annotate(
        token_total=F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")
    )
    scope = tally_scope(params, sources) if base is None else None
    if fmt := params.get("format"):
        qs = qs.filter(format=fmt)
    if scope is not None and scope.sources is not None:  # the machine's or root's sources, looked up once
        qs = qs.filter(source_id__in=scope.sources)
    else:
        if machine := params.get("machine"):
            qs = qs.filter(source__machine=machine)
        if root := params.get("root"):
            qs = qs.filter(source_id=root) if isinstance(root, int) else qs.filter(source__path=root)
    for name in TEXT_FILTERS:
        if value := params.get(name):
            qs = qs.filter(**{name: fold_home(value) if name == "project" else value})
    if model := params.get("model"):
        qs = qs.filter(models_used__contains=f'"{model}"')
    if since := params.get("updated_since"):
        qs = qs.filter(updated_at__gte=since)
    if before := params.get("updated_before"):
        qs = qs.filter(updated_at__lt=before)
    if until := params.get("updated_until"):  # forms.UntilField made it an exclusive bound
        qs = qs.filter(updated_at__lt=until)
    if range_name := params.get("_range"):
        qs = started_in_range(qs, range_name)
    if parent := params.get("parent"):
        qs = qs.filter(parent_id=parent)
    if params.get("possible_secrets"):  # forms: "1", the only value
        qs = qs.filter(has_possible_secrets())
    narrowed = base is not None or any(params.get(name) for name in FILTERS)
    q = params.get("q") or None
    if q is not None and by_text:
        matched = matching_session_ids(q, first, narrowed) if matched is None else matched
        qs = qs.filter(id__among=matched)
    sort = params.get("_sort") or "updated"
    default = "1" if sort in ("updated", "started", "messages", "tokens", "cost") else "0"
    descending = (params.get("_sort_desc") or default) == "1"
    field = SORTS[sort]
    order = field.desc(nulls_last=True) if descending else field.asc(nulls_last=True)
    qs = qs.order_by(order, "-id")
    filtered = qs
    page = params.get("_page") or 1
    size = params.get("_size") or DEFAULT_SIZE
    text = str(q) if q is not None else ""
    return SessionQuery(
        qs, page, size, sort, descending, text, matched, narrowed, filtered=filtered, scope=scope
    )


# The filters the tally is kept by (tallies.py): sources, a format and a project.
TALLIED = ("format", "machine", "root", "project")


def tally_scope(params: Mapping, sources: dict | None = None) -> tallies.Scope | None:
    """The part of the tally counting the sessions params select, or None when a filter
    or a search asks for the sessions themselves. The tally is kept on PostgreSQL only (on
    SQLite, one machine's index, the sessions are counted), and keeps days and months in UTC:
    in another TIME_ZONE the sessions are counted. sources: a dict this request keeps the
    sources of each machine and root in, looked up once (the facets ask for them again)."""
    if connection.vendor != "postgresql" or settings.TIME_ZONE != "UTC" or params.get("q"):
        return None
    if any(params.get(name) for name in FILTERS if name not in (*TALLIED, "_range")):
        return None
    if (range_name := params.get("_range")) and RANGES[range_name] is not None:
        return None  # all time (_range=all) selects every session: the tally's
    fmt, project = params.get("format") or "", fold_home(params.get("project") or "")
    machine, root = params.get("machine"), params.get("root")
    if not (machine or root):
        return tallies.Scope(None, fmt, project)
    return tallies.Scope(_sources_of(machine, root, sources), fmt, project)


def sources_only(params: Mapping, sources: dict | None = None) -> frozenset[int] | None:
    """The sources of the machine and/or root the cleaned params select, when they filter
    by nothing else (all time aside); else None. On both engines. sources: as tally_scope's."""
    machine, root = params.get("machine"), params.get("root")
    if not (machine or root) or params.get("q"):
        return None
    if any(params.get(name) for name in FILTERS if name not in ("machine", "root", "_range")):
        return None
    if (range_name := params.get("_range")) and RANGES[range_name] is not None:
        return None
    return _sources_of(machine, root, sources)


def _sources_of(machine: str | None, root: int | str | None, sources: dict | None) -> frozenset[int]:
    """The ids of the sources of a machine, a root (its id, or its path on any machine) or
    both, kept in sources (a dict for one request) to be looked up once."""
    sources = {} if sources is None else sources
    if (machine, root) not in sources:
        picked = Source.objects.all()
        if machine:
            picked = picked.filter(machine=machine)
        if root:
            picked = picked.filter(id=root) if isinstance(root, int) else picked.filter(path=root)
        sources[machine, root] = frozenset(picked.values_list("id", flat=True))
    return sources[machine, root]


def nested(query: SessionQuery, params: Mapping) -> SessionQuery:
    """The list's rows: a subagent whose parent is among the sessions shown goes under it
    (subagents_of), not on a row of its own; _flat=1 or a kind filter lists every session."""
    query.flat = params.get("_flat") == "1"
    if query.flat or params.get("kind"):
        return query
    if query.scope is not None:
        # Filtered by sources, a format and a project only: the parent is shown when it is in them,
        # which its own row (joined by its key, for the subagents only) says. PostgreSQL
        # reads every session of the filter into a hash for the EXISTS below.
        parent_shown = Q(parent__isnull=False)
        if query.scope.sources is not None:
            parent_shown &= Q(parent__source_id__in=query.scope.sources)
        if query.scope.format:
            parent_shown &= Q(parent__format=query.scope.format)
        if query.scope.project:
            parent_shown &= Q(parent__project=query.scope.project)
    else:
        # EXISTS on the parent's id, not parent_id IN (every session shown): PostgreSQL cannot
        # turn that IN under a NOT into an anti-join, and past work_mem (400,000 sessions) it
        # scanned the whole list again for each row: minutes for one count (bench/load.py).
        parent_shown = Exists(query.queryset.order_by().filter(pk=OuterRef("parent_id")))
    query.queryset = query.queryset.exclude(parent_shown, kind="subagent")
    query.nested = True
    return query


# What a row of the list page shows (templatetags/display.py session_row), and nothing else:
# not the JSON it does not show (usage_lines, model_costs, git_branches), parsed for every row.
# The columns every table of sessions reads: a row's title and link, its kind, times, counts
# and cost (display.session_row on the list, display.usage_row on a project's page).
SESSION_ROW_FIELDS = (
    "id",
    "parent_id",
    "format",
    "key",
    "status",
    "kind",
    "title",
    "summary_title",
    "first_prompt",
    "started_at",
    "updated_at",
    "message_count",
    "models_used",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "cost",
    "unpriced_tokens",
)
# The list's rows: those, and where a session was and what it holds.
ROW_FIELDS = (
    *SESSION_ROW_FIELDS,
    "project",
    "jid",
    "agent",
    "channel",
    "peer_kind",
    "extra",  # its unknown_entries: the row's badge
    "index_error",
)
# The same, with the machine of each row's source: once there are two machines.
ROW_FIELDS_WITH_MACHINE = (*ROW_FIELDS, "source", "source__machine")
# (label, _sort key): the list table's columns, each sorting by its key of SORTS.
COLUMNS = (
    ("Title", "title"),
    ("Format", "format"),
    ("Project or JID", "project"),
    ("Agent · channel · peer", "agent"),
    ("Started", "started"),
    ("Updated", "updated"),
    ("Messages", "messages"),
    ("Models", "models"),
    ("Tokens", "tokens"),
    ("Cost", "cost"),
)
# Last, once there are two machines: the table's CSS places its columns by their position.
MACHINE_COLUMN = ("Machine", "machine")


def columns(machines: bool) -> tuple[tuple[str, str], ...]:
    """The list table's columns; machines: whether the index has sessions of two or more."""
    return (*COLUMNS, MACHINE_COLUMN) if machines else COLUMNS


class CountedPaginator(Paginator):
    """A paginator told how many objects there are, which does not count them."""

    def __init__(self, object_list, per_page, *, count: int):
        super().__init__(object_list, per_page)
        self.known_count = count

    @cached_property
    def count(self) -> int:
        return self.known_count


def session_page(query: SessionQuery, fields: tuple[str, ...] | None = None) -> Page:
    """The page of sessions the query asks for; each row's nested_subagents are the subagents,
    among the sessions the filters select, that nested() put under it (else []). fields: the
    only columns read (ROW_FIELDS for the page), else every column and the source."""

    def shown(qs: QuerySet[Session]) -> QuerySet[Session]:
        if fields and "source" not in fields:
            return qs.only(*fields)
        return qs.select_related("source").only(*fields) if fields else qs.select_related("source")

    # The page's ids first, from the index in the list's order alone where it can, then
    # their rows: OFFSET then skips ids, not whole rows.
    ids = query.queryset.values_list("id", flat=True)
    if query.scope is not None:  # counted by the tally, not by counting the sessions again
        paginator = CountedPaginator(ids, query.size, count=tallies.sessions(query.scope, query.nested))
    elif query.matched is not None and len(query.matched) <= search.HIT_CAP:
        # A search's sessions, at most those of its newest HIT_CAP hits: their ids in the list's
        # order in one statement, and the page cut from them, where a count and the page took two.
        paginator = Paginator(list(ids), query.size)
    else:
        paginator = Paginator(ids, query.size)
    page = paginator.get_page(query.page)
    page_ids = list(page.object_list)
    rows = shown(Session.objects.all()).in_bulk(page_ids)
    page.object_list = [rows[i] for i in page_ids if i in rows]  # one deleted since is left out
    found: dict[int, list[Session]] = {}
    if query.nested and page.object_list:
        parents = [session.id for session in page.object_list]
        children = shown(query.filtered.filter(kind="subagent", parent_id__in=parents))
        for child in children.order_by("started_at", "id"):
            found.setdefault(child.parent_id, []).append(child)
    for session in page.object_list:
        session.nested_subagents = found.get(session.id, [])
    _count_findings([*page.object_list, *(child for children in found.values() for child in children)])
    return page


def _count_findings(sessions: list[Session]) -> None:
    """Each row's possible_secrets: its findings not marked not a secret, in one statement of
    our own: the ORM built and compiled the same one for every page of the list (about 2 % of
    the pages' CPU, bench/README.md)."""
    ids = [s.id for s in sessions]
    counts = (
        dict(
            _undismissed_findings_read("f.session_id, COUNT(*)", "f.session_id", ids, "GROUP BY f.session_id")
        )
        if ids
        else {}
    )
    for session in sessions:
        session.possible_secrets = counts.get(session.id, 0)
