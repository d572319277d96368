"""Readers turn agent session files into normalised entries.

Plain Python, no Django: tests and bench/ run them directly. Each format module
(claude_code, go_agent, openclaw, pi, fluux_xmpp, codex, opencode, gemini_cli) provides

    FORMAT: str                                   # the format's name
    discover(root: Path) -> Iterator[SessionFile | Kept] # the session files under a root
    looks_like(path: Path, first: dict | None) -> bool   # format detection
    parse_line(obj: dict, line: int) -> Entry     # one JSON object to one entry

and may provide ``read(path, start_offset, start_line, max_event_bytes)`` when its
files are not JSON Lines: a ReadResult (Fluux's legacy Markdown archives), or an
iterator of entries and problems whose return value is a ReadResult saying where it
ended (OpenClaw's database, streamed). ``SessionReader`` is the one
entry point the index uses (sessionviewer/index/worker.py): it yields a file's
entries and problems from an offset on, one at a time. ``read_session`` reads
them all at once, for tests and tools.

Bad input never raises: a line that is not JSON, not UTF-8, not an object or
cut off mid-write becomes a ``Problem`` (or is left for the next pass when it
has no newline yet), and the file goes on. A file that must not be read at all (not a
regular file, or a link out of the root it was found under: files.py) raises an OSError
before any of it is read, which the index records as a file it could not index.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from .files import check_file, open_regular

FORMATS = ("claude_code", "go_agent", "openclaw", "pi", "fluux_xmpp", "codex", "opencode", "gemini_cli")

# Block types a reader may produce.
TEXT = "text"
THINKING = "thinking"
TOOL_CALL = "tool_call"
TOOL_RESULT = "tool_result"
IMAGE = "image"
ATTACHMENT = "attachment"
REACTION = "reaction"

# Normalised roles.
USER = "user"
ASSISTANT = "assistant"
TOOL = "tool"  # a tool result (Claude Code writes these as user lines)
SYSTEM = "system"

# Entry kinds with a threading meaning. Anything else is kept as it came.
MESSAGE = "message"
COMPACTION = "compaction"  # a compaction boundary or entry, with its summary
SUMMARY = "summary"  # Claude Code's summary line (title, leafUuid)
HEADER = "session"  # a session header line
BRANCH = "branch"  # Go agent fork header, OpenClaw branch_summary
RAW = "raw"  # a line of a type the reader does not know


@dataclass(slots=True)
class Block:
    """One piece of an entry's content."""

    type: str
    text: str = ""  # text, thinking, tool result output, reaction emojis joined
    name: str = ""  # tool name, attachment file name
    call_id: str = ""  # pairs tool_call with tool_result
    arguments: Any = None  # tool call arguments as the file wrote them
    is_error: bool = False
    mime_type: str = ""
    data: str = ""  # base64 image data, as written
    size: str = ""  # attachment size, as written ("926KB")
    target_id: str = ""  # the message a reaction reacts to
    emojis: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """The fields that say something: empty strings, False, None and [] are left out.

        Field by field rather than a loop over the fields (or dataclasses.asdict):
        the indexer calls this for every block, and the loop cost it twice this.
        The string fields hold strings (readers take them through text_of and such).
        """
        data = {"type": self.type}
        if self.text:
            data["text"] = self.text
        if self.name:
            data["name"] = self.name
        if self.call_id:
            data["call_id"] = self.call_id
        arguments = self.arguments  # any JSON the file wrote
        if arguments is not None and arguments != "" and arguments is not False and arguments != []:
            data["arguments"] = arguments
        if self.is_error:
            data["is_error"] = True
        if self.mime_type:
            data["mime_type"] = self.mime_type
        if self.data:
            data["data"] = self.data
        if self.size:
            data["size"] = self.size
        if self.target_id:
            data["target_id"] = self.target_id
        if self.emojis:
            data["emojis"] = self.emojis
        return data


# Block types whose text is all an entry with that one block has to search.
_TEXT_ONLY = frozenset({TEXT, THINKING, TOOL_RESULT, IMAGE, REACTION})


