"""Fluux Agent memory workspaces: list, explain and edit them the way the agent reads them.

The agent keeps one memory root (``memory.path`` in its config)::

    identity.md personality.md instructions.md        global persona, all optional
    alice@example.com/                                 one folder per bare JID (user or room)
        identity.md personality.md instructions.md     per-JID persona overrides, optional
        user.md  (legacy context.md)                   profile, under "## About this user"
        memory.md                                      notes, under "## Notes and memory"
        knowledge.jsonl                                {"key", "content", "ts"} per line
        history.jsonl  (legacy history.md)             the active session
        sessions/YYYYMMDD-HHMMSS.jsonl (or .md)        archives made by /new
        files/<uuid>_<name>                            downloaded attachments

Plain Python, no Django: the personas views call these functions.

Checked against processone/fluux-agent (``src/agent/memory.rs``, ``src/agent/runtime.rs``,
``src/actors/inference.rs``, ``src/actors/command.rs``, ``src/agent/files.rs``):

- A persona file counts when it exists and is not blank after Rust's ``str::trim``; the JID's
  own file wins over the global one, and counts even when no global file exists.
- The built-in default prompt (``default_prompt``) replaces the three parts only when none of
  them is in effect for that JID after overrides.
- Parts are trimmed; identity and personality are each followed by a blank line, instructions
  by nothing. So a workspace without instructions leaves the agent's trailing blank line, and the
  profile heading then follows after three empty lines: ``effective_prompt`` keeps that.
- ``user.md`` when it exists (blank means no profile, and ``context.md`` is then not read),
  else ``context.md``; then ``memory.md``. Each is trimmed and appended after a blank line under
  its heading, and left out when blank or missing.
- The agent appends ``Current date: Monday, June 2, 2025`` (chrono ``%A, %B %-d, %Y``, local
  time) on every turn; ``effective_prompt`` shows it as a section with source ``"runtime"``.
- knowledge.jsonl, files/, sessions/ and history never enter the system prompt.
- A file that is not UTF-8 makes the agent's ``read_to_string`` fail the whole turn, so such a
  file gives an error section and an empty ``Prompt.text``, never guessed text.

Public API:

    UnsafePath, Conflict, NotRegularFile                    exceptions
    open_regular(path) -> BinaryIO, read_regular(path) -> bytes    never a FIFO, device or folder
    resolve_jid_dir(root, jid) -> Path
    resolve_member(folder, name, subdir=None) -> Path       subdir: "files" or "sessions"
    list_workspace(root) -> Workspace                       FileInfo, JidDir
    jid_entry(root, jid) -> JidDir                          one JID, without listing the root
    global_file_info(root, name) -> FileInfo                one global persona file
    is_room(jid, jid_dir=None) -> bool
    effective_prompt(root, jid, agent_name, today=None) -> Prompt    Section
    default_prompt(agent_name) -> str, format_current_date(day) -> str
    rust_trim(text) -> str, is_blank(text) -> bool
    jid_status(root, jid) -> JidStatus
    read_knowledge(path) -> Knowledge                       KnowledgeEntry, LineProblem
    list_files(jid_dir) -> list[StoredFile]
    list_sessions(jid_dir) -> list[SessionFile]
    search_memory(root, query) -> list[SearchHit]
    scan_secrets(text, ignore=()) -> list[SecretFinding]
    scan_tree(root, jid=None) -> list[SecretFinding]        with .file set; jid: one folder only
    iter_tree_findings(root, jid=None)                      the same, lazily, file by file
    file_version(path) -> str                               sha256 hex, or "absent"
    locked(folder)                                          a folder's write lock, across processes
    atomic_write(path, text_or_bytes, expected_version, record) -> str     the new version
    remove_file(path, expected_version, record), remove_override(jid_dir, name, version, record)
    archive_session(jid_dir, now, expected_version, record) -> Path | None /new, never overwriting
    forget_plan(jid_dir) -> ForgetPlan                      what /forget erases, every path checked
    forget_user(jid_dir, expected_version, before_erasing) -> list[str]    /forget

Every write holds its folder's lock from the version check to the rename, and takes a record
hook (the views' database transaction) that wraps the rename: see _swap.

A room is a JID whose domain starts with conference., muc., rooms. or chat., or whose
history.jsonl has a sender ending in "@muc" within its first 200 lines. (The agent itself asks
its configuration, which the viewer does not have.)
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import itertools
import json
import math
import mimetypes
import os
import re
import shutil
import stat
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import BinaryIO

IDENTITY = "identity.md"
PERSONALITY = "personality.md"
INSTRUCTIONS = "instructions.md"
PERSONA_FILES = (IDENTITY, PERSONALITY, INSTRUCTIONS)  # in prompt order
PROFILE = "user.md"
LEGACY_PROFILE = "context.md"
MEMORY = "memory.md"
KNOWLEDGE = "knowledge.jsonl"
HISTORY = "history.jsonl"
LEGACY_HISTORY = "history.md"
FILES_DIR = "files"
SESSIONS_DIR = "sessions"
JID_FILES = (*PERSONA_FILES, PROFILE, LEGACY_PROFILE, MEMORY, KNOWLEDGE, HISTORY, LEGACY_HISTORY)
ABSENT = "absent"
ROOM_DOMAIN_PREFIXES = ("conference.", "muc.", "rooms.", "chat.")
ROOM_SCAN_LINES = 200

# Rust's str::trim strips Unicode White_Space (char::is_whitespace). Python's str.strip() also
# strips U+001C..U+001F, which Rust keeps, so the set is spelled out.
RUST_WHITESPACE = "".join(
    chr(c)
    for c in (*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B))
    + (0x2028, 0x2029, 0x202F, 0x205F, 0x3000)
)

# chrono's %A and %B are English whatever the locale, unlike strftime.
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)


class UnsafePath(ValueError):
    """A JID or file name that is malformed, missing, or leads outside its folder."""


class NotRegularFile(OSError):
    """A FIFO, device, socket or folder where a file is expected: never opened, so never hung on."""


class Conflict(Exception):
    """The file changed on disk since it was read; nothing was written."""

    def __init__(self, path: Path, current_version: str, current_text: str | None):
        super().__init__(f"{path} changed on disk (now {current_version[:12]})")
        self.path = path
        self.current_version = current_version
        self.current_text = current_text  # None when the file is gone


# Whitespace and text


def rust_trim(text: str) -> str:
    return text.strip(RUST_WHITESPACE)


def is_blank(text: str) -> bool:
    return not rust_trim(text)


def default_prompt(agent_name: str) -> str:
    """The agent's built-in prompt, used when no persona file is in effect for a JID."""
    return (
        f"You are {agent_name}, a personal AI assistant accessible via XMPP.\n"
        "You are direct, helpful, and concise. You respond in the user's language.\n\n"
        "Rules:\n"
        "- Respond concisely, no excessive markdown formatting\n"
        "- If asked to execute an action (send an email, modify a file...), describe what you "
        "would do but clarify that you cannot yet execute actions (skills are coming in v0.2)\n"
        "- You have memory of previous conversations with this user"
    )


