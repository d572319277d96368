"""Tool calls shown by what they did: transcripts/tools.py on block values, then the
transcript page on a fixture file of each format that writes tool calls (Fluux chats
carry none)."""

import json
import re

import pytest
from django.urls import reverse

from sessionviewer import readers, render, transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.readers import TOOL_CALL, TOOL_RESULT, Block, claude_code, read_session
from sessionviewer.roots import RootSpec
from sessionviewer.templatetags import transcript as transcript_tags
from sessionviewer.transcripts import tools

from .active_content import active_content
from .claude_files import write_tool_turn
from .fixture_files import FIXTURES, index_fixture
from .pages import detail_url, page, whole_page

pytestmark = pytest.mark.usefixtures("fresh_cache")  # a clean transcript cache (conftest.py)


def call(name, arguments):
    return Block(TOOL_CALL, name=name, call_id="c1", arguments=arguments)


def result(text, is_error=False, name=""):
    return Block(TOOL_RESULT, text=text, is_error=is_error, name=name, call_id="c1")


def lines_of(diff):
    return [(line.kind, line.text, line.old, line.new) for line in diff.lines]


# --- Which view a tool name asks for ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments", "kind"),
    [
        # Claude Code
        ("Edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"}, "edit"),
        ("MultiEdit", {"file_path": "a.py", "edits": [{"old_string": "a", "new_string": "b"}]}, "edit"),
        ("Write", {"file_path": "a.py", "content": "x"}, "write"),
        ("Bash", {"command": "ls", "description": "List"}, "shell"),
        ("Read", {"file_path": "a.py"}, "read"),
        ("Grep", {"pattern": "def", "path": "src"}, "search"),
        ("Glob", {"pattern": "**/*.py"}, "search"),
        ("TodoWrite", {"todos": [{"content": "x", "status": "pending"}]}, "todo"),
        ("Task", {"description": "d", "prompt": "p"}, "agent"),
        ("Agent", {"description": "d", "prompt": "p"}, "agent"),
        ("WebFetch", {"url": "https://example.com", "prompt": "p"}, "web"),
        ("WebSearch", {"query": "q"}, "web"),
        ("mcp__github__create_issue", {"title": "t"}, "mcp"),
        # pi, OpenClaw and the Go agent
        ("bash", {"command": "ls"}, "shell"),
        ("exec", {"command": "ls"}, "shell"),
        ("read", {"path": "a.ts", "offset": 1, "limit": 5}, "read"),
        ("edit", {"path": "a.ts", "oldText": "a", "newText": "b"}, "edit"),
        ("edit", {"path": "a.go", "old_text": "a", "new_text": "b"}, "edit"),
        ("write", {"path": "a.ts", "content": "x"}, "write"),
        ("apply_patch", {"input": "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch"}, "patch"),
        # Anthropic's text editor tool, and its commands as tools of their own
        (
            "str_replace_based_edit_tool",
            {"command": "str_replace", "path": "a", "old_str": "a", "new_str": "b"},
            "edit",
        ),
        ("str_replace_based_edit_tool", {"command": "create", "path": "a", "file_text": "x"}, "write"),
        ("str_replace_based_edit_tool", {"command": "view", "path": "a", "view_range": [1, 9]}, "read"),
        ("str_replace_editor", {"command": "insert", "path": "a", "insert_line": 3, "new_str": "x"}, "edit"),
        ("str_replace", {"path": "a", "old_str": "a", "new_str": "b"}, "edit"),
        ("create", {"path": "a", "file_text": "x"}, "write"),
        ("FrobnicateWidget", {"widget": 1}, "generic"),
    ],
)
def test_each_formats_tool_names_get_their_view(name, arguments, kind):
    assert tools.describe(call(name, arguments)).kind == kind


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("Edit", "not a dict"),
        ("Edit", ["a", "list"]),
        ("Edit", None),
        ("Edit", {"file_path": 17, "old_string": ["x"]}),
        ("Edit", {"old_string": "a", "new_string": "b"}),  # no path
        ("MultiEdit", {"file_path": "a", "edits": ["not", "dicts"]}),
        ("MultiEdit", {"file_path": "a", "edits": []}),
        ("Write", {"file_path": "a"}),  # no content
        ("Bash", {"command": 42}),
        ("Bash", {"command": ""}),
        ("Read", {"file_path": ""}),
        ("Grep", {"path": "src"}),  # no pattern
        ("TodoWrite", {"todos": "x"}),
        ("TodoWrite", {"todos": [{"content": 1, "status": "pending"}]}),
        ("TodoWrite", {"todos": [None]}),
        ("Task", {"subagent_type": "x"}),
        ("WebFetch", {"prompt": "no url"}),
        ("mcp__", {"a": 1}),
        ("mcp__server", {"a": 1}),
        ("apply_patch", {"input": "no patch here"}),
        ("str_replace_based_edit_tool", {"command": "undo_edit", "path": "a"}),
        ("str_replace_based_edit_tool", {"command": ["str_replace"], "path": "a"}),
        (None, {"a": 1}),
        ("Edit", {"file_path": "a", "old_string": "x\n" * 6000, "new_string": "y"}),  # too big to diff
    ],
)
def test_malformed_arguments_fall_back_to_the_generic_view(name, arguments):
    view = tools.describe(call(name, arguments))
    assert view.kind == "generic"
    assert view.arguments == arguments


