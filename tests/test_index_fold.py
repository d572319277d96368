"""Folding entries into their session (index/fold.py): titles, counts, tokens."""

import pytest

from sessionviewer import readers
from sessionviewer.index import fold
from sessionviewer.readers import claude_code
from sessionviewer.templatetags.transcript import harness


def claude_prompt(text: str) -> readers.Entry:
    """A user line as the Claude Code reader reads it."""
    line = {"type": "user", "uuid": "u", "parentUuid": None, "message": {"role": "user", "content": text}}
    return claude_code.parse_line(line, 1)


def first_prompt_of(entry: readers.Entry) -> str:
    state = fold.SessionState(format="claude_code")
    fold.fold_entries(state, [entry])
    return state.first_prompt


TYPED_LINES = [
    "<command-name>/mcp</command-name>\n<command-message>mcp</command-message>\n<command-args></command-args>",
    "<bash-input>ls -la</bash-input>",
    "  <bash-input>git status</bash-input>",
    "<command-palette> opens twice when I press Ctrl-K, why?",  # typed by a person: tags in the prose
    "<command-message>review</command-message>",  # no command name: nothing the page shows as one
    "Why does the build fail?",
]


@pytest.mark.parametrize("text", TYPED_LINES)
def test_a_user_line_is_a_title_exactly_when_the_page_shows_it_as_typed(text):
    entry = claude_prompt(text)
    shown_as_harness = harness(entry, "claude_code") is not None
    assert (first_prompt_of(entry) == "") == shown_as_harness


def test_a_prompt_that_starts_with_a_tag_of_its_own_titles_the_session():
    text = "<command-palette> opens twice when I press Ctrl-K, why?"
    assert first_prompt_of(claude_prompt(text)) == text


@pytest.mark.parametrize(
    "text", ["[Request interrupted by user]", "[Request interrupted by user for tool use]"]
)
def test_an_interruption_neither_titles_a_session_nor_hides(text):
    from sessionviewer.transcripts import layout

    entry = claude_prompt(text)
    assert first_prompt_of(entry) == ""
    assert harness(entry, "claude_code")["kind"] == "interrupt"
    assert not layout.is_noise(entry, 0, readers.format_of("claude_code"))


def test_every_branch_a_session_named_is_kept_in_order_once():
    lines = [
        {"type": "user", "uuid": f"u{n}", "gitBranch": branch, "message": {"role": "user", "content": "go"}}
        for n, branch in enumerate(["main", "main", "fix/login", "main", "fix/login"])
    ]
    state = fold.SessionState(format="claude_code")
    fold.fold_entries(state, [claude_code.parse_line(line, n) for n, line in enumerate(lines, 1)])
    assert state.git_branches == ["main", "fix/login"]
    assert state.git_branch == "fix/login"


def test_unknown_entries_are_counted_by_type_across_passes():
    unknown = claude_code.parse_line({"type": "brand-new-record", "uuid": "x"}, 1)
    untyped = claude_code.parse_line({"silly": "this"}, 2)
    state = fold.SessionState(format="claude_code")
    fold.fold_entries(state, [unknown, claude_prompt("hi")])
    fold.fold_entries(state, [unknown, untyped])  # an append: the counts add up
    assert state.extra["unknown_entries"] == {"brand-new-record": 2, "(no type)": 1}
    assert state.problem_count == 0


@pytest.mark.parametrize(
    ("path", "key"),
    [
        ("/home/dev/work/shop", "~/work/shop"),
        ("/Users/dev/work/shop", "~/work/shop"),
        ("/root/shop", "~/shop"),
        ("/home/dev", "~"),
        ("C:\\Users\\dev\\work\\shop", "~/work/shop"),
        ("c:/Users/dev/shop", "~/shop"),
        ("/srv/shop", "/srv/shop"),
        ("/home", "/home"),
        ("/homes/dev/shop", "/homes/dev/shop"),
        ("/srv/home/dev/shop", "/srv/home/dev/shop"),
        ("/rootless/shop", "/rootless/shop"),
    ],
)
def test_a_project_is_keyed_by_its_path_with_the_users_home_folded(path, key):
    assert fold.fold_home(path) == key


def test_a_long_title_is_cut_after_its_last_whole_word_with_an_ellipsis():
    text = "Refactor the cart " + "module " * 40
    title = fold.title_of(text)
    assert len(title) <= fold.TITLE_LENGTH
    assert title.endswith("module…")
    assert " ".join(text.split()).startswith(title[:-1])


def test_a_title_that_fits_is_kept_whole():
    text = "x" * (fold.TITLE_LENGTH - 10) + " done"
    assert fold.title_of(text) == text


def test_a_title_without_a_word_boundary_late_enough_is_cut_inside_the_word():
    text = "パス" * 150  # no spaces: a language written without them
    title = fold.title_of(text)
    assert title == text[: fold.TITLE_LENGTH - 1] + "…"


@pytest.mark.parametrize("limit", [10, 11, 12])
def test_cut_title_never_leaves_half_a_word(limit):
    assert fold.cut_title("alpha beta gamma", limit) in ("alpha…", "alpha beta…")
