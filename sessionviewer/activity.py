"""Counts over sessions: the list page's facets and the activity page's charts.

Both start from filters.filter_sessions, so they honour every filter of the list; they take
the parameters forms.ActivityForm or SessionListForm cleaned, and the raw query to tell which
facet values are selected. Each value says which parameters clicking it sets ("toggle");
links.with_facet_links makes that its link.
A facet counts on the sessions filtered by everything except its own parameter,
as datasette does, so each value's count says what clicking it would show.
Charts are geometry computed here and drawn as inline SVG by the templates.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import date, timedelta
from typing import NamedTuple

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.db.models.functions import Substr, TruncDate, TruncMonth
from django.http import QueryDict
from django.utils import timezone

from sessionviewer import tallies
from sessionviewer.filters import (
    RANGES,
    count_with_possible_secrets,
    filter_sessions,
    matching_session_ids,
    only_searched,
    range_start,
    started_in_range,
    tally_scope,
)
from sessionviewer.lookups import among_sql
from sessionviewer.models import Session, Source
from sessionviewer.readers import format_name

FACET_LIMIT = 12
# (parameter, label, field): the list page's facets, in the order shown.
FACETS = (
    ("format", "Format", "format"),
    ("possible_secrets", "Possible secrets", None),
    ("machine", "Machine", None),
    ("root", "Root", None),
    ("project", "Project", "project"),
    ("jid", "JID", "jid"),
    ("agent", "Agent", "agent"),
    ("channel", "Channel", "channel"),
    ("peer_kind", "Peer kind", "peer_kind"),
    ("kind", "Kind", "kind"),
    ("model", "Model", None),
    ("updated", "Updated", None),
)
_RANGE = ("updated_since", "updated_before", "updated_until")
_UNTALLIED = ("possible_secrets",)
SECRETS_VALUE = "At least one"  # the label of possible_secrets=1


def _own(facet: str) -> tuple[str, ...]:
    """The parameters a facet sets: left out of the filters its values are counted under."""
    return _RANGE if facet == "updated" else (facet,)


def _without(filters: dict, *names: str) -> dict:
    return {name: value for name, value in filters.items() if name not in names}


def _month(field: str):
    """The month of a date-time column. On SQLite in UTC, the first 7 characters of the
    stored text: TruncMonth there calls a Python function for every row."""
    if connection.vendor == "sqlite" and settings.TIME_ZONE == "UTC":
        return Substr(field, 1, 7)
    return TruncMonth(field)


def _day(field: str):
    """The day of a date-time column; on SQLite in UTC, without a Python call per row."""
    if connection.vendor == "sqlite" and settings.TIME_ZONE == "UTC":
        return Substr(field, 1, 10)
    return TruncDate(field)


def _as_date(value) -> date:
    return date.fromisoformat(value) if isinstance(value, str) else value


def _month_text(value) -> str:
    return value if isinstance(value, str) else f"{value:%Y-%m}"


def facets(params: QueryDict, filters: dict, matched: list[int] | None = None) -> list[dict]:
    """Each facet's values with counts, whether selected, and the parameters that toggle it.

    params: the query string, for the links; filters: the same, cleaned by the page's form;
    matched: the sessions matching the query's q, when the caller searched already."""
    if (q := filters.get("q")) and matched is None:
        matched = matching_session_ids(q)
    result = []
    by_source: dict[tuple, list[tuple[Source, int]]] = {}
    machine_of: dict[str, dict] = {}
    sources: dict = {}  # each machine's or root's sources, looked up once
    # Counted by the tally when the other filters are its own (a machine, a root, a format):
    # a few hundred rows per source, not every session read once per facet. The facets
    # with the same scope are read in one statement.
    # Not the possible secrets: the tally knows nothing of findings, which are counted
    # themselves (filters.count_with_possible_secrets).
    scopes = {
        name: None
        if matched is not None or name in _UNTALLIED
        else tally_scope(_without(filters, *_own(name)), sources)
        for name, _, _ in FACETS
    }
    # A search and nothing else: every facet counts the same sessions, in one statement.
    searched = _searched_counts(matched) if matched is not None and only_searched(filters) else None
    tallied: dict[str, list[tuple[str, int]]] = {}
    for scope in set(scopes.values()) - {None}:
        names = [name for name in tallies.VALUE_FACETS if scopes[name] == scope]
        if names:
            tallied |= tallies.facet_values(names, scope, FACET_LIMIT)
    # Facets whose own parameters are not set count the same sessions: their queryset is
    # made once (a search's thirteen were a seventh of its Python).
    made: dict[tuple, QuerySet] = {}
    counted_sessions = {}
    for name, _, _ in FACETS:
        if scopes[name] is None and searched is None:
            unfiltered = _without(filters, *_own(name))
            # An empty parameter filters nothing (filter_sessions), as an absent one.
            key = tuple(sorted((param, repr(value)) for param, value in unfiltered.items() if value))
            if key not in made:
                made[key] = filter_sessions(unfiltered, matched=matched, sources=sources).queryset.order_by()
            counted_sessions[name] = made[key]
    # The facets of a column each (a project, a JID...) counted from the sessions: in one
    # statement, not one each (a search's facets were 7 statements over its 1,000 sessions).
    columns = {
        name: (counted_sessions[name], field)
        for name, _, field in FACETS
        if name in counted_sessions and field is not None
    }
    by_value = searched.columns if searched is not None else _values_counted(columns)
    for name, label, _field in FACETS:
        own = _own(name)
        scope = scopes[name]
        unfiltered = _without(filters, *own)
        qs = counted_sessions.get(name)
        if name in ("machine", "root"):
            # Both count by source, on the same sessions unless one of them is filtered:
            # counted once then, and without joining the sources to every session.
            dropped = tuple(n for n in own if filters.get(n))
            if dropped not in by_source:
                if searched is not None:
                    per_source = searched.sources
                else:
                    per_source = tallies.by_source(scope) if scope is not None else _counts_by_source(qs)
                by_source[dropped] = _sources_counted(per_source)
            counted = by_source[dropped]
        if name == "model":
            if scope is not None:
                rows = [(m, m, n) for m, n in tallied["model"]]
            else:
                if searched is not None:
                    counts = searched.models
                else:
                    counts = Counter(
                        m for used in qs.values_list("models_used", flat=True) for m in used or []
                    )
                most = sorted(counts.items(), key=lambda r: (-r[1], r[0]))[:FACET_LIMIT]
                rows = [(m, m, n) for m, n in most]
        elif name == "updated":
            if scope is not None:
                months = tallied["updated"]
            elif searched is not None:
                months = searched.months
            else:
                found = (
                    qs.exclude(updated_at=None)
                    .annotate(month=_month("updated_at"))
                    .values("month")
                    .annotate(n=Count("id"))
                    .order_by("-month")[:FACET_LIMIT]
                )
                months = [(_month_text(m["month"]), m["n"]) for m in found]
            rows = [(f"{month}-01", month, n) for month, n in months]
        elif name == "possible_secrets":
            found = count_with_possible_secrets(unfiltered, qs, sources, matched)
            rows = [("1", SECRETS_VALUE, found)] if found or filters.get(name) else []
        elif name == "root":
            # With two machines, a root's machine too: both may have the same path.
            named = len({source.machine for source, _ in counted}) > 1
            machine_of = (
                {str(s.id): {"machine": s.machine, "path": s.path} for s, _ in counted} if named else {}
            )
            rows = [
                (str(s.id), f"{s.machine}: {s.path}" if named else s.path, n)
                for s, n in counted[:FACET_LIMIT]
            ]
        elif name == "machine":
            per_machine = Counter()
            for source, n in counted:
                if source.machine:
                    per_machine[source.machine] += n
            rows = [(m, m, n) for m, n in sorted(per_machine.items(), key=lambda r: (-r[1], r[0]))]
            rows = rows[:FACET_LIMIT]
        elif scope is not None:
            found = tallied[name] if name in tallied else tallies.format_counts(scope)[:FACET_LIMIT]
            rows = [(value, value, n) for value, n in found]
        else:
            rows = [(value, value, n) for value, n in by_value[name]]
        values = []
        for value, text, count in rows:
            if name == "updated":
                start = date.fromisoformat(value)
                end = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
                selected = params.get("updated_since") == value and params.get("updated_before") == str(end)
                toggle = (
                    {"updated_since": None, "updated_before": None, "updated_until": None}
                    if selected
                    else {"updated_since": value, "updated_before": str(end), "updated_until": None}
                )
            else:
                selected = params.get(name) == value
                toggle = {name: None if selected else value}
            values.append(
                {"value": value, "label": text, "count": count, "selected": selected, "toggle": toggle}
            )
            if name == "root" and value in machine_of:  # for the page, which shortens the path apart
                values[-1].update(machine_of[value])
        if values:
            result.append({"name": name, "label": label, "values": values})
    return result