def argument_strings(arguments: Any) -> list[str]:
    """The strings in a tool call's arguments, in order, for search: a command, a path,
    the text an edit put in. Keys are left out (every call of a tool has the same),
    and so are numbers and booleans (timeouts, flags). Arguments written as a JSON string (as
    OpenAI-style APIs send them) are read as JSON first, so that escapes such as
    "\\n" do not glue two words together."""
    if isinstance(arguments, str) and arguments[:1] in ("{", "["):
        with contextlib.suppress(orjson.JSONDecodeError):
            arguments = orjson.loads(arguments)
    found: list[str] = []
    pending = [arguments]
    while pending:  # depth first, in the order written, without recursion
        value = pending.pop()
        if isinstance(value, str):
            if value.strip():
                found.append(value)
        elif isinstance(value, dict):
            pending.extend(reversed(list(value.values())))
        elif isinstance(value, list):
            pending.extend(reversed(value))
    return found


@dataclass(slots=True)
class Entry:
    """One line of a session file, normalised across formats."""

    id: str  # the id as the file wrote it, else "line:<n>"
    parent_id: str | None
    kind: str
    role: str = ""
    timestamp: datetime | None = None
    blocks: list[Block] = field(default_factory=list)
    line: int = 0  # 1-based line number in the file
    offset: int = 0  # byte offset of the line's start
    sender: str = ""
    model: str = ""
    usage: dict[str, int] = field(default_factory=dict)  # input, output, cache_read, cache_write
    message_id: str = ""  # lines of one streamed reply share it (Claude Code message.id)
    subtype: str = ""  # system subtypes, original type of raw lines, custom types
    is_sidechain: bool = False
    is_meta: bool = False  # written by the harness, not typed by a person
    logical_parent_id: str = ""  # compaction boundary: where the chain continues
    first_kept_id: str = ""  # compaction: first entry not summarised
    summary: str = ""  # compaction and summary text, branch summaries, titles
    leaf_id: str = ""  # summary line's leafUuid
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific fields worth showing
    raw: dict | None = None  # the whole object, for kinds the reader does not know

    @property
    def text(self) -> str:
        """The entry's searchable text: text, thinking and tool output, each block's in
        order; then what the blocks only name (tool calls' names and the strings in
        their arguments: commands, paths, edits; attachments' file names); then the
        summary.

        The blocks' own texts come first, in order: the index keeps them only here
        and cuts them back out by length (index/rows.py, stored_blocks).
        """
        blocks = self.blocks
        if len(blocks) == 1 and blocks[0].type in _TEXT_ONLY and not self.summary:
            return blocks[0].text  # most entries: the indexer asks for every one
        parts = [b.text for b in blocks if b.text]
        for block in blocks:
            if block.type == TOOL_CALL:
                if block.name:
                    parts.append(block.name)
                parts += argument_strings(block.arguments)
            elif block.type == ATTACHMENT and block.name:
                parts.append(block.name)
        if self.summary:
            parts.append(self.summary)
        return "\n".join(parts)

    @property
    def is_conversational(self) -> bool:
        """A message a person or the model wrote, or a tool result."""
        return self.kind == MESSAGE and self.role in (USER, ASSISTANT, TOOL)

    @property
    def is_prompt(self) -> bool:
        """Typed by the user: what a rewind or an edit branches on."""
        return (
            self.kind == MESSAGE
            and self.role == USER
            and not self.is_meta
            and not any(b.type == TOOL_RESULT for b in self.blocks)
        )

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "kind": self.kind,
            "role": self.role,
            "timestamp": self.timestamp.isoformat() if self.timestamp else None,
            "text": self.text,
            "blocks": [b.to_dict() for b in self.blocks],
            "line": self.line,
            "sender": self.sender,
            "model": self.model,
            "usage": self.usage,
            "subtype": self.subtype,
            "is_sidechain": self.is_sidechain,
            "is_meta": self.is_meta,
            "summary": self.summary,
            # What this format's reader read beyond the common fields (Go agent's provider,
            # stop_reason, tokens_before, a tool result's details, a branch's
            # parent_session_path, ...), under their own names: none collides with the above.
            "extra": self.extra,
            "raw": self.raw if self.kind == RAW else None,  # an unknown entry's whole line
        }


@dataclass(slots=True)
class Problem:
    """A line the reader could not use, with where it is and why."""

    path: str
    line: int
    offset: int
    message: str
    text: str = ""  # the start of the offending line, for the page

    def to_dict(self) -> dict:
        return {"line": self.line, "offset": self.offset, "message": self.message, "text": self.text}


