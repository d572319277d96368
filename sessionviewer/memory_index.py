"""The Fluux memory trees as the index keeps them, for a web host that cannot reach a tree.

Every indexer records the memory and persona files of its roots byte for byte, as snapshots
(index/memory.py), and a root's transcripts as entries. A web host of a shared index whose
machine has no tree (the tree sits on the Fluux host) reads those instead: the workspace
list, a JID's files, the secrets report and the memory search, read-only. Where the tree is
mounted the pages read it, which is fresher than the index by up to one pass.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from django.conf import settings

from sessionviewer.models import Entry, MemorySnapshot, Session, Source
from sessionviewer.roots import memory_roots
from sessionviewer.workspaces import (
    FILES_DIR,
    KNOWLEDGE,
    SESSIONS_DIR,
    FileInfo,
    JidDir,
    LoadedFile,
    SearchHit,
    SecretFinding,
    Workspace,
    is_room,
    memory_files,
    scan_secrets,
    search_texts,
)


@dataclass(frozen=True, slots=True)
class MemoryRoot:
    """A memory root as the workspace pages list it: a path on one machine. Two machines'
    trees at one path are two roots, each with its own history."""

    path: Path
    machine: str  # "": recorded before machines were named, and not claimed yet
    shared: bool = False  # another machine's tree has the same path: its name is shown

    def __str__(self) -> str:
        return f"{self.path} on {self.machine or 'no machine named'}" if self.shared else str(self.path)

    @property
    def pair(self) -> tuple[Path, str]:
        return self.path, self.machine


def known_roots() -> list[MemoryRoot]:
    """This machine's configured memory roots, then those only the index knows (another
    machine's, or another machine's tree at a path configured here too). A configured root
    this host has no tree at, and only other machines' history of, is theirs alone."""
    machine = settings.SESSIONVIEWER_MACHINE
    recorded = set(MemorySnapshot.objects.filter(current=True).values_list("machine", "root").distinct())
    others = {root for m, root in recorded if m != machine}
    roots = [
        root
        for root in memory_roots()
        if root.is_dir() or (machine, str(root.resolve())) in recorded or str(root.resolve()) not in others
    ]
    mine = {(machine, str(root)) for root in roots} | {(machine, str(root.resolve())) for root in roots}
    known = [(machine, root) for root in roots] + [(m, Path(r)) for m, r in sorted(recorded - mine)]
    paths = Counter(str(root.resolve()) if m == machine else str(root) for m, root in known)
    return [
        MemoryRoot(root, m, paths[str(root.resolve()) if m == machine else str(root)] > 1)
        for m, root in known
    ]


def is_mounted(root: Path) -> bool:
    return root.is_dir()


def machine_of(root: Path, machine: str = "") -> str:
    """The machine whose tree the root is: its own, else the one whose indexer reads the
    path ("" when no indexer named one)."""
    if machine:
        return machine
    paths = {str(root), str(root.resolve())}
    machines = Source.objects.filter(path__in=paths).exclude(machine="").values_list("machine", flat=True)
    return min(machines, default="")


@dataclass(frozen=True, slots=True)
class StoredFile:
    """A tracked file's current state in the index."""

    jid: str  # "": a global persona file
    filename: str  # "memory.md", "files/<name>"
    size: int
    mtime_ns: int
    content: bytes | None  # None: a files/ entry, kept by name, size and hash only
    findings: list[dict]

    def info(self) -> FileInfo:
        text = self.text
        blank = self.size == 0 if text is None or not self.filename.endswith(".md") else not text.strip()
        return FileInfo(
            self.filename, True, self.size, datetime.fromtimestamp(self.mtime_ns / 1e9, UTC), blank
        )

    def loaded(self) -> LoadedFile:
        """The file as the editor would load it, read-only: no version, so nothing saves from it."""
        return LoadedFile(self.text, "")

    @property
    def text(self) -> str | None:
        return None if self.content is None else self.content.decode("utf-8", errors="replace")

    @property
    def relative(self) -> str:
        return f"{self.jid}/{self.filename}" if self.jid else self.filename


