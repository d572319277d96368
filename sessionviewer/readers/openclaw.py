"""OpenClaw sessions: pi transcripts per agent, and the myclaw flat variant.

    {"type":"session","version":3,"id":"8555a0a4-...","timestamp":"2026-03-08T12:15:35.580Z","cwd":"/home/user"}
    {"type":"message","id":"6f2bd1b4","parentId":"bf1117a5","timestamp":"2026-03-08T13:03:27.042Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}

Real OpenClaw keeps ~/.openclaw/agents/<agent>/sessions/ with a sessions.json
index (session key -> sessionId, sessionFile, model, token counts...) and one
transcript per session, <sessionId>.jsonl, written by the pi agent library.
Pi format version 1 has no id/parentId (file order is the thread); versions 2
and 3 link entries by id/parentId. A reset or deleted session's transcript is
renamed <sessionId>.jsonl.reset.<time> or .jsonl.deleted.<time>, where <time>
is an ISO time with ":" written as "-" (2026-01-01T00-00-00.000Z).

The myclaw variant (~/.myclaw/sessions/) names each transcript after its
session key, ":" replaced by "__", and writes flat lines with no ids:

    {"type":"session","sessionKey":"agent:main:channel:telegram:account:default:peer:direct:user_1","createdAt":1708000000000}
    {"role":"user","content":"Hello","ts":1708000000000}
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any

import orjson

from . import (
    ASSISTANT,
    BRANCH,
    COMPACTION,
    HEADER,
    IMAGE,
    MAX_EVENT_BYTES,
    MESSAGE,
    RAW,
    SYSTEM,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Block,
    Entry,
    EnvelopePart,
    FileLines,
    Format,
    Kept,
    Problem,
    SessionFile,
    SourceBusy,
    Stamp,
    content_blocks,
    first_object,
    id_of,
    json_preview,
    keep_small,
    key_prefix,
    listing,
    openclaw_store,
    parse_timestamp,
    text_of,
    usage_counts,
)
from .files import open_regular, read_regular

FORMAT = "openclaw"

_ROLES = {
    "user": USER,
    "assistant": ASSISTANT,
    "toolResult": TOOL,
    "tool": TOOL,
    "bashExecution": TOOL,
    "system": SYSTEM,
}
_USAGE = {"input": "input", "output": "output", "cache_read": "cacheRead", "cache_write": "cacheWrite"}
# Assistant rows OpenClaw writes itself (gateway notices, delivery copies), not model output.
_TRANSCRIPT_ONLY_MODELS = ("gateway-injected", "delivery-mirror")

# Kinds kept under their own name, each with a short line of text.
SETTING_KINDS = ("model_change", "thinking_level_change", "custom", "custom_message", "label", "session_info")

# OpenClaw's gateway wraps what a person sent through a channel: blocks of metadata
# ("Sender (untrusted metadata):" and a fenced JSON object, one block per kind; "Replied
# message (untrusted, for context):" and such), then a time stamp, then the text itself.
# The model sees it all; the page shows the text, with the sender as a chip.
_ENVELOPE = re.compile(
    r"\A\s*(?P<kind>[A-Z][\w ]{0,40}) \(untrusted(?: metadata|, for context)\):\s*"
    r"```[a-z]*\n(?P<json>.*?)\n```\s*",
    re.S,
)
_STAMP = re.compile(r"\A\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}[^\]\n]{0,20}\]\s*")
# Before the JSON blocks, the gateway wrote one bracket: channel, sender, time stamp.
#   [Telegram Dana id:424242001 Wed 2026-03-04 19:30 UTC] How many orders did we get today?
_BRACKET = re.compile(
    r"\A\[(?P<channel>[A-Z][\w-]{1,30}) (?P<sender>[^\]\n]{0,120}?) ?"
    r"[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}[^\]\n]{0,20}\]\s*"
)
# What a chip shows of the envelope, from its Sender and Conversation info blocks.
_SENDER_FIELDS = {"label": ("label",), "name": ("name", "sender", "username"), "channel": ("channel",)}

# Reply directives the gateway strips before it sends a reply (src/utils/directive-tags.ts).
_DIRECTIVE = re.compile(
    r"(?:^|(?<=\s))\[\[\s*(?:(?P<current>reply_to_current)|reply_to\s*:\s*(?P<id>[^\]\n]+?)"
    r"|(?P<voice>audio_as_voice))\s*\]\][ \t]*",
    re.I,
)

# Turns the gateway or the agent's schedule sends, not a person: the heartbeat (its default
# prompt, or any asking for HEARTBEAT_OK), a new session's start-up, a memory flush before
# compaction, queued system events. They never title a session.
_POLLS = re.compile(
    r"HEARTBEAT_OK|HEARTBEAT\.md|\A\[OpenClaw heartbeat poll\]|\AA new session was started via /new or /reset"
    r"|\APre-compaction memory flush|\ASystem: \[",
)
_SLASH_COMMAND = re.compile(r"\A/[\w:-]+\Z")  # pi writes a command such as "/mode" as a user line
# A notice the gateway writes in the agent's place when a run fails before any reply.
_FAILED_BEFORE_REPLY = "Agent failed before reply"


def prompt_text(entry: Entry) -> str:
    """What a person wrote, without the gateway's metadata blocks and time stamp: the text
    that titles a session; "" for a turn no person wrote (a heartbeat, a system poll, a bare
    slash command). A message that is nothing but the envelope keeps its whole text."""
    text = entry.text
    stripped, _envelope = split_envelope(text)
    stripped = _STAMP.sub("", stripped, count=1).strip() or text  # a time stamp alone, too
    if _POLLS.search(stripped) or _SLASH_COMMAND.match(stripped):
        return ""
    return stripped


def split_envelope(text: str) -> tuple[str, str]:
    """(the text a person wrote, the gateway's envelope before it: "" when there is none)."""
    stripped = text
    while found := _ENVELOPE.match(stripped):
        stripped = stripped[found.end() :]
    if stripped is not text:
        stripped = _STAMP.sub("", stripped, count=1)
    elif found := _BRACKET.match(text):
        stripped = text[found.end() :]
    return stripped, text[: len(text) - len(stripped)]


def envelope_parts(envelope: str) -> list[EnvelopePart]:
    """The envelope split_envelope took off a message, as the page shows it behind the sender
    chip: each metadata block by its kind with its JSON (the fences the model reads are not
    shown), then the gateway's time stamp, or its bracket line as written."""
    parts = []
    rest = envelope
    while found := _ENVELOPE.match(rest):
        rest = rest[found.end() :]
        try:
            parts.append(EnvelopePart(found["kind"], orjson.loads(found["json"]), block=True))
        except orjson.JSONDecodeError:
            parts.append(EnvelopePart(found["kind"], text=found["json"], block=True))
    if stamp := _STAMP.match(rest):
        parts.append(EnvelopePart("Sent", text=stamp[0].strip()[1:-1]))
    elif rest.strip():
        parts.append(EnvelopePart("", text=rest.strip()))
    return parts


def _sender(envelope: str) -> dict:
    """The sender chip's label, name and channel, from the envelope's JSON blocks; the
    Sender block's label and name come before Conversation info's."""
    blocks = {}
    while found := _ENVELOPE.match(envelope):
        envelope = envelope[found.end() :]
        try:
            value = orjson.loads(found["json"])
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            blocks[found["kind"]] = value
    if not blocks and (bracket := _BRACKET.match(envelope)):
        return _compact({"label": bracket["sender"].strip(), "channel": bracket["channel"].lower()})
    chip = {}
    for field, names in _SENDER_FIELDS.items():
        for block in (blocks.get("Sender", {}), blocks.get("Conversation info", {})):
            value = next((text_of(block.get(n)) for n in names if text_of(block.get(n))), "")
            if value:
                chip[field] = value
                break
    return chip


def _gateway_user_text(entry: Entry) -> None:
    """A user message the gateway wrapped: its envelope leaves the text for a chip."""
    first = next((b for b in entry.blocks if b.type == TEXT), None)
    if first is None or ("(untrusted" not in first.text and not first.text.startswith("[")):
        return
    stripped, envelope = split_envelope(first.text)
    if not envelope:
        return
    first.text = stripped.strip()
    entry.extra["envelope"] = envelope.strip()
    entry.extra["sender"] = _sender(envelope) or {"label": "gateway"}


def _reply_directives(entry: Entry) -> None:
    """Directives the gateway strips before sending: left out of the text, kept as what
    the reply answered."""
    for block in entry.blocks:
        if block.type != TEXT or "[[" not in block.text:
            continue
        for found in _DIRECTIVE.finditer(block.text):
            if found["current"]:
                entry.extra.setdefault("reply_to", "current")
            elif found["id"]:
                entry.extra["reply_to"] = found["id"].strip()
            else:
                entry.extra["audio_as_voice"] = True
        block.text = _DIRECTIVE.sub("", block.text).strip()


_RETIRED = re.compile(r"^(?P<stem>.+)\.jsonl\.(?P<status>reset|deleted)\.(?P<time>.+)$")
# Not transcripts of their own: pre-compaction copies and runtime traces.
_CHECKPOINT = re.compile(
    r"\.checkpoint\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.jsonl$", re.I
)
_COMPRESSED = (".zst", ".gz")
_PEER_KINDS = ("direct", "dm", "group", "channel")
_KEY_LABELS = ("channel", "account", "peer")
_SCOPES = ("cron", "subagent", "acp")
_LOOSE_SAMPLE = 20

# sessions.json fields worth keeping on the session, under their own names.
_INDEX_FIELDS = (
    "sessionId",
    "sessionFile",
    "updatedAt",
    "sessionStartedAt",
    "chatType",
    "model",
    "modelProvider",
    "totalTokens",
    "inputTokens",
    "outputTokens",
    "cacheRead",
    "cacheWrite",
    "contextTokens",
    "estimatedCostUsd",
    "compactionCount",
    "thinkingLevel",
    "channel",
    "lastChannel",
    "lastTo",
    "lastAccountId",
    "groupId",
    "subject",
    "displayName",
    "label",
    "spawnedBy",
    "parentSessionKey",
    "spawnDepth",
    "archivedAt",
)


# sessions.json fields of one session, not of the conversation its key names: a reset or
# deleted transcript that its key's entry now describes (the live session's, written
# since) must not take them.
_PER_SESSION_FIELDS = frozenset(_INDEX_FIELDS) - {
    # What names the conversation, which a retired transcript shares with the live one.
    "chatType",
    "channel",
    "groupId",
    "subject",
    "displayName",
    "label",
    "spawnedBy",
    "parentSessionKey",
    "spawnDepth",
} | {"status"}


def _retired_listing(listed: tuple[str, dict] | None, stem: str) -> tuple[str, dict] | None:
    """A retired transcript's sessions.json entry: whole when it still names this session
    (its id is the file's stem), else only what names the conversation (key, label, chat)."""
    if listed is None or text_of(listed[1].get("sessionId")) == stem:
        return listed
    key, meta = listed
    return key, {name: value for name, value in meta.items() if name not in _PER_SESSION_FIELDS}


def _compact(values: dict) -> dict:
    return {k: v for k, v in values.items() if v not in ("", None)}


# Session keys


def parse_session_key(key: Any) -> dict[str, str]:
    """The routing parts of a session key; parts that do not parse stay "".

    myclaw labels each part: agent:main:channel:telegram:account:default:peer:direct:user_1.
    OpenClaw writes them by position: agent:main:main, agent:main:direct:<peer>,
    agent:main:<channel>[:<account>]:<direct|group|channel>:<peer>, with an
    optional :thread:<id> tail, and agent:main:cron:..., subagent:..., acp:... scopes.
    """
    result = {"agent": "", "channel": "", "account": "", "peer_kind": "", "peer_id": ""}
    if not isinstance(key, str):
        return result
    text = key.strip()
    base, marker, thread = text.rpartition(":thread:")
    if marker and base:
        text, result["thread"] = base, thread
    parts = [p for p in text.split(":") if p]
    rest = parts
    if len(parts) >= 2 and parts[0].lower() == "agent":
        result["agent"], rest = parts[1], parts[2:]
    if rest and rest[0] in _KEY_LABELS:
        _parse_labelled(rest, result)
    elif rest and rest[0] in _SCOPES:
        result["scope"] = rest[0]
    else:
        _parse_positional(rest, result)
    return result


def _parse_labelled(rest: list[str], result: dict[str, str]) -> None:
    index = 0
    while index + 1 < len(rest):
        label = rest[index]
        if label == "peer":
            result["peer_kind"], result["peer_id"] = rest[index + 1], ":".join(rest[index + 2 :])
            return
        if label not in ("channel", "account"):
            return
        result[label] = rest[index + 1]
        index += 2


def _parse_positional(rest: list[str], result: dict[str, str]) -> None:
    kinds = [i for i, part in enumerate(rest[:3]) if part in _PEER_KINDS]
    if kinds:
        at = kinds[0]
        result["peer_kind"], result["peer_id"] = rest[at], ":".join(rest[at + 1 :])
        if at >= 1:
            result["channel"] = rest[0]
        if at == 2:
            result["account"] = rest[1]
    elif len(rest) == 1 and result["agent"]:
        result["main_key"] = rest[0]


# Lines


def _tool_result(content: Any, call_id: str, name: str, is_error: bool, details: Any = None) -> list[Block]:
    """One tool_result block with the flattened text; images the tool returned follow it."""
    parts = content_blocks(content)
    text = "\n".join(b.text for b in parts if b.type == TEXT and b.text)
    is_error = is_error or _failed(text, details)
    result = Block(TOOL_RESULT, text=text, name=name, call_id=call_id, is_error=is_error)
    return [result] + [b for b in parts if b.type == IMAGE]


# OpenClaw's tools answer a failure with {"status": "error", ...} (text and details) and
# isError false; a file tool's failure is the system's error code first ("ENOENT: ...").
_ERRNO = re.compile(r"\A\s*(?:Error: )?E(?:NOENT|ACCES|PERM|ISDIR|NOTDIR|EXIST|NOTEMPTY)\b")


def _failed(text: str, details: Any) -> bool:
    if isinstance(details, dict) and details.get("status") == "error":
        return True
    if text.lstrip()[:1] == "{" and '"error"' in text:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict) and value.get("status") == "error":
            return True
    return bool(_ERRNO.match(text))


