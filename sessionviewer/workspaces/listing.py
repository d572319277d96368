"""What a memory root holds: its global persona files, its JID folders (users and rooms), and
in each the known files, downloaded attachments and sessions, every entry checked before use.

A room is a JID whose domain starts with one of the Fluux reader's room prefixes
(conference., muc., rooms., chat.), or whose history.jsonl has a "nick@muc" sender within its
first 200 lines: the reader's rule (its readers.Format's room_address and room_sender), so the
index and the editor agree. (The agent itself asks
its configuration, which the viewer does not have.)
"""

from __future__ import annotations

import contextlib
import itertools
import json
import mimetypes
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sessionviewer import readers
from sessionviewer.workspaces import memory_files
from sessionviewer.workspaces.memory_files import FILES_DIR
from sessionviewer.workspaces.paths import (
    HISTORY,
    LEGACY_HISTORY,
    SESSIONS_DIR,
    NotRegularFile,
    UnsafePath,
    check_regular,
    open_regular,
    read_error,
    read_text,
    real_path,
    resolve_jid_dir,
    resolve_member,
)
from sessionviewer.workspaces.prompt import is_blank

ROOM_SCAN_LINES = 200


def _fluux() -> readers.Format:
    """The Fluux format, whose memory trees these are: its rules say which JIDs are rooms."""
    return readers.format_of("fluux_xmpp")


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

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "present": self.present,
            "size": self.size,
            "mtime": self.mtime,
            "blank": self.blank,
            "error": self.error,
            "in_effect": self.in_effect,
        }


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

    def to_dict(self) -> dict:
        """As the root's listing gives it: the known files by name."""
        return {
            "jid": self.jid,
            "is_room": self.is_room,
            "files": sorted(self.files),
            "dirs": list(self.dirs),
            "other": list(self.other),
            "overrides": list(self.overrides),
        }


@dataclass(slots=True)
class Workspace:
    root: Path
    global_files: tuple[FileInfo, ...]  # identity, personality, instructions
    jids: tuple[JidDir, ...]
    other: tuple[str, ...] = ()  # other entries at the top (README.md...)
    skipped: tuple[str, ...] = ()  # folders that are not safe JID folders

    def global_file(self, name: str) -> FileInfo:
        return next(info for info in self.global_files if info.name == name)

    def to_dict(self) -> dict:
        return {
            "global_files": [info.to_dict() for info in self.global_files],
            "jids": [entry.to_dict() for entry in self.jids],
            "other": list(self.other),
            "skipped": list(self.skipped),
        }


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
        check_regular(path, st.st_mode)
    except NotRegularFile as exc:
        return FileInfo(name, True, 0, _mtime(st), error=exc.strerror)
    blank, error = st.st_size == 0, None
    # Only Markdown is read for blankness: transcripts can be large and never count as overrides.
    if name.endswith(".md") and st.st_size:
        text, error = read_text(path)
        blank = text is not None and is_blank(text)
    return FileInfo(name, True, st.st_size, _mtime(st), blank, error)


def _has_muc_sender(history: Path) -> bool:
    try:
        with open_regular(history) as handle:
            for raw in itertools.islice(handle, ROOM_SCAN_LINES):
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):  # RecursionError: nested too deep
                    continue
                sender = obj.get("sender") if isinstance(obj, dict) else None
                if isinstance(sender, str) and _fluux().room_sender(sender):
                    return True
    except OSError:
        pass
    return False


def is_room(jid: str, jid_dir: Path | None = None) -> bool:
    """A MUC room by its domain, or by "nick@muc" senders early in its history."""
    if _fluux().room_address(jid):
        return True
    if jid_dir is None:
        return False
    try:
        return _has_muc_sender(resolve_member(Path(jid_dir), HISTORY))
    except UnsafePath:
        return False


def known_files() -> tuple[str, ...]:
    """The files a JID folder is known to hold: its memory files, then its history."""
    return (*memory_files.jid_names(), HISTORY, LEGACY_HISTORY)


def describe_jid_dir(jid: str, jid_dir: Path) -> JidDir:
    """The listing of one JID folder, already resolved (jid_entry resolves it first)."""
    files: dict[str, FileInfo] = {}
    dirs: list[str] = []
    other: list[str] = []
    known = known_files()
    for entry in sorted(jid_dir.iterdir(), key=lambda p: p.name):
        if entry.name in known:
            files[entry.name] = _file_info(jid_dir, entry.name)
        elif entry.name in (FILES_DIR, SESSIONS_DIR) and entry.is_dir():
            dirs.append(entry.name)
        else:
            other.append(entry.name + "/" if entry.is_dir() else entry.name)
    overrides = tuple(name for name in memory_files.root_names() if name in files and files[name].in_effect)
    return JidDir(jid, jid_dir, is_room(jid, jid_dir), files, tuple(dirs), tuple(other), overrides)


