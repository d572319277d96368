"""What a tool call did, read from its arguments and result: the view the transcript shows.

No Django. ``describe(call, result, result_extra)`` names the kind of view (edit, write,
shell, read, search, todo, agent, web, mcp, patch, generic) and parses the fields its
template needs. The files are untrusted: arguments that are not a dict, keys that are
missing or of the wrong type, or strings too big to diff give the generic view (the
arguments as pretty JSON), never an error.

Tool names across formats, lowercased:

    Claude Code   Edit MultiEdit Write Bash Read Grep Glob TodoWrite Task Agent
                  WebFetch WebSearch mcp__<server>__<tool>
    pi, OpenClaw  bash read edit write exec apply_patch (Codex-style "*** Begin Patch")
    Go agent      the same as pi, in snake_case (old_text, new_text)
    Codex CLI     shell (argv command) exec_command (cmd) local_shell apply_patch (a
                  function call's "input", a custom tool call's text, or a shell argv
                  running it) update_plan
    text editor   str_replace_based_edit_tool / str_replace_editor with a command,
                  and str_replace, create, view, insert as tools of their own

Fluux chats carry no tool calls.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from sessionviewer.readers import Block

# Past this many characters of old plus new text a diff costs too much: generic view.
DIFF_LIMIT = 200_000
# Past this many lines on a side difflib gets slow: generic view.
DIFF_LINES = 5_000
CONTEXT = 3  # lines of context around a change, as diff -u

EDIT, WRITE, SHELL, READ, SEARCH, TODO, AGENT, WEB, MCP, PATCH, GENERIC = (
    "edit", "write", "shell", "read", "search", "todo", "agent", "web", "mcp", "patch", "generic",
)  # fmt: skip

# Each format's tool names, lowercased, to the view that shows them.
KINDS = {
    **dict.fromkeys(("edit", "multiedit", "str_replace", "edit_file", "replace", "insert"), EDIT),
    **dict.fromkeys(("write", "create", "write_file", "create_file"), WRITE),
    **dict.fromkeys(
        ("bash", "shell", "exec", "sh", "run_command", "execute_command", "run_shell_command", "terminal"),
        SHELL,
    ),
    # Codex's: exec_command takes "cmd"; local_shell is the local_shell_call item the reader names.
    **dict.fromkeys(("exec_command", "shell_command", "local_shell", "container.exec"), SHELL),
    **dict.fromkeys(("read", "read_file", "view", "cat"), READ),
    **dict.fromkeys(("grep", "glob", "find", "search_files", "file_search", "rg"), SEARCH),
    **dict.fromkeys(("todowrite", "todo_write", "update_plan"), TODO),
    **dict.fromkeys(("task", "agent", "subagent", "sessions_spawn"), AGENT),
    **dict.fromkeys(("webfetch", "websearch", "web_fetch", "web_search"), WEB),
    **dict.fromkeys(("apply_patch", "applypatch", "patch"), PATCH),
}
# Tools that take a "command" naming what to do (Anthropic's text editor tool).
EDITOR_TOOLS = frozenset({"str_replace_based_edit_tool", "str_replace_editor", "text_editor"})
EDITOR_COMMANDS = {"str_replace": EDIT, "insert": EDIT, "create": WRITE, "view": READ}

# Argument names, in the order tried: each format spells them its own way.
PATH_KEYS = ("file_path", "path", "filePath", "filename", "file", "notebook_path", "absolute_path")
OLD_KEYS = ("old_string", "oldString", "oldText", "old_text", "old_str", "old")
NEW_KEYS = ("new_string", "newString", "newText", "new_text", "new_str", "new")
CONTENT_KEYS = ("content", "file_text", "contents", "text", "fileText")


def replaces_every(args: dict) -> bool:
    """Whether an edit replaces every occurrence of its old text: Claude Code's replace_all,
    Gemini CLI's allow_multiple, or its expected_replacements of more than one (before v0.30)."""
    expected = args.get("expected_replacements")
    return (
        args.get("replace_all") is True
        or args.get("allow_multiple") is True
        or (isinstance(expected, int) and not isinstance(expected, bool) and expected > 1)
    )


