"""Opening the files under a root: regular files only, and links only while they stay inside it.

One rule for the readers, the index and the workspace pages (workspaces/paths.py takes it
from here). Opening a FIFO blocks until a writer comes, and a device may act on open: a
path that is not a regular file is refused from a stat before it is opened, and opened
with O_NONBLOCK and checked again, so one swapped in between cannot block either. A link
that resolves outside the root it was found under is never read: what it points to was
not given to be indexed or shown.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


class NotRegularFile(OSError):
    """A FIFO, device, socket or folder where a file is expected: never opened, so never hung on."""

    def __str__(self) -> str:
        return self.strerror  # the callers name the path themselves ("path: why")


class OutsideRoot(OSError):
    """A path whose links resolve outside the root it was found under: never read."""

    def __str__(self) -> str:
        return self.strerror


_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_regular(path: Path | str, mode: int) -> None:
    """Raise NotRegularFile, naming what it is, unless mode (from a stat) is a regular file's."""
    if not stat.S_ISREG(mode):
        kind = next((kind for test, kind in _KINDS if test(mode)), "not a file")
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind})", str(path))


def check_inside(path: Path | str, root: Path | str, fd: int | None = None) -> None:
    """Raise OutsideRoot unless path, its links resolved, lies inside root (its own links
    resolved too: a root given through a link is still that root). fd: the path opened,
    whose real path the kernel knows without a walk of the path (os.path.realpath costs
    a stat per part of it). The message names the path only, never where it leads."""
    base = _real_root(str(root))
    resolved = _opened_path(fd) if fd is not None else None
    resolved = resolved or os.path.realpath(path)
    if resolved != base and not resolved.startswith(base.rstrip(os.sep) + os.sep):
        raise OutsideRoot(errno.EXDEV, "a link that leads outside its root: not read", str(path))


def _opened_path(fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")  # Linux; elsewhere realpath does it
    except OSError:
        return None


_ROOTS: dict[tuple[str, int, int], str] = {}


def _real_root(root: str) -> str:
    """root's real path, remembered while root leads to the same folder: the index asks
    for every file it reads, and a root is a few links at most."""
    st = os.stat(root)
    key = (root, st.st_dev, st.st_ino)
    if key not in _ROOTS:
        if len(_ROOTS) > 1000:
            _ROOTS.clear()
        _ROOTS[key] = os.path.realpath(root)
    return _ROOTS[key]


def check_file(path: Path | str, root: Path | str | None = None) -> None:
    """Raise NotRegularFile or OutsideRoot for a path that is there but must not be read.
    Nothing for one that is not there: a database's session has no file of its own, and
    the read says that a file is gone."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if root is not None:
        check_inside(path, root)
    check_regular(path, mode)


def open_regular(path: Path | str, root: Path | str | None = None) -> BinaryIO:
    """path opened for reading, refusing anything but a regular file (NotRegularFile) and,
    given its root, a path that leads outside it (OutsideRoot)."""
    mode = os.stat(path).st_mode
    if root is not None and not stat.S_ISREG(mode):
        check_inside(path, root)  # which of the two it is, told without opening it
    check_regular(path, mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        check_regular(path, os.fstat(fd).st_mode)
        if root is not None:
            check_inside(path, root, fd)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path | str, root: Path | str | None = None) -> bytes:
    """The bytes of a regular file; raises FileNotFoundError, NotRegularFile, OutsideRoot or another OSError."""
    with open_regular(path, root) as handle:
        return handle.read()
