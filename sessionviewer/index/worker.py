"""Turning a session file's new lines into index rows, in this process or beside it.

Reading is pure Python and writing is mostly SQLite's own C code, so a cold index
of many megabytes reads in a second process while this one writes: on two cores
the two halves overlap instead of adding up (bench/bench_index.py). Small passes,
the usual case for the watcher, read in this process: starting a process would
cost more than the reading.

Both ways run the same generator, read_job(), over the same Job, so they give the
same rows. This module imports no Django: the worker (serve(), in `python -c
WORKER`) imports only this module, fold.py, rows.py, findings.py, row_codec.py, the readers and orjson.

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
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING

from sessionviewer import readers
from sessionviewer.index.findings import Finding, entry_findings
from sessionviewer.index.fold import SessionState, fold_entries, title_of
from sessionviewer.index.rows import entry_rows
from sessionviewer.readers.files import open_regular
from sessionviewer.row_codec import db_text, stored_id

if TYPE_CHECKING:
    import subprocess


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
    max_event_bytes: int = readers.MAX_EVENT_BYTES  # SESSIONVIEWER_MAX_EVENT_BYTES
    root: Path | None = None  # where the file was found: a link out of it is not read (readers/files.py)
    size: int = 0  # about how many bytes it reads: what the parent may hold of it (Reading.read_from_the_end)
    # The key of the possible secrets' fingerprints (settings.SECRET_KEY); "": not scanned (findings.py).
    findings_key: str = ""
    high_entropy: bool = False  # SESSIONVIEWER_SECRETS_HIGH_ENTROPY


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
    # The entry columns (entry_rows), session_id still None; marshalled after it in the pipe.
    rows: list[list]
    problems: list[readers.Problem]
    summaries: list[SummaryLink]  # summary lines with a leaf, linked once all files are in
    state: SessionState  # the session after these lines
    findings: list[Finding] = field(default_factory=list)  # possible secrets in these lines (findings.py)
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
        job.path,
        job.format,
        job.start_offset,
        job.start_line,
        keep_head=HEAD_BYTES,
        max_event_bytes=job.max_event_bytes,
        root=job.root,
    )
    rules = readers.format_of(job.format)
    items = iter(reader)
    batch = list(islice(items, job.batch_size))
    while True:
        following = list(islice(items, job.batch_size))
        entries, problems = [], []
        for item in batch:
            (entries if type(item) is readers.Entry else problems).append(item)
        fold_entries(job.state, entries)
        rows = entry_rows(entries, rules, job.for_sqlite, problems, str(job.path))
        job.state.problem_count += len(problems)
        last = not following
        done = Batch(
            job=number,
            rows=rows,
            problems=problems,
            summaries=[
                SummaryLink(stored_id(e.leaf_id), db_text(title_of(e.summary)))
                for e in entries
                if e.kind == readers.SUMMARY and e.leaf_id
            ],
            state=job.state,
            findings=entry_findings(entries, job.findings_key, high_entropy=job.high_entropy)
            if job.findings_key
            else [],
            last=last,
            end_offset=reader.end_offset if last else 0,
            end_line=reader.end_line if last else 0,
            pending_tail=reader.pending_tail if last else False,
            head_hash=_head(job, reader) if last else "",
        )
        # The rows are all that is written: the entries go before the batch is handed
        # over, so that the texts are not held beside the rows while they are written
        # or sent (a 60 MB line's text is in both, bench/README.md).
        del batch, entries, rows
        yield done
        del done
        if last:
            return
        batch = following


def _head(job: Job, reader: readers.SessionReader) -> str:
    """What the next pass compares to tell an append from a rewrite: the file's head hash,
    or what a reader of a non-file says instead (a database session's generation)."""
    if reader.identity is not None:
        return reader.identity
    return head_hash(job.path, reader.end_offset, reader.head)


def head_hash(path: Path, read_to: int, head: bytes = b"") -> str:
    """The hash of a file's first HEAD_BYTES, or of what was read of it if less.

    head: the file's first bytes as a reader kept them (SessionReader.keep_head),
    used when they cover what is hashed; otherwise the file is opened for them.
    """
    size = min(HEAD_BYTES, read_to)
    if len(head) < size:
        with open_regular(path) as handle:
            head = handle.read(size)
    return hashlib.sha256(head[:size]).hexdigest()


HEAD_BYTES = 4096


# --- Reading in this process, or in a worker process -----------------------------------------------------


class ReadFailed(OSError):
    """A file the worker process could not read (it vanished, or is unreadable)."""


@dataclass
class _Failure:
    job: int
    error: str
    os_error: bool
    busy: bool = False  # readers.SourceBusy: the parent leaves the file for the next pass


@dataclass(frozen=True)
class SkipTo:
    """To the worker: the jobs before this number were read by the parent."""

    number: int


@dataclass(frozen=True)
class StopAt:
    """To the worker: the jobs from this number on are read by the parent (Reading.read_from_the_end)."""

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

    While the caller waits for the worker, it can read the last jobs itself
    (read_from_the_end): on two cores, a pass of many small files kept the writer
    waiting for the worker about a quarter of the time it wrote.
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
        # The jobs from stop_at on are read here (read_from_the_end): their batches as the
        # pipe takes them (_for_the_pipe), and the error that ended a read, until asked for.
        self.stop_at: int | None = None
        self.read_at_end: dict[int, list[list[bytes] | Exception]] = {}
        self.bytes_at_end = 0

    @classmethod
    def of(cls, jobs: list[Job], parallel: bool) -> Reading:
        """These jobs, all read by a worker process (parallel) or all here."""
        reading = cls(parallel_from=0 if parallel else None)
        if parallel and jobs:
            reading.start_worker()
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
            self.start_worker()

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

    def start_worker(self) -> None:
        """Start the reading process (expect() and of() call this; tests wrap it to watch the order)."""
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

    def _send(self, message: list[Job] | SkipTo | None) -> None:
        """Jobs, a skip, or None: no more jobs."""
        with suppress(BrokenPipeError):  # the worker died: batches() says so
            write_all(self.worker.stdin.fileno(), pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def ready(self, number: int) -> bool:
        """Whether job number's first batch can be taken without waiting for the worker.

        The pipe is asked, not the buffer in front of it: a small batch already in
        the buffer reads as not ready, which only costs the caller a wait not taken.
        """
        if self.worker is None or number in self.read_at_end or self._reads_here(number):
            return True
        readable, _, _ = select.select([self.worker.stdout], [], [], 0)
        return bool(readable)

    def read_from_the_end(self, number: int) -> bool:
        """While job number is not ready: read the last job the worker still has ahead of it,
        here, and keep its batches until they are asked for. False when there is none to
        take: the jobs are not all added, the worker is near the end, or END_BYTES are held.

        The worker is told first (StopAt) and reads in order, far behind it (END_MARGIN):
        should it have begun the job all the same, what it hands over of it comes after every
        job the caller takes from the pipe, and is never read.
        """
        if self.worker is None or self.reading_here or not self.all_added:
            return False
        last = (len(self.jobs) if self.stop_at is None else self.stop_at) - 1
        if last - number <= END_MARGIN or self.bytes_at_end + self.jobs[last].size > END_BYTES:
            return False
        self._send(StopAt(last))
        self.stop_at = last
        job = self.jobs[last]
        self.bytes_at_end += job.size
        # Pickled as the worker would send them: memory holds about the rows' size, and each
        # batch keeps the session's state as it was after it (read_job folds into one state).
        kept = self.read_at_end[last] = []
        try:
            for batch in read_job(job, last):
                kept.append(_for_the_pipe(batch))
        except Exception as error:  # noqa: BLE001 - raised when the job is asked for, as read here
            kept.append(error)
        return True

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
        if number in self.read_at_end:
            for item in self.read_at_end.pop(number):
                if isinstance(item, Exception):
                    raise item
                yield _from_the_pipe(item)
            return
        if self.worker is None:
            yield from read_job(self.jobs[number], number)
            return
        if self._reads_here(number):
            self.read_here += 1
            if number < len(self.jobs) - 1:
                self._send(SkipTo(number + 1))
            elif self.all_added:
                # Nothing the worker reads is wanted now; it would read this last job
                # too, and hold a second copy of it: a 60 MB line's (bench/README.md).
                self.close()
            yield from read_job(self.jobs[number], number)
            return
        while True:
            item = self._next()
            if item.job < number:
                continue  # what is left of a job the caller gave up on, or read here
            if isinstance(item, _Failure):
                raise (readers.SourceBusy if item.busy else ReadFailed if item.os_error else RuntimeError)(
                    item.error
                )
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
        if isinstance(item, Batch):  # its marshalled rows follow: _for_the_pipe()
            data = self.worker.stdout.read(item.rows)
            if len(data) < item.rows:
                return None  # the worker ended halfway through
            item.rows = marshal.loads(data)  # noqa: S302 - as above
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


class ReadAhead:
    """Pickled batches waiting for the pipe: at most `limit` bytes of them, and always one.

    Given the pipe's descriptor (non-blocking), put() writes a batch itself when
    nothing waits before it and the pipe takes it all, and hands the writing thread only
    what the pipe would not take. Waking that thread for every batch cost the worker a
    seventh of its time (bench/README.md), and on a cold index of small files the pipe
    is mostly empty: the writer in the parent is waiting for it.
    """

    def __init__(self, limit: int, fd: int | None = None):
        self.limit, self.fd = limit, fd
        self.waiting: deque[bytes | memoryview | None] = deque()
        self.size = 0
        self.writing = False  # the thread holds a batch it took and has not written all of yet
        self.changed = threading.Condition()

    def put(self, data: bytes | None) -> None:
        with self.changed:
            if data is not None and self.fd is not None and not self.waiting and not self.writing:
                try:
                    written = os.write(self.fd, data)
                except BlockingIOError:
                    written = 0
                if written == len(data):
                    return
                data = memoryview(data)[written:]
            size = len(data or b"")
            while self.waiting and self.size + size > self.limit:
                self.changed.wait()
            self.waiting.append(data)
            self.size += size
            self.changed.notify_all()

    def get(self) -> bytes | memoryview | None:
        with self.changed:
            while not self.waiting:
                self.changed.wait()
            data = self.waiting.popleft()
            self.size -= len(data or b"")
            self.writing = data is not None
            self.changed.notify_all()
            return data

    def written(self) -> None:
        """What get() gave is all in the pipe: put() may write itself again."""
        with self.changed:
            self.writing = False


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
    out = batches_out.fileno()
    with suppress(AttributeError, OSError):  # as the jobs' pipe: more of a batch goes without the thread
        fcntl.fcntl(out, fcntl.F_SETPIPE_SZ, JOBS_PIPE_BYTES)
    os.set_blocking(out, False)
    ahead = ReadAhead(AHEAD_BYTES, out)
    skip_to = 0  # jobs before this one the parent read itself
    stop_at = sys.maxsize  # and from this one on

    def take_jobs() -> None:
        nonlocal skip_to, stop_at
        ended = False
        try:
            while True:
                message = pickle.load(jobs_in)  # noqa: S301 - our parent process wrote it
                if message is None:  # no more jobs; skips may still come
                    jobs.put(None)
                    ended = True
                elif isinstance(message, SkipTo):
                    skip_to = max(skip_to, message.number)
                elif isinstance(message, StopAt):
                    stop_at = min(stop_at, message.number)
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
            write_all(out, data)
            del data  # written: not held while the next batch is read
            ahead.written()

    threads = [
        threading.Thread(target=take_jobs, name="ingest-jobs", daemon=True),
        threading.Thread(target=write, name="ingest-writer"),
    ]
    for thread in threads:
        thread.start()
    try:
        number = 0
        while (job := jobs.get()) is not None:
            if number < skip_to or number >= stop_at:
                number += 1
                continue
            try:
                for batch in read_job(job, number):
                    for data in _for_the_pipe(batch):
                        ahead.put(data)
                    # Handed over: neither the batch nor what the pipe takes of it is held
                    # here while the next batch is read (only the read-ahead holds it).
                    del batch, data
            except OSError as error:
                busy = isinstance(error, readers.SourceBusy)
                failure = _Failure(number, f"{job.path}: {error}", os_error=True, busy=busy)
                ahead.put(pickle.dumps(failure, protocol=pickle.HIGHEST_PROTOCOL))
            except Exception as error:  # a bug: the indexer raises it, as it would reading in-process
                failure = _Failure(number, f"{job.path}: {type(error).__name__}: {error}", os_error=False)
                ahead.put(pickle.dumps(failure, protocol=pickle.HIGHEST_PROTOCOL))
            number += 1
    finally:
        ahead.put(None)
        threads[1].join()


def _for_the_pipe(batch: Batch) -> list[bytes]:
    """What the pipe takes of a batch: the batch pickled, holding its rows' length in
    place of them, then its rows marshalled.

    Rows are lists of str, int, bool, bytes and None (PostgreSQL's timestamps as ints:
    row_codec.db_microseconds), which marshal writes and reads back in about half to
    0.7x the time pickle takes, and the writer, which a cold index waits for, reads
    every row (Reading._take). They go on their own, not inside the pickle, which would
    copy them once more: a 60 MB line's blocks are in its rows (bench/README.md).
    """
    rows = marshal.dumps(batch.rows)
    batch.rows = len(rows)  # the rows themselves go now: only the marshalled ones are sent
    return [pickle.dumps(batch, protocol=pickle.HIGHEST_PROTOCOL), rows]


def _from_the_pipe(parts: list[bytes]) -> Batch:
    """A batch from what _for_the_pipe made of it."""
    batch = pickle.loads(parts[0])  # noqa: S301 - made in this process
    batch.rows = marshal.loads(parts[1])  # noqa: S302 - as above
    return batch


def write_all(fd: int, data: bytes) -> None:
    """Write all of data to a pipe, a write at a time.

    Not through a buffered file: stopping and continuing a process (Ctrl-Z then fg,
    or a profiler sampling it) can cut a large write to a pipe short, and Python's
    BufferedWriter was seen to drop the rest, leaving the reader a corrupt stream
    (tests/test_index_worker.py stops and continues a worker to check).
    """
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BlockingIOError:  # a non-blocking pipe (serve()), full: wait until it takes more
            select.select([], [fd], [])


AHEAD_BYTES = 16 * 1024 * 1024
# The parent reads jobs from the end only this far ahead of the one it waits for, and holds
# at most END_BYTES of them (Reading.read_from_the_end).
END_MARGIN = 64
END_BYTES = 16 * 1024 * 1024
WORKER_GC_THRESHOLD = 20_000  # allocations between two passes of the collector (Python's: 700)
JOBS_PIPE_BYTES = 1024 * 1024  # Linux's default limit for an unprivileged process
SEND_JOBS = 256  # jobs that wait to be sent together once the worker runs


# The worker's program. Not `python -m sessionviewer.index.worker`: that runs this module
# twice, as __main__ and then as the package's (what is pickled must name the
# latter), and the worker's start is time the writer reads jobs itself.
WORKER = (
    "import sys; from sessionviewer.index.worker import serve; serve(sys.stdin.buffer, sys.stdout.buffer)"
)
