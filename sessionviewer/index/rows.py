"""The entry row: what the index keeps of a line, in which column, and how it comes back.

The column order is written here once: entry_rows() encodes a reader's entries as
the rows the indexer inserts (ENTRY_COLUMNS), and entries_from_rows() turns the
columns a page loads (LOADED_COLUMNS) back into entries. No Django: models.py, the
writer, the loader and the reading process all import it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

import orjson

from sessionviewer import readers
from sessionviewer.readers.claude_code import FACTS_KNOWN, text_facts
from sessionviewer.tokens import ascii_lexemes

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
_BLOCKS, _USAGE, _EXTRA = (ENTRY_FIELDS.index(name) for name in ("blocks", "usage", "extra"))
# What entry_rows() makes, in order, and what the indexer's insert names.
ENTRY_COLUMNS = ("session_id", *ENTRY_FIELDS, "text", "raw", "text_facts")
# PostgreSQL's rows: then the text's words, found here for an ASCII text (tokens.ascii_lexemes)
# so that the server does not read them again. The column is not the model's (migration 0028).
POSTGRESQL_ENTRY_COLUMNS = (*ENTRY_COLUMNS, "search_words")
# What entries_from_rows() takes, in order.
LOADED_COLUMNS = (*ENTRY_FIELDS, "text")

# Fields Claude Code repeats on every line: folded into the session, not kept per entry.
SESSION_EXTRA = frozenset({"cwd", "gitBranch", "version", "sessionId", "userType", "slug", "requestId"})


def entry_rows(
    entries: list[readers.Entry], for_sqlite: bool, problems: list[readers.Problem], path: str = ""
) -> list[list]:
    """The entry columns, ENTRY_COLUMNS: session_id (None here: the writer fills it in,
    in place), then ENTRY_FIELDS in order, then text and raw. For SQLite, SQLITE_NULL stands
    for NULL in the columns that can hold it, and SQLITE_EMPTY for the empty value
    of the columns in EMPTY_BY_DEFAULT. For PostgreSQL, POSTGRESQL_ENTRY_COLUMNS.

    A line whose values nest deeper than the index keeps is stored cut at that depth,
    and added to problems (of the file at path) as a bad line: see readers.storable()."""
    flag = int if for_sqlite else bool
    null = SQLITE_NULL if for_sqlite else None
    empty, empty_json = (SQLITE_EMPTY, SQLITE_EMPTY) if for_sqlite else ("", "{}")
    stamps = [e.timestamp for e in entries]
    if for_sqlite:
        stamps = db_datetimes(stamps, null)
    rows = []
    for e, stamp in zip(entries, stamps, strict=True):
        text = e.text
        text_in_column = "\x00" not in text and len(text) <= SEARCHABLE_CHARS
        column_text = text if text_in_column else searchable_text(e, text)
        kind, role, sender, model, subtype, summary = e.kind, e.role, e.sender, e.model, e.subtype, e.summary
        ids = (e.id, e.parent_id or "", e.message_id, e.logical_parent_id, e.first_kept_id, e.leaf_id)
        # One test for NUL over the short strings: almost no line has one (db_text).
        if "\x00" in "".join((kind, role, sender, model, subtype, summary, *ids)):
            kind, role, sender, model, subtype, summary = map(
                db_text, (kind, role, sender, model, subtype, summary)
            )
            id_, parent_id, message_id, logical_parent_id, first_kept_id, leaf_id = map(stored_id, ids)
        else:
            id_, parent_id, message_id, logical_parent_id, first_kept_id, leaf_id = ids
            # Slices spelt out: a generator over the six cost more than the slicing.
            id_, parent_id, message_id = id_[:ID_LENGTH], parent_id[:ID_LENGTH], message_id[:ID_LENGTH]
            logical_parent_id, first_kept_id = logical_parent_id[:ID_LENGTH], first_kept_id[:ID_LENGTH]
            leaf_id = leaf_id[:ID_LENGTH]
        try:
            blocks = _dumps(stored_blocks(e.blocks, text_in_column))
            extra = (
                _dumps({k: v for k, v in e.extra.items() if k not in SESSION_EXTRA})
                if e.extra
                else empty_json
            )
            raw = null if e.raw is None else _dumps(e.raw)
        except TypeError:  # what orjson cannot write: nested past its limit, most likely
            blocks, extra, raw = _stored_cut(e, text_in_column, null, problems, path)
        rows.append(
            [
                None,
                e.line,
                e.offset,
                id_,
                parent_id if e.parent_id else null,
                kind[:64],
                role[:32],
                stamp,
                blocks,
                sender[:512] or empty,
                model[:256] or empty,
                json_text(e.usage) if e.usage else empty_json,
                message_id or empty,
                subtype[:128] or empty,
                flag(e.is_sidechain),
                flag(e.is_meta),
                logical_parent_id or empty,
                first_kept_id or empty,
                summary or empty,
                leaf_id or empty,
                extra,
                column_text,
                raw,
                text_facts(e),
            ]
        )
        if not for_sqlite:
            rows[-1].append(ascii_lexemes(column_text))
    return rows


# The characters of an entry's text that search covers: the rest is kept and shown, but
# not searchable. PostgreSQL cannot index more: a tsvector holds at most 1 MB of
# distinct words, and four bytes a character is the most UTF-8 takes (bench/README.md
# has the measurement). SQLite's FTS5 has no such limit, but a search must find the
# same entries on both.
SEARCHABLE_CHARS = 200_000
# In an entry's extra: its text was cut to this many characters for search.
SEARCH_CUT = "searchable_chars"


def searchable_text(entry: readers.Entry, text: str) -> str:
    """The text column of an entry whose text holds NUL or is too long for search: NUL
    escaped (db_text), cut to SEARCHABLE_CHARS, and the cut noted in its extra. Its
    blocks then keep their own texts (stored_blocks)."""
    text = db_text(text)
    if len(text) <= SEARCHABLE_CHARS:
        return text
    entry.extra = {**entry.extra, SEARCH_CUT: SEARCHABLE_CHARS}
    return text[:SEARCHABLE_CHARS]


# In an entry's extra: its values were cut at this depth.
DEPTH_CUT = "cut_at_depth"


def _stored_cut(
    e: readers.Entry, text_in_column: bool, null, problems: list[readers.Problem], path: str
) -> tuple[str, str, Any]:
    """The blocks, extra and raw columns of an entry that orjson would not write as they
    are: cut at readers.STORED_DEPTH, and a bad line of its file when anything was cut."""
    blocks, blocks_cut = readers.storable(stored_blocks(e.blocks, text_in_column))
    extra, extra_cut = readers.storable({k: v for k, v in e.extra.items() if k not in SESSION_EXTRA})
    raw, raw_cut = readers.storable(e.raw)
    if blocks_cut or extra_cut or raw_cut:
        extra[DEPTH_CUT] = readers.STORED_DEPTH
        message = (
            f"nested deeper than the {readers.STORED_DEPTH} levels the index keeps: kept, cut at that depth"
        )
        problems.append(readers.Problem(path, e.line, e.offset, message))
    return _dumps(blocks), _dumps(extra), null if raw is None else _dumps(raw)


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


def _entry(fields: Sequence, blocks: list, usage: dict, extra: dict) -> readers.Entry:
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


def _loads(stored: str | None, empty: str) -> Any:
    return orjson.loads(stored) if stored and stored != empty else None


def entries_from_rows(rows: Iterable[Sequence]) -> list[readers.Entry]:
    """entry_rows() undone: rows of LOADED_COLUMNS, as a cursor hands them back, to entries."""
    block, unstore = _block, blocks_from_stored
    entries = []
    for row in rows:
        *fields, text = row
        stored = _loads(fields[_BLOCKS], "[]")
        entries.append(
            _entry(
                fields,
                [block(b) for b in unstore(stored, text)] if stored else [],
                _loads(fields[_USAGE], "{}") or {},
                _loads(fields[_EXTRA], "{}") or {},
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


def light_entries_from_rows(rows: Iterable[Sequence]) -> Iterator[tuple[readers.Entry, int]]:
    """Rows of LIGHT_COLUMNS and a text (or "") to entries without their text, each with its
    text_facts: blocks keep only their type and call id, which is what a thread is made of,
    extra only THREAD_EXTRA, and no usage. A row without text is made here, directly: a
    long session's first snapshot makes one per line."""
    make_block = readers.Block
    for row in rows:
        *fields, facts, text = row
        if text or not facts & FACTS_KNOWN:
            (entry,) = entries_from_rows([(*fields, text)])
            if not facts & FACTS_KNOWN:  # a row indexed before text_facts were kept
                facts = text_facts(entry)
            if not entry.extra.get("is_compact_summary"):
                entry.blocks = [make_block(b.type, call_id=b.call_id) for b in entry.blocks]
            entry.usage, entry.extra = {}, _thread_extra(entry.extra)
            yield entry, facts
            continue
        stored = _loads(fields[_BLOCKS], "[]") or ()
        blocks = [make_block(b["type"], call_id=b.get("call_id", "")) for b in stored]
        extra = _thread_extra(_loads(fields[_EXTRA], "{}"))
        yield _entry(fields, blocks, {}, extra), facts


def _thread_extra(extra: dict) -> dict:
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


def json_text(value) -> str:
    """value as JSON text; what orjson would not write is made readers.storable() first."""
    try:
        return _dumps(value)
    except TypeError:
        return _dumps(readers.storable(value)[0])


def _dumps(value) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def stored_id(value: str) -> str:
    """An entry id as the index keeps it, so that links between entries still meet."""
    return db_text(value[:ID_LENGTH])


ID_LENGTH = 256  # the entry model's id columns


def db_text(text: str) -> str:
    # PostgreSQL text cannot hold NUL, and a file may put one in any string (an id,
    # a title): the character is kept as its escape instead, on every database.
    return text.replace("\x00", "\\u0000") if "\x00" in text else text
