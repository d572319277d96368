"""Entries as the index writes them: a reader's entries encoded as entry rows
(row_codec.py says which columns, and decodes them), and what the index keeps of an
entry's text beside its row (text_facts). No Django: the reading process imports it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from sessionviewer import readers
from sessionviewer.row_codec import (
    BLOCKS_AT,
    DEPTH_CUT,
    EXTRA_AT,
    ID_LENGTH,
    SEARCH_CUT,
    SEARCHABLE_CHARS,
    SESSION_EXTRA,
    SQLITE_EMPTY,
    SQLITE_NULL,
    db_datetimes,
    db_microseconds,
    db_text,
    dumps,
    entries_from_rows,
    entry_of,
    json_text,
    loads_stored,
    stored_blocks,
    stored_id,
    thread_extra,
)
from sessionviewer.tokens import ascii_lexemes, binary_tsvector


def entry_rows(
    entries: list[readers.Entry],
    rules: readers.Format,
    for_sqlite: bool,
    problems: list[readers.Problem],
    path: str = "",
) -> list[list]:
    """The entry columns, ENTRY_COLUMNS: session_id (None here: the writer fills it in,
    in place), then ENTRY_FIELDS in order, then text and raw. For SQLite, SQLITE_NULL stands
    for NULL in the columns that can hold it, and SQLITE_EMPTY for the empty value
    of the columns in EMPTY_BY_DEFAULT, and the timestamp is UTC text (db_datetimes). For
    PostgreSQL, POSTGRESQL_ENTRY_COLUMNS, the timestamp in microseconds (db_microseconds):
    every value is one marshal writes (index/worker.py).

    rules: the format of the entries' session, whose rules text_facts() follows.

    A line whose values nest deeper than the index keeps is stored cut at that depth,
    and added to problems (of the file at path) as a bad line: see readers.storable()."""
    flag = int if for_sqlite else bool
    null = SQLITE_NULL if for_sqlite else None
    empty, empty_json = (SQLITE_EMPTY, SQLITE_EMPTY) if for_sqlite else ("", "{}")
    stamps = [e.timestamp for e in entries]
    stamps = db_datetimes(stamps, null) if for_sqlite else db_microseconds(stamps)
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
            blocks = dumps(stored_blocks(e.blocks, text_in_column))
            extra = (
                dumps({k: v for k, v in e.extra.items() if k not in SESSION_EXTRA}) if e.extra else empty_json
            )
            raw = null if e.raw is None else dumps(e.raw)
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
                text_facts(e, rules),
            ]
        )
        if not for_sqlite:
            lexemes = ascii_lexemes(column_text)
            rows[-1].append(None if lexemes is None else binary_tsvector(lexemes))
    return rows


def searchable_text(entry: readers.Entry, text: str) -> str:
    """The text column of an entry whose text holds NUL or is too long for search: NUL
    escaped (db_text), cut to SEARCHABLE_CHARS, and the cut noted in its extra. Its
    blocks then keep their own texts (stored_blocks)."""
    text = db_text(text)
    if len(text) <= SEARCHABLE_CHARS:
        return text
    entry.extra = {**entry.extra, SEARCH_CUT: SEARCHABLE_CHARS}
    return text[:SEARCHABLE_CHARS]


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
    return dumps(blocks), dumps(extra), null if raw is None else dumps(raw)


# What an entry's text says, as the index keeps it beside the row (here), so that
# a thread's layout is found without loading the text: a set bit for "known" (rows indexed
# before this have 0), one for "every block hidden", and the kind its format's harness_line()
# says (3 bits: its place in readers.HARNESS_KINDS, plus one).
# Then the types of its blocks, which search reads for what a hit is, and the bit that says
# they are kept (rows indexed before have it unset: search then reads the blocks column,
# which for a 60 MB pasted log is 60 MB a pattern).
FACTS_KNOWN = 1
FACTS_ALL_HIDDEN = 2
_HARNESS_SHIFT, _HARNESS_MASK = 2, 0b111
FACTS_BLOCKS_KNOWN = 1 << 5
FACTS_BLOCK_TYPES = {
    readers.TEXT: 1 << 6,
    readers.THINKING: 1 << 7,
    readers.TOOL_CALL: 1 << 8,
    readers.TOOL_RESULT: 1 << 9,
}


def text_facts(entry: readers.Entry, rules: readers.Format) -> int:
    """What the index keeps of an entry's text, by the rules of its session's format."""
    harness = rules.harness_line(entry) if rules.harness_line is not None else None
    kind = 0 if harness is None else readers.HARNESS_KINDS.index(harness["kind"]) + 1
    hidden_block = rules.is_hidden_block
    hidden = FACTS_ALL_HIDDEN if all(hidden_block(block) for block in entry.blocks) else 0
    types = FACTS_BLOCKS_KNOWN
    for block in entry.blocks:
        types |= FACTS_BLOCK_TYPES.get(block.type, 0)
    return FACTS_KNOWN | hidden | kind << _HARNESS_SHIFT | types


# Every bit of a harness line's kind: a row with any of them set is a harness line.
FACTS_HARNESS = _HARNESS_MASK << _HARNESS_SHIFT


def harness_kind(facts: int) -> str | None:
    """The harness line's kind text_facts() kept."""
    kind = facts >> _HARNESS_SHIFT & _HARNESS_MASK
    return readers.HARNESS_KINDS[kind - 1] if kind else None


def light_entries_from_rows(
    rows: Iterable[Sequence], rules: readers.Format
) -> Iterator[tuple[readers.Entry, int]]:
    """Rows of LIGHT_COLUMNS and a text (or "") to entries without their text, each with its
    text_facts: blocks keep only their type and call id, which is what a thread is made of,
    extra only THREAD_EXTRA, and no usage. A row without text is made here, directly: a
    long session's first snapshot makes one per line. rules: the session's format's."""
    make_block = readers.Block
    for row in rows:
        *fields, facts, text = row
        if text or not facts & FACTS_KNOWN:
            (entry,) = entries_from_rows([(*fields, text)])
            if not facts & FACTS_KNOWN:  # a row indexed before text_facts were kept
                facts = text_facts(entry, rules)
            if not entry.extra.get("is_compact_summary"):
                entry.blocks = [make_block(b.type, call_id=b.call_id) for b in entry.blocks]
            entry.usage, entry.extra = {}, thread_extra(entry.extra)
            yield entry, facts
            continue
        stored = loads_stored(fields[BLOCKS_AT], "[]") or ()
        blocks = [make_block(b["type"], call_id=b.get("call_id", "")) for b in stored]
        extra = thread_extra(loads_stored(fields[EXTRA_AT], "{}"))
        yield entry_of(fields, blocks, {}, extra), facts
