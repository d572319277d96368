"""OpenClaw's per-agent database: the transcripts OpenClaw 2026.9.2 and later keep in SQLite.

    ~/.openclaw/agents/<agentId>/agent/openclaw-agent.sqlite
    transcript_events (session_id, seq, event_json, created_at): ('8555a0a4-...', 3, '{"type":"message",...}', 1790000001000)

Each row's event is what a line of a JSONL transcript holds, and is read by the same
per-line code (openclaw.parse_line). Since 2026.9.6 a large event is stored
zstd-compressed in event_zstd, with event_utf8_bytes, and event_json is NULL. A session
is one session_id: its window (session_windows) names its session key, why it began
(reset, fork, compaction...) and the window before it; its node (session_nodes) holds
the sessions.json-like entry of the key's current session; its primary conversation
(session_conversations joined to conversations) names the channel, peer and label.
Reclaimed transcripts sit whole, as JSONL, in session_transcript_archives. A rewrite
bumps the session's generation in transcript_rewrite_watermarks.

Each session is indexed under a path of its own, "<database>#<session_id>" (an
archive: "<database>#<session_id>#<generation>"). OpenClaw numbers a session's events
from seq 0, as the lines of its JSONL transcript are numbered from 1: event seq is line
seq + 1, and it ends at offset seq + 1, so that offset 0 means nothing read. The index
reads on from the offset where its last read ended, as it reads a file on from its last
byte, and a session is streamed a few events at a time, in seq order, never held whole.

Compressed events and archives are inflated through a stream, a bounded read at a time:
an event past max_event_bytes (SESSIONVIEWER_MAX_EVENT_BYTES, 256 MB) is a problem on its
session, and an archive is read a line at a time, a line past it a problem too.

The database is only ever read: opened read-only, with a busy timeout. A database
locked or in the middle of a migration is left for the next pass (SourceBusy); one
without the tables and columns read here is reported as such (Unreadable).
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from . import (
    MAX_EVENT_BYTES,
    Entry,
    Problem,
    ReadResult,
    SessionFile,
    SourceBusy,
    Stamp,
    agent_database,
    decode_line,
    reader_error,
    text_of,
)
from .agent_database import Tables, Unreadable, connect, database_stamp, is_database
from .files import check_inside

DATABASE_NAME = "openclaw-agent.sqlite"
SEPARATOR = "#"

# What the reader needs: without these it says so, and reads nothing.
NEEDED = {"transcript_events": ("session_id", "seq", "created_at", "event_json")}


def databases(root: Path) -> list[tuple[Path, str]]:
    """The agent databases under a root, with their agent: the root itself when it is one,
    else <root>/agents/<agent>/agent/, <root>/<agent>/agent/ (root: the agents folder)
    and <root>/agent/ (root: one agent's folder)."""
    if root.is_file():
        return [(root, _agent_of(root))] if is_database(root) else []
    agents = root if root.name == "agents" else root / "agents"
    found = []
    if agents.is_dir():
        for name in sorted(os.listdir(agents)):
            path = agents / name / "agent" / DATABASE_NAME
            if not name.startswith(".") and _present(path):
                found.append((path, name))
    for path in (root / "agent" / DATABASE_NAME, root / DATABASE_NAME):
        if _present(path):
            found.append((path, _agent_of(path)))
    return found


def _present(path: Path) -> bool:
    """A file is there, regular or not: one that is not is found, and contents() says why
    it is not read (a FIFO would block the connection's open)."""
    return path.exists() and not path.is_dir()


def _agent_of(path: Path) -> str:
    return path.parent.parent.name if path.parent.name == "agent" else ""


def session_path(database: Path, session_id: str, generation: str = "") -> Path:
    tail = f"{SEPARATOR}{generation}" if generation else ""
    return Path(f"{database}{SEPARATOR}{session_id}{tail}")


def split_path(path: Path) -> tuple[Path, str, str] | None:
    """(database, session id, archive generation or "") of a session's path; None for another path.

    The database is the longest file before a "#" (folders may hold "#" too)."""
    text = str(path)
    at = text.find(SEPARATOR)
    while at != -1:
        database = Path(text[:at])
        if database.is_file():
            session_id, _, generation = text[at + 1 :].partition(SEPARATOR)
            return database, session_id, generation
        at = text.find(SEPARATOR, at + 1)
    return None


# Opening


@contextmanager
def reading(database: Path) -> Iterator[tuple[sqlite3.Connection, Tables]]:
    """The database opened, in one read transaction (one snapshot), with its tables' columns.

    Raises SourceBusy when it is locked or half-migrated, Unreadable when it is not an
    agent database this reader can read."""
    with agent_database.reading(database, _check, connect) as opened:  # connect: this module's (tests count)
        yield opened


def _check(database: Path, tables: Tables) -> None:
    for table, columns in NEEDED.items():
        if table not in tables:
            # OpenClaw's migrations rebuild a table as <table>_<something>, then rename it.
            if any(name.startswith(f"{table}_") and not name.endswith("_identities") for name in tables):
                raise SourceBusy(f"{database}: {table} is being migrated; read again next pass")
            raise Unreadable(
                f"{database}: not an OpenClaw agent database this reader knows: no {table} table"
            )
        missing = [c for c in columns if c not in tables[table]]
        if missing:
            raise Unreadable(f"{database}: the {table} table lacks {', '.join(missing)}")


# Discovery


@dataclass
class Contents:
    """What one look at a database found: its sessions, and every session id it holds."""

    stamp: tuple
    sessions: list[SessionFile]
    session_ids: set[str]


# openclaw.session_file: (path, key, status, agent, listed) -> SessionFile.
SessionFileRule = Callable[[Path, str, str, str, "tuple[str, dict] | None"], SessionFile]

_LOOKED: dict[tuple[Path, Path], Contents] = {}  # (database, root): the last look, while the stamp holds


def contents(
    database: Path, root: Path, agent: str, format_name: str, session_file: SessionFileRule
) -> Contents:
    """The database's sessions, as discovery yields them; looked up again only when the
    database changed since the last look (an unchanged one costs database_stamp).
    session_file: the transcript reader's rule for a session's key, title and facts
    (openclaw.session_file), which a database's session follows as a file's does.

    A database that is not a regular file, or links outside the root, is not read:
    NotRegularFile or OutsideRoot (files.py), and discovery lists it with the reason."""
    check_inside(database, root)
    stamp = database_stamp(database)
    known = _LOOKED.get((database, root))
    if known is not None and known.stamp == stamp:
        return known
    with reading(database) as (connection, tables):
        found = _Survey(connection, tables, database, root, agent, format_name, session_file).sessions()
    looked = Contents(stamp, found, {text_of(s.extra.get("sessionId")) for s in found})
    _LOOKED[(database, root)] = looked
    return looked


def key_of(database: Path, root: Path) -> str:
    """The key prefix of a database's sessions: its path below the root, then "#"."""
    below = database.name if database == root else os.path.relpath(database, root).replace(os.sep, "/")
    return below + SEPARATOR


class _Survey:
    def __init__(
        self, connection, tables, database: Path, root: Path, agent: str, format_name: str, session_file
    ):
        self.connection, self.tables = connection, tables
        self.database, self.agent, self.format = database, agent, format_name
        self.session_file: SessionFileRule = session_file
        self.prefix = key_of(database, root)
        self.inode = os.stat(database).st_ino

    def rows(self, sql: str, *params) -> list[sqlite3.Row]:
        cursor = self.connection.execute(sql, params)
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor]

    def columns(self, table: str, wanted: tuple[str, ...]) -> list[str]:
        have = self.tables.get(table, set())
        return [c for c in wanted if c in have]

    def sessions(self) -> list[SessionFile]:
        session_file = self.session_file
        nodes = self._nodes()
        conversations = self._conversations()
        generations = self._generations()
        found = []
        for window in self._windows():
            session_id = window["session_id"]
            node = nodes.get(window.get("session_key") or "")
            meta = _window_meta(window)
            if node and node.get("current_session_id") == session_id:
                meta |= node["entry"]
            for name in ("label", "display_name"):
                if node and node.get(name) and not meta.get(_META_NAMES[name]):
                    meta[_META_NAMES[name]] = node[name]
            meta["sessionId"] = session_id
            found_file = session_file(
                session_path(self.database, session_id),
                self.prefix + session_id,
                "active",
                self.agent,
                (window.get("session_key") or "", meta),
            )
            _add_conversation(found_file, conversations.get(session_id))
            found_file.extra |= _window_extra(window)
            if previous := window.get("previous_session_id"):
                found_file.parent_path = session_path(self.database, previous)
                found_file.parent_kind = "fork" if window.get("reason") == "fork" else "continuation"
            generation = generations.get(session_id, "")
            touched = max(
                window.get("last_at") or 0, window.get("updated_at") or 0, (node or {}).get("updated_at") or 0
            )
            found_file.stamp = Stamp(window.get("end_seq") or 0, int(touched), self.inode)
            found_file.identity = f"generation:{generation}" if generation else ""
            # Without a label, its first prompt titles it, as a JSONL transcript's does.
            found.append(found_file)
        found += self._archives(nodes)
        return found

    def _windows(self) -> list[dict]:
        # One past the last seq (read's offsets): 0 for a window with no events yet.
        last = (
            "(SELECT max(seq) + 1 FROM transcript_events e WHERE e.session_id = w.session_id) AS end_seq, "
            "(SELECT created_at FROM transcript_events e WHERE e.session_id = w.session_id "
            "ORDER BY seq DESC LIMIT 1) AS last_at"
        )
        if "session_windows" in self.tables:
            columns = self.columns("session_windows", _WINDOW_COLUMNS)
            listed = ", ".join(f"w.{c}" for c in columns)
            sql = f"SELECT {listed}, {last} FROM session_windows w ORDER BY w.created_at, w.session_id"  # noqa: S608 - our own column names
            return self.rows(sql)
        # No windows (an older or trimmed schema): one session per session_id of the events.
        return self.rows(
            "SELECT session_id, max(seq) + 1 AS end_seq, max(created_at) AS last_at FROM transcript_events "
            "GROUP BY session_id ORDER BY min(created_at), session_id"
        )

    def _nodes(self) -> dict[str, dict]:
        columns = self.columns(
            "session_nodes",
            ("session_key", "current_session_id", "entry_json", "label", "display_name", "updated_at"),
        )
        if "session_key" not in columns:
            return {}
        nodes = {}
        for row in self.rows(f"SELECT {', '.join(columns)} FROM session_nodes"):  # noqa: S608 - as above
            try:
                entry = orjson.loads(row.get("entry_json") or "{}")
            except orjson.JSONDecodeError:
                entry = {}
            row["entry"] = entry if isinstance(entry, dict) else {}
            nodes[row["session_key"]] = row
        return nodes

    def _conversations(self) -> dict[str, dict]:
        if "session_conversations" not in self.tables or "conversations" not in self.tables:
            return {}
        columns = self.columns("conversations", ("channel", "account_id", "kind", "peer_id", "label"))
        primary = "WHERE sc.role = 'primary'" if "role" in self.tables["session_conversations"] else ""
        listed = ", ".join("c." + c for c in columns)
        sql = f"SELECT sc.session_id, {listed} FROM session_conversations sc JOIN conversations c "  # noqa: S608 - as above
        rows = self.rows(sql + f"ON c.conversation_id = sc.conversation_id {primary}")
        return {row["session_id"]: row for row in rows}

    def _generations(self) -> dict[str, str]:
        if "generation" not in self.tables.get("transcript_rewrite_watermarks", set()):
            return {}
        rows = self.connection.execute("SELECT session_id, generation FROM transcript_rewrite_watermarks")
        return {session_id: str(generation) for session_id, generation in rows}

    def _archives(self, nodes: dict[str, dict]) -> list[SessionFile]:
        session_file = self.session_file
        wanted = ("session_id", "generation", "session_key", "reason", "archive_sha256", "created_at")
        columns = self.columns("session_transcript_archives", wanted)
        if len(columns) < len(wanted) or "archive_blob" not in self.tables["session_transcript_archives"]:
            return []
        found = []
        listed = ", ".join(columns)
        sql = f"SELECT {listed}, length(archive_blob) AS size FROM session_transcript_archives"  # noqa: S608 - as above
        for row in self.rows(sql + " ORDER BY created_at, session_id"):
            session_id, generation = row["session_id"], str(row["generation"])
            status = row["reason"] if row["reason"] in ("reset", "deleted") else "archived"
            found_file = session_file(
                session_path(self.database, session_id, generation),
                f"{self.prefix}{session_id}{SEPARATOR}{generation}",
                status,
                self.agent,
                (row["session_key"] or "", {"sessionId": session_id}),
            )
            found_file.extra |= {"archived_at": row["created_at"], "archive_generation": generation}
            found_file.stamp = Stamp(row["size"] or 0, int(row["created_at"] or 0), self.inode)
            found_file.identity = f"archive:{row['archive_sha256']}"
            found.append(found_file)
        return found