def test_arguments_written_as_json_text_are_read_as_json():
    view = tools.describe(call("bash", '{"command": "ls -la"}'))
    assert (view.kind, view.command) == ("shell", "ls -la")


def test_odd_results_and_extras_never_raise():
    odd_extras = [
        None,
        "x",
        {"structured_patch": "x"},
        {"structured_patch": [{"lines": [1]}]},
        {"details": []},
    ]
    for extra in odd_extras:
        view = tools.describe(
            call("Edit", {"file_path": "a", "old_string": "a", "new_string": "b"}), None, extra
        )
        assert view.kind == "edit"
        assert tools.result_state(result("x"), extra).exit_code is None


# --- Edits -----------------------------------------------------------------------------------------------


def test_an_edit_is_a_unified_diff_of_old_against_new():
    view = tools.describe(
        call("Edit", {"file_path": "a.py", "old_string": "a\nb\nc", "new_string": "a\nB\nc"})
    )
    assert view.path == "a.py"
    assert lines_of(view.diffs[0]) == [
        ("ctx", "a", None, None),
        ("del", "b", None, None),
        ("add", "B", None, None),
        ("ctx", "c", None, None),
    ]
    assert not view.diffs[0].numbered


def test_an_edit_takes_line_numbers_from_claude_codes_structured_patch():
    patch = [
        {"oldStart": 40, "oldLines": 2, "newStart": 40, "newLines": 2, "lines": [" def f():", "-  x", "+  y"]}
    ]
    view = tools.describe(
        call("Edit", {"file_path": "a.py", "old_string": "  x", "new_string": "  y"}),
        result("updated"),
        {"structured_patch": patch},
    )
    assert view.diffs[0].numbered
    assert lines_of(view.diffs[0]) == [
        ("hunk", "@@ -40,2 +40,2 @@", None, None),
        ("ctx", "def f():", 40, 40),
        ("del", "  x", 41, None),
        ("add", "  y", None, 41),
    ]


def test_multiedit_is_one_diff_per_edit_numbered_where_the_patch_places_it():
    patch = [
        {"oldStart": 1, "oldLines": 3, "newStart": 1, "newLines": 3, "lines": [" a", "-b", "+B", " c"]},
        {"oldStart": 20, "oldLines": 1, "newStart": 20, "newLines": 2, "lines": ["-x", "+y", "+z"]},
    ]
    edits = [{"old_string": "b", "new_string": "B"}, {"old_string": "x", "new_string": "y\nz"}]
    view = tools.describe(
        call("MultiEdit", {"file_path": "f", "edits": edits}), None, {"structured_patch": patch}
    )
    assert [lines_of(d) for d in view.diffs] == [
        [("hunk", "@@ -2,1 +2,1 @@", None, None), ("del", "b", 2, None), ("add", "B", None, 2)],
        [
            ("hunk", "@@ -20,1 +20,2 @@", None, None),
            ("del", "x", 20, None),
            ("add", "y", None, 20),
            ("add", "z", None, 21),
        ],
    ]


def test_an_edit_found_twice_in_the_patch_gets_no_line_numbers():
    patch = [{"oldStart": 1, "oldLines": 2, "newStart": 1, "newLines": 2, "lines": ["-b", "+B", " b"]}]
    edits = [{"old_string": "b", "new_string": "B"}, {"old_string": "q", "new_string": "Q"}]
    view = tools.describe(
        call("MultiEdit", {"file_path": "f", "edits": edits}), None, {"structured_patch": patch}
    )
    assert not view.diffs[0].numbered  # "b" is on two lines of the old side: which one is unknown


def test_a_pi_edit_takes_its_numbered_diff_from_the_results_details():
    diff = "   4 // greeting\n-  5 const g = 1;\n+  5 const g = 2;\n+  6 const h = 3;\n   6 end"
    view = tools.describe(
        call("edit", {"path": "a.ts", "oldText": "const g = 1;", "newText": "const g = 2;\nconst h = 3;"}),
        result("ok", name="edit"),
        {"details": {"diff": diff}},
    )
    assert lines_of(view.diffs[0]) == [
        ("ctx", "// greeting", 4, 4),
        ("del", "const g = 1;", 5, None),
        ("add", "const g = 2;", None, 5),
        ("add", "const h = 3;", None, 6),
        ("ctx", "end", 6, 7),
    ]


def test_an_insert_shows_added_lines_after_the_given_line():
    view = tools.describe(
        call(
            "str_replace_based_edit_tool",
            {"command": "insert", "path": "a", "insert_line": 3, "new_str": "x\ny"},
        )
    )
    assert [(line.kind, line.new) for line in view.diffs[0].lines if line.kind != "hunk"] == [
        ("add", 4),
        ("add", 5),
    ]