def format_current_date(day: date) -> str:
    """chrono's "%A, %B %-d, %Y": "Monday, June 2, 2025"."""
    return f"{_WEEKDAYS[day.weekday()]}, {_MONTHS[day.month - 1]} {day.day}, {day.year:04d}"


# Path safety

_ENCODED_SEPARATORS = ("%2f", "%5c", "%2e%2e", "%00")
NAME_MAX = 255  # bytes in one file name, on every file system the agent runs on


def _check_name(name: object, what: str) -> str:
    if not isinstance(name, str) or not name:
        raise UnsafePath(f"empty {what}")
    lowered = name.lower()
    if name in (".", "..") or ".." in name:
        raise UnsafePath(f"{what} {name!r} contains '..'")
    if "/" in name or "\\" in name or "\x00" in name or os.path.isabs(name):
        raise UnsafePath(f"{what} {name!r} contains a path separator")
    if any(code in lowered for code in _ENCODED_SEPARATORS):
        raise UnsafePath(f"{what} {name!r} contains an encoded separator")
    if len(name.encode("utf-8", errors="surrogatepass")) > NAME_MAX:
        raise UnsafePath(f"{what} is longer than {NAME_MAX} bytes")
    return name


def _resolve(path: Path) -> Path:
    try:
        return path.resolve()
    except RuntimeError as exc:  # Python 3.11 raises it for a loop, without an errno
        raise UnsafePath(f"{path.name!r} leads into a loop of links") from exc
    except OSError as exc:
        raise UnsafePath(f"cannot resolve {path.name!r}: {exc.strerror or exc}") from exc


def resolve_jid_dir(root: Path, jid: str) -> Path:
    """The real path of the existing folder directly under root that jid names."""
    _check_name(jid, "JID")
    base = _resolve(Path(root))
    resolved = _resolve(base / jid)
    if resolved.parent != base:
        raise UnsafePath(f"JID {jid!r} leads outside the memory root")
    if not resolved.is_dir():
        raise UnsafePath(f"no JID folder {jid!r}")
    return resolved


def resolve_member(folder: Path, name: str, subdir: str | None = None) -> Path:
    """The real path of name inside folder (or its files/ or sessions/); it need not exist."""
    _check_name(name, "file name")
    base = _resolve(Path(folder))
    if subdir is not None:
        if subdir not in (FILES_DIR, SESSIONS_DIR):
            raise UnsafePath(f"unknown folder {subdir!r}")
        inner = _resolve(base / subdir)
        if inner.parent != base:
            raise UnsafePath(f"{subdir}/ leads outside its JID folder")
        base = inner
    resolved = _resolve(base / name)
    if resolved.parent != base:
        raise UnsafePath(f"{name!r} leads outside its folder")
    return resolved


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        kind = next((kind for test, kind in _KINDS if test(mode)), "not a file")
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind})", str(path))


