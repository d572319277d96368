"""The entry row: what the index keeps of a line, in which column, and how it comes back.

The column order is written here once: index/rows.py's entry_rows() encodes a reader's
entries as the rows the indexer inserts (ENTRY_COLUMNS), and entries_from_rows() turns the
columns a page loads (LOADED_COLUMNS) back into entries. No Django, and below the models:
models.py, the writer, the loader and the reading process all import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from sessionviewer import readers

# The columns that rebuild a readers.Entry, in order: entries_from_rows() reads them,
# and the indexer writes them (with session_id, text and raw) without the ORM.
ENTRY_FIELDS = (
    "line",
    "offset",
    "entry_id",
    "parent_id",
    "kind",
    "role",
    "timestamp",
    "blocks",
    "sender",
    "model",
    "usage",
    "message_id",
    "subtype",
    "is_sidechain",
    "is_meta",
    "logical_parent_id",
    "first_kept_id",
    "summary",
    "leaf_id",
    "extra",
)
BLOCKS_AT, USAGE_AT, EXTRA_AT = (ENTRY_FIELDS.index(name) for name in ("blocks", "usage", "extra"))
# What entry_rows() makes, in order, and what the indexer's insert names.
ENTRY_COLUMNS = ("session_id", *ENTRY_FIELDS, "text", "raw", "text_facts")
# PostgreSQL's rows: then the text's words, found here for an ASCII text (tokens.ascii_lexemes)
# so that the server does not read them again, as a binary tsvector (tokens.binary_tsvector,
# for the writer's binary COPY). The column is not the model's (migration 0028).
POSTGRESQL_ENTRY_COLUMNS = (*ENTRY_COLUMNS, "search_words")
# What entries_from_rows() takes, in order.
LOADED_COLUMNS = (*ENTRY_FIELDS, "text")

# Fields Claude Code repeats on every line: folded into the session, not kept per entry.
SESSION_EXTRA = frozenset({"cwd", "gitBranch", "version", "sessionId", "userType", "slug", "requestId"})


# The characters of an entry's text that search covers: the rest is kept and shown, but
# not searchable. PostgreSQL cannot index more: a tsvector holds at most 1 MB of
# distinct words, and four bytes a character is the most UTF-8 takes (bench/README.md
# has the measurement). SQLite's FTS5 has no such limit, but a search must find the
# same entries on both.
SEARCHABLE_CHARS = 200_000
# In an entry's extra: its text was cut to this many characters for search.
SEARCH_CUT = "searchable_chars"


# In an entry's extra: its values were cut at this depth.
DEPTH_CUT = "cut_at_depth"


# NULL in an entry row for SQLite: the indexer's insert turns it back with NULLIF(?, 0).
# sqlite3 binds None only after looking for an adapter for it, which cost a cold index
# more than its NULLs are worth (half a microsecond each); an int it binds at once.
# No value is mistaken for it: these columns hold text, and text never equals 0.
SQLITE_NULL = 0

# The empty value in an entry row for SQLite, in the columns most lines leave empty
# (the sender, the model, ids only some kinds have): the insert turns it back with
# IFNULL(NULLIF(?, 0), <empty>). sqlite3 has SQLite copy every string it binds, the
# empty one too, into memory it allocates, and those ten strings a row cost a cold
# index a tenth of its entry inserts; an int it binds without either.
SQLITE_EMPTY = 0
EMPTY_BY_DEFAULT = {
    "sender": "",
    "model": "",
    "usage": "{}",
    "message_id": "",
    "subtype": "",
    "logical_parent_id": "",
    "first_kept_id": "",
    "summary": "",
    "leaf_id": "",
    "extra": "{}",
}


# A block's text is kept once, in the entry's text column, which joins the blocks'
# texts in order (readers.Entry.text): the block keeps its length under this key.
# The text is most of what the index holds, and writing it twice cost the indexer
# a tenth of its time (bench/bench_index.py).
TEXT_LENGTH = "text_length"


def stored_blocks(blocks: list[readers.Block], text_in_column: bool) -> list[dict]:
    """The blocks as the index stores them; text_in_column: the text column holds the
    blocks' texts unchanged (db_text escapes NUL, which changes lengths)."""
    stored = [b.to_dict() for b in blocks]
    if text_in_column:
        for data in stored:
            if "text" in data:
                data[TEXT_LENGTH] = len(data.pop("text"))
    return stored


def blocks_from_stored(stored: list[dict], text: str) -> list[dict]:
    """stored_blocks undone: each block's text cut back out of the entry's text."""
    start = 0
    for data in stored:
        length = data.pop(TEXT_LENGTH, None)
        if length is not None:
            data["text"] = text[start : start + length]
            start += length + 1  # the newline readers.Entry.text puts between them
    return stored