def test_codex_patches_are_one_diff_per_file():
    text = (
        "*** Begin Patch\n*** Update File: src/a.py\n*** Move to: src/b.py\n@@ def f():\n-    x\n+    y\n"
        "*** Add File: new.txt\n+hello\n*** Delete File: old.txt\n*** End Patch"
    )
    view = tools.describe(call("apply_patch", {"input": text}))
    assert [(d.path, d.action, d.move_to, d.added, d.removed) for d in view.diffs] == [
        ("src/a.py", "update", "src/b.py", 1, 1),
        ("new.txt", "add", "", 1, 0),
        ("old.txt", "delete", "", 0, 0),
    ]


def test_a_shell_command_holding_a_patch_is_shown_as_the_patch():
    command = ["bash", "-lc", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\nEOF"]
    view = tools.describe(call("shell", {"command": command}))
    assert (view.kind, view.diffs[0].path) == ("patch", "a")


def test_a_patch_ends_at_its_end_line_not_at_the_heredocs_closing_word():
    command = [
        "bash",
        "-lc",
        "apply_patch << 'PATCH'\n*** Begin Patch\n*** Delete File: old.txt\n*** End Patch\nPATCH",
    ]
    view = tools.describe(call("shell", {"command": command}))
    assert [(d.path, d.action, d.lines) for d in view.diffs] == [("old.txt", "delete", [])]


def test_a_codex_patch_as_an_argv_is_shown_as_the_patch():
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
    view = tools.describe(call("shell", json.dumps({"command": ["apply_patch", patch]})))
    assert (view.kind, view.diffs[0].path, view.diffs[0].added, view.diffs[0].removed) == (
        "patch",
        "a.py",
        1,
        1,
    )


def test_a_codex_custom_tool_calls_patch_text_is_a_diff():
    view = tools.describe(call("apply_patch", "*** Begin Patch\n*** Add File: n.txt\n+hi\n*** End Patch\n"))
    assert (view.kind, view.diffs[0].path, view.diffs[0].action) == ("patch", "n.txt", "add")


@pytest.mark.parametrize(
    ("name", "arguments", "command"),
    [
        ("shell", '{"command":["bash","-lc","pytest -q"],"workdir":"/w","timeout_ms":120000}', "pytest -q"),
        ("exec_command", '{"cmd":"npm test","workdir":"/w","yield_time_ms":1000}', "npm test"),
        ("shell_command", {"command": "ls -la", "workdir": "/w"}, "ls -la"),
        (
            "local_shell",
            {"type": "exec", "command": ["git", "status"], "working_directory": "/w"},
            "git status",
        ),
    ],
)
def test_codex_command_tools_show_as_commands(name, arguments, command):
    view = tools.describe(call(name, arguments))
    assert (view.kind, view.command) == ("shell", command)


# --- Shell, read, search, todos, agents, web, MCP ---------------------------------------------------------


def test_a_shell_call_has_its_command_and_description():
    view = tools.describe(
        call("Bash", {"command": "pytest -q", "description": "Run the tests", "run_in_background": True})
    )
    assert (view.command, view.description, view.background) == ("pytest -q", "Run the tests", True)


def test_an_argv_command_reads_as_the_shell_line():
    assert tools.describe(call("shell", {"command": ["bash", "-lc", "ls -la"]})).command == "ls -la"
    assert tools.describe(call("shell", {"command": ["git", "status"]})).command == "git status"


@pytest.mark.parametrize(
    ("text", "extra", "code", "interrupted"),
    [
        ("Exit code 2\nno tests", None, 2, False),  # Claude Code
        ("1 failing\n\nCommand exited with code 1", None, 1, False),  # pi, OpenClaw
        ("undefined: handler\nexit status 1", None, 1, False),  # Go's os/exec
        ("partial\n\nCommand aborted", None, None, True),  # pi
        ("", {"tool_use_result": {"interrupted": True, "stdout": ""}}, None, True),  # Claude Code
        ("fine", {"details": {"exitCode": 0}}, 0, False),
        ("Mentions exit code 3 in passing", None, None, False),
    ],
)
def test_a_results_exit_code_and_interruption_are_read_from_each_format(text, extra, code, interrupted):
    state = tools.result_state(result(text), extra)
    assert (state.exit_code, state.interrupted) == (code, interrupted)


def test_a_result_shown_without_its_call_knows_a_shell_by_its_name_or_claude_codes_fields():
    assert tools.result_state(result("x", name="bash")).kind == "shell"
    assert tools.result_state(result("x"), {"tool_use_result": {"interrupted": False}}).kind == "shell"
    assert tools.result_state(result("x")).kind == "generic"


@pytest.mark.parametrize(
    ("arguments", "line_range"),
    [
        ({"file_path": "a"}, ""),
        ({"file_path": "a", "offset": 10, "limit": 20}, "lines 10–29"),
        ({"file_path": "a", "offset": 10}, "from line 10"),
        ({"file_path": "a", "limit": 50}, "first 50 lines"),
        ({"path": "a", "command": "view", "view_range": [5, 9]}, "lines 5–9"),
        ({"path": "a", "command": "view", "view_range": [5, -1]}, "from line 5"),
        ({"file_path": "a", "offset": "10"}, ""),
    ],
)
def test_a_read_has_its_path_and_line_range(arguments, line_range):
    name = "str_replace_based_edit_tool" if "command" in arguments else "Read"
    view = tools.describe(call(name, arguments))
    assert (view.path, view.line_range) == ("a", line_range)


def test_a_search_has_its_pattern_path_and_scope():
    view = tools.describe(
        call("Grep", {"pattern": "def", "path": "src", "glob": "*.py", "output_mode": "content"})
    )
    assert (view.pattern, view.path, view.scope) == ("def", "src", "glob *.py · output_mode content")


def test_todos_keep_each_items_state():
    todos = [
        {"content": "one", "status": "completed"},
        {"content": "two", "status": "in_progress"},
        {"content": "three", "status": "pending"},
    ]
    view = tools.describe(call("TodoWrite", {"todos": todos}))
    assert [(t.text, t.state, t.mark) for t in view.todos] == [
        ("one", "completed", "☑"),
        ("two", "in_progress", "◐"),
        ("three", "pending", "☐"),
    ]
    assert view.todo_counts == {"done": 1, "total": 3}


def test_codex_plans_are_todos_too():
    view = tools.describe(call("update_plan", {"plan": [{"step": "a", "status": "completed"}]}))
    assert [(t.text, t.state) for t in view.todos] == [("a", "completed")]


def test_a_subagent_call_has_its_description_prompt_and_type():
    view = tools.describe(call("Agent", {"description": "d", "prompt": "p", "subagent_type": "Explore"}))
    assert (view.kind, view.description, view.prompt, view.subagent_type) == ("agent", "d", "p", "Explore")


def test_web_calls_have_their_url_or_query():
    assert tools.describe(call("WebFetch", {"url": "https://e.com", "prompt": "p"})).url == "https://e.com"
    assert tools.describe(call("WebSearch", {"query": "q"})).query == "q"


def test_an_mcp_tool_names_its_server_and_tool():
    view = tools.describe(call("mcp__claude_ai_Linear__list_issues", {}))
    assert (view.server, view.tool) == ("claude_ai_Linear", "list_issues")


# --- The reader keeps what the views need ----------------------------------------------------------------


def test_claude_reader_keeps_an_edits_structured_patch():
    entries = read_session(FIXTURES / "claude_code" / "tool_views.jsonl", "claude_code").entries
    edit = next(e for e in entries if e.id == "r-edit")
    assert edit.extra["structured_patch"] == [
        {
            "oldStart": 40,
            "oldLines": 3,
            "newStart": 40,
            "newLines": 3,
            "lines": [" def greet():", '-    print("helo")', '+    print("hello")', " "],
        }
    ]
    assert "structured_patch" not in next(e for e in entries if e.id == "r-write").extra  # an empty patch


def test_claude_reader_leaves_out_a_big_or_malformed_structured_patch():
    big = [{"oldStart": 1, "oldLines": 1, "newStart": 1, "newLines": 1, "lines": ["+" + "x" * 30_000]}]
    assert claude_code.parse_line(_claude_result(big), 1).extra.get("structured_patch") is None
    odd = [{"oldStart": "1", "oldLines": 1, "newStart": 1, "newLines": 1, "lines": []}]
    assert claude_code.parse_line(_claude_result(odd), 1).extra.get("structured_patch") is None


def _claude_result(patch):
    content = [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]
    return {
        "type": "user",
        "uuid": "r1",
        "message": {"role": "user", "content": content},
        "toolUseResult": {"structuredPatch": patch},
    }


# --- The transcript page, a fixture file per format ------------------------------------------------------


@pytest.fixture
def claude(tmp_path):
    return index_fixture(
        tmp_path,
        "claude_code",
        "tool_views.jsonl",
        "projects/-home-user-app",
        "77777777-7777-4777-8777-777777777777",
    )


@pytest.fixture
def openclaw(tmp_path):
    return index_fixture(
        tmp_path,
        "openclaw",
        "tool_views.jsonl",
        "agents/main/sessions",
        "6c6c6c6c-0000-4000-8000-000000000006",
    )


@pytest.fixture
def go(tmp_path):
    return index_fixture(tmp_path, "go_agent", "tool_views.jsonl", "sessions", "20260226-143012-88888888")


@pytest.fixture
def codex_session(tmp_path):
    return index_fixture(
        tmp_path,
        "codex",
        "tools_and_compaction.jsonl",
        "sessions/2025/11/03",
        "rollout-2025-11-03T10-00-00-0199a4f2-6c1e-7c33-9b1a-2d5e8f0c4a11",
    )


def whole(client, session: Session) -> str:
    """The whole transcript page, every chunk loaded: a fixture's calls are past its first screen."""
    url = detail_url(session)
    return whole_page(client, url, page(client, url))


def one_call_session(tmp_path, name: str, arguments: dict, output: str) -> Session:
    """A Claude Code session of one tool call (toolu_1) and its result, indexed."""
    call_block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}
    write_tool_turn(tmp_path / "projects" / "-w" / "s.jsonl", "go", [call_block], {"toolu_1": output})
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    return Session.objects.get()