@dataclass(slots=True)
class SessionFile:
    """A session transcript found under a root, with what its location says about it."""

    path: Path
    format: str
    key: str  # stable within the root: relative path, OpenClaw session key, ...
    project: str = ""  # Claude Code project folder name (the real path comes from cwd)
    jid: str = ""
    agent: str = ""
    channel: str = ""
    account: str = ""
    peer_kind: str = ""
    peer_id: str = ""
    title: str = ""
    status: str = "active"  # active, archived, reset, deleted
    parent_path: Path | None = None  # subagents: the main session file
    parent_tool_id: str = ""  # subagents: the tool call that started them, when known
    agent_id: str = ""  # subagents: agent-<id>
    parent_kind: str = "subagent"  # what it is to the session at parent_path: subagent, fork, continuation
    extra: dict[str, Any] = field(default_factory=dict)
    # A session that is not a file of its own (one of a database's): what stands for its
    # file's size, mtime and inode, which the index compares to tell that it changed, and
    # what must not change for it to be read on from read_offset (a rewrite's generation).
    stamp: Stamp | None = None
    identity: str = ""


class Stamp(NamedTuple):
    """A session's change marks, under os.stat_result's names (SessionFile.stamp)."""

    st_size: int  # where its reading can go up to: for a database's session, its last seq
    st_mtime_ns: int
    st_ino: int


@dataclass(slots=True)
class Kept:
    """What discovery yields for a source it could not look inside this time (a database
    locked or being migrated): the sessions indexed under key_prefix stay as they are,
    and the next pass looks again."""

    key_prefix: str
    reason: str


class SourceBusy(OSError):
    """A source locked or changing under the reader: read it again next pass, no error."""


@dataclass(slots=True)
class ReadResult:
    """What a read produced, and where the next read must start."""

    entries: list[Entry]
    problems: list[Problem]
    end_offset: int  # byte after the last complete line read
    end_line: int  # number of the last complete line read
    identity: str | None = None  # what stands for the head's hash (SessionFile.identity), if not a file


