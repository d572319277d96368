"""Memory over time: one JID's timeline of memory changes and every JID's, with their JSON
twins, on memory trees built here. The agent's turns are history.jsonl lines, and its
memory writes files given the mtime they would have had during the turn."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.urls import reverse

from sessionviewer import memory_timeline
from sessionviewer import workspaces as ws
from sessionviewer.models import Entry, MemorySnapshot
from sessionviewer.templatetags.workspace_tags import diff_lines

from .memory_turns import ALICE, DAY, ROOM, append, at, direct_turn, fact, index, message, timeline, write
from .users import NOBODY, make_user

pytestmark = pytest.mark.django_db


def changes_of(root: Path, jid: str) -> list[memory_timeline.Change]:
    machine = settings.SESSIONVIEWER_MACHINE
    keys = memory_timeline.change_keys(str(root), jid, memory_timeline.Filters(), machine=machine)
    changes = memory_timeline.load_changes([key for _, key in keys])
    memory_timeline.link_all(changes, str(root), machine=machine)
    return changes


# Linking by time


def test_a_change_in_a_direct_chat_links_to_the_turn_whose_reply_came_next(tree):
    direct_turn(tree, 1, at(10, 0), fact("lang", "Rust", at(10, 0, 2)))
    index(tree)
    change = changes_of(tree, ALICE)[0]
    assert (change.filename, change.who) == ("knowledge.jsonl", "outside")
    turn = change.link.turn
    assert (turn.user_entry_id, turn.reply_entry_id, turn.user_text) == ("in-1", "out-1", "question 1")
    assert change.link.gap_seconds == pytest.approx(2.01)
    assert change.link.note.startswith("linked by time")


def test_a_change_in_a_room_links_to_the_message_stored_before_it_and_the_reply_after(tree):
    history = tree / ROOM / "history.jsonl"
    append(history, message("user", "@bot remember the deploy day", at(10, 0), "m1", "bob@muc"))
    write(tree / ROOM / "knowledge.jsonl", fact("deploy", "Fridays", at(10, 0, 3)), at(10, 0, 3))
    append(history, message("user", "unrelated chatter", at(10, 0, 4), "m2", "carol@muc"))
    append(history, message("assistant", "Noted.", at(10, 0, 6), "r1"))
    index(tree)
    change = changes_of(tree, ROOM)[0]
    # The last user message before the reply is the one it answers in a room too: the
    # agent's reply follows its LLM call on the message that mentioned it.
    assert change.link.turn.reply_entry_id == "r1"
    assert change.link.gap_seconds == pytest.approx(3)


def test_a_change_with_no_turn_after_it_says_so(tree):
    direct_turn(tree, 1, at(10, 0), None)
    write(tree / ALICE / "memory.md", "Likes coffee now.\n", at(11, 0))
    index(tree)
    change = changes_of(tree, ALICE)[0]
    assert change.link.turn is None
    assert change.link.note == "no turn: no reply was written after this change"


def test_a_change_long_before_the_next_reply_is_not_claimed_by_it(tree):
    write(tree / ALICE / "memory.md", "Edited by hand.\n", at(10, 0))
    direct_turn(tree, 1, at(12, 0), None)
    index(tree)
    link = changes_of(tree, ALICE)[0].link
    assert link.turn is None
    assert link.gap_seconds == pytest.approx(2 * 3600 + 4.01)


def test_a_change_before_any_turn_of_its_jid_has_no_turn(tree):
    write(tree / ALICE / "memory.md", "Set up before the first message.\n", at(9, 30))
    index(tree)
    link = changes_of(tree, ALICE)[0].link
    assert link.turn is None


def test_a_change_links_only_to_its_own_jids_turns(tree):
    append(tree / ROOM / "history.jsonl", message("assistant", "room reply", at(10, 0, 5), "r1"))
    write(tree / ALICE / "memory.md", "Alice only.\n", at(10, 0))
    index(tree)
    assert changes_of(tree, ALICE)[0].link.turn is None


def test_editor_changes_are_not_linked_to_a_turn(tree, client, editor):
    path = tree / ALICE / "memory.md"
    url = reverse("workspace-save", args=[0, ALICE, "memory.md"])
    client.post(url, {"text": "Edited.", "version": ws.file_version(path)})
    change = changes_of(tree, ALICE)[0]
    assert (change.who, change.who_label, change.link) == ("editor", "edith", None)


# What each change shows


def test_knowledge_changes_show_the_facts_added_and_removed(tree):
    direct_turn(tree, 1, at(10, 0), fact("lang", "Rust", at(10, 0)) + fact("tz", "UTC", at(10, 0)))
    index(tree)
    knowledge = tree / ALICE / "knowledge.jsonl"
    lines = knowledge.read_bytes().splitlines(keepends=True)
    write(knowledge, lines[0] + fact("tz", "Europe/Paris", at(10, 5)), at(10, 5, 2))
    index(tree)
    change = changes_of(tree, ALICE)[0]
    assert [(f.key, f.content) for f in change.added] == [("tz", "Europe/Paris")]
    assert [(f.key, f.content) for f in change.removed] == [("tz", "UTC")]


def test_text_changes_show_a_diff(tree):
    write(tree / ALICE / "memory.md", "Likes coffee.\n", at(10, 0))
    index(tree)
    diff = changes_of(tree, ALICE)[0].diff()
    assert "-Likes tea." in diff and "+Likes coffee." in diff


def test_the_timeline_is_newest_first_across_files(tree):
    write(tree / ALICE / "memory.md", "one\n", at(10, 0))
    index(tree)
    write(tree / ALICE / "user.md", "two\n", at(10, 5))
    index(tree)
    assert [c.filename for c in changes_of(tree, ALICE)] == ["user.md", "memory.md", "memory.md"]


# The page and its JSON twin


def test_the_json_twin_carries_the_linked_turns_session_and_entry_ids(client, tree, editor):
    direct_turn(tree, 1, at(10, 0), fact("lang", "Rust", at(10, 0)))
    index(tree)
    data = timeline(client)
    change = data["changes"][0]
    reply = Entry.objects.get(entry_id="out-1")
    turn = change["link"]["turn"]
    assert (turn["session"], turn["user_entry"], turn["reply_entry"]) == (reply.session_id, "in-1", "out-1")
    assert change["link"]["method"] == "time"
    assert change["added"][0]["key"] == "lang"
    assert turn["url"].startswith(reverse("session-detail", args=[reply.session_id]) + "?entry=in-1#")


def test_the_page_shows_the_change_its_turn_and_a_link_into_the_transcript(client, tree, editor):
    direct_turn(tree, 1, at(10, 0), fact("lang", "Rust", at(10, 0)))
    index(tree)
    page = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    assert "Linked by time: the file changed 2.0 s before the reply was written." in page
    assert "question 1" in page and "Open this turn in the transcript" in page
    assert 'class="fact-added"' in page


@pytest.mark.parametrize(
    ("params", "files"),
    [
        ({"file": "memory.md"}, ["memory.md", "memory.md"]),
        ({"who": "outside"}, ["user.md", "memory.md"]),
        ({"since": "2025-06-02", "until": "2025-06-02"}, ["user.md", "memory.md"]),
        ({"until": "2025-06-01"}, ["memory.md"]),
    ],
)
def test_the_timeline_filters_by_file_who_and_date(client, tree, editor, params, files):
    write(tree / ALICE / "memory.md", "one\n", at(10, 0))
    write(tree / ALICE / "user.md", "two\n", at(10, 5))
    index(tree)
    MemorySnapshot.objects.filter(who="first").update(changed_at=DAY.replace(day=1))
    assert [c["file"] for c in timeline(client, **params)["changes"]] == files


@pytest.mark.parametrize(("name", "value"), [("who", "agent"), ("since", "2025-13-01"), ("_page", "0")])
def test_a_bad_filter_is_a_400_naming_it(client, tree, editor, name, value):
    for url in (
        reverse("workspace-memory-timeline", args=[0, ALICE]),
        reverse("api-workspace-memory-changes"),
    ):
        response = client.get(url, {name: value})
        assert response.status_code == 400
        assert name in response.content.decode()


def test_an_htmx_request_gets_the_timeline_alone(client, tree, editor):
    response = client.get(reverse("workspace-memory-timeline", args=[0, ALICE]), HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert body.lstrip().startswith('<section id="timeline">')
    assert "<form" not in body


def test_the_jid_page_links_to_its_timeline(client, tree, editor):
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert reverse("workspace-memory-timeline", args=[0, ALICE]) in page


def test_every_jids_changes_list_each_jid_and_narrow_to_one(client, tree, editor):
    write(tree / ALICE / "memory.md", "one\n", at(10, 0))
    write(tree / ROOM / "memory.md", "room notes\n", at(10, 1))
    index(tree)
    url = reverse("api-workspace-memory-changes")
    data = orjson.loads(client.get(url, {"who": "outside"}).content)
    assert [c["jid"] for c in data["changes"]] == [ROOM, ALICE]
    data = orjson.loads(client.get(url, {"who": "outside", "jid": ALICE}).content)
    assert [c["jid"] for c in data["changes"]] == [ALICE]
    page = client.get(reverse("workspace-memory-changes")).content.decode()
    assert reverse("workspace-memory-timeline", args=[0, ROOM]) in page


# The global persona files: part of every JID's prompt, so in every JID's timeline


def global_and_own_changes(tree: Path) -> None:
    write(tree / "instructions.md", "Answer in French.\n", at(10, 0))
    write(tree / ALICE / "memory.md", "one\n", at(10, 5))
    index(tree)


def test_a_jids_timeline_shows_changes_to_the_global_persona_files_marked_global(client, tree, editor):
    global_and_own_changes(tree)
    data = timeline(client, who="outside")
    assert [(c["jid"], c["file"], c["global"]) for c in data["changes"]] == [
        (ALICE, "memory.md", False),
        ("", "instructions.md", True),
    ]
    page = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    assert '<span class="badge global"' in page
    assert "+Answer in French." in page


@pytest.mark.parametrize(
    ("params", "files"),
    [
        ({"scope": "own"}, ["memory.md"]),
        ({"scope": "global"}, ["instructions.md"]),
        ({"file": "instructions.md"}, ["instructions.md"]),
        ({"who": "editor"}, []),
    ],
)
def test_global_changes_can_be_hidden_and_the_other_filters_still_apply(client, tree, editor, params, files):
    global_and_own_changes(tree)
    changes = timeline(client, **{"who": "outside", **params})["changes"]
    assert [c["file"] for c in changes] == files


def test_a_global_change_in_a_jids_timeline_links_to_that_jids_memory_as_of_it(client, tree, editor):
    global_and_own_changes(tree)
    [change] = timeline(client, scope="global", who="outside")["changes"]
    assert change["as_of_url"].startswith(reverse("workspace-memory-as-of", args=[0, ALICE]) + "?at=")
    everyone = orjson.loads(client.get(reverse("api-workspace-memory-changes"), {"scope": "global"}).content)
    assert [c["as_of_url"] for c in everyone["changes"]] == [None]


def test_a_jids_timeline_does_not_show_another_jids_changes(client, tree, editor):
    write(tree / ROOM / "memory.md", "room notes\n", at(10, 1))
    global_and_own_changes(tree)
    assert ROOM not in [c["jid"] for c in timeline(client)["changes"]]


def test_the_scope_filter_rejects_an_unknown_value(client, tree, editor):
    response = client.get(reverse("workspace-memory-timeline", args=[0, ALICE]), {"scope": "mine"})
    assert response.status_code == 400
    assert "scope" in response.content.decode()


def test_forget_leaves_a_marker_without_content_in_the_timeline(client, tree, editor):
    write(tree / ALICE / "memory.md", "a secret\n", at(10, 0))
    index(tree)
    version = ws.forget_plan(tree / ALICE).version
    client.post(reverse("workspace-forget-run", args=[0, ALICE]), {"version": version})
    data = timeline(client)
    memory_changes = [c for c in data["changes"] if c["file"] == "memory.md"]
    assert [(c["who"], c["diff"]) for c in memory_changes] == [("forget", "")]
    assert b"a secret" not in client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content


def test_someone_who_may_not_read_workspaces_gets_no_timeline(client, tree):
    client.force_login(make_user(NOBODY))
    assert client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).status_code == 403
    assert client.get(reverse("api-workspace-memory-timeline", args=[0, ALICE])).status_code == 403
    assert client.get(reverse("api-workspace-memory-changes")).status_code == 403


# How the page reads


def test_a_removed_markdown_rule_is_a_removed_line_not_a_diff_header():
    rows = diff_lines("Title\n---\nBody\n", "Title\nBody\n")
    assert [(row.kind, row.text) for row in rows if row.kind != "context"] == [
        ("header", "--- before"),
        ("header", "+++ after"),
        ("hunk", "@@ -1,3 +1,2 @@"),
        ("removed", "----"),
    ]


def test_the_timeline_diff_shows_hunks_without_the_before_and_after_header(client, tree, editor):
    write(tree / ALICE / "memory.md", "Likes coffee.\n---\n", at(10, 0))
    index(tree)
    page = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    assert '<span class="diff-added">+---</span>' in page
    assert "--- before" not in page and "+++ after" not in page


def test_a_first_seen_change_is_badged_once(client, tree, editor):
    page = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    assert page.count(">first seen</span>") == 1


def test_a_jid_with_no_change_yet_says_what_records_them(client, tree, editor):
    (tree / "new@example.com").mkdir()
    page = client.get(reverse("workspace-memory-timeline", args=[0, "new@example.com"]), {"scope": "own"})
    assert "No memory change matches these filters" in page.content.decode()
    page = client.get(reverse("workspace-memory-changes"), {"jid": "new@example.com", "scope": "own"})
    assert "Show every change" in page.content.decode()
    MemorySnapshot.objects.all().delete()
    page = client.get(reverse("workspace-memory-timeline", args=[0, "new@example.com"])).content.decode()
    assert "No memory change recorded yet for new@example.com" in page
    assert "manage.py index --watch" in page
    assert "0 changes" not in page
