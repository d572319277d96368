"""The only code that calls the readers and writes the index.

A pass walks every configured root, asks the format's reader which session files
are there, and brings each file's rows up to date:

- a file whose size, mtime and inode are unchanged is not opened;
- a file that grew (same inode, same first bytes) is read from its last indexed
  byte offset: an append costs time in proportion to the new bytes;
- a file that shrank, was replaced or was rewritten is indexed again whole;
- a file that is gone leaves the index;
- a last line without its newline yet is left for the next pass.

A file's new rows and its recorded offset are written in one transaction, so an
indexer killed at any moment leaves the index consistent and the next pass
starts exactly where the last commit ended.
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connection, connections, models, transaction
from django.utils import timezone

from sessionviewer import readers
from sessionviewer.index import fold, worker
from sessionviewer.index.rows import (
    EMPTY_BY_DEFAULT,
    SQLITE_EMPTY,
    SQLITE_NULL,
    db_datetime,
    db_text,
    json_text,
)
from sessionviewer.models import ENTRY_FIELDS, Entry, OrjsonField, Problem, Session, Source
from sessionviewer.roots import RootSpec

log = logging.getLogger(__name__)

BATCH = 500
# A pass with this much to read reads in a second process while this one writes (worker.Reading).
PARALLEL_BYTES = 16 * 1024 * 1024
CPUS = os.cpu_count() or 1


@dataclass
class IndexSummary:
    files: int = 0  # session files seen
    opened: int = 0  # files read this pass (new, grown or rewritten)
    sessions: int = 0  # sessions in the index for the roots, after the pass
    entries: int = 0  # entries added this pass
    problems: int = 0  # bad lines found this pass
    removed: int = 0  # sessions whose file is gone
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # roots or files that could not be read at all
    bad_lines: list[str] = field(default_factory=list)  # "path:line: why", the first BAD_LINES_KEPT
    touched: list[int] = field(default_factory=list)  # ids of the sessions read this pass

    def line(self) -> str:
        text = (
            f"{self.files} files ({self.opened} read), {self.sessions} sessions, "
            f"{self.entries} new entries, {self.problems} bad lines, {self.removed} removed, "
            f"{self.seconds:.2f}s"
        )
        if self.errors:
            text += f", {len(self.errors)} error{'s' if len(self.errors) != 1 else ''}"
        return text


BAD_LINES_KEPT = 10_000  # of a pass's bad lines, for its summary: the pages list them all

Progress = Callable[[int, int, str], None]


def index_roots(specs: Iterable[RootSpec], progress: Progress | None = None) -> IndexSummary:
    """Bring the index up to date with every root; roots not listed are left alone."""
    started = time.perf_counter()
    summary = IndexSummary()
    parallel_from = PARALLEL_BYTES if CPUS > 1 else None
    with _heap_frozen(), worker.Reading(parallel_from=parallel_from, read_while_starting=True) as reading:
        surveys = []
        for spec in specs:
            if (survey := _survey(spec, summary)) is not None:
                surveys.append(survey)
                # Once a pass is big enough its worker starts: its interpreter comes up
                # while the other roots are surveyed and the files planned.
                reading.expect(sum(s.bytes_to_read for s in surveys))
        passes = []
        for survey in surveys:
            root_pass = _plan_changes(survey, summary)
            passes.append(root_pass)
            for plan in root_pass.plans:
                plan.number = reading.add(plan.job)
            reading.send_jobs()  # to read while the next root is planned
        reading.close_jobs()
        with _checkpointing(big=reading.worker is not None) as checkpointer:
            for root_pass in passes:
                _write_changes(root_pass, reading, summary, progress, len(reading.jobs), checkpointer)
    summary.seconds = time.perf_counter() - started
    return summary


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """Keep the cycle collector off the objects that were there before the pass.

    A pass allocates enough to set off a full collection, which went through all
    of Django's objects too: a fiftieth of a cold index's writing. gc.freeze()
    leaves them out of every collection until the pass ends; they are no garbage.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def watch_roots(
    specs: list[RootSpec], on_pass: Callable[[IndexSummary], None], stop_event: threading.Event | None = None
) -> None:
    """Index the roots again whenever files under them change, until stop_event is set.

    A pass is incremental (unchanged files are not opened), so running it over all
    roots is as cheap as working out which files changed, and never misses one.
    """
    from watchfiles import watch

    paths = [spec.path for spec in specs if spec.path.exists()]
    if not paths:
        raise FileNotFoundError("none of the roots exists: nothing to watch")
    for _changes in watch(*paths, debounce=300, step=50, stop_event=stop_event, raise_interrupt=False):
        try:
            summary = index_roots(specs)
        except Exception as error:  # noqa: BLE001 - the database busy or gone, say: the next change tries again
            log.error("an index pass failed", exc_info=error)
            summary = IndexSummary(errors=[f"the pass stopped: {error!r}"])
        on_pass(summary)


