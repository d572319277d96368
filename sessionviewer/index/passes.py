"""A pass over the roots: which files changed, and their new rows written.

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
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, OperationalError, connection, transaction
from django.db.models import Exists, OuterRef, QuerySet
from django.utils import timezone

from sessionviewer import prices, readers
from sessionviewer.index import copies, fold, pending, tally, worker
from sessionviewer.index.busy import database_busy
from sessionviewer.index.idle import IdleWork
from sessionviewer.index.links import link_sessions, links_made, pending_links
from sessionviewer.index.locks import take_turn
from sessionviewer.index.memory import MemorySummary, snapshot_roots
from sessionviewer.index.phases import Phases
from sessionviewer.index.sqlite import NewRows, WalCheckpointer, checkpointing
from sessionviewer.index.statements import (
    file_savepoint,
    insert_sessions,
    save_session,
    write_files,
)
from sessionviewer.models import PendingWork, Session, Source
from sessionviewer.roots import RootSpec
from sessionviewer.row_codec import db_text

log = logging.getLogger(__name__)

BATCH = 500
# A pass with this much to read reads in a second process while this one writes (worker.Reading).
# 16 MB kept a small history (15 MB, bench/generate.py --small-history) in one process, its
# reading, writing and thread snapshots one after the other; the worker's start-up costs
# less than that on a second core (bench/README.md, 6 December 2026).
PARALLEL_BYTES = 4 * 1024 * 1024
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
    busy: list[str] = field(default_factory=list)  # sources locked or migrating: read next pass, no error
    # Files or steps the database refused (another writer's row, a value out of range): each
    # is in errors too, and tried again next pass; `manage.py index` exits 1 for them.
    refused: int = 0
    bad_lines: list[str] = field(default_factory=list)  # "path:line: why", the first BAD_LINES_KEPT
    touched: list[int] = field(default_factory=list)  # ids of the sessions read this pass
    memory: MemorySummary = field(default_factory=MemorySummary)  # the memory files' snapshots
    phases: Phases = field(default_factory=Phases)  # seconds by phase, for `index -v 2` and bench/
    unfolded_groups: int = 0  # groups committed since the tally's last fold (FOLD_GROUPS)

    def line(self) -> str:
        text = (
            f"{self.files} files ({self.opened} read), {self.sessions} sessions, "
            f"{self.entries} new entries, {self.problems} bad lines, {self.removed} removed, "
            f"{self.seconds:.2f}s"
        )
        if self.memory.changes:
            text += f", {self.memory.changes} memory changes"
        if self.errors:
            text += f", {len(self.errors)} error{'s' if len(self.errors) != 1 else ''}"
        if self.busy:
            text += f", {len(self.busy)} busy (read next pass)"
        return text


BAD_LINES_KEPT = 10_000  # of a pass's bad lines, for its summary: the pages list them all

Progress = Callable[[int, int, str], None]


def index_roots(
    specs: Iterable[RootSpec],
    progress: Progress | None = None,
    memory: Iterable[Path] = (),
    idle: IdleWork | None = None,
) -> IndexSummary:
    """Bring the index up to date with every root; roots not listed are left alone. memory:
    the Fluux memory roots whose memory and persona files to snapshot (index/memory.py).
    idle: work to do while the writer waits for the reading worker (index/idle.py), or on
    PostgreSQL beside it (_beside)."""
    started = time.perf_counter()
    summary = IndexSummary()
    memory = list(memory)
    memory_done: list[MemorySummary] = []  # by the writer while it waited for its reader (idle)
    read_whole: list[Session] = []  # the files read from their first line: they may hold copies
    linked: list[Session] = []  # the sessions whose links are made: their mark goes with the copies
    with _beside(idle):
        if idle is not None and memory:
            idle.later(lambda: memory_done.append(snapshot_roots(memory)))
        with _heap_frozen():
            _read_and_write(specs, summary, progress, idle, read_whole, linked)
        with summary.phases.timing("copies"):
            _count_copies_once(read_whole, summary, linked)
        with summary.phases.timing("tally"):
            _fold_tally()
    with summary.phases.timing("memory"):
        summary.memory = memory_done[0] if memory_done else snapshot_roots(memory)
    summary.errors += summary.memory.errors
    with summary.phases.timing("prices"):
        prices.keep_rates()  # what the library was asked, for the next process
    summary.seconds = time.perf_counter() - started
    return summary


def _read_and_write(
    specs: Iterable[RootSpec],
    summary: IndexSummary,
    progress: Progress | None,
    idle: IdleWork | None,
    read_whole: list[Session],
    linked: list[Session],
) -> None:
    """Survey and plan every root, then write each changed file as the reading worker reads it."""
    parallel_from = PARALLEL_BYTES if CPUS > 1 else None
    with worker.Reading(parallel_from=parallel_from, read_while_starting=True) as reading:
        surveys = []
        for spec in specs:
            with summary.phases.timing("scan"):
                survey = _survey(spec, summary)
            if survey is not None:
                surveys.append(survey)
                # Once a pass is big enough its worker starts: its interpreter comes up
                # while the other roots are surveyed and the files planned.
                reading.expect(sum(s.bytes_to_read for s in surveys))
        passes = []
        for survey in surveys:
            with summary.phases.timing("scan"):
                root_pass = _plan_changes(survey, summary)
            passes.append(root_pass)
            for plan in root_pass.plans:
                plan.number = reading.add(plan.job)
            reading.send_jobs()  # to read while the next root is planned
        reading.close_jobs()
        with checkpointing(big=reading.worker is not None) as checkpointer:
            for root_pass in passes:
                with summary.phases.timing("write"):
                    _write_changes(
                        root_pass,
                        reading,
                        summary,
                        progress,
                        len(reading.jobs),
                        checkpointer,
                        read_whole,
                        idle=idle,
                        linked=linked,
                    )


@contextmanager
def _beside(idle: IdleWork | None) -> Iterator[None]:
    """On PostgreSQL the writer waits for the server, not for its reader: the idle work (the
    long sessions' threads, the memory snapshots) runs in a thread beside it, from the first
    group's commit to the end of the copies (bench/README.md, `pgoverlap`). Not when the pass
    runs inside a transaction (a test's): the thread's own connection could not see its rows."""
    if idle is None or connection.vendor != "postgresql" or connection.in_atomic_block:
        yield
        return
    with idle.beside():
        yield


COPIES_ATTEMPTS = 3


def _count_copies_once(read_whole: list[Session], summary: IndexSummary, linked: list[Session]) -> None:
    """Once a pass, after every root: a copy may sit in another root, and looking for
    shared replies went over the whole reply index once per root. The sessions whose links
    the pass made lose their links mark (models.PendingWork) in the same transaction as their
    copies' mark (copies.count_once_pending); if settling fails, on their own."""
    try:
        for attempt in range(COPIES_ATTEMPTS):
            try:
                with transaction.atomic():
                    copies.count_once_pending(read_whole, linked)
                break
            except OperationalError as error:
                # Stopped by the database to end a deadlock with another indexer's append: no
                # later pass reads these files again to settle them, so this one tries again.
                if not database_busy(error) or attempt == COPIES_ATTEMPTS - 1:
                    raise
                log.warning("finding the copied replies waited too long (%s): trying again", error)
    except Exception as error:  # noqa: BLE001 - the sessions are in; a copied reply counts twice
        summary.errors.append(f"finding replies copied between files failed: {error!r}")
        summary.refused += isinstance(error, DatabaseError)
        log.error("finding the copied replies failed", exc_info=error)
        try:
            with transaction.atomic():
                links_made(linked)
        except DatabaseError as error:  # the next pass links them again, as after a pass cut off
            log.warning("clearing the sessions' links marks failed", exc_info=error)


def _fold_tally() -> None:
    """Fold the tally's pending rows (index/tally.py). Rows left pending leave the pages
    right, only slower to read: a failure is logged, and the next pass folds them."""
    try:
        tally.fold_pending()
    except DatabaseError as error:
        log.warning("folding the list's counts failed (the next pass tries again)", exc_info=error)


@contextmanager
def _heap_frozen() -> Iterator[None]:
    """Keep the cycle collector off the objects that were there before the pass, and
    collect less often during it.

    A pass allocates enough to set off a full collection, which went through all
    of Django's objects too: a fiftieth of a cold index's writing. gc.freeze()
    leaves them out of every collection until the pass ends; they are no garbage.
    The rows, batches and sessions a pass makes hold no cycles and go by reference
    counting, so the youngest generation is collected after WRITER_GC_THRESHOLD
    allocations rather than Python's 700, as in the reading worker: on the history's
    cold index the writer spent 0.49-0.51 s in 800 collections, 0.12-0.13 s in 110
    (gc.callbacks; bench/README.md).
    """
    gc.freeze()
    thresholds = gc.get_threshold()
    gc.set_threshold(WRITER_GC_THRESHOLD, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


WRITER_GC_THRESHOLD = worker.WORKER_GC_THRESHOLD


def watch_roots(
    specs: list[RootSpec],
    on_pass: Callable[[IndexSummary], None],
    stop_event: threading.Event | None = None,
    memory: list[Path] = (),
) -> None:
    """Index the roots (and snapshot the memory roots) again whenever files under them
    change, until stop_event is set.

    A pass is incremental (unchanged files are not opened), so running it over all
    roots is as cheap as working out which files changed, and never misses one.
    """
    from watchfiles import watch

    paths = [spec.path for spec in specs if spec.path.exists()]
    paths += [root for root in memory if root.exists() and not any(root.is_relative_to(p) for p in paths)]
    if not paths:
        raise FileNotFoundError("none of the roots exists: nothing to watch")
    for _changes in watch(*paths, debounce=300, step=50, stop_event=stop_event, raise_interrupt=False):
        try:
            summary = index_when_free(specs, memory=memory, stop_event=stop_event)
        except Exception as error:  # noqa: BLE001 - the database gone, say: the next change tries again
            log.error("an index pass failed", exc_info=error)
            summary = IndexSummary(errors=[f"the pass stopped: {error!r}"])
        if summary is not None:
            on_pass(summary)


# How long a pass the database was too busy for waits before it starts again (--watch).
BUSY_RETRY_SECONDS = 10.0


def index_when_free(
    specs: Iterable[RootSpec],
    progress: Progress | None = None,
    memory: Iterable[Path] = (),
    stop_event: threading.Event | None = None,
) -> IndexSummary | None:
    """index_roots, started again every BUSY_RETRY_SECONDS for as long as the database is
    busy (database_busy); None if stop_event is set while it waits."""
    stop_event = stop_event or threading.Event()
    while True:
        try:
            return index_roots(specs, progress, memory)
        except OperationalError as error:
            if not database_busy(error):
                raise
            log.warning("the database is busy (%s): the pass starts again in %g s", error, BUSY_RETRY_SECONDS)
            if stop_event.wait(BUSY_RETRY_SECONDS):
                return None


# Files are written in groups, each group one transaction: a commit per file costs
# more than the writing (and leaves FTS5 many small segments to merge), while one
# file's rows and its offset still always change together.
GROUP_BYTES = 32 * 1024 * 1024
GROUP_FILES = 500
# The tally's pending rows are folded every this many groups, and at the pass's end: a big
# pass leaves no millions of rows for the pages to sum, and a fold, which writes each value
# it touches again, is not paid for every group (bench/README.md).
FOLD_GROUPS = 4


@dataclass
class _Work:
    found: readers.SessionFile
    stat: os.stat_result | readers.Stamp  # a database's session: its stamp (SessionFile.stamp)
    session_id: int | None


@dataclass
class _Survey:
    """A root's files and which of them changed, before anything is planned or read."""

    source: Source
    found: list[readers.SessionFile]
    known: set[str]  # keys of the sessions the index had before the pass
    kept: list[str]  # key prefixes of sessions discovery could not look at: they stay
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
    source = _claimed_source(str(root), fmt)
    if source.format != fmt:
        # The root was re-tagged: what was read under the old format means nothing now.
        with transaction.atomic():
            copies.delete_sessions(source.sessions.all())
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
        key: (session_id, state, read_offset, head)
        for session_id, key, read_offset, head, *state in source.sessions.values_list(
            "id", "key", "read_offset", "file_head", "file_size", "file_mtime_ns", "file_inode"
        )
    }
    kept = [item for item in found if isinstance(item, readers.Kept)]
    found = [item for item in found if not isinstance(item, readers.Kept)]
    summary.busy += [item.reason for item in kept]
    changed, bytes_to_read = [], 0
    for session_file in found:
        summary.files += 1
        try:
            stat = session_file.stamp or os.stat(session_file.path)
        except OSError as error:  # vanished or unreadable between discovery and now
            summary.errors.append(f"{session_file.path}: {error}")
            continue
        session_id, state, read_offset, head = known.get(session_file.key, (None, None, 0, ""))
        # A database's session also changes with its generation (a rewrite keeps its seqs).
        rewritten = session_file.stamp is not None and head != session_file.identity
        if state != [stat.st_size, stat.st_mtime_ns, stat.st_ino] or rewritten:
            changed.append(_Work(session_file, stat, session_id))
            grew = state is not None and not rewritten and _grew(read_offset, state[2], stat)
            bytes_to_read += max(stat.st_size - (read_offset if grew else 0), 0)
    return _Survey(source, found, set(known), [k.key_prefix for k in kept], changed, bytes_to_read)


def _claimed_source(path: str, fmt: str) -> Source:
    """This machine's source for the root. A root indexed before machines were named has
    none: the first machine to index its path claims it, its sessions with it (one UPDATE,
    so of two indexers racing for it one wins and the other makes its own)."""
    machine = settings.SESSIONVIEWER_MACHINE
    source = Source.objects.filter(machine=machine, path=path).first()
    if source is None:
        Source.objects.filter(machine="", path=path).update(machine=machine)
        source, _ = Source.objects.get_or_create(machine=machine, path=path, defaults={"format": fmt})
    return source


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
            plans.append(plan_file(survey.source, work))
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
    read_whole: list[Session] | None = None,
    *,
    idle: IdleWork | None = None,
    linked: list[Session],
) -> None:
    """Write a root's changed files as they are read, drop its vanished ones, link what changed."""
    source = root_pass.survey.source
    touched: list[Session] = []
    for group in _groups(root_pass.plans):
        if checkpointer is not None:
            checkpointer.keep_log_bounded()
        with transaction.atomic():
            if any(plan.reset for plan in group):
                # A file read again gives up the copies its session held (_index_file): not
                # while another indexer settles them (copies.count_once). First, before any row.
                take_turn("copies")
            new_rows = NewRows()
            small = _NewFiles(summary, touched)
            for plan in group:
                if not reading.ready(plan.number):
                    small.write()
                    new_rows.index_text()  # while the worker reads on: outside any file's savepoint
                    if idle is not None:  # first the work waiting for this moment
                        with summary.phases.timing("idle"):
                            idle.run_while(lambda: not reading.ready(plan.number))  # noqa: B023 - called here
                    with summary.phases.timing("read"):  # and then the last files, while it still reads
                        while not reading.ready(plan.number) and reading.read_from_the_end(plan.number):
                            pass
                if progress:
                    progress(plan.number + 1, total, plan.work.found.key)
                batches = summary.phases.timed("read", reading.batches(plan.number))
                if plan.session.id is None:  # new: read in one batch, it waits to be written with others
                    if (first := _first_batch(plan, batches, summary)) is None:
                        continue  # its read failed, recorded
                    if first.last:
                        small.add(plan, first)
                        continue
                    batches = itertools.chain([first], batches)
                small.write()  # first: sessions keep the order of their files
                _index_one(plan, batches, summary, touched)
                if idle is not None and touched and touched[-1] is plan.session:
                    idle.written(plan.session)
            small.write()
            new_rows.index_text()
        if checkpointer is not None:
            checkpointer.request()  # the group is committed: its pages can go into the database
        if idle is not None:
            idle.committed()
        summary.unfolded_groups += 1
        if summary.unfolded_groups >= FOLD_GROUPS:  # a first index's pending rows, as it goes
            _fold_tally()
            summary.unfolded_groups = 0
    gone = root_pass.survey.known - {f.key for f in root_pass.survey.found}
    gone = {key for key in gone if not key.startswith(tuple(root_pass.survey.kept))}
    if gone:
        summary.removed += len(gone)
        with transaction.atomic():
            copies.delete_sessions(Session.objects.filter(source=source, key__in=gone))
    try:
        with summary.phases.timing("links"):
            # With those a pass cut off before its links left: their files are not read again.
            linking = touched + pending_links(source, touched)
            if len(linking) > len(touched):
                # In the files' order, as one pass that was not cut off links them: of two
                # summary lines naming one session, the later file's wins.
                order = {found.key: n for n, found in enumerate(root_pass.survey.found)}
                linking.sort(key=lambda s: order.get(s.key, -1))
        if linking:
            with transaction.atomic(), summary.phases.timing("links"):
                link_sessions(source, linking)
            # Their mark goes after the copies, in the transaction that takes the copies'
            # (_count_copies_once). A pass cut off before then links them again next time, as
            # one cut off before its links.
            linked += linking
    except Exception as error:  # noqa: BLE001 - the sessions are in; their links wait for the next pass
        summary.errors.append(f"{source.path}: linking its sessions failed: {error!r}")
        summary.refused += isinstance(error, DatabaseError)
        log.error("linking the sessions of %s failed", source.path, exc_info=error)
    if touched:
        summary.touched += [s.id for s in touched]
        if read_whole is not None:
            read_whole += [s for s in touched if s.read_whole]
    source.indexed_at = timezone.now()
    source.save(update_fields=["indexed_at"])
    summary.sessions += source.sessions.count()


def _index_one(
    plan: _Plan, batches: Iterable[worker.Batch], summary: IndexSummary, touched: list[Session]
) -> None:
    """Write one file in its own savepoint: whatever goes wrong, only it is left out."""
    counts = summary.entries, summary.problems, len(summary.bad_lines)
    try:
        with file_savepoint():
            touched.append(_index_file(plan, batches, summary))
    except Exception as error:  # noqa: BLE001 - no file may stop the pass
        summary.entries, summary.problems, kept = counts  # none of its rows stayed
        del summary.bad_lines[kept:]
        _left_out(plan, error, summary)


def _first_batch(plan: _Plan, batches: Iterator[worker.Batch], summary: IndexSummary) -> worker.Batch | None:
    """A new file's first batch; None when reading it failed (recorded as _index_one would)."""
    try:
        return next(batches)
    except Exception as error:  # noqa: BLE001 - no file may stop the pass
        _left_out(plan, error, summary)
    summary.opened += 1  # it was opened, as _index_file counts it
    return None


def _left_out(plan: _Plan, error: Exception, summary: IndexSummary) -> None:
    """A file the pass could not index: locked since discovery (as it was, until next pass),
    or unreadable, a value the database refuses, a bug (recorded on its session). A busy
    database is no file's fault: the pass stops there, keeping nothing."""
    if isinstance(error, readers.SourceBusy):
        summary.busy.append(str(error))
    elif database_busy(error):
        raise error
    else:
        _record_failure(plan, error, summary)


class _NewFiles:
    """New files read in one batch each (most files of a first index), written together:
    their sessions in one statement, their rows in another, in one savepoint. A statement
    and two savepoints per file cost a cold index of thousands of small sessions more than
    writing their rows. Should the database refuse anything, each file is written again
    alone (_index_one), so that only the file at fault is left out, as always."""

    # Bounds on what waits in memory, so that it stays what one large batch holds.
    FILES = 200
    BYTES = 4 * 1024 * 1024

    def __init__(self, summary: IndexSummary, touched: list[Session]):
        self.summary, self.touched = summary, touched
        self.waiting: list[tuple[_Plan, worker.Batch]] = []
        self.size = 0

    def add(self, plan: _Plan, batch: worker.Batch) -> None:
        self.waiting.append((plan, batch))
        self.size += plan.bytes_to_read
        if len(self.waiting) >= self.FILES or self.size >= self.BYTES:
            self.write()

    def write(self) -> None:
        if not self.waiting:
            return
        waiting, self.waiting, self.size = self.waiting, [], 0
        summary = self.summary
        counts = summary.entries, summary.problems, len(summary.bad_lines), summary.opened
        try:
            with file_savepoint():
                sessions = [_fold_new_file(plan, batch, summary) for plan, batch in waiting]
                insert_sessions(sessions)
                pending.mark([session.id for session in sessions], (pending.COPIES, pending.LINKS))
                write_files(
                    [(s, b.rows, b.problems, b.findings) for s, (_, b) in zip(sessions, waiting, strict=True)]
                )
        except Exception as error:  # noqa: BLE001 - one file at fault: find it by writing each alone
            if database_busy(error):  # no file's fault: the pass stops, keeping nothing
                raise
            summary.entries, summary.problems, kept, summary.opened = counts
            del summary.bad_lines[kept:]
            for plan, batch in waiting:
                plan.session.id = None
                plan.session._state.adding = True
                _index_one(plan, iter([batch]), summary, self.touched)
            return
        self.touched += sessions


def _fold_new_file(plan: _Plan, batch: worker.Batch, summary: IndexSummary) -> Session:
    """What _index_file does with a new file's one batch, but the writing."""
    session = plan.session
    summary.opened += 1
    _count_batch(plan, batch, summary)
    batch.state.copy_to(session)
    _record_file_state(session, plan, batch)
    with summary.phases.timing("prices"):
        _price(session)
    session.new_summaries = list(batch.summaries)
    session.read_whole = session.copies_pending = session.links_pending = True
    return session


def _record_failure(plan: _Plan, error: Exception, summary: IndexSummary) -> None:
    """A file that could not be indexed: its error goes on its session, shown on the list
    and its page, and into the pass's summary. Its file state is not recorded, so the next
    pass tries it again; what an earlier pass indexed of it stays."""
    path = plan.work.found.path
    message = str(error) if isinstance(error, OSError | DatabaseError) else f"{type(error).__name__}: {error}"
    message = db_text(readers.without_lone_surrogates(message))[:ERROR_LENGTH]
    summary.errors.append(f"{path}: {message}")
    if isinstance(error, DatabaseError):
        summary.refused += 1
    if not isinstance(error, OSError | DatabaseError):  # a bug, not the input's fault: its traceback helps
        log.error("indexing %s failed", path, exc_info=error)
    try:
        with file_savepoint():
            if plan.work.session_id:
                Session.objects.filter(id=plan.work.session_id).update(index_error=message)
            elif not isinstance(error, FileNotFoundError):  # new, and still there: a session to show it
                session = Session(source=plan.session.source, key=plan.work.found.key)
                _apply_discovery(session, plan.work.found)
                session.file_size, session.index_error = -1, message  # -1: read it again next pass
                save_session(session)
    except DatabaseError as second:
        summary.errors.append(f"{path}: the error could not be recorded: {second}")


ERROR_LENGTH = 2000


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
    # An append: the session's totals as read here, which its new lines are added to as
    # they are when it is written (copies.on_totals_now). None: new or read again whole.
    totals_read: dict | None = None

    @property
    def bytes_to_read(self) -> int:
        return self.work.stat.st_size - self.job.start_offset


def plan_file(source: Source, work: _Work) -> _Plan:
    found, stat = work.found, work.stat
    session = (
        _with_its_marks().get(id=work.session_id)
        if work.session_id
        else Session.unsaved(source=source, key=found.key)
    )
    start_offset = start_line = 0
    reset = False
    totals_read = None
    if session.id and _can_append(session, found, stat):
        start_offset, start_line = session.read_offset, session.read_line
        totals_read = copies.totals_of(session)
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
        max_event_bytes=settings.SESSIONVIEWER_MAX_EVENT_BYTES,
        root=_root_of(source.path),
        size=max(stat.st_size - start_offset, 0),
        findings_key=settings.SECRET_KEY,
        high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY,
    )
    return _Plan(work, session, reset, job, totals_read=totals_read)