# Exit codes as each format writes them: Claude Code starts an error with "Exit code 1",
# pi and OpenClaw end with "Command exited with code 1", Go's os/exec says "exit status 1".
_EXIT = re.compile(r"(?:^Exit code|Command exited with code|exit status) (-?\d+)\s*$", re.M)
_ABORTED = re.compile(r"^(?:Command aborted|Command was aborted)\b", re.M)
_PI_DIFF_LINE = re.compile(r"^([-+ ])\s*(\d+) ?(.*)$")


@dataclass(slots=True)
class DiffLine:
    kind: str  # "add", "del", "ctx", "hunk" (an @@ header), "note" ("\ No newline at end of file")
    text: str
    old: int | None = None  # line numbers, when known
    new: int | None = None


@dataclass(slots=True)
class FileDiff:
    """One file's changes: one edit of an Edit or MultiEdit, or one file of a patch."""

    path: str
    lines: list[DiffLine]
    action: str = "update"  # "update", "add", "delete"
    move_to: str = ""
    numbered: bool = False  # the lines carry the file's line numbers

    @property
    def added(self) -> int:
        return sum(line.kind == "add" for line in self.lines)

    @property
    def removed(self) -> int:
        return sum(line.kind == "del" for line in self.lines)


@dataclass(slots=True)
class TodoItem:
    text: str
    state: str  # "pending", "in_progress", "completed", or as written

    @property
    def label(self) -> str:
        return self.state.replace("_", " ")

    @property
    def mark(self) -> str:
        return {"completed": "☑", "in_progress": "◐"}.get(self.state, "☐")


@dataclass(slots=True)
class ToolView:
    """How one tool call is shown. Only the fields of its kind are filled in."""

    kind: str
    name: str
    arguments: Any = None
    path: str = ""
    diffs: list[FileDiff] = field(default_factory=list)
    content: str = ""  # a written file
    command: str = ""
    description: str = ""  # a command's or a subagent's description
    prompt: str = ""  # a subagent's prompt, a WebFetch prompt
    subagent_type: str = ""
    line_range: str = ""  # "lines 10–59", "from line 10", "first 50 lines"
    pattern: str = ""
    scope: str = ""  # a search's glob, type or output mode
    todos: list[TodoItem] = field(default_factory=list)
    url: str = ""
    query: str = ""
    server: str = ""
    tool: str = ""
    background: bool = False
    stats: dict[str, int] = field(default_factory=dict)  # a subagent's tokens, tool uses, duration_ms

    @property
    def template(self) -> str:
        return f"sessions/tools/{self.kind}.html"

    @property
    def content_lines(self) -> int:
        """Lines of a written file: a last newline ends the last line, it starts none."""
        return self.content.count("\n") + (0 if self.content.endswith("\n") or not self.content else 1)

    @property
    def todo_counts(self) -> dict[str, int]:
        done = sum(t.state == "completed" for t in self.todos)
        return {"done": done, "total": len(self.todos)}


@dataclass(slots=True)
class ResultState:
    """What a result says at a glance: exit code, error, interrupted; and, for a result shown
    without its call (live updates), the kind of call it answers, as far as it says."""

    kind: str = GENERIC
    exit_code: int | None = None
    is_error: bool = False
    interrupted: bool = False


# --- The entry point -------------------------------------------------------------------------------------


def describe(call: Block, result: Block | None = None, result_extra: dict | None = None) -> ToolView:
    """The view of a tool call; the generic one for anything it cannot read."""
    name = call.name if isinstance(call.name, str) else ""
    arguments = parsed_arguments(call.arguments)
    try:
        view = _describe(name, arguments, result, result_extra if isinstance(result_extra, dict) else {})
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, RecursionError):
        view = None  # a shape no rule foresaw: the raw arguments say it best
    return view or ToolView(GENERIC, name, call.arguments)


def kind_of(name: str, arguments: Any = None) -> str:
    """The view a tool's name asks for, before its arguments are read."""
    lowered = (name or "").lower()
    if lowered.startswith("mcp__"):
        return MCP
    if lowered in EDITOR_TOOLS and isinstance(arguments, dict):
        return EDITOR_COMMANDS.get(arguments.get("command"), GENERIC)
    return KINDS.get(lowered, GENERIC)


