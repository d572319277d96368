"""Counts over sessions: the list page's facets and the activity page's charts.

Both start from filters.filter_sessions, so they honour every filter of the list; they take
the parameters forms.ActivityForm or SessionListForm cleaned, and the raw query for links.
A facet counts on the sessions filtered by everything except its own parameter,
as datasette does, so each value's count says what clicking it would show.
Charts are geometry computed here and drawn as inline SVG by the templates.
"""

from __future__ import annotations

from collections import Counter
from datetime import date, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Count, F, Max, Sum
from django.db.models.functions import Substr, TruncDate, TruncMonth
from django.http import QueryDict

from sessionviewer.filters import filter_sessions, matching_session_ids
from sessionviewer.formats import format_name

FACET_LIMIT = 12
# (parameter, label, field): the list page's facets, in the order shown.
FACETS = (
    ("format", "Format", "format"),
    ("root", "Root", "source__path"),
    ("project", "Project", "project"),
    ("jid", "JID", "jid"),
    ("agent", "Agent", "agent"),
    ("channel", "Channel", "channel"),
    ("peer_kind", "Peer kind", "peer_kind"),
    ("model", "Model", None),
    ("updated", "Updated", None),
)
# (label, _sort key or None): the list table's columns.
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
_RANGE = ("updated_since", "updated_before")


def _without(filters: dict, *names: str) -> dict:
    return {name: value for name, value in filters.items() if name not in names}


def _link(params: QueryDict, **values: str | None) -> str:
    query = params.copy()
    query.pop("_page", None)
    query.pop("_hits_page", None)
    for name, value in values.items():
        query.pop(name, None)
        if value is not None:
            query[name] = value
    return "?" + query.urlencode()


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
    """Each facet's values with counts, whether selected, and the link that toggles it.

    params: the query string, for the links; filters: the same, cleaned by the page's form;
    matched: the sessions matching the query's q, when the caller searched already."""
    if (q := filters.get("q")) and matched is None:
        matched = matching_session_ids(q)
    result = []
    for name, label, field in FACETS:
        own = _RANGE if name == "updated" else (name,)
        qs = filter_sessions(_without(filters, *own), matched=matched).queryset.order_by()
        if name == "model":
            counts = Counter(m for used in qs.values_list("models_used", flat=True) for m in used or [])
            rows = [(m, m, n) for m, n in counts.most_common(FACET_LIMIT)]
        elif name == "updated":
            months = (
                qs.exclude(updated_at=None)
                .annotate(month=_month("updated_at"))
                .values("month")
                .annotate(n=Count("id"))
                .order_by("-month")[:FACET_LIMIT]
            )
            rows = [(f"{_month_text(m['month'])}-01", _month_text(m["month"]), m["n"]) for m in months]
        elif name == "root":
            found = qs.values("source_id", "source__path").annotate(n=Count("id")).order_by("-n")
            rows = [(str(r["source_id"]), r["source__path"], r["n"]) for r in found[:FACET_LIMIT]]
        else:
            found = qs.exclude(**{field: ""}).values(field).annotate(n=Count("id")).order_by("-n", field)
            rows = [(r[field], r[field], r["n"]) for r in found[:FACET_LIMIT]]
        values = []
        for value, text, count in rows:
            if name == "updated":
                start = date.fromisoformat(value)
                end = (start.replace(day=28) + timedelta(days=4)).replace(day=1)
                selected = params.get("updated_since") == value and params.get("updated_before") == str(end)
                link = (
                    _link(params, updated_since=None, updated_before=None)
                    if selected
                    else _link(params, updated_since=value, updated_before=str(end))
                )
            else:
                selected = params.get(name) == value
                link = _link(params, **{name: None if selected else value})
            values.append({"value": value, "label": text, "count": count, "selected": selected, "link": link})
        if values:
            result.append({"name": name, "label": label, "values": values})
    return result


# --- Charts -------------------------------------------------------------------------------------------

BAR_HEIGHT = 22
LABEL_WIDTH = 250  # fits the 30 characters _chart.html keeps of a label
BAR_WIDTH = 300
DAY_LIMIT = 90


def bar_chart(title: str, rows: list[tuple[str, int]], unit: str) -> dict:
    """Horizontal bars: one (label, value) per row, widths scaled to the largest."""
    top = max((v for _, v in rows), default=0) or 1
    bars = [
        {
            "label": label,
            "value": value,
            "y": n * BAR_HEIGHT,
            "width": round(BAR_WIDTH * value / top, 1),
            "text_y": n * BAR_HEIGHT + BAR_HEIGHT * 0.68,
        }
        for n, (label, value) in enumerate(rows)
    ]
    return {
        "title": title,
        "unit": unit,
        "bars": bars,
        "height": max(len(bars), 1) * BAR_HEIGHT,
        "label_width": LABEL_WIDTH,
        "width": LABEL_WIDTH + BAR_WIDTH + 90,
        "bar_x": LABEL_WIDTH,
    }