def _bash(message: dict, call_id: str) -> list[Block]:
    """A command the user ran with "!": shown as the call and its output, like a tool's."""
    command = text_of(message.get("command"))
    exit_code = message.get("exitCode")
    failed = message.get("cancelled") is True or (isinstance(exit_code, int) and exit_code != 0)
    return [
        Block(TOOL_CALL, name="bash", call_id=call_id, arguments={"command": command}),
        Block(
            TOOL_RESULT, name="bash", call_id=call_id, text=text_of(message.get("output")), is_error=failed
        ),
    ]


def _assistant_extra(source: dict) -> dict:
    return _compact(
        {
            "provider": text_of(source.get("provider")),
            "api": text_of(source.get("api")),
            "stop_reason": text_of(source.get("stopReason")),
            "error_message": text_of(source.get("errorMessage")),
        }
    )


def _message(obj: dict, line: int) -> Entry:
    message = obj.get("message")
    if not isinstance(message, dict):
        message = {}
    written = text_of(message.get("role"))
    entry = Entry(
        id=id_of(obj.get("id")) or f"line:{line}",
        parent_id=id_of(obj.get("parentId")),
        kind=MESSAGE,
        role=_ROLES.get(written, written),
        timestamp=parse_timestamp(obj.get("timestamp")) or parse_timestamp(message.get("timestamp")),
        model=text_of(message.get("model")),
        usage=usage_counts(message.get("usage"), _USAGE),
        extra=_assistant_extra(message),
    )
    entry.is_meta = entry.extra.get("provider") == "openclaw" and entry.model in _TRANSCRIPT_ONLY_MODELS
    if entry.usage and obj.get("id"):
        # One line per reply: its own id names it, and a fork's copy of it keeps the id.
        entry.message_id = entry.id
    if written == "toolResult":
        entry.blocks = _tool_result(
            message.get("content"),
            text_of(message.get("toolCallId")),
            text_of(message.get("toolName")),
            message.get("isError") is True,
            message.get("details"),
        )
    elif written == "bashExecution":
        entry.subtype = written
        entry.blocks = _bash(message, f"bash:{entry.id}")
        entry.extra |= _compact(
            {
                "exit_code": message.get("exitCode"),
                "cancelled": message.get("cancelled"),
                "truncated": message.get("truncated"),
                "full_output_path": text_of(message.get("fullOutputPath")),
                "exclude_from_context": message.get("excludeFromContext"),
            }
        )
    else:
        entry.blocks = content_blocks(message.get("content"))
        if written == "user":
            _gateway_user_text(entry)
        elif written == "assistant":
            _reply_directives(entry)
            if entry.is_meta and entry.text.lstrip("⚠️ ").startswith(_FAILED_BEFORE_REPLY):
                entry.extra["level"] = "error"  # the gateway's notice of a failed run: shown
        entry.summary = text_of(message.get("summary"))  # branchSummary, compactionSummary roles
        entry.subtype = text_of(message.get("customType"))  # custom (v3) and hookMessage (v2) roles
        if isinstance(message.get("display"), bool):
            entry.extra["display"] = message["display"]
    if message.get("details") is not None:
        entry.extra["details"] = keep_small(message["details"])
    return entry


