"""What only SQLite needs: its write-ahead log copied in a thread, and the
full-text index (FTS5) filled once per group of files rather than per file.
"""

from __future__ import annotations

import logging
import os
import queue
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import connection

from sessionviewer.index.statements import driver_cursor, statements_for

log = logging.getLogger(__name__)


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
# The page cache a big pass holds (KiB; SQLite's default is 2,000). With the default's 125
# pages of 16 KB, each group read back from the log the pages it had just written, to fill
# the full-text index and to add to the entries' indexes: a cold index of the history made
# 62,000 page reads and 75,000 writes, 9,000 and 52,000 with this, and its writer spent 0.2 s
# less in the kernel (bench/README.md). SQLite takes the pages as it needs them.
BIG_PASS_CACHE_KIB = 64 * 1024


@contextmanager
def checkpointing(big: bool) -> Iterator[WalCheckpointer | None]:
    """For a big pass on a SQLite file: checkpoints in a thread rather than at each commit."""
    if not big or connection.vendor != "sqlite" or connection.is_in_memory_db():
        yield None
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        if cursor.fetchone()[0].lower() != "wal":
            yield None
            return
        # Each pragma's value for the pass, and the connection's own, given back after it.
        before = {}
        for name, value in _BIG_PASS_PRAGMAS.items():
            cursor.execute(f"PRAGMA {name}")
            before[name] = int(cursor.fetchone()[0])
            cursor.execute(f"PRAGMA {name}={value}")
    checkpointer = WalCheckpointer(str(connection.settings_dict["NAME"]), WAL_LIMIT)
    try:
        yield checkpointer
    finally:
        checkpointer.close()
        with connection.cursor() as cursor:
            for name, value in before.items():
                cursor.execute(f"PRAGMA {name}={value}")  # a smaller cache frees the pages past it


_BIG_PASS_PRAGMAS = {
    "wal_autocheckpoint": 0,  # the checkpointer's thread copies the log instead
    # When the log starts over, its file shrinks back to this: it grew with the pass.
    "journal_size_limit": WAL_LIMIT // 4,
    "cache_size": -BIG_PASS_CACHE_KIB,  # negative: KiB, not pages
}


class NewRows:
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
        with driver_cursor() as cursor:
            cursor.execute(statements_for(connection.vendor).index_new_text, [self.indexed_up_to, largest])
        self.indexed_up_to = largest

    @staticmethod
    def _largest_id() -> int:
        with driver_cursor() as cursor:  # a plain query: the ORM's aggregate costs 20x this
            cursor.execute(statements_for(connection.vendor).largest_entry_id)
            return cursor.fetchone()[0] or 0
