"""What a session changed (transcripts/changes.py): per file, one diff from the text first
read to the text left, or the edits in order when the start is not known; and its page and
JSON twin."""

from __future__ import annotations

import shutil

import pytest
from django.urls import reverse

from sessionviewer import readers, transcripts
from sessionviewer.readers import TOOL_CALL, TOOL_RESULT, Block, Entry
from sessionviewer.transcripts.changes import NO_START, NOT_FOUND, session_changes

from .fixture_files import CLAUDE_PROJECT, FIXTURES, index_fixture
from .opencode_files import fixture, write_storage

START = "def total(items):\n    subtotal = sum(items)\n    return subtotal\n"
READ_OUTPUT = "     1→def total(items):\n     2→    subtotal = sum(items)\n     3→    return subtotal\n"


def turn(call_id: str, name: str, arguments, output: str, is_error: bool = False) -> list[Entry]:
    """A call and its result, as two entries."""
    return [
        Entry(
            f"call-{call_id}",
            None,
            "message",
            "assistant",
            blocks=[Block(TOOL_CALL, name=name, call_id=call_id, arguments=arguments)],
        ),
        Entry(
            f"result-{call_id}",
            None,
            "message",
            "user",
            blocks=[Block(TOOL_RESULT, text=output, call_id=call_id, is_error=is_error)],
        ),
    ]


def read(path: str = "/w/cart.py", output: str = READ_OUTPUT) -> list[Entry]:
    return turn(f"read-{path}", "Read", {"file_path": path}, output)


def edit(call_id: str, old: str, new: str, path: str = "/w/cart.py", **more) -> list[Entry]:
    return turn(call_id, "Edit", {"file_path": path, "old_string": old, "new_string": new, **more}, "ok")


def lines_of(diff) -> list[str]:
    return [{"add": "+", "del": "-", "ctx": " "}.get(line.kind, "") + line.text for line in diff.lines]


# --- Replay ---------------------------------------------------------------------------------


def test_edits_after_a_whole_read_are_one_diff_from_the_read_text():
    entries = (
        read()
        + edit("e1", "return subtotal", "return subtotal - 10")
        + edit("e2", "def total(items):", "def total(items, discount=0):")
    )
    [changed] = session_changes(entries, "claude_code")
    assert changed.known and changed.start == START
    assert (
        changed.end == "def total(items, discount=0):\n    subtotal = sum(items)\n    return subtotal - 10\n"
    )
    assert (changed.added, changed.removed) == (2, 2)
    [hunk] = changed.hunks
    assert hunk.entry_ids == ["call-e1", "call-e2"]  # the calls, in the order they were made
    assert hunk.labels == ["1. Edit", "2. Edit"]


def test_hunks_far_apart_name_only_the_call_that_made_each():
    text = "".join(f"line {n}\n" for n in range(1, 30))
    output = "".join(f"{n:6}→line {n}\n" for n in range(1, 30))
    entries = (
        read(output=output)
        + edit("top", "line 2\n", "line two\n")
        + edit("bottom", "line 28\n", "line 28b\n")
    )
    [changed] = session_changes(entries, "claude_code")
    assert changed.start == text
    assert [h.entry_ids for h in changed.hunks] == [["call-top"], ["call-bottom"]]
    assert lines_of(changed.hunks[0].diff)[0].startswith("@@ -1,5 +1,5 @@")


def test_an_edit_before_any_read_is_shown_in_order_with_the_start_not_known():
    entries = edit("e1", "a", "b") + read() + edit("e2", "return subtotal", "return 0")
    [changed] = session_changes(entries, "claude_code")
    assert not changed.known and changed.unknown_because == NO_START
    assert [c.entry_id for c in changed.changes] == ["call-e1", "call-e2"]
    assert (changed.added, changed.removed) == (2, 2)
    assert changed.to_dict()["changes"][1]["lines"][0] == {
        "kind": "del",
        "text": "return subtotal",
        "old": None,
        "new": None,
    }


def test_an_edit_whose_old_text_is_not_in_the_replayed_file_makes_the_start_not_known():
    entries = read() + edit("e1", "return nothing", "return 0")
    [changed] = session_changes(entries, "claude_code")
    assert not changed.known and changed.unknown_because == NOT_FOUND
    assert "hunks" not in changed.to_dict()