# Files are written in groups, each group one transaction: a commit per file costs
# more than the writing (and leaves FTS5 many small segments to merge), while one
# file's rows and its offset still always change together.
GROUP_BYTES = 32 * 1024 * 1024
GROUP_FILES = 500


@dataclass
class _Work:
    found: readers.SessionFile
    stat: os.stat_result
    session_id: int | None


@dataclass
class _Survey:
    """A root's files and which of them changed, before anything is planned or read."""

    source: Source
    found: list[readers.SessionFile]
    known: set[str]  # keys of the sessions the index had before the pass
    changed: list[_Work]
    bytes_to_read: int  # about: what a changed file has past its last indexed byte, or all of it


def _survey(spec: RootSpec, summary: IndexSummary) -> _Survey | None:
    """Discover a root's files and stat them; nothing is read or written yet."""
    root = spec.path
    if not root.exists():
        return None
    fmt = spec.format or readers.detect_format(root)
    if fmt is None:
        summary.errors.append(f"{root}: no known session format found")
        return None
    source, _ = Source.objects.get_or_create(path=str(root), defaults={"format": fmt})
    if source.format != fmt:
        # The root was re-tagged: what was read under the old format means nothing now.
        source.sessions.all().delete()
        source.format = fmt
        source.save(update_fields=["format"])
    try:
        found = list(readers.format_module(fmt).discover(root))
    except Exception as error:  # noqa: BLE001 - one root's trouble must not stop the others
        summary.errors.append(f"{root}: {error}" if isinstance(error, OSError) else f"{root}: {error!r}")
        if not isinstance(error, OSError):
            log.error("discovering the files of %s failed", root, exc_info=error)
        return None
    # Only what the comparison needs: loading whole sessions would cost more than the stats.
    known = {
        key: (session_id, state, read_offset)
        for session_id, key, read_offset, *state in source.sessions.values_list(
            "id", "key", "read_offset", "file_size", "file_mtime_ns", "file_inode"
        )
    }
    changed, bytes_to_read = [], 0
    for session_file in found:
        summary.files += 1
        try:
            stat = os.stat(session_file.path)
        except OSError as error:  # vanished or unreadable between discovery and now
            summary.errors.append(f"{session_file.path}: {error}")
            continue
        session_id, state, read_offset = known.get(session_file.key, (None, None, 0))
        if state != [stat.st_size, stat.st_mtime_ns, stat.st_ino]:
            changed.append(_Work(session_file, stat, session_id))
            grew = state is not None and _grew(read_offset, state[2], stat)
            bytes_to_read += stat.st_size - (read_offset if grew else 0)
    return _Survey(source, found, set(known), changed, bytes_to_read)


@dataclass
class _RootPass:
    """One root's part of a pass: its survey, and the changed files' plans."""

    survey: _Survey
    plans: list[_Plan]


def _plan_changes(survey: _Survey, summary: IndexSummary) -> _RootPass:
    """Plan each changed file of a surveyed root: where to read from, into which session."""
    plans = []
    for work in survey.changed:
        try:
            plans.append(_plan(survey.source, work))
        except OSError as error:  # vanished or unreadable between discovery and now
            summary.errors.append(f"{work.found.path}: {error}")
        except Exception as error:  # noqa: BLE001 - a bug: the other files go on
            summary.errors.append(f"{work.found.path}: {error!r}")
            log.error("planning %s failed", work.found.path, exc_info=error)
    return _RootPass(survey, plans)


