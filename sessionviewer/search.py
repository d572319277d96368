"""Full-text search over entries: SQLite FTS5, or PostgreSQL's full-text search.

The FTS5 table is external-content over sessionviewer_entry: the indexer fills it
in bulk, triggers keep it in step on delete and update (migrations 0002, 0005), and
it keeps no token positions (0007). On PostgreSQL a GIN index over
to_tsvector('simple', text) serves the same query.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
# What FTS5's unicode61 tokenizer keeps as one token: letters and digits ("_" splits).
_FTS_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
# A quoted phrase, or a run of anything but white space.
_TERM = re.compile(r'"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class ParsedQuery:
    """A user's query as the index can answer it, the same way on both engines.

    fts: an FTS5 query in which every token is quoted, so that nothing a user types
    turns into an FTS5 operator (AND, NEAR, column filters); a trailing '*' keeps
    prefix search. tsquery: the same words, phrases and prefixes for PostgreSQL's
    to_tsquery, each quoted as one term and joined by '&', so that nothing turns into
    a tsquery operator either ('or', '-word', '!', '|'). literals: what must also appear
    as written, case aside: quoted phrases and words with punctuation inside ("app.py",
    "error_code"), which the index only knows as separate tokens (it keeps no positions,
    see migration 0007).
    """

    fts: str
    literals: tuple[str, ...]
    tsquery: str


def _tsquery_term(text: str, prefix: bool) -> str:
    # Inside quotes, to_tsquery runs the text through the same parser as to_tsvector (so
    # "src/app.py" is the one lexeme the index holds); only \ and ' need escaping there.
    quoted = "'" + text.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + (":*" if prefix else "")


def parse_query(text: str) -> ParsedQuery:
    terms: list[str] = []
    ts_terms: list[str] = []
    literals: list[str] = []
    for match in _TERM.finditer(text):
        phrase, word = match.group(1), match.group(2)
        prefix = word is not None and word.endswith("*")
        source = phrase if phrase is not None else word.rstrip("*")
        tokens = _FTS_TOKEN.findall(source)
        if not tokens:
            continue
        quoted = ['"' + token.replace('"', '""') + '"' for token in tokens]
        if prefix:
            quoted[-1] += "*"
        terms += quoted
        ts_terms.append(_tsquery_term(source, prefix))
        if phrase is not None or len(tokens) > 1:
            literal = " ".join(source.split()) if phrase is not None else source.strip("\"'()[]{}<>,;:!?")
            if len(_FTS_TOKEN.findall(literal)) > 1:
                literals.append(literal)
    return ParsedQuery(" ".join(terms), tuple(dict.fromkeys(literals)), " & ".join(ts_terms))


MAX_QUERY = 1000  # characters: a pasted error message fits
_OPERATORS = {"AND", "OR", "NOT", "NEAR"}
# FTS5 column filters ("text:word", "{text}:word") name the FTS table's one column.
_COLUMN_FILTER = re.compile(r"^[-+]?\{?\s*text\s*\}?:", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def query_problem(text: str) -> str | None:
    """Why text is not a query this search answers the same way on both engines, or None.

    The language is words (every one must match), "quoted phrases" and a trailing * for a
    prefix. The engines' own operators would mean something on one and not the other (or
    fail), so they are refused with a hint instead of being searched for as words.
    """
    if _CONTROL.search(text):
        return "contains a control character"
    if text.count('"') % 2:
        return 'a quote (") is not closed'
    for match in _TERM.finditer(text):
        word = match.group(2)
        if word is None:
            continue  # a quoted phrase: searched as written
        if word in _OPERATORS or word.startswith("NEAR("):
            operator = word.partition("(")[0]
            return (
                f"{operator} is an operator, and AND, OR, NOT and NEAR are not supported (every word "
                f'must match): put it in quotes to search for the word ("{operator}")'
            )
        if _COLUMN_FILTER.match(word):
            return f"{word!r}: column filters are not supported; put it in quotes to search for it"
    if not parse_query(text).fts:
        return "nothing to search for: give at least one word or number"
    return None


def matching_entries(text: str) -> QuerySet[Entry]:
    """Entries whose text holds every word of the query, and every phrase as written."""
    parsed = parse_query(text)
    if not parsed.fts:
        return Entry.objects.none()
    if connection.vendor == "postgresql":
        entries = Entry.objects.annotate(search=SearchVector("text", config="simple")).filter(
            search=SearchQuery(parsed.tsquery, config="simple", search_type="raw")
        )
    else:
        entries = Entry.objects.filter(
            id__in=RawSQL("SELECT rowid FROM entry_fts WHERE entry_fts MATCH %s", [parsed.fts])
        )
    for literal in parsed.literals:
        # Only rows that already hold all the tokens are tested, so this stays cheap.
        entries = entries.filter(text__icontains=literal)
    return entries


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


def hit_page(query: str, sessions: QuerySet, number: int | None, size: int = HIT_LIMIT) -> Page | None:
    """Page number (from 1, forms.SessionListForm's _hits_page) of the newest entries matching
    query within the given sessions, each with a highlighted snippet; None without a query.
    Past the end gives the last page, as Paginator.get_page does."""
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
