"""Turning a session file's new lines into index rows, in this process or beside it.

Reading is pure Python and writing is mostly SQLite's own C code, so a cold index
of many megabytes reads in a second process while this one writes: on two cores
the two halves overlap instead of adding up (bench/bench_index.py). Small passes,
the usual case for the watcher, read in this process: starting a process would
cost more than the reading.

Both ways run the same generator, read_job(), over the same Job, so they give the
same rows. This module imports no Django: the worker (serve(), in `python -c
WORKER`) imports only this module, the readers and orjson.

    with Reading(parallel_from=16 * 1024 * 1024) as reading:
        reading.expect(bytes_to_read)  # starts the worker when that is enough
        numbers = [reading.add(job) for job in jobs]
        reading.close_jobs()
        for number in numbers:
            for batch in reading.batches(number):
                ...  # write batch.rows, batch.problems; batch.state is the session so far
"""

from __future__ import annotations

import fcntl
import gc
import hashlib
import marshal
import os
import pickle
import queue
import select
import sys
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from sessionviewer import readers

if TYPE_CHECKING:
    import subprocess

TITLE_LENGTH = 200
# Kinds whose summary is the session's own title. Claude's summary lines are
# placed by their leafUuid instead, when sessions are linked.
TITLE_KINDS = {"summary", "custom-title", "ai-title", "title", "session_info"}
# Fields Claude Code repeats on every line: folded into the session, not kept per entry.
SESSION_EXTRA = frozenset({"cwd", "gitBranch", "version", "sessionId", "userType", "slug", "requestId"})


@dataclass
class SessionState:
    """What reading a file's lines changes on its session: the same names as the
    Session model's fields, so the indexer copies them across by name."""

    format: str
    kind: str = "main"
    entry_count: int = 0
    message_count: int = 0
    problem_count: int = 0
    started_at: datetime | None = None
    updated_at: datetime | None = None
    models_used: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    first_prompt: str = ""
    summary_title: str = ""
    cwd: str = ""
    project: str = ""
    git_branch: str = ""
    session_uuid: str = ""
    jid: str = ""
    parent_path: str = ""
    fork_entry_id: str = ""
    agent_id: str = ""
    peer_kind: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, session) -> SessionState:
        return cls(**{name: getattr(session, name) for name in STATE_FIELDS})

    def copy_to(self, session) -> None:
        for name in STATE_FIELDS:
            setattr(session, name, getattr(self, name))


STATE_FIELDS = tuple(f.name for f in fields(SessionState))


@dataclass
class Job:
    """One file's new lines to read: from start_offset, into state."""

    path: Path
    format: str
    start_offset: int
    start_line: int
    state: SessionState
    batch_size: int = 500
    # Rows for SQLite: datetimes as UTC text and booleans as 0/1, as Django's backend
    # writes them (sqlite3 binds a bool through its adapter lookup, which cost a cold
    # index a twentieth of its time). Other databases take datetimes and booleans.
    for_sqlite: bool = True


@dataclass(frozen=True, slots=True)
class SummaryLink:
    """A summary line that names its leaf: the leaf's id as the index stores it, and the
    title it gives the session holding that leaf (Claude Code writes them into the next file)."""

    leaf_id: str
    title: str


@dataclass
class Batch:
    """Up to batch_size lines of one file, ready to write."""

    job: int  # the job's number in its Reading
    # The entry columns (entry_rows), session_id still None; marshalled in the pipe for SQLite.
    rows: list[list]
    problems: list[readers.Problem]
    summaries: list[SummaryLink]  # summary lines with a leaf, linked once all files are in
    state: SessionState  # the session after these lines
    last: bool = False
    # Set on the last batch: where the next read starts, whether a line is still being
    # written, and the hash of the file's first bytes (head_hash), by which the next
    # pass tells an append from a rewrite.
    end_offset: int = 0
    end_line: int = 0
    pending_tail: bool = False
    head_hash: str = ""


def read_job(job: Job, number: int = 0) -> Iterator[Batch]:
    """Read a file's new lines in batches, folding each batch into job.state."""
    reader = readers.SessionReader(
        job.path, job.format, job.start_offset, job.start_line, keep_head=HEAD_BYTES
    )
    items = iter(reader)
    batch = list(islice(items, job.batch_size))
    while True:
        following = list(islice(items, job.batch_size))
        entries, problems = [], []
        for item in batch:
            (entries if type(item) is readers.Entry else problems).append(item)
        fold_entries(job.state, entries)
        rows = entry_rows(entries, job.for_sqlite, problems, str(job.path))
        job.state.problem_count += len(problems)
        last = not following
        yield Batch(
            job=number,
            rows=rows,
            problems=problems,
            summaries=[
                SummaryLink(stored_id(e.leaf_id), db_text(title_of(e.summary)))
                for e in entries
                if e.kind == readers.SUMMARY and e.leaf_id
            ],
            state=job.state,
            last=last,
            end_offset=reader.end_offset if last else 0,
            end_line=reader.end_line if last else 0,
            pending_tail=reader.pending_tail if last else False,
            head_hash=head_hash(job.path, reader.end_offset, reader.head) if last else "",
        )
        if last:
            return
        batch = following