def result_state(result: Block | None, extra: dict | None = None) -> ResultState:
    """Exit code, error and interruption of a result, from its text and the entry's extra."""
    if result is None:
        return ResultState()
    extra = extra if isinstance(extra, dict) else {}
    kept = extra.get("tool_use_result")  # Claude Code's toolUseResult, its scalar parts
    kept = kept if isinstance(kept, dict) else {}
    details = extra.get("details")
    details = details if isinstance(details, dict) else {}
    code = None
    for value in (kept.get("exitCode"), details.get("exitCode"), details.get("exit_code")):
        if isinstance(value, int) and not isinstance(value, bool):
            code = value
            break
    text = result.text if isinstance(result.text, str) else ""
    if code is None and (found := _EXIT.search(text[:300]) or _EXIT.search(text[-300:])):
        code = int(found.group(1))
    interrupted = kept.get("interrupted") is True or bool(_ABORTED.search(text[-300:]))
    kind = kind_of(result.name if isinstance(result.name, str) else "")
    if kind == GENERIC and "interrupted" in kept:  # Claude Code's Bash results say whether they were
        kind = SHELL
    return ResultState(kind, code, bool(result.is_error), interrupted)


# --- Per kind --------------------------------------------------------------------------------------------


def _describe(name: str, args: Any, result: Block | None, extra: dict) -> ToolView | None:
    kind = kind_of(name, args)
    if kind == GENERIC or not isinstance(args, dict):
        if kind == PATCH and isinstance(args, str):
            return _patch(name, args, args)
        return None
    if kind == SHELL and "*** Begin Patch" in command_text(args.get("command")):
        return _patch(name, args, command_text(args.get("command")))
    return _BUILDERS[kind](name, args, extra)


def _edit(name: str, args: dict, extra: dict) -> ToolView | None:
    path = first_str(args, PATH_KEYS)
    if isinstance(args.get("edits"), list):  # MultiEdit: one diff per edit
        edits = [e for e in args["edits"] if isinstance(e, dict)]
        if not edits or len(edits) != len(args["edits"]):
            return None
        pairs = [(first_str(e, OLD_KEYS), first_str(e, NEW_KEYS)) for e in edits]
    elif args.get("command") == "insert" or name.lower() == "insert":
        new = first_str(args, (*NEW_KEYS, "insert_text", "text"))
        line = args.get("insert_line")
        if new is None or not small_enough(new):
            return None
        start = line + 1 if isinstance(line, int) and not isinstance(line, bool) and line >= 0 else None
        lines = diff_lines("", new, 1, start or 1, start is not None)
        return ToolView(
            EDIT, name, args, path=path or "", diffs=[FileDiff(path or "", lines, numbered=bool(start))]
        )
    else:
        pairs = [(first_str(args, OLD_KEYS), first_str(args, NEW_KEYS))]
    if path is None or any(old is None and new is None for old, new in pairs):
        return None
    pairs = [(old or "", new or "") for old, new in pairs]
    if not all(small_enough(old + new) for old, new in pairs):
        return None
    diffs = _edit_diffs(path, pairs, extra)
    return ToolView(EDIT, name, args, path=path, diffs=diffs)


def _edit_diffs(path: str, pairs: list[tuple[str, str]], extra: dict) -> list[FileDiff]:
    hunks = _hunks(extra.get("structured_patch"))
    if len(pairs) == 1 and hunks:  # the file's own diff, with its line numbers and context
        return [FileDiff(path, hunks, numbered=True)]
    details = extra.get("details")
    pi_diff = details.get("diff") if isinstance(details, dict) and len(pairs) == 1 else None
    if isinstance(pi_diff, str) and (pi_lines := _pi_diff(pi_diff)):  # pi writes its own numbered diff
        return [FileDiff(path, pi_lines, numbered=True)]
    later = extra.get("later_lines")  # the file by line number, as a later Read showed it
    read = later if isinstance(later, dict) and not hunks and len(pairs) == 1 else {}
    diffs = []
    for old, new in pairs:
        old_start = _locate(old, hunks, "old")
        new_start = _locate(new, hunks, "new")
        if read and (at := _locate_in_read(new, read)) is not None:
            # The file as a later Read showed it, nothing else having written it in between:
            # the new text starts there, and the old one started at the same line.
            old_start = new_start = at
        numbered = old_start is not None and new_start is not None
        lines = diff_lines(old, new, old_start or 1, new_start or 1, numbered)
        diffs.append(FileDiff(path, lines, numbered=numbered))
    return diffs