def _flat(obj: dict, line: int) -> Entry:
    """A myclaw line: role, content and ts, with model details under meta."""
    meta = obj.get("meta")
    if not isinstance(meta, dict):
        meta = {}
    written = text_of(obj.get("role"))
    entry = Entry(
        id=f"line:{line}",
        parent_id=None,
        kind=MESSAGE,
        role=_ROLES.get(written, written),
        timestamp=parse_timestamp(obj.get("ts")) or parse_timestamp(obj.get("timestamp")),
        model=text_of(meta.get("model")),
        usage=usage_counts(meta.get("usage"), _USAGE),
        extra=_assistant_extra(meta),
    )
    call_id = text_of(obj.get("toolCallId"))
    if entry.role == TOOL or call_id:
        entry.role = TOOL
        name = text_of(meta.get("toolName")) or text_of(obj.get("toolName"))
        is_error = meta.get("isError") is True or obj.get("isError") is True
        entry.blocks = _tool_result(obj.get("content"), call_id, name, is_error)
        return entry
    # contentBlocks is the full reply (tool calls included); content is its text.
    blocks = meta.get("contentBlocks")
    entry.blocks = content_blocks(blocks) if isinstance(blocks, list) else []
    if not any(b.type == TEXT and b.text for b in entry.blocks):
        entry.blocks = content_blocks(obj.get("content")) + entry.blocks
    if written == "user":
        _gateway_user_text(entry)
    elif written == "assistant":
        _reply_directives(entry)
    return entry


