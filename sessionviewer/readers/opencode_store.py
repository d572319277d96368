"""opencode's database: the sessions opencode 1.2 and later keep in SQLite, opencode.db.

    ~/.local/share/opencode/opencode.db
    session (id, project_id, parent_id, directory, title, version, time_created, time_updated, time_archived, ...)
    message (id, session_id, time_created, time_updated, data): ('msg_01...', 'ses_01...', 1767225600000, ..., '{"role":"user",...}')
    part (id, message_id, session_id, time_created, time_updated, data): ('prt_01...', 'msg_01...', ..., '{"type":"text","text":"hi"}')

A message's and a part's data are the JSON that the split storage of opencode 1.1 and
before wrote into message/<sessionID>/<messageID>.json and part/<messageID>/<partID>.json,
without their ids (they are the rows' columns). This module only finds and fetches the
rows; opencode.py turns them into entries, whichever storage they came from.

Each session is indexed under a path of its own, "<database>#<session id>". The database
is only ever read: opened read-only with a busy timeout (agent_database.connect), in one
read transaction per look. A locked database is left for the next pass (SourceBusy); one
without the tables and columns read here is reported as such (Unreadable).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from . import agent_database
from .agent_database import Tables, Unreadable, connect, database_stamp, is_database
from .files import check_inside

DATABASE_NAME = "opencode.db"
SEPARATOR = "#"

# What the reader needs: without these it says so, and reads nothing.
NEEDED = {
    "session": ("id", "project_id", "time_created", "time_updated"),
    "message": ("id", "session_id", "time_updated", "data"),
    "part": ("id", "message_id", "session_id", "time_updated", "data"),
}
# Read when the database has them (later versions add columns, and may drop some).
_SESSION_COLUMNS = ("parent_id", "directory", "title", "version", "time_archived", "slug")


def session_path(database: Path, session_id: str) -> Path:
    return Path(f"{database}{SEPARATOR}{session_id}")


def split_path(path: Path) -> tuple[Path, str] | None:
    """(database, session id) of a database session's path; None for another path."""
    database, separator, session_id = str(path).rpartition(SEPARATOR)
    if not separator or not database.endswith(DATABASE_NAME):
        return None
    return Path(database), session_id


def database_of(root: Path) -> Path | None:
    """The database a root holds: the root itself when it is one, else <root>/opencode.db."""
    if root.is_file():
        return root if is_database(root) else None
    path = root / DATABASE_NAME
    return path if path.exists() and not path.is_dir() else None


@contextmanager
def reading(database: Path) -> Iterator[tuple[sqlite3.Connection, Tables]]:
    """The database opened read-only, in one read transaction, with its tables' columns.

    Raises SourceBusy when it is locked, Unreadable when it is not one this reader can read."""
    with agent_database.reading(
        database, _check, connect
    ) as opened:  # connect: this module's (tests wrap it)
        yield opened


def _check(database: Path, tables: Tables) -> None:
    for table, columns in NEEDED.items():
        if table not in tables:
            raise Unreadable(f"{database}: not an opencode database this reader knows: no {table} table")
        if missing := [c for c in columns if c not in tables[table]]:
            raise Unreadable(f"{database}: the {table} table lacks {', '.join(missing)}")


@dataclass(frozen=True, slots=True)
class SessionRow:
    """A session as the database lists it, with what its change stamp needs."""

    id: str
    project_id: str
    parent_id: str
    directory: str
    title: str
    version: str
    created: int  # ms
    archived: int | None
    messages: int
    updated: int  # ms: the latest time_updated of the session, its messages and its parts
    last_message_id: str
    last_message: str  # the last message's data (JSON), to tell whether it is still being written


@dataclass
class Contents:
    stamp: tuple
    sessions: list[SessionRow]


_LOOKED: dict[Path, Contents] = {}  # the last look at each database, while its stamp holds


def contents(database: Path, root: Path) -> Contents:
    """The database's sessions; looked up again only when it changed since the last look."""
    check_inside(database, root)
    stamp = database_stamp(database)
    known = _LOOKED.get(database)
    if known is not None and known.stamp == stamp:
        return known
    with reading(database) as (connection, tables):
        present = [c for c in _SESSION_COLUMNS if c in tables["session"]]
        listed = ", ".join(f"s.{c}" for c in ("id", "project_id", "time_created", "time_updated", *present))
        # Our own column names only, checked against the table above.
        sql = (
            f"SELECT {listed}, "  # noqa: S608
            "(SELECT count(*) FROM message m WHERE m.session_id = s.id), "
            "(SELECT max(time_updated) FROM message m WHERE m.session_id = s.id), "
            "(SELECT max(time_updated) FROM part p WHERE p.session_id = s.id), "
            "(SELECT id FROM message m WHERE m.session_id = s.id ORDER BY m.id DESC LIMIT 1), "
            "(SELECT data FROM message m WHERE m.session_id = s.id ORDER BY m.id DESC LIMIT 1) "
            "FROM session s ORDER BY s.time_created, s.id"
        )
        found = []
        for row in connection.execute(sql):
            named = dict(
                zip(("id", "project_id", "time_created", "time_updated", *present), row, strict=False)
            )
            count, message_at, part_at, last_id, last = row[-5:]
            updated = max(v for v in (named["time_updated"], message_at, part_at, 0) if isinstance(v, int))
            found.append(
                SessionRow(
                    id=str(named["id"]),
                    project_id=str(named["project_id"] or ""),
                    parent_id=str(named.get("parent_id") or ""),
                    directory=str(named.get("directory") or ""),
                    title=str(named.get("title") or ""),
                    version=str(named.get("version") or ""),
                    created=named["time_created"] if isinstance(named["time_created"], int) else 0,
                    archived=named.get("time_archived"),
                    messages=count,
                    updated=updated,
                    last_message_id=str(last_id or ""),
                    last_message=last if isinstance(last, str) else "",
                )
            )
    looked = Contents(stamp, found)
    _LOOKED[database] = looked
    return looked


def inode(database: Path) -> int:
    return os.stat(database).st_ino


def messages(
    connection: sqlite3.Connection, session_id: str, start: int
) -> Iterator[tuple[str, str, list[tuple[str, str]]]]:
    """A session's messages from the start-th on (in id order, as opencode's ids sort by time),
    each as (id, data, [(part id, part data), ...]), one message held at a time."""
    rows = connection.execute(
        "SELECT id, data FROM message WHERE session_id = ? ORDER BY id LIMIT -1 OFFSET ?", (session_id, start)
    )
    for message_id, data in rows:  # a cursor of its own: the parts' queries do not disturb it
        parts = connection.execute(
            "SELECT id, data FROM part WHERE message_id = ? ORDER BY id", (message_id,)
        )
        yield str(message_id), data, [(str(part_id), part) for part_id, part in parts]