def _write(name: str, args: dict, extra: dict) -> ToolView | None:
    path = first_str(args, PATH_KEYS)
    content = first_str(args, CONTENT_KEYS)
    if path is None or content is None:
        return None
    return ToolView(WRITE, name, args, path=path, content=content)


def _shell(name: str, args: dict, extra: dict) -> ToolView | None:
    command = command_text(args.get("command", args.get("cmd")))
    if not command:
        return None
    description = args.get("description") or args.get("justification") or ""
    return ToolView(
        SHELL,
        name,
        args,
        command=command,
        description=description if isinstance(description, str) else "",
        background=args.get("run_in_background") is True or args.get("background") is True,
    )


def _read(name: str, args: dict, extra: dict) -> ToolView | None:
    path = first_str(args, PATH_KEYS)
    if not path:
        return None
    offset, limit = _int(args.get("offset")), _int(args.get("limit"))
    view_range = args.get("view_range")
    if isinstance(view_range, list) and len(view_range) == 2 and all(_int(n) is not None for n in view_range):
        first, last = view_range
        line_range = f"lines {first}–{last}" if last != -1 else f"from line {first}"
    elif offset is not None and limit is not None:
        line_range = f"lines {offset}–{offset + limit - 1}"
    elif offset is not None:
        line_range = f"from line {offset}"
    elif limit is not None:
        line_range = f"first {limit} lines"
    else:
        line_range = ""
    return ToolView(READ, name, args, path=path, line_range=line_range)


def _search(name: str, args: dict, extra: dict) -> ToolView | None:
    pattern = first_str(args, ("pattern", "query", "regex", "glob", "name"))
    if not pattern:
        return None
    path = first_str(args, ("path", "directory", "dir", "cwd")) or ""
    scope = [
        f"{key} {value}"
        for key in ("glob", "type", "output_mode")
        if isinstance(value := args.get(key), str) and value and value != pattern
    ]
    return ToolView(SEARCH, name, args, pattern=pattern, path=path, scope=" · ".join(scope))


def _todo(name: str, args: dict, extra: dict) -> ToolView | None:
    items = args.get("todos", args.get("plan"))
    if not isinstance(items, list) or not items:
        return None
    todos = []
    for item in items:
        if not isinstance(item, dict):
            return None
        text = item.get("content", item.get("step", item.get("text")))
        state = item.get("status", item.get("state", "pending"))
        if not isinstance(text, str) or not isinstance(state, str):
            return None
        todos.append(TodoItem(text, state))
    return ToolView(TODO, name, args, todos=todos)


def _agent(name: str, args: dict, extra: dict) -> ToolView | None:
    description = first_str(args, ("description", "label", "title")) or ""
    prompt = first_str(args, ("prompt", "task", "message", "instructions")) or ""
    if not description and not prompt:
        return None
    kind = args.get("subagent_type", args.get("agent", ""))
    return ToolView(
        AGENT,
        name,
        args,
        description=description,
        prompt=prompt,
        subagent_type=kind if isinstance(kind, str) else "",
        stats=extra.get("subagent_stats") or {},  # what its format says it spent
    )


def _web(name: str, args: dict, extra: dict) -> ToolView | None:
    url = first_str(args, ("url", "uri")) or ""
    query = first_str(args, ("query", "q")) or ""
    if not url and not query:
        return None
    prompt = first_str(args, ("prompt",)) or ""
    return ToolView(WEB, name, args, url=url, query=query, prompt=prompt)


def _mcp(name: str, args: dict, extra: dict) -> ToolView | None:
    server, _, tool = name[len("mcp__") :].partition("__")
    if not server or not tool:
        return None
    return ToolView(MCP, name, args, server=server, tool=tool)