WORD_MARK = re.compile(r'<span class="w[ad]">(.*?)</span>')


def tool_call(body: str, call_id: str, words: bool = False) -> str:
    """The HTML of the tool call with this id: its view, raw arguments and result; the marks
    on the words changed within a diff's lines are taken out unless words."""
    html = next(part for part in body.split('<div class="tool-call ')[1:] if call_id in part)
    return html if words else WORD_MARK.sub(r"\1", html)


@pytest.mark.django_db
def test_claude_edit_shows_a_numbered_diff_with_its_path(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_edit")
    assert html.startswith('tool-edit">')
    assert '<code class="path">/home/user/app/greet.py</code>' in html
    assert '<pre class="diff numbered">' in html
    assert '<span class="dl hunk">@@ -40,3 +40,3 @@\n</span>' in html
    assert (
        '<span class="ln" data-n="41"></span><span class="ln" data-n=""></span><span class="sign">-</span>    print(&quot;helo&quot;)'
        in html
        or (
            '<span class="ln" data-n="41"></span><span class="ln" data-n=""></span><span class="sign">-</span>    print("helo")'
            in html
        )
    )
    assert '<span class="sign">+</span>    print("hello")' in html
    assert '<details class="arguments raw">' in html  # the raw JSON, one click away


@pytest.mark.django_db
def test_an_edit_marks_the_words_changed_within_a_changed_line(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_edit", words=True)
    assert '<span class="sign">-</span>    print(&quot;<span class="wd">helo</span>&quot;)' in html or (
        '<span class="sign">-</span>    print("<span class="wd">helo</span>")' in html
    )
    assert '<span class="sign">+</span>    print("<span class="wa">hello</span>")' in html


def test_a_diff_marks_words_only_where_a_line_was_changed_not_replaced():
    lines = [
        tools.DiffLine("del", "port = 80"),
        tools.DiffLine("add", "port = 8080"),
        tools.DiffLine("del", "completely different"),
        tools.DiffLine("add", "nothing alike at all here"),
        tools.DiffLine("del", "a removed line, alone"),
        tools.DiffLine("ctx", "same"),
    ]
    html = render.render_diff(lines)
    assert '<span class="sign">-</span>port = <span class="wd">80</span>' in html
    assert '<span class="sign">+</span>port = <span class="wa">8080</span>' in html
    assert '<span class="sign">-</span>completely different' in html  # too little in common to mark
    assert '<span class="sign">-</span>a removed line, alone' in html


def test_a_diff_pairs_a_changed_line_with_the_added_line_it_became_when_counts_differ():
    lines = [
        tools.DiffLine("del", "def checkout_total():"),
        tools.DiffLine("del", "    return round(total, 2)"),
        tools.DiffLine("add", "from decimal import Decimal"),
        tools.DiffLine("add", "def checkout_total() -> Decimal:"),
        tools.DiffLine("add", "    return round(total, 3)"),
    ]
    html = render.render_diff(lines)
    assert '<span class="sign">+</span>from decimal import Decimal' in html  # new, nothing to pair
    assert '<span class="sign">+</span>def checkout_total()<span class="wa"> -&gt; Decimal</span>:' in html
    assert '<span class="sign">-</span>    return round(total, <span class="wd">2</span>)' in html


def test_word_marks_escape_what_they_mark():
    html = render.render_diff([tools.DiffLine("del", "x = <b>1</b>"), tools.DiffLine("add", "x = <i>1</i>")])
    assert "<b>" not in html and "<i>" not in html
    assert '<span class="wd">b</span>' in html and '<span class="wa">i</span>' in html


@pytest.mark.django_db
def test_claude_multiedit_shows_one_diff_per_edit(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_multi")
    assert html.count('<div class="file-diff">') == 2
    assert "Edit 1" in html and "Edit 2" in html
    assert (
        '<span class="sign">-</span>debug = true' in html and '<span class="sign">+</span>port = 8080' in html
    )


@pytest.mark.django_db
def test_claude_write_shows_the_file_highlighted_by_its_extension(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_write")
    assert '<code class="path">/home/user/app/run.py</code>' in html
    assert '<span class="kn">import</span>' in html  # Python, by the .py
    assert '<span class="n">8 lines</span>' in html  # the last newline ends a line, starts none


@pytest.mark.django_db
def test_claude_bash_shows_the_command_output_and_exit_code(client, viewer, claude):
    body = whole(client, claude)
    failed = tool_call(body, "toolu_bash")
    assert '<span class="prompt" aria-hidden="true">$ </span>pytest -q</pre>' in failed
    assert '<span class="description">Run the tests</span>' in failed
    assert '<span class="badge exit error">exit 2</span>' in failed
    assert '<div class="terminal"><pre class="plain">Exit code 2\nERROR' in failed
    assert '<span class="prompt" aria-hidden="true">$ </span>ls</pre>' in tool_call(body, "toolu_ls")
    assert '<span class="badge interrupted">interrupted</span>' in tool_call(body, "toolu_sleep")


@pytest.mark.django_db
def test_claude_read_grep_and_glob_show_path_range_and_pattern(client, viewer, claude):
    body = whole(client, claude)
    assert (
        '<code class="path">/home/user/app/greet.py</code> <span class="n">lines 10–29</span>'
        in tool_call(body, "toolu_read")
    )
    grep = tool_call(body, "toolu_grep")
    assert '<code class="pattern">def greet</code> in <code class="path">/home/user/app</code>' in grep
    assert "/home/user/app/greet.py:1:def greet():" in grep  # the matches
    assert '<code class="pattern">**/*.toml</code>' in tool_call(body, "toolu_glob")


@pytest.mark.django_db
def test_a_claude_read_result_is_code_with_the_files_line_numbers_in_a_gutter(client, viewer, claude):
    read = tool_call(whole(client, claude), "toolu_read")
    assert '<span class="cl"><span class="ln" data-n="10"></span><span class="k">def</span>' in read
    assert '<span class="ln" data-n="11"></span>' in read
    assert "10\u2192" not in read and "10→" not in read  # the numbers are the gutter, never text
    assert 'class="read-rest"' not in read  # two lines: nothing more to show


@pytest.mark.django_db
def test_a_long_read_result_previews_five_lines_then_shows_all(client, viewer, tmp_path):
    lines = "\n".join(f"{n:>6}\u2192x = {n}" for n in range(1, 13))
    session = one_call_session(tmp_path, "Read", {"file_path": "/app/long.py"}, lines)
    read = tool_call(page(client, detail_url(session)), "toolu_1")
    head, whole = read.split('<details class="read-rest">')
    assert head.count('<span class="cl">') == 5 and 'data-n="5"' in head and 'data-n="6"' not in head
    assert "<summary>Show all 12 lines</summary>" in whole and whole.count('<span class="cl">') == 12


@pytest.mark.django_db
def test_a_failed_read_shows_its_error_as_output(client, viewer, tmp_path):
    session = one_call_session(tmp_path, "Read", {"file_path": "/app/gone.py"}, "File does not exist.")
    read = tool_call(page(client, detail_url(session)), "toolu_1")
    assert 'class="read-file"' not in read and "File does not exist." in read


def test_a_task_card_takes_the_subagents_tokens_tool_uses_and_duration_from_its_result():
    # Claude Code's rule reads them from its result's toolUseResult; the card shows what it says.
    stats_of = readers.format_of("claude_code").subagent_stats
    task = call("Task", {"description": "Draft beads", "prompt": "Draft them."})
    extra = {"tool_use_result": {"totalTokens": 33894, "totalToolUseCount": 9, "totalDurationMs": 38799}}
    spent = {"tokens": 33894, "tool_uses": 9, "duration_ms": 38799}
    assert stats_of(extra) == spent
    assert tools.describe(task, result("done"), {**extra, "subagent_stats": stats_of(extra)}).stats == spent
    odd = {"tool_use_result": {"totalTokens": "many", "totalToolUseCount": True, "totalDurationMs": -1}}
    assert stats_of(odd) == {}
    assert tools.describe(task, result("done"), odd).stats == {}
    assert tools.describe(task, None, {}).stats == {}


@pytest.mark.parametrize(
    ("milliseconds", "text"), [(38799, "38.8 s"), (125_000, "2 min 5 s"), (7_260_000, "2 h 1 min"), ("x", "")]
)
def test_a_subagents_duration_reads_as_a_person_says_it(milliseconds, text):
    assert transcript_tags.duration(milliseconds) == text


@pytest.mark.django_db
def test_a_task_card_shows_what_its_subagent_spent(client, viewer, tmp_path):
    session = index_fixture(
        tmp_path,
        "claude_code",
        "task_subagent_result.jsonl",
        "projects/-home-user-project",
        "11111111-1111-4111-8111-111111111111",
    )
    card = tool_call(page(client, detail_url(session)), "toolu_task1")
    assert (
        '<span class="agent-stats"><span title="33894 tokens">33.9k tokens</span> · <span>9 tool uses</span> · <span>38.8 s</span></span>'
        in card
    )


@pytest.mark.django_db
def test_claude_todowrite_is_a_checklist_with_each_items_state(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_todo")
    assert "1 of 3 done" in html
    assert (
        '<li class="todo completed"><span class="mark" aria-hidden="true">☑</span> <span class="text">Fix the greeting</span>'
        in html
    )
    assert '<li class="todo in_progress">' in html and '<li class="todo pending">' in html
    assert '<span class="state">in progress</span>' in html


@pytest.mark.django_db
def test_claude_task_is_a_card_with_its_prompt_folded_and_result_under_it(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_task")
    assert '<p class="description">Review the greeting module</p>' in html
    assert (
        '<details class="prompt"><summary>Prompt: Read greet.py and list **any** problems.</summary>' in html
    )
    assert "<strong>one</strong> function" in html  # the result, as Markdown


@pytest.mark.django_db
def test_claude_web_calls_show_url_or_query_and_fold_the_result(client, viewer, claude):
    body = whole(client, claude)
    fetch = tool_call(body, "toolu_fetch")
    assert '<code class="url">https://example.com/docs/greeting</code>' in fetch
    assert '<details class="output"><summary>Result: Greetings are spelled hello.' in fetch
    assert '<q class="query">python print greeting</q>' in tool_call(body, "toolu_search")


@pytest.mark.django_db
def test_claude_mcp_call_names_server_and_tool_with_json_pretty(client, viewer, claude):
    html = tool_call(whole(client, claude), "toolu_mcp")
    assert (
        '<strong class="tool-name">create_issue</strong> <span class="n">on server</span> <code class="server">github</code>'
        in html
    )
    assert '<span class="nt">"number"</span>' in html


@pytest.mark.django_db
def test_odd_and_unknown_tools_show_their_arguments_as_json(client, viewer, claude):
    body = whole(client, claude)
    for call_id in ("toolu_odd", "toolu_unknown"):
        html = tool_call(body, call_id)
        assert html.startswith('tool-generic">')
        assert '<details class="arguments" open><summary>Arguments</summary><pre class="highlight">' in html


@pytest.mark.django_db
def test_a_permalink_to_a_generic_call_opens_its_long_arguments(client, viewer, tmp_path):
    call_block = {"type": "tool_use", "id": "t1", "name": "Frobnicate", "input": {"lines": list(range(80))}}
    write_tool_turn(tmp_path / "projects" / "-w" / "s.jsonl", "go", [call_block])
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    assert '<details class="arguments">' in page(client, detail_url(session))
    row = re.search(
        rf'<li id="{transcripts.anchor("a1")}".*?</li>', page(client, detail_url(session), entry="a1"), re.S
    )
    assert '<details class="arguments" open>' in row.group(0)


@pytest.mark.django_db
def test_hostile_values_in_claude_tool_calls_are_shown_as_text(client, viewer, claude):
    body = whole(client, claude)
    assert active_content(body) == []
    edit = tool_call(body, "toolu_xss_edit")
    assert "&lt;img src=x onerror=alert(61)&gt;" in edit
    assert '<span class="sign">-</span>&lt;script&gt;alert(62)&lt;/script&gt;' in edit
    bash = tool_call(body, "toolu_xss_bash")
    assert "echo &#x27;&lt;script&gt;alert(64)&lt;/script&gt;&#x27;" in bash
    assert "&lt;img src=x onerror=alert(65)&gt;" in bash
    assert "&lt;script&gt;alert(66)&lt;/script&gt;" in bash
    write = tool_call(body, "toolu_xss_write")
    assert "&lt;svg onload=alert(67)&gt;" in write and "alert(68)" in write
    todo = tool_call(body, "toolu_xss_todo")
    assert "&lt;script&gt;alert(69)&lt;/script&gt;" in todo and "&lt;script&gt;alert(70)" in todo


@pytest.mark.django_db
def test_openclaw_tools_get_the_same_views(client, viewer, openclaw):
    body = whole(client, openclaw)
    bash = tool_call(body, "call_bash")
    assert '<span class="prompt" aria-hidden="true">$ </span>npm test</pre>' in bash
    assert '<span class="badge exit error">exit 1</span>' in bash
    read = tool_call(body, "call_read")
    assert '<span class="n">lines 5–14</span>' in read
    assert (
        '<span class="ln" data-n="5"></span><span class="k">export</span>' in read
    )  # numbered from its offset
    edit = tool_call(body, "call_edit")
    assert '<pre class="diff numbered">' in edit  # from pi's own diff in the result's details
    assert (
        '<span class="ln" data-n="5"></span><span class="ln" data-n=""></span><span class="sign">-</span>'
        in edit
    )
    assert '<code class="path">src/new.ts</code>' in tool_call(body, "call_write")
    patch = tool_call(body, "call_patch")
    assert patch.count('<div class="file-diff">') == 3
    assert '<span class="action add">add</span> <code class="path">config/extra.json</code>' in patch
    assert '<span class="sign">+</span>  "debug": false' in patch
    assert "$ </span>git status --short</pre>" in tool_call(body, "call_exec")
    assert "&lt;script&gt;alert(72)&lt;/script&gt;" in tool_call(body, "call_xss")
    assert active_content(body) == []


@pytest.mark.django_db
def test_go_agent_tools_get_the_same_views(client, viewer, go):
    body = whole(client, go)
    assert '<code class="path">main.go</code>' in tool_call(body, "call_read")
    edit = tool_call(body, "call_edit")
    assert (
        '<span class="sign">-</span>func handler()' in edit
        and '<span class="sign">+</span>func serve()' in edit
    )
    assert '<code class="path">notes.md</code>' in tool_call(body, "call_write")
    bash = tool_call(body, "call_bash")
    assert "$ </span>go build ./...</pre>" in bash and '<span class="badge exit error">exit 1</span>' in bash
    assert '<span class="sign">+</span>go 1.22' in tool_call(body, "call_str")
    assert "echo &lt;script&gt;alert(73)&lt;/script&gt;" in tool_call(body, "call_xss")
    assert active_content(body) == []


@pytest.mark.django_db
def test_codex_tools_get_the_same_views(client, viewer, codex_session):
    url = detail_url(codex_session)
    body = whole_page(client, url, page(client, url))
    shell = tool_call(body, "call_read_1")
    assert "$ </span>sed -n &#x27;1,20p&#x27; src/app.py</pre>" in shell
    tests_run = tool_call(body, "call_test_1")
    assert "$ </span>python -m pytest -q</pre>" in tests_run
    assert '<span class="badge exit error">exit 1</span>' in tests_run
    assert "$ </span>git diff --stat</pre>" in tool_call(body, "call_local_1")
    for call_id, path in (("call_patch_1", "src/app.py"), ("call_patch_2", "tests/test_app.py")):
        patch = tool_call(body, call_id)  # a custom tool call's text, a function call's input
        assert f'<span class="action update">update</span> <code class="path">{path}</code>' in patch
    assert "<span class=\"sign\">+</span>    return f'Hello, {name}!'" in tool_call(body, "call_patch_1")
    assert (
        '<span class="thinking-label">Thinking</span><div class="md"><p><strong>Looking at greet()</strong>'
        in body
    )
    assert "Fix the failing test" in tool_call(body, "call_plan_1")
    assert "<strong>Context compacted (1)</strong>" in body
    assert "<dt>Tokens</dt><dd>16.8k total: 4.4k in · 420 out · 12.0k cache read</dd>" in body
    assert "<dt>Project</dt>" in body and "/home/user/projects/greeter" in body
    assert "stream disconnected before completion" in body  # an error event stays in sight
    assert active_content(body) == []


@pytest.mark.django_db
def test_codex_sessions_are_listed_as_codex_cli(client, viewer, codex_session):
    body = page(client, reverse("session-list"))
    assert 'src="/static/marks/codex.svg"' in body and "Codex CLI" in body
    assert "Make greet() use an f-string and run the tests." in body


@pytest.mark.django_db
def test_a_call_without_a_result_keeps_its_slot_for_live_updates(client, viewer, tmp_path):
    write_tool_turn(
        tmp_path / "projects" / "-w" / "s.jsonl",
        "go",
        [{"type": "tool_use", "id": "t9", "name": "Bash", "input": {"command": "ls"}}],
    )
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    html = tool_call(page(client, detail_url(Session.objects.get())), "t9")
    assert f'<p class="no-result" id="{transcripts.result_slot("t9")}">No result on this thread yet.' in html
    assert '<input type="hidden" class="pending-call" name="_pending" value="t9">' in html


def test_render_diff_escapes_every_line_and_number():
    html = render.render_diff(
        [tools.DiffLine("add", "<b>", None, 3), tools.DiffLine("hunk", "<i>")], numbered=True
    )
    assert "<b>" not in html and "<i>" not in html
    assert '<span class="ln" data-n="3"></span>' in html


@pytest.mark.django_db
def test_the_markdown_export_shows_an_edit_as_a_diff_and_a_command_as_a_console_line(client, claude, viewer):
    body = page(client, reverse("session-export-md", args=[claude.id]))
    assert "` /home/user/app/greet.py `\n\n```diff\n" in body
    assert '\n-    print("helo")\n+    print("hello")\n' in body
    assert "```console\n$ pytest -q\n```" in body


@pytest.mark.django_db
def test_a_codex_reply_shows_the_usage_its_token_count_line_gave(client, viewer, codex_session):
    url = detail_url(codex_session)
    body = whole_page(client, url, page(client, url))
    thread = body[body.index('id="entry-list"') :]
    assert thread.count('class="usage"') >= 1  # hidden token_count lines lend their usage to the reply
    assert "token_count" not in thread  # the lines themselves stay hidden


def test_an_edit_takes_its_line_numbers_from_a_later_read_of_its_file():
    call = Block(
        "tool_call",
        name="Edit",
        call_id="e",
        arguments={"file_path": "/a.py", "old_string": "x = 1", "new_string": "x = 2"},
    )
    read = {9: "def f():", 10: "    y = 0", 11: "x = 2", 12: "return x"}  # page._later_lines
    view = tools.describe(call, None, {"later_lines": read})
    (diff,) = view.diffs
    assert diff.numbered
    assert [(line.kind, line.old, line.new) for line in diff.lines if line.kind != "hunk"] == [
        ("del", 11, None),
        ("add", None, 11),
    ]
    twice = {**read, 13: "x = 2"}
    assert not tools.describe(call, None, {"later_lines": twice}).diffs[0].numbered  # never a guess


@pytest.mark.django_db
def test_the_page_numbers_an_edit_from_the_read_that_followed_it(client, viewer, tmp_path):
    from tests.claude_files import write_tool_turn

    root = tmp_path / "projects"
    calls = [
        {
            "type": "tool_use",
            "id": "t-edit",
            "name": "Edit",
            "input": {"file_path": "/app/a.py", "old_string": "x = 1", "new_string": "x = 2"},
        },
        {"type": "tool_use", "id": "t-read", "name": "Read", "input": {"file_path": "/app/a.py"}},
    ]
    results = {"t-edit": "The file /app/a.py has been updated.", "t-read": "     1→import os\n     2→x = 2\n"}
    write_tool_turn(root / "-app" / "99999999-9999-4999-8999-999999999999.jsonl", "change x", calls, results)
    from sessionviewer.index import index_roots
    from sessionviewer.roots import RootSpec

    index_roots([RootSpec(root, "claude_code")])
    body = page(client, detail_url(Session.objects.get()))
    edit = tool_call(body, "t-edit")
    assert 'class="diff numbered"' in edit
    assert 'data-n="2"' in edit
