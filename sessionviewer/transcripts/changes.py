"""What a session changed: per file, one diff from the text the session first saw to the
text it left, built from its edit, write and patch calls and the Reads before them.

No Django. ``session_changes(entries, format_key)`` takes the thread's entries in order. A
file's starting text is known from a whole-file Read before its first change (read by the
session's format's rule), or is empty when the session created it (a Write that says so, a
patch's Add File). Each change is replayed onto the known text; when the start is not known,
or an edit's old text is not found in the replayed text, the file says so and its edits are
shown in order instead. Calls whose result is an error changed nothing: they are left out
of the replay and counted apart (``failed``). Every line remembers the call that wrote or
removed it, so each hunk names the entries that made it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sessionviewer import readers
from sessionviewer.transcripts import tools

# Why a file's edits are shown in order rather than as one diff.
NO_START = "the session changed it before reading it whole"
NOT_FOUND = "an edit's old text was not in the file as replayed"
UNREADABLE = "a call's change could not be read"

# Results that say a Write made a new file (Claude Code, pi, OpenClaw, opencode).
_CREATED = ("created", "new file")


@dataclass(slots=True)
class Hunk:
    """One hunk of a file's diff and the entries of the calls that made it."""

    diff: tools.FileDiff
    entry_ids: list[str]
    labels: list[str] = field(default_factory=list)  # each call as "2. Edit": its turn among the file's

    @property
    def calls(self) -> list[tuple[str, str]]:
        return list(zip(self.entry_ids, self.labels, strict=True))


@dataclass(slots=True)
class Change:
    """One call's change to a file, as the transcript shows it: for the in-order view."""

    entry_id: str
    tool: str
    diff: tools.FileDiff


@dataclass(slots=True)
class FileChanges:
    path: str
    changes: list[Change] = field(default_factory=list)
    start: str | None = None  # the text the session first saw; None when not known
    end: str | None = None  # the text it left; None when it could not be replayed
    unknown_because: str = ""
    created: bool = False
    deleted: bool = False
    moved_to: str = ""
    failed: list[str] = field(default_factory=list)  # entry ids of calls that returned an error
    hunks: list[Hunk] = field(default_factory=list)
    # The replayed file: each line with where it came from, ("start", index) or ("call", entry id).
    _lines: list[tuple[str, Any]] | None = None
    _removed_by: dict[int, str] = field(default_factory=dict)  # start line index -> entry id

    @property
    def known(self) -> bool:
        return self.start is not None and self.end is not None

    @property
    def added(self) -> int:
        source = [h.diff for h in self.hunks] if self.known else [c.diff for c in self.changes]
        return sum(d.added for d in source)

    @property
    def removed(self) -> int:
        source = [h.diff for h in self.hunks] if self.known else [c.diff for c in self.changes]
        return sum(d.removed for d in source)

    def to_dict(self) -> dict:
        data = {
            "path": self.path,
            "added": self.added,
            "removed": self.removed,
            "start_known": self.known,
            "created": self.created,
            "deleted": self.deleted,
            "moved_to": self.moved_to,
            "failed_calls": self.failed,
        }
        if self.known:
            data["hunks"] = [{"entry_ids": h.entry_ids, "lines": _lines_dict(h.diff)} for h in self.hunks]
        else:
            data["unknown_because"] = self.unknown_because
            data["changes"] = [
                {"entry_id": c.entry_id, "tool": c.tool, "lines": _lines_dict(c.diff)} for c in self.changes
            ]
        return data


def _lines_dict(diff: tools.FileDiff) -> list[dict]:
    return [{"kind": ln.kind, "text": ln.text, "old": ln.old, "new": ln.new} for ln in diff.lines]


def session_changes(entries: list[readers.Entry], format_key: str) -> list[FileChanges]:
    """Every file the entries' calls changed, in the order first changed."""
    results = {}
    for entry in entries:
        for block in entry.blocks:
            if block.type == readers.TOOL_RESULT and block.call_id:
                results[block.call_id] = (block, entry)
    files: dict[str, FileChanges] = {}
    starts: dict[str, str] = {}  # path -> text of a whole-file Read before any change
    for entry in entries:
        for block in entry.blocks:
            if block.type != readers.TOOL_CALL:
                continue
            result, result_entry = results.get(block.call_id, (None, None)) if block.call_id else (None, None)
            _one_call(files, starts, entry.id, block, result, result_entry, format_key)
    for changed in files.values():
        _finish(changed)
    return list(files.values())