def _values_counted(columns: dict[str, tuple]) -> dict[str, list[tuple[str, int]]]:
    """Each facet's first FACET_LIMIT values and their sessions, the most first (then by
    value, in the database's collation), "" left out: columns maps a facet to its sessions
    (a queryset) and its column. One statement for all of them."""
    if not columns:
        return {}
    parts, params = [], []
    for n, (qs, field) in enumerate(columns.values()):
        counted = qs.exclude(**{field: ""}).values(field).annotate(n=Count("id")).order_by("-n", field)
        try:
            sql, part_params = counted[:FACET_LIMIT].query.sql_with_params()
        except EmptyResultSet:  # no session can match (SQLite's `IN ()`): the facet has no value
            continue
        column = connection.ops.quote_name(field)
        parts.append(f"SELECT {n} AS part, counted.{column} AS value, counted.n AS n FROM ({sql}) AS counted")  # noqa: S608 - the ORM's SQL
        params += part_params
    found: dict[str, list[tuple[str, int]]] = {name: [] for name in columns}
    if not parts:
        return found
    # The same order as each part's own: the parts' ORDER BY holds inside their LIMIT only.
    statement = " UNION ALL ".join(parts) + " ORDER BY part, n DESC, value"
    names = list(columns)
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        for part, value, n in cursor.fetchall():
            found[names[part]].append((value, n))
    return found