def _write_changes(
    root_pass: _RootPass,
    reading: worker.Reading,
    summary: IndexSummary,
    progress: Progress | None,
    total: int,
    checkpointer: WalCheckpointer | None = None,
) -> None:
    """Write a root's changed files as they are read, drop its vanished ones, link what changed."""
    source = root_pass.survey.source
    touched: list[Session] = []
    for group in _groups(root_pass.plans):
        if checkpointer is not None:
            checkpointer.keep_log_bounded()
        with transaction.atomic():
            new_rows = _NewRows()
            for plan in group:
                if not reading.ready(plan.number):
                    new_rows.index_text()  # while the worker reads on: outside any file's savepoint
                if progress:
                    progress(plan.number + 1, total, plan.work.found.key)
                counts = summary.entries, summary.problems, len(summary.bad_lines)
                try:
                    with _file_savepoint():
                        touched.append(_index_file(plan, reading.batches(plan.number), summary))
                except Exception as error:  # noqa: BLE001 - no file may stop the pass
                    # Unreadable, a value the database refuses, or a bug: the rest goes on.
                    summary.entries, summary.problems, kept = counts  # none of its rows stayed
                    del summary.bad_lines[kept:]
                    _record_failure(plan, error, summary)
            new_rows.index_text()
        if checkpointer is not None:
            checkpointer.request()  # the group is committed: its pages can go into the database
    gone = root_pass.survey.known - {f.key for f in root_pass.survey.found}
    if gone:
        summary.removed += len(gone)
        Session.objects.filter(source=source, key__in=gone).delete()
    if touched:
        try:
            with transaction.atomic():
                link_sessions(source, touched)
        except Exception as error:  # noqa: BLE001 - the sessions are in; only their links are missing
            summary.errors.append(f"{source.path}: linking its sessions failed: {error!r}")
            log.error("linking the sessions of %s failed", source.path, exc_info=error)
        summary.touched += [s.id for s in touched]
    source.indexed_at = timezone.now()
    source.save(update_fields=["indexed_at"])
    summary.sessions += source.sessions.count()


def _record_failure(plan: _Plan, error: Exception, summary: IndexSummary) -> None:
    """A file that could not be indexed: its error goes on its session, shown on the list
    and its page, and into the pass's summary. Its file state is not recorded, so the next
    pass tries it again; what an earlier pass indexed of it stays."""
    path = plan.work.found.path
    message = str(error) if isinstance(error, OSError | DatabaseError) else f"{type(error).__name__}: {error}"
    message = db_text(readers.without_lone_surrogates(message))[:ERROR_LENGTH]
    summary.errors.append(f"{path}: {message}")
    if not isinstance(error, OSError | DatabaseError):  # a bug, not the input's fault: its traceback helps
        log.error("indexing %s failed", path, exc_info=error)
    try:
        with _file_savepoint():
            if plan.work.session_id:
                Session.objects.filter(id=plan.work.session_id).update(index_error=message)
            elif not isinstance(error, FileNotFoundError):  # new, and still there: a session to show it
                session = Session(source=plan.session.source, key=plan.work.found.key)
                _apply_discovery(session, plan.work.found)
                session.file_size, session.index_error = -1, message  # -1: read it again next pass
                _save_session(session)
    except DatabaseError as second:
        summary.errors.append(f"{path}: the error could not be recorded: {second}")


ERROR_LENGTH = 2000


@contextmanager
def _file_savepoint() -> Iterator[None]:
    """A savepoint per file: a read that fails halfway leaves none of its rows.

    On SQLite it is two plain statements on the driver's connection: a nested
    atomic() costs more in Python than the savepoint costs SQLite, once per file.
    """
    if connection.vendor != "sqlite":
        with transaction.atomic():
            yield
        return
    with _driver_cursor() as cursor:
        cursor.execute('SAVEPOINT "indexer_file"')
    try:
        yield
    except BaseException:
        with _driver_cursor() as cursor:
            cursor.execute('ROLLBACK TO "indexer_file"')
            cursor.execute('RELEASE "indexer_file"')
        # The file's ORM statements may have marked the group for rollback; the savepoint undid them.
        transaction.set_rollback(False)
        raise
    with _driver_cursor() as cursor:
        cursor.execute('RELEASE "indexer_file"')


@contextmanager
def _driver_cursor() -> Iterator[Any]:
    """A cursor for the statements the indexer runs per file and per batch, which
    _Statements writes in the driver's own placeholders.

    On SQLite it is sqlite3's own cursor: Django's rewrites the placeholders of
    every statement with a regular expression. Errors still come out as Django's.
    """
    db = connections[DEFAULT_DB_ALIAS]  # once: each use of the proxy looks the connection up
    if db.vendor != "sqlite":
        with db.cursor() as cursor:
            yield cursor
        return
    if db.connection is None:
        db.ensure_connection()
    with db.wrap_database_errors:
        cursor = db.connection.cursor()
        try:
            yield cursor
        finally:
            cursor.close()


