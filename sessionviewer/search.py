"""Full-text search over entries: SQLite FTS5, or PostgreSQL's full-text search.

The FTS5 table is external-content over sessionviewer_entry and kept in step by
triggers (see migration 0002), so the indexer writes entries as usual. On
PostgreSQL a GIN index over to_tsvector('simple', text) serves the same query.
"""

from __future__ import annotations

import re

from django.contrib.postgres.search import SearchQuery, SearchVector
from django.db import connection
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from sessionviewer.models import Entry

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
