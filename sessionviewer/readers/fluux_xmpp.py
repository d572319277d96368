"""Fluux Agent's XMPP memory: one folder per JID, sessions as JSON Lines.

    {"type":"session","version":1,"created":"2025-02-08T19:00:00Z","jid":"alice@example.com"}
    {"type":"message","role":"user","content":"Hello!","msg_id":"stanza-001","sender":"alice@example.com","ts":"2025-02-08T19:00:01Z"}

The memory root holds global identity.md, personality.md and instructions.md
and a folder per bare JID (user or MUC room) with history.jsonl (the active
session) and sessions/YYYYMMDD-HHMMSS.jsonl (sessions archived by /new, named
by the UTC time of archiving). Older versions of the agent wrote history.md and
sessions/*.md instead, one turn per "### role" heading:

    ### user (alice@example.com)
    Hello!

Fluux files have no parent links: threading follows file order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import (
    ATTACHMENT,
    HEADER,
    MESSAGE,
    RAW,
    REACTION,
    TEXT,
    Block,
    Entry,
    Format,
    Problem,
    ReadResult,
    SessionFile,
    listing,
    parse_timestamp,
    text_of,
    written,
)
from .files import read_regular

FORMAT = "fluux_xmpp"

# The persona files at the root (and, as overrides, in a JID folder), in prompt order.
GLOBAL_FILES = ("identity.md", "personality.md", "instructions.md")

# Rooms live under the same folders as people. Servers name their MUC service
# by one of these by convention, and the agent labels room senders "nick@muc".
# The one rule: the index (is_room_jid, is_room_sender) and the persona editor use it.
ROOM_DOMAIN_PREFIXES = ("conference.", "muc.", "rooms.", "chat.")
ROOM_SENDER_SUFFIX = "@muc"

_ARCHIVE_NAME = re.compile(r"^(\d{8}-\d{6})$")

# The legacy writer only ever wrote these roles; any other "### " line is a
# Markdown heading inside a message (the agent's own parser would split there).
_MD_ROLES = ("user", "assistant", "system")


def _text(value: Any) -> str:
    """Content as text; odd but valid JSON (numbers, lists) is shown as written."""
    if value is None or isinstance(value, str):
        return value or ""
    if isinstance(value, bool | int | float):
        return str(value).lower() if isinstance(value, bool) else str(value)
    return written(value)


def _size(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return ""


def parse_line(obj: dict, line: int) -> Entry:
    kind = obj.get("type")
    if kind == "session":
        return Entry(
            id=f"line:{line}",
            parent_id=None,
            kind=HEADER,
            timestamp=parse_timestamp(obj.get("created")),
            line=line,
            extra={"jid": text_of(obj.get("jid")), "version": obj.get("version")},
        )
    if kind == "message":
        return _message(obj, line)
    return Entry(id=f"line:{line}", parent_id=None, kind=RAW, line=line, subtype=_text(kind), raw=obj)


def _message(obj: dict, line: int) -> Entry:
    blocks = []
    content = _text(obj.get("content"))
    if content:
        blocks.append(Block(TEXT, text=content))
    attachments = obj.get("attachments")
    for item in attachments if isinstance(attachments, list) else []:
        if isinstance(item, dict):
            blocks.append(
                Block(
                    ATTACHMENT,
                    name=text_of(item.get("filename")),
                    mime_type=text_of(item.get("mime_type")),
                    size=_size(item.get("size")),
                )
            )
    reaction = obj.get("reaction")
    if isinstance(reaction, dict):
        emojis = reaction.get("emojis")
        emojis = [e for e in emojis if isinstance(e, str)] if isinstance(emojis, list) else []
        blocks.append(
            Block(
                REACTION, target_id=text_of(reaction.get("message_id")), emojis=emojis, text=" ".join(emojis)
            )
        )
    return Entry(
        id=text_of(obj.get("msg_id")) or f"line:{line}",
        parent_id=None,
        kind=MESSAGE,
        role=text_of(obj.get("role")),
        timestamp=parse_timestamp(obj.get("ts")),
        blocks=blocks,
        line=line,
        sender=text_of(obj.get("sender")),
    )


# Legacy Markdown archives


def read(
    path: Path, start_offset: int = 0, start_line: int = 0, max_event_bytes: int = 0
) -> ReadResult | None:
    """Legacy .md sessions; None for JSON Lines, which the generic reader handles.

    Markdown turns have no ids of their own, so the whole file is parsed each
    time and only the turns starting at or after start_offset are returned.
    max_event_bytes goes unused: nothing in these files is inflated.
    """
    path = Path(path)
    if path.suffix != ".md":
        return None
    try:
        data = read_regular(path)
    except OSError as error:
        return ReadResult([], [Problem(str(path), 0, 0, f"cannot read: {error}")], start_offset, start_line)
    entries, problems, lines = parse_markdown(data, str(path))
    entries = [e for e in entries if e.offset >= start_offset]
    problems = [p for p in problems if p.offset >= start_offset]
    return ReadResult(entries, problems, len(data), lines)


def parse_markdown(data: bytes, path: str = "") -> tuple[list[Entry], list[Problem], int]:
    """A legacy history.md into message entries, problems and the line count.

    The agent wrote each turn as "### user (sender)" or "### assistant", then
    the content, then a blank line. Content is trimmed, as the agent did.
    """
    entries: list[Entry] = []
    problems: list[Problem] = []
    current: Entry | None = None
    body: list[str] = []
    stray = False  # text before the first heading, reported once

    def flush() -> None:
        if current is not None:
            text = "\n".join(body).strip()
            if text:
                current.blocks.append(Block(TEXT, text=text))
            entries.append(current)

    offset = number = 0
    for raw in data.splitlines(keepends=True):
        number += 1
        line_offset, offset = offset, offset + len(raw)
        content = raw.rstrip(b"\r\n")
        try:
            text = content.decode("utf-8")
        except UnicodeDecodeError as bad:
            problems.append(
                Problem(
                    path,
                    number,
                    line_offset,
                    f"not valid UTF-8 at byte {bad.start}",
                    content[:200].decode("utf-8", "replace"),
                )
            )
            text = content.decode("utf-8", "replace")
        role, sender = _md_heading(text)
        if role:
            flush()
            current = Entry(
                id=f"line:{number}",
                parent_id=None,
                kind=MESSAGE,
                role=role,
                sender=sender,
                line=number,
                offset=line_offset,
            )
            body = []
        elif current is not None:
            body.append(text)
        elif text.strip() and not stray:
            stray = True
            problems.append(
                Problem(
                    path,
                    number,
                    line_offset,
                    "text before the first '### user' or '### assistant' heading",
                    text[:200],
                )
            )
    flush()
    return entries, problems, number


def _md_heading(text: str) -> tuple[str, str]:
    """("user", "alice@example.com") for "### user (alice@example.com)", else ("", "")."""
    if not text.startswith("### "):
        return "", ""
    heading = text[4:].strip()
    role, _, rest = heading.partition(" (")
    if role not in _MD_ROLES:
        return "", ""
    sender = rest[:-1] if rest.endswith(")") else rest
    return role, sender.strip()


# Layout


def discover(root: Path) -> Iterator[SessionFile]:
    root = Path(root)
    found: list[SessionFile] = []
    for folder in _jid_folders(root):
        jid = folder.name
        sessions = []
        files, folders = listing(folder)
        for name in ("history.jsonl", "history.md"):
            if name in files:
                sessions.append(SessionFile(folder / name, FORMAT, f"{jid}/{name}", jid=jid, status="active"))
        if "sessions" in folders:
            archive = folder / "sessions"
            for name in listing(archive)[0]:
                if name.endswith((".jsonl", ".md")) and not name.startswith("."):
                    sessions.append(_archived(archive / name, jid))
        room = is_room_jid(jid)
        for session in sessions:
            session.channel = "xmpp"
            session.peer_kind = "group" if room else "direct"
            session.peer_id = jid
            session.extra["room"] = room
        found.extend(sessions)
    yield from sorted(found, key=lambda s: s.key)


def _archived(path: Path, jid: str) -> SessionFile:
    session = SessionFile(
        path, FORMAT, f"{jid}/sessions/{path.name}", jid=jid, status="archived", title=path.stem
    )
    if _ARCHIVE_NAME.match(path.stem):
        try:
            # /new names archives by chrono::Utc::now(), so the name is UTC. Not strptime:
            # its first call in a process imports and compiles its parser (10-15 ms).
            name = path.stem
            archived = datetime(
                int(name[:4]),
                int(name[4:6]),
                int(name[6:8]),
                int(name[9:11]),
                int(name[11:13]),
                int(name[13:15]),
                tzinfo=UTC,
            )
        except ValueError:
            return session
        session.title = archived.strftime("%Y-%m-%d %H:%M:%S")
        session.extra["archived_at"] = archived.isoformat()
    return session


def _jid_folders(root: Path) -> list[Path]:
    return [root / name for name in listing(root)[1] if "@" in name and not name.startswith(".")]


def is_room_jid(jid: str) -> bool:
    """A MUC room by its domain. Rooms on other domains show themselves by their
    "nick@muc" senders, which the indexer sees as it reads the lines (discovery
    opens no file: a re-scan of thousands of JIDs must stay cheap)."""
    return jid.partition("@")[2].lower().startswith(ROOM_DOMAIN_PREFIXES)


def is_room_sender(sender: str) -> bool:
    """A "nick@muc" sender: the agent writes room members so, whatever the room's domain."""
    return sender.endswith(ROOM_SENDER_SUFFIX)


