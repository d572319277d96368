"""The effective system prompt: the sections the agent sends for a JID, as it builds them.

Checked against processone/fluux-agent (``src/agent/memory.rs``, ``src/agent/runtime.rs``):

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
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from sessionviewer.workspaces import memory_files
from sessionviewer.workspaces.memory_files import MEMORY, PERSONA_FILES, PROFILE
from sessionviewer.workspaces.paths import load_member, real_path, resolve_jid_dir

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


# Effective system prompt


@dataclass(frozen=True, slots=True)
class Section:
    kind: str  # identity, personality, instructions, default, profile, memory, date
    title: str
    source: str  # path relative to the root, "default" or "runtime"
    text: str  # the trimmed body as it enters the prompt, without its heading
    error: str | None = None

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "title": self.title,
            "source": self.source,
            "text": self.text,
            "error": self.error,
        }


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

    def to_dict(self) -> dict:
        return {
            "text": self.text,
            "ok": self.ok,
            "errors": list(self.errors),
            "uses_default": self.uses_default,
            "sections": [s.to_dict() for s in self.sections],
        }


# Where the sections' files come from: load(jid, name) gives (text, None), (None, None) when
# the file is absent, or (None, error); jid "" names the root's global files. The disk today,
# or the snapshots of a past moment (memory_timeline.memory_as_of): one code builds both.
Loader = Callable[[str, str], tuple[str | None, str | None]]


def disk_loader(root: Path, jid: str, jid_dir: Path) -> Loader:
    def load(owner: str, name: str) -> tuple[str | None, str | None]:
        return load_member(jid_dir if owner == jid and owner else root, name)

    return load


def persona_section(root: Path, jid: str, jid_dir: Path, name: str) -> Section | None:
    """The JID's file when present and not blank, else the global one, else None."""
    return _persona(disk_loader(root, jid, jid_dir), jid, name)


def _persona(load: Loader, jid: str, name: str) -> Section | None:
    kind, title = _section_of(name)
    text, error = load(jid, name)
    if error:
        return Section(kind, title, f"{jid}/{name}", "", error)
    if text is not None and not is_blank(text):
        return Section(kind, title, f"{jid}/{name}", rust_trim(text))
    text, error = load("", name)
    if error:
        return Section(kind, title, name, "", error)
    if text is not None and not is_blank(text):
        return Section(kind, title, name, rust_trim(text))
    return None


def profile_section(jid: str, jid_dir: Path) -> Section | None:
    """The profile: user.md, else the legacy context.md; None when blank or missing."""
    return _profile(disk_loader(jid_dir, jid, jid_dir), jid)


def _section_of(name: str) -> tuple[str, str]:
    """The section a memory file becomes, and its heading (memory_files)."""
    found = memory_files.find(name)
    return found.section, found.heading


def _profile(load: Loader, jid: str) -> Section | None:
    # An existing user.md decides alone, even blank: context.md is then not read.
    kind, title = _section_of(PROFILE)
    for name in (PROFILE, memory_files.legacy_of(PROFILE).name):
        text, error = load(jid, name)
        if error:
            return Section(kind, title, f"{jid}/{name}", "", error)
        if text is not None:
            if is_blank(text):
                return None
            return Section(kind, title, f"{jid}/{name}", rust_trim(text))
    return None


def memory_section(jid: str, jid_dir: Path) -> Section | None:
    """memory.md under its heading; None when blank or missing."""
    return _memory(disk_loader(jid_dir, jid, jid_dir), jid)


def _memory(load: Loader, jid: str) -> Section | None:
    kind, title = _section_of(MEMORY)
    text, error = load(jid, MEMORY)
    if error:
        return Section(kind, title, f"{jid}/{MEMORY}", "", error)
    if text is None or is_blank(text):
        return None
    return Section(kind, title, f"{jid}/{MEMORY}", rust_trim(text))


def _assemble(sections: list[Section]) -> str:
    parts = []
    for section in sections:
        if section.kind in ("identity", "personality"):
            parts.append(section.text + "\n\n")
        elif section.kind in ("instructions", "default"):
            parts.append(section.text)
        elif section.kind in ("profile", "memory"):  # under its heading (memory_files)
            parts.append(f"\n\n## {section.title}\n" + section.text)
        elif section.kind == "date":
            parts.append("\n\nCurrent date: " + section.text)
    return "".join(parts)


def effective_prompt(root: Path, jid: str, agent_name: str, today: date | None = None) -> Prompt:
    """The system prompt the agent sends for jid, section by section."""
    base = real_path(Path(root))
    jid_dir = resolve_jid_dir(base, jid)
    day = today or date.today()  # chrono::Local, like the agent
    return build_prompt(disk_loader(base, jid, jid_dir), jid, agent_name, day)


def build_prompt(load: Loader, jid: str, agent_name: str, day: date) -> Prompt:
    """The prompt from the files load gives: the disk's, or a past moment's snapshots."""
    persona = [s for name in PERSONA_FILES if (s := _persona(load, jid, name))]
    sections = list(persona)
    if not persona:
        sections.append(Section("default", "Default prompt", "default", default_prompt(agent_name)))
    sections += [s for s in (_profile(load, jid), _memory(load, jid)) if s]
    sections.append(Section("date", "Current date", "runtime", format_current_date(day)))
    failed = any(s.error for s in sections)
    return Prompt("" if failed else _assemble(sections), tuple(sections))