def model_answered(entry: Entry) -> bool:
    """Whether entry.model is a model the session used: one that answered. A header's or a
    model change's model is only the one asked for, and a request aborted or failed before
    it said anything got no answer."""
    if entry.kind != MESSAGE or entry.role != ASSISTANT:
        return False
    said = any(b.text.strip() or b.type not in (TEXT, THINKING) for b in entry.blocks)
    return said or entry.extra.get("stop_reason") not in ("aborted", "error")


def _header(obj: dict, entry_id: str) -> Entry:
    extra = {
        "session_id": text_of(obj.get("id")),
        "cwd": text_of(obj.get("cwd")),
        "version": obj.get("version"),
        "provider": text_of(obj.get("provider")),
        "model_id": text_of(obj.get("modelId")),
        "thinking_level": text_of(obj.get("thinkingLevel")),
        "parent_session_path": text_of(obj.get("parentSession")),
        "session_key": text_of(obj.get("sessionKey")),
    }
    return Entry(
        id=entry_id,
        parent_id=None,
        kind=HEADER,
        timestamp=parse_timestamp(obj.get("timestamp")) or parse_timestamp(obj.get("createdAt")),
        model=text_of(obj.get("modelId")),
        extra=_compact(extra),
    )


def _setting(kind: str, obj: dict, entry: Entry) -> Entry:
    """Entries that change or annotate the session rather than say something."""
    entry.kind = kind
    text = ""
    if kind == "model_change":
        provider, model = text_of(obj.get("provider")), text_of(obj.get("modelId"))
        entry.model = model
        # A marker: the page shows where the model was switched. The first entry of a tree
        # (parentId null) is the model the session started with, switched from nothing.
        started_with = "parentId" in obj and obj["parentId"] is None
        marker = "" if started_with else "model"
        entry.extra = _compact({"provider": provider, "model_id": model, "marker": marker})
        text = f"model: {provider}/{model}" if provider else f"model: {model}"
    elif kind == "thinking_level_change":
        level = text_of(obj.get("thinkingLevel"))
        entry.extra = _compact({"thinking_level": level})
        text = f"thinking level: {level}"
    elif kind == "custom":
        entry.subtype = text_of(obj.get("customType"))
        entry.extra = _compact({"data": keep_small(obj.get("data"))})
        text = f"{entry.subtype}: {json_preview(obj.get('data'), 200)}"
    elif kind == "custom_message":
        entry.subtype = text_of(obj.get("customType"))
        entry.blocks = content_blocks(obj.get("content"))
        entry.extra = _compact({"display": obj.get("display"), "details": keep_small(obj.get("details"))})
    elif kind == "label":
        label = text_of(obj.get("label"))
        entry.extra = _compact({"target_id": text_of(obj.get("targetId")), "label": label})
        text = f"label: {label}" if label else "label cleared"
    elif kind == "session_info":
        entry.summary = text_of(obj.get("name"))  # the session's name: the indexer titles by it
        entry.extra = _compact({"name": entry.summary})
    if text:
        entry.blocks = [Block(TEXT, text=text)]
    return entry