_WINDOW_COLUMNS = (
    "session_id",
    "session_key",
    "previous_session_id",
    "reason",
    "created_at",
    "updated_at",
    "started_at",
    "ended_at",
    "status",
    "chat_type",
    "channel",
    "account_id",
    "model_provider",
    "model",
    "parent_session_key",
    "spawned_by",
    "display_name",
)
# Window columns under the names sessions.json gives them, so the JSONL reader's rules apply.
_META_NAMES = {
    "chat_type": "chatType",
    "channel": "channel",
    "model_provider": "modelProvider",
    "model": "model",
    "parent_session_key": "parentSessionKey",
    "spawned_by": "spawnedBy",
    "display_name": "displayName",
    "label": "label",
    "started_at": "sessionStartedAt",
    "updated_at": "updatedAt",
}


def _window_meta(window: dict) -> dict[str, Any]:
    return {
        name: window[column] for column, name in _META_NAMES.items() if window.get(column) not in (None, "")
    }


def _window_extra(window: dict) -> dict[str, Any]:
    extra = {
        "window_reason": window.get("reason"),
        "previous_session_id": window.get("previous_session_id"),
        "account_id": window.get("account_id"),
        "ended_at": window.get("ended_at"),
        "run_status": window.get("status"),
    }
    return {name: value for name, value in extra.items() if value not in (None, "")}