def test_a_partial_read_gives_no_start():
    entries = read(output="    10→    return subtotal\n") + edit("e1", "return subtotal", "return 0")
    [changed] = session_changes(entries, "claude_code")
    assert changed.unknown_because == NO_START


def test_a_failed_edit_is_left_out_of_the_replay_and_counted_apart():
    entries = read() + turn(
        "bad",
        "Edit",
        {"file_path": "/w/cart.py", "old_string": "nope", "new_string": "x"},
        "String not found",
        True,
    )
    entries += edit("e1", "return subtotal", "return 0")
    [changed] = session_changes(entries, "claude_code")
    assert changed.known and changed.failed == ["call-bad"]
    assert [c.entry_id for c in changed.changes] == ["call-e1"]
    assert changed.to_dict()["failed_calls"] == ["call-bad"]


def test_a_write_that_creates_a_file_then_an_edit_is_one_diff_from_empty():
    entries = turn(
        "w",
        "Write",
        {"file_path": "/w/new.py", "content": "a = 1\nb = 2\n"},
        "File created successfully at: /w/new.py",
    )
    entries += edit("e", "b = 2", "b = 3", path="/w/new.py")
    [changed] = session_changes(entries, "claude_code")
    assert changed.created and changed.start == "" and changed.end == "a = 1\nb = 3\n"
    assert lines_of(changed.hunks[0].diff)[1:] == ["+a = 1", "+b = 3"]
    assert changed.hunks[0].entry_ids == ["call-w", "call-e"]


def test_a_write_over_a_file_never_read_is_not_known_from_the_start():
    entries = turn(
        "w", "Write", {"file_path": "/w/old.py", "content": "x\n"}, "The file /w/old.py has been updated."
    )
    [changed] = session_changes(entries, "claude_code")
    assert not changed.known and not changed.created


def test_replace_all_replaces_every_occurrence():
    entries = read() + edit("e", "subtotal", "s", replace_all=True)
    [changed] = session_changes(entries, "claude_code")
    assert changed.end == "def total(items):\n    s = sum(items)\n    return s\n"


def test_a_multiedit_applies_its_edits_in_order():
    arguments = {
        "file_path": "/w/cart.py",
        "edits": [
            {"old_string": "subtotal =", "new_string": "t ="},
            {"old_string": "return subtotal", "new_string": "return t"},
        ],
    }
    entries = read() + turn("m", "MultiEdit", arguments, "ok")
    [changed] = session_changes(entries, "claude_code")
    assert changed.end == "def total(items):\n    t = sum(items)\n    return t\n"


def patch(text: str) -> list[Entry]:
    """An apply_patch call; the tests read the file first with a Claude Code Read (Codex reads
    through the shell, so its patches alone never know the start)."""
    return turn("p", "apply_patch", {"input": text}, "Done")


def test_a_patch_adds_updates_moves_and_deletes_files():
    text = (
        "*** Begin Patch\n*** Add File: new.py\n+print(1)\n"
        "*** Update File: cart.py\n*** Move to: shop/cart.py\n@@\n def total(items):\n-    subtotal = sum(items)\n+    subtotal = sum(items) or 0\n"
        "*** Delete File: old.py\n*** End Patch\n"
    )
    entries = read("cart.py") + patch(text)
    files = {f.path: f for f in session_changes(entries, "claude_code")}
    assert files["new.py"].created and files["new.py"].end == "print(1)\n"
    assert files["cart.py"].known and files["cart.py"].moved_to == "shop/cart.py"
    assert files["cart.py"].end == "def total(items):\n    subtotal = sum(items) or 0\n    return subtotal\n"
    assert (files["cart.py"].added, files["cart.py"].removed) == (1, 1)
    assert files["old.py"].deleted and not files["old.py"].known


def test_a_patch_hunk_not_in_the_file_makes_the_start_not_known():
    entries = read("cart.py") + patch(
        "*** Begin Patch\n*** Update File: cart.py\n@@\n-nothing here\n+x\n*** End Patch\n"
    )
    [changed] = session_changes(entries, "claude_code")
    assert changed.unknown_because == NOT_FOUND


def test_a_call_with_unreadable_arguments_is_listed_but_makes_the_start_not_known():
    entries = read() + turn("n", "NotebookEdit", {"notebook_path": "/w/cart.py", "new_source": "x"}, "ok")
    [changed] = session_changes(entries, "claude_code")
    assert not changed.known and [c.entry_id for c in changed.changes] == ["call-n"]