def parse_line(obj: dict, line: int) -> Entry:
    kind = obj.get("type")
    if kind is None and "role" in obj:
        return _flat(obj, line)
    if kind == "message":  # most lines
        return _message(obj, line)
    entry_id = id_of(obj.get("id")) or f"line:{line}"
    if kind == "session":
        return _header(obj, entry_id)
    entry = Entry(
        id=entry_id,
        parent_id=id_of(obj.get("parentId")),
        kind=RAW,
        timestamp=parse_timestamp(obj.get("timestamp")),
    )
    if kind == "compaction":
        entry.kind = COMPACTION
        entry.summary = text_of(obj.get("summary"))
        entry.first_kept_id = text_of(obj.get("firstKeptEntryId"))
        entry.extra = _compact(
            {
                "tokens_before": obj.get("tokensBefore"),
                "details": keep_small(obj.get("details")),
                "from_hook": obj.get("fromHook"),
            }
        )
    elif kind == "branch_summary":
        entry.kind = BRANCH
        entry.summary = text_of(obj.get("summary"))
        entry.extra = _compact(
            {
                "from_id": text_of(obj.get("fromId")),
                "details": keep_small(obj.get("details")),
                "from_hook": obj.get("fromHook"),
            }
        )
    elif kind in SETTING_KINDS:
        _setting(kind, obj, entry)
    else:
        entry.subtype, entry.raw = text_of(kind), obj
    return entry


