"""OpenAI Codex CLI rollouts: ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl.

    {"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"019a2d7a-...","cwd":"/home/user/project","originator":"codex_cli_rs","cli_version":"0.46.0"}}
    {"timestamp":"2025-10-29T00:59:38.317Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}}

Each line is a RolloutLine of Codex's protocol crate (codex-rs/protocol/src/protocol.rs):
a timestamp and a RolloutItem, tagged "type" with its "payload": session_meta, turn_context
(the turn's cwd and model), response_item (codex-rs/protocol/src/models.rs: message,
reasoning, function_call and function_call_output, custom_tool_call and its output,
local_shell_call, web_search_call, ...), event_msg (token_count and the UI's events, which
repeat the response items) and compacted (a compaction's summary message).

Rollouts written before the envelope (Codex 0.3x and earlier, summer 2025) start with a
bare SessionMeta ({"id","timestamp","instructions","git"}) followed by bare response items
and {"record_type":"state"} lines. Both are read.

No line has an id or a parent: file order is the thread. Token counts come as running
session totals with the last request's figures beside them; a total seen again (Codex
repeats the event when only rate limits change) is the same request, not a new one.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from . import (
    ASSISTANT,
    COMPACTION,
    HEADER,
    IMAGE,
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
    Format,
    SessionFile,
    json_preview,
    keep_small,
    key_prefix,
    listing,
    parse_timestamp,
    text_of,
    usage_counts,
)

FORMAT = "codex"

FILE_NAME = re.compile(r"^rollout-.*\.jsonl$")
ENVELOPE = frozenset({"session_meta", "response_item", "compacted", "turn_context", "event_msg"})
EVENT = "event"  # an event_msg, a state line or a response item with nothing to read
TURN_CONTEXT = "turn_context"
_ROLES = {"user": USER, "assistant": ASSISTANT, "developer": SYSTEM, "system": SYSTEM}
# What Codex itself puts in user messages: context for the model, not typed by a person.
_HARNESS_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<user_shell_command>",
    "<turn_aborted>",
    "# AGENTS.md instructions for ",
)
# "Exit code: 1" (shell) and "Process exited with code 1" (exec_command) head a tool's output.
_EXIT = re.compile(r"^(?:Exit code: |Process exited with code )(-?\d+)\s*$", re.M)
_HEADER_LINES = (
    "Exit code: ",
    "Wall time: ",
    "Total output lines: ",
    "Chunk ID: ",
    "Process exited with code ",
    "Process running with session ID ",
    "Original token count: ",
)
_CWD = re.compile(r"<cwd>([^<\n]+)</cwd>")
_DEPTH = 4  # rollout-*.jsonl sit three folders (YYYY/MM/DD) below ~/.codex/sessions


def parse_line(obj: dict, line: int) -> Entry:
    kind = obj.get("type")
    payload = obj.get("payload")
    if kind in ENVELOPE and "payload" in obj:
        payload = payload if isinstance(payload, dict) else {}
        timestamp = parse_timestamp(obj.get("timestamp"))
        if kind == "response_item":
            entry = _response_item(payload, line)
        elif kind == "event_msg":
            entry = _event(payload, line)
        elif kind == "session_meta":
            entry = _session_meta(payload, line)
        elif kind == "turn_context":
            entry = _turn_context(payload, line)
        else:
            entry = _compacted(payload, line)
        entry.timestamp = entry.timestamp or timestamp
        return entry
    # Before the envelope: a bare SessionMeta, state lines and bare response items.
    if "record_type" in obj and kind is None:
        return Entry(id=f"line:{line}", parent_id=None, kind=EVENT, subtype=text_of(obj.get("record_type")))
    if kind is None and "id" in obj and ("instructions" in obj or "git" in obj or "cwd" in obj):
        return _session_meta(obj, line)
    if isinstance(kind, str):
        return _response_item(obj, line)
    return Entry(id=f"line:{line}", parent_id=None, kind=RAW, raw=obj)


def _session_meta(meta: dict, line: int) -> Entry:
    git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
    source = meta.get("source")
    extra = {
        "session_id": text_of(meta.get("id")),
        "cwd": text_of(meta.get("cwd")),
        "cli_version": text_of(meta.get("cli_version")),
        "originator": text_of(meta.get("originator")),
        "source": source if isinstance(source, str) else keep_small(source, 200),
        "model_provider": text_of(meta.get("model_provider")),
        "git_branch": text_of(git.get("branch")),
        "git_commit": text_of(git.get("commit_hash")),
        "forked_from_id": text_of(meta.get("forked_from_id")),
    }
    return Entry(
        id=f"line:{line}",
        parent_id=None,
        kind=HEADER,
        timestamp=parse_timestamp(meta.get("timestamp")),
        extra={k: v for k, v in extra.items() if v},
    )


def _turn_context(context: dict, line: int) -> Entry:
    extra = {
        "cwd": text_of(context.get("cwd")),
        "approval_policy": text_of(context.get("approval_policy")),
        "effort": text_of(context.get("effort")),
    }
    model = text_of(context.get("model"))
    return Entry(
        id=f"line:{line}",
        parent_id=None,
        kind=TURN_CONTEXT,
        model=model,
        summary=" in ".join(part for part in (model, extra["cwd"]) if part),
        extra={k: v for k, v in extra.items() if v},
    )


def _compacted(compacted: dict, line: int) -> Entry:
    summary = text_of(compacted.get("message"))
    history = compacted.get("replacement_history")
    extra = {"kept_items": len(history)} if isinstance(history, list) else {}
    return Entry(id=f"line:{line}", parent_id=None, kind=COMPACTION, summary=summary, extra=extra)


def _response_item(item: dict, line: int) -> Entry:
    kind = item.get("type")
    entry = Entry(id=f"line:{line}", parent_id=None, kind=MESSAGE, role=ASSISTANT, subtype=text_of(kind))
    if kind == "message":
        written = text_of(item.get("role"))
        entry.role = _ROLES.get(written, written)
        entry.blocks = _content(item.get("content"))
        entry.is_meta = entry.role == SYSTEM or (entry.role == USER and _is_harness(entry.blocks))
        if entry.is_meta and (cwd := _CWD.search(entry.blocks[0].text if entry.blocks else "")):
            entry.extra["cwd"] = cwd.group(1).strip()  # early rollouts name it only here
        entry.subtype = ""
        if phase := text_of(item.get("phase")):
            entry.extra["phase"] = phase
    elif kind == "reasoning":
        entry.blocks = [Block(THINKING, text=_reasoning_text(item))]
    elif kind in ("function_call", "custom_tool_call"):
        # A freeform (custom) tool's input is text: apply_patch's patch.
        arguments = item.get("arguments") if kind == "function_call" else item.get("input")
        entry.blocks = [
            Block(
                TOOL_CALL,
                name=text_of(item.get("name")),
                call_id=text_of(item.get("call_id")),
                arguments=arguments,
            )
        ]
    elif kind == "local_shell_call":
        action = item.get("action")
        entry.blocks = [
            Block(
                TOOL_CALL,
                name="local_shell",
                call_id=text_of(item.get("call_id")) or text_of(item.get("id")),
                arguments=action if isinstance(action, dict) else {},
            )
        ]
    elif kind == "web_search_call":
        action = item.get("action")
        entry.blocks = [
            Block(TOOL_CALL, name="web_search", call_id=text_of(item.get("id")), arguments=action or {})
        ]
    elif kind in ("function_call_output", "custom_tool_call_output"):
        entry.role = TOOL
        entry.blocks, details = _output(item.get("output"), text_of(item.get("call_id")))
        if details:
            entry.extra["details"] = details
    else:  # ghost snapshots, encrypted compaction items and what later versions add
        entry.kind, entry.role = EVENT, ""
        entry.raw = item
    return entry


def _is_harness(blocks: list[Block]) -> bool:
    texts = [b.text.lstrip() for b in blocks if b.type == TEXT and b.text.strip()]
    return bool(texts) and all(text.startswith(_HARNESS_PREFIXES) for text in texts)


def _content(content: Any) -> list[Block]:
    if isinstance(content, str):
        return [Block(TEXT, text=content)] if content else []
    if not isinstance(content, list):
        return []
    blocks = []
    for item in content:
        if isinstance(item, str):
            blocks.append(Block(TEXT, text=item))
        elif not isinstance(item, dict):
            continue
        elif item.get("type") in ("input_image", "image"):
            blocks.append(_image(item.get("image_url")))
        elif isinstance(item.get("text"), str):  # input_text, output_text, refusal-free text
            blocks.append(Block(TEXT, text=item["text"]))
        elif isinstance(item.get("refusal"), str):
            blocks.append(Block(TEXT, text=item["refusal"]))
        else:
            blocks.append(Block(TEXT, text=f"[{text_of(item.get('type'))}] {json_preview(item)}"))
    return blocks


def _image(url: Any) -> Block:
    """An image given as a data: URL keeps its data; any other URL is named as text."""
    url = text_of(url)
    head, _, data = url.partition(",")
    if url.startswith("data:") and head.endswith(";base64"):
        return Block(IMAGE, mime_type=head[len("data:") : -len(";base64")], data=data)
    return Block(TEXT, text=f"[image] {url[:500]}")


def _reasoning_text(item: dict) -> str:
    """The summaries, then the raw reasoning when the model wrote it out; encrypted content is unreadable."""
    parts = []
    for field_name in ("summary", "content"):
        value = item.get(field_name)
        if isinstance(value, list):
            parts += [text_of(part.get("text")) for part in value if isinstance(part, dict)]
    return "\n\n".join(part for part in parts if part.strip())


def _output(output: Any, call_id: str) -> tuple[list[Block], dict]:
    """A tool's output, as Codex wrote it over the versions: text; {"output","metadata"} as JSON
    text (shell before late 2025); {"content","success"}; or a list of content items."""
    details: dict = {}
    is_error = False
    images: list[Block] = []
    if isinstance(output, dict):
        is_error = output.get("success") is False
        text = text_of(output.get("content")) or text_of(output.get("output"))
    elif isinstance(output, list):
        blocks = _content(output)
        text = "\n".join(b.text for b in blocks if b.type == TEXT)
        images = [b for b in blocks if b.type == IMAGE]
    else:
        text = text_of(output)
    if text.startswith('{"output"'):
        try:
            wrapped = orjson.loads(text)
        except orjson.JSONDecodeError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            text = wrapped["output"]
            metadata = wrapped.get("metadata")
            if isinstance(metadata, dict):
                details = {k: v for k, v in metadata.items() if isinstance(v, int | float | str)}
    text = _without_header(text, details)
    result = Block(TOOL_RESULT, text=text, call_id=call_id, is_error=is_error)
    return [result, *images], details


def _without_header(text: str, details: dict) -> str:
    """The output below the header Codex writes for the model ("Exit code: 0", "Wall time: 0.1
    seconds", "Output:"), its exit code and wall time kept in details."""
    end = text.find("\nOutput:\n", 0, 1000)
    if end < 0 or not text.startswith(_HEADER_LINES):
        return text
    header = text[:end].split("\n")
    if not all(line.startswith(_HEADER_LINES) for line in header):
        return text
    for line in header:
        if found := _EXIT.match(line):
            details.setdefault("exit_code", int(found.group(1)))
        elif line.startswith("Wall time: "):
            details["wall_time"] = line[len("Wall time: ") :]
    return text[end + len("\nOutput:\n") :]


def _event(event: dict, line: int) -> Entry:
    """An event_msg: hidden like the other harness lines, but its token counts and errors count."""
    kind = text_of(event.get("type"))
    entry = Entry(id=f"line:{line}", parent_id=None, kind=EVENT, subtype=kind)
    if kind == "token_count":
        info = event.get("info")
        if isinstance(info, dict):
            last = info.get("last_token_usage")
            entry.usage = _usage(last)
            total = info.get("total_token_usage")
            if entry.usage and isinstance(total, dict):
                # The running total names the request: a repeat of it replaces, never adds.
                entry.message_id = "codex-total:" + json_preview(total, 1000)
            if isinstance(info.get("model_context_window"), int):
                entry.extra["model_context_window"] = info["model_context_window"]
    elif kind in ("error", "stream_error"):
        entry.summary = text_of(event.get("message")) or "error"
        entry.extra["error_message"] = entry.summary
    elif kind in ("user_message", "agent_message", "agent_reasoning", "turn_aborted"):
        # The UI's copy of a response item (or why a turn stopped): shown with all entries.
        message = text_of(event.get("message")) or text_of(event.get("text")) or text_of(event.get("reason"))
        entry.summary = message[:500]
    return entry


def _usage(value: Any) -> dict[str, int]:
    """OpenAI's counts (input includes the cached part) as ours (input without it)."""
    counts = usage_counts(
        value, {"input": "input_tokens", "cache_read": "cached_input_tokens", "output": "output_tokens"}
    )
    if "input" in counts and "cache_read" in counts:
        counts["input"] = max(0, counts["input"] - counts["cache_read"])
    return {k: v for k, v in counts.items() if v}


def _files(folder: Path, depth: int) -> Iterator[Path]:
    files, folders = listing(folder)
    yield from (folder / name for name in files if FILE_NAME.match(name))
    if depth > 0:
        for name in folders:
            if not name.startswith("."):
                yield from _files(folder / name, depth - 1)


def discover(root: Path) -> Iterator[SessionFile]:
    """Every rollout-*.jsonl under the root, down to its YYYY/MM/DD folders; keyed by its path."""
    archived = root.name == "archived_sessions"
    for path in _files(root, _DEPTH):
        key = key_prefix(path.parent, root) + path.name[: -len(".jsonl")]
        yield SessionFile(path=path, format=FORMAT, key=key, status="archived" if archived else "active")


def _is_first(first: dict) -> bool:
    if first.get("type") == "session_meta" and isinstance(first.get("payload"), dict):
        return True
    # The bare SessionMeta of early rollouts: an id and its instructions or git, no type.
    return (
        "type" not in first
        and isinstance(first.get("id"), str)
        and isinstance(first.get("timestamp"), str)
        and ("instructions" in first or "git" in first)
    )


def looks_like(path: Path, first: dict | None) -> bool:
    if path.is_dir():
        return next(_files(path, _DEPTH), None) is not None
    if isinstance(first, dict) and _is_first(first):
        return True
    return (
        FILE_NAME.match(path.name) is not None and isinstance(first, dict) and first.get("type") in ENVELOPE
    )


THIS_FORMAT = Format(FORMAT, "Codex CLI", "marks/codex.svg", makes_projects=True)  # a prompt in a circle