def _groups(plans: list[_Plan]) -> Iterable[list[_Plan]]:
    group: list[_Plan] = []
    size = 0
    for plan in plans:
        group.append(plan)
        size += plan.bytes_to_read
        if size >= GROUP_BYTES or len(group) >= GROUP_FILES:
            yield group
            group, size = [], 0
    if group:
        yield group


@dataclass
class _Plan:
    """What to do with one changed file, decided before any of its lines is read."""

    work: _Work
    session: Session
    reset: bool  # read again whole: its old rows go first
    job: worker.Job
    number: int = -1  # the job's number in the pass's worker.Reading

    @property
    def bytes_to_read(self) -> int:
        return self.work.stat.st_size - self.job.start_offset


def _plan(source: Source, work: _Work) -> _Plan:
    found, stat = work.found, work.stat
    session = (
        Session.objects.get(id=work.session_id) if work.session_id else Session(source=source, key=found.key)
    )
    start_offset = start_line = 0
    reset = False
    if session.id and _can_append(session, found.path, stat):
        start_offset, start_line = session.read_offset, session.read_line
    elif session.id:
        reset = True
        _reset_totals(session)
    _apply_discovery(session, found)
    job = worker.Job(
        found.path,
        found.format,
        start_offset,
        start_line,
        fold.SessionState.of(session),
        batch_size=BATCH,
        for_sqlite=connection.vendor == "sqlite",
    )
    return _Plan(work, session, reset, job)


class WalCheckpointer:
    """Copies a SQLite database's write-ahead log into the database file in a thread.

    SQLite checkpoints when a commit leaves more than 1000 pages in the log: the
    committing connection copies them and syncs the file twice, and a cold index
    waited for that after every group (a sixth of its time writing, measured in
    bench/). For a big pass the indexer turns those automatic checkpoints off and
    asks this thread after each commit, so the copy and the syncs overlap the next
    group's writing. Its connection is SQLite's own, not Django's; it only copies
    committed pages and never waits for the writer or the readers (PASSIVE).

    The log cannot start over while the writer keeps adding to it, so past
    log_limit bytes the writer waits for the copy before its next group, which then
    starts the log over. At the end the log file is emptied if nobody is reading
    it at that moment; otherwise SQLite starts it over at the next write.
    """

    def __init__(self, path: str, log_limit: int):
        self.path, self.log_limit = path, log_limit
        self.requests: queue.Queue[str | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="wal-checkpoint", daemon=True)
        self.thread.start()

    def request(self) -> None:
        """A commit is done: copy it while the writer goes on."""
        self.requests.put("PASSIVE")

    def keep_log_bounded(self) -> None:
        """Before a write: past log_limit bytes of log, wait until all of it is copied."""
        try:
            size = os.path.getsize(f"{self.path}-wal")
        except OSError:
            return
        if size > self.log_limit:
            self.request()
            self.requests.join()

    def close(self) -> None:
        """Copy what the last commit left, empty the log file if it is free, end the thread."""
        self.request()
        self.requests.put("TRUNCATE")
        self.requests.put(None)
        self.thread.join()

    def _run(self) -> None:
        database = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            while (mode := self.requests.get()) is not None:
                try:
                    if mode == "TRUNCATE":  # only if nobody reads or writes: never wait for them
                        database.execute("PRAGMA busy_timeout=0")
                    database.execute(f"PRAGMA wal_checkpoint({mode})").fetchall()
                except sqlite3.Error as error:  # busy or gone: the next request, or SQLite, copies it
                    log.warning("checkpoint of %s failed: %s", self.path, error)
                finally:
                    self.requests.task_done()
            self.requests.task_done()
        finally:
            database.close()


# Past this much log a big pass waits for the checkpoint before its next group.
WAL_LIMIT = 256 * 1024 * 1024