def open_regular(path: Path) -> BinaryIO:
    """path opened for reading, refusing anything but a regular file (NotRegularFile).

    Opening a FIFO blocks until a writer comes, and a device may act on open: both are
    refused from a stat before opening. O_NONBLOCK covers a file swapped for a FIFO between
    the stat and the open, and the open file is checked again.
    """
    _check_regular(path, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        _check_regular(path, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file; raises FileNotFoundError, NotRegularFile or another OSError."""
    with open_regular(path) as handle:
        return handle.read()


def read_error(exc: OSError) -> str:
    """How a page says that a file could not be read."""
    if isinstance(exc, NotRegularFile):
        return exc.strerror
    return f"cannot read: {exc.strerror or exc}"


def _read_text(path: Path) -> tuple[str | None, str | None]:
    """(text, None), (None, None) when absent, or (None, error) when unreadable or not UTF-8."""
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        return None, read_error(exc)
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError as exc:
        return None, f"not valid UTF-8 (byte {exc.start})"


def _load(folder: Path, name: str) -> tuple[str | None, str | None]:
    try:
        path = resolve_member(folder, name)
    except UnsafePath as exc:
        return None, str(exc)
    return _read_text(path)


def _mtime(st: os.stat_result) -> datetime:
    return datetime.fromtimestamp(st.st_mtime, tz=UTC)


# Workspace listing


@dataclass(frozen=True, slots=True)
class FileInfo:
    name: str
    present: bool
    size: int = 0
    mtime: datetime | None = None
    blank: bool = False  # Markdown: whitespace only; other files: empty
    error: str | None = None  # unreadable, not UTF-8, or leading outside its folder

    @property
    def in_effect(self) -> bool:
        return self.present and not self.blank and self.error is None


@dataclass(slots=True)
class JidDir:
    jid: str
    path: Path
    is_room: bool
    files: dict[str, FileInfo]  # the known files present, by name
    dirs: tuple[str, ...]  # "files" and "sessions" when present
    other: tuple[str, ...]  # anything else; folders end with "/"
    overrides: tuple[str, ...]  # persona files this JID overrides (present, not blank)

    def has(self, name: str) -> bool:
        return name in self.files or name.rstrip("/") in self.dirs


@dataclass(slots=True)
class Workspace:
    root: Path
    global_files: tuple[FileInfo, ...]  # identity, personality, instructions
    jids: tuple[JidDir, ...]
    other: tuple[str, ...] = ()  # other entries at the top (README.md...)
    skipped: tuple[str, ...] = ()  # folders that are not safe JID folders

    def global_file(self, name: str) -> FileInfo:
        return next(info for info in self.global_files if info.name == name)


def _file_info(folder: Path, name: str) -> FileInfo:
    try:
        path = resolve_member(folder, name)
        st = path.stat()
    except UnsafePath as exc:
        return FileInfo(name, present=True, error=str(exc))
    except FileNotFoundError:
        return FileInfo(name, present=False)
    except OSError as exc:
        return FileInfo(name, present=True, error=f"cannot read: {exc.strerror or exc}")
    try:
        _check_regular(path, st.st_mode)
    except NotRegularFile as exc:
        return FileInfo(name, True, 0, _mtime(st), error=exc.strerror)
    blank, error = st.st_size == 0, None
    # Only Markdown is read for blankness: transcripts can be large and never count as overrides.
    if name.endswith(".md") and st.st_size:
        text, error = _read_text(path)
        blank = text is not None and is_blank(text)
    return FileInfo(name, True, st.st_size, _mtime(st), blank, error)


def _room_domain(jid: str) -> bool:
    domain = jid.rsplit("@", 1)[-1].lower()
    return domain.startswith(ROOM_DOMAIN_PREFIXES)


def _has_muc_sender(history: Path) -> bool:
    try:
        with open_regular(history) as handle:
            for raw in itertools.islice(handle, ROOM_SCAN_LINES):
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):  # RecursionError: nested too deep
                    continue
                sender = obj.get("sender") if isinstance(obj, dict) else None
                if isinstance(sender, str) and sender.endswith("@muc"):
                    return True
    except OSError:
        pass
    return False


def is_room(jid: str, jid_dir: Path | None = None) -> bool:
    """A MUC room by its domain, or by "nick@muc" senders early in its history."""
    if _room_domain(jid):
        return True
    if jid_dir is None:
        return False
    try:
        return _has_muc_sender(resolve_member(Path(jid_dir), HISTORY))
    except UnsafePath:
        return False


def _jid_entry(jid: str, jid_dir: Path) -> JidDir:
    files: dict[str, FileInfo] = {}
    dirs: list[str] = []
    other: list[str] = []
    for entry in sorted(jid_dir.iterdir(), key=lambda p: p.name):
        if entry.name in JID_FILES:
            files[entry.name] = _file_info(jid_dir, entry.name)
        elif entry.name in (FILES_DIR, SESSIONS_DIR) and entry.is_dir():
            dirs.append(entry.name)
        else:
            other.append(entry.name + "/" if entry.is_dir() else entry.name)
    overrides = tuple(name for name in PERSONA_FILES if name in files and files[name].in_effect)
    return JidDir(jid, jid_dir, is_room(jid, jid_dir), files, tuple(dirs), tuple(other), overrides)


def jid_entry(root: Path, jid: str) -> JidDir:
    """One JID's listing, as list_workspace gives it, without walking the rest of the root."""
    return _jid_entry(jid, resolve_jid_dir(root, jid))


def global_file_info(root: Path, name: str) -> FileInfo:
    if name not in PERSONA_FILES:
        raise UnsafePath(f"{name!r} is not a persona file")
    return _file_info(_resolve(Path(root)), name)


def list_workspace(root: Path) -> Workspace:
    base = _resolve(Path(root))
    jids: list[JidDir] = []
    other: list[str] = []
    skipped: list[str] = []
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if entry.name in PERSONA_FILES:
            continue
        if not entry.is_dir():
            other.append(entry.name)
            continue
        try:
            jid_dir = resolve_jid_dir(base, entry.name)
        except UnsafePath:
            skipped.append(entry.name)
            continue
        jids.append(_jid_entry(entry.name, jid_dir))
    global_files = tuple(_file_info(base, name) for name in PERSONA_FILES)
    return Workspace(base, global_files, tuple(jids), tuple(other), tuple(skipped))


# Effective system prompt


@dataclass(frozen=True, slots=True)
class Section:
    kind: str  # identity, personality, instructions, default, profile, memory, date
    title: str
    source: str  # path relative to the root, "default" or "runtime"
    text: str  # the trimmed body as it enters the prompt, without its heading
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str  # empty when a section has an error: the agent would fail the turn
    sections: tuple[Section, ...]

    @property
    def errors(self) -> tuple[str, ...]:
        return tuple(f"{s.source}: {s.error}" for s in self.sections if s.error)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def uses_default(self) -> bool:
        return any(s.kind == "default" for s in self.sections)


_TITLES = {
    IDENTITY: ("identity", "Identity"),
    PERSONALITY: ("personality", "Personality"),
    INSTRUCTIONS: ("instructions", "Instructions"),
}


def _persona_section(root: Path, jid: str, jid_dir: Path, name: str) -> Section | None:
    """The JID's file when present and not blank, else the global one, else None."""
    kind, title = _TITLES[name]
    text, error = _load(jid_dir, name)
    if error:
        return Section(kind, title, f"{jid}/{name}", "", error)
    if text is not None and not is_blank(text):
        return Section(kind, title, f"{jid}/{name}", rust_trim(text))
    text, error = _load(root, name)
    if error:
        return Section(kind, title, name, "", error)
    if text is not None and not is_blank(text):
        return Section(kind, title, name, rust_trim(text))
    return None


def _profile_section(jid: str, jid_dir: Path) -> Section | None:
    # An existing user.md decides alone, even blank: context.md is then not read.
    for name in (PROFILE, LEGACY_PROFILE):
        text, error = _load(jid_dir, name)
        if error:
            return Section("profile", "About this user", f"{jid}/{name}", "", error)
        if text is not None:
            if is_blank(text):
                return None
            return Section("profile", "About this user", f"{jid}/{name}", rust_trim(text))
    return None


def _memory_section(jid: str, jid_dir: Path) -> Section | None:
    text, error = _load(jid_dir, MEMORY)
    if error:
        return Section("memory", "Notes and memory", f"{jid}/{MEMORY}", "", error)
    if text is None or is_blank(text):
        return None
    return Section("memory", "Notes and memory", f"{jid}/{MEMORY}", rust_trim(text))


def _assemble(sections: list[Section]) -> str:
    parts = []
    for section in sections:
        if section.kind in ("identity", "personality"):
            parts.append(section.text + "\n\n")
        elif section.kind in ("instructions", "default"):
            parts.append(section.text)
        elif section.kind == "profile":
            parts.append("\n\n## About this user\n" + section.text)
        elif section.kind == "memory":
            parts.append("\n\n## Notes and memory\n" + section.text)
        elif section.kind == "date":
            parts.append("\n\nCurrent date: " + section.text)
    return "".join(parts)


def effective_prompt(root: Path, jid: str, agent_name: str, today: date | None = None) -> Prompt:
    """The system prompt the agent sends for jid, section by section."""
    base = _resolve(Path(root))
    jid_dir = resolve_jid_dir(base, jid)
    persona = [s for name in PERSONA_FILES if (s := _persona_section(base, jid, jid_dir, name))]
    sections = list(persona)
    if not persona:
        sections.append(Section("default", "Default prompt", "default", default_prompt(agent_name)))
    sections += [s for s in (_profile_section(jid, jid_dir), _memory_section(jid, jid_dir)) if s]
    day = today or date.today()  # chrono::Local, like the agent
    sections.append(Section("date", "Current date", "runtime", format_current_date(day)))
    failed = any(s.error for s in sections)
    return Prompt("" if failed else _assemble(sections), tuple(sections))


# Memory audit


def _is_str_or_none(value: object) -> bool:
    return value is None or isinstance(value, str)


def _is_attachment(value: object) -> bool:
    return isinstance(value, dict) and all(
        isinstance(value.get(k), str) for k in ("filename", "mime_type", "size")
    )


def _is_reaction(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("message_id"), str)
        and isinstance(value.get("emojis"), list)
        and all(isinstance(e, str) for e in value["emojis"])
    )


def _counts_as_message(obj: object) -> bool:
    """What parse_session keeps: a well-typed message whose display text is not empty."""
    if not isinstance(obj, dict) or obj.get("type") != "message":
        return False
    if not isinstance(obj.get("role"), str) or not isinstance(obj.get("content"), str):
        return False
    if not all(_is_str_or_none(obj.get(k)) for k in ("msg_id", "sender", "ts")):
        return False
    attachments, reaction = obj.get("attachments"), obj.get("reaction")
    if attachments is not None and not (
        isinstance(attachments, list) and all(map(_is_attachment, attachments))
    ):
        return False
    if reaction is not None and not _is_reaction(reaction):
        return False
    return bool(obj["content"] or reaction is not None or attachments)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # serde_json refuses NaN and Infinity


def _json_lines(text: str):
    """(line number, parsed object or None) for each non-blank line, as the agent splits them."""
    for number, raw in enumerate(text.split("\n"), start=1):
        line = rust_trim(raw)
        if not line:
            continue
        try:
            yield number, json.loads(line, parse_constant=_reject_constant)
        except (ValueError, RecursionError):  # RecursionError: nested too deep
            yield number, None


def _count_messages(text: str) -> int:
    return sum(1 for _, obj in _json_lines(text) if _counts_as_message(obj))


@dataclass(frozen=True, slots=True)
class LineProblem:
    line: int  # 0: the whole file
    message: str


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    key: str
    content: str
    ts: str
    line: int


@dataclass(slots=True)
class Knowledge:
    entries: list[KnowledgeEntry] = field(default_factory=list)  # one per key, the latest line
    problems: list[LineProblem] = field(default_factory=list)
    valid_lines: int = 0  # what the agent's /status counts, repeated keys included


def read_knowledge(path: Path) -> Knowledge:
    result = Knowledge()
    try:
        data = read_regular(Path(path))
    except FileNotFoundError:
        return result
    except OSError as exc:
        result.problems.append(LineProblem(0, read_error(exc)))
        return result
    by_key: dict[str, KnowledgeEntry] = {}
    undecodable = False
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            line = rust_trim(raw.decode("utf-8"))
        except UnicodeDecodeError:
            undecodable = True
            result.problems.append(LineProblem(number, "not valid UTF-8"))
            continue
        if not line:
            continue
        try:
            obj = json.loads(line, parse_constant=_reject_constant)
        except ValueError as exc:
            result.problems.append(LineProblem(number, f"invalid JSON: {exc}"))
            continue
        except RecursionError:
            result.problems.append(LineProblem(number, "invalid JSON: nested too deep"))
            continue
        fields = ("key", "content", "ts")
        if not isinstance(obj, dict) or not all(isinstance(obj.get(k), str) for k in fields):
            result.problems.append(LineProblem(number, "needs string fields key, content and ts"))
            continue
        result.valid_lines += 1
        if (earlier := by_key.get(obj["key"])) is not None:
            result.problems.append(
                LineProblem(
                    number,
                    f"key {obj['key']!r} repeats line {earlier.line}; this later line is shown, "
                    "but the agent's knowledge_get returns the first",
                )
            )
        by_key[obj["key"]] = KnowledgeEntry(obj["key"], obj["content"], obj["ts"], number)
    if undecodable:
        result.problems.insert(0, LineProblem(0, "not valid UTF-8: the agent cannot read this store"))
    result.entries = list(by_key.values())
    return result


@dataclass(frozen=True, slots=True)
class JidStatus:
    """The memory part of the agent's /status, for one JID."""

    jid: str
    is_room: bool
    messages: int  # "Your session: N messages" / "Room messages: N"
    archived_sessions: int
    files: int
    knowledge_entries: int
    profile: bool  # "User profile: yes/none" (user.md, else context.md, not blank)
    memory: bool  # "User memory: yes/none"
    instructions: bool  # "Workspace: instructions=, identity=, personality=" after overrides
    identity: bool
    personality: bool
    errors: tuple[str, ...] = ()


def _count_entries(folder: Path, keep) -> int:
    try:
        return sum(1 for entry in folder.iterdir() if keep(entry))
    except OSError:  # absent, not a folder, or unreadable: the agent's read_dir fails the same way
        return 0


def jid_status(root: Path, jid: str) -> JidStatus:
    base = _resolve(Path(root))
    jid_dir = resolve_jid_dir(base, jid)
    errors = []
    text, error = _load(jid_dir, HISTORY)
    if error:
        errors.append(f"{jid}/{HISTORY}: {error}")
    persona = {name: _persona_section(base, jid, jid_dir, name) for name in PERSONA_FILES}
    profile, memory = _profile_section(jid, jid_dir), _memory_section(jid, jid_dir)
    for section in (*persona.values(), profile, memory):
        if section and section.error:
            errors.append(f"{section.source}: {section.error}")
    try:
        knowledge = read_knowledge(resolve_member(jid_dir, KNOWLEDGE))
    except UnsafePath as exc:
        knowledge = Knowledge()
        errors.append(f"{jid}/{KNOWLEDGE}: {exc}")

    def in_effect(section: Section | None) -> bool:
        return section is not None and not section.error

    return JidStatus(
        jid=jid,
        is_room=is_room(jid, jid_dir),
        messages=_count_messages(text) if text else 0,
        # The agent counts by extension only, folders included.
        archived_sessions=_count_entries(jid_dir / SESSIONS_DIR, lambda p: p.suffix in (".jsonl", ".md")),
        files=_count_entries(jid_dir / FILES_DIR, Path.is_file),
        knowledge_entries=knowledge.valid_lines,
        profile=in_effect(profile),
        memory=in_effect(memory),
        instructions=in_effect(persona[INSTRUCTIONS]),
        identity=in_effect(persona[IDENTITY]),
        personality=in_effect(persona[PERSONALITY]),
        errors=tuple(errors),
    )


_UUID_PREFIX = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}_(.+)$", re.I)


