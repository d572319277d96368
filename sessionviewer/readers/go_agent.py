"""The Go agent's sessions: ~/.config/agent/sessions/YYYYMMDD-HHMMSS-<8hex>.jsonl.

    {"type":"session","id":"a3f7c901-...","version":1,"timestamp":"2026-02-26T14:30:12Z","cwd":"/home/user/project"}
    {"type":"message","id":"d4e5f6a7","parent_id":"","timestamp":"2026-02-26T14:30:13Z","role":"user","message":{"role":"user","content":[{"type":"text","text":"Hello!"}]}}

A header line, then entries linked by id/parent_id: messages (user, assistant,
tool_result), compaction entries (summary, first_kept_entry_id) and, in a
forked session, a branch entry (parent_session_path, fork_entry_id) followed by
the parent's last messages copied with their ids. The first copied message has
parent_id "", read as no parent. The format is a snake_case port of pi's
(see openclaw.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from . import (
    ASSISTANT,
    BRANCH,
    COMPACTION,
    HEADER,
    IMAGE,
    MESSAGE,
    RAW,
    SYSTEM,
    TEXT,
    TOOL,
    TOOL_RESULT,
    USER,
    Block,
    Entry,
    Format,
    SessionFile,
    content_blocks,
    first_object,
    id_of,
    keep_small,
    listing,
    parse_timestamp,
    text_of,
    usage_counts,
)

FORMAT = "go_agent"

FILE_NAME = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{8}\.jsonl$")
_ROLES = {"user": USER, "assistant": ASSISTANT, "tool_result": TOOL, "system": SYSTEM}
_USAGE = {"input": "input", "output": "output", "cache_read": "cache_read", "cache_write": "cache_write"}
# Tool details can be whole file contents; the page only needs a glimpse.
_SAMPLE = 20  # files looked into when a folder's names do not say


def _tool_result(message: dict) -> list[Block]:
    """One tool_result block with the flattened text; images the tool returned follow it."""
    content = content_blocks(message.get("content"))
    text = "\n".join(b.text for b in content if b.type == TEXT and b.text)
    result = Block(
        TOOL_RESULT,
        text=text,
        name=text_of(message.get("tool_name")),
        call_id=text_of(message.get("tool_call_id")),
        is_error=message.get("is_error") is True,
    )
    return [result] + [b for b in content if b.type == IMAGE]


def _message(obj: dict, line: int) -> Entry:
    message = obj.get("message")
    if not isinstance(message, dict):
        message = {}
    written = text_of(message.get("role")) or text_of(obj.get("role"))
    role = _ROLES.get(written, written)
    entry = Entry(
        id=id_of(obj.get("id")) or f"line:{line}",
        parent_id=id_of(obj.get("parent_id")),
        kind=MESSAGE,
        role=role,
        timestamp=parse_timestamp(obj.get("timestamp")) or parse_timestamp(message.get("timestamp")),
        model=text_of(message.get("model")),
        usage=usage_counts(message.get("usage"), _USAGE),
    )
    entry.blocks = (
        _tool_result(message) if written == "tool_result" else content_blocks(message.get("content"))
    )
    if entry.usage and obj.get("id"):
        # One line per reply: its own id names it, and a fork's copy of it keeps the id.
        entry.message_id = entry.id
    extra = {
        "provider": text_of(message.get("provider")),
        "stop_reason": text_of(message.get("stop_reason")),
        "error_message": text_of(message.get("error_message")) or text_of(message.get("error")),
    }
    entry.extra = {k: v for k, v in extra.items() if v}
    if message.get("details") is not None:
        entry.extra["details"] = keep_small(message["details"])
    return entry


def parse_line(obj: dict, line: int) -> Entry:
    kind = obj.get("type")
    if kind == "message":  # most lines: _message reads the fields below itself
        return _message(obj, line)
    entry_id = id_of(obj.get("id")) or f"line:{line}"
    parent_id = id_of(obj.get("parent_id"))
    timestamp = parse_timestamp(obj.get("timestamp"))
    if kind == "session":
        extra = {
            "session_id": text_of(obj.get("id")),
            "cwd": text_of(obj.get("cwd")),
            "version": obj.get("version"),
        }
        return Entry(
            id=entry_id,
            parent_id=None,
            kind=HEADER,
            timestamp=timestamp,
            extra={k: v for k, v in extra.items() if v not in ("", None)},
        )
    if kind == "compaction":
        extra = {"tokens_before": obj.get("tokens_before")} if obj.get("tokens_before") is not None else {}
        return Entry(
            id=entry_id,
            parent_id=parent_id,
            kind=COMPACTION,
            timestamp=timestamp,
            summary=text_of(obj.get("summary")),
            first_kept_id=text_of(obj.get("first_kept_entry_id")),
            extra=extra,
        )
    if kind == "branch":
        extra = {
            "parent_session_path": text_of(obj.get("parent_session_path")),
            "fork_entry_id": text_of(obj.get("fork_entry_id")),
        }
        return Entry(
            id=entry_id,
            parent_id=parent_id,
            kind=BRANCH,
            timestamp=timestamp,
            summary=text_of(obj.get("branch_summary")),
            extra={k: v for k, v in extra.items() if v},
        )
    return Entry(
        id=entry_id, parent_id=parent_id, kind=RAW, subtype=text_of(kind), timestamp=timestamp, raw=obj
    )


def _files(root: Path) -> Iterator[Path]:
    """*.jsonl in the root and in its direct subfolders, in name order."""
    files, folders = listing(root)
    yield from (root / name for name in files if _is_jsonl(name))
    for name in folders:
        if not name.startswith("."):
            folder = root / name
            yield from (folder / child for child in listing(folder)[0] if _is_jsonl(child))


def _is_jsonl(name: str) -> bool:
    return name.endswith(".jsonl") and name != ".jsonl"  # as Path.suffix sees it


def discover(root: Path) -> Iterator[SessionFile]:
    seen: set[str] = set()
    for path in _files(root):
        # The name is the session's own timestamp and id; a clash across
        # subfolders falls back to the relative path.
        key = path.stem
        if key in seen:
            key = path.relative_to(root).with_suffix("").as_posix()
        seen.add(key)
        yield SessionFile(path=path, format=FORMAT, key=key)


def _is_header(first: dict) -> bool:
    """The Go header: an id, version 1, and none of pi's or Fluux's fields (pi v1 wrote no version)."""
    others = ("provider", "modelId", "thinkingLevel", "sessionKey", "parentSession", "jid", "created")
    return (
        first.get("type") == "session"
        and first.get("version") == 1
        and isinstance(first.get("id"), str)
        and not any(k in first for k in others)
    )


def _is_entry(first: dict) -> bool:
    return "parent_id" in first and not any(k in first for k in ("parentUuid", "parentId", "sessionId"))


def looks_like(path: Path, first: dict | None) -> bool:
    if path.is_dir():
        if (path / "sessions.json").exists():
            return False
        files = list(_files(path))
        if any(FILE_NAME.match(p.name) for p in files):
            return True
        # Renamed or copied sessions: a Go header on the first line still tells.
        return any(isinstance(obj, dict) and _is_header(obj) for obj in map(first_object, files[:_SAMPLE]))
    if not isinstance(first, dict):
        return False
    if _is_header(first):
        return True
    return FILE_NAME.match(path.name) is not None and _is_entry(first)


THIS_FORMAT = Format(FORMAT, "Go agent", "marks/go_agent.svg", makes_projects=True)  # a hexagon going forward
