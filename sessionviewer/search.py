"""Full-text search over entries: SQLite FTS5, or PostgreSQL's full-text search.

The FTS5 table is external-content over sessionviewer_entry: the indexer fills it
in bulk, triggers keep it in step on delete and update (migrations 0002, 0005), and
it keeps no token positions (0007). On PostgreSQL a GIN index over
sessionviewer_search_vector(text) serves the same query (0023): the words FTS5 would read,
split and folded by the same tables (tokens.py), so both engines find the same entries. For
an ASCII text the indexer finds them itself (migration 0028, _SearchVector).
"""

from __future__ import annotations

import functools
import re
import string
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import reduce
from operator import add, or_
from typing import NamedTuple

from django.conf import settings
from django.contrib.postgres.search import SearchQueryField, SearchVectorField
from django.core.exceptions import EmptyResultSet
from django.core.paginator import Page, Paginator
from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    Case,
    Count,
    ExpressionWrapper,
    F,
    Func,
    IntegerField,
    Min,
    Q,
    QuerySet,
    Value,
    When,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Cast, Collate, Length, Upper
from django.db.models.lookups import Exact, GreaterThan

from sessionviewer import readers
from sessionviewer.index.findings import credentials_found
from sessionviewer.index.rows import FACTS_BLOCK_TYPES, FACTS_BLOCKS_KNOWN
from sessionviewer.models import Entry, SecretDismissal, Session
from sessionviewer.render import render_snippet
from sessionviewer.tokens import fold, words
from sessionviewer.workspaces.secrets import fingerprint, with_masks

_TOKEN = re.compile(r"\w+", re.UNICODE)
# A quoted phrase, or a run of anything but white space.
_TERM = re.compile(r'"([^"]*)"?|(\S+)')


@dataclass(frozen=True)
class ParsedQuery:
    """A user's query as the index can answer it, the same way on both engines.

    The words are FTS5's (tokens.words): "src/app.py" is src, app and py on both engines.
    fts: an FTS5 query in which every token is quoted, so that nothing a user types
    turns into an FTS5 operator (AND, NEAR, column filters); a trailing '*' keeps
    prefix search. tsquery: the same tokens, folded as the PostgreSQL index holds them
    (migration 0020), each quoted and joined by '&', so that nothing turns into a tsquery
    operator either ('or', '-word', '!', '|'); "" when a token is too long for that index
    (then nothing matches there). literals: what must also appear as written, ASCII case
    aside: quoted phrases and words with punctuation inside ("app.py", "error_code"), which
    the index only knows as separate tokens (it keeps no positions, see migration 0007).
    text: the query as typed, for links and the page; tokens: its words as query_tokens reads
    them, for the snippets and the transcript to mark.

    forms.SearchField parses a query once, and every function below takes what it parsed.
    """

    fts: str
    literals: tuple[str, ...]
    tsquery: str
    text: str = field(default="", compare=False)
    tokens: tuple[tuple[str, bool], ...] = ()

    def __str__(self) -> str:
        return self.text

    @property
    def terms(self) -> list[str]:
        """Its words, for the transcript to mark (prefixes as their start)."""
        return [token for token, _ in self.tokens]


def as_query(query: str | ParsedQuery) -> ParsedQuery:
    """The parsed query: pages pass what forms.SearchField parsed; a str (a test, a script) is
    parsed here."""
    return query if isinstance(query, ParsedQuery) else parse_query(query)


# A lexeme of a tsvector or tsquery holds less than 2 KB: the index leaves longer words out.
LEXEME_BYTES = 2048


def _tsquery_term(lexeme: str, prefix: bool) -> str:
    # A lexeme as written, cast to tsquery without a dictionary: the index holds it folded
    # already. FTS5 splits words at \ and ', but they are escaped all the same.
    quoted = "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"
    return quoted + (":*" if prefix else "")