@dataclass(frozen=True, slots=True)
class StoredFile:
    name: str  # on disk: "<uuid>_<name>"
    original_name: str
    mime_type: str
    size: int | None  # None with an error
    mtime: datetime | None
    previewable: bool
    path: Path | None  # the real path; None with an error
    error: str | None = None  # why it is never opened: a bad link, or not a regular file


def _entries(folder: Path) -> list[Path]:
    """What folder holds; nothing when it is absent, not a folder, or unreadable."""
    try:
        return list(folder.iterdir())
    except OSError:
        return []


def _entry_problem(jid_dir: Path, name: str, subdir: str | None) -> tuple[Path, os.stat_result] | str | None:
    """(real path, stat) of a listed entry that is a regular file inside the JID folder, or why not.

    None when it is gone (removed since it was listed). A link leaving the folder is refused
    from its path alone: it is never followed, so what lies outside is neither read nor stated.
    """
    try:
        path = resolve_member(jid_dir, name, subdir)
        st = path.stat()
        _check_regular(path, st.st_mode)
    except UnsafePath as exc:
        return str(exc)
    except FileNotFoundError:
        entry = Path(jid_dir) / subdir / name if subdir else Path(jid_dir) / name
        return "a broken link: what it points to does not exist" if entry.is_symlink() else None
    except OSError as exc:
        return read_error(exc)
    return path, st


