"""Every change the viewer makes on disk: saves, removes, /new and /forget, each one locked,
version-checked unit.

Every write holds its folder's lock from the version check to the rename, and takes a record
hook (the views' database transaction) that wraps the rename: see _swap.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import itertools
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sessionviewer.workspaces import memory_files
from sessionviewer.workspaces.memory import count_messages
from sessionviewer.workspaces.memory_files import FILES_DIR
from sessionviewer.workspaces.paths import (
    ABSENT,
    HISTORY,
    LEGACY_HISTORY,
    SESSIONS_DIR,
    UnsafePath,
    read_error,
    read_regular,
    real_path,
    resolve_member,
)


class Conflict(Exception):
    """The file changed on disk since it was read; nothing was written."""

    def __init__(self, path: Path, current_version: str, current_text: str | None):
        super().__init__(f"{path} changed on disk (now {current_version[:12]})")
        self.path = path
        self.current_version = current_version
        self.current_text = current_text  # None when the file is gone


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


@dataclass(frozen=True, slots=True)
class LoadedFile:
    """A file as the editor reads it: its text, and the version a save from it must send."""

    text: str | None  # None: the file does not exist, or cannot be read
    version: str
    error: str | None = None
    # False: a FIFO, folder, bad link or unreadable file, which the editor never writes over.
    readable: bool = True


def load_file(path: Path) -> LoadedFile:
    # The version is taken first: if the file changes in between, the text is the newer one
    # and a save from it is refused, never the other way round.
    try:
        version = file_version(path)
    except OSError as error:  # a FIFO, folder or unreadable file: no version, so no save from it
        return LoadedFile(None, "", read_error(error), readable=False)
    try:
        data = read_regular(path)
    except FileNotFoundError:
        return LoadedFile(None, version)
    except OSError as error:
        return LoadedFile(None, version, read_error(error), readable=False)
    try:
        return LoadedFile(data.decode("utf-8"), version)
    except UnicodeDecodeError as error:
        return LoadedFile(
            data.decode("utf-8", errors="replace"), version, f"not valid UTF-8 (byte {error.start})"
        )


def load_part(folder: Path, name: str) -> LoadedFile:
    """A file shown in a part of the JID page: a bad link is that part's error, not a refusal."""
    try:
        return load_file(resolve_member(folder, name))
    except UnsafePath as error:
        return LoadedFile(None, "", str(error), readable=False)


def _check_version(path: Path, data: bytes | None, expected_version: str) -> None:
    current = _version(data)
    if current != expected_version:
        text = None if data is None else data.decode("utf-8", errors="replace")
        raise Conflict(path, current, text)


def current_umask() -> int:
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
    mode = stat.S_IMODE(path.stat().st_mode) if old is not None else 0o666 & ~current_umask()
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
    if name not in memory_files.root_names():
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
        if data is None or not count_messages(data.decode("utf-8", errors="replace")):
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


def forgotten() -> tuple[str, ...]:
    """The files /forget erases: the history, and the memory files it erases (memory_files)."""
    return (HISTORY, LEGACY_HISTORY, *memory_files.forgotten_names())


@dataclass(frozen=True, slots=True)
class ErasedFile:
    name: str  # relative to the JID folder: "memory.md", "files/<uuid>_a.png"
    size: int
    sha256: str

    def to_dict(self) -> dict:
        return {"name": self.name, "size": self.size, "sha256": self.sha256}


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
    jid_dir = real_path(Path(jid_dir))
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
    jid_dir = real_path(Path(jid_dir))
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
    """What /forget would erase now: the files of forgotten() that exist, and files/
    when it holds at least one file (as the agent does); a folder ends with "/"."""
    jid_dir = Path(jid_dir)
    names = [name for name in forgotten() if os.path.lexists(jid_dir / name)]
    files = jid_dir / FILES_DIR
    if files.is_dir() and any(entry.is_file() for entry in files.iterdir()):
        names.append(f"{FILES_DIR}/")
    return names