def jid_entry(root: Path, jid: str) -> JidDir:
    """One JID's listing, as list_workspace gives it, without walking the rest of the root."""
    return describe_jid_dir(jid, resolve_jid_dir(root, jid))


def global_file_info(root: Path, name: str) -> FileInfo:
    if name not in memory_files.root_names():
        raise UnsafePath(f"{name!r} is not a persona file")
    return _file_info(real_path(Path(root)), name)


def list_workspace(root: Path) -> Workspace:
    base = real_path(Path(root))
    jids: list[JidDir] = []
    other: list[str] = []
    skipped: list[str] = []
    at_root = memory_files.root_names()
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if entry.name in at_root:
            continue
        if not entry.is_dir():
            other.append(entry.name)
            continue
        try:
            jid_dir = resolve_jid_dir(base, entry.name)
        except UnsafePath:
            skipped.append(entry.name)
            continue
        jids.append(describe_jid_dir(entry.name, jid_dir))
    global_files = tuple(_file_info(base, name) for name in at_root)
    return Workspace(base, global_files, tuple(jids), tuple(other), tuple(skipped))


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

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "original_name": self.original_name,
            "mime_type": self.mime_type,
            "size": self.size,
            "mtime": self.mtime,
            "error": self.error,
        }


def folder_entries(folder: Path) -> list[Path]:
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
        check_regular(path, st.st_mode)
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
    for entry in folder_entries(jid_dir / FILES_DIR):
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
class TranscriptFile:
    """A transcript in a JID folder: the active history, or an archive in sessions/.

    Not readers.SessionFile, which is what a reader finds of a session when it indexes it.
    """

    name: str  # "history.jsonl", or "sessions/20250601-143022.jsonl"
    path: Path | None  # the real path; None with an error
    active: bool
    format: str  # "jsonl" or "md" (legacy)
    size: int | None  # None with an error
    mtime: datetime | None
    error: str | None = None  # why it is never opened: a bad link, or not a regular file

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "active": self.active,
            "format": self.format,
            "size": self.size,
            "mtime": self.mtime,
            "error": self.error,
        }


def _archive_order(path: Path) -> tuple:
    # Dated names by stamp, then "-N" (two archives in one second); odd names sort last.
    if match := _ARCHIVE_NAME.match(path.name):
        return (1, match.group(1), int(match.group(2) or 0), "")
    return (0, "", 0, path.name)


def _session_file(jid_dir: Path, entry: Path, subdir: str | None) -> TranscriptFile | None:
    name = f"{subdir}/{entry.name}" if subdir else entry.name
    active, fmt = subdir is None, entry.suffix[1:]
    checked = _entry_problem(jid_dir, entry.name, subdir)
    if checked is None:
        return None
    if isinstance(checked, str):
        return TranscriptFile(name, None, active, fmt, None, None, checked)
    path, st = checked
    return TranscriptFile(name, path, active, fmt, st.st_size, _mtime(st))


def list_sessions(jid_dir: Path) -> list[TranscriptFile]:
    """The active session (and legacy history.md), then archives, newest first.

    A bad link or anything but a regular file is listed with its error, and never opened.
    """
    jid_dir = Path(jid_dir)
    found = []
    for name in (HISTORY, LEGACY_HISTORY):
        if os.path.lexists(jid_dir / name) and (session := _session_file(jid_dir, jid_dir / name, None)):
            found.append(session)
    if problem := _subdir_problem(jid_dir, SESSIONS_DIR):
        return [*found, TranscriptFile(f"{SESSIONS_DIR}/", None, False, "", None, None, problem)]
    archives = [
        entry for entry in folder_entries(jid_dir / SESSIONS_DIR) if entry.suffix in (".jsonl", ".md")
    ]
    for entry in sorted(archives, key=_archive_order, reverse=True):
        if session := _session_file(jid_dir, entry, SESSIONS_DIR):
            found.append(session)
    return found


def jid_folders(base: Path):
    """(jid, real path) of each safe JID folder under a resolved root, by name."""
    for entry in sorted(base.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        with contextlib.suppress(UnsafePath):
            yield entry.name, resolve_jid_dir(base, entry.name)


def regular_files(folder: Path, suffixes: tuple[str, ...], subdir: str | None = None):
    """(name, real path) of regular files in folder (or its subdir) with one of suffixes."""
    scan = folder / subdir if subdir else folder
    for entry in sorted(folder_entries(scan), key=lambda p: p.name):
        if not entry.name.endswith(suffixes):
            continue
        with contextlib.suppress(UnsafePath, OSError):
            path = resolve_member(folder, entry.name, subdir)
            if path.is_file():
                yield entry.name, path