class _Searched(NamedTuple):
    """What the facets of a search count, when the search is all that filters the sessions."""

    columns: dict[str, list[tuple[str, int]]]  # as _values_counted gives them
    sources: dict[int, int]  # sessions per source id, as _counts_by_source
    models: dict[str, int]  # mentions per model, as the facet's Counter counts them
    months: list[tuple[str, int]]  # the newest FACET_LIMIT months of their last update


def _searched_counts(matched: list[int]) -> _Searched | None:
    """The facets' counts over the sessions a search matched, in one statement of our own.

    Each facet used to build, compile and send its own statement over the same sessions
    (the column facets' in one): five statements and about a sixth of a search's CPU
    (bench/README.md). Each part here says what the facet's own query says: a column's
    FACET_LIMIT commonest values but "", then by value in the database's collation; every
    source; every model; the newest FACET_LIMIT months in the current time zone. None
    where a month is not a text's first characters on SQLite (a time zone other than
    UTC): the facets then count as any filter's do."""
    vendor = connection.vendor
    if vendor == "postgresql":
        month = "to_char(date_trunc('month', updated_at AT TIME ZONE %s), 'YYYY-MM')"
        month_params = [timezone.get_current_timezone_name()]
        models = (  # a value that is not a list names no model, rather than fail the page
            "CROSS JOIN LATERAL json_array_elements_text(CASE WHEN json_typeof(searched.models_used::json) "
            "= 'array' THEN searched.models_used::json ELSE '[]' END) AS m(value)"
        )
    elif vendor == "sqlite" and settings.TIME_ZONE == "UTC":
        month, month_params = "substr(updated_at, 1, 7)", []
        models = (
            "CROSS JOIN json_each(CASE WHEN json_type(searched.models_used) = 'array' "
            "THEN searched.models_used ELSE '[]' END) AS m"
        )
    else:
        return None
    names, fields = [name for name, _, field in FACETS if field], [field for _, _, field in FACETS if field]
    found = _Searched({name: [] for name in names}, {}, {}, [])
    if not matched:
        return found
    quote = connection.ops.quote_name
    among, params = among_sql("id", matched, vendor)
    columns = ", ".join(quote(f) for f in dict.fromkeys([*fields, "source_id", "updated_at", "models_used"]))
    parts = [
        f"SELECT * FROM (SELECT {n} AS part, {quote(field)} AS value, COUNT(*) AS n FROM searched "  # noqa: S608 - our own names
        f"WHERE {quote(field)} <> '' GROUP BY {quote(field)} ORDER BY n DESC, {quote(field)} "
        f"LIMIT {FACET_LIMIT}) AS part{n}"
        for n, field in enumerate(fields)
    ]
    source, model, newest = len(fields), len(fields) + 1, len(fields) + 2
    parts += [
        f"SELECT {source}, CAST(source_id AS TEXT), COUNT(*) FROM searched GROUP BY source_id",  # noqa: S608
        f"SELECT {model}, m.value, COUNT(*) FROM searched {models} GROUP BY m.value",  # noqa: S608
        f"SELECT * FROM (SELECT {newest} AS part, {month} AS value, COUNT(*) AS n FROM searched "  # noqa: S608
        f"WHERE updated_at IS NOT NULL GROUP BY 2 ORDER BY 2 DESC LIMIT {FACET_LIMIT}) AS months",
    ]
    statement = (
        f"WITH searched AS MATERIALIZED (SELECT {columns} FROM {quote(Session._meta.db_table)} "  # noqa: S608 - our own names
        f"WHERE {among}) " + " UNION ALL ".join(parts) + " ORDER BY part, n DESC, value"
    )
    with connection.cursor() as cursor:
        cursor.execute(statement, [*params, *month_params])
        rows = cursor.fetchall()
    # As the facets order them (a part's ORDER BY holds inside its LIMIT only); months below.
    for part, value, n in rows:
        if part < source:
            found.columns[names[part]].append((value, n))
        elif part == source:
            found.sources[int(value)] = n
        elif part == model:
            if value is not None:
                found.models[str(value)] = found.models.get(str(value), 0) + n
        else:
            found.months.append((value, n))
    found.months.sort(reverse=True)  # by month, the newest first
    return found