def _patch(name: str, args: Any, text: str | dict) -> ToolView | None:
    if isinstance(text, dict):
        text = first_str(text, ("input", "patch", "diff", "content")) or ""
    if not isinstance(text, str) or not small_enough(text):
        return None
    diffs = parse_patch(text)
    return ToolView(PATCH, name, args, diffs=diffs) if diffs else None


_BUILDERS = {
    EDIT: _edit,
    WRITE: _write,
    SHELL: _shell,
    READ: _read,
    SEARCH: _search,
    TODO: _todo,
    AGENT: _agent,
    WEB: _web,
    MCP: _mcp,
    PATCH: lambda name, args, extra: _patch(name, args, args),
}


# --- Diffs -----------------------------------------------------------------------------------------------


def diff_lines(old: str, new: str, old_start: int, new_start: int, numbered: bool) -> list[DiffLine]:
    """A unified diff of old against new as lines, numbered from the given starts when numbered."""
    a, b = old.splitlines(), new.splitlines()
    lines: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(CONTEXT))
    for group in groups:
        i1, j1 = group[0][1], group[0][3]
        i2, j2 = group[-1][2], group[-1][4]
        if len(groups) > 1 or numbered:
            old_from = old_start + i1 if numbered else i1 + 1
            new_from = new_start + j1 if numbered else j1 + 1
            lines.append(DiffLine("hunk", f"@@ -{old_from},{i2 - i1} +{new_from},{j2 - j1} @@"))
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for k in range(i2 - i1):
                    lines.append(
                        DiffLine(
                            "ctx",
                            a[i1 + k],
                            _n(numbered, old_start + i1 + k),
                            _n(numbered, new_start + j1 + k),
                        )
                    )
                continue
            for k in range(i1, i2):
                lines.append(DiffLine("del", a[k], _n(numbered, old_start + k)))
            for k in range(j1, j2):
                lines.append(DiffLine("add", b[k], None, _n(numbered, new_start + k)))
    return lines


def _n(numbered: bool, number: int) -> int | None:
    return number if numbered else None


def _hunks(patch: Any) -> list[DiffLine]:
    """Claude Code's structuredPatch (as the reader keeps it) as numbered lines; [] if unreadable."""
    if not isinstance(patch, list) or not patch:
        return []
    lines: list[DiffLine] = []
    for hunk in patch:
        if not isinstance(hunk, dict) or not isinstance(hunk.get("lines"), list):
            return []
        old, new = _int(hunk.get("oldStart")), _int(hunk.get("newStart"))
        if old is None or new is None:
            return []
        lines.append(
            DiffLine(
                "hunk",
                f"@@ -{old},{_int(hunk.get('oldLines')) or 0} +{new},{_int(hunk.get('newLines')) or 0} @@",
            )
        )
        for text in hunk["lines"]:
            if not isinstance(text, str):
                return []
            sign, body = text[:1], text[1:]
            if sign == "+":
                lines.append(DiffLine("add", body, None, new))
                new += 1
            elif sign == "-":
                lines.append(DiffLine("del", body, old))
                old += 1
            elif sign == "\\":
                lines.append(DiffLine("note", text))
            else:
                lines.append(DiffLine("ctx", body, old, new))
                old, new = old + 1, new + 1
    return lines


def _locate(text: str, hunks: list[DiffLine], side: str) -> int | None:
    """The line where text starts on one side of a file's diff, when it occurs there exactly once."""
    wanted = text.splitlines()
    if not wanted or not hunks:
        return None
    numbered = [
        (line.old if side == "old" else line.new, line.text)
        for line in hunks
        if (line.kind in ("ctx", "del") if side == "old" else line.kind in ("ctx", "add"))
    ]
    found = [
        numbered[i][0]
        for i in range(len(numbered) - len(wanted) + 1)
        if [t for _, t in numbered[i : i + len(wanted)]] == wanted
        and numbered[i + len(wanted) - 1][0] - numbered[i][0] == len(wanted) - 1  # no gap between hunks
    ]
    return found[0] if len(found) == 1 else None


