"""An agent's own SQLite database, read and never written: what OpenClaw's store reader and
opencode's share. Opened read-only with a busy timeout, immutable when no process has it
open (so that no -wal or -shm file is left beside it), read in one transaction (one
snapshot); a locked one is left for the next pass (SourceBusy), one that is not a database
or lacks what its reader needs is said to be so (Unreadable)."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from . import SourceBusy
from .files import open_regular

BUSY_TIMEOUT = 2.0  # seconds a read waits for the agent's write lock before leaving it for the next pass
_SQLITE_HEADER = b"SQLite format 3\x00"
_BUSY = ("locked", "busy", "schema has changed")

Tables = dict[str, set[str]]  # each table's columns


class Unreadable(OSError):
    """A database that is not one, or lacks what the reader needs: shown on the list."""


def is_database(path: Path) -> bool:
    try:
        with open_regular(path) as handle:
            return handle.read(16) == _SQLITE_HEADER
    except OSError:
        return False


def database_stamp(database: Path) -> tuple:
    """What changes whenever the database does: its stat, its change counter (rollback
    journal mode) and its -wal file's stat (WAL mode). Costs two stats and 28 bytes read."""
    stat = os.stat(database)
    with open_regular(database) as handle:
        counter = handle.read(28)[24:28]
    try:
        wal = os.stat(f"{database}-wal")
        wal_stamp = (wal.st_size, wal.st_mtime_ns)
    except FileNotFoundError:
        wal_stamp = None
    return (stat.st_size, stat.st_mtime_ns, stat.st_ino, counter, wal_stamp)


def _uri(database: Path) -> str:
    """A read-only URI. A database in WAL mode whose -wal file is gone is one no process
    has open (SQLite removes it with the last connection): it is opened immutable, since a
    read-only connection would otherwise leave a -wal and a -shm file beside it."""
    uri = f"file:{_quoted(database)}?mode=ro"
    # SQLite opens the file itself, by name: it must be a regular file (files.py) right before.
    with open_regular(database) as handle:
        wal_mode = handle.read(20)[18:20] == b"\x02\x02"
    if wal_mode and not os.path.exists(f"{database}-wal"):
        uri += "&immutable=1"
    return uri


def _quoted(path: Path) -> str:
    return str(path).replace("%", "%25").replace("?", "%3f").replace("#", "%23")


def connect(database: Path) -> sqlite3.Connection:
    """The database opened read-only."""
    connection = sqlite3.connect(_uri(database), uri=True, timeout=BUSY_TIMEOUT, isolation_level=None)
    connection.execute("PRAGMA query_only = 1")
    return connection


@contextmanager
def reading(
    database: Path,
    check: Callable[[Path, Tables], None],
    opener: Callable[[Path], sqlite3.Connection] = connect,
) -> Iterator[tuple[sqlite3.Connection, Tables]]:
    """The database opened by opener, in one read transaction, with its tables' columns,
    which check (the reader's) looks at first, raising Unreadable or SourceBusy.

    Raises SourceBusy when it is locked, Unreadable when it is no readable database."""
    try:
        with closing(opener(database)) as connection:
            connection.execute("BEGIN")
            tables = _tables(connection)
            check(database, tables)
            yield connection, tables
            connection.execute("COMMIT")
    except sqlite3.OperationalError as error:
        if any(word in str(error) for word in _BUSY):
            raise SourceBusy(f"{database}: {error}; read again next pass") from error
        raise Unreadable(f"{database}: {error}") from error
    except sqlite3.DatabaseError as error:
        raise Unreadable(f"{database}: not a readable SQLite database ({error})") from error


def _tables(connection: sqlite3.Connection) -> Tables:
    names = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    return {
        name: {row[1] for row in connection.execute(f'PRAGMA table_info("{name}")')}
        for name in names
        if not name.startswith("sqlite_")
    }