@contextmanager
def _checkpointing(big: bool) -> Iterator[WalCheckpointer | None]:
    """For a big pass on a SQLite file: checkpoints in a thread rather than at each commit."""
    if not big or connection.vendor != "sqlite" or connection.is_in_memory_db():
        yield None
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        if cursor.fetchone()[0].lower() != "wal":
            yield None
            return
        cursor.execute("PRAGMA wal_autocheckpoint")
        automatic = cursor.fetchone()[0]
        cursor.execute("PRAGMA journal_size_limit")
        size_limit = cursor.fetchone()[0]
        cursor.execute("PRAGMA wal_autocheckpoint=0")
        # When the log starts over, its file shrinks back to this: it grew with the pass.
        cursor.execute(f"PRAGMA journal_size_limit={WAL_LIMIT // 4}")
    checkpointer = WalCheckpointer(str(connection.settings_dict["NAME"]), WAL_LIMIT)
    try:
        yield checkpointer
    finally:
        checkpointer.close()
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA wal_autocheckpoint={int(automatic)}")
            cursor.execute(f"PRAGMA journal_size_limit={int(size_limit)}")


class _NewRows:
    """The entry rows a group of files adds, for the full-text index.

    FTS5 writes what it holds in memory to disk at every savepoint, and each file
    has one: indexing the group's text in few statements, rather than one per
    file, halves what FTS5 costs a cold index (bench/bench_index.py). The indexer
    calls index_text() at the end of the group, and between two files when the
    reading worker has nothing ready yet, so that waiting time goes to FTS5.

    The new rows are those above the largest entry id at the group's start: the
    entry table's id is AUTOINCREMENT (Django's SQLite schema; a test checks it),
    so a new row's id is above every id the table ever held, even when a file
    read again whole deleted the rows that held the largest. Each call indexes
    the rows added since the last, so none is indexed twice.
    """

    def __init__(self):
        # Made at the group's start, in its transaction. PostgreSQL keeps its GIN index itself.
        self.indexed_up_to = self._largest_id() if connection.vendor == "sqlite" else None

    def index_text(self) -> None:
        if self.indexed_up_to is None:
            return
        largest = self._largest_id()
        if largest <= self.indexed_up_to:
            return
        with _driver_cursor() as cursor:
            cursor.execute(_statements(connection.vendor).index_new_text, [self.indexed_up_to, largest])
        self.indexed_up_to = largest

    @staticmethod
    def _largest_id() -> int:
        with _driver_cursor() as cursor:  # a plain query: the ORM's aggregate costs 20x this
            cursor.execute(_statements(connection.vendor).largest_entry_id)
            return cursor.fetchone()[0] or 0


def _index_file(plan: _Plan, batches: Iterable[worker.Batch], summary: IndexSummary) -> Session:
    """Write one changed file's new lines, in the caller's transaction.

    The lines arrive in batches, each folded into the session's totals already, so
    memory stays flat however large the file is.
    """
    session = plan.session
    retried = 0
    if plan.reset:
        session.entries.all().delete()
        session.problems.all().delete()
    elif session.id:
        # Problems past the offset (a cut-off last line) are looked at again.
        retried = session.problems.filter(offset__gte=plan.job.start_offset).delete()[0]
    summary.opened += 1
    summaries: list[worker.SummaryLink] = []
    for batch in batches:
        batch.state.copy_to(session)
        session.problem_count -= retried
        summaries += batch.summaries
        summary.entries += len(batch.rows)
        if batch.problems:
            summary.problems += len(batch.problems)
            room = BAD_LINES_KEPT - len(summary.bad_lines)
            summary.bad_lines += [
                # In line order: lines cut for depth are found after the reader's own problems.
                f"{plan.work.found.path}:{p.line}: {p.message}"
                for p in sorted(batch.problems, key=lambda p: p.line)[:room]
            ]
        if batch.last:
            # The last batch: one save with the file's state (most files are one batch).
            _record_file_state(session, plan.work, batch)
            _save_session(session)
        elif session.id is None:
            _save_session(session)  # the rows need its id
        _write_rows(session, batch.rows, batch.problems)
    session.new_summaries = summaries
    return session


def _record_file_state(session: Session, work: _Work, last: worker.Batch) -> None:
    # A last line still being written: keep the file "changed" so the next pass looks again.
    stat = work.stat
    session.file_size = -1 if last.pending_tail else stat.st_size
    session.file_mtime_ns, session.file_inode = stat.st_mtime_ns, stat.st_ino
    session.read_offset, session.read_line = last.end_offset, last.end_line
    session.file_head = last.head_hash
    session.indexed_at = timezone.now()
    session.index_error = ""