def _locate_in_read(text: str, read: dict[int, str]) -> int | None:
    """The line where text starts in a Read's output, when it occurs there exactly once."""
    wanted = text.splitlines()
    if not wanted:
        return None
    found = [
        number
        for number, line in read.items()
        if line == wanted[0] and all(read.get(number + k) == wanted[k] for k in range(1, len(wanted)))
    ]
    return found[0] if len(found) == 1 else None


def numbers_in(result_entry) -> bool:
    """Whether an edit's result carries the file's line numbers (Claude Code's structuredPatch,
    pi's numbered diff): then no later Read is needed for them."""
    extra = result_entry.extra if result_entry is not None else {}
    details = extra.get("details")
    return bool(extra.get("structured_patch")) or (
        isinstance(details, dict) and isinstance(details.get("diff"), str)
    )


def edit_path(call: Block) -> str:
    """The file an edit, write or read call names ("" for any other call)."""
    if kind_of(call.name, call.arguments) not in (EDIT, WRITE, READ, PATCH) or not isinstance(
        call.arguments, dict
    ):
        return ""
    return first_str(call.arguments, PATH_KEYS) or ""


def _pi_diff(diff: str) -> list[DiffLine]:
    """pi's edit diff ("-  12 old", "+  12 new", "   13 same", "     ..."); [] if it is not one."""
    lines: list[DiffLine] = []
    delta = 0  # new line number minus old, so far
    for text in diff.split("\n"):
        if not text.strip():
            continue
        if text.strip() == "...":
            lines.append(DiffLine("hunk", "…"))
            continue
        found = _PI_DIFF_LINE.match(text)
        if not found:
            return []
        sign, number, body = found.group(1), int(found.group(2)), found.group(3)
        if sign == "-":
            lines.append(DiffLine("del", body, number))
            delta -= 1
        elif sign == "+":
            lines.append(DiffLine("add", body, None, number))
            delta += 1
        else:
            lines.append(DiffLine("ctx", body, number, number + delta))
    return lines


def parse_patch(text: str) -> list[FileDiff]:
    """Codex-style patches ("*** Begin Patch", "*** Update File: path", "@@", "-old", "+new")."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    for line in text.replace("\r\n", "\n").split("\n"):
        if line.startswith("*** ") and line.rstrip() in ("*** Begin Patch", "*** End of File"):
            continue
        if line.rstrip() == "*** End Patch":
            current = None  # what follows is the shell's: a heredoc's closing word, say
            continue
        header = re.match(r"^\*\*\* (Update|Add|Delete) File: (.+)$", line)
        if header:
            current = FileDiff(header.group(2).strip(), [], action=header.group(1).lower())
            files.append(current)
            continue
        if current is None:
            continue
        if line.startswith("*** Move to: "):
            current.move_to = line[len("*** Move to: ") :].strip()
        elif line.startswith("@@"):
            current.lines.append(DiffLine("hunk", line))
        elif line.startswith("+"):
            current.lines.append(DiffLine("add", line[1:]))
        elif line.startswith("-"):
            current.lines.append(DiffLine("del", line[1:]))
        elif line.startswith(" "):
            current.lines.append(DiffLine("ctx", line[1:]))
        elif line:
            current.lines.append(DiffLine("ctx", line))
    return files


# --- Reading untrusted arguments -------------------------------------------------------------------------


def parsed_arguments(arguments: Any) -> Any:
    """Arguments as the file wrote them; a JSON object written as text (OpenAI-style) read first."""
    if isinstance(arguments, str) and arguments[:1] == "{" and len(arguments) <= DIFF_LIMIT:
        try:
            parsed = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
        return parsed if isinstance(parsed, dict) else arguments
    return arguments


def first_str(args: dict, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def command_text(value: Any) -> str:
    """A command as text: a string, or an argv list (Codex writes ["bash", "-lc", "ls"])."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(part, str) for part in value):
        if (
            len(value) == 3
            and value[1] in ("-c", "-lc")
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
        ):
            return value[2]
        return " ".join(value)
    return ""


def small_enough(text: str) -> bool:
    """Whether text is small enough to diff: past the limits it shows as raw JSON."""
    return len(text) <= DIFF_LIMIT and text.count("\n") <= DIFF_LINES
