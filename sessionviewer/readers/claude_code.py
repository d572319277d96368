"""Claude Code session transcripts: ``~/.claude/projects/<project>/<session-uuid>.jsonl``.

JSON Lines. Lines chain through ``uuid``/``parentUuid``; one streamed reply is
spread over several assistant lines that share ``message.id``:

    {"type":"user","uuid":"u1","parentUuid":null,"sessionId":"s1","message":{"role":"user","content":"hi"}}
    {"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"s1","message":{"id":"msg_1","content":[{"type":"text","text":"Hello"}]}}

Subagents are written to ``<project>/<session-uuid>/subagents/agent-<id>.jsonl``
(before 2.1: ``<project>/agent-<id>.jsonl``). Besides user and assistant lines a
file holds bookkeeping lines (progress, file-history-snapshot, queue-operation,
system, summary, titles; LINE_TYPES lists them); all are kept, types we do not know
as unknown entries (kind RAW, the type in subtype, the whole line in raw).

``Entry.extra`` keeps the line's scalar fields under the names the file uses
(cwd, gitBranch, version, sessionId, agentId, slug, requestId, toolUseID,
parentToolUseID, sourceToolAssistantUUID, isCompactSummary, level, ...) and adds
derived keys in snake_case:

    is_compact_summary   the user line carrying a compaction's summary
    tool_use_result      scalar parts of toolUseResult (a string result as is)
    subagent_id          this line reports on that subagent (toolUseResult.agentId,
    subagent_call_id     progress data.agentId) and the tool call that started it
    structured_patch     an Edit's or Write's toolUseResult.structuredPatch (hunks with
                         oldStart/oldLines/newStart/newLines and their lines), while small
    command, command_args   a slash command the user typed (<command-name>)
    data                 scalar parts of a progress line's data
    hook_commands        commands a stop_hook_summary ran
    trigger, preTokens   compaction metadata
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from . import (
    ASSISTANT,
    ATTACHMENT,
    COMPACTION,
    IMAGE,
    MESSAGE,
    RAW,
    SUMMARY,
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
    SessionFile,
    first_object,
    key_prefix,
    parse_timestamp,
    text_of,
    usage_counts,
    written,
)
from .files import open_regular, read_regular

FORMAT = "claude_code"

SYSTEM_KIND = "system"

# Every line type this reader knows, with what it holds. The first seven are what
# Claude Code 2.0.76 to 2.1.39 write (the samples hold each); the rest are from public
# reports of the versions around and after them. A type not listed here is an unknown
# entry: kept whole (Entry.raw), shown as such and counted on its session, never a problem.
LINE_TYPES = {
    "user": "a prompt, tool results, or harness text (meta, slash commands)",
    "assistant": "one content block of a reply; the reply's lines share message.id",
    "system": "local_command, stop_hook_summary, turn_duration, compact_boundary, api_error, ...",
    "summary": "a title and the leafUuid of the message it sums up",
    "progress": "hook_progress, agent_progress, bash_progress, ... under data",
    "file-history-snapshot": "the files backed up before a prompt's edits",
    "queue-operation": "a prompt typed while the agent worked: enqueue, dequeue, remove",
    "custom-title": "a title the person gave (/rename)",
    "ai-title": "a title the agent made",
    "agent-name": "the agent's name",
    "last-prompt": "the last prompt typed",
    "pr-link": "a pull request the session opened",
    "attachment": "something added to the context: a file, a hook's output, a reminder",
    "permission-mode": "the permission mode the person switched to",
}

# Line types kept with their own type as the kind. Types ending in "title"
# (custom-title, ai-title, ...) are kept too, their title in Entry.summary.
BOOKKEEPING_TYPES = frozenset(LINE_TYPES) - {"user", "assistant", "system", "summary"}

# Tools Claude Code renamed, old name to new: counts take both as one tool. The views
# (transcripts/tools.py) and subagent links (toolUseResult.agentId) accept either already.
RENAMED_TOOLS = {"Task": "Agent"}

# Fields the Entry's own attributes carry; other scalar fields go to extra as written.
_HANDLED = frozenset(
    {
        "type",
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "timestamp",
        "isSidechain",
        "isMeta",
        "message",
        "subtype",
        "content",
        "summary",
        "leafUuid",
        "toolUseResult",
        "compactMetadata",
        "data",
        "snapshot",
        "attachment",
    }
)

_USAGE = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_input_tokens",
    "cache_write": "cache_creation_input_tokens",
}

# Local slash commands are written as user lines. The command itself was typed by
# the person (the terminal shows it as a prompt, "❯ /mcp"), so it is not meta; the
# caveat before it and the output after it are written by the harness, so they are.
_HARNESS_OUTPUT = (
    "<local-command-caveat>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-stdout>",
    "<bash-stderr>",
    "Caveat: The messages below were generated by the user while running local commands",
)
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)

_SHORT_TEXT = 1000  # bookkeeping lines get a short text, not their whole payload
_META_TOOL_ID_KEYS = ("toolUseId", "toolUseID", "tool_use_id", "parentToolUseID", "parentToolUseId")

# Markers of the other formats, so that their first lines never pass for ours.
_FOREIGN_KEYS = ("parent_id", "parentId", "sessionKey", "msg_id", "jid", "created", "role")
_CLAUDE_KEYS = ("parentUuid", "sessionId", "uuid", "leafUuid", "logicalParentUuid")


# parse_line


def parse_line(obj: dict, line: int) -> Entry:
    """One JSON object of a Claude Code file to one Entry; odd shapes degrade, never raise."""
    kind = obj.get("type")
    if kind in ("user", "assistant"):
        return _message(obj, line, kind)
    if kind == "summary":
        return _summary(obj, line)
    if kind == "system":
        return _system(obj, line)
    if isinstance(kind, str) and (kind in BOOKKEEPING_TYPES or kind.endswith("title")):
        return _bookkeeping(obj, line, kind)
    entry = _base(obj, line, RAW)
    entry.subtype = "" if kind is None else kind if isinstance(kind, str) else written(kind)[:200]
    entry.raw = obj
    return entry


def _base(obj: dict, line: int, kind: str) -> Entry:
    return Entry(
        id=text_of(obj.get("uuid")) or f"line:{line}",
        parent_id=text_of(obj.get("parentUuid")) or None,
        kind=kind,
        timestamp=parse_timestamp(obj.get("timestamp")),
        is_sidechain=obj.get("isSidechain") is True,
        is_meta=any(obj.get(k) is True for k in ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")),
        logical_parent_id=text_of(obj.get("logicalParentUuid")),
        extra=_scalars(obj, skip=_HANDLED),
    )


def _message(obj: dict, line: int, kind: str) -> Entry:
    entry = _base(obj, line, MESSAGE)
    message = obj.get("message")
    if isinstance(message, (str, list)):  # hand-written files do this; keep the content
        message = {"content": message}
    if not isinstance(message, dict):
        message = {}
    content = message.get("content")
    entry.blocks = _blocks(content)
    if kind == "assistant":
        entry.role = ASSISTANT
    elif isinstance(content, list) and content and all(_is_tool_result(item) for item in content):
        entry.role = TOOL
    else:
        entry.role = USER
    entry.model = text_of(message.get("model"))
    entry.message_id = text_of(message.get("id"))
    entry.usage = usage_counts(message.get("usage"), _USAGE)
    # Cache writes kept an hour cost more than 5-minute ones: keep how many there were.
    # In extra, not usage: usage's counts add up to the turn's tokens.
    split = message["usage"].get("cache_creation") if entry.usage else None
    if hour := usage_counts(split, {"n": "ephemeral_1h_input_tokens"}).get("n"):
        entry.extra["cache_write_1h"] = hour
    if obj.get("isCompactSummary") is True:
        entry.extra["is_compact_summary"] = True
    _keep_tool_use_result(entry, obj.get("toolUseResult"))
    if entry.role == USER:
        _mark_local_command(entry)
    return entry


def _is_tool_result(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") == "tool_result"


def _keep_tool_use_result(entry: Entry, result: Any) -> None:
    """Small parts of toolUseResult, and the subagent a Task/Agent result names."""
    if isinstance(result, dict):
        small = _scalars(result, limit=200)
        if small:
            entry.extra["tool_use_result"] = small
        if patch := _structured_patch(result.get("structuredPatch")):
            entry.extra["structured_patch"] = patch
        agent_id = text_of(result.get("agentId"))
        calls = [b.call_id for b in entry.blocks if b.type == TOOL_RESULT and b.call_id]
        if agent_id and calls:
            entry.extra["subagent_id"] = agent_id
            entry.extra["subagent_call_id"] = calls[0]
    elif isinstance(result, str) and result:
        entry.extra["tool_use_result"] = result[:500]
    elif isinstance(result, (bool, int, float)):
        entry.extra["tool_use_result"] = result


# What a Task/Agent result (toolUseResult) says its subagent spent, by the names the page uses.
_SUBAGENT_STATS = (
    ("totalTokens", "tokens"),
    ("totalToolUseCount", "tool_uses"),
    ("totalDurationMs", "duration_ms"),
)


def subagent_stats(extra: dict) -> dict[str, int]:
    """A Task/Agent result's tokens, tool uses and duration in milliseconds, those it gives,
    from the parts of toolUseResult the reader kept (entry.extra)."""
    kept = extra.get("tool_use_result")
    if not isinstance(kept, dict):
        return {}
    return {
        name: value
        for key, name in _SUBAGENT_STATS
        if isinstance(value := kept.get(key), int) and not isinstance(value, bool) and value >= 0
    }


# An edit's hunks, kept for the diff's line numbers while the lines stay this short in all.
PATCH_LIMIT = 20_000


def _structured_patch(patch: Any) -> list[dict] | None:
    """The hunks of a structuredPatch, when each is well formed and all are small; else None."""
    if not isinstance(patch, list) or not patch:
        return None
    hunks, size = [], 0
    for hunk in patch:
        if not isinstance(hunk, dict):
            return None
        numbers = {key: hunk.get(key) for key in ("oldStart", "oldLines", "newStart", "newLines")}
        lines = hunk.get("lines")
        if not all(type(n) is int for n in numbers.values()) or not isinstance(lines, list):
            return None
        if not all(isinstance(line, str) for line in lines):
            return None
        size += sum(len(line) for line in lines)
        if size > PATCH_LIMIT:
            return None
        hunks.append({**numbers, "lines": lines})
    return hunks


def _mark_local_command(entry: Entry) -> None:
    text = next((b.text for b in entry.blocks if b.type == TEXT), "").lstrip()
    if text.startswith(_HARNESS_OUTPUT):
        entry.is_meta = True
    elif text.startswith("<command-") and (name := _COMMAND_NAME.search(text)):
        entry.extra["command"] = name.group(1).strip()
        args = _COMMAND_ARGS.search(text)
        if args and args.group(1).strip():
            entry.extra["command_args"] = args.group(1).strip()


# --- Harness lines ---------------------------------------------------------------------------------------
# The harness writes slash commands, their output and a caveat as user lines wrapped in tags
# (<command-name>, <local-command-stdout>, ...). They show as what they are, not as prompts,
# and none of them titles a session: harness_line() is the one rule for the page and the index.

_INTERRUPTED = ("[Request interrupted by user]", "[Request interrupted by user for tool use]")
_CAVEAT = (
    "<local-command-caveat>",
    "Caveat: The messages below were generated by the user while running local commands",
)
_OUTPUT = re.compile(r"<(local-command-stdout|local-command-stderr|bash-stdout|bash-stderr)>(.*?)</\1>", re.S)
_BASH_INPUT = re.compile(r"^<bash-input>(.*?)</bash-input>", re.S)
_TAG = re.compile(r"</?local-command-caveat>")
# Terminal colour and cursor codes in command output: noise once out of the terminal.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def harness_line(entry: Entry) -> dict | None:
    """What a harness-written user line is: a command, its output, an interruption, a caveat
    or other meta text.

    None for anything else, which shows as usual and may title its session.
    """
    if entry.kind != MESSAGE or entry.role != USER or entry.extra.get("is_compact_summary"):
        return None
    if command := entry.extra.get("command"):
        args = entry.extra.get("command_args", "")
        return {"kind": "command", "line": f"{command} {args}".strip()}
    text = "\n".join(b.text for b in entry.blocks if b.type == TEXT and b.text).strip()
    if found := _BASH_INPUT.match(text):  # a shell command typed with "!"
        return {"kind": "command", "line": "!" + found.group(1).strip()}
    if text in _INTERRUPTED:  # written when the person stops the agent: not a prompt
        return {"kind": "interrupt", "text": text, "during_tool": text.endswith("for tool use]")}
    if not entry.is_meta:
        return None
    if text.startswith(_CAVEAT):
        return {"kind": "caveat", "text": _TAG.sub("", text).strip()}
    outputs = _OUTPUT.findall(text)
    if outputs and text.startswith("<"):
        shown = [(tag, _ANSI.sub("", body).strip("\n")) for tag, body in outputs]
        return {
            "kind": "output",
            "text": "\n".join(body for _, body in shown if body.strip()),
            "error": any(tag.endswith("stderr") and body.strip() for tag, body in shown),
        }
    return {"kind": "meta", "text": text}


def is_compact_command(entry: Entry) -> bool:
    """Whether a user line is the /compact command a person typed: Claude Code writes it after
    the compaction it asked for (the boundary, its summary, a caveat, then the command)."""
    harness = harness_line(entry)
    return (
        harness is not None
        and harness["kind"] == "command"
        and harness["line"].split(" ", 1)[0] == "/compact"
    )


# A Read result's line: its number in the file, an arrow (a tab before 2.0), the line.
_READ_LINE = re.compile(r"^\s*(\d+)(?:\t|\u2192)(.*)$")


def read_output(text: str, arguments: Any = None) -> FileLines | None:
    """A Read result's "     12→text" lines as the file's numbered lines; what follows them
    (not a reminder to the model) is the note. None when the first line is not numbered."""
    lines = text.split("\n")
    numbers: list[int] = []
    kept: list[str] = []
    for raw in lines:
        found = _READ_LINE.match(raw.removesuffix("\r"))
        if not found:
            break
        numbers.append(int(found.group(1)))
        kept.append(found.group(2))
    if not numbers:
        return None
    note = "\n".join(lines[len(numbers) :]).strip()
    return FileLines(numbers, kept, "" if is_reminder(note) else note)


def is_reminder(text: str) -> bool:
    """Whether a text block is only a <system-reminder> the harness added for the model."""
    text = text.strip()
    return text.startswith("<system-reminder>") and text.endswith("</system-reminder>")


def is_hidden_block(block: Block) -> bool:
    """A block with nothing to show: text that is only whitespace or a system reminder,
    thinking with nothing written (transcripts.layout.is_hidden_block, the page's rule)."""
    if block.type == TEXT:
        return not block.text.strip() or is_reminder(block.text)
    if block.type == THINKING:
        return not block.text.strip()
    return False


def _blocks(content: Any) -> list[Block]:
    if content is None:
        return []
    if isinstance(content, str):
        return [Block(TEXT, text=content)] if content else []
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return [Block(TEXT, text=_as_text(content))]
    blocks: list[Block] = []
    for item in content:
        blocks.extend(_block(item))
    return blocks


def _block(item: Any) -> list[Block]:
    if item is None:
        return []
    if not isinstance(item, dict):
        return [Block(TEXT, text=_as_text(item))]
    kind = item.get("type")
    if kind == "text":
        return [Block(TEXT, text=_as_text(item.get("text")))]
    if kind == "thinking":
        return [Block(THINKING, text=_as_text(item.get("thinking")))]
    if kind == "redacted_thinking":
        return [Block(THINKING, name="redacted_thinking")]
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        return [
            Block(
                TOOL_CALL,
                name=text_of(item.get("name")),
                call_id=text_of(item.get("id")),
                arguments=item.get("input"),
            )
        ]
    if kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
        inner = item.get("content")
        result = Block(
            TOOL_RESULT,
            call_id=text_of(item.get("tool_use_id")),
            text=_flatten(inner),
            is_error=item.get("is_error") is True,
        )
        # Blocks do not nest: images a tool returned follow its result, with its call id.
        images = [b for b in _blocks(inner if isinstance(inner, list) else None) if b.type == IMAGE]
        for image in images:
            image.call_id = result.call_id
        return [result, *images]
    if kind == "image":
        return [_image(item)]
    if kind == "document":
        return [_document(item)]
    return [Block(TEXT, name=text_of(kind), text=_as_text(item.get("text")) or _as_text(item))]


def _image(item: dict) -> Block:
    source = _dict(item.get("source"))
    if source.get("type") == "url":
        return Block(IMAGE, text=text_of(source.get("url")), mime_type=text_of(source.get("media_type")))
    return Block(IMAGE, mime_type=text_of(source.get("media_type")), data=text_of(source.get("data")))


def _document(item: dict) -> Block:
    source = _dict(item.get("source"))
    block = Block(ATTACHMENT, name=text_of(item.get("title")), mime_type=text_of(source.get("media_type")))
    if source.get("type") == "text":
        block.text = text_of(source.get("data"))
    else:
        block.data = text_of(source.get("data"))
    return block


def _flatten(content: Any) -> str:
    """A tool result's content as text: a string, or the text parts of a list."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return _as_text(content)
    parts = []
    for item in content:
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("text"), str):
            parts.append(item["text"])
    return "\n".join(parts)


def _summary(obj: dict, line: int) -> Entry:
    return Entry(
        id=f"line:{line}",
        parent_id=None,
        kind=SUMMARY,
        timestamp=parse_timestamp(obj.get("timestamp")),
        summary=text_of(obj.get("summary")),
        leaf_id=text_of(obj.get("leafUuid")),
        extra=_scalars(obj, skip=_HANDLED),
    )


def _system(obj: dict, line: int) -> Entry:
    subtype = text_of(obj.get("subtype"))
    # The boundary's parentUuid is null: the chain restarts, logicalParentUuid says where from.
    entry = _base(obj, line, COMPACTION if subtype == "compact_boundary" else SYSTEM_KIND)
    entry.role = SYSTEM
    entry.subtype = subtype
    if subtype == "compact_boundary":
        entry.extra.update(_scalars(_dict(obj.get("compactMetadata"))))
    commands = [text_of(_dict(info).get("command")) for info in _list(obj.get("hookInfos"))]
    if any(commands):
        entry.extra["hook_commands"] = [c for c in commands if c]
    text = _flatten(obj.get("content"))
    if not text:
        errors = _list(obj.get("hookErrors"))
        text = "\n".join(_as_text(e) for e in errors) if errors else _as_text(obj.get("error"))[:_SHORT_TEXT]
    if text:
        entry.blocks = [Block(TEXT, text=text)]
    return entry


def _bookkeeping(obj: dict, line: int, kind: str) -> Entry:
    entry = _base(obj, line, kind)
    text = ""
    if kind.endswith("title"):
        entry.summary = _title(obj)
    elif kind == "progress":
        text = _progress(entry, obj)
    elif kind == "file-history-snapshot":
        snapshot = _dict(obj.get("snapshot"))
        entry.timestamp = entry.timestamp or parse_timestamp(snapshot.get("timestamp"))
        text = ", ".join(str(name) for name in _dict(snapshot.get("trackedFileBackups")))
    elif kind == "queue-operation":
        entry.subtype = text_of(obj.get("operation"))
        text = _flatten(obj.get("content"))
    elif kind == "attachment":
        attachment = _dict(obj.get("attachment"))
        entry.subtype = text_of(attachment.get("type"))
        kept = _scalars(attachment, skip=frozenset({"type"}), limit=200)
        entry.extra.update({k: v for k, v in kept.items() if k not in entry.extra})
        text = _flatten(attachment.get("content"))
    else:
        keys = ("lastPrompt", "agentName", "prUrl", "permissionMode", "mode", "text")
        text = next((v for k in keys if (v := text_of(obj.get(k)))), "")
        text = text or _flatten(obj.get("content"))
    if text:
        entry.blocks = [Block(TEXT, text=text[:_SHORT_TEXT])]
    return entry


def _progress(entry: Entry, obj: dict) -> str:
    data = _dict(obj.get("data"))
    entry.subtype = text_of(data.get("type"))
    small = _scalars(data, limit=200)
    if small:
        entry.extra["data"] = small
    agent_id, call_id = text_of(data.get("agentId")), text_of(obj.get("parentToolUseID"))
    if agent_id and call_id:
        entry.extra["subagent_id"] = agent_id
        entry.extra["subagent_call_id"] = call_id
    hook, command = text_of(data.get("hookName")), text_of(data.get("command"))
    return f"{hook}: {command}" if hook and command else hook or command


def _title(obj: dict) -> str:
    for key, value in obj.items():
        if key.lower().endswith("title") and isinstance(value, str) and value.strip():
            return value
    return text_of(obj.get("summary"))


# subagent links


def subagent_links(entries: Iterable[Entry]) -> dict[str, str]:
    """agentId -> the tool call that started it, from a main session's entries.

    Task/Agent results carry ``toolUseResult.agentId`` and ``agent_progress`` lines
    carry ``data.agentId`` with ``parentToolUseID``; parse_line keeps both as
    extra["subagent_id"] and extra["subagent_call_id"]. The first call wins, so
    resuming an agent later does not move its link.
    """
    links: dict[str, str] = {}
    for entry in entries:
        agent_id, call_id = entry.extra.get("subagent_id"), entry.extra.get("subagent_call_id")
        if isinstance(agent_id, str) and agent_id and isinstance(call_id, str) and call_id:
            links.setdefault(agent_id, call_id)
    return links


# discover


def discover(root: Path) -> Iterator[SessionFile]:
    """Session files under a root: ~/.claude, its projects/, one project folder or loose files."""
    root = Path(root)
    if root.is_file():
        if root.suffix == ".jsonl":
            yield SessionFile(path=root, format=FORMAT, key=root.name, project=root.parent.name)
        return
    base = root / "projects" if (root / "projects").is_dir() else root
    # Keys are paths below the root, as text: Path objects cost a re-scan more to
    # sort and to take apart than the rest of discovery together.
    keyed = []
    for folder, _dirs, names in os.walk(base):
        prefix = key_prefix(folder, root)
        keyed += [(prefix + name, folder, name) for name in names if name.endswith(".jsonl")]
    indexes: dict[Path, dict[str, dict]] = {}
    for key, folder, name in sorted(keyed):
        yield _describe(Path(folder, name), key, indexes)


def _describe(path: Path, key: str, indexes: dict[Path, dict[str, dict]]) -> SessionFile:
    found = SessionFile(path=path, format=FORMAT, key=key)
    if path.parent.name == "subagents":
        session_dir = path.parent.parent
        found.project = session_dir.parent.name
        found.agent_id = _agent_id(path)
        main = session_dir.parent / f"{session_dir.name}.jsonl"
        found.parent_path = main if main.is_file() else None
        meta = _read_json(path.with_name(f"{path.stem}.meta.json"))
        if isinstance(meta, dict):
            found.extra.update(_scalars(meta))
            found.parent_tool_id = next((v for k in _META_TOOL_ID_KEYS if (v := text_of(meta.get(k)))), "")
        return found
    found.project = path.parent.name
    if path.name.startswith("agent-"):
        # Older versions wrote subagents beside the main file; their lines name its session.
        found.agent_id = _agent_id(path)
        session_id = _first_session_id(path)
        main = path.parent / f"{session_id}.jsonl"
        if session_id and main != path and main.is_file():
            found.parent_path = main
        return found
    if path.parent not in indexes:
        indexes[path.parent] = read_sessions_index(path.parent)
    listed = indexes[path.parent].get(path.stem)
    if listed:
        found.title = text_of(listed.get("customTitle")) or text_of(listed.get("summary"))
        found.extra["sessions_index"] = _scalars(listed)
    return found


def _agent_id(path: Path) -> str:
    return path.stem.removeprefix("agent-")


def _first_session_id(path: Path, lines: int = 20) -> str:
    try:
        with open_regular(path) as handle:
            for raw in islice(handle, lines):
                try:
                    obj = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    continue
                session_id = text_of(obj.get("sessionId")) if isinstance(obj, dict) else ""
                # The id becomes a file name: refuse anything that is not a plain name.
                if session_id and Path(session_id).name == session_id and not session_id.startswith("."):
                    return session_id
    except OSError:
        return ""
    return ""


def read_sessions_index(project_dir: Path) -> dict[str, dict]:
    """sessionId -> its entry in the project's sessions-index.json; {} when absent or malformed.

    Shape: {"version": 1, "originalPath": "/path", "entries": [{"sessionId", "fullPath",
    "firstPrompt", "summary", "messageCount", "created", "modified", "gitBranch",
    "projectPath", "isSidechain", ...}]}.
    """
    data = _read_json(Path(project_dir) / "sessions-index.json")
    entries = data.get("entries") if isinstance(data, dict) else None
    if isinstance(entries, dict):
        return {k: v for k, v in entries.items() if isinstance(v, dict)}
    if not isinstance(entries, list):
        return {}
    listed = {}
    for item in entries:
        if isinstance(item, dict) and (session_id := text_of(item.get("sessionId"))):
            listed[session_id] = item
    return listed


# looks_like


def looks_like(path: Path, first: dict | None) -> bool:
    """A Claude Code projects layout (for a folder) or a Claude Code first line (for a file)."""
    path = Path(path)
    if path.is_dir():
        return _folder_looks_like(path)
    return _object_looks_like(first)


def _object_looks_like(obj: Any) -> bool:
    if not isinstance(obj, dict) or obj.get("type") == "session":
        return False
    if any(key in obj for key in _FOREIGN_KEYS):
        return False
    if any(key in obj for key in _CLAUDE_KEYS):
        return True
    kind = obj.get("type")
    if kind in ("user", "assistant"):
        return isinstance(obj.get("message"), dict)
    if kind == "file-history-snapshot":
        return "snapshot" in obj or "messageId" in obj
    if kind == "queue-operation":
        return "operation" in obj
    if kind == "progress":
        return "data" in obj
    if kind == "summary":
        return isinstance(obj.get("summary"), str)
    return False


def _folder_looks_like(path: Path) -> bool:
    projects = path / "projects"
    if projects.is_dir():
        samples = _sample_files(projects, ("*.jsonl", "*/*.jsonl"))
        # An empty projects folder is a fresh install: still ours.
        return not samples or any(_object_looks_like(first_object(f)) for f in samples)
    samples = _sample_files(path, ("*.jsonl", "*/*.jsonl", "*/projects/*/*.jsonl"))
    return any(_object_looks_like(first_object(f)) for f in samples)


def _sample_files(base: Path, patterns: tuple[str, ...], limit: int = 50) -> list[Path]:
    files: list[Path] = []
    for pattern in patterns:
        files += sorted(p for p in base.glob(pattern) if p.is_file())
        if len(files) >= limit:
            break
    return files[:limit]


def _read_json(path: Path) -> Any:
    try:
        return orjson.loads(read_regular(path))
    except (OSError, orjson.JSONDecodeError):
        return None


# small helpers


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return written(value)


def _scalars(obj: dict, skip: frozenset[str] = frozenset(), limit: int = 500) -> dict[str, Any]:
    """The object's short scalar fields, as written; long strings, lists and objects left out."""
    kept: dict[str, Any] = {}
    for key, value in obj.items():
        if key in skip:
            continue
        if isinstance(value, str):
            if value and len(value) <= limit:
                kept[key] = value
        elif isinstance(value, (bool, int, float)):
            kept[key] = value
    return kept


THIS_FORMAT = Format(
    FORMAT,
    "Claude Code",
    "marks/claude_code.svg",  # a shell prompt
    makes_projects=True,
    renamed_tools=RENAMED_TOOLS,
    subagent_links=subagent_links,
    harness_line=harness_line,
    is_hidden_block=is_hidden_block,
    compaction_command=is_compact_command,
    subagent_stats=subagent_stats,
)