def head_hash(path: Path, read_to: int, head: bytes = b"") -> str:
    """The hash of a file's first HEAD_BYTES, or of what was read of it if less.

    head: the file's first bytes as a reader kept them (SessionReader.keep_head),
    used when they cover what is hashed; otherwise the file is opened for them.
    """
    size = min(HEAD_BYTES, read_to)
    if len(head) < size:
        with open(path, "rb") as handle:
            head = handle.read(size)
    return hashlib.sha256(head[:size]).hexdigest()


HEAD_BYTES = 4096


# --- Folding entries into the session --------------------------------------------------------------------


def fold_entries(state: SessionState, entries: list[readers.Entry]) -> None:
    """Fold new entries into the session's totals; additive, so appends stay cheap."""
    models_used = list(state.models_used)
    # Every line of a streamed reply repeats the reply's usage: count each reply
    # once, with its last line's figures, even when its lines span two passes.
    last_reply = state.extra.get("last_reply") or {}
    state.entry_count += len(entries)
    if stamps := [e.timestamp for e in entries if e.timestamp]:
        if state.started_at is not None:
            stamps.append(state.started_at)
        if state.updated_at is not None:
            stamps.append(state.updated_at)
        state.started_at, state.updated_at = min(stamps), max(stamps)
    for entry in entries:
        # A subagent's own file is all sidechain: there, sidechain lines are the conversation.
        main_thread = not entry.is_sidechain or state.kind == "subagent"
        if entry.is_conversational and main_thread:
            state.message_count += 1
        # Meta rows (gateway-injected turns, "<synthetic>" models) are not models the session used.
        if (
            entry.model
            and not entry.is_meta
            and entry.model not in models_used
            and not entry.model.startswith("<")
        ):
            models_used.append(entry.model)
        if entry.usage:
            if entry.message_id and entry.message_id == last_reply.get("id"):
                _add_usage(state, last_reply.get("usage", {}), -1)
            _add_usage(state, entry.usage, 1)
            last_reply = {"id": entry.message_id, "usage": entry.usage}
        typed = not state.first_prompt and entry.is_prompt and main_thread and not _is_harness_text(entry)
        if typed and (prompt := title_of(entry.text)):
            state.first_prompt = prompt
        if entry.kind in TITLE_KINDS and entry.kind != "summary" and entry.summary:
            state.summary_title = title_of(entry.summary)
        _fold_metadata(state, entry)
    state.models_used = models_used
    extra = dict(state.extra)
    if last_reply:
        extra["last_reply"] = last_reply
    links = getattr(readers.format_module(state.format), "subagent_links", None)
    if links is not None and (found := links(entries)):
        extra["subagent_links"] = {**found, **extra.get("subagent_links", {})}
    state.extra = extra


def title_of(text: str) -> str:
    """A session title from a prompt or a summary: whitespace folded, cut to TITLE_LENGTH."""
    return " ".join(text.split())[:TITLE_LENGTH]


def _is_harness_text(entry: readers.Entry) -> bool:
    """A typed slash command or shell escape: a person typed it, but it makes a poor title."""
    return bool(entry.extra.get("command")) or entry.text.lstrip().startswith(("<bash-input>", "<command-"))


def _add_usage(state: SessionState, usage: dict, sign: int) -> None:
    state.input_tokens += sign * int(usage.get("input") or 0)
    state.output_tokens += sign * int(usage.get("output") or 0)
    state.cache_read_tokens += sign * int(usage.get("cache_read") or 0)
    state.cache_write_tokens += sign * int(usage.get("cache_write") or 0)