def parse_timestamp(value: Any) -> datetime | None:
    """ISO 8601 strings (Z, offsets, nanoseconds) and epoch seconds or milliseconds; None
    for anything else, and for a moment outside EARLIEST..LATEST."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        if isinstance(value, str):
            # Python 3.11 reads Z, offsets and any number of fractional digits itself.
            parsed = datetime.fromisoformat(value.strip())
            parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
        elif isinstance(value, (int, float)):
            seconds = value / 1000 if value > 1e11 else value
            parsed = datetime.fromtimestamp(seconds, tz=UTC)
        else:
            return None
    except (ValueError, OverflowError, OSError):
        return None
    return parsed if EARLIEST < parsed < LATEST else None


# A moment no agent wrote: Go's zero time (0001-01-01) and the epoch's first second mean
# "not set", and past 9998 a page's local time, a month's end or a year's bucket would
# leave what a datetime holds (a 500 on Activity, the list and the session).
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def format_module(name: str):
    if name not in FORMATS:
        raise ValueError(f"unknown format {name!r}; expected one of {', '.join(FORMATS)}")
    return importlib.import_module(f"{__name__}.{name}")


def is_blank_block(block: Block) -> bool:
    """A block with nothing to show: text or thinking that is only whitespace."""
    return block.type in (TEXT, THINKING) and not block.text.strip()


@dataclass(frozen=True)
class Format:
    """One session format as the rest of the app knows it, declared by the format's module
    (THIS_FORMAT): what the pages call it and its mark, and the rules that differ by format.
    Code outside readers/ asks format_of(key) for these, and never imports a format's module.
    """

    key: str
    name: str  # what the pages call it
    mark: str  # its mark: an image under static/, never inline SVG (a page holds none)
    # A session's working directory is its project: its project page, the list's facet.
    makes_projects: bool = False
    # Tools renamed since: an old name -> today's (Claude Code's Task is its Agent now).
    renamed_tools: Mapping[str, str] = field(default_factory=dict)
    # The text of a prompt that titles a session, where the format's prompts carry more than
    # what the person wrote (a gateway's envelope); None: the entry's text.
    prompt_text: Callable[[Entry], str] | None = None
    # Whether a line's model is one that answered (a header may name others); None: any.
    model_answered: Callable[[Entry], bool] | None = None
    # The subagents some entries start, by the id of the call that started each.
    subagent_links: Callable[[list[Entry]], dict[str, str]] | None = None
    # Whether a sender is a member of a room: the session is then a group chat.
    room_sender: Callable[[str], bool] | None = None
    # Whether a chat's address is a room's, by the address alone.
    room_address: Callable[[str], bool] | None = None
    # What a user line the harness wrote is ({"kind": one of HARNESS_KINDS, "text", ...}): a
    # command, its output, an interruption, a caveat; None for what a person typed. The index
    # keeps its kind (index/rows.py, text_facts); the page shows it for what it is.
    harness_line: Callable[[Entry], dict | None] | None = None
    # A block the page leaves out until asked: by default text or thinking that is blank.
    is_hidden_block: Callable[[Block], bool] = is_blank_block
    # Whether a user line is the command that asked for the compaction just before it.
    compaction_command: Callable[[Entry], bool] | None = None
    # What a subagent's result says it spent (tokens, tool uses, duration_ms), from the
    # extra of the entry holding the result: the agent tool's view shows it.
    subagent_stats: Callable[[dict], dict[str, int]] | None = None


# The kinds of harness line a format's harness_line may say (index/rows.py keeps their place).
HARNESS_KINDS = ("command", "interrupt", "caveat", "output", "meta")


def format_of(key: str) -> Format:
    """The format of this key (one of FORMATS), as its module declares it."""
    return format_module(key).THIS_FORMAT


def format_name(key: str) -> str:
    """The name a person knows the format by; a key this app does not know, as it is."""
    return format_of(key).name if key in FORMATS else key


@dataclass(slots=True)
class FileLines:
    """What a read tool gave of a file: its lines with their numbers in the file, and the text
    the tool wrote after them (a note that more lines follow), if any."""

    numbers: list[int]
    lines: list[str]
    note: str = ""


@dataclass(frozen=True, slots=True)
class EnvelopePart:
    """A piece of the envelope a chat gateway wraps around what a person sent (an entry's
    extra["envelope"]), as a page shows it: a metadata block (its kind, such as "Sender", and
    its JSON, parsed), or the line the gateway wrote before the text (a time stamp)."""

    kind: str
    value: Any = None  # the block's JSON; None for a line, or a block that is not JSON
    text: str = ""  # what value is not: the line, or the block as written
    block: bool = False


def envelope_parts(name: str, envelope: str) -> list[EnvelopePart]:
    """An entry's envelope in the parts a page shows, by the rule of the format (name) that
    wrote it; the whole text as one part when the format has no rule."""
    rule = getattr(format_module(name), "envelope_parts", None) if name in FORMATS else None
    return rule(envelope) if rule else [EnvelopePart("", text=envelope)]


def read_output(name: str, text: str, arguments: Any) -> FileLines | None:
    """A read tool's result as the file's numbered lines, by the rule of the format (name)
    that wrote it; None when the format has no rule or the text is not a file's lines."""
    if name not in FORMATS or not isinstance(text, str):
        return None
    rule = getattr(format_module(name), "read_output", None)
    return rule(text, arguments) if rule else None


def decode_line(path: Path, number: int, offset: int, raw: bytes) -> dict | Problem | None:
    """One line, with or without its newline, to a JSON object, a Problem saying why
    not, or None when blank."""
    try:
        obj = orjson.loads(raw)  # JSON allows the line's own "\n" or "\r\n" after it
    except orjson.JSONDecodeError:
        obj = None
    if type(obj) is dict:
        return obj
    # Not an object: said of the line as written, without its newline (a cut-off
    # line reads "unexpected end of data", not a character on a second line).
    raw = raw.rstrip(b"\r\n")
    if not raw or raw.isspace():  # isspace, not strip: no copy of a long line
        return None
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as bad:
            return Problem(str(path), number, offset, f"not valid UTF-8 at byte {bad.start}", _preview(raw))
        obj = _with_lone_surrogates(text)
        if obj is None:
            return Problem(str(path), number, offset, f"not valid JSON: {error}", _preview(raw))
        if type(obj) is dict:
            return obj
    return Problem(str(path), number, offset, f"not a JSON object but {type(obj).__name__}", _preview(raw))


