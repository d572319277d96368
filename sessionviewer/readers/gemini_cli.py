"""Gemini CLI sessions: ~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl (or .json).

<project> is the sha256 of the project's path, or (since about v0.29) a slug of its name
with a .project_root file holding the path. A subagent's session is
chats/<parent session id>/<its session id>.jsonl.

Up to about v0.38 a session is one JSON document (a ConversationRecord of
packages/core/src/services/chatRecordingTypes.ts), written again whole on every change:

    {"sessionId": "...", "projectHash": "...", "startTime": "...", "lastUpdated": "...",
     "summary": "...", "messages": [{"id": "...", "timestamp": "...", "type": "user", "content": ...}, ...]}

From about v0.39 it is JSON Lines (chatRecordingService.ts): the metadata first
({"sessionId", "projectHash", "startTime", ...}), then each message as it is recorded. A
message is appended again under its id whenever it changes (its tokens, its tool calls
and their results): the last record wins, in the place of the first. {"$set": {...}}
updates the metadata (a "messages" list in it replaces them all); {"$rewindTo": id}
drops that message and every one after it (all of them when the id is unknown). Resuming
a .json session writes its .jsonl beside it, and the .json is left as it was.

Messages are of type user, gemini, info, warning or error. A gemini message has its
thoughts ({subject, description}), its tokens (input counting the cached part, output,
cached, thoughts, tool) and its toolCalls, each with its args, its result (Gemini parts:
a functionResponse) and its status.

Since a record can change what came before it, a session is read whole whenever its
file changed (read() gives an identity that is never a file's head hash, so the index
never appends to it): its entries are the session as Gemini CLI loads it, in order,
each numbered by its place (line), with the offset of the record it first came from.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from . import (
    ASSISTANT,
    ATTACHMENT,
    HEADER,
    IMAGE,
    MESSAGE,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Block,
    Entry,
    FileLines,
    Format,
    Problem,
    ReadResult,
    SessionFile,
    _settled,
    decode_line,
    json_preview,
    keep_small,
    key_prefix,
    listing,
    parse_timestamp,
    reader_error,
    text_of,
    usage_counts,
)
from .files import read_regular

FORMAT = "gemini_cli"

PREFIX = "session-"
CHATS = "chats"
PROJECT_ROOT_FILE = ".project_root"
# What stands for a Gemini session's head hash: it never equals one, so a changed file is
# always read again whole (index/passes.py, _can_append), never appended to.
READ_WHOLE = "gemini_cli: read whole"
TITLE = "title"  # the session's summary, as Gemini CLI's /resume lists it (index/fold.py TITLE_KINDS)
_LEVELS = {"error": "error", "warning": "warning", "info": "info"}
# User text Gemini CLI itself does not resume as a prompt (sessionUtils.ts, isIgnoredUserContent).
_COMMAND_PREFIXES = ("/", "?")
_CONTEXT_PREFIXES = ("<session_context>", "<hook_context>")
_ROOT_BYTES = 4096  # of a .project_root file: one path


def is_session_name(name: str) -> bool:
    return name.startswith(PREFIX) and name.endswith((".json", ".jsonl"))


def _stem(name: str) -> str:
    return name.removesuffix(".jsonl").removesuffix(".json")


def _chats_folders(root: Path) -> Iterator[Path]:
    """The chats folders under a root: ~/.gemini/tmp (one per project), a project's folder, or
    chats itself (or any folder of session files)."""
    files, folders = listing(root)
    if root.name == CHATS or any(is_session_name(name) for name in files):
        yield root
        return
    if CHATS in folders:
        yield root / CHATS
    for name in folders:
        if name != CHATS and not name.startswith("."):
            inner = root / name
            if CHATS in listing(inner)[1]:
                yield inner / CHATS


def discover(root: Path) -> Iterator[SessionFile]:
    """Every session-*.json(l) in the root's chats folders, and the subagents' sessions in
    their parent's folder. A .json that has its .jsonl beside it was carried over into it
    when resumed: the .jsonl is the session, under the same key."""
    for chats in _chats_folders(root):
        files, folders = listing(chats)
        names = set(files)
        project = chats.parent.name if chats.name == CHATS and chats != root else ""
        prefix = key_prefix(chats, root)
        mains: dict[str, Path] = {}  # a session id's first 8 characters -> its file
        for name in files:
            if not is_session_name(name) or (name.endswith(".json") and name + "l" in names):
                continue
            path = chats / name
            mains.setdefault(_stem(name).rsplit("-", 1)[-1], path)
            yield SessionFile(path=path, format=FORMAT, key=prefix + _stem(name), project=project)
        for folder in folders:
            parent = mains.get(folder[:8])
            inner = chats / folder
            for name in listing(inner)[0]:
                if name.endswith(".jsonl"):
                    yield SessionFile(
                        path=inner / name,
                        format=FORMAT,
                        key=key_prefix(inner, root) + _stem(name),
                        project=project,
                        parent_path=parent,
                        agent_id=_stem(name),
                    )


def looks_like(path: Path, first: dict | None) -> bool:
    if path.is_dir():
        return any(any(is_session_name(name) for name in listing(chats)[0]) for chats in _chats_folders(path))
    if not is_session_name(path.name):
        return False
    # A .json document's first line is "{" alone: no object to look at.
    return first is None or ("sessionId" in first and "projectHash" in first)


def read(path: Path, start_offset: int = 0, start_line: int = 0, max_event_bytes: int = 0) -> ReadResult:
    """The whole session as Gemini CLI loads it, whatever start_offset says: no record can be
    read on its own (see the module's docstring)."""
    path = Path(path)
    try:
        data = read_regular(path)
    except OSError as error:
        return ReadResult([], [Problem(str(path), 0, 0, f"cannot read: {error}")], 0, 0, identity=READ_WHOLE)
    session = _Session(str(path))
    if path.suffix == ".json" and max_event_bytes and len(data) > max_event_bytes:
        session.problems.append(
            Problem(
                str(path), 1, 0, f"the session is {len(data)} bytes, past the {max_event_bytes} read at once"
            )
        )
    elif path.suffix == ".json" and data.lstrip()[:1] == b"{" and b"\n" in data.strip():
        session.read_document(data)
    else:
        session.read_lines(data, _settled(path))
    entries = session.entries(_project_root(path))
    return ReadResult(entries, session.problems, len(data), len(entries), identity=READ_WHOLE)


class _Session:
    """A session's metadata and messages as its records leave them."""

    def __init__(self, path: str):
        self.path = path
        self.metadata: dict = {}
        # id -> (the record, the offset of the record it was first written in); a record
        # written again replaces its value and keeps its place.
        self.messages: dict[str, tuple[dict, int]] = {}
        self.problems: list[Problem] = []
        self.rewound = 0  # messages dropped by a rewind

    def read_document(self, data: bytes) -> None:
        decoded = decode_line(Path(self.path), 1, 0, data)
        if isinstance(decoded, Problem):
            decoded.message = f"not a whole JSON document ({decoded.message})"
            self.problems.append(decoded)
        elif isinstance(decoded, dict):
            self.record(decoded, 0)

    def read_lines(self, data: bytes, settled: bool) -> None:
        offset, number, size = 0, 0, len(data)
        while offset < size:
            end = data.find(b"\n", offset)
            end = size if end < 0 else end + 1
            number += 1
            decoded = decode_line(Path(self.path), number, offset, data[offset:end])
            if isinstance(decoded, Problem):
                if end == size and not data.endswith(b"\n"):
                    if not settled:  # still being written: the next change reads it all again
                        break
                    decoded.message = (
                        f"cut off: the last line has no newline and is incomplete ({decoded.message})"
                    )
                self.problems.append(decoded)
            elif decoded is not None:
                self.record(decoded, offset)
            offset = end

    def record(self, record: dict, offset: int) -> None:
        """One record, as chatRecordingService.ts's loadConversationRecord takes it."""
        if isinstance(record.get("$rewindTo"), str):
            self.rewind(record["$rewindTo"])
        elif isinstance(record.get("id"), str):
            self.message(record, offset)
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if isinstance(update.get("messages"), list):
                self.messages.clear()  # a checkpoint: these are the messages now
                for message in update["messages"]:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        self.message(message, offset)
            self.metadata.update({k: v for k, v in update.items() if k != "messages"})
        elif isinstance(record.get("sessionId"), str):
            self.metadata.update({k: v for k, v in record.items() if k != "messages"})
            for message in record.get("messages") if isinstance(record.get("messages"), list) else []:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    self.message(message, offset)

    def message(self, record: dict, offset: int) -> None:
        known = self.messages.get(record["id"])
        self.messages[record["id"]] = (record, known[1] if known else offset)

    def rewind(self, message_id: str) -> None:
        ids = list(self.messages)
        cut = ids.index(message_id) if message_id in self.messages else 0
        for dropped in ids[cut:]:
            del self.messages[dropped]
        self.rewound += len(ids) - cut

    def entries(self, project_root: str) -> list[Entry]:
        header = _header(self.metadata, project_root, self.rewound)
        found = [header]
        if summary := text_of(self.metadata.get("summary")).strip():
            found.append(Entry(id="title", parent_id=None, kind=TITLE, summary=summary))
        for record, offset in self.messages.values():
            try:
                made = _message(record)
            except Exception as error:  # a reader bug must not lose the session
                problem, entry = reader_error(Path(self.path), 0, offset, orjson.dumps(record), record, error)
                self.problems.append(problem)
                made = [entry]
            for entry in made:
                entry.offset = offset
                found.append(entry)
        for number, entry in enumerate(found, 1):
            entry.line = number
        return found


def _header(metadata: dict, project_root: str, rewound: int) -> Entry:
    directories = metadata.get("directories")
    extra = {
        "session_id": text_of(metadata.get("sessionId")),
        "project_hash": text_of(metadata.get("projectHash")),
        "cwd": project_root,
        "session_kind": text_of(metadata.get("kind")),
        "last_updated": text_of(metadata.get("lastUpdated")),
        "directories": [d for d in directories if isinstance(d, str)][:50]
        if isinstance(directories, list)
        else [],
        "rewound_messages": rewound,
    }
    return Entry(
        id="session",
        parent_id=None,
        kind=HEADER,
        timestamp=parse_timestamp(metadata.get("startTime")),
        extra={k: v for k, v in extra.items() if v},
    )


def _message(record: dict) -> list[Entry]:
    """A message's entry, then one entry for each of its tool calls' results."""
    kind = text_of(record.get("type"))
    timestamp = parse_timestamp(record.get("timestamp"))
    entry = Entry(id=record["id"], parent_id=None, kind=MESSAGE, timestamp=timestamp, subtype=kind)
    shown = record.get("displayContent")
    entry.blocks = _parts(shown if shown not in (None, "", []) else record.get("content"))
    if kind == "user":
        entry.role, entry.subtype = USER, ""
        if all(b.type == TOOL_RESULT for b in entry.blocks) and entry.blocks:
            entry.role = TOOL  # a tool's response written back as a turn of its own
        text = "\n".join(b.text for b in entry.blocks if b.type == TEXT).strip()
        entry.is_meta = text.startswith(_CONTEXT_PREFIXES)
        return [entry]
    if kind != "gemini":  # info, warning, error and what later versions add
        entry.role, entry.is_meta = SYSTEM, kind != "error"
        entry.extra["level"] = _LEVELS.get(kind, kind)
        if kind == "error":  # shown once, as an error (its text stays searchable as the summary)
            entry.summary = "\n".join(b.text for b in entry.blocks if b.text) or "error"
            entry.extra["error_message"], entry.blocks = entry.summary, []
        return [entry]
    entry.role, entry.subtype = ASSISTANT, ""
    entry.model = text_of(record.get("model"))
    entry.extra["provider"] = "google"  # genai-prices' name for the Gemini API (prices.py)
    thoughts = [_thought(t) for t in _list(record.get("thoughts")) if isinstance(t, dict)]
    entry.blocks = [Block(THINKING, text=t) for t in thoughts if t] + entry.blocks
    entry.usage, counts = _usage(record.get("tokens"))
    if counts:
        entry.extra["tokens"] = counts
    calls = [call for call in _list(record.get("toolCalls")) if isinstance(call, dict)]
    called = {b.call_id for b in entry.blocks if b.type == TOOL_CALL}
    results = []
    for number, call in enumerate(calls):
        call_id = text_of(call.get("id")) or f"{entry.id}:{number}"
        if call_id not in called:
            entry.blocks.append(
                Block(TOOL_CALL, name=text_of(call.get("name")), call_id=call_id, arguments=call.get("args"))
            )
        if (result := _result(entry, call, call_id)) is not None:
            results.append(result)
    return [entry, *results]


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _thought(thought: dict) -> str:
    subject, description = (
        text_of(thought.get("subject")).strip(),
        text_of(thought.get("description")).strip(),
    )
    return f"**{subject}**\n\n{description}".strip() if subject else description


def _usage(tokens: Any) -> tuple[dict[str, int], dict[str, int]]:
    """Gemini's counts as ours: input without its cached part but with the tool-use prompt,
    which is billed as input; output with the thoughts, billed as output. And the counts as
    written, for the page."""
    counts = usage_counts(
        tokens,
        {"input": "input", "output": "output", "cached": "cached", "thoughts": "thoughts", "tool": "tool"},
    )
    usage = {
        "input": max(0, counts.get("input", 0) - counts.get("cached", 0)) + counts.get("tool", 0),
        "output": counts.get("output", 0) + counts.get("thoughts", 0),
        "cache_read": counts.get("cached", 0),
    }
    return {k: v for k, v in usage.items() if v}, {k: v for k, v in counts.items() if v}


def _result(message: Entry, call: dict, call_id: str) -> Entry | None:
    """A tool call's result as an entry of its own, or None while it has none."""
    status = text_of(call.get("status"))
    result = call.get("result")
    if result in (None, "", []) and status not in ("error", "cancelled"):
        return None
    blocks = _parts(result)
    texts = [b.text for b in blocks if b.type in (TEXT, TOOL_RESULT) and b.text]
    text = "\n".join(texts)
    if not text and isinstance(call.get("resultDisplay"), str):
        text = call["resultDisplay"]
    block = Block(TOOL_RESULT, text=text or status, call_id=call_id, is_error=status == "error")
    entry = Entry(
        id=f"{message.id}/{call_id}",
        parent_id=None,
        kind=MESSAGE,
        role=TOOL,
        timestamp=parse_timestamp(call.get("timestamp")) or message.timestamp,
        blocks=[block, *(b for b in blocks if b.type in (IMAGE, ATTACHMENT))],
    )
    details = {
        "status": status,
        "display_name": text_of(call.get("displayName")),
        "description": text_of(call.get("description"))[:500],
        "agent_id": text_of(call.get("agentId")),
    }
    if call.get("resultDisplay") not in (None, "") and not isinstance(call.get("resultDisplay"), str):
        details["display"] = keep_small(call["resultDisplay"])
    entry.extra["details"] = {k: v for k, v in details.items() if v}
    if status == "error":
        entry.extra["error_message"] = text or "the tool call failed"
    return entry


def _parts(content: Any) -> list[Block]:
    """Gemini parts (a string, a part, or a list of either) as blocks."""
    if isinstance(content, str):
        return [Block(TEXT, text=content)] if content else []
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return []
    blocks = []
    for part in content:
        if isinstance(part, str):
            if part:
                blocks.append(Block(TEXT, text=part))
        elif isinstance(part, dict):
            blocks.append(_part(part))
    return blocks


def _part(part: dict) -> Block:
    if isinstance(part.get("text"), str):
        return Block(THINKING if part.get("thought") is True else TEXT, text=part["text"])
    if isinstance(call := part.get("functionCall"), dict):
        return Block(
            TOOL_CALL,
            name=text_of(call.get("name")),
            call_id=text_of(call.get("id")),
            arguments=call.get("args"),
        )
    if isinstance(response := part.get("functionResponse"), dict):
        return Block(
            TOOL_RESULT, text=_response_text(response.get("response")), call_id=text_of(response.get("id"))
        )
    if isinstance(inline := part.get("inlineData"), dict):
        mime = text_of(inline.get("mimeType"))
        if mime.startswith("image/"):
            return Block(IMAGE, mime_type=mime, data=text_of(inline.get("data")))
        return Block(ATTACHMENT, name=text_of(inline.get("displayName")) or mime, mime_type=mime)
    if isinstance(file := part.get("fileData"), dict):
        return Block(ATTACHMENT, name=text_of(file.get("fileUri")), mime_type=text_of(file.get("mimeType")))
    return Block(TEXT, text=f"[{next(iter(part), 'part')}] {json_preview(part)}")


def _response_text(response: Any) -> str:
    """A functionResponse's response: its output, else its error, else the whole as JSON."""
    if isinstance(response, dict):
        for name in ("output", "error", "llmContent"):
            if isinstance(response.get(name), str):
                return response[name]
    return text_of(response) or json_preview(response, 20000)


def _project_root(path: Path) -> str:
    """The project's path from its slug folder's .project_root (since about v0.29); "" for a
    hash folder, whose path cannot be told from its name."""
    folder = path.parent
    while folder.name != CHATS:
        if folder == folder.parent:
            return ""
        folder = folder.parent
    try:
        data = read_regular(folder.parent / PROJECT_ROOT_FILE)[:_ROOT_BYTES]
    except OSError:
        return ""
    return data.decode("utf-8", "replace").strip()


# read_file's output (packages/core/src/tools/read-file.ts, utils/fileUtils.ts): the file's
# lines joined by "\n", as read; when it gives only some of them, it says so before them.
_CUT = re.compile(
    r"\A\s*IMPORTANT: The file content has been truncated\.\n(?P<status>.*?)\n--- FILE CONTENT \(truncated\) ---\n",
    re.S,
)
_SHOWING = re.compile(r"Showing lines (\d+)-\d+ of \d+")
# Context it appends after the lines, on a read of a folder it had not seen (tools/jit-context.ts).
_CONTEXT = "\n\n--- Newly Discovered Project Context ---\n"
_SHORTENED = "... [truncated]"  # the end of a line it shortened


def read_output(text: str, arguments: Any = None) -> FileLines | None:
    """A read_file result as the file's lines, numbered from the call's start_line (1 without
    one; before v0.30 its offset, which counted from 0); what it says of a file it cut,
    the context it appended and lines it shortened are the note. None for no text."""
    if not text:
        return None
    args = arguments if isinstance(arguments, dict) else {}
    start, offset = args.get("start_line"), args.get("offset")
    if isinstance(start, int) and not isinstance(start, bool) and start >= 1:
        first = start
    elif isinstance(offset, int) and not isinstance(offset, bool) and offset >= 0:
        first = offset + 1
    else:
        first = 1
    notes = []
    if cut := _CUT.match(text):
        notes.append(cut.group("status").strip())
        text = text[cut.end() :]
        if shown := _SHOWING.search(cut.group("status")):
            first = int(shown.group(1))
    if (at := text.find(_CONTEXT)) != -1:
        text, context = text[:at], text[at:]
        notes.append(context.strip())
    lines = text.removesuffix("\n").split("\n")
    if any(line.endswith(_SHORTENED) for line in lines):
        notes.append("Some lines were shortened.")
    return FileLines(list(range(first, first + len(lines))), lines, "\n".join(notes))


def harness_line(entry: Entry) -> dict | None:
    """A slash command or a "?" (help) typed to Gemini CLI, or the context it adds: not prompts."""
    if entry.kind != MESSAGE or entry.role != USER:
        return None
    text = "\n".join(b.text for b in entry.blocks if b.type == TEXT).strip()
    if text.startswith(_COMMAND_PREFIXES):
        return {"kind": "command", "line": text.split("\n", 1)[0]}
    if entry.is_meta:
        return {"kind": "meta", "text": text}
    return None


THIS_FORMAT = Format(
    FORMAT, "Gemini CLI", "marks/gemini_cli.svg", makes_projects=True, harness_line=harness_line
)  # twins: a filled and an open dot on a blue square