def _one_call(files, starts, entry_id, call, result, result_entry, format_key) -> None:
    arguments = tools.parsed_arguments(call.arguments)
    kind = tools.kind_of(call.name, arguments)
    if kind == tools.SHELL and isinstance(arguments, dict):
        if "*** Begin Patch" not in tools.command_text(arguments.get("command", arguments.get("cmd"))):
            return
        kind = tools.PATCH
    if kind == tools.READ:
        path = tools.edit_path(call)
        whole = _whole_file(format_key, result.text, arguments) if result and not result.is_error else None
        if path and path not in files and whole is not None:
            starts[path] = whole
        return
    notebook = (call.name or "").lower() == "notebookedit"
    if kind not in (tools.EDIT, tools.WRITE, tools.PATCH) and not notebook:
        return
    extra = result_entry.extra if result_entry is not None else {}
    view = tools.describe(call, result, extra)
    failed = result is not None and tools.result_state(result, extra).is_error
    unreadable = notebook or view.kind == tools.GENERIC
    if unreadable:
        path = tools.first_str(arguments, tools.PATH_KEYS) if isinstance(arguments, dict) else None
        touched = [(path, tools.FileDiff(path, []))] if path else []
    elif view.kind == tools.WRITE:
        lines = [tools.DiffLine("add", text) for text in view.content.splitlines()]
        touched = [(view.path, tools.FileDiff(view.path, lines, action="write"))]
    else:  # an edit: one diff per edit of one file; a patch: one per file
        touched = [(view.path if view.kind == tools.EDIT else d.path, d) for d in view.diffs]
    for path, diff in touched:
        changed = _file(files, starts, path)
        if not failed:
            changed.changes.append(Change(entry_id, call.name, diff))
        elif entry_id not in changed.failed:
            changed.failed.append(entry_id)
    if failed or not touched:
        return
    if unreadable:
        _unknown(files[touched[0][0]], UNREADABLE)
    elif view.kind == tools.WRITE:
        _replay_write(files[view.path], view.content, result, entry_id)
    elif view.kind == tools.EDIT:
        _replay_edit(files[view.path], arguments, call.name, entry_id)
    else:
        for path, diff in touched:
            _replay_patch(files[path], diff, entry_id)
            files[path].moved_to = diff.move_to or files[path].moved_to


def _replay_write(changed: FileChanges, content: str, result: readers.Block | None, entry_id: str) -> None:
    if changed._lines is None and len(changed.changes) == 1 and changed.start is None:
        said = (result.text if result is not None else "").lower()
        if any(word in said for word in _CREATED):  # a new file: it started empty
            changed.start, changed._lines, changed.created = "", [], True
    if changed._lines is not None:
        _replace(changed, 0, len(changed._lines), content, entry_id)


def _file(files, starts, path) -> FileChanges:
    if path not in files:
        changed = FileChanges(path)
        if path in starts:
            changed.start = starts[path]
            changed._lines = [(text, ("start", i)) for i, text in enumerate(starts[path].splitlines())]
        else:
            changed.unknown_because = NO_START
        files[path] = changed
    return files[path]


def _whole_file(format_key: str, text: str, arguments: Any) -> str | None:
    """A Read's output as the whole file's text, when it shows every line from the first."""
    if not isinstance(text, str) or not tools.small_enough(text):
        return None
    found = readers.read_output(format_key, text, arguments)
    if found is None or found.note or found.numbers != list(range(1, len(found.numbers) + 1)):
        return None
    return "\n".join(found.lines) + "\n"


def _unknown(changed: FileChanges, why: str) -> None:
    if changed._lines is not None or changed.start is not None:
        changed.unknown_because = changed.unknown_because or why
    changed._lines = None


def _replace(changed: FileChanges, at: int, stop: int, new: str, entry_id: str) -> None:
    """Lines at:stop of the replayed file become new's lines, written by entry_id."""
    lines = changed._lines
    for _, origin in lines[at:stop]:
        if origin[0] == "start":
            changed._removed_by.setdefault(origin[1], entry_id)
    lines[at:stop] = [(text, ("call", entry_id)) for text in new.splitlines()]


def _replay_edit(changed: FileChanges, args: dict, name: str, entry_id: str) -> None:
    if changed._lines is None:
        return
    if isinstance(args.get("edits"), list):
        pairs = [
            (tools.first_str(e, tools.OLD_KEYS), tools.first_str(e, tools.NEW_KEYS), e) for e in args["edits"]
        ]
    elif args.get("command") == "insert" or name.lower() == "insert":
        line = args.get("insert_line")
        new = tools.first_str(args, (*tools.NEW_KEYS, "insert_text", "text")) or ""
        if not isinstance(line, int) or not 0 <= line <= len(changed._lines):
            return _unknown(changed, NOT_FOUND)
        return _replace(changed, line, line, new, entry_id)
    else:
        pairs = [(tools.first_str(args, tools.OLD_KEYS), tools.first_str(args, tools.NEW_KEYS), args)]
    for old, new, each in pairs:
        if not _replace_text(changed, old or "", new or "", tools.replaces_every(each), entry_id):
            return _unknown(changed, NOT_FOUND)
    return None