def _fold_metadata(state: SessionState, entry: readers.Entry) -> None:
    # Each value as the index stores it (db_text), so that queries with it meet the stored one.
    extra = entry.extra
    if cwd := extra.get("cwd"):
        state.cwd = db_text(str(cwd)[:1024])
        if state.format in ("claude_code", "go_agent", "openclaw"):
            state.project = state.cwd
    if branch := extra.get("gitBranch") or extra.get("git_branch"):
        state.git_branch = db_text(str(branch)[:256])
    uuid = extra.get("sessionId") or extra.get("session_id")
    if not uuid and entry.kind == readers.HEADER:
        uuid = extra.get("id")
    if uuid and not state.session_uuid:
        state.session_uuid = db_text(str(uuid)[:128])
    if jid := extra.get("jid"):
        state.jid = state.jid or db_text(str(jid))
    # Go agent forks name their parent on a branch entry, pi transcripts on the header.
    if entry.kind in (readers.BRANCH, readers.HEADER):
        if parent := extra.get("parent_session_path"):
            state.parent_path = db_text(str(parent))
            state.kind = "fork"
        if fork := extra.get("fork_entry_id"):
            state.fork_entry_id = db_text(str(fork))
    if entry.sender.endswith("@muc") and not state.extra.get("room"):
        state.extra = {**state.extra, "room": True}
        state.peer_kind = "group"
    if (agent_id := extra.get("agentId")) and entry.is_sidechain and not state.agent_id:
        state.agent_id = db_text(str(agent_id))


# --- Rows ------------------------------------------------------------------------------------------------