def _add_conversation(found: SessionFile, conversation: dict | None) -> None:
    """The primary conversation fills what the session key did not say."""
    if not conversation:
        return
    found.channel = found.channel or text_of(conversation.get("channel"))
    found.account = found.account or text_of(conversation.get("account_id"))
    found.peer_kind = found.peer_kind or text_of(conversation.get("kind"))
    found.peer_id = found.peer_id or text_of(conversation.get("peer_id"))
    if label := text_of(conversation.get("label")):
        found.extra["conversation_label"] = label
        found.title = found.title or label


# Reading


def read(
    path: Path, start_offset: int, start_line: int, parse_line, max_event_bytes: int = MAX_EVENT_BYTES
) -> Iterator[Entry | Problem]:
    """A session's entries and problems from seq start_offset on, one event at a time, in seq
    order (an archive: its lines from byte start_offset on, a line at a time); what it returns
    at the end says where the next read starts (ReadResult, its lists empty).

    Event seq is line seq + 1 and ends at offset seq + 1, so that offset 0 means nothing read
    (OpenClaw numbers a session's events from 0). An event or archive line that inflates past
    max_event_bytes is a problem, and the read goes on."""
    split = split_path(path)
    if split is None:
        if is_database(path):  # the database itself: discovery found it unreadable; say why
            with reading(path):
                pass
            raise Unreadable(f"{path}: holds no OpenClaw sessions")
        raise FileNotFoundError(f"{path}: the database is gone")
    database, session_id, generation = split
    # One read transaction for the whole session, held while its entries are handed on.
    with reading(database) as (connection, tables):
        if generation:
            return (
                yield from _read_archive(
                    connection, path, session_id, generation, start_offset, parse_line, max_event_bytes
                )
            )
        identity = ""
        if "generation" in tables.get("transcript_rewrite_watermarks", set()):
            row = connection.execute(
                "SELECT generation FROM transcript_rewrite_watermarks WHERE session_id = ?", (session_id,)
            ).fetchone()
            identity = f"generation:{row[0]}" if row else ""
        compressed = {"event_zstd", "event_utf8_bytes"} <= tables["transcript_events"]
        payload = "event_json, event_zstd, event_utf8_bytes" if compressed else "event_json, NULL, NULL"
        sql = f"SELECT seq, {payload} FROM transcript_events WHERE session_id = ? AND seq >= ?"  # noqa: S608 - our own columns
        # Nothing read yet: from the smallest seq there is, whatever it is.
        rows = connection.execute(sql + " ORDER BY seq", (session_id, start_offset or -(2**63)))
        end = start_offset
        problems: list[Problem] = []
        for seq, text, packed, size in rows:
            raw = _event_bytes(path, seq, text, packed, size, max_event_bytes, problems)
            end = seq + 1
            if problems:
                yield from problems
                problems.clear()
            if raw is not None:
                yield from _parsed(path, seq + 1, seq, raw, parse_line)
    return ReadResult([], [], end, end, identity=identity)