def _replace_text(changed: FileChanges, old: str, new: str, every: bool, entry_id: str) -> bool:
    """Replace old by new in the replayed file, by whole lines around the match."""
    text = "".join(t + "\n" for t, _ in changed._lines)
    if not old or old not in text:
        return False
    done = 0
    while (found := text.find(old, done)) >= 0:
        first = text.count("\n", 0, found)
        last = text.count("\n", 0, found + len(old) - (1 if old.endswith("\n") else 0)) + 1
        line_start = text.rfind("\n", 0, found) + 1
        line_end = text.find("\n", found + len(old) - (1 if old.endswith("\n") else 0))
        before, after = text[line_start:found], text[found + len(old) : line_end + 1]
        _replace(changed, first, last, before + new + after, entry_id)
        text = "".join(t + "\n" for t, _ in changed._lines)
        done = line_start + len(before + new + after)
        if not every:
            break
    return True


def _replay_patch(changed: FileChanges, diff: tools.FileDiff, entry_id: str) -> None:
    if diff.action == "add":
        if changed._lines is None and len(changed.changes) == 1:
            changed.start, changed._lines, changed.created = "", [], True
        if changed._lines is not None:
            new = "".join(line.text + "\n" for line in diff.lines if line.kind == "add")
            _replace(changed, 0, len(changed._lines), new, entry_id)
        return
    if diff.action == "delete":
        changed.deleted = True
        if changed._lines is not None:
            _replace(changed, 0, len(changed._lines), "", entry_id)
        return
    if changed._lines is None:
        return
    at = 0
    for chunk in _chunks(diff.lines):
        old = [line.text for line in chunk if line.kind in ("ctx", "del")]
        new = [line.text for line in chunk if line.kind in ("ctx", "add")]
        texts = [t for t, _ in changed._lines]
        found = next(
            (i for i in range(at, len(texts) - len(old) + 1) if texts[i : i + len(old)] == old), None
        )
        if found is None:
            return _unknown(changed, NOT_FOUND)
        _replace(changed, found, found + len(old), "".join(t + "\n" for t in new), entry_id)
        at = found + len(new)
    return None


def _chunks(lines: list[tools.DiffLine]) -> list[list[tools.DiffLine]]:
    chunks: list[list[tools.DiffLine]] = [[]]
    for line in lines:
        if line.kind == "hunk":
            chunks.append([])
        elif line.kind in ("ctx", "del", "add"):
            chunks[-1].append(line)
    return [c for c in chunks if any(line.kind != "ctx" for line in c)]


def _finish(changed: FileChanges) -> None:
    """The file's one diff, start to end, each hunk with the calls that made it."""
    if changed._lines is None or changed.start is None:
        changed.start = changed.end = None
        changed.unknown_because = changed.unknown_because or NO_START
        return
    changed.unknown_because = ""
    changed.end = "".join(t + "\n" for t, _ in changed._lines)
    lines = tools.diff_lines(changed.start, changed.end, 1, 1, True)
    chunks: list[list[tools.DiffLine]] = []
    for line in lines:
        if line.kind == "hunk" or not chunks:
            chunks.append([])
        chunks[-1].append(line)
    numbered: dict[str, str] = {}
    for change in changed.changes:
        numbered.setdefault(change.entry_id, f"{len(numbered) + 1}. {change.tool}")
    for chunk in chunks:
        ids: list[str] = []
        for line in chunk:
            if line.kind == "del" and line.old is not None:
                who = changed._removed_by.get(line.old - 1)
            elif line.kind == "add" and line.new is not None:
                # A line the diff calls added may be one of the start's that it aligned elsewhere.
                origin = changed._lines[line.new - 1][1]
                who = origin[1] if origin[0] == "call" else None
            else:
                continue
            if who and who not in ids:
                ids.append(who)
        order = list(numbered)
        ids.sort(key=lambda who: order.index(who) if who in numbered else len(order))  # in the order made
        labels = [numbered.get(who, who) for who in ids]
        changed.hunks.append(Hunk(tools.FileDiff(changed.path, chunk, numbered=True), ids, labels))