def _grew(read_offset: int, inode: int, stat: os.stat_result) -> bool:
    """Same file, not shorter than what was read: an append, if its first bytes match too."""
    return read_offset > 0 and stat.st_ino == inode and stat.st_size >= read_offset


def _can_append(session: Session, path: Path, stat: os.stat_result) -> bool:
    """A true append: same file, not shorter than what was read, same first bytes."""
    if not _grew(session.read_offset, session.file_inode, stat):
        return False
    return worker.head_hash(path, session.read_offset) == session.file_head


def _reset_totals(session: Session) -> None:
    """Forget what the old lines said; their rows go when the file is written.

    Everything reading the lines sets starts again from SessionState's defaults;
    discovery then puts back what the file's location says.
    """
    fold.SessionState(format=session.format).copy_to(session)
    session.title = ""


def _apply_discovery(session: Session, found: readers.SessionFile) -> None:
    session.format = found.format
    session.path = str(found.path)
    session.status = found.status
    session.project_dir = found.project
    for name in ("jid", "agent", "channel", "account", "peer_kind", "peer_id", "agent_id"):
        setattr(session, name, getattr(found, name) or getattr(session, name))
    if found.title:
        session.title = found.title[:500]
    elif description := found.extra.get("description"):
        session.title = str(description)[:500]  # a subagent's task, from its .meta.json
    if found.parent_path is not None:
        session.parent_path = str(found.parent_path)
        session.kind = "subagent"
    if found.parent_tool_id:
        session.parent_tool_id = found.parent_tool_id
    room = session.extra.get("room")
    session.extra = {**session.extra, **found.extra}
    if room:  # found from "nick@muc" senders: discovery only knows room domains
        session.extra["room"], session.peer_kind = True, "group"


def _save_session(session: Session) -> None:
    """Session.save() in one plain statement: the ORM's save compiles its SQL and
    prepares every field's value on every call, which cost a cold index most of what
    its ~400 session saves took (bench/bench_index.py)."""
    sql = _statements(connection.vendor)
    adding = session.id is None
    values = [to_db(session, attname) for attname, to_db in sql.session_values]
    with _driver_cursor() as cursor:
        if adding:
            cursor.execute(sql.insert_session, values)
            session.id = cursor.fetchone()[0]
            session._state.adding, session._state.db = False, connection.alias
        else:
            cursor.execute(sql.update_session, [*values, session.id])


def _value_to_db(field: models.Field, for_sqlite: bool) -> Callable[[Session, str], Any]:
    """How one Session field's value goes into the statement: as the ORM would send it.

    The usual types take a short way; anything else goes through the field itself.
    Strings come from files (titles, paths), so NUL is escaped as db_text does.
    """

    def by_field(session: Session, attname: str):
        value = field.get_db_prep_save(getattr(session, attname), connection)
        return db_text(value) if isinstance(value, str) else value

    if isinstance(field, OrjsonField):

        def to_db(session: Session, attname: str):
            value = getattr(session, attname)
            return None if value is None else json_text(value)

    elif isinstance(field, models.DateTimeField):

        def to_db(session: Session, attname: str):
            value = getattr(session, attname)
            if value is None or (type(value) is datetime and value.tzinfo is not None):
                return db_datetime(value, for_sqlite)
            return by_field(session, attname)  # naive: Django warns, and says how it is taken

    elif isinstance(field, (*_PLAIN_FIELDS, models.ForeignKey)):

        def to_db(session: Session, attname: str):
            value = getattr(session, attname)
            if value is None or type(value) is int:
                return value
            if type(value) is str:
                return db_text(value)
            return by_field(session, attname)

    else:
        to_db = by_field
    return to_db


def _write_rows(session: Session, rows: list[list], problems: list[readers.Problem]) -> None:
    """Insert the rows with executemany: model instances and bulk_create cost several
    times the parse itself, and the indexer writes every line of every file."""
    session_id = session.id
    for row in rows:
        row[0] = session_id
    with _driver_cursor() as cursor:
        cursor.executemany(_statements(connection.vendor).insert_entry, rows)
    # The full-text rows follow once per group (_NewRows), in one statement (migration 0005).
    if problems:
        Problem.objects.bulk_create(
            [
                Problem(
                    session=session,
                    line=p.line,
                    offset=p.offset,
                    message=db_text(p.message),
                    text=db_text(p.text),
                )
                for p in problems
            ],
            batch_size=BATCH,
        )