def _event_bytes(
    path: Path, seq: int, text, packed, size, limit: int, problems: list[Problem]
) -> bytes | None:
    if text is not None:
        return text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if packed is None:
        problems.append(Problem(str(path), seq + 1, seq, "event has neither event_json nor event_zstd"))
        return None
    try:
        raw = _inflate(bytes(packed), limit)
    except _PastLimit:
        problems.append(Problem(str(path), seq + 1, seq, f"event {seq} inflates past {_megabytes(limit)}"))
        return None
    except Exception as error:  # noqa: BLE001 - zstandard raises its own ZstdError and ValueErrors
        problems.append(Problem(str(path), seq + 1, seq, f"event_zstd does not decompress: {error}"))
        return None
    if isinstance(size, int) and len(raw) != size:
        problems.append(
            Problem(
                str(path), seq + 1, seq, f"event_zstd holds {len(raw)} bytes, event_utf8_bytes says {size}"
            )
        )
    return raw


class _PastLimit(ValueError):
    """What inflates past the limit."""


INFLATE_CHUNK = 1024 * 1024  # bytes inflated a read when the frame does not say its size


def _inflate(packed: bytes, limit: int) -> bytes:
    """A compressed event, inflated: refused on its frame's header when that says it is past
    limit, else read through a stream a bounded read at a time, and refused once past it.

    Neither event_utf8_bytes nor the header bounds the output: the first is the writer's
    word, and python-zstandard's decompress(max_output_size=...) inflates a frame that
    declares its size whole, whatever the cap (a 64 KB frame held 2 GiB)."""
    import zstandard  # only for databases that hold compressed events

    declared = zstandard.frame_content_size(packed)  # -1: the header does not say
    if declared > limit:
        raise _PastLimit
    step = declared + 1 if declared >= 0 else INFLATE_CHUNK  # one more than declared: a lie shows
    parts, size = [], 0
    with zstandard.ZstdDecompressor().stream_reader(packed, read_across_frames=True) as stream:
        while size <= limit and (part := stream.read(min(step, limit + 1 - size))):
            parts.append(part)
            size += len(part)
    if size > limit:
        raise _PastLimit
    return b"".join(parts)


