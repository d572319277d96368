"""Full-text search over entries: SQLite FTS5, or PostgreSQL's full-text search.

The FTS5 table is external-content over sessionviewer_entry and kept in step by
triggers (see migration 0002), so the indexer writes entries as usual. On
PostgreSQL a GIN index over to_tsvector('simple', text) serves the same query.
"""

from __future__ import annotations

import re

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.core.paginator import Page, Paginator
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from sessionviewer.models import Entry
from sessionviewer.render import neutralise

_TOKEN = re.compile(r"\w+", re.UNICODE)


def fts5_query(text: str) -> str:
    """User words to an FTS5 query: every word must match, as a phrase-safe quoted term.

    Quoting keeps FTS5's operators (AND, NEAR, column filters, '*') from being
    triggered by what a user types; a trailing '*' keeps prefix search.
    """
    terms = []
    for word in text.split():
        prefix = word.endswith("*")
        tokens = _TOKEN.findall(word)
        if not tokens:
            continue
        term = '"' + " ".join(tokens).replace('"', '""') + '"'
        terms.append(term + ("*" if prefix else ""))
    return " ".join(terms)


def matching_entries(text: str) -> QuerySet[Entry]:
    """Entries whose text matches every word of the query."""
    if connection.vendor == "postgresql":
        return Entry.objects.annotate(search=SearchVector("text", config="simple")).filter(
            search=SearchQuery(text, config="simple", search_type="websearch")
        )
    query = fts5_query(text)
    if not query:
        return Entry.objects.none()
    return Entry.objects.filter(
        id__in=RawSQL("SELECT rowid FROM entry_fts WHERE entry_fts MATCH %s", [query])
    )


# --- Results with snippets ------------------------------------------------------------------------------

SNIPPET_WIDTH = 160
HIT_LIMIT = 20


def query_terms(text: str) -> list[str]:
    """The words of a query, lower-cased, as the index tokenises them ('*' prefixes included)."""
    return [token.lower() for word in text.split() for token in _TOKEN.findall(word)]


def highlight(text: str, query: str, width: int = SNIPPET_WIDTH) -> SafeString:
    """A window of text around the first match, escaped, with each term wrapped in <mark>.

    The text is escaped piece by piece and only our own <mark> tags are added, so
    whatever the transcript holds stays text. Terms match at word starts, as FTS
    prefix search does.
    """
    text = " ".join(neutralise(text).split())
    terms = sorted(set(query_terms(query)), key=len, reverse=True)
    if not terms:
        return escape(text[:width])
    # A term starts after anything but a letter or digit: FTS5 splits words at "_" too.
    pattern = re.compile(r"(?<![^\W_])(?:" + "|".join(re.escape(t) for t in terms) + ")", re.IGNORECASE)
    first = pattern.search(text)
    begin = max(0, (first.start() if first else 0) - width // 3)
    window = text[begin : begin + width]
    parts = ["…" if begin else ""]
    last = 0
    for match in pattern.finditer(window):
        parts.append(escape(window[last : match.start()]))
        parts.append(f"<mark>{escape(match.group())}</mark>")
        last = match.end()
    parts.append(escape(window[last:]))
    if begin + width < len(text):
        parts.append("…")
    return mark_safe("".join(parts))  # noqa: S308 - every piece of the text went through escape()


def search_hits(query: str, sessions: QuerySet, limit: int = HIT_LIMIT) -> list[dict]:
    """The newest entries matching query within the given sessions, each with a highlighted snippet."""
    if not query.strip():
        return []
    entries = (
        matching_entries(query)
        .filter(session_id__in=sessions.order_by().values("id"))
        .select_related("session")
        .defer("blocks", "raw", "extra", "usage")
        .order_by("-session__updated_at", "-session_id", "line")[:limit]
    )
    return [{"entry": e, "session": e.session, "snippet": highlight(e.text, query)} for e in entries]


def hit_page(query: str, sessions: QuerySet, number: str | None, size: int = HIT_LIMIT) -> Page | None:
    """One page of the hits search_hits lists first, for the _hits_page parameter; None without a query.

    Raises BadFilter naming _hits_page for anything but a whole number from 1; past the end
    gives the last page, as Paginator.get_page does.
    """
    from sessionviewer.filters import BadFilter  # filters imports this module

    if number not in (None, "") and (not number.isdigit() or int(number) < 1):
        raise BadFilter("_hits_page", f"expected a whole number from 1, not {number!r}")
    if not query.strip():
        return None
    entries = (
        matching_entries(query)
        .filter(session_id__in=sessions.order_by().values("id"))
        .select_related("session")
        .defer("blocks", "raw", "extra", "usage")
        .order_by("-session__updated_at", "-session_id", "line")
    )
    page = Paginator(entries, size).get_page(number)
    page.object_list = [
        {"entry": e, "session": e.session, "snippet": highlight(e.text, query)} for e in page.object_list
    ]
    return page