# --- Every format that records edits, from its fixtures ---------------------------------------


def fixture_changes(fmt: str, name: str) -> dict:
    found = readers.read_session(FIXTURES / fmt / name, fmt)
    return {f.path: f for f in session_changes(found.entries, fmt)}


def test_claude_codes_edits_and_writes():
    files = fixture_changes("claude_code", "tool_views.jsonl")
    assert set(files) >= {"/home/user/app/greet.py", "/home/user/app/config.toml", "/home/user/app/run.py"}
    run = files["/home/user/app/run.py"]
    assert run.created and run.added == 8 and run.hunks[0].entry_ids == ["a-write"]
    config = files["/home/user/app/config.toml"]
    assert not config.known and len(config.changes) == 2  # a MultiEdit's two edits, in order


def test_codex_patches():
    files = fixture_changes("codex", "tools_and_compaction.jsonl")
    assert set(files) == {"src/app.py", "tests/test_app.py"}
    assert all(f.added == 1 and f.removed == 1 for f in files.values())


def test_go_agents_edits_writes_and_editor_tool():
    files = fixture_changes("go_agent", "tool_views.jsonl")
    assert set(files) == {"main.go", "notes.md", "go.mod"}
    assert files["notes.md"].added == 3


def test_openclaws_edits_writes_and_patches():
    files = fixture_changes("openclaw", "tool_views.jsonl")
    assert {"src/app.ts", "src/new.ts", "config/app.json", "config/extra.json", "config/old.json"} <= set(
        files
    )
    assert files["config/extra.json"].created and files["config/old.json"].deleted


def test_opencodes_camel_case_edit(tmp_path):
    write_storage(tmp_path, fixture("tool_calls.json"))
    from sessionviewer.readers import opencode

    [session] = [
        s
        for s in opencode.discover(tmp_path)
        if isinstance(s, readers.SessionFile) and s.key.endswith("/ses_01tools")
    ]
    files = {
        f.path: f for f in session_changes(readers.read_session(session.path, "opencode").entries, "opencode")
    }
    cart = files["/home/alice/shop/cart.py"]
    assert [c.tool for c in cart.changes] == ["edit"] and (cart.added, cart.removed) == (1, 1)


def test_pis_whole_read_edit_write_and_a_read_it_cut():
    files = fixture_changes("pi", "edits_and_writes.jsonl")
    assert list(files) == ["src/cart.ts", "CHANGELOG.md", "src/tax.ts"]
    cart = files["src/cart.ts"]
    assert cart.known and cart.start.endswith("  return sum;\n}\n")
    assert "  return Math.round(sum * 100) / 100;\n" in cart.end
    assert [h.entry_ids for h in cart.hunks] == [["p0000004"]] and (cart.added, cart.removed) == (1, 1)
    assert cart.failed == ["p0000012"]  # its old text was not in the file
    # pi's write says how many bytes it wrote, never whether the file was new.
    changelog = files["CHANGELOG.md"]
    assert not changelog.known and [c.tool for c in changelog.changes] == ["write"] and changelog.added == 3
    # The read gave two lines and said more followed ("[3 more lines in file. ...]").
    assert not files["src/tax.ts"].known and files["src/tax.ts"].unknown_because == NO_START


GEMINI_EDITS = "session-2026-03-06T15-40-7e6d5c4b.jsonl"


def gemini_id(n: int) -> str:
    return f"e{n:07}-0000-4000-8000-000000000032"


def test_gemini_clis_replace_and_write_file_after_read_file():
    files = fixture_changes("gemini_cli", GEMINI_EDITS)
    greet = files["/home/user/greet/src/greet.py"]
    assert greet.known and greet.start.startswith('def greet(name):\n    return "Hello, " + name\n')
    # allow_multiple: every greet( became welcome(.
    assert (
        greet.end
        == 'def welcome(name):\n    return GREETING + name\n\n\ndef main():\n    print(welcome("world"))\n'
    )
    assert [h.labels for h in greet.hunks] == [["1. replace", "2. replace"]]
    assert greet.failed == [gemini_id(8)]  # status "error"
    config = files["/home/user/greet/src/config.py"]
    assert config.created and config.start == "" and config.end == 'GREETING = "Hello, "\n'