def current_files(root: Path, jid: str | None = None, *, machine: str) -> list[StoredFile]:
    """The files as machine's last pass found them: the global ones first, then each JID's,
    by name."""
    states = MemorySnapshot.of_root(machine, root).filter(current=True, exists=True)
    if jid is not None:
        states = states.filter(jid=jid)
    files = [
        StoredFile(s.jid, s.filename, s.size, s.mtime_ns, _bytes(s.content), s.findings_now())
        for s in states.only("id", "jid", "filename", "size", "mtime_ns", "content", "findings")
    ]
    return sorted(files, key=lambda f: (f.jid != "", f.jid, f.filename))


def _bytes(content) -> bytes | None:
    return None if content is None else bytes(content)


def jids(root: Path, *, machine: str) -> list[str]:
    states = MemorySnapshot.of_root(machine, root).filter(current=True, exists=True).exclude(jid="")
    return sorted(set(states.values_list("jid", flat=True)))


def transcripts(root: Path, jid: str | None = None, *, machine: str):
    """The root's indexed transcripts on machine (a JID's): its history.jsonl and sessions/."""
    prefix = f"{root}/{jid}/" if jid else f"{root}/"
    sessions = Session.objects.filter(format="fluux_xmpp", source__machine=machine, path__startswith=prefix)
    return sessions.order_by("path")


def iter_findings(root: Path, jid: str | None = None, *, machine: str) -> Iterator[SecretFinding]:
    """The secrets report from the index, in the order the tree's scan gives: the memory files'
    findings as their snapshots recorded them, then each transcript's, line by line of what
    its entries kept (the text, so a column counts in it, not in the JSON line)."""
    files = current_files(root, jid, machine=machine)
    for owner in dict.fromkeys(f.jid for f in files if f.content is not None):
        for stored in (f for f in files if f.jid == owner and f.content is not None):
            if not stored.filename.startswith(FILES_DIR):
                for found in stored.findings:
                    yield SecretFinding(
                        found["kind"], found["line"], found["column"], found["masked"], stored.relative
                    )
        if owner:
            yield from _transcript_findings(root, owner, machine)


def _transcript_findings(root: Path, jid: str, machine: str) -> Iterator[SecretFinding]:
    for session in transcripts(root, jid, machine=machine):
        relative = session.path.removeprefix(f"{root}/")
        for line, text in Entry.objects.filter(session=session).order_by("line").values_list("line", "text"):
            for found in scan_secrets(text, (jid,), high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY):
                yield SecretFinding(found.kind, line, found.column, found.masked, relative)


def search(root: Path, query: str, *, machine: str) -> list[SearchHit]:
    """search_memory over the JIDs' files as the index keeps them."""
    files = [
        (f.jid, f.filename, f.text)
        for f in current_files(root, machine=machine)
        if f.jid and f.text is not None and (f.filename.endswith(".md") or f.filename == KNOWLEDGE)
    ]
    return search_texts(files, query)


def stored_file(root: Path, jid: str, filename: str, *, machine: str) -> StoredFile | None:
    return next((f for f in current_files(root, jid, machine=machine) if f.filename == filename), None)


def workspace(root: Path, *, machine: str) -> Workspace:
    """The root's listing as the index holds it: its persona files and JIDs, their files."""
    files = current_files(root, machine=machine)
    at_root = memory_files.root_names()
    own = {name: f for f in files if not f.jid and (name := f.filename) in at_root}
    global_files = tuple(own[name].info() if name in own else FileInfo(name, False) for name in at_root)
    entries = []
    for jid in dict.fromkeys(f.jid for f in files if f.jid):
        mine = [f for f in files if f.jid == jid]
        known = {f.filename: f.info() for f in mine if "/" not in f.filename}
        dirs = (FILES_DIR,) if any(f.filename.startswith(f"{FILES_DIR}/") for f in mine) else ()
        if transcripts(root, jid, machine=machine).filter(path__contains=f"/{SESSIONS_DIR}/").exists():
            dirs += (SESSIONS_DIR,)
        overrides = tuple(n for n in at_root if n in known and known[n].in_effect)
        entries.append(JidDir(jid, root / jid, is_room(jid), known, dirs, (), overrides))
    return Workspace(root, global_files, tuple(entries))