# Discovery


def _subdirs(folder: Path) -> list[Path]:
    return [folder / name for name in listing(folder)[1] if not name.startswith(".")]


def _transcript_name(name: str) -> tuple[str, str, str] | None:
    """(session file stem, status, retirement time as written), or None for other files."""
    if name.endswith(".jsonl"):
        if name.endswith(".trajectory.jsonl") or _CHECKPOINT.search(name):
            return None
        return name[: -len(".jsonl")], "active", ""
    match = _RETIRED.match(name)
    if match and not match["time"].endswith(_COMPRESSED):
        return match["stem"], match["status"], match["time"]
    return None


def parse_retired_time(text: str) -> str:
    """The ISO time of a .reset.<time> or .deleted.<time> suffix, "" if it is not a time."""
    if text.isdigit():
        moment = parse_timestamp(int(text))
    else:
        date, sep, clock = text.partition("T")
        moment = parse_timestamp(f"{date}T{clock.replace('-', ':')}" if sep else text)
    return moment.isoformat() if moment else ""


def _folder_agent(folder: Path) -> str:
    """agents/<agent>/sessions/ names its agent."""
    if folder.name == "sessions" and folder.parent.parent.name == "agents":
        return folder.parent.name
    return ""


def _session_dirs(root: Path, depth: int = 0) -> list[tuple[Path, str, bool]]:
    """(folder, agent, trusted): trusted folders are OpenClaw's own, so every transcript counts."""
    agents = root if root.name == "agents" else root / "agents"
    if agents.is_dir() and not (root / "sessions.json").exists():
        found = [
            (child / "sessions", child.name, True)
            for child in _subdirs(agents)
            if (child / "sessions").is_dir()
        ]
        if found:
            return found
    if (root / "sessions.json").is_file() or root.name == "sessions":
        base = root
    elif (root / "sessions").is_dir():
        base = root / "sessions"
    else:
        # A folder of loose transcripts, or of layouts (a copy of several installs).
        found = [(root, "", False)]
        for sub in _subdirs(root):
            found += _session_dirs(sub, depth + 1) if depth < 2 else [(sub, "", False)]
        return found
    # pi itself keeps one subfolder per working directory under sessions/.
    return [(base, _folder_agent(base), True)] + [(sub, "", False) for sub in _subdirs(base)]


def _load_index(folder: Path) -> tuple[dict[str, tuple[str, dict]], str]:
    """sessions.json as transcript file name -> (session key, entry), and why it could not be read."""
    path = folder / "sessions.json"
    if not path.is_file():
        return {}, ""
    try:
        data = orjson.loads(read_regular(path))
    except (OSError, orjson.JSONDecodeError) as error:
        return {}, f"sessions.json unreadable: {error}"
    if not isinstance(data, dict):
        return {}, "sessions.json is not an object"
    by_name: dict[str, tuple[str, dict]] = {}
    for key, meta in sorted(data.items()):
        if not isinstance(meta, dict):
            continue
        names = []
        if session_file := text_of(meta.get("sessionFile")):
            # Absolute paths, possibly Windows ones, name the file in this folder.
            names.append(re.split(r"[\\/]", session_file)[-1])
        if session_id := text_of(meta.get("sessionId")):
            names.append(f"{session_id}.jsonl")
        for name in names:
            by_name.setdefault(name, (key, meta))
    return by_name, ""


def session_file(
    path: Path, key: str, status: str, agent: str, listed: tuple[str, dict] | None
) -> SessionFile:
    session_key, meta = listed or ("", {})
    stem = path.name.split(".jsonl", 1)[0]
    if not session_key and stem.startswith("agent__"):
        session_key = stem.replace("__", ":")  # a myclaw transcript sessions.json does not list
    parts = parse_session_key(session_key)
    origin = meta.get("origin") if isinstance(meta.get("origin"), dict) else {}
    # A label the user set, else what the chat calls itself.
    names = (meta.get("label"), meta.get("subject"), meta.get("displayName"), origin.get("label"))
    title = next((name for name in names if isinstance(name, str) and name), "")
    extra: dict[str, Any] = {
        name: meta[name] for name in _INDEX_FIELDS if isinstance(meta.get(name), str | int | float)
    }
    if isinstance(meta.get("status"), str):
        extra["run_status"] = meta["status"]  # a subagent run's outcome, not the file's status
    extra |= _compact(
        {"session_key": session_key, "thread": parts.get("thread"), "scope": parts.get("scope")}
    )
    return SessionFile(
        path=path,
        format=FORMAT,
        key=key,
        agent=agent or parts["agent"],
        # lastChannel and lastAccountId stay in extra: a main session spans channels.
        channel=parts["channel"] or text_of(meta.get("channel")),
        account=parts["account"],
        peer_kind=parts["peer_kind"] or text_of(meta.get("chatType")),
        peer_id=parts["peer_id"],
        title=title,
        status=status,
        extra=extra,
    )


