"""Fluux memory roots for the memory timeline's tests: a JID's history.jsonl turns and the
memory files its agent writes, each given the mtime it would have had during the turn."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import orjson
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.roots import RootSpec

from .workspace_files import make_tree

ALICE = "alice@example.com"
ROOM = "dev@conference.example.com"
DAY = datetime(2025, 6, 2, tzinfo=UTC)


def at(hh: int, mm: int, ss: float = 0) -> float:
    return DAY.replace(hour=hh, minute=mm).timestamp() + ss


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


def message(role: str, content: str, ts: float, msg_id: str, sender: str | None = None) -> bytes:
    line = {"type": "message", "role": role, "content": content, "msg_id": msg_id, "ts": iso(ts)}
    if sender:
        line["sender"] = sender
    return orjson.dumps(line) + b"\n"


def header(jid: str) -> bytes:
    return orjson.dumps({"type": "session", "version": 1, "created": iso(at(9, 0)), "jid": jid}) + b"\n"


def append(path: Path, *lines: bytes) -> None:
    with path.open("ab") as handle:
        for line in lines:
            handle.write(line)


def write(path: Path, data: bytes | str, when: float) -> None:
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    os.utime(path, (when, when))


def fact(key: str, content: str, when: float) -> bytes:
    return orjson.dumps({"key": key, "content": content, "ts": iso(when)}) + b"\n"


def memory_tree(tmp_path: Path, settings) -> Path:
    """A memory root: alice's memory.md and history, a room's history, indexed once (the first
    pass: what is there is "first seen"). conftest.py's tree fixture."""
    root = make_tree(
        tmp_path / "memory",
        {f"{ALICE}/memory.md": "Likes tea.\n", f"{ROOM}/history.jsonl": header(ROOM).decode()},
    )
    write(root / ALICE / "history.jsonl", header(ALICE), at(9, 0))
    os.utime(root / ALICE / "memory.md", (at(8, 0), at(8, 0)))
    settings.SESSIONVIEWER_MEMORY_ROOTS = [str(root)]
    index(root)
    return root.resolve()


def index(root: Path):
    return index_roots([RootSpec(root, "fluux_xmpp")], memory=[root])


def direct_turn(root: Path, n: int, start: float, facts: bytes | None) -> None:
    """A turn in a direct chat, as the agent's runtime.rs does it: the tool loop writes
    knowledge.jsonl, then the user's message and the reply are appended together."""
    knowledge = root / ALICE / "knowledge.jsonl"
    if facts is not None:
        old = knowledge.read_bytes() if knowledge.exists() else b""
        write(knowledge, old + facts, start + 2)
    append(
        root / ALICE / "history.jsonl",
        message("user", f"question {n}", start + 4, f"in-{n}", ALICE),
        message("assistant", f"answer {n}", start + 4.01, f"out-{n}"),
    )


def timeline(client, jid: str = ALICE, **params) -> dict:
    response = client.get(reverse("api-workspace-memory-timeline", args=[0, jid]), params)
    assert response.status_code == 200, response.content
    return orjson.loads(response.content)