def entry_of(fields: Sequence, blocks: list, usage: dict, extra: dict) -> readers.Entry:
    """An entry of a row's ENTRY_FIELDS, with its blocks, usage and extra as the caller made
    them (whole, or as little as a thread needs)."""
    (line, offset, entry_id, parent_id, kind, role, timestamp, _, sender, model, _, message_id,
     subtype, is_sidechain, is_meta, logical_parent_id, first_kept_id, summary, leaf_id, _) = fields  # fmt: skip
    return readers.Entry(
        id=entry_id,
        parent_id=parent_id,
        kind=kind,
        role=role,
        timestamp=_timestamp(timestamp),
        blocks=blocks,
        line=line,
        offset=offset,
        sender=sender,
        model=model,
        usage=usage,
        message_id=message_id,
        subtype=subtype,
        is_sidechain=bool(is_sidechain),
        is_meta=bool(is_meta),
        logical_parent_id=logical_parent_id,
        first_kept_id=first_kept_id,
        summary=summary,
        leaf_id=leaf_id,
        extra=extra,
    )


def loads_stored(stored: str | None, empty: str) -> Any:
    return orjson.loads(stored) if stored and stored != empty else None


def entries_from_rows(rows: Iterable[Sequence]) -> list[readers.Entry]:
    """entry_rows() undone: rows of LOADED_COLUMNS, as a cursor hands them back, to entries."""
    block, unstore = _block, blocks_from_stored
    entries = []
    for row in rows:
        *fields, text = row
        stored = loads_stored(fields[BLOCKS_AT], "[]")
        entries.append(
            entry_of(
                fields,
                [block(b) for b in unstore(stored, text)] if stored else [],
                loads_stored(fields[USAGE_AT], "{}") or {},
                loads_stored(fields[EXTRA_AT], "{}") or {},
            )
        )
    return entries


# What a thread snapshot loads of a row (store.prepare_snapshots): no text, but what the
# layout needs of it (text_facts), and the text only where the thread needs it (a compact
# summary's, which its boundary shows) or where text_facts were not kept (then 0): the SQL
# puts the text or "" last (transcripts.entries.light_entries).
LIGHT_COLUMNS = (*ENTRY_FIELDS, "text_facts")


# What a thread (threads.py) and the page's layout (transcripts.layout) read of an entry's
# extra: a light entry keeps only these.
THREAD_EXTRA = ("is_compact_summary", "parent_session_path", "error_message", "stop_reason", "level")
THREAD_EXTRA += ("marker",)  # a setting its reader shows where it happened (a model switch)


def thread_extra(extra: dict) -> dict:
    return {key: extra[key] for key in THREAD_EXTRA if key in extra} if extra else {}


def _block(data: dict) -> readers.Block:
    try:
        return readers.Block(**data)
    except TypeError:  # a key written by an older version of the indexer
        return readers.Block(**{k: v for k, v in data.items() if k in readers.Block.__slots__})


def stored_timestamp(value) -> datetime | None:
    """A timestamp column's value, as an entry holds it (aware, UTC on SQLite)."""
    return _timestamp(value)


def _timestamp(value) -> datetime | None:
    # SQLite hands back naive UTC (Django's converter parses its text); PostgreSQL an aware datetime.
    if value is None:
        return None
    if not isinstance(value, datetime):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def db_datetime(value: datetime | None, as_text: bool):
    """A datetime as the database takes it: for SQLite (as_text), the naive UTC text
    Django's backend writes under USE_TZ; otherwise the datetime itself."""
    if value is None or not as_text:
        return value
    return db_datetimes([value], None)[0]


def db_datetimes(values: list[datetime | None], null) -> list:
    """Each value as SQLite takes it (db_datetime), null for None, in one orjson call.

    Django's SQLite backend writes a DateTimeField under USE_TZ as naive UTC text,
    isoformat(" ") of the UTC time; that took 3 µs a value, a tenth of what reading a
    line takes. orjson writes the same text (microseconds only when there are some)
    in a fifth of that: for a UTC datetime, with "T" for " " and "+00:00" after it.
    """
    utc = [null if v is None else v if v.tzinfo is UTC else v.astimezone(UTC) for v in values]
    return orjson.loads(orjson.dumps(utc).replace(b"T", b" ").replace(b'+00:00"', b'"'))


# PostgreSQL's timestamps count microseconds from this instant: a timestamptz in binary
# form (a binary COPY's field) is that count as a signed 64-bit integer.
POSTGRESQL_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
ONE_MICROSECOND = timedelta(microseconds=1)


def db_microseconds(values: list[datetime | None]) -> list[int | None]:
    """Each aware value as PostgreSQL's binary form of a timestamptz holds it (microseconds
    since POSTGRESQL_EPOCH), None for None. An int, unlike a datetime, goes through
    marshal, which the reading worker's pipe takes at about half pickle's cost
    (index/worker.py), and the writer's binary COPY sends it as the column's eight bytes
    (index/statements.py)."""
    epoch, unit = POSTGRESQL_EPOCH, ONE_MICROSECOND
    return [None if v is None else (v - epoch) // unit for v in values]


def json_text(value) -> str:
    """value as JSON text; what orjson would not write is made readers.storable() first."""
    try:
        return dumps(value)
    except TypeError:
        return dumps(readers.storable(value)[0])


def dumps(value) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def stored_id(value: str) -> str:
    """An entry id as the index keeps it, so that links between entries still meet."""
    return db_text(value[:ID_LENGTH])


ID_LENGTH = 256  # the entry model's id columns


def db_text(text: str) -> str:
    # PostgreSQL text cannot hold NUL, and a file may put one in any string (an id,
    # a title): the character is kept as its escape instead, on every database.
    return text.replace("\x00", "\\u0000") if "\x00" in text else text