def test_gemini_clis_read_file_it_cut_gives_no_start():
    readme = fixture_changes("gemini_cli", GEMINI_EDITS)["/home/user/greet/docs/usage.md"]
    assert not readme.known and [c.entry_id for c in readme.changes] == [gemini_id(7)]


def test_gemini_clis_older_argument_names_absolute_path_and_expected_replacements():
    log = fixture_changes("gemini_cli", GEMINI_EDITS)["/home/user/greet/src/log.py"]
    assert (
        log.known and log.end == 'import logging\n\nlog = logging.getLogger("welcome")\nlog.info("welcome")\n'
    )
    assert (log.added, log.removed) == (2, 2)


# --- The page and its JSON twin ----------------------------------------------------------------


@pytest.fixture
def edited(tmp_path):
    return index_fixture(tmp_path, "claude_code", "tool_views.jsonl", CLAUDE_PROJECT, "s1")


@pytest.mark.django_db
def test_the_page_lists_each_file_with_its_counts_and_links_hunks_to_their_calls(client, viewer, edited):
    body = client.get(reverse("session-changes", args=[edited.id])).content.decode()
    assert (
        '<code class="path">/home/user/app/run.py</code> <span class="stat"><span class="added">+8</span> <span class="removed">−0</span></span> <span class="badge">new</span>'
        in body
    )
    assert f'href="/sessions/{edited.id}/?entry=a-write#{transcripts.anchor("a-write")}"' in body
    assert "start not known" in body


@pytest.mark.django_db
def test_the_page_escapes_paths_and_text_from_the_session(client, viewer, edited):
    body = client.get(reverse("session-changes", args=[edited.id])).content.decode()
    assert "<img src=x" not in body and "<svg onload" not in body and "<script>alert" not in body
    assert "&lt;img src=x onerror=alert(61)&gt;" in body


@pytest.mark.django_db
def test_the_json_twin_gives_the_same_files(client, viewer, edited):
    data = client.get(reverse("api-session-changes", args=[edited.id])).json()
    files = {f["path"]: f for f in data["files"]}
    assert files["/home/user/app/run.py"]["hunks"][0]["entry_ids"] == ["a-write"]
    assert files["/home/user/app/run.py"]["added"] == 8
    assert files["/home/user/app/greet.py"]["start_known"] is False
    assert files["/home/user/app/greet.py"]["unknown_because"] == NO_START


@pytest.mark.django_db
def test_the_transcript_header_links_the_changes_page(client, viewer, edited):
    body = client.get(reverse("session-detail", args=[edited.id])).content.decode()
    assert f'href="{reverse("session-changes", args=[edited.id])}">Changes</a>' in body


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["session-changes", "api-session-changes"])
def test_an_unknown_leaf_is_a_404(client, viewer, edited, name):
    assert client.get(reverse(name, args=[edited.id]), {"leaf": "nope"}).status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["session-changes", "api-session-changes"])
def test_an_unknown_session_is_a_404(client, viewer, name):
    assert client.get(reverse(name, args=[999])).status_code == 404


@pytest.mark.django_db
def test_anonymous_people_are_sent_to_log_in_and_the_api_answers_401(client, edited):
    page = client.get(reverse("session-changes", args=[edited.id]))
    assert page.status_code == 302 and page["Location"].startswith(reverse("login"))
    assert client.get(reverse("api-session-changes", args=[edited.id])).status_code == 401


@pytest.mark.django_db
def test_someone_without_the_view_permission_is_refused(client, edited):
    from django.contrib.auth.models import User

    client.force_login(User.objects.create_user("nobody"))
    assert client.get(reverse("session-changes", args=[edited.id])).status_code == 403
    assert client.get(reverse("api-session-changes", args=[edited.id])).status_code == 403


@pytest.mark.django_db
@pytest.mark.usefixtures("demo")
def test_every_demo_sessions_changes_page_renders(client, viewer):
    # The demo's edits once made a hunk name a line of the start as its call (a 500).
    from sessionviewer.models import Session

    for session in Session.objects.all():
        assert client.get(reverse("session-changes", args=[session.id])).status_code == 200, session.path