def column_chart(title: str, rows: list[tuple[str, int]], unit: str, height: int = 160) -> dict:
    """Vertical bars over days, oldest first; a bar per day, gaps included."""
    top = max((v for _, v in rows), default=0) or 1
    step = max(4, min(24, 720 // max(len(rows), 1)))
    columns = []
    for n, (label, value) in enumerate(rows):
        h = round(height * value / top, 1)
        columns.append({"label": label, "value": value, "x": n * step, "y": height - h, "height": h})
    return {
        "title": title,
        "unit": unit,
        "columns": columns,
        "step": step,
        "bar": max(step - 2, 2),
        "height": height,
        "width": max(len(rows), 1) * step,
        "top": top,
        "first": rows[0][0] if rows else "",
        "last": rows[-1][0] if rows else "",
    }


def _days(qs) -> list[dict]:
    found = (
        qs.exclude(started_at=None)
        .annotate(day=_day("started_at"))
        .values("day")
        .annotate(sessions=Count("id"), tokens=Sum("token_total"))
        .order_by("day")
    )
    by_day = {_as_date(row["day"]): row for row in found}
    if not by_day:
        return []
    last = max(by_day)
    first = max(min(by_day), last - timedelta(days=DAY_LIMIT - 1))
    days = []
    day = first
    while day <= last:
        row = by_day.get(day, {})
        days.append(
            {"day": day.isoformat(), "sessions": row.get("sessions", 0), "tokens": row.get("tokens") or 0}
        )
        day += timedelta(days=1)
    return days


def report(filters: dict) -> dict:
    """Sessions and tokens per day, model, project or JID and format; the busiest sessions."""
    qs = filter_sessions(filters).queryset.order_by()
    days = _days(qs)
    per_model: dict[str, dict] = {}
    for used, tokens in qs.values_list("models_used", "token_total"):
        for m in used or []:
            row = per_model.setdefault(m, {"model": m, "sessions": 0, "tokens": 0})
            row["sessions"] += 1
            row["tokens"] += tokens or 0
    models = sorted(per_model.values(), key=lambda r: (-r["sessions"], r["model"]))[:FACET_LIMIT]
    places = [
        {
            "place": r["project"] or r["jid"] or r["agent"] or "(none)",
            "sessions": r["n"],
            "tokens": r["t"] or 0,
        }
        for r in qs.values("project", "jid", "agent")
        .annotate(n=Count("id"), t=Sum("token_total"))
        .order_by("-n", "project", "jid")[:FACET_LIMIT]
    ]
    formats = [
        {"format": r["format"], "sessions": r["n"], "tokens": r["t"] or 0}
        for r in qs.values("format").annotate(n=Count("id"), t=Sum("token_total")).order_by("-n", "format")
    ]
    busiest = list(qs.order_by(F("token_total").desc(), "-id")[:10])
    totals = qs.aggregate(sessions=Count("id"), tokens=Sum("token_total"), messages=Sum("message_count"))
    totals["last"] = qs.aggregate(last=Max("updated_at"))["last"]
    return {
        "totals": {k: v or 0 for k, v in totals.items() if k != "last"} | {"last": totals["last"]},
        "days": days,
        "models": models,
        "places": places,
        "formats": formats,
        "busiest": busiest,
        "charts": {
            "sessions_per_day": column_chart(
                "Sessions started per day", [(d["day"], d["sessions"]) for d in days], "sessions"
            ),
            "tokens_per_day": column_chart(
                "Tokens per day", [(d["day"], d["tokens"]) for d in days], "tokens"
            ),
            "sessions_per_model": bar_chart(
                "Sessions per model", [(r["model"], r["sessions"]) for r in models], "sessions"
            ),
            "tokens_per_model": bar_chart(
                "Tokens of the sessions using each model",
                [(r["model"], r["tokens"]) for r in models],
                "tokens",
            ),
            "sessions_per_place": bar_chart(
                "Sessions per project or JID", [(r["place"], r["sessions"]) for r in places], "sessions"
            ),
            "tokens_per_place": bar_chart(
                "Tokens per project or JID", [(r["place"], r["tokens"]) for r in places], "tokens"
            ),
            "sessions_per_format": bar_chart(
                "Sessions per format",
                [(format_name(r["format"]), r["sessions"]) for r in formats],
                "sessions",
            ),
            "tokens_per_format": bar_chart(
                "Tokens per format", [(format_name(r["format"]), r["tokens"]) for r in formats], "tokens"
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
        "totals": data["totals"],
        "days": data["days"],
        "models": data["models"],
        "places": data["places"],
        "formats": data["formats"],
        "busiest": [
            {"id": s.id, "title": s.display_title, "tokens": s.token_total, "messages": s.message_count}
            for s in data["busiest"]
        ],
    }