# Detection

# Keys that belong to the other formats' lines: Claude Code, the Go agent, OpenClaw.
_FOREIGN_KEYS = ("parentUuid", "sessionId", "parent_id", "cwd", "parentId", "sessionKey", "uuid")


def looks_like(path: Path, first: dict | None) -> bool:
    path = Path(path)
    if path.is_dir():
        return _looks_like_root(path)
    if path.suffix == ".md":
        return _is_session_location(path) and path.name not in GLOBAL_FILES
    if isinstance(first, dict):
        if any(key in first for key in _FOREIGN_KEYS):
            return False
        if "jid" in first and "created" in first:
            return True
        return ("msg_id" in first or "sender" in first) and "role" in first and "content" in first
    return path.suffix == ".jsonl" and _is_session_location(path)


def _is_session_location(path: Path) -> bool:
    """history.* in a JID folder, or a file in a JID folder's sessions/."""
    if path.stem == "history":
        return "@" in path.parent.name
    return path.parent.name == "sessions" and "@" in path.parent.parent.name


def _looks_like_root(path: Path) -> bool:
    try:
        names = set(os.listdir(path))  # exact names: OpenClaw workspaces have IDENTITY.md
    except OSError:
        return False
    if names & set(GLOBAL_FILES):
        return True
    for folder in _jid_folders(path):
        if (
            (folder / "history.jsonl").is_file()
            or (folder / "history.md").is_file()
            or (folder / "sessions").is_dir()
        ):
            return True
    return False


THIS_FORMAT = Format(
    FORMAT, "Fluux", "marks/fluux_xmpp.svg", room_sender=is_room_sender, room_address=is_room_jid
)  # two chat bubbles