def parse_query(text: str) -> ParsedQuery:
    terms: list[str] = []
    ts_terms: list[str] = []
    literals: list[str] = []
    too_long = False
    for match in _TERM.finditer(text):
        phrase, word = match.group(1), match.group(2)
        prefix = word is not None and word.endswith("*")
        source = phrase if phrase is not None else word.rstrip("*")
        # A word of accents only folds to nothing: FTS5 reads no token there.
        found = [token for token in words(source) if fold(token)]
        if not found:
            continue
        for n, token in enumerate(found):
            last = prefix and n == len(found) - 1
            terms.append('"' + token.replace('"', '""') + '"' + ("*" if last else ""))
            ts_terms.append(_tsquery_term(fold(token), last))
            too_long |= len(fold(token).encode()) >= LEXEME_BYTES
        if phrase is not None or len(found) > 1:
            literal = " ".join(source.split()) if phrase is not None else source.strip("\"'()[]{}<>,;:!?")
            if len(words(literal)) > 1:
                literals.append(literal)
    tsquery = "" if too_long else " & ".join(ts_terms)
    return ParsedQuery(
        " ".join(terms), tuple(dict.fromkeys(literals)), tsquery, text, tuple(query_tokens(text))
    )


MAX_QUERY = 1000  # characters: a pasted error message fits
_OPERATORS = {"AND", "OR", "NOT", "NEAR"}
# FTS5 column filters ("text:word", "{text}:word") name the FTS table's one column.
_COLUMN_FILTER = re.compile(r"^[-+]?\{?\s*text\s*\}?:", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def query_problem(text: str, parsed: ParsedQuery | None = None) -> str | None:
    """Why text is not a query this search answers the same way on both engines, or None;
    parsed: parse_query(text), when the caller has it.

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
    if not (parsed or parse_query(text)).fts:
        return "nothing to search for: give at least one word or number"
    return None


def matching_entries(query: str | ParsedQuery) -> QuerySet[Entry]:
    """Entries whose text holds every word of the query, and every phrase as written."""
    parsed = as_query(query)
    if not parsed.fts:
        return Entry.objects.none()
    if connection.vendor == "postgresql":
        entries = _holding_words(parsed)
    else:
        entries = Entry.objects.filter(
            id__in=RawSQL("SELECT rowid FROM entry_fts WHERE entry_fts MATCH %s", [parsed.fts])
        )
    return _holding(entries, parsed.literals)


def _holding_words(parsed: ParsedQuery) -> QuerySet[Entry]:
    """Entries holding every word of the query, phrases aside: on PostgreSQL, through the GIN
    index; on SQLite, starting from the FTS table (a join), so that a LIMIT stops it early."""
    if not parsed.fts:
        return Entry.objects.none()
    if connection.vendor == "postgresql":
        if not parsed.tsquery:
            return Entry.objects.none()
        query = Cast(Value(parsed.tsquery), SearchQueryField())
        return Entry.objects.filter(_Matches(_SearchVector(F("text")), query))
    return Entry.objects.extra(  # noqa: S610 - constant SQL, the query is a parameter
        tables=["entry_fts"],
        where=["entry_fts.rowid = sessionviewer_entry.id", "entry_fts MATCH %s"],
        params=[parsed.fts],
    )


class _SearchVector(Func):
    """An entry's words as the PostgreSQL index holds them (migration 0028): the indexer's
    (search_words, for an ASCII text), else sessionviewer_search_vector(text) (migration 0023).
    The index serves a query only on this very expression.

    search_words is not a model field (the column is PostgreSQL's alone), so it is named here
    beside the text column, in the same table and under the same alias as the query gives it."""

    template = "COALESCE(%(words)s, sessionviewer_search_vector(%(expressions)s))"
    output_field = SearchVectorField()

    def as_sql(self, compiler, connection, **extra_context):
        (text,) = self.get_source_expressions()  # a column, once the query resolved F("text")
        table = compiler.quote_name_unless_alias(text.alias)
        words = f"{table}.{connection.ops.quote_name('search_words')}"
        return super().as_sql(compiler, connection, words=words, **extra_context)


class _Matches(Func):
    arg_joiner = " @@ "
    template = "(%(expressions)s)"
    output_field = BooleanField()


_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def _holding(entries: QuerySet[Entry], literals: tuple[str, ...]) -> QuerySet[Entry]:
    """entries whose text holds every literal as written, ignoring the case of ASCII letters
    only, as SQLite's LIKE does: on PostgreSQL, UPPER in the C collation (in others it would
    fold every letter). Only rows that already hold all the tokens are tested, so this stays
    cheap."""
    if connection.vendor == "postgresql" and literals:
        entries = entries.alias(ascii_upper=Upper(Collate(F("text"), "C")))
    for literal in literals:
        if connection.vendor == "postgresql":
            entries = entries.filter(ascii_upper__contains=literal.translate(_ASCII_UPPER))
        else:
            entries = entries.filter(text__icontains=literal)
    return entries


# --- Results with snippets ------------------------------------------------------------------------------

SNIPPET_WIDTH = 160
HIT_LIMIT = 10  # sessions on a page of hits
SNIPPETS = 3  # snippets shown for each session


def query_tokens(text: str) -> list[tuple[str, bool]]:
    """The words of a query, lower-cased, each with whether it is a prefix: the last word
    of a term written with a trailing '*' (parse_query reads it the same way)."""
    tokens: list[tuple[str, bool]] = []
    for match in _TERM.finditer(text):
        phrase, word = match.group(1), match.group(2)
        prefix = word is not None and word.endswith("*")
        found = [t.lower() for t in _TOKEN.findall(phrase if phrase is not None else word)]
        tokens += [(t, prefix and n == len(found) - 1) for n, t in enumerate(found)]
    return tokens


# Letters and digits: what a token is made of, and what must not touch a match on either side.
_WORD = r"[^\W_]"


def match_pattern(query: ParsedQuery) -> re.Pattern | None:
    """What a snippet marks of the query (None: nothing). A match is a whole token, as FTS
    matches it: a word marks only where it stands alone ("ex" not in "Explore"), and a prefix
    (word*) marks the whole word it starts."""
    tokens = sorted(set(query.tokens), key=lambda t: len(t[0]), reverse=True)
    if not tokens:
        return None
    # A token starts and ends where letters and digits do: FTS5 splits words at "_" too.
    alternatives = "|".join(re.escape(t) + (f"{_WORD}*" if prefix else "") for t, prefix in tokens)
    return re.compile(rf"(?<!{_WORD})(?:{alternatives})(?!{_WORD})", re.IGNORECASE)


def highlight(text: str, query: str | ParsedQuery, width: int = SNIPPET_WIDTH) -> str:
    """A window of text around the first match, as HTML: render.render_snippet escapes the
    text and marks each match, so whatever the transcript holds stays text."""
    return render_snippet(masked_texts([text])[0], match_pattern(as_query(query)), width)


def masked_texts(texts: list[str]) -> list[str]:
    """Hits' texts with their credentials masked as the transcript shows them: before the
    window is cut, so that no part of a value is left at its edge, and a value someone marked
    not a secret (its fingerprint, as the findings make it) in full. One query for them all,
    none where no text holds a credential."""
    found = [credentials_found(text) for text in texts]
    key = settings.SECRET_KEY
    prints = [[fingerprint(finding.kind, value, key) for finding, value in pairs] for pairs in found]
    dismissed = SecretDismissal.dismissed(fp for fps in prints for fp in fps)
    return [
        with_masks(text, [pair for pair, fp in zip(pairs, fps, strict=True) if fp not in dismissed])
        if pairs
        else text
        for text, pairs, fps in zip(texts, found, prints, strict=True)
    ]


# --- Hits grouped by session ------------------------------------------------------------------------------
# What a hit is comes from the types of its blocks, read in SQL from the stored blocks column:
# orjson writes each block with "type" first (readers.Block.to_dict, index/rows.py), so a block
# starts with {"type":"...". An entry holding several kinds (a reply with a tool call) counts under
# each; one holding none of them (a summary, an attachment, a line the reader does not know) is
# "other". Who said it is the entry's role: readers give tool results the role "tool".

HIT_SORTS = {"hits": "Most hits", "newest": "Newest"}
WHAT = {
    "message": ("Message text", readers.TEXT),
    "thinking": ("Thinking", readers.THINKING),
    "tool_call": ("Tool call", readers.TOOL_CALL),
    "tool_output": ("Tool output", readers.TOOL_RESULT),
    "other": ("Other", ""),
}
WHO = {"user": "User", "assistant": "Assistant", "tool": "Tool", "other": "Other"}


def _holds(block_type: str) -> Q:
    start = '{"type":"' + block_type + '"'
    return Q(blocks__startswith="[" + start) | Q(blocks__contains="}," + start)


def _from_facts(facts_test, blocks_test: Q) -> Q:
    """facts_test where the row keeps its block types in text_facts (index.rows.text_facts),
    else blocks_test: a CASE, so that the blocks column is read only for rows indexed before
    (a pasted log's blocks are its 60 MB, read again by every pattern)."""
    known = GreaterThan(F("text_facts").bitand(FACTS_BLOCKS_KNOWN), 0)
    blocks = ExpressionWrapper(blocks_test, output_field=BooleanField())
    return Q(Case(When(known, then=facts_test), default=blocks, output_field=BooleanField()))


def _holds_bit(block_type: str) -> GreaterThan:
    return GreaterThan(F("text_facts").bitand(FACTS_BLOCK_TYPES[block_type]), 0)


_BLOCK_TYPES = {name: block_type for name, (_, block_type) in WHAT.items() if block_type}
_ANY_BLOCK_BIT = sum(FACTS_BLOCK_TYPES[t] for t in _BLOCK_TYPES.values())
_WHAT_Q = {
    **{name: _from_facts(_holds_bit(t), _holds(t)) for name, t in _BLOCK_TYPES.items()},
    "other": _from_facts(
        Exact(F("text_facts").bitand(_ANY_BLOCK_BIT), 0),
        ~reduce(or_, (_holds(t) for t in _BLOCK_TYPES.values())),
    ),
}
_WHO_ROLES = ("user", "assistant", "tool")


def what_of(entry: Entry) -> list[str]:
    """What an entry is, as the filter reads it from its text_facts or its blocks (the same
    rule, in Python)."""
    if entry.text_facts & FACTS_BLOCKS_KNOWN:
        bits = FACTS_BLOCK_TYPES
        found = [name for name, block_type in _BLOCK_TYPES.items() if entry.text_facts & bits[block_type]]
    else:  # a row indexed before the block types were kept: its blocks are loaded now
        types = {block.get("type") for block in entry.blocks if isinstance(block, dict)}
        found = [name for name, block_type in _BLOCK_TYPES.items() if block_type in types]
    return found or ["other"]


def who_of(entry: Entry) -> str:
    return entry.role if entry.role in _WHO_ROLES else "other"


@dataclass
class Snippet:
    """One text that matched, and how many hits of its session have exactly that text."""

    entry: Entry
    html: str  # escaped, its matches marked: render.render_snippet
    count: int
    what: list[str]
    who: str

    @property
    def label(self) -> str:
        """Who said it and what it is, as the page shows it: "Assistant · Thinking"."""
        return " · ".join([WHO[self.who], *(WHAT[w][0] for w in self.what)])


@dataclass
class SessionHits:
    session: Session
    count: int  # hits in this session
    texts: int  # distinct texts among them
    snippets: list[Snippet]


@dataclass
class HitResults:
    """A page of sessions with hits (page.object_list: SessionHits), and the hits' facets."""

    query: str
    page: Page
    count: int  # hits, the what and who filters applied
    sort: str
    what: str
    who: str
    facets: list[dict]
    capped: bool = False  # more hits than HIT_CAP: counts and sessions are those of the newest HIT_CAP
    window: int = 0  # entries holding the words read for a phrase, when more hold them (capped)

    @property
    def sorts(self):
        return HIT_SORTS.items()

    @property
    def cap(self) -> int:
        return HIT_CAP


def search_hits_for(
    params, sessions: QuerySet, first: Matches | None = None, narrowed: bool = True
) -> HitResults | None:
    """search_hits for the parameters forms.SessionListForm cleaned (q and the _hits_ ones),
    among sessions: the list page and its /api/search twin ask the same way."""
    return search_hits(
        params.get("q"),
        sessions,
        params.get("_hits_page"),
        params.get("_hits_sort") or "",
        params.get("_hits_what") or "",
        params.get("_hits_who") or "",
        first=first,
        narrowed=narrowed,
    )


def search_hits(
    query: str | ParsedQuery | None,
    sessions: QuerySet,
    number: int | None = None,
    sort: str = "",
    what: str = "",
    who: str = "",
    size: int = HIT_LIMIT,
    first: Matches | None = None,
    narrowed: bool = True,
) -> HitResults | None:
    """Page number (from 1) of the sessions with entries matching query, among sessions: each
    with its hit count and its best SNIPPETS texts; None without a query.

    sort: "hits" (most hits, then newest; the default) or "newest". what and who (keys of
    WHAT and WHO, "" for all) filter the hits; the facets count each one with the other applied.
    The index keeps no positions, so there is no relevance score (bm25): within a session,
    the shortest texts come first, where the words say most, then the earliest.

    At most the newest HIT_CAP hits are read (first_matches), whatever the query matches: a
    word in a million entries is answered as fast as one in a thousand. Past the cap
    (HitResults.capped) the hits and every count are those of the newest HIT_CAP, and each
    count is a lower bound; the what and who filters pick among them.

    first: first_matches(query), which the page read already; narrowed: whether sessions are
    fewer than every session (a filter besides q). The hits are taken from first, with no
    other full-text statement, when it holds every match or nothing narrows them.
    """
    if query is None or not str(query).strip():
        return None
    query = as_query(query)
    if first is not None and first.capped and narrowed:
        first = None  # the newest matches of every session: not those of these sessions
    allowed = None
    if first is None:
        first = first_matches(query, sessions if narrowed else None)
    elif narrowed:
        found = {hit.session_id for hit in first.hits}
        allowed = set(sessions.order_by().filter(id__among=found).values_list("id", flat=True))
    hits = first.hits[:HIT_CAP]
    # The hits shown (what and who applied), and the samples each facet counts (the other applied).
    shown, by_what, by_who = (
        [hit for hit in hits if _kept(hit, key, allowed)] for key in ((what, who), ("", who), (what, ""))
    )
    capped = first.capped
    per_session: dict[int, list[_Hit]] = {}
    for hit in shown:
        per_session.setdefault(hit.session_id, []).append(hit)
    updated = {
        id_: (updated_at is not None, updated_at or 0, id_)
        for id_, updated_at in Session.objects.filter(id__among=list(per_session)).values_list(
            "id", "updated_at"
        )
    }
    groups = [{"session_id": i, "hits": len(found)} for i, found in per_session.items()]
    groups.sort(key=lambda g: updated[g["session_id"]], reverse=True)
    if sort != "newest":
        groups.sort(key=lambda g: g["hits"], reverse=True)  # stable: newest first among equals
    page = Paginator(groups, size).get_page(number)
    page.object_list = _with_snippets(per_session, list(page.object_list), query)
    whats = Counter(k for hit in by_what for k in hit.what)
    whos = Counter(hit.who for hit in by_who)
    what_counts = {k: (label, whats[k]) for k, (label, _) in WHAT.items()}
    who_counts = {k: (label, whos[k]) for k, label in WHO.items()}
    facets = [
        _facet("what", "What", what_counts, what, capped),
        _facet("who", "Who", who_counts, who, capped),
    ]
    window = LITERAL_WINDOW if first.window_full else 0
    return HitResults(query.text, page, len(shown), sort or "hits", what, who, facets, capped, window)


HIT_CAP = 1000  # hits read for a page of results, the newest first, whatever the query matches
# Entries holding every word of a query with a phrase (or a word with punctuation inside) that
# are read, the newest first, to find its hits among: the index keeps no positions, so the
# phrase is looked for in each entry's text, and a phrase of common words is rare among them.
LITERAL_WINDOW = 1000
# What a group of hits shows of its session, on the page (_hits.html) and in /api/search: its
# title, format, project or JID and when it was updated; not the JSON the list's rows parse.
HIT_SESSION_FIELDS = (
    "id",
    "format",
    "key",
    "title",
    "summary_title",
    "first_prompt",
    "project",
    "jid",
    "updated_at",
)


class _Hit(NamedTuple):
    """A match as first_matches reads it: a thousand are made per search, and a tuple is
    made in about 0.4x the time a frozen dataclass takes (0.24 against 0.62 µs here)."""

    session_id: int
    id: int
    what: tuple[str, ...]
    who: str


def index_order_matches(query: str | ParsedQuery) -> QuerySet[Entry]:
    """matching_entries, read in the index's order: on SQLite the query starts from the FTS
    table (a join), so a LIMIT stops it early and a pass over every match looks each row up
    once, rather than testing rows against a list of all the matches built first."""
    parsed = as_query(query)
    return _holding(_holding_words(parsed), parsed.literals)


# What a hit is, as one number of bits (one per key of _WHAT_Q), and each number's keys: a
# thousand hits read one column and one lookup each, not a column and a test per key.
_WHAT_BITS = reduce(
    add,
    (Case(When(q, then=Value(1 << n)), default=Value(0)) for n, q in enumerate(_WHAT_Q.values())),
)


@functools.cache
def _what_bits_sql(vendor: str) -> tuple[str, tuple]:
    """_WHAT_BITS as the engine's SQL, over the entry table's own columns: made once, where the
    ORM resolved and compiled its cases for every search, about half of first_matches' CPU
    (bench/README.md). A search reads the entry table under its own name (no alias), so it holds."""
    query = Entry.objects.all().query
    compiler = query.get_compiler(connection=connection)
    sql, params = _WHAT_BITS.resolve_expression(query).as_sql(compiler, connection)
    return sql, tuple(params)


_WHAT_OF_BITS = [
    tuple(k for n, k in enumerate(_WHAT_Q) if bits & (1 << n)) for bits in range(1 << len(_WHAT_Q))
]


@dataclass(frozen=True)
class Matches:
    """The newest HIT_CAP + 1 entries matching a query (by id: the order the index wrote them),
    whatever else filters them: what a search reads, in one full-text statement (two for a
    query with literals), from which the list page takes both the sessions that match and
    their hits (filters.matching_session_ids, search_hits). window_full: the query has literals
    and more entries hold its words than the LITERAL_WINDOW read for them."""

    hits: list[_Hit]
    window_full: bool = False

    @property
    def capped(self) -> bool:
        """Whether the query matches more than the hits a search shows: they are the newest."""
        return len(self.hits) > HIT_CAP or self.window_full

    @property
    def session_ids(self) -> list[int]:
        return list(dict.fromkeys(hit.session_id for hit in self.hits[:HIT_CAP]))


def first_matches(
    query: str | ParsedQuery | None, sessions: QuerySet[Session] | None = None
) -> Matches | None:
    """The query's newest matches (None without a query), among sessions (None: every one).

    Newest first by id, which an index gives in that order on both engines: on PostgreSQL the
    planner walks the primary key backwards, testing each row against the GIN index's
    expression, for a common word (it stops at the HIT_CAP + 1st), and takes the matches from
    the GIN index for a rare one; on SQLite FTS5 gives them by descending rowid. A query
    with literals takes its words' newest LITERAL_WINDOW entries, then those holding them."""
    if query is None:
        return None
    query = as_query(query)
    words = _holding_words(query)
    if sessions is not None:
        words = words.filter(session_id__in=sessions.order_by().values("id"))
    window_full = False
    with _one_process():
        if query.literals:
            # The window's ids, then its rows: as one statement (IN a subquery with a LIMIT),
            # SQLite ran the subquery again for each of the table's rows.
            ids = list(_newest_first(words).values_list("id", flat=True)[:LITERAL_WINDOW])
            window_full = len(ids) == LITERAL_WINDOW
            words = _holding(Entry.objects.filter(id__in=ids), query.literals)
        what = RawSQL(*_what_bits_sql(connection.vendor), output_field=IntegerField())  # noqa: S611 - the ORM's own SQL
        rows = (
            _newest_first(words).annotate(what_bits=what).values_list("session_id", "id", "role", "what_bits")
        )
        hits = [
            _Hit(session_id, id_, _WHAT_OF_BITS[bits], role if role in _WHO_ROLES else "other")
            for session_id, id_, role, bits in _fetched(rows[: HIT_CAP + 1])
        ]
    return Matches(hits, window_full)


def _fetched(rows: QuerySet) -> list[tuple]:
    """The rows of a values_list() whose columns need no conversion (numbers and text), read
    on a cursor: the ORM's iterator passes each of a search's thousand rows through its
    converters. An impossible query (SQLite's `IN ()`) has none."""
    try:
        sql, params = rows.query.sql_with_params()
    except EmptyResultSet:
        return []
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


@contextmanager
def _one_process():
    """On PostgreSQL, no parallel workers for the statements inside: for a search of two words
    the planner split the backward walk between two workers, whose start cost more than the
    walk (94 ms against 46 ms for "database request" over 9 million entries, and the people
    on the other pages need the cores). SET LOCAL ends with the transaction."""
    if connection.vendor != "postgresql":
        yield
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL max_parallel_workers_per_gather = 0")
        yield


def _newest_first(entries: QuerySet[Entry]) -> QuerySet[Entry]:
    """entries by descending id. Where they come from the FTS table (_holding_words on SQLite),
    by its rowid, the same number: FTS5 then gives them in that order and a LIMIT stops it,
    where ordering by the entry's id sorted every match first."""
    if "entry_fts" in entries.query.extra_tables:
        return entries.order_by().extra(order_by=["-entry_fts.rowid"])
    return entries.order_by("-id")


def _kept(hit: _Hit, key: tuple[str, str], allowed: set[int] | None) -> bool:
    """Whether a hit is one of key's (what, who; "" for any), in the allowed sessions (None: any):
    _WHAT_Q and the roles of WHO, in Python."""
    what, who = key
    if allowed is not None and hit.session_id not in allowed:
        return False
    return (not what or what in hit.what) and (not who or hit.who == who)


def _facet(
    name: str, label: str, values: dict[str, tuple[str, int]], selected: str, capped: bool = False
) -> dict:
    return {
        "name": name,
        "label": label,
        "capped": capped,  # counted in the first HIT_CAP hits: each count is at least that
        "values": [
            {"value": k, "label": text, "count": n, "selected": k == selected}
            for k, (text, n) in values.items()
            if n or k == selected
        ],
    }


class _Text(NamedTuple):
    """A text a session's hits hold: how many hold it, the first line that does, its length."""

    n: int
    first: int
    size: int


def _with_snippets(
    per_session: dict[int, list[_Hit]], groups: list[dict], query: ParsedQuery
) -> list[SessionHits]:
    """Each session's hits, identical texts collapsed into one with their count, and the best
    SNIPPETS of them (the shortest, then the earliest), in the order of the transcript."""
    ids = [g["session_id"] for g in groups]
    if not ids:
        return []
    texts: dict[int, list[_Text]] = {i: [] for i in ids}
    # Grouped by the text itself, but only its length is read back: a long tool output is
    # loaded once below, for the few texts shown. Only the hits read (at most HIT_CAP).
    rows = (
        Entry.objects.filter(id__among=[hit.id for i in ids for hit in per_session[i]])
        .order_by()
        .values("session_id", "text")
        .annotate(n=Count("id"), first=Min("line"), size=Length("text"))
        .values_list("session_id", "n", "first", "size")
    )
    for session_id, n, first, size in _fetched(rows):
        texts[session_id].append(_Text(n, first, size))
    best = {i: sorted(rows, key=lambda r: (r.size, r.first))[:SNIPPETS] for i, rows in texts.items()}
    wanted = Q()
    for i, rows in best.items():
        wanted |= Q(session_id=i, line__in=[r.first for r in rows])
    entries = {
        (e.session_id, e.line): e
        for e in Entry.objects.filter(wanted)
        .defer("raw", "extra", "usage", "blocks")
        .order_by("session_id", "line")
    }
    by_id = Session.objects.only(*HIT_SESSION_FIELDS).in_bulk(ids)
    masked = dict(zip(entries, masked_texts([e.text for e in entries.values()]), strict=True))
    pattern = match_pattern(query)
    found = []
    for group in groups:
        i = group["session_id"]
        snippets = []
        for row in sorted(best[i], key=lambda r: r.first):
            entry = entries.get((i, row.first))
            if entry is not None:
                html = render_snippet(masked[i, row.first], pattern, SNIPPET_WIDTH)
                snippets.append(Snippet(entry, html, row.n, what_of(entry), who_of(entry)))
        found.append(SessionHits(by_id[i], group["hits"], len(texts[i]), snippets))
    return found


def hit_page(query: str, sessions: QuerySet, number: int | None, size: int = HIT_LIMIT) -> Page | None:
    """The page of sessions with hits, as search_hits gives it (kept for callers of the
    ungrouped version)."""
    results = search_hits(query, sessions, number, size=size)
    return results.page if results is not None else None
