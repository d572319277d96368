"""opencode sessions: split JSON storage (up to 1.1) and one SQLite database (1.2 on).

    storage/message/ses_01.../msg_01....json  {"id":"msg_01...","sessionID":"ses_01...","role":"user","time":{"created":1767225600000},"agent":"build","model":{"providerID":"anthropic","modelID":"claude-sonnet-4-5"}}
    storage/part/msg_01.../prt_01....json     {"id":"prt_01...","sessionID":"ses_01...","messageID":"msg_01...","type":"text","text":"hi"}

Under ~/.local/share/opencode/, opencode 1.1 and before write storage/session/<projectID>/
<sessionID>.json (title, directory, parentID, time), storage/message/<sessionID>/<messageID>.json
(role, time, model and provider, tokens and cost, error) and storage/part/<messageID>/
<partID>.json: text, reasoning, tool (its state: pending, running, completed with its output,
or error), file, patch, step-start and step-finish (a model call's tokens and cost), and
agent, subtask, retry, snapshot and compaction. Since 1.2 the same objects are rows of
opencode.db (opencode_store.py); its first run copies the JSON storage into the database and
leaves the files, so a session in both is read from the database and listed once.

Ids sort by creation time, so a session reads in id order: messages, then each message's
parts. A part is an entry (a tool part two: its call, then its result); a session is read on
from the message where the last read stopped. A reply still being written (the last message,
not completed and not failed) is left for the next pass until it has not changed for
SETTLE_SECONDS, as a line without its newline is. A reply the person stopped ends with an
"aborted" line (harness_line says it is an interruption); one that failed carries its error.

opencode counts a call's input tokens without the cached ones, and its reasoning tokens
beside its output (billed as output, as opencode's own cost does): the usage here is input,
output plus reasoning, cache read and cache write, on each step-finish.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from . import (
    ASSISTANT,
    ATTACHMENT,
    COMPACTION,
    HEADER,
    IMAGE,
    MAX_EVENT_BYTES,
    MESSAGE,
    RAW,
    SETTLE_SECONDS,
    TEXT,
    THINKING,
    TOOL,
    TOOL_CALL,
    TOOL_RESULT,
    USER,
    Block,
    Entry,
    Format,
    Kept,
    Problem,
    ReadResult,
    SessionFile,
    SourceBusy,
    Stamp,
    decode_line,
    keep_small,
    listing,
    parse_timestamp,
    reader_error,
    text_of,
    usage_counts,
)
from . import opencode_store as store
from .files import read_regular

FORMAT = "opencode"
STORAGE = "storage"
STEP = "step"  # step-start and step-finish: a model call's bounds, the finish with its tokens and cost
PATCH = "patch"  # the files a step changed, by their snapshot hash
# Titles opencode gives a session before it has one of its own: the first prompt says more.
_DEFAULT_TITLES = ("New session - ", "Child session - ")
_ABORTED = "MessageAbortedError"
_ROLES = {"user": USER, "assistant": ASSISTANT}


# Discovery


def _storage_of(root: Path) -> Path | None:
    """The JSON storage a root holds: <root>/storage, or the root itself when it is one."""
    for folder in (root / STORAGE, root):
        if (folder / "session").is_dir() and (folder / "message").is_dir():
            return folder
    return None


def discover(root: Path) -> Iterator[SessionFile | Kept]:
    """Every session of the root's database and JSON storage, a session in both from the
    database. While the database cannot be looked into (locked), every session stays as
    indexed: the JSON storage alone may hold less of a session than the database did."""
    found: list[SessionFile] = []
    in_database: set[str] = set()
    database = store.database_of(root)
    if database is not None:
        try:
            contents = store.contents(database, root)
        except SourceBusy as busy:
            yield Kept("", str(busy))
            return
        except OSError as error:  # not a database this reader can read: the list says why
            found.append(_unreadable(database, error))
        else:
            inode = store.inode(database)
            for row in contents.sessions:
                found.append(_database_session(database, row, inode))
                in_database.add(row.id)
    storage = _storage_of(root) if root.is_dir() else None
    if storage is not None:
        found += _storage_sessions(storage, in_database)
    by_id = {s.extra["session_id"]: s.path for s in found if "session_id" in s.extra}
    for session in found:
        parent = session.extra.get("parent_id")
        if parent in by_id:
            session.parent_path, session.parent_kind = by_id[parent], "subagent"
    yield from found


def _session_file(path: Path, key: str, info: dict, stamp: Stamp, identity: str) -> SessionFile:
    title = text_of(info.get("title"))
    extra = {
        "session_id": text_of(info.get("id")),
        "project_id": text_of(info.get("projectID")),
        "parent_id": text_of(info.get("parentID")),
        "version": text_of(info.get("version")),
        "storage": identity.partition(":")[0],
    }
    return SessionFile(
        path=path,
        format=FORMAT,
        key=key,
        title="" if title.startswith(_DEFAULT_TITLES) else title,
        status="archived" if _time(info, "archived") else "active",
        extra={name: value for name, value in extra.items() if value},
        stamp=stamp,
        identity=identity,  # what changes when what was read changes: see _identity
    )


def _database_session(database: Path, row: store.SessionRow, inode: int) -> SessionFile:
    info = {
        "id": row.id,
        "projectID": row.project_id,
        "parentID": row.parent_id,
        "title": row.title,
        "version": row.version,
        "time": {"archived": row.archived},
    }
    last = _object(row.last_message)
    stamp = Stamp(row.messages, row.updated * 1_000_000 + _settled_tail(last, row.updated), inode)
    identity = _identity("database", row.last_message_id, last, row.updated)
    return _session_file(
        store.session_path(database, row.id), f"{row.project_id}/{row.id}", info, stamp, identity
    )


def _storage_sessions(storage: Path, in_database: set[str]) -> Iterator[SessionFile]:
    """The JSON storage's sessions but those the database holds: passed over before their
    files are looked at (after opencode 1.2's first run, the JSON storage is all copies)."""
    projects = listing(storage / "session")[1]
    for project in projects:
        folder = storage / "session" / project
        for name in listing(folder)[0]:
            if not name.endswith(".json"):
                continue
            path = folder / name
            session_id = name.removesuffix(".json")
            if session_id in in_database:
                continue
            try:
                info = _object(read_regular(path))
                stamp, identity = _storage_stamp(storage, session_id, path)
            except OSError:
                continue  # gone since the listing
            info = {**info, "id": session_id, "projectID": project}  # as opencode's migration: the path says
            yield _session_file(path, f"{project}/{session_id}", info, stamp, identity)


def _storage_stamp(storage: Path, session_id: str, path: Path) -> tuple[Stamp, str]:
    """The session's stamp (its message count, the latest change of its files, a part
    rewritten in place changing only its own, and its file's inode) and its identity."""
    session_stat = path.stat()
    latest = session_stat.st_mtime_ns
    names = _message_names(storage, session_id)
    for name in names:
        message_id = name.removesuffix(".json")
        files = [storage / "message" / session_id / name]
        files += [storage / "part" / message_id / part for part in listing(storage / "part" / message_id)[0]]
        for file in files:
            try:
                latest = max(latest, file.stat().st_mtime_ns)
            except OSError:
                continue
    if not names:
        return Stamp(0, latest, session_stat.st_ino), "json"
    try:
        last = _object(read_regular(storage / "message" / session_id / names[-1]))
    except OSError:
        last = {}
    updated = latest // 1_000_000
    stamp = Stamp(len(names), latest + _settled_tail(last, updated), session_stat.st_ino)
    return stamp, _identity("json", names[-1].removesuffix(".json"), last, updated)


def _message_names(storage: Path, session_id: str) -> list[str]:
    return [name for name in listing(storage / "message" / session_id)[0] if name.endswith(".json")]


def _settled_tail(last: dict, updated_ms: int) -> int:
    """1 when the last message is a reply not yet finished that has settled: the stamp changes
    once then, so that the next pass reads the reply it left for later."""
    return int(not _finished(last) and _settled(updated_ms))


def _identity(source: str, last_id: str, last: dict, updated_ms: int) -> str:
    """What the index compares to tell a session read on from one to read again whole: its
    store (a session that moves into the database is read again), and a reply that had
    settled unfinished when it was read (a tool that ran for minutes: once it finishes, or
    the session goes on, the reply is read again whole, never left half read)."""
    return f"{source}:unfinished:{last_id}" if _settled_tail(last, updated_ms) else source


def _unreadable(database: Path, error: OSError) -> SessionFile:
    """The database itself, as a session of the list that shows why it cannot be read."""
    stat = database.stat()
    return SessionFile(
        path=database,
        format=FORMAT,
        key=database.name,
        title="opencode database",
        extra={"database_error": str(error)},
        stamp=Stamp(stat.st_size, stat.st_mtime_ns, stat.st_ino),
    )


# Reading


def read(
    path: Path, start_offset: int, start_line: int, max_event_bytes: int = MAX_EVENT_BYTES
) -> Iterator[Entry | Problem]:
    """A session's entries and problems from its start_offset-th message on, a message at a
    time; what it returns at the end says where the next read starts (ReadResult, lists empty).
    Offsets count messages; lines count entries. A message or part past max_event_bytes is a
    problem, and the read goes on."""
    split = store.split_path(path)
    if split is not None:
        database, session_id = split
        with store.reading(database) as (connection, _tables):
            cursor = connection.execute("SELECT * FROM session WHERE id = ?", (session_id,))
            row = cursor.fetchone()
            if row is None:
                raise FileNotFoundError(f"{path}: the session is gone from the database")
            info = _database_info(dict(zip([d[0] for d in cursor.description], row, strict=True)))
            rows = store.messages(connection, session_id, start_offset)
            return (yield from _read(path, info, rows, start_offset, start_line, "database", max_event_bytes))
    if store.is_database(path):  # the database itself: discovery found it unreadable; say why
        with store.reading(path):
            pass
        raise store.Unreadable(f"{path}: holds no opencode sessions")
    storage = path.parent.parent.parent
    info = {**_object(read_regular(path)), "id": path.stem, "projectID": path.parent.name}
    rows = _storage_messages(storage, path.stem, start_offset)
    return (yield from _read(path, info, rows, start_offset, start_line, "json", max_event_bytes))


def _database_info(row: dict) -> dict:
    """A session row as the session's JSON says it (session/<projectID>/<sessionID>.json)."""
    return {
        "id": row.get("id"),
        "projectID": row.get("project_id"),
        "parentID": row.get("parent_id"),
        "directory": row.get("directory"),
        "title": row.get("title"),
        "version": row.get("version"),
        "time": {"created": row.get("time_created"), "updated": row.get("time_updated")},
    }


def _storage_messages(storage: Path, session_id: str, start: int) -> Iterator[tuple[str, Any, list]]:
    """The JSON storage's messages from the start-th on, as the database gives them: (id,
    data, [(part id, data), ...]), the data as bytes read, or the OSError that stopped it."""
    for name in _message_names(storage, session_id)[start:]:
        message_id = name.removesuffix(".json")
        data = _bytes_or_error(storage / "message" / session_id / name)
        folder = storage / "part" / message_id
        parts = [
            (n.removesuffix(".json"), _bytes_or_error(folder / n))
            for n in listing(folder)[0]
            if n.endswith(".json")
        ]
        yield message_id, data, parts


def _bytes_or_error(path: Path) -> bytes | OSError:
    try:
        return read_regular(path)
    except OSError as error:
        return error


def _read(path: Path, info: dict, rows, start_offset: int, start_line: int, source: str, limit: int):
    line, offset, identity = start_line, start_offset, source
    if start_offset == 0:
        line += 1
        yield _header(info, line)
    pending = next(rows, None)
    while pending is not None:
        following = next(rows, None)
        message_id, data, written = pending
        message, problem = _decoded(path, line + 1, offset, data, limit)
        parts = []
        for part_id, part_data in written:
            part, part_problem = _decoded(path, line + 1, offset, part_data, limit)
            if part_problem:
                part_problem.message = f"part {part_id}: {part_problem.message}"
            parts.append(({**part, "id": part_id} if part else None, part_problem))
        message = {**message, "id": message_id} if message is not None else None
        shown = [part for part, _problem in parts if part]
        if following is None and message is not None and not _finished(message):
            if not _settled(_updated(message, shown)):
                break  # still being written: read when it is done, or has settled
            identity = f"{source}:unfinished:{message_id}"  # see _identity
        if problem:
            yield problem
        entries = []
        for part, part_problem in parts:
            if part_problem:
                yield part_problem
            if part:
                try:
                    entries += part_entries(part, message or {})
                except Exception as error:  # noqa: BLE001 - a reader bug must not lose the session
                    bug, kept = reader_error(path, line + 1, offset, orjson.dumps(part), part, error)
                    yield bug
                    entries.append(kept)
        for entry in entries + message_end(message or {}, shown):
            line += 1
            entry.line, entry.offset = line, offset
            yield entry
        offset += 1
        pending = following
    return ReadResult([], [], offset, line, identity=identity)


def _decoded(path: Path, line: int, offset: int, data: Any, limit: int) -> tuple[dict | None, Problem | None]:
    """A message's or part's JSON as an object, or the problem that says why not (decode_line's
    rules: not JSON, not UTF-8, not an object; a lone surrogate read as U+FFFD)."""
    if isinstance(data, OSError):
        return None, Problem(str(path), line, offset, f"could not be read: {data}")
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > limit:
        return None, Problem(str(path), line, offset, f"{len(raw):,} bytes, past the limit of {limit:,}")
    decoded = decode_line(path, line, offset, raw)
    if decoded is None:
        return None, Problem(str(path), line, offset, "empty")
    return (None, decoded) if type(decoded) is Problem else (decoded, None)


def _object(data: Any) -> dict:
    try:
        obj = orjson.loads(data) if data else {}
    except orjson.JSONDecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


def _time(obj: dict, name: str) -> Any:
    moments = obj.get("time")
    return moments.get(name) if isinstance(moments, dict) else None


def _finished(message: dict) -> bool:
    """A message opencode is done writing: a prompt, or a reply completed or failed."""
    if message.get("role") != "assistant":
        return bool(message)
    return bool(_time(message, "completed") or message.get("error"))


def _settled(updated_ms: Any) -> bool:
    return isinstance(updated_ms, int | float) and time.time() - updated_ms / 1000 > SETTLE_SECONDS


def _updated(message: dict, parts: list[dict]) -> Any:
    """When a message was last written to, as far as its times and its parts' times say (ms)."""
    moments = [_time(message, "created")]
    for part in parts:
        state = part.get("state") if isinstance(part.get("state"), dict) else {}
        moments += [_time(holder, name) for holder in (part, state) for name in ("start", "end", "created")]
    return max((m for m in moments if isinstance(m, int | float)), default=None)


def _header(info: dict, line: int) -> Entry:
    extra = {
        "id": text_of(info.get("id")),
        "cwd": text_of(info.get("directory")),
        "projectID": text_of(info.get("projectID")),
        "parentID": text_of(info.get("parentID")),
        "version": text_of(info.get("version")),
    }
    return Entry(
        id=text_of(info.get("id")) or "session",
        parent_id=None,
        kind=HEADER,
        timestamp=parse_timestamp(_time(info, "created")),
        summary=text_of(info.get("title")),
        extra={name: value for name, value in extra.items() if value},
        line=line,
    )


def part_entries(part: dict, message: dict) -> list[Entry]:
    """The entries of one part of a message: most parts one, a tool part its call and its result."""
    kind = part.get("type")
    part_id = text_of(part.get("id"))
    role = _ROLES.get(text_of(message.get("role")), ASSISTANT)
    entry = Entry(
        id=part_id,
        parent_id=None,
        kind=MESSAGE,
        role=role,
        timestamp=parse_timestamp(_time(part, "start")) or parse_timestamp(_time(message, "created")),
        message_id=text_of(message.get("id")),
        extra=_message_extra(message),
    )
    if role == ASSISTANT:
        entry.model = text_of(message.get("modelID"))
    if kind == "text":
        entry.blocks = [Block(TEXT, text=text_of(part.get("text")))]
        entry.is_meta = bool(part.get("synthetic") or part.get("ignored"))
        if message.get("summary") is True:
            entry.extra["is_compact_summary"] = True
    elif kind == "reasoning":
        entry.role, entry.blocks = ASSISTANT, [Block(THINKING, text=text_of(part.get("text")))]
    elif kind == "tool":
        return _tool(part, entry)
    elif kind == "file":
        entry.blocks = [_file(part)]
    elif kind == "step-start":
        entry.kind, entry.subtype, entry.role = STEP, "start", ""
        entry.summary = "A model call begins"
        entry.extra |= _present({"snapshot": text_of(part.get("snapshot"))})
    elif kind == "step-finish":
        entry.kind, entry.subtype, entry.role = STEP, "finish", ""
        # Each step is a model call of its own: the index counts a message_id's usage once.
        entry.message_id = f"{entry.message_id}:{part_id}"
        _step_finish(entry, part, message)
    elif kind == "patch":
        files = (
            [text_of(f) for f in part.get("files") or [] if text_of(f)]
            if isinstance(part.get("files"), list)
            else []
        )
        entry.kind, entry.role = PATCH, ""
        entry.summary = (
            f"Changed {len(files)} file{'' if len(files) == 1 else 's'}: {', '.join(files)}"
            if files
            else "Changed no files"
        )
        entry.extra |= _present({"hash": text_of(part.get("hash")), "files": files, "marker": True})
    elif kind == "compaction":
        entry.kind, entry.role = COMPACTION, ""
        entry.extra |= {"trigger": "auto" if part.get("auto") else "manual"}
    elif kind == "retry":
        error = part.get("error") if isinstance(part.get("error"), dict) else {}
        entry.kind, entry.role, entry.subtype = "retry", "", f"attempt {part.get('attempt')}"
        entry.summary = _error_text(error) or "The model call is tried again"
        entry.extra["marker"] = True  # shows where: the reply took longer, or failed, for it
        entry.timestamp = parse_timestamp(_time(part, "created")) or entry.timestamp
    elif kind == "agent":
        entry.kind, entry.role = "agent", ""
        entry.summary = f"@{text_of(part.get('name'))}"
    elif kind == "subtask":
        entry.kind, entry.role = "subtask", ""
        entry.summary = text_of(part.get("description")) or text_of(part.get("prompt"))
        entry.extra |= _present({"agent": text_of(part.get("agent")), "prompt": text_of(part.get("prompt"))})
    else:  # snapshot, and what later versions add
        entry.kind, entry.role, entry.subtype, entry.raw = RAW, "", text_of(kind), part
    return [entry]


def _message_extra(message: dict) -> dict:
    """What a message says that every entry of it carries: the provider (priced by it) and agent."""
    return _present(
        {
            "provider": text_of(message.get("providerID")),  # a reply's; a prompt names the one it asks for
            "agent": text_of(message.get("agent")) or text_of(message.get("mode")),
        }
    )


def _present(values: dict) -> dict:
    return {name: value for name, value in values.items() if value not in ("", None, [], {})}


def _tool(part: dict, call: Entry) -> list[Entry]:
    """A tool part: the call with its input, then its result: the output, the error, or what
    became of a call still pending or running when its reply ended."""
    state = part.get("state") if isinstance(part.get("state"), dict) else {}
    name, call_id = text_of(part.get("tool")), text_of(part.get("callID")) or call.id
    status = text_of(state.get("status"))
    call.role = ASSISTANT
    call.blocks = [Block(TOOL_CALL, name=name, call_id=call_id, arguments=state.get("input"))]
    call.timestamp = parse_timestamp(_time(state, "start")) or call.timestamp
    call.extra |= _present({"title": text_of(state.get("title")), "status": status})
    result = Entry(
        id=f"{call.id}:result",
        parent_id=None,
        kind=MESSAGE,
        role=TOOL,
        timestamp=parse_timestamp(_time(state, "end")) or call.timestamp,
        message_id=call.message_id,
        extra=_present({"details": keep_small(state.get("metadata")), "status": status}),
    )
    if status == "completed":
        text = text_of(state.get("output"))
        if _time(state, "compacted"):
            result.extra["compacted"] = True  # opencode no longer sends it to the model; the output stays
        attachments = state.get("attachments") if isinstance(state.get("attachments"), list) else []
        result.blocks = [Block(TOOL_RESULT, text=text, name=name, call_id=call_id)]
        result.blocks += [_file(a) for a in attachments if isinstance(a, dict)]
    elif status == "error":
        text = text_of(state.get("error"))
        result.blocks = [Block(TOOL_RESULT, text=text, name=name, call_id=call_id, is_error=True)]
    else:
        text = f"No result: the call was still {status or 'pending'} when the reply ended."
        result.blocks = [Block(TOOL_RESULT, text=text, name=name, call_id=call_id, is_error=True)]
        result.extra["interrupted"] = True
    return [call, result]


def _file(part: dict) -> Block:
    """A file part: an image given inline (a data: URL) as the image, anything else by its name."""
    mime, url = text_of(part.get("mime")), text_of(part.get("url"))
    name = text_of(part.get("filename")) or url.rsplit("/", 1)[-1]
    if mime.startswith("image/") and url.startswith("data:") and "," in url:
        return Block(IMAGE, mime_type=mime, data=url.split(",", 1)[1], name=name)
    source = part.get("source") if isinstance(part.get("source"), dict) else {}
    return Block(ATTACHMENT, name=text_of(source.get("path")) or name, mime_type=mime)


_USAGE = {"input": "input", "output": "output", "cache_read": "read", "cache_write": "write"}


def _usage(tokens: Any) -> dict[str, int]:
    if not isinstance(tokens, dict):
        return {}
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    usage = usage_counts({**tokens, **cache}, _USAGE)
    reasoning = usage_counts(tokens, {"reasoning": "reasoning"}).get("reasoning", 0)
    if reasoning:
        usage["output"] = usage.get("output", 0) + reasoning  # billed as output, as opencode's cost does
    return usage if any(usage.values()) else {}


def _step_finish(entry: Entry, part: dict, message: dict) -> None:
    entry.model = text_of(message.get("modelID"))
    entry.usage = _usage(part.get("tokens"))
    tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
    reason = text_of(part.get("reason"))
    cost = part.get("cost")
    entry.extra |= _present(
        {
            "stop_reason": reason,
            "cost": cost if isinstance(cost, int | float) and not isinstance(cost, bool) else None,
            "reasoning_tokens": tokens.get("reasoning") if isinstance(tokens.get("reasoning"), int) else None,
        }
    )
    entry.summary = f"A model call ends{f': {reason}' if reason else ''}"


def message_end(message: dict, parts: list[dict]) -> list[Entry]:
    """What follows a reply's parts: its usage when no step-finish part said it (opencode
    before step parts, a reply stopped mid-step), its error, or the stop the person made."""
    if message.get("role") != "assistant":
        return []
    message_id = text_of(message.get("id"))
    ended = parse_timestamp(_time(message, "completed")) or parse_timestamp(_time(message, "created"))
    found = []
    usage = _usage(message.get("tokens"))
    if usage and not any(p.get("type") == "step-finish" for p in parts):
        entry = Entry(id=f"{message_id}:usage", parent_id=None, kind=STEP, subtype="finish", timestamp=ended)
        entry.message_id, entry.extra = message_id, _message_extra(message)
        _step_finish(
            entry,
            {"tokens": message.get("tokens"), "cost": message.get("cost"), "reason": message.get("finish")},
            message,
        )
        found.append(entry)
    error = message.get("error") if isinstance(message.get("error"), dict) else None
    if error is None:
        return found
    if error.get("name") == _ABORTED:
        running = any(
            p.get("type") == "tool"
            and isinstance(p.get("state"), dict)
            and p["state"].get("status") in ("pending", "running")
            for p in parts
        )
        aborted = Entry(
            id=f"{message_id}:aborted",
            parent_id=None,
            kind=MESSAGE,
            role=USER,
            timestamp=ended,
            is_meta=True,
            blocks=[Block(TEXT, text="[The reply was aborted]")],
            extra={"aborted": True, "during_tool": running},
        )
        found.append(aborted)
        return found
    failed = Entry(
        id=f"{message_id}:error",
        parent_id=None,
        kind=MESSAGE,
        role=ASSISTANT,
        timestamp=ended,
        model=text_of(message.get("modelID")),
        message_id=message_id,
        extra=_message_extra(message)
        | {
            "stop_reason": "error",
            "error_message": _error_text(error),
            "error_name": text_of(error.get("name")),
        },
    )
    found.append(failed)
    return found


def _error_text(error: dict) -> str:
    """opencode's errors are {"name", "data": {"message", ...}}."""
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    message = text_of(data.get("message")) or text_of(error.get("message"))
    name = text_of(error.get("name"))
    return f"{name}: {message}" if name and message else message or name


def harness_line(entry: Entry) -> dict | None:
    """A user line opencode wrote: the stop of an aborted reply, or text it added to a prompt
    (a file's contents, a command's expansion: a synthetic part)."""
    if entry.role != USER or not entry.is_meta:
        return None
    if entry.extra.get("aborted"):
        return {"kind": "interrupt", "text": entry.text, "during_tool": bool(entry.extra.get("during_tool"))}
    return {"kind": "meta", "text": entry.text}


# Detection


def looks_like(path: Path, first: dict | None) -> bool:
    if path.is_file():
        return path.name == store.DATABASE_NAME and store.is_database(path)
    return path.is_dir() and (store.database_of(path) is not None or _storage_of(path) is not None)


THIS_FORMAT = Format(
    FORMAT,
    "opencode",
    "marks/opencode.svg",  # a pair of code brackets in a square
    makes_projects=True,
    harness_line=harness_line,
)