def entry_rows(
    entries: list[readers.Entry], for_sqlite: bool, problems: list[readers.Problem], path: str = ""
) -> list[list]:
    """The entry columns: session_id (None here: the writer fills it in, in place), then
    models.ENTRY_FIELDS in order, then text and raw. For SQLite, SQLITE_NULL stands
    for NULL in the columns that can hold it, and SQLITE_EMPTY for the empty value
    of the columns in EMPTY_BY_DEFAULT.

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
            ]
        )
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


# --- Reading in this process, or in a worker process -----------------------------------------------------


class ReadFailed(OSError):
    """A file the worker process could not read (it vanished, or is unreadable)."""


@dataclass
class _Failure:
    job: int
    error: str
    os_error: bool


@dataclass(frozen=True)
class _SkipTo:
    """To the worker: the jobs before this number were read by the parent."""

    number: int


class Reading:
    """The batches of the jobs added to it, read here or by a worker process.

    parallel_from: once expect() is told the jobs will read this many bytes, a
    worker process starts and reads every job; None: read here.
    read_while_starting: until the worker has handed over its first batch, the
    jobs asked for are read here instead, and the worker is told to skip them.
    Its interpreter and imports take a tenth of a second, which the caller
    otherwise spent waiting for the first batch (bench/bench_index.py).
    The worker is `python -c WORKER` (serve()): it takes pickled jobs on its
    stdin and writes pickled batches to its stdout. Nothing of this process is
    inherited or imported again (no Django, no open database, no __main__), and at
    most AHEAD_BYTES of batches wait in it, so memory stays flat whatever the file
    sizes. It starts while the caller is still planning the rest of the pass, so
    the interpreter's start is not waited for.

    batches(n) must be asked for in job order; a job whose batches were not all taken
    (its write failed) is skipped over.
    """

    def __init__(self, parallel_from: int | None = None, read_while_starting: bool = False):
        self.parallel_from = parallel_from
        self.jobs: list[Job] = []
        self.worker: subprocess.Popen | None = None
        self.jobs_sent = 0
        self.all_added = False
        self.reading_here = read_while_starting  # until the worker hands over a batch wanted
        self.read_here = 0  # jobs read here while the worker started
        self.pending: Batch | _Failure | None = None  # taken from the pipe, not yet given out

    @classmethod
    def of(cls, jobs: list[Job], parallel: bool) -> Reading:
        """These jobs, all read by a worker process (parallel) or all here."""
        reading = cls(parallel_from=0 if parallel else None)
        if parallel and jobs:
            reading._start_worker()
        for job in jobs:
            reading.add(job)
        reading.close_jobs()
        return reading

    def expect(self, bytes_to_read: int) -> None:
        """The jobs to come will read about this much: enough, and the worker starts now,
        so that its interpreter comes up while the caller plans them."""
        if (
            self.worker is None
            and self.parallel_from is not None
            and bytes_to_read > 0
            and bytes_to_read >= self.parallel_from
        ):
            self._start_worker()

    def add(self, job: Job) -> int:
        """Queue a job; its number is what batches() takes."""
        if self.all_added:
            raise RuntimeError("no job can be added after close_jobs()")
        self.jobs.append(job)
        if self.worker is not None and len(self.jobs) - self.jobs_sent >= SEND_JOBS:
            self.send_jobs()
        return len(self.jobs) - 1

    def close_jobs(self) -> None:
        """No more jobs: the worker ends once it has read the last one."""
        self.all_added = True
        self.send_jobs()
        if self.worker is not None:
            self._send(None)  # the pipe stays open for skips; the worker ends after the last job

    def _start_worker(self) -> None:
        import subprocess  # here: the worker itself has no use for it, and it costs its start 10 ms

        self.worker = subprocess.Popen(
            [sys.executable, "-c", WORKER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=PROJECT,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT), os.environ.get("PYTHONPATH")])),
            },
        )
        # The jobs are sent while the worker's interpreter starts, when nothing reads
        # them yet: a pipe of the usual 64 KB held a fifth of a cold index's jobs, and
        # the writer waited for the worker instead of reading the first jobs itself.
        with suppress(AttributeError, OSError):  # not Linux, or past the system's limit: it only waits more
            fcntl.fcntl(self.worker.stdin.fileno(), fcntl.F_SETPIPE_SZ, JOBS_PIPE_BYTES)
        self.send_jobs()

    def send_jobs(self) -> None:
        """Hand the jobs added so far to the worker, if it runs (add() does, every SEND_JOBS)."""
        # Jobs go over in lists: the worker takes them in a thread of its own, which
        # waits its turn for the interpreter between two reads of the pipe, so one
        # job per write left this process waiting on a full pipe.
        if self.worker is None:
            return
        jobs, self.jobs_sent = self.jobs[self.jobs_sent :], len(self.jobs)
        if jobs:
            self._send(jobs)

    def _send(self, message: list[Job] | _SkipTo | None) -> None:
        """Jobs, a skip, or None: no more jobs."""
        with suppress(BrokenPipeError):  # the worker died: batches() says so
            write_all(self.worker.stdin.fileno(), pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def ready(self, number: int) -> bool:
        """Whether job number's first batch can be taken without waiting for the worker.

        The pipe is asked, not the buffer in front of it: a small batch already in
        the buffer reads as not ready, which only costs the caller a wait not taken.
        """
        if self.worker is None or self._reads_here(number):
            return True
        readable, _, _ = select.select([self.worker.stdout], [], [], 0)
        return bool(readable)

    def _reads_here(self, number: int) -> bool:
        """While the worker starts: true until it hands over a batch of this job or a later one.

        What it hands over of the jobs read here already is dropped on the way.
        """
        while self.reading_here:
            readable, _, _ = select.select([self.worker.stdout], [], [], 0)
            if not readable:
                return True
            item = self._take()
            if item is not None and item.job < number:
                continue  # a job read here, which the worker had begun before its skip came
            self.pending, self.reading_here = item, False
        return False

    def batches(self, number: int) -> Iterator[Batch]:
        if self.worker is None:
            yield from read_job(self.jobs[number], number)
            return
        if self._reads_here(number):
            self.read_here += 1
            if number < len(self.jobs) - 1:
                self._send(_SkipTo(number + 1))
            yield from read_job(self.jobs[number], number)
            return
        while True:
            item = self._next()
            if item.job < number:
                continue  # what is left of a job the caller gave up on, or read here
            if isinstance(item, _Failure):
                raise (ReadFailed if item.os_error else RuntimeError)(item.error)
            yield item
            if item.last:
                return

    def _next(self) -> Batch | _Failure:
        item, self.pending = self.pending or self._take(), None
        if item is None:
            self.worker.wait()
            error = self.worker.stderr.read().decode("utf-8", "replace").strip()
            raise RuntimeError(
                f"the reading process ended early (exit code {self.worker.returncode}): {error[-2000:]}"
            )
        return item

    def _take(self) -> Batch | _Failure | None:
        """The worker's next item; None once it has ended."""
        try:
            item = pickle.load(self.worker.stdout)  # noqa: S301 - our own child process wrote it
        except EOFError:
            return None
        if isinstance(item, Batch) and isinstance(item.rows, bytes):
            item.rows = marshal.loads(item.rows)  # noqa: S302 - as above: see _for_the_pipe()
        return item

    def close(self) -> None:
        if self.worker is None:
            return
        if self.worker.poll() is None:
            self.worker.kill()  # the caller stopped early: what it has not taken is not needed
        self.worker.wait()
        for pipe in (self.worker.stdin, self.worker.stdout, self.worker.stderr):
            with suppress(BrokenPipeError):  # jobs the killed worker never took
                pipe.close()
        self.worker = None

    def __enter__(self) -> Reading:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()


PROJECT = Path(__file__).resolve().parents[2]