def _megabytes(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MB" if limit >= 1024 * 1024 else f"{limit:,} bytes"


def _parsed(path, number, offset, raw: bytes, parse_line) -> Iterator[Entry | Problem]:
    decoded = decode_line(path, number, offset, raw)
    if decoded is None:
        return
    if type(decoded) is Problem:
        yield decoded
        return
    try:
        entry = parse_line(decoded, number)
    except Exception as error:  # noqa: BLE001 - a reader bug must not lose the session
        problem, entry = reader_error(path, number, offset, raw, decoded, error)
        yield problem
    entry.line, entry.offset = number, offset
    yield entry


def _read_archive(
    connection, path, session_id, generation, start_offset, parse_line, limit: int
) -> Iterator[Entry | Problem]:
    """A reclaimed transcript's lines, inflated a chunk at a time from its blob, itself read
    a chunk at a time: its size is bounded by the disk, never by memory."""
    row = connection.execute(
        "SELECT rowid, encoding, archive_sha256 FROM session_transcript_archives "
        "WHERE session_id = ? AND generation = ?",
        (session_id, generation),
    ).fetchone()
    if row is None:
        raise FileNotFoundError(f"{path}: the archive is gone")
    rowid, encoding, sha = row
    identity = f"archive:{sha}"
    offset = number = 0
    with connection.blobopen("session_transcript_archives", "archive_blob", rowid, readonly=True) as blob:
        source = _Hashed(blob)
        if encoding == "zstd":
            import zstandard

            stream = _Hashed(zstandard.ZstdDecompressor().stream_reader(source, read_across_frames=True))
        else:
            stream = source
        try:
            for raw, length in _lines(stream.read, limit):
                number, start = number + 1, offset
                offset += length
                if start < start_offset:
                    continue
                if raw is None:
                    yield Problem(
                        str(path), number, start, f"line {number} inflates past {_megabytes(limit)}"
                    )
                else:
                    yield from _parsed(path, number, start, raw, parse_line)
        except Exception as error:  # noqa: BLE001 - zstandard's ZstdError: what came before it stays
            yield Problem(str(path), number + 1, offset, f"the archive does not decompress: {error}")
            return ReadResult([], [], offset, number, identity=identity)
        if sha not in (stream.sha.hexdigest(), source.sha.hexdigest()):
            yield Problem(str(path), 1, 0, "the archive does not match its archive_sha256")
    return ReadResult([], [], offset, number, identity=identity)


class _Hashed:
    """A stream whose bytes are hashed as they are read."""

    def __init__(self, stream):
        self.stream, self.sha = stream, hashlib.sha256()

    def read(self, size: int = -1) -> bytes:
        data = self.stream.read(size)
        self.sha.update(data)
        return data


def _lines(read, limit: int) -> Iterator[tuple[bytes | None, int]]:
    """The lines of a stream, each with its length in bytes (its newline included); a line
    longer than limit comes as None, and is never held whole."""
    parts: list[bytes] = []  # the line so far, when it started in an earlier chunk
    size, over = 0, False
    while chunk := read(INFLATE_CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) != -1:
            piece = chunk[start : end + 1]
            length = size + len(piece)
            if over or length > limit:
                yield None, length
            else:
                yield (b"".join([*parts, piece]) if parts else piece), length
            parts, size, over = [], 0, False
            start = end + 1
        if start < len(chunk):
            size += len(chunk) - start
            over = over or size > limit
            parts = [] if over else [*parts, chunk[start:]]
    if size:
        yield (None if over else b"".join(parts)), size