def _with_its_marks() -> QuerySet[Session]:
    """Sessions, each with its marks (PendingWork) as copies_pending and links_pending: an
    append carries on from a pass cut off before its work, in the statement that reads it."""
    marks = PendingWork.objects.filter(session=OuterRef("pk"))
    return Session.objects.annotate(
        copies_pending=Exists(marks.filter(work=pending.COPIES)),
        links_pending=Exists(marks.filter(work=pending.LINKS)),
    )


@functools.cache
def _root_of(path: str) -> Path:
    """A source's root as a Path, made once rather than once per file planned."""
    return Path(path)


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
        session.findings.all().delete()
        session.copied_usage.all().delete()  # its totals start over (copies.count_once)
        session.snapshots.all().delete()  # only an appended file's thread is extended (transcripts)
    elif session.id:
        # Problems past the offset (a cut-off last line) are looked at again.
        retried = session.problems.filter(offset__gte=plan.job.start_offset).delete()[0]
    summary.opened += 1
    summaries: list[worker.SummaryLink] = []
    # Read whole, it may hold copies: until this pass settles them (or one after it, should
    # this one be cut off first), the session says so.
    session.copies_pending = session.copies_pending or plan.job.start_offset == 0
    # Its summary lines past where this pass starts wait for its root's links (links.py), this
    # pass's or the next's; and any a pass cut off before them wrote, which it never linked.
    start_line = plan.job.start_line
    carried = session.links_pending and session.links_after_line < start_line
    session.links_after_line = session.links_after_line if carried else start_line
    session.links_pending = True
    for batch in batches:
        batch.state.copy_to(session)
        session.problem_count -= retried
        summaries += batch.summaries
        _count_batch(plan, batch, summary)
        if batch.last:
            # The last batch: one save with the file's state (most files are one batch).
            _record_file_state(session, plan, batch)
            if plan.totals_read is not None:
                copies.on_totals_now(session, plan.totals_read)
            with summary.phases.timing("prices"):
                _price(session)
            save_session(session)
        elif session.id is None:
            save_session(session)  # the rows need its id
        write_files([(session, batch.rows, batch.problems, batch.findings)])
    if session.id is not None:
        pending.mark(
            [session.id], (pending.COPIES, pending.LINKS) if session.copies_pending else (pending.LINKS,)
        )
    session.new_summaries = None if carried else summaries  # None: read back from its entries
    session.read_whole = plan.job.start_offset == 0  # only such a file can bring a copy (copies.py)
    return session


