"""Session list filters, shared by the page and its JSON twin.

Column filters are plain names (format, project, jid, ...); control parameters
start with an underscore (_sort, _page, _size) so the two never collide. A bad
value raises BadFilter naming the parameter, which the views turn into a 400.
"""

from __future__ import annotations

from dataclasses import dataclass

from django import forms
from django.db.models import F, QuerySet, Value
from django.db.models.functions import Coalesce, NullIf
from django.http import QueryDict

from sessionviewer.forms import BadParameter, IsoDateTimeField, SearchField, WholeNumberField, clean_param
from sessionviewer.models import Session
from sessionviewer.readers import FORMATS
from sessionviewer.search import matching_entries

TEXT_FILTERS = ("project", "agent", "channel", "peer_kind", "jid", "status", "kind", "account")
SORTS = {
    "updated": F("updated_at"),
    "started": F("started_at"),
    "title": F("title"),
    "messages": F("message_count"),
    "entries": F("entry_count"),
    "tokens": F("token_total"),
    "format": F("format"),
    # As the column shows it: the project, or the JID where there is none (Fluux sessions).
    "project": Coalesce(NullIf("project", Value("")), "jid"),
    "agent": F("agent"),
    "channel": F("channel"),
    "models": F("models_used"),  # the JSON list as stored: by the first model's name on SQLite
}
DEFAULT_SIZE = 50
MAX_SIZE = 500


class BadFilter(BadParameter):
    """A list filter that cannot be used."""


@dataclass
class SessionQuery:
    queryset: QuerySet[Session]
    page: int
    size: int
    sort: str
    descending: bool
    q: str
    matched: list[int] | None = None  # sessions matching q, for the facets to reuse


_WHEN = IsoDateTimeField()
_POSITIVE = WholeNumberField(min_value=1)
_SIZE = WholeNumberField(min_value=1, max_value=MAX_SIZE)
_QUERY = SearchField()


def clean(field: forms.Field, parameter: str, value):
    """The value of one query parameter read by field; a bad one raises BadFilter naming it."""
    return clean_param(field, parameter, value, BadFilter)


def matching_session_ids(q: str) -> list[int]:
    """The sessions with an entry matching q, searched once: the list's facets each
    filter by it too, and repeating the full-text query for each would cost 9 times."""
    return list(matching_entries(q).order_by().values_list("session_id", flat=True).distinct())


def filter_sessions(
    params: QueryDict, base: QuerySet[Session] | None = None, matched: list[int] | None = None
) -> SessionQuery:
    """The sessions params select; matched, when given, is matching_session_ids(q) already."""
    qs = base if base is not None else Session.objects.all()
    qs = qs.annotate(
        token_total=F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")
    )
    if fmt := params.get("format"):
        if fmt not in FORMATS:
            raise BadFilter("format", f"expected one of {', '.join(FORMATS)}, not {fmt!r}")
        qs = qs.filter(format=fmt)
    if root := params.get("root"):
        if root.isascii() and root.isdigit():
            qs = qs.filter(source_id=clean(_POSITIVE, "root", root))
        else:
            qs = qs.filter(source__path=root)
    for name in TEXT_FILTERS:
        if value := params.get(name):
            qs = qs.filter(**{name: value})
    if model := params.get("model"):
        qs = qs.filter(models_used__contains=f'"{model}"')
    if since := params.get("updated_since"):
        qs = qs.filter(updated_at__gte=clean(_WHEN, "updated_since", since))
    if until := params.get("updated_before"):
        qs = qs.filter(updated_at__lt=clean(_WHEN, "updated_before", until))
    if parent := params.get("parent"):
        qs = qs.filter(parent_id=clean(_POSITIVE, "parent", parent))
    q = clean(_QUERY, "q", params.get("q", ""))
    if q:
        matched = matching_session_ids(q) if matched is None else matched
        qs = qs.filter(id__in=matched)
    sort = params.get("_sort", "updated")
    if sort not in SORTS:
        raise BadFilter("_sort", f"expected one of {', '.join(SORTS)}, not {sort!r}")
    descending = params.get(
        "_sort_desc", "1" if sort in ("updated", "started", "messages", "tokens") else "0"
    )
    if descending not in ("0", "1"):
        raise BadFilter("_sort_desc", f"expected 0 or 1, not {descending!r}")
    field = SORTS[sort]
    order = field.desc(nulls_last=True) if descending == "1" else field.asc(nulls_last=True)
    qs = qs.order_by(order, "-id")
    page = clean(_POSITIVE, "_page", params.get("_page")) or 1
    size = clean(_SIZE, "_size", params.get("_size")) or DEFAULT_SIZE
    return SessionQuery(qs, page, size, sort, descending == "1", q, matched)
