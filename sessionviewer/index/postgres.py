"""PostgreSQL's full-text index during a first index: built once after the rows, not row by row.

A GIN index takes each new row's words one by one; built over rows already there, it sorts
them all in memory first. On the history corpus that was 1.6 s against 3.3 s of the server's
time (bench/README.md). So a pass that starts on an empty entry table, with much to read,
drops the index and builds it again when its rows are in. Search still finds the same
entries meanwhile, by reading every row.

A pass killed before the end leaves the index missing; the next pass builds it first, unless
the table is still empty. Two indexers that start on an empty table together both leave the
index out, and the first to finish builds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import OperationalError, connection, transaction

from sessionviewer.index.phases import Phases

NAME = "entry_text_search"
# As migration 0026 made it: the words the indexer found in an ASCII text, else the function's.
CREATE = (
    f"CREATE INDEX IF NOT EXISTS {NAME} ON sessionviewer_entry USING gin "
    "(COALESCE(search_words, sessionviewer_search_vector(text)))"
)
AFTER_BYTES = 16 * 1024 * 1024  # as passes.PARALLEL_BYTES: a pass that reads in a second process
# Dropping the index waits for every reader of the table: no longer than this.
LOCK_WAIT = "2s"


@contextmanager
def text_index_after(bytes_to_read: int, phases: Phases) -> Iterator[None]:
    """For a pass with AFTER_BYTES or more to read, on a PostgreSQL database whose entry table
    is empty: the full-text index left out while the pass writes, and built at its end (a
    write phase). Building it takes a pass on the table, which a small one would not repay."""
    if connection.vendor != "postgresql":
        yield
        return
    left_out = False
    with connection.cursor() as cursor:
        cursor.execute("SELECT EXISTS (SELECT FROM sessionviewer_entry)")
        empty = not cursor.fetchone()[0]
    # Inside a transaction (a test's) the index stays: it cannot be built while the rows'
    # foreign keys wait for the commit to be checked.
    if not empty or bytes_to_read < AFTER_BYTES or connection.in_atomic_block:
        build()  # a pass killed before its end left it out: nothing if it is there
    else:
        left_out = _drop()
    try:
        yield
    finally:
        if left_out:
            with phases.timing("write"):
                build()


def build() -> None:
    """The full-text index, if it is not there."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s) IS NULL", [NAME])
        if cursor.fetchone()[0]:
            cursor.execute(CREATE)


def _drop() -> bool:
    """Drop the full-text index; False if another transaction held the table too long."""
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_WAIT}'")
            cursor.execute(f"DROP INDEX IF EXISTS {NAME}")
    except OperationalError:  # lock_not_available: the index stays, and takes rows one by one
        return False
    return True