@dataclass(frozen=True)
class _Statements:
    """The SQL the indexer runs for every file, built once per database vendor, in
    its driver's placeholders (_driver_cursor runs them)."""

    # Each field's attname, and how its value goes to the database (_value_to_db).
    session_values: tuple[tuple[str, Callable[[Session, str], Any]], ...]
    insert_session: str
    update_session: str
    insert_entry: str
    largest_entry_id: str
    index_new_text: str  # SQLite: the entries in an id range, into the full-text index


# Fields whose str, int or None value the ORM would pass on unchanged.
_PLAIN_FIELDS = (models.CharField, models.TextField, models.IntegerField, models.BigIntegerField)
_PLAIN_FIELDS += (models.PositiveIntegerField,)


@functools.cache
def _statements(vendor: str) -> _Statements:
    quote = connection.ops.quote_name
    mark = _placeholder(vendor)
    fields = [f for f in Session._meta.concrete_fields if not f.primary_key]
    session_table, entry_table = quote(Session._meta.db_table), quote(Entry._meta.db_table)
    session_columns = ", ".join(quote(f.column) for f in fields)
    assignments = ", ".join(f"{quote(f.column)} = {mark}" for f in fields)
    entry_columns = ", ".join(quote(c) for c in ENTRY_COLUMNS)
    # The names are ours, not a request's.
    return _Statements(
        session_values=tuple((f.attname, _value_to_db(f, vendor == "sqlite")) for f in fields),
        insert_session=f"INSERT INTO {session_table} ({session_columns}) "  # noqa: S608
        f"VALUES ({', '.join([mark] * len(fields))}) RETURNING id",
        update_session=f"UPDATE {session_table} SET {assignments} WHERE id = {mark}",  # noqa: S608
        insert_entry=f"INSERT INTO {entry_table} ({entry_columns}) "  # noqa: S608
        f"VALUES ({', '.join(_entry_value(column, vendor) for column in ENTRY_COLUMNS)})",
        largest_entry_id=f"SELECT max(id) FROM {entry_table}",  # noqa: S608
        index_new_text=f"INSERT INTO entry_fts(rowid, text) SELECT id, text FROM {entry_table} "  # noqa: S608
        f"WHERE id > {mark} AND id <= {mark}",
    )


ENTRY_COLUMNS = ("session_id", *ENTRY_FIELDS, "text", "raw")


def _placeholder(vendor: str) -> str:
    """A parameter in the driver's own style (_driver_cursor runs the statements)."""
    return "?" if vendor == "sqlite" else "%s"


def _entry_value(column: str, vendor: str) -> str:
    """A column's placeholder in the entry insert (rows.entry_rows makes the rows)."""
    if vendor == "sqlite" and column != "session_id" and Entry._meta.get_field(column).null:
        return f"NULLIF(?, {SQLITE_NULL})"  # SQLITE_NULL: NULL, bound cheaply
    if vendor == "sqlite" and column in EMPTY_BY_DEFAULT:
        # SQLITE_EMPTY: the column's empty value, bound cheaply. A literal of ours.
        return f"IFNULL(NULLIF(?, {SQLITE_EMPTY}), '{EMPTY_BY_DEFAULT[column]}')"
    return _placeholder(vendor)


def link_sessions(source: Source, touched: list[Session]) -> None:
    """Links that need more than one file: subagents and forks to their parent, cross-file titles.

    Only what this pass touched is looked at: the touched sessions' own parents, the
    sessions waiting for a touched one as their parent, and the new summary lines.
    """
    paths = {s.path for s in touched}
    names = {Path(path).name for path in paths}
    candidates = {s.id: s for s in touched if s.parent_path}
    # Sessions still without their parent: their ids and parent paths only (after a
    # first index every subagent is one), then the few whose parent was just indexed.
    waiting = Session.objects.filter(source=source, parent__isnull=True).exclude(parent_path="")
    wanted = [
        session_id
        for session_id, parent_path in waiting.values_list("id", "parent_path")
        if session_id not in candidates and (parent_path in paths or Path(parent_path).name in names)
    ]
    for session in Session.objects.filter(id__in=wanted).only(*_LINK_FIELDS):
        candidates[session.id] = session
    parents = {
        parent.path: parent
        for parent in Session.objects.filter(
            source=source, path__in={s.parent_path for s in candidates.values()}
        ).only("id", "path", "extra")
    }
    linked = [s for s in candidates.values() if _link_parent(source, s, parents.get(s.parent_path))]
    _update_sessions(linked, ("parent_id", "parent_tool_id"))
    _link_summaries(source, touched)


