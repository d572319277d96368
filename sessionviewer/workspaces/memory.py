"""The memory audit: what the agent's /status counts for a JID, its knowledge store line by
line, and a search over every JID's notes."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from sessionviewer.workspaces.listing import is_room, jid_folders, regular_files
from sessionviewer.workspaces.memory_files import (
    FILES_DIR,
    IDENTITY,
    INSTRUCTIONS,
    KNOWLEDGE,
    PERSONA_FILES,
    PERSONALITY,
)
from sessionviewer.workspaces.paths import (
    HISTORY,
    SESSIONS_DIR,
    UnsafePath,
    load_member,
    read_error,
    read_regular,
    real_path,
    resolve_jid_dir,
    resolve_member,
)
from sessionviewer.workspaces.prompt import (
    Section,
    memory_section,
    persona_section,
    profile_section,
    rust_trim,
)

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


def count_messages(text: str) -> int:
    """The messages the agent would load from a history: what /status and /new count."""
    return sum(1 for _, obj in _json_lines(text) if _counts_as_message(obj))


@dataclass(frozen=True, slots=True)
class LineProblem:
    line: int  # 0: the whole file
    message: str

    def to_dict(self) -> dict:
        return {"line": self.line, "message": self.message}


@dataclass(frozen=True, slots=True)
class KnowledgeEntry:
    key: str
    content: str
    ts: str
    line: int

    def to_dict(self) -> dict:
        return {"key": self.key, "content": self.content, "ts": self.ts, "line": self.line}


@dataclass(slots=True)
class Knowledge:
    entries: list[KnowledgeEntry] = field(default_factory=list)  # one per key, the latest line
    problems: list[LineProblem] = field(default_factory=list)
    valid_lines: int = 0  # what the agent's /status counts, repeated keys included

    def to_dict(self) -> dict:
        return {
            "entries": [e.to_dict() for e in self.entries],
            "problems": [p.to_dict() for p in self.problems],
        }


def knowledge(jid_dir: Path) -> Knowledge:
    """A JID's knowledge.jsonl; a link leading out of its folder is a problem of the whole file."""
    try:
        path = resolve_member(jid_dir, KNOWLEDGE)
    except UnsafePath as error:
        return Knowledge(problems=[LineProblem(0, str(error))])
    return read_knowledge(path)


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

    def to_dict(self) -> dict:
        return asdict(self)


def _count_entries(folder: Path, keep) -> int:
    try:
        return sum(1 for entry in folder.iterdir() if keep(entry))
    except OSError:  # absent, not a folder, or unreadable: the agent's read_dir fails the same way
        return 0


def jid_status(root: Path, jid: str) -> JidStatus:
    base = real_path(Path(root))
    jid_dir = resolve_jid_dir(base, jid)
    errors = []
    text, error = load_member(jid_dir, HISTORY)
    if error:
        errors.append(f"{jid}/{HISTORY}: {error}")
    persona = {name: persona_section(base, jid, jid_dir, name) for name in PERSONA_FILES}
    profile, memory = profile_section(jid, jid_dir), memory_section(jid, jid_dir)
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
        messages=count_messages(text) if text else 0,
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


@dataclass(frozen=True, slots=True)
class SearchHit:
    jid: str
    file: str  # name inside the JID folder
    line: int
    text: str

    def to_dict(self) -> dict:
        return {"jid": self.jid, "file": self.file, "line": self.line, "text": self.text}


def search_memory(root: Path, query: str) -> list[SearchHit]:
    """Case-insensitive search over each JID's Markdown files and knowledge.jsonl."""
    if not query.strip():
        return []
    return search_texts(_jid_texts(real_path(Path(root))), query)


def _jid_texts(base: Path):
    for jid, jid_dir in jid_folders(base):
        for name, path in regular_files(jid_dir, (".md", KNOWLEDGE)):
            if name.endswith(".jsonl") and name != KNOWLEDGE:
                continue
            try:
                yield jid, name, read_regular(path).decode("utf-8", errors="replace")
            except OSError:
                continue


def search_texts(files, query: str) -> list[SearchHit]:
    """The lines holding query, any case, in files: (jid, name, text) each, a tree's or the index's."""
    needle = query.casefold()
    if not needle.strip():
        return []
    hits = []
    for jid, name, text in files:
        lines = [line.removesuffix("\r") for line in text.split("\n")]
        hits += [
            SearchHit(jid, name, n, line) for n, line in enumerate(lines, 1) if needle in line.casefold()
        ]
    return hits