def discover(root: Path) -> Iterator[SessionFile | Kept]:
    """Every transcript under the root, listed in sessions.json or not, and every session
    of the agents' databases (openclaw_store).

    The key is the transcript's path below the root up to ".jsonl", so a
    transcript renamed on reset or delete keeps its key and only changes status.

    A transcript whose session the agent's database also holds is left out: OpenClaw
    imports its JSONL transcripts into the database and writes on there, so the
    database's copy is the whole session and the file only its start. While a database
    cannot be looked into (locked, being migrated), its agent's sessions stay as indexed.
    """
    in_databases: dict[str, set[str]] = {}  # agent: the session ids its database holds
    for database, agent in openclaw_store.databases(root):
        try:
            contents = openclaw_store.contents(database, root, agent, FORMAT, session_file)
        except SourceBusy as busy:
            below = key_prefix(database.parent.parent, root) if agent and database != root else ""
            yield Kept(below or openclaw_store.key_of(database, root), str(busy))
            in_databases[agent] = _EVERYTHING
            continue
        except OSError as error:  # not a database this reader can read: the list says why
            yield _unreadable(database, root, agent, error)
            continue
        yield from contents.sessions
        in_databases.setdefault(agent, set()).update(contents.session_ids)
    if root.is_file():
        return
    seen: set[str] = set()
    for folder, agent, trusted in _session_dirs(root):
        names = listing(folder)[0]
        if not names:
            continue
        imported = in_databases.get(agent, set()) if agent else set()
        if imported is _EVERYTHING:
            continue  # the agent's database is busy: its Kept covers these too
        index, error = _load_index(folder) if trusted else ({}, "")
        gateway_folder = bool(agent) or (folder / "sessions.json").is_file()
        prefix = key_prefix(folder, root)
        for file_name in names:
            name = _transcript_name(file_name)
            if name is None:
                continue
            path = folder / file_name
            head = _head(path) if not gateway_folder else b""
            first = _first_of(head)
            if not trusted and not looks_like(path, first or first_object(path)):
                continue
            stem, status, retired = name
            if stem in imported:
                continue
            key = prefix + stem
            if key in seen:
                key = prefix + file_name
            seen.add(key)
            listed = index.get(f"{stem}.jsonl")
            if retired:
                listed = _retired_listing(listed, stem)
            found = session_file(path, key, status, agent, listed)
            if not gateway_folder and listed is None and written_by_pi(first, head):
                found.format = PI
            if retired:
                found.extra["retired_at"] = parse_retired_time(retired) or retired
            if error:
                found.extra["sessions_json_error"] = error
            yield found


_EVERYTHING: set[str] = set()  # in_databases' mark for an agent whose database is busy

PI = "pi"  # pi's own sessions: see pi.py
# What only OpenClaw's gateway writes into a transcript: its own assistant rows
# (provider "openclaw"), the envelope of a message from a channel, its model snapshots.
_GATEWAY_MARKS = (b'"provider":"openclaw"', b"(untrusted metadata)", b'"customType":"model-snapshot"')
_HEAD_BYTES = 16 * 1024  # a gateway session shows one of them within its first turn


def _head(path: Path) -> bytes:
    """A transcript's first _HEAD_BYTES, read once for both what discovery asks of it."""
    try:
        with open_regular(path) as handle:
            return handle.read(_HEAD_BYTES)
    except OSError:
        return b""


def _first_of(head: bytes) -> dict | None:
    """The head's first line as a JSON object; None when it is not one or not whole."""
    first, newline, _rest = head.lstrip().partition(b"\n")
    if not newline:
        return None
    try:
        obj = orjson.loads(first)
    except orjson.JSONDecodeError:
        return None
    return obj if isinstance(obj, dict) else None


def written_by_pi(header: dict | None, head: bytes) -> bool:
    """Whether a transcript found outside OpenClaw's folders, of which these are the first
    object and the head, is a session of pi, the coding agent: a pi header (no myclaw
    session key), and nothing of OpenClaw's gateway."""
    if header is None or header.get("type") != "session" or "sessionKey" in header:
        return False
    return not any(mark in head for mark in _GATEWAY_MARKS)