def _subdir_problem(jid_dir: Path, subdir: str) -> str | None:
    """Why files/ or sessions/ is not listed at all: a link leaving the JID folder, or a loop."""
    try:
        resolve_member(jid_dir, "-", subdir)
    except UnsafePath as exc:
        return str(exc)
    return None


def _previewable(mime_type: str) -> bool:
    # SVG can carry script, so it is not shown inline.
    return mime_type.startswith(("image/", "text/")) and mime_type != "image/svg+xml"


def list_files(jid_dir: Path) -> list[StoredFile]:
    """Downloaded attachments in files/, sorted by original name.

    A bad link or anything but a regular file is listed with its error, and never opened.
    """
    jid_dir = Path(jid_dir)
    if problem := _subdir_problem(jid_dir, FILES_DIR):
        return [
            StoredFile(f"{FILES_DIR}/", f"{FILES_DIR}/", "inode/directory", None, None, False, None, problem)
        ]
    found = []
    for entry in _entries(jid_dir / FILES_DIR):
        match = _UUID_PREFIX.match(entry.name)
        original = match.group(1) if match else entry.name
        mime_type = mimetypes.guess_type(original)[0] or "application/octet-stream"
        checked = _entry_problem(jid_dir, entry.name, FILES_DIR)
        if checked is None:
            continue
        if isinstance(checked, str):
            found.append(StoredFile(entry.name, original, mime_type, None, None, False, None, checked))
            continue
        path, st = checked
        found.append(
            StoredFile(entry.name, original, mime_type, st.st_size, _mtime(st), _previewable(mime_type), path)
        )
    return sorted(found, key=lambda f: (f.original_name.lower(), f.name))


_ARCHIVE_NAME = re.compile(r"^(\d{8}-\d{6})(?:-(\d+))?\.(?:jsonl|md)$")


@dataclass(frozen=True, slots=True)
class SessionFile:
    name: str  # "history.jsonl", or "sessions/20250601-143022.jsonl"
    path: Path | None  # the real path; None with an error
    active: bool
    format: str  # "jsonl" or "md" (legacy)
    size: int | None  # None with an error
    mtime: datetime | None
    error: str | None = None  # why it is never opened: a bad link, or not a regular file


def _archive_order(path: Path) -> tuple:
    # Dated names by stamp, then "-N" (two archives in one second); odd names sort last.
    if match := _ARCHIVE_NAME.match(path.name):
        return (1, match.group(1), int(match.group(2) or 0), "")
    return (0, "", 0, path.name)


def _session_file(jid_dir: Path, entry: Path, subdir: str | None) -> SessionFile | None:
    name = f"{subdir}/{entry.name}" if subdir else entry.name
    active, fmt = subdir is None, entry.suffix[1:]
    checked = _entry_problem(jid_dir, entry.name, subdir)
    if checked is None:
        return None
    if isinstance(checked, str):
        return SessionFile(name, None, active, fmt, None, None, checked)
    path, st = checked
    return SessionFile(name, path, active, fmt, st.st_size, _mtime(st))


def list_sessions(jid_dir: Path) -> list[SessionFile]:
    """The active session (and legacy history.md), then archives, newest first.

    A bad link or anything but a regular file is listed with its error, and never opened.
    """
    jid_dir = Path(jid_dir)
    found = []
    for name in (HISTORY, LEGACY_HISTORY):
        if os.path.lexists(jid_dir / name) and (session := _session_file(jid_dir, jid_dir / name, None)):
            found.append(session)
    if problem := _subdir_problem(jid_dir, SESSIONS_DIR):
        return [*found, SessionFile(f"{SESSIONS_DIR}/", None, False, "", None, None, problem)]
    archives = [entry for entry in _entries(jid_dir / SESSIONS_DIR) if entry.suffix in (".jsonl", ".md")]
    for entry in sorted(archives, key=_archive_order, reverse=True):
        if session := _session_file(jid_dir, entry, SESSIONS_DIR):
            found.append(session)
    return found


# Search and secrets


@dataclass(frozen=True, slots=True)
class SearchHit:
    jid: str
    file: str  # name inside the JID folder
    line: int
    text: str


def _jid_dirs(base: Path):
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        with contextlib.suppress(UnsafePath):
            yield entry.name, resolve_jid_dir(base, entry.name)


