"""Names and safe paths in a memory root: what a file is called, where a JID or a name may
lead (never outside its folder), and reading a file that must be a regular one."""

from __future__ import annotations

import os
from pathlib import Path

# A file must be a regular one: the readers' rule, used here as it is (readers/files.py).
from sessionviewer.readers.files import NotRegularFile, read_regular
from sessionviewer.readers.files import check_regular as check_regular
from sessionviewer.readers.files import open_regular as open_regular
from sessionviewer.workspaces.memory_files import FILES_DIR

# A JID's transcripts: the reader's files, not memory files (memory_files.py lists those).
HISTORY = "history.jsonl"
LEGACY_HISTORY = "history.md"
SESSIONS_DIR = "sessions"
ABSENT = "absent"


class UnsafePath(ValueError):
    """A JID or file name that is malformed, missing, or leads outside its folder."""


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


def real_path(path: Path) -> Path:
    """path resolved; a loop of links or an unreadable path is UnsafePath."""
    try:
        return path.resolve()
    except RuntimeError as exc:  # Python 3.11 raises it for a loop, without an errno
        raise UnsafePath(f"{path.name!r} leads into a loop of links") from exc
    except OSError as exc:
        raise UnsafePath(f"cannot resolve {path.name!r}: {exc.strerror or exc}") from exc


def resolve_jid_dir(root: Path, jid: str) -> Path:
    """The real path of the existing folder directly under root that jid names."""
    _check_name(jid, "JID")
    base = real_path(Path(root))
    resolved = real_path(base / jid)
    if resolved.parent != base:
        raise UnsafePath(f"JID {jid!r} leads outside the memory root")
    if not resolved.is_dir():
        raise UnsafePath(f"no JID folder {jid!r}")
    return resolved


def resolve_member(folder: Path, name: str, subdir: str | None = None) -> Path:
    """The real path of name inside folder (or its files/ or sessions/); it need not exist."""
    _check_name(name, "file name")
    base = real_path(Path(folder))
    if subdir is not None:
        if subdir not in (FILES_DIR, SESSIONS_DIR):
            raise UnsafePath(f"unknown folder {subdir!r}")
        inner = real_path(base / subdir)
        if inner.parent != base:
            raise UnsafePath(f"{subdir}/ leads outside its JID folder")
        base = inner
    resolved = real_path(base / name)
    if resolved.parent != base:
        raise UnsafePath(f"{name!r} leads outside its folder")
    return resolved


def read_error(exc: OSError) -> str:
    """How a page says that a file could not be read."""
    if isinstance(exc, NotRegularFile):
        return exc.strerror
    return f"cannot read: {exc.strerror or exc}"


def read_text(path: Path) -> tuple[str | None, str | None]:
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


def load_member(folder: Path, name: str) -> tuple[str | None, str | None]:
    """read_text of name inside folder; a name leading outside it is the error."""
    try:
        path = resolve_member(folder, name)
    except UnsafePath as exc:
        return None, str(exc)
    return read_text(path)
