"""OpenClaw agent databases for tests, built with OpenClaw's own DDL (fixtures/openclaw_sqlite/)."""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import orjson
import zstandard

from sessionviewer.readers.openclaw_store import DATABASE_NAME

DDL = Path(__file__).parent / "fixtures" / "openclaw_sqlite"
T0 = 1_790_000_000_000  # ms


def header(session_id: str, cwd: str = "/home/alice/project") -> dict:
    return {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-09-21T14:13:20Z",
        "cwd": cwd,
    }


def said(entry_id: str, role: str, text: str, parent: str | None = None) -> dict:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2026-09-21T14:13:21Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }


class AgentStore:
    """One agent's openclaw-agent.sqlite under root/agents/<agent>/agent/.

    Each change opens, commits and closes its own connection, as the agent would
    between turns: no test connection stays open while the index reads."""

    def __init__(self, root: Path, agent: str = "main", compressed: bool = True, wal: bool = False):
        self.path = root / "agents" / agent / "agent" / DATABASE_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.compressed = compressed
        with self.connect() as connection:
            if wal:
                connection.execute("PRAGMA journal_mode = WAL")
            connection.executescript((DDL / "openclaw-agent-schema.sql").read_text())
            if compressed:
                connection.executescript((DDL / "transcript-events-zstd.sql").read_text())
            connection.execute("PRAGMA user_version = 23")
        self.clock = T0

    def connect(self):
        """A connection that commits each statement, closed after the block."""
        return closing(sqlite3.connect(self.path, isolation_level=None))

    def tick(self) -> int:
        self.clock += 1000
        return self.clock

    def window(
        self,
        session_id: str,
        key: str = "agent:main:main",
        previous: str | None = None,
        reason: str = "initial",
        **columns,
    ):
        now = self.tick()
        with self.connect() as connection:
            connection.execute(
                "INSERT OR IGNORE INTO session_nodes (session_key, current_session_id, entry_json, updated_at) "
                "VALUES (?, ?, '{}', ?)",
                (key, session_id, now),
            )
            connection.execute(
                "UPDATE session_nodes SET current_session_id = ?, entry_json = ?, updated_at = ? WHERE session_key = ?",
                (session_id, orjson.dumps({"sessionId": session_id}).decode(), now, key),
            )
            names = [
                "session_id",
                "session_key",
                "previous_session_id",
                "reason",
                "created_at",
                "updated_at",
                *columns,
            ]
            values = [session_id, key, previous, reason, now, now, *columns.values()]
            connection.execute(
                f"INSERT INTO session_windows ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",  # noqa: S608 - test columns
                values,
            )

    def node(self, key: str, **columns):
        with self.connect() as connection:
            for name, value in columns.items():
                connection.execute(
                    f"UPDATE session_nodes SET {name} = ?, updated_at = ? WHERE session_key = ?",  # noqa: S608 - test columns
                    (value, self.tick(), key),
                )

    def conversation(self, session_id: str, channel: str, kind: str, peer_id: str, label: str):
        now = self.tick()
        with self.connect() as connection:
            connection.execute(
                "INSERT INTO conversations (conversation_id, channel, account_id, kind, peer_id, delivery_target, "
                "label, created_at, updated_at) VALUES (?, ?, 'default', ?, ?, ?, ?, ?, ?)",
                (f"c-{session_id}", channel, kind, peer_id, peer_id, label, now, now),
            )
            connection.execute(
                "INSERT INTO session_conversations (session_id, conversation_id, first_seen_at, last_seen_at) "
                "VALUES (?, ?, ?, ?)",
                (session_id, f"c-{session_id}", now, now),
            )

    def events(self, session_id: str, *objects: dict, compress: bool = False):
        with self.connect() as connection:
            # Numbered from 0, as OpenClaw numbers them (readNextTranscriptSeq: max(seq) + 1, or 0).
            (last,) = connection.execute(
                "SELECT coalesce(max(seq), -1) FROM transcript_events WHERE session_id = ?", (session_id,)
            ).fetchone()
            for seq, obj in enumerate(objects, start=last + 1):
                text = orjson.dumps(obj).decode()
                if compress:
                    raw = text.encode()
                    connection.execute(
                        "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, "
                        "event_utf8_bytes, navigation_json) VALUES (?, ?, NULL, ?, ?, ?, '{}')",
                        (
                            session_id,
                            seq,
                            self.tick(),
                            zstandard.ZstdCompressor(level=1).compress(raw),
                            len(raw),
                        ),
                    )
                else:
                    connection.execute(
                        "INSERT INTO transcript_events (session_id, seq, event_json, created_at) VALUES (?, ?, ?, ?)",
                        (session_id, seq, text, self.tick()),
                    )

    def packed(self, session_id: str, frame: bytes, claim: int | None) -> None:
        """One more event stored as the zstd frame given, with event_utf8_bytes saying claim
        (NULL too, which OpenClaw's CHECK refuses and a hostile writer need not)."""
        with self.connect() as connection:
            connection.execute("PRAGMA ignore_check_constraints = ON")
            (last,) = connection.execute(
                "SELECT coalesce(max(seq), -1) FROM transcript_events WHERE session_id = ?", (session_id,)
            ).fetchone()
            connection.execute(
                "INSERT INTO transcript_events (session_id, seq, event_json, created_at, event_zstd, "
                "event_utf8_bytes, navigation_json) VALUES (?, ?, NULL, ?, ?, ?, '{}')",
                (session_id, last + 1, self.tick(), frame, claim),
            )

    def rewrite(self, session_id: str, generation: str, *objects: dict):
        """What a transcript rewrite does: new events from seq 0, and a new generation."""
        with self.connect() as connection:
            connection.execute("DELETE FROM transcript_events WHERE session_id = ?", (session_id,))
            connection.execute(
                "INSERT OR REPLACE INTO transcript_rewrite_watermarks (session_id, generation, updated_at) VALUES (?, ?, ?)",
                (session_id, generation, self.tick()),
            )
        self.events(session_id, *objects)

    def archive(
        self,
        session_id: str,
        generation: str,
        reason: str,
        *objects: dict,
        key: str = "agent:main:main",
        blob: bytes | None = None,
    ):
        """A reclaimed transcript: the objects as JSONL, zstd-compressed (or the blob given,
        whose archive_sha256 then matches nothing)."""
        data = b"".join(orjson.dumps(o) + b"\n" for o in objects)
        with self.connect() as connection:
            connection.execute(
                "INSERT INTO session_transcript_archives (session_id, generation, session_key, reason, encoding, "
                "archive_blob, archive_sha256, archive_name, created_at) VALUES (?, ?, ?, ?, 'zstd', ?, ?, ?, ?)",
                (
                    session_id,
                    generation,
                    key,
                    reason,
                    zstandard.ZstdCompressor().compress(data) if blob is None else blob,
                    hashlib.sha256(data).hexdigest(),
                    f"{session_id}.jsonl.{reason}.{generation}",
                    self.tick(),
                ),
            )

    def sql(self, statement: str):
        with closing(sqlite3.connect(self.path, isolation_level=None)) as connection:
            connection.executescript(statement)


def one_session_store(root: Path) -> AgentStore:
    """A database holding one session, s1: a prompt and its answer."""
    store = AgentStore(root)
    store.window("s1")
    store.events(
        "s1", header("s1"), said("m1", "user", "Fix the upload test"), said("m2", "assistant", "Done.", "m1")
    )
    return store


def zeros_frame(size: int, declared: bool = True) -> bytes:
    """A zstd frame of `size` zero bytes, with its size in the frame's header or not: a bomb,
    2 GiB in 64 KB (compressed a megabyte at a time, never held inflated)."""
    compressor = zstandard.ZstdCompressor(level=1, write_content_size=declared)
    stream = compressor.compressobj(size=size if declared else -1)
    zeros = bytes(1024 * 1024)
    parts = [stream.compress(zeros[: min(len(zeros), size - at)]) for at in range(0, size, len(zeros))]
    return b"".join([*parts, stream.flush()])


def frame(data: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(data)