class _ReadAhead:
    """Pickled batches waiting for the pipe: at most `limit` bytes of them, and always one."""

    def __init__(self, limit: int):
        self.limit = limit
        self.waiting: deque[bytes | None] = deque()
        self.size = 0
        self.changed = threading.Condition()

    def put(self, data: bytes | None) -> None:
        size = len(data or b"")
        with self.changed:
            while self.waiting and self.size + size > self.limit:
                self.changed.wait()
            self.waiting.append(data)
            self.size += size
            self.changed.notify_all()

    def get(self) -> bytes | None:
        with self.changed:
            while not self.waiting:
                self.changed.wait()
            data = self.waiting.popleft()
            self.size -= len(data or b"")
            self.changed.notify_all()
            return data


def serve(jobs_in, batches_out) -> None:
    """The worker process: read every job in order and hand over the batches.

    One thread takes the jobs as the parent sends them, and one writes the batches
    to the pipe, so that reading runs up to AHEAD_BYTES in front of the writer in
    the parent. Without that the two processes would take turns (a pipe holds less
    than one batch), and a stretch of files slow to read could not use the time
    the writer spent on a stretch slow to write.
    """
    # Entries, blocks and rows make no cycles and go by reference counting; the
    # collector's frequent passes over them took the worker 3% of its time.
    gc.set_threshold(WORKER_GC_THRESHOLD, 10, 10)
    jobs: queue.Queue[Job | None] = queue.Queue()
    ahead = _ReadAhead(AHEAD_BYTES)
    skip_to = 0  # jobs before this one the parent read itself

    def take_jobs() -> None:
        nonlocal skip_to
        ended = False
        try:
            while True:
                message = pickle.load(jobs_in)  # noqa: S301 - our parent process wrote it
                if message is None:  # no more jobs; skips may still come
                    jobs.put(None)
                    ended = True
                elif isinstance(message, _SkipTo):
                    skip_to = max(skip_to, message.number)
                else:
                    for job in message:
                        jobs.put(job)
        except EOFError:
            pass
        finally:
            if not ended:  # the parent went away
                jobs.put(None)

    def write() -> None:
        while (data := ahead.get()) is not None:
            write_all(batches_out.fileno(), data)

    threads = [
        threading.Thread(target=take_jobs, name="ingest-jobs", daemon=True),
        threading.Thread(target=write, name="ingest-writer"),
    ]
    for thread in threads:
        thread.start()
    try:
        number = 0
        while (job := jobs.get()) is not None:
            if number < skip_to:
                number += 1
                continue
            try:
                for batch in read_job(job, number):
                    ahead.put(_for_the_pipe(batch))
            except OSError as error:
                failure = _Failure(number, f"{job.path}: {error}", os_error=True)
                ahead.put(pickle.dumps(failure, protocol=pickle.HIGHEST_PROTOCOL))
            except Exception as error:  # a bug: the indexer raises it, as it would reading in-process
                failure = _Failure(number, f"{job.path}: {type(error).__name__}: {error}", os_error=False)
                ahead.put(pickle.dumps(failure, protocol=pickle.HIGHEST_PROTOCOL))
            number += 1
    finally:
        ahead.put(None)
        threads[1].join()


def _for_the_pipe(batch: Batch) -> bytes:
    """A batch pickled, its rows marshalled inside it when they can be.

    Rows for SQLite are lists of str, int and None, which marshal writes and reads
    back in about 0.7x the time pickle takes, and the writer, which a cold index
    waits for, reads every row (Reading._take). Rows for PostgreSQL hold datetimes,
    which marshal refuses: they are pickled with the rest.
    """
    with suppress(ValueError):
        batch.rows = marshal.dumps(batch.rows)
    return pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL)


def write_all(fd: int, data: bytes) -> None:
    """Write all of data to a pipe, a write at a time.

    Not through a buffered file: stopping and continuing a process (Ctrl-Z then fg,
    or a profiler sampling it) can cut a large write to a pipe short, and Python's
    BufferedWriter was seen to drop the rest, leaving the reader a corrupt stream
    (tests/test_ingest.py stops and continues a worker to check).
    """
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


AHEAD_BYTES = 16 * 1024 * 1024
WORKER_GC_THRESHOLD = 20_000  # allocations between two passes of the collector (Python's: 700)
JOBS_PIPE_BYTES = 1024 * 1024  # Linux's default limit for an unprivileged process
SEND_JOBS = 256  # jobs that wait to be sent together once the worker runs


# The worker's program. Not `python -m sessionviewer.index.worker`: that runs this module
# twice, as __main__ and then as the package's (what is pickled must name the
# latter), and the worker's start is time the writer reads jobs itself.
WORKER = (
    "import sys; from sessionviewer.index.worker import serve; serve(sys.stdin.buffer, sys.stdout.buffer)"
)