def _safe_files(folder: Path, suffixes: tuple[str, ...], subdir: str | None = None):
    """(name, real path) of regular files in folder (or its subdir) with one of suffixes."""
    scan = folder / subdir if subdir else folder
    for entry in sorted(_entries(scan), key=lambda p: p.name):
        if not entry.name.endswith(suffixes):
            continue
        with contextlib.suppress(UnsafePath, OSError):
            path = resolve_member(folder, entry.name, subdir)
            if path.is_file():
                yield entry.name, path


def _lines(path: Path) -> list[str]:
    # Undecodable bytes become U+FFFD: search and scanning still see the rest of the line.
    text = read_regular(path).decode("utf-8", errors="replace")
    return [line.removesuffix("\r") for line in text.split("\n")]


def search_memory(root: Path, query: str) -> list[SearchHit]:
    """Case-insensitive search over each JID's Markdown files and knowledge.jsonl."""
    needle = query.casefold()
    if not needle.strip():
        return []
    hits = []
    for jid, jid_dir in _jid_dirs(_resolve(Path(root))):
        for name, path in _safe_files(jid_dir, (".md", KNOWLEDGE)):
            if name.endswith(".jsonl") and name != KNOWLEDGE:
                continue
            try:
                lines = _lines(path)
            except OSError:
                continue
            hits += [
                SearchHit(jid, name, n, line) for n, line in enumerate(lines, 1) if needle in line.casefold()
            ]
    return hits


@dataclass(frozen=True, slots=True)
class SecretFinding:
    kind: str
    line: int
    column: int  # 1-based, in characters
    masked: str
    file: str = ""  # relative to the root, set by scan_tree


def _entropy(value: str) -> float:
    counts = [value.count(c) for c in set(value)]
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts)


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def _phone_digits_ok(value: str) -> bool:
    digits = sum(c.isdigit() for c in value)
    return 8 <= digits <= 15  # E.164 allows at most 15


# (kind, pattern, group holding the secret, extra check). Specific kinds come first: a later
# match overlapping an earlier one is dropped, so "sk-ant-..." is not also an "sk-" key.
_SECRET_PATTERNS = [
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"), 0, None),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{16,}"), 0, None),
    ("openai_key", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"), 0, _mixed),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"), 0, None),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0, None),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), 0, None),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0, None),
    ("bearer_token", re.compile(r"\bBearer\s+([A-Za-z0-9._~+/-]{16,}=*)"), 1, _mixed),
    (
        "secret_assignment",
        re.compile(
            r"(?i)\b(?:api[_-]?key|secret(?:[_-]?key)?|client[_-]?secret|access[_-]?(?:key|token)"
            r"|auth[_-]?token|token|password|passwd|pwd)[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_./+=~-]{16,})"
        ),
        1,
        lambda v: _mixed(v) and _entropy(v) >= 3.5,
    ),
    (
        "email",
        re.compile(r"(?<![\w.+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])"),
        0,
        None,
    ),
    # International: +CC then two to five groups; the digit count is checked after.
    (
        "phone",
        re.compile(r"(?<![\w+])\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}(?![\w.-]?\d)"),
        0,
        _phone_digits_ok,
    ),
    # National: (415) 555-2671, 415-555-2671, 06 12 34 56 78, 020 7183 8750, 07700 900123.
    # The guards keep out ISO dates, versions, IP addresses and longer digit runs.
    (
        "phone",
        re.compile(
            r"(?<![\w.:/+-])(?:\(\d{3}\) ?\d{3}[ .-]\d{4}|\d{3}[ .-]\d{3}[ .-]\d{4}"
            r"|0[1-9](?:[ .-]?\d{2}){4}|0\d{2} \d{4} \d{4}|0\d{4} \d{6})(?![\w.:-]?\d)"
        ),
        0,
        None,
    ),
]


def _mask(kind: str, value: str) -> str:
    if kind == "private_key":
        return value  # the BEGIN line itself is not secret, and says what kind of key follows
    if kind == "email":
        local, _, domain = value.partition("@")
        return local[0] + "*" * (len(local) - 1) + "@" + domain
    if kind == "phone":
        total = sum(c.isdigit() for c in value)
        seen = 0
        out = []
        for c in value:
            if c.isdigit():
                seen += 1
                out.append(c if seen > total - 2 else "*")
            else:
                out.append(c)
        return "".join(out)
    if len(value) <= 8:
        return value[0] + "*" * (len(value) - 1)
    return value[:4] + "*" * (len(value) - 6) + value[-2:]


def scan_secrets(text: str, ignore: tuple[str, ...] = ()) -> list[SecretFinding]:
    """Likely secrets and personal data in text; e-mail addresses in ignore (any case) are skipped."""
    ignored = {item.casefold() for item in ignore}
    findings = []
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        taken: list[tuple[int, int]] = []
        found = []
        for kind, pattern, group, check in _SECRET_PATTERNS:
            for match in pattern.finditer(line):
                start, end = match.span(group)
                value = match.group(group)
                if check and not check(value):
                    continue
                if kind == "email" and value.casefold() in ignored:
                    continue
                if any(start < t_end and t_start < end for t_start, t_end in taken):
                    continue
                taken.append((start, end))
                found.append(SecretFinding(kind, number, start + 1, _mask(kind, value)))
        findings += sorted(found, key=lambda f: f.column)
    return findings


def _memory_files(base: Path, only_jid: str | None = None):
    """(jid or None, path relative to the root, real path) of every memory file and transcript."""
    if only_jid is None:
        for name, path in _safe_files(base, (".md",)):
            yield None, name, path
        jid_dirs = _jid_dirs(base)
    else:
        jid_dirs = [(only_jid, resolve_jid_dir(base, only_jid))]
    for jid, jid_dir in jid_dirs:
        for name, path in _safe_files(jid_dir, (".md", ".jsonl")):
            yield jid, f"{jid}/{name}", path
        for name, path in _safe_files(jid_dir, (".md", ".jsonl"), SESSIONS_DIR):
            yield jid, f"{jid}/{SESSIONS_DIR}/{name}", path


def _scan_file(path: Path, ignore: tuple[str, ...]):
    # Line by line, so a large transcript is never held in memory whole.
    with open_regular(path) as handle:
        for number, raw in enumerate(handle, start=1):
            line = raw.decode("utf-8", errors="replace").rstrip("\n")
            for finding in scan_secrets(line, ignore):
                yield number, finding


