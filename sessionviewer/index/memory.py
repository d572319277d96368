"""Snapshots of the Fluux memory and persona files, taken by each pass (and so by the watcher).

Per memory root (roots.memory_roots()): the files workspaces/memory_files.py lists, at the
root (identity.md, personality.md, instructions.md) and in each JID folder (its own persona
files, user.md, context.md, memory.md, knowledge.jsonl...), kept byte for byte; and files/,
kept by name, size and hash only. A file whose size, mtime and inode match its current
snapshot costs a stat, as a session file does. One that moved is read, and recorded only
when its bytes differ from the last ones known: an editor save records itself, with its
revision (MemorySnapshot.of_edit), so a pass after it only notes where the file now stands.

Several changes between two passes are one snapshot: the pass sees only the last.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from sessionviewer.index.locks import take_turn
from sessionviewer.models import MemorySnapshot
from sessionviewer.readers import EARLIEST, LATEST, listing
from sessionviewer.workspaces import (
    FILES_DIR,
    UnsafePath,
    memory_files,
    open_regular,
    read_regular,
    resolve_jid_dir,
    resolve_member,
)

log = logging.getLogger(__name__)


@dataclass
class MemorySummary:
    files: int = 0  # files looked at
    read: int = 0  # files whose stat moved, so read (or hashed)
    changes: int = 0  # snapshots recorded
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Known:
    id: int
    exists: bool
    size: int
    mtime_ns: int
    inode: int
    sha256: str


@dataclass(frozen=True, slots=True)
class _Seen:
    root: Path
    jid: str
    name: str
    subdir: str | None
    st: os.stat_result

    @property
    def filename(self) -> str:
        return f"{self.subdir}/{self.name}" if self.subdir else self.name

    def real_path(self) -> Path:
        """The file checked as the workspace pages check it: never a link leading outside."""
        folder = resolve_jid_dir(self.root, self.jid) if self.jid else self.root
        return resolve_member(folder, self.name, self.subdir)


def snapshot_roots(roots: Iterable[Path]) -> MemorySummary:
    """Record every tracked file that changed since the last pass, in each root."""
    summary = MemorySummary()
    for root in roots:
        if not root.is_dir():
            continue
        try:
            with transaction.atomic():
                _snapshot_root(root.resolve(), summary)
        except Exception as error:  # noqa: BLE001 - one root's trouble must not stop the index
            summary.errors.append(f"{root}: memory snapshots failed: {error!r}")
            log.error("snapshotting the memory files of %s failed", root, exc_info=error)
    _apply_retention()
    return summary


def _snapshot_root(root: Path, summary: MemorySummary) -> None:
    key = str(root)  # as the editor's revisions name it: the resolved root
    machine = settings.SESSIONVIEWER_MACHINE
    # Indexers sharing a PostgreSQL index take turns per root: two of one machine would
    # both record one change, and two machines both claim the unclaimed history.
    take_turn("memory", key)
    # A history recorded before machines were named (snapshots, revisions, audit events) goes
    # to the first machine to snapshot its path (as a Source does, index/passes.py); another
    # machine's tree at the same path is a history of its own.
    MemorySnapshot.claim(machine, key)
    rows = (
        MemorySnapshot.of_root(machine, key)
        .filter(current=True)
        .values_list("id", "jid", "filename", "exists", "size", "mtime_ns", "inode", "sha256")
    )
    known = {(jid, name): _Known(id_, *rest) for id_, jid, name, *rest in rows}
    now = timezone.now()
    # A file first seen in a root seen before was made since: a change. In a root never
    # seen before, what came before it is unknown.
    new_file = MemorySnapshot.OUTSIDE if known else MemorySnapshot.FIRST
    seen: set[tuple[str, str]] = set()
    changes = _Changes(machine, key)
    for found in _tracked_files(root, summary):
        seen.add((found.jid, found.filename))
        summary.files += 1
        old = known.get((found.jid, found.filename))
        st = found.st
        if (
            old is not None
            and old.exists
            and (old.size, old.mtime_ns, old.inode)
            == (
                st.st_size,
                st.st_mtime_ns,
                st.st_ino,
            )
        ):
            continue
        _record(changes, found, old, new_file, summary)
    for (jid, filename), old in known.items():
        if old.exists and (jid, filename) not in seen:
            changes.add(
                old,
                root=key,
                jid=jid,
                filename=filename,
                who=MemorySnapshot.OUTSIDE,
                changed_at=now,
                exists=False,
            )
            summary.changes += 1
    changes.save()


class _Changes:
    """A root's new snapshots, saved together (as MemorySnapshot.change saves one): a
    first index of thousands of JIDs saved them a statement or two each."""

    def __init__(self, machine: str, key: str):
        self.machine, self.key = machine, key
        self.retired: list[int] = []  # the current snapshots the new ones replace
        self.new: list[MemorySnapshot] = []

    def add(self, old: _Known | None, **fields) -> None:
        if old is not None:
            self.retired.append(old.id)
        self.new.append(MemorySnapshot.new_state(machine=self.machine, **fields))

    def save(self) -> None:
        for start in range(0, len(self.retired), CHUNK):
            MemorySnapshot.objects.filter(id__in=self.retired[start : start + CHUNK]).update(current=False)
        MemorySnapshot.objects.bulk_create(self.new, batch_size=CHUNK)


CHUNK = 500  # ids or rows a statement: well under SQLite's limit on parameters


def _record(
    changes: _Changes, found: _Seen, old: _Known | None, new_file: str, summary: MemorySummary
) -> None:
    """A file whose stat moved: read it, and record it if its bytes are new."""
    summary.read += 1
    key = changes.key
    try:
        path = found.real_path()
        data = read_regular(path) if found.subdir is None else None
        digest = hashlib.sha256(data).hexdigest() if data is not None else _hash(path)
    except (UnsafePath, OSError) as error:
        summary.errors.append(f"{key}/{found.jid}/{found.filename}: {error}")
        return
    st = found.st
    where = {"mtime_ns": st.st_mtime_ns, "inode": st.st_ino, "size": st.st_size}
    if old is not None and old.exists and old.sha256 == digest:
        # Touched, or saved by the editor (which recorded the change itself): only where it stands.
        MemorySnapshot.objects.filter(id=old.id).update(**where)
        return
    changes.add(
        old,
        root=key,
        jid=found.jid,
        filename=found.filename,
        who=MemorySnapshot.OUTSIDE if old is not None else new_file,
        changed_at=_changed_at(st),
        exists=True,
        sha256=digest,
        content=data,
        **where,
    )
    summary.changes += 1


def _changed_at(st: os.stat_result) -> datetime:
    """When the file changed, by its mtime; now for an mtime no clock gave (`touch -d
    9999-12-31`), as the readers take such a timestamp for none (readers.parse_timestamp)."""
    changed = datetime.fromtimestamp(st.st_mtime_ns / 1e9, tz=UTC)
    return changed if EARLIEST < changed < LATEST else timezone.now()


def _hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _tracked_files(root: Path, summary: MemorySummary) -> Iterable[_Seen]:
    """The tracked files that exist as regular files, with their stat: one listing per
    folder, and a stat per file listed. Paths as text: pathlib cost more than the stats."""
    base = str(root)
    names, folders = listing(base)
    yield from _stat_all(root, base, "", [n for n in memory_files.root_names() if n in names], summary)
    tracked = memory_files.jid_names()
    for jid in folders:
        if "@" not in jid or jid.startswith("."):
            continue
        folder = f"{base}/{jid}"
        own, subfolders = listing(folder)
        yield from _stat_all(root, folder, jid, [n for n in tracked if n in own], summary)
        if FILES_DIR in subfolders:
            stored = listing(f"{folder}/{FILES_DIR}")[0]
            yield from _stat_all(root, f"{folder}/{FILES_DIR}", jid, stored, summary, FILES_DIR)


def _stat_all(root: Path, folder: str, jid: str, names: list[str], summary, subdir: str | None = None):
    for name in names:
        try:
            st = os.stat(f"{folder}/{name}")
        except OSError as error:  # gone since the listing, or a bad link
            summary.errors.append(f"{folder}/{name}: {error.strerror or error}")
            continue
        if stat.S_ISREG(st.st_mode):  # a FIFO or folder is never opened; the workspace pages say so
            yield _Seen(root, jid, name, subdir, st)


def _apply_retention() -> None:
    """SESSIONVIEWER_MEMORY_RETENTION_DAYS: past states older than that go; each file's
    current state stays whatever its age. 0 (the default) keeps everything."""
    days = settings.SESSIONVIEWER_MEMORY_RETENTION_DAYS
    if days > 0:
        cutoff = timezone.now() - timedelta(days=days)
        MemorySnapshot.objects.filter(current=False, changed_at__lt=cutoff).delete()
