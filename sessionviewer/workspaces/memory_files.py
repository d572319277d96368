"""The Fluux memory files, listed once: each one's name, kind, scope, what the editor and
/forget do with it, and how the effective system prompt uses it.

The listing, the index's snapshots (index/memory.py), the editor, the pages and the prompt
read this registry when they run: a new memory file type is one entry in MEMORY_FILES, and
its tests. Checked against processone/fluux-agent's memory README (``data/memory/README.md``)
and ``src/agent/memory.rs``. History and archived sessions are transcripts, the reader's
(paths.HISTORY, paths.SESSIONS_DIR), not memory files.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What a memory file holds."""

    PERSONA = "persona"  # who the agent is and how it behaves
    USER = "user"  # what the agent knows about the user or room
    MEMORY = "memory"  # long-term notes
    CONTEXT = "context"  # the legacy profile, read where the user file does not exist
    KNOWLEDGE = "knowledge"  # {"key", "content", "ts"} per line, written by the agent
    FILES = "files"  # downloaded attachments


class Scope(StrEnum):
    """Where a memory file lives."""

    GLOBAL = "global"  # at the root, for every JID; a JID's own copy overrides it
    JID = "jid"  # in each JID's folder only


@dataclass(frozen=True, slots=True)
class MemoryFile:
    name: str  # in its folder; a folder's ends with "/"
    kind: Kind
    scope: Scope
    title: str  # what the pages call it
    # How the effective prompt uses it: the section it becomes ("" for never) under its
    # heading; prompt.py holds the agent's rules for each section.
    section: str = ""
    heading: str = ""
    editable: bool = False  # the editor writes it (text)
    forgotten: bool = False  # /forget erases it
    legacy_of: str = ""  # the file that replaced it: shown, and read, where that one is absent
    absent: str = "Not written yet."  # what its part of the JID page says without the file

    @property
    def is_folder(self) -> bool:
        return self.name.endswith("/")


# In the prompt's order. The persona files are the reader's GLOBAL_FILES too
# (readers/fluux_xmpp.py: which files of the root are not sessions); a test holds them equal.
MEMORY_FILES: tuple[MemoryFile, ...] = (
    MemoryFile(
        "identity.md",
        Kind.PERSONA,
        Scope.GLOBAL,
        "Identity",
        section="identity",
        heading="Identity",
        editable=True,
    ),
    MemoryFile(
        "personality.md",
        Kind.PERSONA,
        Scope.GLOBAL,
        "Personality",
        section="personality",
        heading="Personality",
        editable=True,
    ),
    MemoryFile(
        "instructions.md",
        Kind.PERSONA,
        Scope.GLOBAL,
        "Instructions",
        section="instructions",
        heading="Instructions",
        editable=True,
    ),
    MemoryFile(
        "user.md",
        Kind.USER,
        Scope.JID,
        "Profile",
        section="profile",
        heading="About this user",
        editable=True,
        forgotten=True,
        absent="No profile.",
    ),
    MemoryFile(
        "context.md",
        Kind.CONTEXT,
        Scope.JID,
        "Profile",
        section="profile",
        heading="About this user",
        forgotten=True,
        legacy_of="user.md",
    ),
    MemoryFile(
        "memory.md",
        Kind.MEMORY,
        Scope.JID,
        "Memory",
        section="memory",
        heading="Notes and memory",
        editable=True,
        forgotten=True,
        absent="No notes.",
    ),
    MemoryFile("knowledge.jsonl", Kind.KNOWLEDGE, Scope.JID, "Knowledge", forgotten=True),
    MemoryFile("files/", Kind.FILES, Scope.JID, "Downloaded files", forgotten=True),
)


def _files() -> tuple[MemoryFile, ...]:
    return tuple(f for f in MEMORY_FILES if not f.is_folder)


def root_names() -> tuple[str, ...]:
    """The files at the root (the global persona files), in the prompt's order."""
    return tuple(f.name for f in _files() if f.scope == Scope.GLOBAL)


def jid_names() -> tuple[str, ...]:
    """The files a JID folder may hold: its own copies of the global ones, then its own."""
    return tuple(f.name for f in _files())


def editable_names(jid: str) -> tuple[str, ...]:
    """What the editor writes: at the root (jid ""), or in a JID's folder."""
    return tuple(f.name for f in _files() if f.editable and (jid or f.scope == Scope.GLOBAL))


def forgotten_names() -> tuple[str, ...]:
    """The files (not folders) /forget erases."""
    return tuple(f.name for f in _files() if f.forgotten)


def kept_names() -> tuple[str, ...]:
    """The files of a JID folder /forget keeps: its persona overrides."""
    return tuple(f.name for f in _files() if not f.forgotten)


def find(name: str) -> MemoryFile | None:
    return next((f for f in MEMORY_FILES if f.name == name), None)


def shown_parts() -> tuple[MemoryFile, ...]:
    """The JID's own text files the JID page shows each as a part of its own, in order: the
    persona files have their table, the knowledge and the files theirs, and a legacy file
    is shown in place of the one that replaced it."""
    return tuple(
        f for f in _files() if f.scope == Scope.JID and f.kind in (Kind.USER, Kind.MEMORY) and not f.legacy_of
    )


def legacy_of(name: str) -> MemoryFile | None:
    """The older file read in place of name where name does not exist (context.md for user.md)."""
    return next((f for f in MEMORY_FILES if f.legacy_of == name), None)


def first_of(kind: Kind) -> MemoryFile:
    """The first file of a kind that no other replaced: the one the agent's rules name."""
    return next(f for f in MEMORY_FILES if f.kind == kind and not f.legacy_of)


# The names the agent's own rules single out (prompt.py, memory.py, the pages), as the
# registry spells them. The agent has three persona files, each with its place in the prompt.
PERSONA_FILES = tuple(f.name for f in MEMORY_FILES if f.kind == Kind.PERSONA)
IDENTITY, PERSONALITY, INSTRUCTIONS = PERSONA_FILES
PROFILE = first_of(Kind.USER).name
LEGACY_PROFILE = legacy_of(PROFILE).name
MEMORY = first_of(Kind.MEMORY).name
KNOWLEDGE = first_of(Kind.KNOWLEDGE).name
FILES_DIR = first_of(Kind.FILES).name.rstrip("/")