def _counts_by_source(qs) -> dict[int, int]:
    """The sessions of qs per source id."""
    return dict(qs.values("source_id").annotate(n=Count("id")).values_list("source_id", "n"))


class SourceName(NamedTuple):
    """What a facet shows of a source: as rows, not models (an index of ten machines holds a
    few hundred sources, and making each a model was a seventh of the list's Python)."""

    id: int
    machine: str
    path: str


def _sources_counted(found: dict[int, int]) -> list[tuple[SourceName, int]]:
    """Sessions per source, the most first, each source read once (a few rows); the
    sources that hold none left out."""
    held = [i for i, n in found.items() if n]
    rows = Source.objects.filter(id__among=held).values_list("id", "machine", "path") if held else ()
    sources = {row[0]: SourceName(*row) for row in rows}
    counted = [(sources[i], n) for i, n in found.items() if i in sources]
    return sorted(counted, key=lambda r: (-r[1], r[0].machine, r[0].path))


# --- Charts -------------------------------------------------------------------------------------------

BAR_HEIGHT = 22
LABEL_WIDTH = 250  # fits the 30 characters _chart.html keeps of a label
BAR_WIDTH = 300
# The range the page's totals and charts share: the sessions started in the last N days.
RANGE_LABELS = {"7": "7 days", "30": "30 days", "90": "90 days", "all": "All"}
DEFAULT_RANGE = "all"
TICKS = 6  # dated ticks under a chart over time, at most
TICK_GAP = 40  # the least distance between two ticks' centres, in the chart's units
MIN_COLUMNS_WIDTH = 480
WEEKS_FROM = 120  # days: a longer span is drawn by week, then by month
MONTHS_FROM = 3 * 365
OTHER = "(the rest)"


def bar_chart(
    title: str, rows: list[tuple[str, int | float]], unit: str, urls: list[str | None] | None = None
) -> dict:
    """Horizontal bars: one (label, value) per row, widths scaled to the largest; urls, when
    given, one per row (None: no link), for the label to open the row's own page."""
    top = max((v for _, v in rows), default=0) or 1
    urls = urls or [None] * len(rows)
    bars = [
        {
            "label": label,
            "value": value,
            "url": url,
            "y": n * BAR_HEIGHT,
            "width": round(BAR_WIDTH * max(value, 0) / top, 1),
            "text_y": n * BAR_HEIGHT + BAR_HEIGHT * 0.68,
        }
        for n, ((label, value), url) in enumerate(zip(rows, urls, strict=True))
    ]
    return {
        "title": title,
        "unit": unit,
        "bars": bars,
        "linked": any(urls),
        "height": max(len(bars), 1) * BAR_HEIGHT,
        "label_width": LABEL_WIDTH,
        "width": LABEL_WIDTH + BAR_WIDTH + 90,
        "bar_x": LABEL_WIDTH,
    }