def _count_batch(plan: _Plan, batch: worker.Batch, summary: IndexSummary) -> None:
    summary.entries += len(batch.rows)
    if batch.problems:
        summary.problems += len(batch.problems)
        room = BAD_LINES_KEPT - len(summary.bad_lines)
        summary.bad_lines += [
            # In line order: lines cut for depth are found after the reader's own problems.
            f"{plan.work.found.path}:{p.line}: {p.message}"
            for p in sorted(batch.problems, key=lambda p: p.line)[:room]
        ]


def _price(session: Session) -> None:
    # A bad prices.toml must not stop the index: the costs wait for `manage.py reprice`.
    try:
        session.apply_prices()
    except prices.PricesFileError as error:
        log.warning("%s: sessions are not priced", error)


def _record_file_state(session: Session, plan: _Plan, last: worker.Batch) -> None:
    # A last line still being written: keep the file "changed" so the next pass looks again.
    stat = plan.work.stat
    appended_onto = session.file_head if session.id and not plan.reset else None
    session.file_size = -1 if last.pending_tail else stat.st_size
    session.file_mtime_ns, session.file_inode = stat.st_mtime_ns, stat.st_ino
    session.read_offset, session.read_line = last.end_offset, last.end_line
    session.file_head = last.head_hash
    if plan.work.found.stamp is not None and appended_onto not in (None, last.head_hash):
        session.file_head = ""  # rewritten between discovery and the read: read it whole next pass
    session.indexed_at = timezone.now()
    session.index_error = ""


def _grew(read_offset: int, inode: int, stat: os.stat_result | readers.Stamp) -> bool:
    """Same file, not shorter than what was read: an append, if its first bytes match too."""
    return read_offset > 0 and stat.st_ino == inode and stat.st_size >= read_offset


def _can_append(session: Session, found: readers.SessionFile, stat: os.stat_result | readers.Stamp) -> bool:
    """A true append: same file, not shorter than what was read, same first bytes (a
    database's session: same database, same generation, no fewer events)."""
    if not _grew(session.read_offset, session.file_inode, stat):
        return False
    if found.stamp is not None:
        return found.identity == session.file_head
    return worker.head_hash(found.path, session.read_offset) == session.file_head


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
        session.kind = found.parent_kind
    if found.parent_tool_id:
        session.parent_tool_id = found.parent_tool_id
    room = session.extra.get("room")
    session.extra = {**session.extra, **found.extra}
    if room:  # found from "nick@muc" senders: discovery only knows room domains
        session.extra["room"], session.peer_kind = True, "group"