def _with_lone_surrogates(text: str) -> Any:
    """JSON that orjson refuses only for a lone surrogate escape ("\\ud83c"), read with each
    lone surrogate as U+FFFD; None when it is not that.

    JavaScript writers produce them when they cut a reply with String.slice between
    the two halves of an emoji: legal JSON, and the rest of the reply is worth showing.
    """
    if not _SURROGATE_ESCAPE.search(text):
        return None
    try:
        obj = json.loads(text, parse_constant=_refuse, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    return _replace_surrogates(obj)


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """text with each lone surrogate made U+FFFD: UTF-8, and so the database, cannot hold them."""
    return _SURROGATE.sub("\ufffd", text)


def _refuse(name: str) -> None:
    raise ValueError(f"{name} is not JSON")  # NaN and Infinity: as orjson says


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError("number is infinity when parsed as double")  # as orjson says
    return value


def _replace_surrogates(obj: Any) -> Any:
    """obj with every lone surrogate in its strings (keys too) made U+FFFD, without recursion."""

    def fixed(value: Any) -> Any:
        return without_lone_surrogates(value) if type(value) is str else value

    top = [fixed(obj)]
    pending = [top]
    while pending:
        container = pending.pop()
        if type(container) is dict:
            items = [(fixed(key), fixed(value)) for key, value in container.items()]
            container.clear()
            container.update(items)
            pending += [value for _key, value in items if type(value) in (dict, list)]
        else:
            container[:] = [fixed(value) for value in container]
            pending += [value for value in container if type(value) in (dict, list)]
    return top[0]


def _preview(raw: bytes) -> str:
    return raw[:PREVIEW_BYTES].decode("utf-8", "replace")


PREVIEW_BYTES = 200  # of a bad line, kept with its problem


# A last line with no newline that is not yet a whole JSON object is taken for a
# write in progress while the file is this fresh, and for a cut-off write after.
SETTLE_SECONDS = 60


# The most bytes one event or line is inflated to (a zstd event of OpenClaw's database, a
# line of its archived transcripts): four times the largest real line we know of. The
# index takes SESSIONVIEWER_MAX_EVENT_BYTES; past it, the event is a problem.
MAX_EVENT_BYTES = 256 * 1024 * 1024


class SessionReader:
    """A session file's entries and problems from an offset on, one at a time.

    Iterate it; afterwards ``end_offset``/``end_line`` say where the next read must
    start, and ``pending_tail`` whether an incomplete last line was left unrecorded
    because the file may still be being written.

    A last line without its newline is read when it is a whole JSON object (many
    writers end a file without one); when it is not, it is left for the next pass,
    and recorded as a cut-off write once the file has not changed for
    SETTLE_SECONDS. Either way end_offset stays before it, so a completed line is
    read whole next time.
    """

    def __init__(
        self,
        path: Path,
        fmt: str,
        start_offset: int = 0,
        start_line: int = 0,
        keep_head: int = 0,
        max_event_bytes: int = MAX_EVENT_BYTES,
        root: Path | None = None,
    ):
        # root: where the file was found; a path whose links lead outside it is not read (files.py).
        self.path, self.module, self.root = path, format_module(fmt), root
        self.max_event_bytes = max_event_bytes
        self.start_offset, self.start_line = start_offset, start_line
        self.end_offset, self.end_line = start_offset, start_line
        self.pending_tail = False
        # The file's first keep_head bytes (or all of it, if shorter), when read from
        # its start as JSON Lines; b"" otherwise. Callers that hash a file's head need
        # not open it again.
        self.keep_head, self.head = keep_head, b""
        self.identity: str | None = None  # set by a format's own read(): see ReadResult

    def __iter__(self) -> Iterator[Entry | Problem]:
        custom = getattr(self.module, "read", None)
        if custom is not None:
            check_file(self.path, self.root)  # the generic read below checks as it opens
            result = custom(self.path, self.start_offset, self.start_line, self.max_event_bytes)
            if type(result) is not ReadResult and result is not None:  # a stream: its end comes last
                result = yield from result
            if result is not None:
                self.end_offset, self.end_line = result.end_offset, result.end_line
                self.identity = result.identity
                yield from result.entries
                yield from result.problems
                return
        path, parse_line = self.path, self.module.parse_line
        head, keep_head = [], self.keep_head if self.start_offset == 0 else 0
        # The lines by hand, not through a generator: this loop runs for every line indexed.
        with open_regular(path, self.root) as handle:
            handle.seek(self.start_offset)
            offset, number = self.start_offset, self.start_line
            for raw in handle:
                number, start = number + 1, offset
                offset += len(raw)
                if keep_head:
                    head.append(raw[:keep_head])  # not all of a long first line
                    keep_head = max(0, keep_head - len(raw))
                    if not keep_head:
                        self.head = b"".join(head)
                decoded = decode_line(path, number, start, raw)
                ended = raw[-1:] == b"\n"
                # Only its head is needed now (reader_error): the line's bytes go before the
                # entry is made and handed on, so a long line is not held twice (bench/README.md).
                raw = raw[:PREVIEW_BYTES]
                if not ended and type(decoded) is not dict:  # a last line with no newline
                    if decoded is not None:
                        if _settled(path):
                            decoded.message = (
                                f"cut off: the last line has no newline and is incomplete ({decoded.message})"
                            )
                            yield decoded
                        else:
                            self.pending_tail = True
                    break
                self.end_offset, self.end_line = offset, number
                if decoded is None:
                    continue
                if type(decoded) is Problem:
                    yield decoded
                    continue
                try:
                    entry = parse_line(decoded, number)
                except Exception as error:  # a reader bug must not lose the file
                    problem, entry = reader_error(path, number, start, raw, decoded, error)
                    yield problem
                entry.line, entry.offset = number, start
                yield entry
        if head and not self.head:  # the file is shorter than keep_head
            self.head = b"".join(head)


def reader_error(
    path: Path, number: int, offset: int, raw: bytes, decoded: dict, error: Exception
) -> tuple[Problem, Entry]:
    """A line whose parse_line raised: the problem to show, and the line kept raw."""
    preview = _preview(raw.rstrip(b"\r\n"))
    problem = Problem(str(path), number, offset, f"reader error: {error!r}", preview)
    entry = Entry(
        id=f"line:{number}",
        parent_id=None,
        kind=RAW,
        subtype=text_of(decoded.get("type")) or written(decoded.get("type", ""))[:200],
        raw=decoded,
    )
    return problem, entry


def read_session(
    path: Path,
    fmt: str,
    start_offset: int = 0,
    start_line: int = 0,
    max_event_bytes: int = MAX_EVENT_BYTES,
    root: Path | None = None,
) -> ReadResult:
    """Read a session file (or its new tail) into entries and problems, all at once."""
    reader = SessionReader(path, fmt, start_offset, start_line, max_event_bytes=max_event_bytes, root=root)
    entries: list[Entry] = []
    problems: list[Problem] = []
    for item in reader:
        (entries if isinstance(item, Entry) else problems).append(item)
    return ReadResult(entries, problems, reader.end_offset, reader.end_line)


def _settled(path: Path) -> bool:
    try:
        return time.time() - path.stat().st_mtime > SETTLE_SECONDS
    except OSError:
        return False


def detect_format(path: Path) -> str | None:
    """The format of a root or file, from its layout and its first object."""
    for name in FORMATS:
        if format_module(name).looks_like(path, first_object(path) if path.is_file() else None):
            return name
    return None


# Small helpers the format modules share: files hold any JSON, and a reader must
# take what it finds without raising.

DETAILS_LIMIT = 2000  # tool details can be whole files; a page only needs a glimpse


def text_of(value: Any) -> str:
    """A string field, or "" when the file wrote something else."""
    return value if isinstance(value, str) else ""


def id_of(value: Any) -> str | None:
    """An id as written; "" and non-strings (but whole numbers) mean none."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def content_block(item: Any) -> Block | None:
    """One item of a message's content as the Go agent and pi (so OpenClaw) write it: text,
    thinking, a tool call ("tool_call", or pi's "toolCall"), an image; None for what is no
    block. A type no reader knows yet is shown as text, never dropped."""
    if isinstance(item, str):
        return Block(TEXT, text=item)
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    if kind == "text":
        return Block(TEXT, text=text_of(item.get("text")))
    if kind == "thinking":
        return Block(THINKING, text=text_of(item.get("thinking")) or text_of(item.get("text")))
    if kind in ("tool_call", "toolCall"):
        return Block(
            TOOL_CALL,
            name=text_of(item.get("name")),
            call_id=text_of(item.get("id")),
            arguments=item.get("arguments"),
        )
    if kind == "image":
        mime = text_of(item.get("mime_type")) or text_of(item.get("mimeType"))
        return Block(IMAGE, mime_type=mime, data=text_of(item.get("data")))
    return Block(TEXT, text=text_of(item.get("text")) or f"[{kind}] {json_preview(item)}")


def content_blocks(content: Any) -> list[Block]:
    """A message's content (a string, or a list of content_block items) as blocks."""
    if isinstance(content, str):
        return [Block(TEXT, text=content)] if content else []
    if not isinstance(content, list):
        return []
    return [block for block in map(content_block, content) if block is not None]


def json_preview(value: Any, limit: int = 500) -> str:
    text = written(value)
    return text if len(text) <= limit else text[:limit] + "…"


def written(value: Any) -> str:
    """A value as compact JSON text, whatever it holds (see storable)."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return orjson.dumps(storable(value)[0], default=str).decode()


# Levels of nesting a value keeps in the index. orjson writes 254 at most (and reads
# 1,024), and the pages and the API wrap an entry's values in a few levels of their own.
STORED_DEPTH = 200
# In place of what was nested deeper than STORED_DEPTH.
DEEPER = "… (nested deeper than the index keeps)"


def storable(value: Any) -> tuple[Any, bool]:
    """A copy of value that orjson can write, and whether anything in it was cut: what is
    nested deeper than STORED_DEPTH becomes DEEPER, lone surrogates U+FFFD, and
    integers past 64 bits floats (as orjson reads them)."""
    cut = False

    def copy(value: Any, levels: int) -> Any:
        nonlocal cut
        if isinstance(value, dict | list | tuple):
            if levels == 0:
                cut = True
                return DEEPER
            # Loops, not comprehensions: one frame a level (each comprehension is one more).
            if isinstance(value, dict):
                copied: dict | list = {}
                for key, item in value.items():
                    copied[_storable_scalar(key)] = copy(item, levels - 1)
            else:
                copied = []
                for item in value:
                    copied.append(copy(item, levels - 1))
            return copied
        return _storable_scalar(value)

    return copy(value, STORED_DEPTH), cut


def _storable_scalar(value: Any) -> Any:
    if isinstance(value, str):
        return without_lone_surrogates(value)
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**64:
        try:
            return float(value)
        except OverflowError:
            return str(value)
    return value


def keep_small(value: Any, limit: int = DETAILS_LIMIT) -> Any:
    """Keep a value in extra only while it stays small."""
    if value is None or len(json_preview(value, limit + 1)) <= limit:
        return value
    return {"truncated": json_preview(value, limit)}


def listing(folder: Path) -> tuple[list[str], list[str]]:
    """The names of a folder's files and of its subfolders (symlinks followed), each in
    name order; both empty when the folder cannot be listed. A FIFO, socket or device is
    among the files, so that reading it says why it is not read (files.py); a broken link
    is left out.

    One os.scandir, whose entries mostly know their type without a stat of their own:
    discovery lists every session folder on every pass (bench/: re-scan of 10,000 files).
    """
    files: list[str] = []
    folders: list[str] = []
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                try:
                    if entry.is_file():
                        files.append(entry.name)
                    elif entry.is_dir():
                        folders.append(entry.name)
                    elif not entry.is_symlink() or os.path.exists(entry.path):
                        files.append(entry.name)
                except OSError:  # gone, or unreadable, since the listing: as Path.is_file() says
                    continue
    except OSError:
        return [], []
    return sorted(files), sorted(folders)


def key_prefix(folder: Path | str, root: Path) -> str:
    """What a key of a file in folder starts with: the folder's path below the root,
    with "/" after it, or "" for the root itself. Keys are built as text, one
    relpath per folder rather than Path arithmetic per file (see listing)."""
    below = os.path.relpath(folder, root).replace(os.sep, "/")
    return "" if below == "." else below + "/"


def first_object(path: Path, max_lines: int = 5) -> dict | None:
    """The first JSON object of a file, from its first few non-blank lines; None if none."""
    try:
        with open_regular(path) as handle:
            for raw in islice(handle, max_lines):
                if raw.strip():
                    obj = orjson.loads(raw)
                    return obj if isinstance(obj, dict) else None
    except (OSError, orjson.JSONDecodeError):
        return None
    return None


def usage_counts(value: Any, fields: dict[str, str]) -> dict[str, int]:
    """Token counts under our names (input, output, cache_read, cache_write) from a
    usage object, given our name -> the file's field name; non-numbers are skipped, and
    so are numbers no count reaches (a session's totals must fit the database's 64 bits)."""
    if not isinstance(value, dict):
        return {}
    counts = {}
    for name, field_name in fields.items():
        count = value.get(field_name)
        if isinstance(count, int | float) and not isinstance(count, bool) and -MAX_COUNT < count < MAX_COUNT:
            counts[name] = int(count)
    return counts


MAX_COUNT = 10**12  # tokens in one line: a million times what a model takes