def tick_text(day: str, years: int, bucket: str) -> str:
    """A tick's date as short as the chart allows: "03-05" within a year; over several, the
    year too ("2025-03-05", or "2025-03" for a month)."""
    if years < 2:
        return day[5:]
    return day[:7] if bucket == "month" else day


def column_chart(
    title: str, rows: list[tuple[str, int | float]], unit: str, height: int = 160, bucket: str = "day"
) -> dict:
    """Vertical bars over time, oldest first, gaps included; dated ticks under them, with
    their years where the chart spans more than one."""
    top = max((v for _, v in rows), default=0) or 1
    step = max(4, min(24, 720 // max(len(rows), 1)))
    columns = []
    for n, (label, value) in enumerate(rows):
        h = round(height * max(value, 0) / top, 1)
        columns.append({"label": label, "value": value, "x": n * step, "y": height - h, "height": h})
    years = len({label[:4] for label, _ in rows})
    texts = [tick_text(label, years, bucket) for label, _ in rows]
    # At most TICKS ticks, and never closer than a label's width (TICK_GAP for "03-05", more
    # for a label with its year), so they never overlap.
    gap = TICK_GAP * max((len(text) for text in texts), default=5) / 5
    every = max(1, -(-len(rows) // TICKS), int(-(-gap // step)))
    ticks = [{"x": c["x"] + step / 2, "label": c["label"], "text": texts[n]} for n, c in enumerate(columns)][
        ::every
    ]
    return {
        "title": title,
        "unit": unit,
        "columns": columns,
        "ticks": ticks,
        "step": step,
        "bar": max(step - 2, 2),
        "height": height,
        # A few columns keep their width, left-aligned, rather than being scaled up to fill a page.
        "width": max(max(len(rows), 1) * step, MIN_COLUMNS_WIDTH),
        "top": top,
        "empty": not any(v for _, v in rows),
        "first": rows[0][0] if rows else "",
        "last": rows[-1][0] if rows else "",
    }


def _bucket_start(day: date, span: int) -> date:
    if span > MONTHS_FROM:
        return day.replace(day=1)
    if span > WEEKS_FROM:
        return day - timedelta(days=day.weekday())
    return day


def _next_bucket(day: date, span: int) -> date:
    if span > MONTHS_FROM:
        return (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return day + timedelta(days=7 if span > WEEKS_FROM else 1)


def range_end(qs, since: date | None, today: date) -> date:
    """The range's last day: today, but for "All" (no since) the last session's day, so that
    a chart of all time ends where the sessions do, not in an empty tail up to today."""
    if since is None and (last := qs.aggregate(last=Max("started_at"))["last"]):
        return min(today, timezone.localdate(last))
    return today


def sessions_by_day(qs, since: date | None, today: date) -> tuple[list[dict], str]:
    """Sessions, tokens and cost by the day each session started, from the range's first day
    (or the first session's) to today: by week or month over long spans, so every session
    dated is in one bucket. Returns the buckets and their size: day, week or month."""
    found = (
        qs.exclude(started_at=None)
        .annotate(day=_day("started_at"))
        .values("day")
        .annotate(sessions=Count("id"), tokens=Sum("token_total"), cost=Sum("cost"))
        .order_by("day")
    )
    return in_buckets({_as_date(row["day"]): row for row in found}, since, today)


def in_buckets(by_day: dict[date, dict], since: date | None, today: date) -> tuple[list[dict], str]:
    """sessions_by_day's buckets from each day's sessions, tokens and cost."""
    if not by_day:
        return [], "day"
    first = since or min(by_day)
    last = max(today, max(by_day))
    span = (last - first).days
    size = "month" if span > MONTHS_FROM else "week" if span > WEEKS_FROM else "day"
    buckets: dict[date, dict] = {}
    day = _bucket_start(first, span)
    while day <= last:
        buckets[day] = {"day": day.isoformat(), "sessions": 0, "tokens": 0, "cost": 0.0}
        day = _next_bucket(day, span)
    for day, row in by_day.items():
        bucket = buckets[_bucket_start(day, span)]
        bucket["sessions"] += row["sessions"]
        bucket["tokens"] += row["tokens"] or 0
        bucket["cost"] += row["cost"] or 0.0
    return list(buckets.values()), size


def _top(rows: list[dict], key: str, label: str, sort_key) -> list[dict]:
    """The FACET_LIMIT largest rows, and the rest summed in one, so the rows add up."""
    rows = sorted(rows, key=sort_key)
    if len(rows) <= FACET_LIMIT:
        return rows
    kept, rest = rows[: FACET_LIMIT - 1], rows[FACET_LIMIT - 1 :]
    other = {label: f"{OTHER}: {len(rest)}"}
    for name in ("sessions", "tokens", "cost", "unpriced_tokens"):
        if name in rest[0]:
            other[name] = sum(r[name] or 0 for r in rest)
    return [*kept, other]


def usage_by_model(qs) -> list[dict]:
    """Tokens and cost by the model of each turn (Session.model_costs), the largest first:
    they add up to the sessions' totals. cost None: no token of that model has a price."""
    return models_first(_per_model(qs))


def models_first(per_model: dict[str, dict]) -> list[dict]:
    """usage_by_model's rows from each model's figures."""
    return _top(list(per_model.values()), "model", "model", lambda r: (-r["tokens"], r["model"]))


def _per_model(qs) -> dict[str, dict]:
    per_model: dict[str, dict] = {}
    for costs in qs.values_list("model_costs", flat=True):
        for m, figures in (costs or {}).items():
            row = per_model.setdefault(
                m,
                {"model": m or "(no model)", "sessions": 0, "tokens": 0, "cost": None, "unpriced_tokens": 0},
            )
            row["sessions"] += 1
            row["tokens"] += figures["tokens"]
            if figures["cost"] is None:
                row["unpriced_tokens"] += figures["tokens"]
            else:
                row["cost"] = (row["cost"] or 0.0) + figures["cost"]
    return per_model


def totals_of(qs) -> dict:
    """Sessions, tokens, messages and cost of qs (annotated with token_total, as
    filters.filter_sessions does); undated: sessions without a start, in no chart over time."""
    totals = qs.aggregate(
        sessions=Count("id"),
        tokens=Sum("token_total"),
        messages=Sum("message_count"),
        cost=Sum("cost"),
        unpriced_tokens=Sum("unpriced_tokens"),
        undated=Count("id", filter=Q(started_at=None)),
        last=Max("updated_at"),
    )
    last = totals.pop("last")
    totals = {k: v or 0 for k, v in totals.items()} | {"last": last}
    totals["cost"] = float(totals["cost"])
    return totals


def time_charts(days: list[dict], bucket: str) -> dict:
    """Sessions, tokens and cost over time, from sessions_by_day: one column per bucket."""
    sub = "Sessions" if bucket == "day" else f"Sessions by {bucket}"
    per = "per day" if bucket == "day" else f"per {bucket}"
    return {
        "sessions_per_day": column_chart(
            f"{sub} started" if bucket != "day" else "Sessions started per day",
            [(d["day"], d["sessions"]) for d in days],
            "sessions",
            bucket=bucket,
        ),
        "tokens_per_day": column_chart(
            f"Tokens {per}", [(d["day"], d["tokens"]) for d in days], "tokens", bucket=bucket
        ),
        "cost_per_day": column_chart(
            f"Cost {per}", [(d["day"], d["cost"]) for d in days], "USD", bucket=bucket
        ),
    }


def report(
    filters: dict,
    today: date | None = None,
    jid_url: Callable[[str], str | None] | None = None,
    project_url: Callable[[str], str] | None = None,
) -> dict:
    """Sessions, tokens and cost per day, model, project or JID and format; the busiest
    sessions. Totals and charts cover the same sessions: those started in the range
    (filters["_range"]); each chart's rows add up to the totals.

    jid_url: a JID's workspace page, for someone who may read it (None: no JID links);
    project_url: a project's page (None: no project links)."""
    today = today or timezone.localdate()
    range_name = filters.get("_range") or DEFAULT_RANGE
    since = range_start(range_name, today)
    sources: dict = {}  # each machine's or root's sources, looked up once
    everything = filter_sessions(_without(filters, "_range"), sources=sources).queryset.order_by()
    qs = started_in_range(everything, range_name, today)
    today = range_end(qs, since, today)
    # All time, by a machine, a root or a format: from the tally (the range's days alone are
    # not enough to split its sessions by model, place and format: those are counted).
    scope = tally_scope(_without(filters, "_range"), sources) if since is None else None
    if scope is not None and not scope.project:  # a project's rows hold the list's facets only
        days, bucket = in_buckets(tallies.by_day(scope), since, today)
        models = models_first(tallies.model_usage(scope))
        place_rows, format_rows = tallies.places(scope), tallies.formats(scope)
        totals = tallies.totals(scope) | {"last": qs.aggregate(last=Max("updated_at"))["last"]}
    else:
        days, bucket = sessions_by_day(qs, since, today)
        models = usage_by_model(qs)
        place_rows = qs.values("project", "jid", "agent").annotate(
            n=Count("id"), t=Sum("token_total"), c=Sum("cost")
        )
        format_rows = qs.values("format").annotate(n=Count("id"), t=Sum("token_total"), c=Sum("cost"))
        totals = totals_of(qs)
    places = _top(
        [
            {
                "place": r["project"] or r["jid"] or r["agent"] or "(none)",
                "project": r["project"],
                "jid": "" if r["project"] else r["jid"],
                "sessions": r["n"],
                "tokens": r["t"] or 0,
                "cost": r["c"] or 0.0,
            }
            for r in place_rows
        ],
        "place",
        "place",
        lambda r: (-r["sessions"], r["place"]),
    )
    # Links for the rows kept alone (the rest is summed in one row, which has none): the
    # project's own page, a JID's workspace page. An index of many machines has thousands of
    # projects, and all but FACET_LIMIT of them are in the rest.
    for place in places:
        if "project" not in place:
            continue
        project, jid = place.pop("project"), place.pop("jid")
        if project:
            place["url"] = project_url(project) if project_url is not None else None
        else:
            place["url"] = jid_url(jid) if jid and jid_url is not None else None
    formats = [
        {"format": r["format"], "sessions": r["n"], "tokens": r["t"] or 0, "cost": r["c"] or 0.0}
        for r in sorted(format_rows, key=lambda r: (-r["n"], r["format"]))
    ]
    busiest = list(qs.order_by(F("token_total").desc(), "-id")[:10])
    return {
        "range": {
            "name": range_name,
            "label": RANGE_LABELS[range_name],
            "since": since,
            "until": today,
            "bucket": bucket,
        },
        "ranges": [(name, RANGE_LABELS[name]) for name in RANGES],
        "totals": totals,
        "days": days,
        "models": models,
        "places": places,
        "formats": formats,
        "busiest": busiest,
        "charts": {
            **time_charts(days, bucket),
            "tokens_per_model": bar_chart(
                "Tokens by the model of each turn", [(r["model"], r["tokens"]) for r in models], "tokens"
            ),
            "cost_per_model": bar_chart(
                "Cost by the model of each turn",
                [(r["model"], r["cost"]) for r in models if r["cost"] is not None],
                "USD",
            ),
            "sessions_per_model": bar_chart(
                "Sessions using each model", [(r["model"], r["sessions"]) for r in models], "sessions"
            ),
            "sessions_per_place": bar_chart(
                "Sessions per project or JID",
                [(r["place"], r["sessions"]) for r in places],
                "sessions",
                [r.get("url") for r in places],
            ),
            "tokens_per_place": bar_chart(
                "Tokens per project or JID",
                [(r["place"], r["tokens"]) for r in places],
                "tokens",
                [r.get("url") for r in places],
            ),
            "cost_per_place": bar_chart(
                "Cost per project or JID",
                [(r["place"], r["cost"]) for r in places],
                "USD",
                [r.get("url") for r in places],
            ),
            "sessions_per_format": bar_chart(
                "Sessions per format",
                [(format_name(r["format"]), r["sessions"]) for r in formats],
                "sessions",
            ),
            "tokens_per_format": bar_chart(
                "Tokens per format", [(format_name(r["format"]), r["tokens"]) for r in formats], "tokens"
            ),
            "cost_per_format": bar_chart(
                "Cost per format", [(format_name(r["format"]), r["cost"]) for r in formats], "USD"
            ),
            "busiest": bar_chart(
                "Busiest sessions by tokens",
                [(s.display_title[:60], s.token_total) for s in busiest],
                "tokens",
            ),
        },
    }


def report_to_dict(data: dict) -> dict:
    """The activity report for the JSON twin: the numbers, without the drawing."""
    return {
        "range": data["range"],
        "totals": data["totals"],
        "days": data["days"],
        "models": data["models"],
        "places": data["places"],
        "formats": data["formats"],
        "busiest": [
            {
                "id": s.id,
                "title": s.display_title,
                "tokens": s.token_total,
                "cost": s.cost,
                "messages": s.message_count,
            }
            for s in data["busiest"]
        ],
    }