@pytest.mark.django_db
def test_a_long_sessions_thread_read_from_its_snapshot_gives_the_same_changes(
    client, viewer, tmp_path, monkeypatch
):
    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec
    from sessionviewer.transcripts import store

    session = index_fixture(tmp_path / "a", "claude_code", "tool_views.jsonl", CLAUDE_PROJECT, "s1")
    url = reverse("api-session-changes", args=[session.id])
    from_entries = client.get(url).json()["files"]
    monkeypatch.setattr(store, "PREPARE_FROM", 1)  # built as a long session's is: lazy items
    monkeypatch.setattr(store, "WALK_STRETCH", 3)  # several stretches
    Session.objects.all().delete()
    transcripts.clear_cache()
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    index_roots([RootSpec(tmp_path / "b" / CLAUDE_PROJECT.split("/")[0], "claude_code")])
    again = Session.objects.get()
    assert isinstance(transcripts.transcript(again).items, store.LazyItems)
    assert client.get(reverse("api-session-changes", args=[again.id])).json()["files"] == from_entries


# pi and Gemini CLI: (fixture, folder, file stem) as each format's discovery expects them.
INDEXED = {
    "pi": ("edits_and_writes.jsonl", "sessions/--home-user-shop--", "2026-01-07T14-00-00-000Z_5d5d5d5d"),
    "gemini_cli": (GEMINI_EDITS, "gemini/0ddba11c/chats", GEMINI_EDITS.removesuffix(".jsonl")),
}


@pytest.mark.django_db
def test_the_page_shows_pis_changes(client, viewer, tmp_path):
    session = index_fixture(tmp_path, "pi", *INDEXED["pi"])
    body = client.get(reverse("session-changes", args=[session.id])).content.decode()
    assert (
        '<code class="path">src/cart.ts</code> <span class="stat"><span class="added">+1</span> <span class="removed">−1</span></span>'
        in body
    )
    assert f'href="/sessions/{session.id}/?entry=p0000004#{transcripts.anchor("p0000004")}"' in body
    tax = body[body.index("src/tax.ts</code>") :]
    assert "start not known" in tax[: tax.index("</details>")]


@pytest.mark.django_db
def test_the_page_shows_gemini_clis_changes(client, viewer, tmp_path):
    session = index_fixture(tmp_path, "gemini_cli", *INDEXED["gemini_cli"])
    body = client.get(reverse("session-changes", args=[session.id])).content.decode()
    assert (
        '<code class="path">/home/user/greet/src/config.py</code> <span class="stat"><span class="added">+1</span> <span class="removed">−0</span></span> <span class="badge">new</span>'
        in body
    )
    anchor = transcripts.anchor(gemini_id(4))
    assert f'href="/sessions/{session.id}/?entry={gemini_id(4)}#{anchor}"' in body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fmt", "expected"),
    [
        ("pi", {"src/cart.ts": (1, 1, True), "CHANGELOG.md": (3, 0, False), "src/tax.ts": (1, 1, False)}),
        (
            "gemini_cli",
            {
                "/home/user/greet/src/greet.py": (3, 3, True),
                "/home/user/greet/src/config.py": (1, 0, True),
                "/home/user/greet/docs/usage.md": (1, 1, False),
                "/home/user/greet/src/log.py": (2, 2, True),
            },
        ),
    ],
)
def test_the_json_twin_gives_pis_and_gemini_clis_files(client, viewer, tmp_path, fmt, expected):
    session = index_fixture(tmp_path, fmt, *INDEXED[fmt])
    files = client.get(reverse("api-session-changes", args=[session.id])).json()["files"]
    assert {f["path"]: (f["added"], f["removed"], f["start_known"]) for f in files} == expected
    failed = {f["path"]: f["failed_calls"] for f in files if f["failed_calls"]}
    assert failed == (
        {"src/cart.ts": ["p0000012"]} if fmt == "pi" else {"/home/user/greet/src/greet.py": [gemini_id(8)]}
    )


@pytest.mark.django_db
def test_a_deleted_file_of_unknown_start_says_it_was_deleted(client, viewer, tmp_path):
    session = index_fixture(tmp_path, "openclaw", "tool_views.jsonl", "agents/main/sessions", "s1")
    body = client.get(reverse("session-changes", args=[session.id])).content.decode()
    old = body[body.index("config/old.json</code>") :]
    assert '<span class="badge">deleted</span>' in old[:400]
    assert "The file was deleted." in old[: old.index("</details>")]