def _unreadable(database: Path, root: Path, agent: str, error: OSError) -> SessionFile:
    """The database itself, as a session of the list that shows why it cannot be read."""
    stat = database.stat()
    return SessionFile(
        path=database,
        format=FORMAT,
        key=openclaw_store.key_of(database, root).rstrip(openclaw_store.SEPARATOR),
        agent=agent,
        title=f"OpenClaw agent database{f' ({agent})' if agent else ''}",
        extra={"database_error": str(error)},
        stamp=Stamp(stat.st_size, stat.st_mtime_ns, stat.st_ino),
    )


def read(
    path: Path, start_offset: int, start_line: int, max_event_bytes: int = MAX_EVENT_BYTES
) -> Iterator[Entry | Problem] | None:
    """A database's session, streamed (openclaw_store); None for a transcript file, read line by line."""
    if ".jsonl" in path.name:
        return None
    return openclaw_store.read(path, start_offset, start_line, parse_line, max_event_bytes)


# Detection


def _is_openclaw_object(first: dict) -> bool:
    if any(k in first for k in ("parentUuid", "parent_id", "msg_id", "jid")):
        return False  # Claude Code, the Go agent, Fluux
    kind = first.get("type")
    if kind == "session":
        version = first.get("version")
        if "sessionKey" in first or (
            isinstance(version, int) and not isinstance(version, bool) and version >= 2
        ):
            return True
        # pi v1 wrote no version; the Go agent writes version 1 and no model.
        return "provider" in first or "modelId" in first or (version is None and "cwd" in first)
    if "parentId" in first or "sessionKey" in first:
        return True
    if "sessionId" in first:
        return False
    if kind == "message":
        return isinstance(first.get("message"), dict)
    return kind is None and "role" in first and "ts" in first


# pi's read tool says where it stopped after the lines it gives: "... (N more lines not
# shown. ...)" until late 2025, then "[Showing lines 1-2000 of 5000. Use offset=2001 to
# continue.]" (a "(50KB limit)" before the period when bytes cut it) or "[12 more lines in
# file. Use offset=31 to continue.]" (packages/coding-agent/src/core/tools/read.ts).
_MORE_LINES = re.compile(
    r"\n*(\.\.\. \(\d+ more lines not shown\. Use offset=\d+ to continue reading\)"
    r"|\[(?:Showing lines \d+-\d+ of \d+(?: \([^)\n]{1,40}\))?|\d+ more lines in file)\. Use offset=\d+ to continue\.\])\s*$"
)
# ... and, for a first line too long to give, only that.
_LINE_TOO_LONG = re.compile(r"\A\[Line \d+ is [^\]\n]{1,80} limit\. Use bash: [^\n]*\]\s*\Z")


def read_output(text: str, arguments: Any = None) -> FileLines:
    """A read result (pi's tool, which OpenClaw runs): the file's lines from the call's offset
    (1-based, 1 without one), and the note that more lines follow, if any."""
    offset = arguments.get("offset") if isinstance(arguments, dict) else None
    first = offset if isinstance(offset, int) and not isinstance(offset, bool) and offset >= 1 else 1
    if _LINE_TOO_LONG.match(text):
        return FileLines([], [], text.strip())
    note = ""
    if found := _MORE_LINES.search(text):
        text, note = text[: found.start()], found.group(1)
    lines = text.removesuffix("\n").split("\n")
    return FileLines(list(range(first, first + len(lines))), lines, note)


def looks_like(path: Path, first: dict | None) -> bool:
    if path.is_file() and first is None and openclaw_store.is_database(path):
        return path.name == openclaw_store.DATABASE_NAME
    if path.is_dir():
        if openclaw_store.databases(path):
            return True
        if (path / "sessions.json").is_file() or (path / "sessions" / "sessions.json").is_file():
            return True
        agents = path if path.name == "agents" else path / "agents"
        if agents.is_dir() and any((child / "sessions").is_dir() for child in _subdirs(agents)):
            return True
        candidates = (
            p
            for folder in [path, *_subdirs(path)]
            for p in sorted(folder.glob("*.jsonl*"))
            if _transcript_name(p.name) and p.is_file()
        )
        return any(
            _is_openclaw_object(obj) for obj in map(first_object, islice(candidates, _LOOSE_SAMPLE)) if obj
        )
    return isinstance(first, dict) and _is_openclaw_object(first)


THIS_FORMAT = Format(
    FORMAT,
    "OpenClaw",
    "marks/openclaw.svg",  # a claw's three scratches
    makes_projects=True,
    prompt_text=prompt_text,
    model_answered=model_answered,
)