def iter_tree_findings(root: Path, jid: str | None = None):
    """scan_tree, lazily: a caller can stop after enough findings without reading the rest.

    A file scanned to its end keeps its findings in _FINDINGS, under its size, mtime
    and inode: the report's later pages, and the next visit, read only what changed.
    """
    for owner, relative, path in _memory_files(_resolve(Path(root)), jid):
        ignore = (owner,) if owner else ()
        try:
            yield from _file_findings(path, relative, ignore)
        except OSError:
            continue


def _file_findings(path: Path, relative: str, ignore: tuple[str, ...]):
    info = path.stat()
    version = (info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino, ignore)
    cached = _FINDINGS.get(path, version)
    if cached is not None:
        yield from cached
        return
    found = []
    for number, finding in _scan_file(path, ignore):
        found.append(SecretFinding(finding.kind, number, finding.column, finding.masked, relative))
        yield found[-1]
    # Only once the whole file was read: a caller that stops keeps nothing.
    _FINDINGS.put(path, version, found)


class _FindingsCache:
    """The findings of files read whole, one entry per file, at most `limit` findings in all.

    An entry holds for one version of its file (size, mtime, ctime, inode, and the
    address not to report); a changed file's scan replaces it. Once full, the files
    already kept stay and later ones are read each time: the report reads the files
    in one order, and dropping the oldest would drop the next one it needs. Shared by
    a process's threads, so every change holds the lock.
    """

    def __init__(self, limit: int):
        self.limit, self.size = limit, 0
        self.entries: dict[Path, tuple[tuple, list[SecretFinding]]] = {}
        self.lock = threading.Lock()

    def get(self, path: Path, version: tuple) -> list[SecretFinding] | None:
        with self.lock:
            kept_version, found = self.entries.get(path, (None, None))
            return found if kept_version == version else None

    def put(self, path: Path, version: tuple, found: list[SecretFinding]) -> None:
        with self.lock:
            _, old = self.entries.pop(path, (None, None))
            if old is not None:
                self.size -= len(old) + 1
            if self.size + len(found) + 1 <= self.limit:  # an empty file costs its entry
                self.entries[path] = (version, found)
                self.size += len(found) + 1

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.size = 0


# About 150 bytes a finding: a worker keeps at most some 8 MB of them.
_FINDINGS = _FindingsCache(limit=50_000)


def scan_tree(root: Path, jid: str | None = None) -> list[SecretFinding]:
    """scan_secrets over every memory file and transcript (or one JID's); a JID's own address is
    not reported in its folder."""
    return list(iter_tree_findings(root, jid))


# Writes and commands


def _read_bytes(path: Path) -> bytes | None:
    try:
        return read_regular(path)
    except FileNotFoundError:
        return None


def _version(data: bytes | None) -> str:
    return ABSENT if data is None else hashlib.sha256(data).hexdigest()


def file_version(path: Path) -> str:
    """The sha256 of the file's bytes, or "absent"."""
    return _version(_read_bytes(Path(path)))


def _check_version(path: Path, data: bytes | None, expected_version: str) -> None:
    current = _version(data)
    if current != expected_version:
        text = None if data is None else data.decode("utf-8", errors="replace")
        raise Conflict(path, current, text)


def _umask() -> int:
    # os.umask can only be read by setting it, which races with other threads.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    return 0o022


def _newline_of(data: bytes | None) -> str:
    if not data:
        return "\n"
    crlf = data.count(b"\r\n")
    return "\r\n" if crlf > data.count(b"\n") - crlf else "\n"


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def locked(folder: Path):
    """Hold folder's write lock: one save, remove, /new or /forget at a time in that folder.

    flock on the folder itself: it leaves no file behind, and holds between the server's
    threads and its worker processes alike (each call opens the folder anew). The kernel
    drops it when the descriptor closes, so a killed worker never leaves it held.
    """
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _nothing_to_record(before: bytes | None, after: bytes | None):
    return contextlib.nullcontext()


def _encode(text: str, old: bytes | None) -> bytes:
    text = text.replace("\r\n", "\n")
    if _newline_of(old) == "\r\n":
        text = text.replace("\n", "\r\n")
    return text.encode("utf-8")


def _write_temp(path: Path, data: bytes, mode: int) -> str:
    """A temporary file beside path holding data, flushed to disk: what a rename puts in place."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
    except BaseException:
        os.unlink(temp)
        raise
    return temp


def _put(path: Path, data: bytes | None, mode: int) -> None:
    """Make path hold data (None: no file), through a temporary file and a rename."""
    if data is None:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        temp = _write_temp(path, data, mode)
        try:
            os.replace(temp, path)
        except BaseException:
            os.unlink(temp)
            raise
    _fsync_dir(path.parent)


def _swap(path: Path, old: bytes | None, new: bytes | None, expected_version: str, record) -> None:
    """The one unit every save, restore and remove goes through, under the folder's lock:
    check the version, write the temporary file, open the record (the caller's transaction),
    rename, then let the record commit. A failed rename leaves the record to roll back; a
    failed commit puts the old bytes back."""
    _check_version(path, old, expected_version)
    mode = stat.S_IMODE(path.stat().st_mode) if old is not None else 0o666 & ~_umask()
    temp = _write_temp(path, new, mode) if new is not None else None
    renamed = False
    try:
        with record(old, new):
            if temp is not None:
                os.replace(temp, path)
            else:
                path.unlink()
            renamed = True
    except BaseException:
        if temp is not None and not renamed:
            os.unlink(temp)
        if renamed:
            _put(path, old, mode)
        raise
    _fsync_dir(path.parent)


def atomic_write(path: Path, content: str | bytes, expected_version: str, record=_nothing_to_record) -> str:
    """Replace path with content unless it changed since expected_version; returns the new version.

    Text gets the old file's line endings (CRLF when most of its lines had them); bytes (a
    restore) are written as they are. The file keeps its permission bits. Raises Conflict,
    writing nothing, when the version does not match. record(old_bytes, new_bytes) gives a
    context manager held around the rename (see _swap): None means no file.
    """
    path = Path(path)
    with locked(path.parent):
        old = _read_bytes(path)
        data = content if isinstance(content, bytes) else _encode(content, old)
        _swap(path, old, data, expected_version, record)
    return _version(data)


def remove_file(path: Path, expected_version: str, record=_nothing_to_record) -> None:
    """Delete path unless it changed since expected_version (Conflict); absent stays absent."""
    path = Path(path)
    with locked(path.parent):
        old = _read_bytes(path)
        if old is None:
            _check_version(path, old, expected_version)
            return
        _swap(path, old, None, expected_version, record)


def remove_override(jid_dir: Path, name: str, expected_version: str, record=_nothing_to_record) -> None:
    """Delete a JID's persona file, so the global one applies again."""
    if name not in PERSONA_FILES:
        raise UnsafePath(f"{name!r} is not a persona file")
    remove_file(resolve_member(jid_dir, name), expected_version, record)