_LINK_FIELDS = ("id", "source", "path", "kind", "parent_path", "parent", "parent_tool_id", "agent_id")


def _link_parent(source: Source, session: Session, parent: Session | None) -> bool:
    """Set the session's parent and the tool call that started it; whether they changed.

    parent: the session at exactly session.parent_path, if there is one.
    """
    if parent is None or parent.id == session.id:
        parent = (
            Session.objects.filter(source=source, path__endswith="/" + Path(session.parent_path).name)
            .exclude(id=session.id)
            .only("id", "path", "extra")
            .first()
        )
    tool_id = session.parent_tool_id
    if parent and session.kind == "subagent" and session.agent_id:
        tool_id = parent.extra.get("subagent_links", {}).get(session.agent_id, "") or tool_id
    if (parent and parent.id) == session.parent_id and tool_id == session.parent_tool_id:
        return False
    session.parent, session.parent_tool_id = parent, tool_id
    return True


def _link_summaries(source: Source, touched: list[Session]) -> None:
    """A summary line titles the session that holds its leaf: its own file's, or
    another file's of the same project (Claude Code writes them into the next session).

    The sessions holding the leaves come from one query per LEAF_QUERY leaves, not
    two per summary line: older Claude Code versions wrote a summary line for every
    conversation a file continued, thousands over a first index.
    """
    links = [(s, link) for s in touched for link in getattr(s, "new_summaries", []) if link.title]
    if not links:
        return
    holders: dict[str, list[tuple[int, str]]] = {}  # leaf id: (session id, project) of each holder
    leaf_ids = sorted({link.leaf_id for _, link in links})
    for start in range(0, len(leaf_ids), LEAF_QUERY):
        found = Entry.objects.filter(
            session__source=source, entry_id__in=leaf_ids[start : start + LEAF_QUERY]
        )
        for session_id, entry_id, project_dir in found.values_list(
            "session_id", "entry_id", "session__project_dir"
        ):
            holders.setdefault(entry_id, []).append((session_id, project_dir))
    wanted: dict[int, str] = {}  # session id: title, the last summary to name a session wins
    for session, link in links:
        holding = holders.get(link.leaf_id, [])
        if any(session_id == session.id for session_id, _ in holding):
            wanted[session.id] = link.title
        elif others := sorted(
            i for i, project in holding if project == session.project_dir and i != session.id
        ):
            wanted[others[0]] = link.title
    # Each compares with the stored title (nothing was saved above), or the one this pass
    # has in memory for a session it read.
    by_id = {s.id: s for s in touched if s.id in wanted}
    missing = [session_id for session_id in wanted if session_id not in by_id]
    by_id.update(Session.objects.only("id", "summary_title").in_bulk(missing))
    titled = []
    for session_id, title in wanted.items():
        owner = by_id.get(session_id)
        if owner is not None and owner.summary_title != title:
            owner.summary_title = title
            titled.append(owner)
    _update_sessions(titled, ("summary_title",))


LEAF_QUERY = 5000  # leaf ids per query: well under SQLite's limit on a statement's parameters


def _update_sessions(sessions: list[Session], attnames: tuple[str, ...]) -> None:
    """Write these fields (attnames) of these sessions in one executemany: a save() per
    session cost a cold index more than the queries that found the links, and
    bulk_update's CASE expressions took as long to compile."""
    if not sessions:
        return
    quote, mark = connection.ops.quote_name, _placeholder(connection.vendor)
    to_db = dict(_statements(connection.vendor).session_values)  # as the session saves send them
    columns = ", ".join(f"{quote(Session._meta.get_field(name).column)} = {mark}" for name in attnames)
    rows = [[*(to_db[name](s, name) for name in attnames), s.id] for s in sessions]
    with _driver_cursor() as cursor:
        cursor.executemany(f"UPDATE {quote(Session._meta.db_table)} SET {columns} WHERE id = {mark}", rows)  # noqa: S608
