"""What only SQLite needs (index/sqlite.py): the write-ahead log copied in a thread."""

import shutil
import sqlite3

import pytest
from django.db import connection

from sessionviewer.index import sqlite

pytestmark = pytest.mark.django_db


def _wal_database(path):
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # as the indexer sets it for a big pass
    writer.execute("CREATE TABLE t(x)")
    writer.execute("BEGIN")
    writer.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 500)
    writer.execute("COMMIT")
    return writer


def _rows_in_the_database_file(path, tmp_path) -> int:
    """What the database file holds without its log: what checkpoints copied."""
    alone = tmp_path / "alone.sqlite3"
    shutil.copyfile(path, alone)
    try:
        return sqlite3.connect(alone).execute("SELECT count(*) FROM t").fetchone()[0]
    except sqlite3.OperationalError:  # no such table: not even the CREATE was copied
        return 0


def test_the_checkpointer_copies_committed_pages_into_the_database_file(tmp_path):
    path = tmp_path / "index.sqlite3"
    writer = _wal_database(path)
    assert _rows_in_the_database_file(path, tmp_path) == 0
    checkpointer = sqlite.WalCheckpointer(str(path), log_limit=10**9)
    checkpointer.request()
    checkpointer.requests.join()
    assert _rows_in_the_database_file(path, tmp_path) == 500
    writer.execute("INSERT INTO t VALUES ('last')")
    checkpointer.close()  # copies what the last commit left
    assert not checkpointer.thread.is_alive()
    assert _rows_in_the_database_file(path, tmp_path) == 501
    assert (tmp_path / "index.sqlite3-wal").stat().st_size == 0


def test_past_its_limit_the_log_is_copied_before_the_next_write(tmp_path):
    path = tmp_path / "index.sqlite3"
    writer = _wal_database(path)  # open, as the indexer's connection is: the log stays
    checkpointer = sqlite.WalCheckpointer(str(path), log_limit=100_000)
    checkpointer.keep_log_bounded()  # ~500 KB of log: waits for the copy
    assert _rows_in_the_database_file(path, tmp_path) == 500
    writer.execute("PRAGMA journal_size_limit=0")  # as _checkpointing sets it, smaller
    writer.execute("INSERT INTO t VALUES ('next')")  # starts the log over, and shrinks it
    assert (tmp_path / "index.sqlite3-wal").stat().st_size < 100_000
    checkpointer.close()
    writer.close()


def test_a_big_pass_checkpoints_in_a_thread_and_gives_sqlite_its_own_back_after():
    with sqlite.checkpointing(big=False) as checkpointer:
        assert checkpointer is None  # the watcher's small passes: SQLite's own checkpoints
    if connection.vendor != "sqlite":
        with sqlite.checkpointing(big=True) as checkpointer:
            assert checkpointer is None  # PostgreSQL has no such log to copy
        return

    def pragma(name: str) -> int:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA {name}")
            return cursor.fetchone()[0]

    before = pragma("wal_autocheckpoint"), pragma("cache_size")
    with sqlite.checkpointing(big=True) as checkpointer:
        assert isinstance(checkpointer, sqlite.WalCheckpointer)
        assert pragma("wal_autocheckpoint") == 0
        assert pragma("cache_size") == -sqlite.BIG_PASS_CACHE_KIB  # its page cache, in KiB
    assert not checkpointer.thread.is_alive()
    assert (pragma("wal_autocheckpoint"), pragma("cache_size")) == before
    assert before[0] > 0 and before[1] != -sqlite.BIG_PASS_CACHE_KIB