def archive_session(
    jid_dir: Path, now: datetime, expected_version: str | None = None, record=contextlib.nullcontext
) -> Path | None:
    """/new: move history.jsonl to sessions/YYYYMMDD-HHMMSS.jsonl (UTC, like the agent).

    Returns None, archiving nothing, when there is no history or it holds no message (the
    agent answers "Session is already empty"). Unlike the agent, an archive from the same
    second is never overwritten: the name gets -1, -2... expected_version is the history's
    file_version the user saw (Conflict if it moved on); record(archive path) is held around
    the move, as in atomic_write.
    """
    jid_dir = Path(jid_dir)
    history = resolve_member(jid_dir, HISTORY)
    with locked(jid_dir):
        data = _read_bytes(history)
        if expected_version is not None:
            _check_version(history, data, expected_version)
        if data is None or not _count_messages(data.decode("utf-8", errors="replace")):
            return None
        if now.tzinfo is not None:
            now = now.astimezone(UTC)
        stamp = now.strftime("%Y%m%d-%H%M%S")
        (jid_dir / SESSIONS_DIR).mkdir(exist_ok=True)
        for n in itertools.count():
            target = resolve_member(jid_dir, f"{stamp}-{n}.jsonl" if n else f"{stamp}.jsonl", SESSIONS_DIR)
            try:
                # Claim the name atomically; os.replace then swaps the history in over our own file.
                os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                continue
            break
        moved = False
        try:
            with record(target):
                os.replace(history, target)
                moved = True
        except BaseException:
            if moved:
                # Back where it was, unless the agent has started a new history meanwhile.
                with contextlib.suppress(FileExistsError):
                    os.link(target, history)
                    os.unlink(target)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(target)
            raise
        _fsync_dir(target.parent)
        _fsync_dir(history.parent)
    return target


FORGOTTEN = (HISTORY, LEGACY_HISTORY, PROFILE, LEGACY_PROFILE, MEMORY, KNOWLEDGE)


@dataclass(frozen=True, slots=True)
class ErasedFile:
    name: str  # relative to the JID folder: "memory.md", "files/<uuid>_a.png"
    size: int
    sha256: str


@dataclass(frozen=True, slots=True)
class ForgetPlan:
    """What /forget erases, checked: names as forgettable gives them, and every file."""

    names: tuple[str, ...]
    files: tuple[ErasedFile, ...]

    @property
    def version(self) -> str:
        """A digest of every name, size and hash: a /forget confirmed on one plan erases only it."""
        lines = [*self.names, *(f"{f.name}\t{f.size}\t{f.sha256}" for f in self.files)]
        return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def _erasable_file(path: Path, name: str, root: Path) -> ErasedFile:
    """A regular file, or a link to one inside the root; anything else refuses the whole forget."""
    try:
        target = path.resolve(strict=True)
        st = target.stat()
    except (OSError, RuntimeError) as exc:
        raise UnsafePath(f"{name}: cannot resolve: {getattr(exc, 'strerror', None) or exc}") from exc
    if not target.is_relative_to(root):
        raise UnsafePath(f"{name} is a link leading outside the memory root")
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise UnsafePath(f"{name} is {kind} where a file should be")
    digest = hashlib.sha256()
    with target.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return ErasedFile(name, st.st_size, digest.hexdigest())


def _erasable_folder(folder: Path, name: str, root: Path) -> list[ErasedFile]:
    try:
        real = folder.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise UnsafePath(f"{name}: cannot resolve: {exc}") from exc
    if not real.is_relative_to(root):
        raise UnsafePath(f"{name} is a link leading outside the memory root")
    if folder.is_symlink():
        return []  # like Rust's remove_dir_all, only the link goes
    found = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.is_dir() and not entry.is_symlink():
            found += _erasable_folder(entry, f"{name}{entry.name}/", root)
        else:
            found.append(_erasable_file(entry, f"{name}{entry.name}", root))
    return found


def forget_plan(jid_dir: Path) -> ForgetPlan:
    """What /forget would erase now, every path checked first: a folder or another
    non-regular file where a file should be, or a link leaving the memory root, raises
    UnsafePath. Never opens anything but regular files."""
    jid_dir = _resolve(Path(jid_dir))
    root = jid_dir.parent
    names, files = [], []
    for name in forgettable(jid_dir):
        path = jid_dir / name.rstrip("/")
        if name.endswith("/"):
            files += _erasable_folder(path, name, root)
        else:
            files.append(_erasable_file(path, name, root))
        names.append(name)
    return ForgetPlan(tuple(names), tuple(files))


def forget_user(jid_dir: Path, expected_version: str | None = None, before_erasing=None) -> list[str]:
    """/forget: erase the active memory, keeping sessions/ and persona overrides.

    Like the agent, files/ goes only when it holds at least one file. Under the folder's
    lock, every path is checked (forget_plan) and the plan's version compared with the one
    the user confirmed (Conflict) before anything is deleted; then before_erasing(plan)
    runs, and must have recorded the erasure for good when it returns: if it raises,
    nothing is deleted. Returns what was erased.
    """
    jid_dir = _resolve(Path(jid_dir))
    with locked(jid_dir):
        plan = forget_plan(jid_dir)
        if expected_version is not None and plan.version != expected_version:
            raise Conflict(jid_dir, plan.version, None)
        if before_erasing is not None:
            before_erasing(plan)
        for name in plan.names:
            path = jid_dir / name.rstrip("/")
            if name.endswith("/") and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()  # a link loses the link, not its target
        if plan.names:
            _fsync_dir(jid_dir)
    return list(plan.names)


def forgettable(jid_dir: Path) -> list[str]:
    """What /forget would erase now: the files of FORGOTTEN that exist, and files/
    when it holds at least one file (as the agent does); a folder ends with "/"."""
    jid_dir = Path(jid_dir)
    names = [name for name in FORGOTTEN if os.path.lexists(jid_dir / name)]
    files = jid_dir / FILES_DIR
    if files.is_dir() and any(entry.is_file() for entry in files.iterdir()):
        names.append(f"{FILES_DIR}/")
    return names
