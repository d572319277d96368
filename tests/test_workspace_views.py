"""The persona editor and memory audit pages, and their JSON twins, on a copy of the demo tree."""

from __future__ import annotations

import hashlib
import html
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs

import orjson
import pytest
from django.contrib.auth.models import User
from django.db import connection, connections
from django.test import Client
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.index import index_roots
from sessionviewer.models import AuditEvent, MemorySnapshot, Revision, Session
from sessionviewer.roots import RootSpec
from sessionviewer.workspaces import writes

from .conftest import copy_tree
from .workspace_files import slow_rename

pytestmark = pytest.mark.django_db

ALICE = "alice@example.com"
CAROL = "carol@example.com"
ROOM = "dev@conference.example.com"


def get_json(client, url: str, status: int = 200, **params) -> dict:
    response = client.get(url, params)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    return orjson.loads(response.content)


def edit_url(jid: str, name: str) -> str:
    if jid:
        return reverse("workspace-edit", args=[0, jid, name])
    return reverse("workspace-global-edit", args=[0, name])


def save_url(jid: str, name: str) -> str:
    if jid:
        return reverse("workspace-save", args=[0, jid, name])
    return reverse("workspace-global-save", args=[0, name])


def save(client, jid: str, name: str, text: str, version: str | None = None, path: Path | None = None):
    if version is None:
        version = ws.file_version(path)
    return client.post(save_url(jid, name), {"text": text, "version": version})


def forget(client, memory: Path, jid: str, **kwargs):
    """/forget as the confirmation page sends it, with the version of what it listed."""
    version = ws.forget_plan(memory / jid).version
    return client.post(reverse("workspace-forget-run", args=[0, jid]), {"version": version}, **kwargs)


def new_session(client, memory: Path, jid: str, **kwargs):
    """/new as the confirmation page sends it, with the version of the history it counted."""
    version = ws.file_version(memory / jid / "history.jsonl")
    return client.post(reverse("workspace-new-run", args=[0, jid]), {"version": version}, **kwargs)


def prompt_of(client, jid: str) -> dict:
    return get_json(client, reverse("api-workspace-prompt", args=[0, jid]))


# The workspace list


def test_workspace_list_shows_the_root_its_global_files_and_jid_badges(client, memory, editor):
    response = client.get(reverse("workspace-list"))
    page = response.content.decode()
    assert response.status_code == 200
    assert str(memory) in page
    assert "identity.md" in page and "personality.md" in page and "instructions.md" in page
    assert reverse("workspace-jid", args=[0, ALICE]) in page
    assert "overrides instructions.md" in page  # the room's own instructions
    assert "personality.md (blank)" in page  # the room's blank override is not in effect
    assert 'class="badge room"' in page


def test_api_workspace_list_lists_roots_and_jids_with_their_files(client, memory, editor):
    body = get_json(client, reverse("api-workspace-list"))
    (root,) = body["roots"]
    assert root["index"] == 0
    assert [f["name"] for f in root["global_files"]] == list(ws.PERSONA_FILES)
    jids = {j["jid"]: j for j in root["jids"]}
    assert set(jids) == {ALICE, CAROL, ROOM}
    assert jids[ROOM]["overrides"] == ["instructions.md"]
    assert jids[ROOM]["is_room"] is True
    assert "knowledge.jsonl" in jids[ALICE]["files"]
    assert jids[ALICE]["url"] == reverse("workspace-jid", args=[0, ALICE])


def test_the_nav_links_to_the_workspaces(client, memory, editor):
    assert reverse("workspace-list").encode() in client.get(reverse("session-list")).content


# The JID page


def test_jid_page_shows_status_profile_memory_knowledge_files_and_sessions(client, memory, editor):
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert "Archived sessions" in page
    assert "<li>Role: runs the shop's design" in page  # user.md, rendered
    assert "Printer wants PDF/X-1a" in page  # memory.md
    assert "Mollie, with Stripe as a fallback for cards" in page  # the latest line of a repeated key
    assert "repeats line 1" in page  # and the problem it makes
    assert "mockup.png" in page and "notes.txt" in page
    assert "sessions/20250601-143022.jsonl" in page
    assert "not indexed yet" in page


def test_api_jid_gives_files_with_sizes_times_and_whether_each_override_is_in_effect(client, memory, editor):
    body = get_json(client, reverse("api-workspace-jid", args=[0, ROOM]))
    files = {f["name"]: f for f in body["files"]}
    assert files["instructions.md"]["in_effect"] is True
    assert files["personality.md"]["in_effect"] is False
    assert files["personality.md"]["blank"] is True
    assert files["user.md"]["size"] == (memory / ROOM / "user.md").stat().st_size
    assert files["user.md"]["mtime"]
    assert body["overrides"] == ["instructions.md"]
    assert body["status"]["instructions"] is True


def test_memory_files_are_sanitised(client, memory, editor):
    (memory / ALICE / "memory.md").write_text("- <script>alert(1)</script> [x](javascript:alert(2))\n")
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert "<script>alert(1)" not in page
    assert 'href="javascript' not in page


def test_an_unknown_jid_is_404_on_the_page_and_in_the_api(client, memory, editor):
    assert client.get(reverse("workspace-jid", args=[0, "nobody@example.com"])).status_code == 404
    get_json(client, reverse("api-workspace-jid", args=[0, "nobody@example.com"]), status=404)
    get_json(client, reverse("api-workspace-prompt", args=[3, ALICE]), status=404)


# The effective prompt


def test_prompt_page_names_the_file_each_section_came_from(client, memory, editor):
    page = client.get(reverse("workspace-prompt", args=[0, ROOM])).content.decode()
    assert f"{ROOM}/instructions.md" in page
    assert "personality.md" in page
    assert "added by the agent at run time" in page
    assert "Current date" in page


def test_api_prompt_gives_the_text_and_the_sections_in_order(client, memory, editor):
    body = prompt_of(client, ROOM)
    sources = [(s["kind"], s["source"]) for s in body["sections"]]
    assert sources == [
        ("identity", "identity.md"),
        ("personality", "personality.md"),  # the room's blank override falls back to the global file
        ("instructions", f"{ROOM}/instructions.md"),
        ("profile", f"{ROOM}/user.md"),
        ("date", "runtime"),
    ]
    assert body["text"].startswith("You are Fluux Agent, the assistant of a small online shop")
    assert "\nCurrent date: " in body["text"]


def test_prompt_uses_the_default_when_no_persona_file_is_in_effect(client, memory, editor, settings):
    settings.SESSIONVIEWER_AGENT_NAME = "Fluxy"
    for name in ws.PERSONA_FILES:
        (memory / name).write_text("  \n")
    body = prompt_of(client, CAROL)
    assert [s["source"] for s in body["sections"]] == ["default", f"{CAROL}/context.md", "runtime"]
    assert body["text"].startswith("You are Fluxy, a personal AI assistant")
    assert (
        "the agent's built-in prompt"
        in client.get(reverse("workspace-prompt", args=[0, CAROL])).content.decode()
    )


def test_a_persona_file_that_is_not_utf8_is_shown_as_an_error(client, memory, editor):
    (memory / ALICE / "identity.md").write_bytes(b"caf\xe9\n")
    body = prompt_of(client, ALICE)
    assert body["ok"] is False and body["text"] == ""
    assert body["sections"][0]["error"].startswith("not valid UTF-8")
    page = client.get(reverse("workspace-prompt", args=[0, ALICE])).content.decode()
    assert "cannot build this prompt" in page
    assert "not valid UTF-8" in page


# Editing


def test_the_edit_form_carries_the_version_it_was_loaded_from(client, memory, editor):
    page = client.get(edit_url("", "identity.md")).content.decode()
    assert f'value="{ws.file_version(memory / "identity.md")}"' in page
    assert 'hx-trigger="keyup changed delay:400ms"' in page
    assert "You are Fluux Agent, the assistant" in page


def test_editing_a_global_file_writes_it_records_it_and_changes_the_prompt(client, memory, editor):
    before = (memory / "identity.md").read_text()
    response = save(client, "", "identity.md", "You are Mugbot.\n", path=memory / "identity.md")
    assert response.status_code == 302
    assert (memory / "identity.md").read_text() == "You are Mugbot.\n"
    revision = Revision.objects.get()
    assert (revision.jid, revision.filename, revision.user) == ("", "identity.md", editor)
    assert (revision.before, revision.after) == (before, "You are Mugbot.\n")
    event = AuditEvent.objects.get()
    assert (event.action, event.user, event.detail["file"], event.detail["revision"]) == (
        "edit",
        editor,
        "identity.md",
        revision.id,
    )
    assert prompt_of(client, ALICE)["text"].startswith("You are Mugbot.\n\n")


def test_a_save_keeps_crlf_line_endings_and_the_file_mode(client, memory, editor):
    path = memory / "identity.md"
    path.write_bytes(b"one\r\ntwo\r\n")
    path.chmod(0o600)
    save(client, "", "identity.md", "one\r\nthree\r\n", path=path)
    assert path.read_bytes() == b"one\r\nthree\r\n"
    assert path.stat().st_mode & 0o777 == 0o600


def test_editing_user_md_and_memory_md_of_a_jid(client, memory, editor):
    save(client, ALICE, "memory.md", "- likes green mugs\n", path=memory / ALICE / "memory.md")
    assert (memory / ALICE / "memory.md").read_text() == "- likes green mugs\n"
    assert "## Notes and memory\n- likes green mugs" in prompt_of(client, ALICE)["text"]


def test_a_file_outside_the_allow_list_cannot_be_edited(client, memory, editor):
    assert client.get(edit_url(ALICE, "history.jsonl")).status_code == 404
    assert client.get(edit_url("", "user.md")).status_code == 404
    response = client.post(save_url(ALICE, "knowledge.jsonl"), {"text": "x", "version": "absent"})
    assert response.status_code == 404


def test_creating_an_override_then_removing_it_falls_back_to_the_global_file(client, memory, editor):
    page = client.get(edit_url(ALICE, "personality.md")).content.decode()
    assert 'value="absent"' in page
    assert "You are friendly, concise and practical." in page  # starts from the global text
    response = save(client, ALICE, "personality.md", "You are terse.\n", version="absent")
    assert response.status_code == 302
    assert prompt_of(client, ALICE)["sections"][1]["source"] == f"{ALICE}/personality.md"
    assert AuditEvent.objects.get().action == "create"

    confirm = client.get(reverse("workspace-remove", args=[0, ALICE, "personality.md"]))
    assert confirm.status_code == 200 and (memory / ALICE / "personality.md").exists()
    version = ws.file_version(memory / ALICE / "personality.md")
    response = client.post(
        reverse("workspace-remove-run", args=[0, ALICE, "personality.md"]), {"version": version}
    )
    assert response.status_code == 302
    assert not (memory / ALICE / "personality.md").exists()
    assert prompt_of(client, ALICE)["sections"][1]["source"] == "personality.md"
    removal = Revision.objects.latest("id")
    assert (removal.before, removal.after) == ("You are terse.\n", None)
    assert AuditEvent.objects.latest("id").action == "remove"


def test_a_save_from_a_stale_version_is_refused_and_shows_both_versions(client, memory, editor):
    path = memory / "instructions.md"
    stale = ws.file_version(path)
    path.write_text("Rules:\n- Someone else saved this\n")
    response = client.post(save_url("", "instructions.md"), {"text": "Rules:\n- Mine\n", "version": stale})
    assert response.status_code == 409
    assert path.read_text() == "Rules:\n- Someone else saved this\n"
    assert not Revision.objects.exists() and not AuditEvent.objects.exists()
    page = response.content.decode()
    assert "changed on disk" in page
    assert '<span class="diff-removed">-- Someone else saved this</span>' in page
    assert '<span class="diff-added">+- Mine</span>' in page
    # The form keeps the user's text, now against the disk's version.
    assert "Rules:\n- Mine\n</textarea>" in page
    assert f'value="{ws.file_version(path)}"' in page


def test_a_bad_version_is_a_400(client, memory, editor):
    response = client.post(save_url("", "identity.md"), {"text": "x", "version": "../etc"})
    assert response.status_code == 400
    assert (memory / "identity.md").read_text().startswith("You are Fluux Agent")


def test_the_preview_endpoint_returns_the_sanitised_partial(client, memory, editor):
    response = client.post(reverse("workspace-preview"), {"text": "**bold** <script>x()</script>"})
    page = response.content.decode()
    assert page.strip().startswith('<section id="preview"')
    assert "<strong>bold</strong>" in page
    assert "<script>" not in page
    assert "<html" not in page


# Revisions


def test_the_revision_page_shows_an_escaped_diff_with_line_classes(client, memory, editor):
    save(client, "", "identity.md", "You are <b>Mugbot</b>.\n", path=memory / "identity.md")
    revision = Revision.objects.get()
    page = client.get(reverse("workspace-revision", args=[revision.id])).content.decode()
    assert '<span class="diff-added">+You are &lt;b&gt;Mugbot&lt;/b&gt;.</span>' in page
    assert '<span class="diff-removed">-You are Fluux Agent, the assistant' in page
    body = get_json(client, reverse("api-workspace-revision", args=[revision.id]))
    assert body["after"] == "You are <b>Mugbot</b>.\n"
    assert "+You are <b>Mugbot</b>." in body["diff"]


def test_restoring_a_revision_is_a_recorded_save(client, memory, editor):
    path = memory / "identity.md"
    original = path.read_text()
    save(client, "", "identity.md", "First.\n", path=path)
    first = Revision.objects.get()
    save(client, "", "identity.md", "Second.\n", path=path)
    response = client.post(
        reverse("workspace-revision-restore", args=[first.id]), {"version": ws.file_version(path)}
    )
    assert response.status_code == 302
    assert path.read_text() == "First.\n"
    restore = Revision.objects.latest("id")
    assert (restore.before, restore.after) == ("Second.\n", "First.\n")
    event = AuditEvent.objects.latest("id")
    assert (event.action, event.detail["restored"], event.detail["revision"]) == (
        "restore",
        first.id,
        restore.id,
    )
    assert original != path.read_text()


def test_restoring_from_a_stale_page_is_refused(client, memory, editor):
    path = memory / "identity.md"
    save(client, "", "identity.md", "First.\n", path=path)
    first = Revision.objects.get()
    stale = ws.file_version(path)
    path.write_text("Changed elsewhere.\n")
    response = client.post(reverse("workspace-revision-restore", args=[first.id]), {"version": stale})
    assert response.status_code == 409
    assert path.read_text() == "Changed elsewhere.\n"
    assert Revision.objects.count() == 1


# The agent's commands


def test_new_asks_for_confirmation_before_archiving(client, memory, editor):
    response = client.get(reverse("workspace-new", args=[0, ALICE]))
    assert response.status_code == 200
    assert b"Archive the session" in response.content
    assert (memory / ALICE / "history.jsonl").exists()
    assert not AuditEvent.objects.exists()


def test_new_archives_the_session_twice_in_one_second_without_overwriting(
    client, memory, editor, monkeypatch
):
    history = (memory / ALICE / "history.jsonl").read_text()
    frozen = datetime(2026, 3, 3, 10, 0, 0, tzinfo=UTC)
    monkeypatch.setattr("sessionviewer.views.workspaces.timezone.now", lambda: frozen)
    url = reverse("workspace-new-run", args=[0, ALICE])
    path = memory / ALICE / "history.jsonl"
    assert client.post(url, {"version": ws.file_version(path)}).status_code == 302
    path.write_text(history)
    assert client.post(url, {"version": ws.file_version(path)}).status_code == 302
    sessions = memory / ALICE / "sessions"
    assert (sessions / "20260303-100000.jsonl").read_text() == history
    assert (sessions / "20260303-100000-1.jsonl").read_text() == history
    assert not (memory / ALICE / "history.jsonl").exists()
    events = list(AuditEvent.objects.order_by("id").values_list("action", "jid", "detail"))
    assert events == [
        ("new", ALICE, {"archived": "sessions/20260303-100000.jsonl"}),
        ("new", ALICE, {"archived": "sessions/20260303-100000-1.jsonl"}),
    ]


def test_forget_lists_what_it_will_erase_before_doing_it(client, memory, editor):
    page = client.get(reverse("workspace-forget", args=[0, ALICE])).content.decode()
    for name in ("history.jsonl", "user.md", "memory.md", "knowledge.jsonl", "files/"):
        assert f"<code>{name}</code>" in page
    assert (memory / ALICE / "memory.md").exists()


def test_forget_erases_the_memory_and_keeps_sessions_and_overrides(client, memory, editor):
    (memory / ALICE / "identity.md").write_text("You are Alice's helper.\n")
    response = forget(client, memory, ALICE, follow=True)
    assert sorted(p.name for p in (memory / ALICE).iterdir()) == ["identity.md", "sessions"]
    event = AuditEvent.objects.get()
    assert (event.action, event.jid, event.user) == ("forget", ALICE, editor)
    assert event.detail["erased"] == ["history.jsonl", "user.md", "memory.md", "knowledge.jsonl", "files/"]
    assert "Erased history.jsonl, user.md, memory.md, knowledge.jsonl, files/." in response.content.decode()


# Every write is one unit: concurrent requests, a locked database, exact bytes, /forget


def race(user: User, url: str, posts: list[dict]) -> list:
    """POST each form to url at once, one thread and client each; the responses."""
    clients = []
    for _ in posts:
        other = Client()
        other.force_login(user)
        clients.append(other)
    barrier = threading.Barrier(len(posts))

    def post(n):
        try:
            barrier.wait()
            return clients[n].post(url, posts[n])
        finally:
            connection.close()  # each thread had its own

    with ThreadPoolExecutor(len(posts)) as pool:
        return list(pool.map(post, range(len(posts))))


def assert_one_winner(responses) -> None:
    assert sorted(r.status_code for r in responses) == [302] + [409] * (len(responses) - 1)


concurrent = pytest.mark.django_db(transaction=True)


@concurrent
def test_concurrent_saves_from_one_version_have_one_winner_and_the_others_keep_their_text(
    memory, editor, monkeypatch
):
    slow_rename(monkeypatch)
    path = memory / ALICE / "memory.md"
    for round_ in range(20):
        texts = [f"- round {round_}, editor {n}\n" for n in range(3)]
        version = ws.file_version(path)
        responses = race(
            editor, save_url(ALICE, "memory.md"), [{"text": t, "version": version} for t in texts]
        )
        assert_one_winner(responses)
        winner = texts[[r.status_code for r in responses].index(302)]
        assert path.read_text() == winner
        for text, response in zip(texts, responses, strict=True):
            if response.status_code == 409:
                assert f"{html.escape(text)}</textarea>" in response.content.decode()
    assert Revision.objects.count() == AuditEvent.objects.count() == 20


@concurrent
def test_concurrent_restores_and_removes_from_one_version_have_one_winner(memory, editor, monkeypatch):
    slow_rename(monkeypatch)
    path = memory / ALICE / "identity.md"
    client = Client()
    client.force_login(editor)
    save(client, ALICE, "identity.md", "First.\n", version="absent")
    first = Revision.objects.get()
    for round_ in range(10):
        save(client, ALICE, "identity.md", f"Round {round_}.\n", path=path)
        url = reverse("workspace-revision-restore", args=[first.id])
        assert_one_winner(race(editor, url, [{"version": ws.file_version(path)}] * 3))
        assert path.read_text() == "First.\n"
        url = reverse("workspace-remove-run", args=[0, ALICE, "identity.md"])
        assert_one_winner(race(editor, url, [{"version": ws.file_version(path)}] * 3))
        assert not path.exists()
        save(client, ALICE, "identity.md", "First.\n", version="absent")
    assert AuditEvent.objects.filter(action__in=("restore", "remove")).count() == 20


@concurrent
def test_concurrent_new_from_one_page_archives_once(memory, editor, monkeypatch):
    slow_rename(monkeypatch)
    history = memory / ALICE / "history.jsonl"
    text = history.read_text()
    url = reverse("workspace-new-run", args=[0, ALICE])
    for _ in range(10):
        responses = race(editor, url, [{"version": ws.file_version(history)}] * 3)
        assert_one_winner(responses)
        history.write_text(text)
    assert AuditEvent.objects.filter(action="new").count() == 10
    assert len(list((memory / ALICE / "sessions").glob("*.jsonl"))) == 10 + 1  # and the demo's own


@concurrent
def test_concurrent_forgets_from_one_page_erase_once(memory, editor, monkeypatch):
    slow_rename(monkeypatch)
    jid_dir = memory / ALICE
    kept = {p.name: p.read_bytes() for p in jid_dir.iterdir() if p.is_file()}
    url = reverse("workspace-forget-run", args=[0, ALICE])
    for _ in range(10):
        for name, data in kept.items():
            (jid_dir / name).write_bytes(data)
        responses = race(editor, url, [{"version": ws.forget_plan(jid_dir).version}] * 3)
        assert_one_winner(responses)
        assert not (jid_dir / "memory.md").exists()
    assert AuditEvent.objects.filter(action="forget").count() == 10


@pytest.fixture
def locked_database(transactional_db):
    """Another connection holds the database's write lock; this one waits 50 ms, not 30 s."""
    other = connections.create_connection("default")
    sqlite = connection.vendor == "sqlite"
    with other.cursor() as cursor:
        if sqlite:
            cursor.execute("BEGIN IMMEDIATE")
        else:
            cursor.execute("BEGIN")
            cursor.execute("LOCK TABLE sessionviewer_revision, sessionviewer_auditevent IN EXCLUSIVE MODE")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA busy_timeout = 50" if sqlite else "SET lock_timeout = '50ms'")
    yield
    with other.cursor() as cursor:
        cursor.execute("ROLLBACK")
    other.close()
    connection.close()  # the next test's connection starts with the configured timeout


@concurrent
def test_a_save_the_database_cannot_record_changes_nothing_and_keeps_the_text(
    client, memory, editor, locked_database
):
    path = memory / ALICE / "memory.md"
    before = path.read_bytes()
    response = save(client, ALICE, "memory.md", "- my careful note\n", path=path)
    assert response.status_code == 503
    assert path.read_bytes() == before
    page = response.content.decode()
    assert "Not saved: the database could not record it" in page
    assert "- my careful note\n</textarea>" in page
    assert f'value="{ws.file_version(path)}"' in page  # saving again needs no reload


@concurrent
def test_a_remove_restore_new_or_forget_the_database_cannot_record_changes_nothing(
    client, memory, editor, locked_database
):
    jid_dir = memory / ALICE
    before = {str(p): p.read_bytes() for p in jid_dir.rglob("*") if p.is_file()}
    responses = [
        new_session(client, memory, ALICE),
        forget(client, memory, ALICE),
    ]
    assert [r.status_code for r in responses] == [503, 503]
    assert "Not archived" in responses[0].content.decode()
    assert "Nothing was forgotten" in responses[1].content.decode()
    assert {str(p): p.read_bytes() for p in jid_dir.rglob("*") if p.is_file()} == before


def test_a_revision_restores_the_bytes_the_save_wrote(client, memory, editor):
    path = memory / "identity.md"
    path.write_bytes(b"one\r\ntwo\r\n")
    save(client, "", "identity.md", "one\nthree\n", path=path)
    revision = Revision.objects.get()
    path.write_bytes(b"rewritten with LF\n")
    response = client.post(
        reverse("workspace-revision-restore", args=[revision.id]), {"version": ws.file_version(path)}
    )
    assert response.status_code == 302
    assert path.read_bytes() == b"one\r\nthree\r\n"


def test_a_file_that_is_not_utf8_can_be_edited_and_its_bytes_given_back(client, memory, editor):
    path = memory / ALICE / "memory.md"
    path.write_bytes(b"- caf\xe9 au lait\r\n")
    page = client.get(edit_url(ALICE, "memory.md")).content.decode()
    assert "not valid UTF-8 (byte 5)" in page and "Undo this save" in page
    save(client, ALICE, "memory.md", "- café au lait\n", path=path)
    revision = Revision.objects.get()
    assert (revision.before, bytes(revision.before_bytes)) == (
        "- caf\ufffd au lait\r\n",
        b"- caf\xe9 au lait\r\n",
    )
    page = client.get(reverse("workspace-revision", args=[revision.id])).content.decode()
    assert 'id="not-utf8"' in page
    body = get_json(client, reverse("api-workspace-revision", args=[revision.id]))
    assert (body["before_is_utf8"], body["after_is_utf8"]) == (False, True)
    response = client.post(
        reverse("workspace-revision-restore-before", args=[revision.id]), {"version": ws.file_version(path)}
    )
    assert response.status_code == 302
    assert path.read_bytes() == b"- caf\xe9 au lait\r\n"
    event = AuditEvent.objects.latest("id")
    assert (event.action, event.detail["restored"], event.detail["side"]) == (
        "restore",
        revision.id,
        "before",
    )


def test_undoing_the_save_that_created_a_file_removes_it(client, memory, editor):
    save(client, ALICE, "identity.md", "New.\n", version="absent")
    revision = Revision.objects.get()
    path = memory / ALICE / "identity.md"
    url = reverse("workspace-revision-restore-before", args=[revision.id])
    assert client.post(url, {"version": ws.file_version(path)}).status_code == 302
    assert not path.exists()


def test_forget_erases_the_revisions_of_the_files_it_erases_and_audits_without_content(
    client, memory, editor
):
    save(client, ALICE, "memory.md", "- a secret note\n", path=memory / ALICE / "memory.md")
    save(client, ALICE, "user.md", "A private profile.\n", path=memory / ALICE / "user.md")
    save(client, ALICE, "identity.md", "Alice's helper.\n", version="absent")
    assert forget(client, memory, ALICE).status_code == 302
    assert list(Revision.objects.values_list("jid", "filename")) == [(ALICE, "identity.md")]
    event = AuditEvent.objects.get(action="forget")
    assert event.detail["revisions"] == 2
    files = {f["name"]: f for f in event.detail["files"]}
    assert files["memory.md"] == {
        "name": "memory.md",
        "size": len(b"- a secret note\n"),
        "sha256": hashlib.sha256(b"- a secret note\n").hexdigest(),
    }
    recorded = orjson.dumps(event.detail).decode()
    assert "secret note" not in recorded and "private profile" not in recorded


def test_forget_with_a_folder_where_a_file_should_be_erases_nothing(client, memory, editor):
    jid_dir = memory / ALICE
    (jid_dir / "knowledge.jsonl").unlink()
    (jid_dir / "knowledge.jsonl").mkdir()
    before = sorted(jid_dir.rglob("*"))
    page = client.get(reverse("workspace-forget", args=[0, ALICE])).content.decode()
    assert "knowledge.jsonl is a folder where a file should be" in page
    assert "Forget</button>" not in page
    # The page offers no version to confirm with: post one, as a page opened before would.
    response = client.post(reverse("workspace-forget-run", args=[0, ALICE]), {"version": "0" * 64})
    assert response.status_code == 409
    assert "/forget is refused, and nothing was erased" in response.content.decode()
    assert sorted(jid_dir.rglob("*")) == before
    assert not AuditEvent.objects.exists()


def test_forget_with_a_link_leaving_the_root_erases_nothing(client, memory, editor, tmp_path):
    jid_dir = memory / ALICE
    (tmp_path / "elsewhere.md").write_text("not the agent's\n")
    (jid_dir / "memory.md").unlink()
    (jid_dir / "memory.md").symlink_to(tmp_path / "elsewhere.md")
    before = sorted(jid_dir.rglob("*"))
    response = client.post(reverse("workspace-forget-run", args=[0, ALICE]), {"version": "0" * 64})
    assert response.status_code == 409
    assert sorted(jid_dir.rglob("*")) == before
    body = get_json(client, reverse("api-workspace-forget", args=[0, ALICE]))
    assert body["version"] is None and "leading outside the memory root" in body["refused"]


def test_forget_that_cannot_delete_a_file_says_so_after_auditing(client, memory, editor, monkeypatch):
    def refuse(path):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(writes.shutil, "rmtree", refuse)
    response = forget(client, memory, ALICE)
    assert response.status_code == 500
    page = response.content.decode()
    assert "/forget stopped part way: Permission denied" in page and "<code>files/</code>" in page
    assert AuditEvent.objects.get().detail["erased"][-1] == "files/"
    assert not (memory / ALICE / "memory.md").exists()


def test_forget_from_a_stale_page_is_refused_and_lists_what_there_is_now(client, memory, editor):
    jid_dir = memory / ALICE
    version = ws.forget_plan(jid_dir).version
    (jid_dir / "memory.md").write_text("- a note the agent just wrote\n")
    response = client.post(reverse("workspace-forget-run", args=[0, ALICE]), {"version": version})
    assert response.status_code == 409
    assert "the memory changed since you opened this page" in response.content.decode()
    assert (jid_dir / "memory.md").exists()


# Files, sessions, search, secrets


def test_an_image_is_previewed_with_its_own_type_inline_and_nosniff(client, memory, editor):
    name = "2b9e4c71-8d3a-4f5e-a612-9c7b0d1e3f48_mockup.png"
    response = client.get(reverse("workspace-file", args=[0, ALICE, name]))
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Content-Disposition"].startswith("inline")


def test_a_text_file_is_previewed_as_plain_text(client, memory, editor):
    name = "7d3f1a92-5c4e-4b8a-9f21-0e6d8c4b2a17_notes.txt"
    response = client.get(reverse("workspace-file", args=[0, ALICE, name]))
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response["Content-Disposition"].startswith("inline")


def test_svg_gets_no_preview_and_html_is_served_as_plain_text(client, memory, editor):
    files = memory / ALICE / "files"
    (files / "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_logo.svg").write_text("<svg onload='alert(1)'/>")
    (files / "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_page.html").write_text("<script>alert(1)</script>")
    svg = client.get(
        reverse("workspace-file", args=[0, ALICE, "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_logo.svg"])
    )
    assert svg.status_code == 404
    html = client.get(
        reverse("workspace-file", args=[0, ALICE, "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_page.html"])
    )
    assert html["Content-Type"] == "text/plain; charset=utf-8"


def test_sessions_link_to_the_transcript_browser_once_indexed(client, memory, editor):
    index_roots([RootSpec(memory, "fluux_xmpp")])
    archived = Session.objects.get(path__endswith="20250601-143022.jsonl")
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert reverse("session-detail", args=[archived.id]) in page
    body = get_json(client, reverse("api-workspace-jid", args=[0, ALICE]))
    assert {s["name"]: s["session_id"] for s in body["sessions"]}[
        "sessions/20250601-143022.jsonl"
    ] == archived.id


def test_a_session_file_is_shown_with_line_anchors(client, memory, editor):
    page = client.get(reverse("workspace-session-source", args=[0, ALICE, "20250601-143022.jsonl"])).content
    assert b'id="L1"' in page and b'id="L2"' in page


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_memory_search_finds_lines_in_every_jid(client, memory, editor, prefix):
    url = reverse(f"{prefix}workspace-search")
    if prefix:
        hits = get_json(client, url, q="mollie")["hits"]
        assert {(h["jid"], h["file"]) for h in hits} == {(ALICE, "memory.md"), (ALICE, "knowledge.jsonl")}
        assert hits[0]["url"].endswith(f"#L{hits[0]['line']}")
    else:
        page = client.get(url, {"q": "mollie"}).content.decode()
        assert "Chose Mollie as payment provider" in page
        assert reverse("workspace-source", args=[0, ALICE, "memory.md"]) + "#L1" in page


def test_the_search_fragment_comes_back_alone_for_htmx(client, memory, editor):
    response = client.get(reverse("workspace-search"), {"q": "mollie"}, HTTP_HX_REQUEST="true")
    assert response.content.decode().strip().startswith('<section id="search-results">')


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.parametrize("value", ["x" * 1001, "mollie\x00"])
def test_an_overlong_or_nul_memory_search_is_a_400_naming_q(client, memory, editor, prefix, value):
    response = client.get(reverse(f"{prefix}workspace-search"), {"q": value})
    assert response.status_code == 400
    message = orjson.loads(response.content)["error"] if prefix else response.content.decode()
    assert message.startswith("q: ")


def test_a_memory_search_of_the_longest_query_is_answered(client, memory, editor):
    assert get_json(client, reverse("api-workspace-search"), q="mollie " * 142)["hits"] == []


def test_api_search_without_q_is_a_400_naming_it(client, memory, editor):
    assert get_json(client, reverse("api-workspace-search"), status=400)["error"].startswith("q")


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_secrets_report_finds_a_planted_key_and_email_with_file_and_line(client, memory, editor, prefix):
    (memory / CAROL / "memory.md").write_text(
        "- nothing here\n- deploy key: sk-ant-api03-abcdefghijklmnop1234\n- wrote from erin@shop.example\n"
    )
    if prefix:
        findings = get_json(client, reverse("api-workspace-secrets"))["findings"]
        planted = {(f["file"], f["line"], f["kind"]) for f in findings if f["jid"] == CAROL}
        assert planted == {(f"{CAROL}/memory.md", 2, "anthropic_key"), (f"{CAROL}/memory.md", 3, "email")}
        assert all("abcdefghijklmnop" not in f["masked"] for f in findings)
    else:
        page = client.get(reverse("workspace-secrets")).content.decode()
        assert reverse("workspace-source", args=[0, CAROL, "memory.md"]) + "#L2" in page
        assert reverse("workspace-source", args=[0, CAROL, "memory.md"]) + "#L3" in page
        assert "abcdefghijklmnop1234" not in page


def test_secrets_report_lists_random_strings_only_with_the_high_entropy_setting(
    client, memory, editor, settings
):
    (memory / CAROL / "memory.md").write_text("- blob Ab1Cd2Ef3Gh4Ij5Kl6Mn7Op8Qr9St0UvWx\n")

    def kinds() -> set[str]:
        findings = get_json(client, reverse("api-workspace-secrets"), jid=CAROL)["findings"]
        return {f["kind"] for f in findings}

    assert kinds() == set()
    settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY = True
    assert kinds() == {"high_entropy"}


# The audit log


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_the_audit_log_lists_who_did_what_to_which_jid(client, memory, editor, prefix):
    save(client, ALICE, "memory.md", "- new note\n", path=memory / ALICE / "memory.md")
    forget(client, memory, CAROL)
    if prefix:
        events = get_json(client, reverse("api-workspace-audit-log"))["events"]
        assert [(e["action"], e["jid"], e["user"]) for e in events] == [
            ("forget", CAROL, "edith"),
            ("edit", ALICE, "edith"),
        ]
    else:
        page = client.get(reverse("workspace-audit-log")).content.decode()
        assert "edith" in page and CAROL in page and "erased history.jsonl, context.md" in page


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_a_bad_audit_log_page_is_a_400_naming_it(client, memory, editor, prefix):
    response = client.get(reverse(f"{prefix}workspace-audit-log"), {"_page": "x"})
    assert response.status_code == 400
    assert b"_page" in response.content


def test_saving_unchanged_text_records_nothing(client, memory, editor):
    path = memory / "identity.md"
    save(client, "", "identity.md", path.read_text(), path=path)
    assert not Revision.objects.exists() and not AuditEvent.objects.exists()


def test_prompt_sections_link_to_the_global_or_the_jid_file(client, memory, editor):
    page = client.get(reverse("workspace-prompt", args=[0, ROOM])).content.decode()
    assert reverse("workspace-global-source", args=[0, "identity.md"]) in page
    assert reverse("workspace-source", args=[0, ROOM, "instructions.md"]) in page


def test_a_new_user_md_starts_from_the_legacy_context_md(client, memory, editor):
    page = client.get(edit_url(CAROL, "user.md")).content.decode()
    assert "Backend developer, wrote the first version of the shop" in page
    assert 'value="absent"' in page


def test_the_shared_samples_show_a_legacy_archive_and_the_legacy_profile(
    client, tmp_path, settings, samples_dir, editor
):
    root = copy_tree(samples_dir / "fluux" / "memory", tmp_path / "samples")
    settings.SESSIONVIEWER_MEMORY_ROOTS = [str(root)]
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert "sessions/20250601-143022.md" in page and "md (legacy)" in page
    bob = get_json(client, reverse("api-workspace-prompt", args=[0, "bob@example.com"]))
    assert "bob@example.com/context.md" in [s["source"] for s in bob["sections"]]


# JSON twins of the forms, confirmations and file pages


def test_api_edit_gives_the_text_and_the_version_a_save_must_send(client, memory, editor):
    path = memory / ALICE / "memory.md"
    body = get_json(client, reverse("api-workspace-edit", args=[0, ALICE, "memory.md"]))
    assert body["text"] == path.read_text()
    assert body["version"] == ws.file_version(path)
    assert body["save_url"] == save_url(ALICE, "memory.md")
    response = client.post(body["save_url"], {"text": "- from the API\n", "version": body["version"]})
    assert response.status_code == 302
    assert path.read_text() == "- from the API\n"


def test_api_edit_of_a_new_override_starts_from_the_global_file(client, memory, editor):
    body = get_json(client, reverse("api-workspace-edit", args=[0, ALICE, "identity.md"]))
    assert body["exists"] is False and body["text"] is None and body["version"] == "absent"
    assert body["initial_text"] == (memory / "identity.md").read_text()
    assert body["is_override"] is True


def test_api_edit_of_a_global_file_lists_its_revisions(client, memory, editor):
    save(client, "", "identity.md", "You are Mugbot.\n", path=memory / "identity.md")
    body = get_json(client, reverse("api-workspace-global-edit", args=[0, "identity.md"]))
    (revision,) = body["revisions"]
    assert revision["user"] == "edith"
    assert revision["url"] == reverse("workspace-revision", args=[revision["id"]])


@pytest.mark.parametrize(
    ("name", "args", "file"),
    [
        ("api-workspace-global-source", [0, "identity.md"], "identity.md"),
        ("api-workspace-source", [0, ALICE, "memory.md"], f"{ALICE}/memory.md"),
        (
            "api-workspace-session-source",
            [0, ALICE, "20250601-143022.jsonl"],
            f"{ALICE}/sessions/20250601-143022.jsonl",
        ),
    ],
)
def test_api_source_gives_a_files_text_and_version(client, memory, editor, name, args, file):
    body = get_json(client, reverse(name, args=args))
    assert body["text"] == (memory / file).read_text()
    assert body["version"] == ws.file_version(memory / file)
    assert body["error"] is None


def test_api_source_of_a_file_that_is_not_utf8_gives_the_error(client, memory, editor):
    (memory / ALICE / "memory.md").write_bytes(b"caf\xe9\n")
    body = get_json(client, reverse("api-workspace-source", args=[0, ALICE, "memory.md"]))
    assert body["error"].startswith("not valid UTF-8")


def test_api_source_of_a_missing_file_is_a_json_404(client, memory, editor):
    get_json(client, reverse("api-workspace-source", args=[0, CAROL, "memory.md"]), status=404)


def test_api_new_says_how_many_messages_would_be_archived(client, memory, editor):
    body = get_json(client, reverse("api-workspace-new", args=[0, ALICE]))
    assert body["messages"] == ws.jid_status(memory, ALICE).messages > 0
    assert body["will_archive"] is True
    assert body["run_url"] == reverse("workspace-new-run", args=[0, ALICE])
    assert (memory / ALICE / "history.jsonl").exists()  # asking changes nothing


def test_api_forget_lists_what_would_be_erased_and_kept(client, memory, editor):
    body = get_json(client, reverse("api-workspace-forget", args=[0, ALICE]))
    assert body["erasable"] == ["history.jsonl", "user.md", "memory.md", "knowledge.jsonl", "files/"]
    assert "sessions/" in body["kept"]
    assert (memory / ALICE / "user.md").exists()


def test_api_remove_gives_the_override_and_its_version(client, memory, editor):
    path = memory / ROOM / "instructions.md"
    body = get_json(client, reverse("api-workspace-remove", args=[0, ROOM, "instructions.md"]))
    assert body["text"] == path.read_text()
    assert body["version"] == ws.file_version(path)
    assert body["global_exists"] is True


@pytest.mark.parametrize(
    ("page", "twin", "args"),
    [
        ("workspace-edit", "api-workspace-edit", [0, ALICE, "memory.md"]),
        ("workspace-global-edit", "api-workspace-global-edit", [0, "identity.md"]),
        ("workspace-source", "api-workspace-source", [0, ALICE, "memory.md"]),
        ("workspace-new", "api-workspace-new", [0, ALICE]),
        ("workspace-forget", "api-workspace-forget", [0, ALICE]),
        ("workspace-remove", "api-workspace-remove", [0, ROOM, "instructions.md"]),
    ],
)
def test_each_form_and_confirmation_page_links_to_its_json_twin(client, memory, editor, page, twin, args):
    assert reverse(twin, args=args).encode() in client.get(reverse(page, args=args)).content


# Filtering the audit log


@pytest.fixture
def three_events(client, memory, editor):
    save(client, ALICE, "memory.md", "- new note\n", path=memory / ALICE / "memory.md")
    forget(client, memory, CAROL)
    new_session(client, memory, ALICE)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ({"jid": ALICE}, [("new", ALICE), ("edit", ALICE)]),
        ({"action": "forget"}, [("forget", CAROL)]),
        ({"jid": ALICE, "action": "edit"}, [("edit", ALICE)]),
        ({"jid": "nobody@example.com"}, []),
    ],
)
def test_api_audit_log_filters_by_jid_and_action(client, three_events, query, expected):
    body = get_json(client, reverse("api-workspace-audit-log"), **query)
    assert [(e["action"], e["jid"]) for e in body["events"]] == expected
    assert body["filters"] == query


def test_audit_log_page_filters_and_keeps_the_filter_in_the_json_link(client, three_events):
    page = client.get(reverse("workspace-audit-log"), {"action": "forget"}).content.decode()
    assert "erased" in page and "archived as" not in page
    assert reverse("api-workspace-audit-log") + "?action=forget" in page


@pytest.mark.parametrize("url_name", ["workspace-audit-log", "api-workspace-audit-log"])
def test_an_unknown_audit_action_is_a_400_naming_it(client, memory, editor, url_name):
    response = client.get(reverse(url_name), {"action": "delete"})
    assert response.status_code == 400
    assert b"action" in response.content


def test_the_audit_log_pager_keeps_the_filters(client, memory, editor):
    AuditEvent.objects.bulk_create(
        [AuditEvent(user=editor, action="new", root=str(memory), jid=ALICE) for _ in range(60)]
    )
    page = client.get(reverse("workspace-audit-log"), {"jid": ALICE}).content.decode()
    assert f"?jid={ALICE.replace('@', '%40')}&amp;_page=2" in page


def test_the_audit_log_shows_and_filters_the_root_of_each_event(client, memory, editor, tmp_path):
    # Two memory trees can hold the same JID: an event names the tree it happened in.
    other = str(tmp_path / "other-memory")
    AuditEvent.objects.create(user=editor, action="new", root=str(memory), jid=ALICE)
    AuditEvent.objects.create(user=editor, action="forget", root=other, jid=ALICE)
    page = client.get(reverse("workspace-audit-log")).content.decode()
    assert f'<code title="{memory}">{memory}</code>' in page
    assert f'<code title="{other}">{other}</code>' in page
    assert f'<option value="{other}">' in page  # the root filter, with more than one root
    body = get_json(client, reverse("api-workspace-audit-log"), root=other)
    assert [(e["action"], e["root"]) for e in body["events"]] == [("forget", other)]
    assert body["filters"] == {"root": other}
    page = client.get(reverse("workspace-audit-log"), {"root": other}).content.decode()
    assert "nothing to erase" in page and "session was empty" not in page  # forget in other, new elsewhere
    assert f'<code title="{memory}">' not in page and f'<option value="{other}" selected>' in page


def test_a_jid_in_the_audit_log_links_to_its_events_in_that_root_keeping_the_action(client, memory, editor):
    AuditEvent.objects.create(user=editor, action="new", root=str(memory), jid=ALICE)
    page = client.get(reverse("workspace-audit-log"), {"action": "new", "_page": "1"}).content.decode()
    link = html.unescape(re.search(r'<a href="([^"]+)" hx-get="\1"[^>]*>' + re.escape(ALICE), page).group(1))
    assert parse_qs(link.removeprefix("?")) == {"action": ["new"], "root": [str(memory)], "jid": [ALICE]}


def test_the_audit_log_fragment_for_htmx_is_the_table_alone(client, memory, editor, tmp_path):
    AuditEvent.objects.create(user=editor, action="new", root=str(tmp_path / "other-memory"), jid=ALICE)
    fragment = client.get(reverse("workspace-audit-log"), {"action": "new"}, HTTP_HX_REQUEST="true")
    body = fragment.content.decode()
    assert body.lstrip().startswith('<section id="audit-log">') and "other-memory" in body
    assert "<form" not in body and "<select" not in body


# A large tree in the secrets report


def test_secrets_report_pages_findings_and_reads_only_what_a_page_needs(client, memory, editor, monkeypatch):
    from sessionviewer import workspace_pages

    monkeypatch.setattr(workspace_pages, "SECRETS_PAGE_SIZE", 3)
    (memory / CAROL / "memory.md").write_text("".join(f"- u{n}@shop.example\n" for n in range(5)))
    first = get_json(client, reverse("api-workspace-secrets"))
    assert len(first["findings"]) == 3 and first["has_next"] is True
    second = get_json(client, first["next_url"])
    assert second["page"] == 2 and second["has_next"] is False
    assert [f["line"] for f in first["findings"] + second["findings"] if f["jid"] == CAROL] == [1, 2, 3, 4, 5]


def test_a_megabyte_line_of_percent_signs_is_indexed_and_reported(client, memory, editor):
    # Issue 26: 200 KB of "%" took the pass 31 s and the report 30 s; 1 MB, past gunicorn's 300 s.
    noise = "%" * 1_000_000
    (memory / CAROL / "memory.md").write_text(f"{noise}\n- erin@shop.example {noise}\n")
    message = {"type": "message", "role": "user", "content": f"{noise} frank@shop.example", "sender": CAROL}
    with (memory / CAROL / "history.jsonl").open("ab") as handle:
        handle.write(orjson.dumps({**message, "ts": "2026-03-07T10:00:00+00:00"}) + b"\n")
    index_roots([RootSpec(memory, "fluux_xmpp")], memory=[memory])
    (snapshot,) = MemorySnapshot.objects.filter(jid=CAROL, filename="memory.md")
    assert [(f["line"], f["kind"], f["masked"]) for f in snapshot.findings] == [
        (2, "email", "e***@shop.example")
    ]
    findings = get_json(client, reverse("api-workspace-secrets"), jid=CAROL)["findings"]
    assert {(f["file"], f["masked"]) for f in findings} == {
        (f"{CAROL}/memory.md", "e***@shop.example"),
        (f"{CAROL}/history.jsonl", "f****@shop.example"),
    }
    assert "e***@shop.example" in client.get(reverse("workspace-secrets"), {"jid": CAROL}).content.decode()


def test_secrets_report_stops_reading_once_a_page_is_full(client, memory, editor, monkeypatch):
    from sessionviewer import workspace_pages

    monkeypatch.setattr(workspace_pages, "SECRETS_PAGE_SIZE", 1)
    for jid in (ALICE, CAROL):
        (memory / jid / "memory.md").write_text("- a@shop.example\n- b@shop.example\n")
    opened = []
    real_open = Path.open

    def spy(self, *args, **kwargs):
        opened.append(self.name)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    get_json(client, reverse("api-workspace-secrets"))
    assert f"{CAROL}" not in str(opened) and "20250601-143022.jsonl" not in opened


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_secrets_report_can_scan_one_jid(client, memory, editor, prefix):
    (memory / CAROL / "memory.md").write_text("- erin@shop.example\n")
    (memory / ALICE / "memory.md").write_text("- frank@shop.example\n")
    if prefix:
        findings = get_json(client, reverse("api-workspace-secrets"), jid=CAROL)["findings"]
        assert {f["jid"] for f in findings} == {CAROL}
    else:
        page = client.get(reverse("workspace-secrets"), {"jid": CAROL}).content.decode()
        assert "e***@shop.example" in page and "f****@shop.example" not in page


@pytest.mark.parametrize("jid", ["nobody@example.com", "..", "a/b"])
def test_secrets_report_of_an_unknown_jid_is_a_400_naming_it(client, memory, editor, jid):
    assert get_json(client, reverse("api-workspace-secrets"), status=400, jid=jid)["error"].startswith("jid")
    assert client.get(reverse("workspace-secrets"), {"jid": jid}).status_code == 400


# Hostile persona and memory files: everything shown is escaped or sanitised

HOSTILE_MD = (
    "<script>alert('md')</script>\n"
    "<img src=x onerror=alert('img')>\n"
    "[click](javascript:alert('link'))\n"
    '<a href="javascript:alert(1)">a</a> "><svg onload=alert(2)>\n'
)


@pytest.fixture
def hostile(client, memory, editor):
    for name in ("identity.md", "user.md", "memory.md"):
        (memory / ALICE / name).write_text(HOSTILE_MD)
    (memory / ALICE / "knowledge.jsonl").write_text(
        '{"key": "<script>alert(\'key\')</script>", "content": "<img src=x onerror=alert(3)>", "ts": "t"}\n'
    )
    # A revision and a conflict, so the diff pages show the hostile text too.
    save(
        client,
        ALICE,
        "memory.md",
        HOSTILE_MD + "<script>more()</script>\n",
        path=memory / ALICE / "memory.md",
    )
    return memory


def hostile_pages(client) -> list[str]:
    revision = Revision.objects.get()
    return [
        reverse("workspace-list"),
        reverse("workspace-jid", args=[0, ALICE]),
        reverse("workspace-prompt", args=[0, ALICE]),
        reverse("workspace-source", args=[0, ALICE, "identity.md"]),
        reverse("workspace-source", args=[0, ALICE, "knowledge.jsonl"]),
        reverse("workspace-edit", args=[0, ALICE, "identity.md"]),
        reverse("workspace-remove", args=[0, ALICE, "identity.md"]),
        reverse("workspace-revision", args=[revision.id]),
        reverse("workspace-search") + "?q=alert",
        reverse("workspace-secrets"),
        reverse("workspace-audit-log"),
    ]


class ActiveContent(HTMLParser):
    """Collects what a browser would run or load from a page: scripts, handlers, script URLs."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or value.startswith(("javascript:", "data:text/html")):
                self.found.append(f"<{tag} {name}={value!r}>")
        if tag in ("svg", "iframe", "object", "embed"):
            self.found.append(f"<{tag}>")
        if tag == "img" and dict(attrs).get("src") == "x":
            self.found.append("<img src=x>")

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and ("alert" in data or "more()" in data or "mine()" in data):
            self.found.append(f"<script>{data}")


def assert_inert(page: str) -> None:
    parser = ActiveContent()
    parser.feed(page)
    assert parser.found == []


def test_hostile_persona_and_memory_files_are_inert_on_every_page(client, hostile):
    for url in hostile_pages(client):
        response = client.get(url)
        assert response.status_code == 200, url
        assert_inert(response.content.decode())


def test_a_hostile_override_is_inert_in_the_conflict_view(client, hostile):
    path = hostile / ALICE / "identity.md"
    response = save(client, ALICE, "identity.md", "<script>mine()</script>\n", version="0" * 64)
    assert response.status_code == 409
    page = response.content.decode()
    assert_inert(page)
    assert "<script>mine()" not in page
    assert path.read_text() == HOSTILE_MD


def test_a_hostile_preview_is_sanitised(client, hostile):
    page = client.post(reverse("workspace-preview"), {"text": HOSTILE_MD}).content.decode()
    assert_inert(page)


# Odd files and odd names: an error in the part they belong to, or a 400 naming the parameter


def section(page: str, element_id: str) -> str:
    """The HTML of <section id=element_id>, so a test checks the part an error belongs to."""
    start = page.index(f'<section id="{element_id}">')
    return page[start : page.index("</section>", start)]


@pytest.mark.parametrize(
    ("name", "part"), [("user.md", "profile"), ("memory.md", "memory"), ("knowledge.jsonl", "knowledge")]
)
def test_a_fifo_in_place_of_a_memory_file_is_an_error_in_its_part(client, memory, editor, fifo, name, part):
    fifo(memory / ALICE / name)
    response = client.get(reverse("workspace-jid", args=[0, ALICE]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "not a regular file (a FIFO)" in section(page, part)
    assert "mockup.png" in section(page, "stored-files")  # the rest of the page is there


def test_a_fifo_history_and_archive_leave_the_status_and_sessions_standing(client, memory, editor, fifo):
    fifo(memory / ALICE / "history.jsonl")
    fifo(memory / ALICE / "sessions" / "20250101-000000.jsonl")
    body = get_json(client, reverse("api-workspace-jid", args=[0, ALICE]))
    assert f"{ALICE}/history.jsonl: not a regular file (a FIFO)" in body["status"]["errors"]
    assert [(s["name"], s["error"]) for s in body["sessions"]] == [
        ("history.jsonl", "not a regular file (a FIFO)"),
        ("sessions/20250601-143022.jsonl", None),
        ("sessions/20250101-000000.jsonl", "not a regular file (a FIFO)"),
    ]


def test_a_folder_named_memory_md_is_an_error_in_the_memory_part(client, memory, editor):
    (memory / ALICE / "memory.md").unlink()
    (memory / ALICE / "memory.md").mkdir()
    response = client.get(reverse("workspace-jid", args=[0, ALICE]))
    assert response.status_code == 200
    assert "not a regular file (a folder)" in section(response.content.decode(), "memory")


@pytest.mark.parametrize("target", ["loop", "outside"])
def test_a_bad_knowledge_link_is_an_error_in_its_part_not_a_404(client, memory, editor, tmp_path, target):
    link = memory / ALICE / "knowledge.jsonl"
    link.unlink()
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"key": "stolen", "content": "secret", "ts": "2025-01-01T00:00:00Z"}\n')
    link.symlink_to(link if target == "loop" else outside)
    response = client.get(reverse("workspace-jid", args=[0, ALICE]))
    page = response.content.decode()
    assert response.status_code == 200
    assert "knowledge.jsonl" in section(page, "knowledge") and 'class="problems"' in section(
        page, "knowledge"
    )
    assert "stolen" not in page  # a link leaving the root is still never read
    assert "Printer wants PDF/X-1a" in section(page, "memory")
    body = get_json(client, reverse("api-workspace-jid", args=[0, ALICE]))
    assert body["knowledge"]["entries"] == [] and body["knowledge"]["problems"][0]["line"] == 0
    assert body["status"]["knowledge_entries"] == 0


def test_a_profile_link_leaving_the_root_is_an_error_in_its_part(client, memory, editor, tmp_path):
    (tmp_path / "elsewhere.md").write_text("a profile from elsewhere")
    (memory / ALICE / "user.md").unlink()
    (memory / ALICE / "user.md").symlink_to(tmp_path / "elsewhere.md")
    response = client.get(reverse("workspace-jid", args=[0, ALICE]))
    assert response.status_code == 200
    assert "leads outside its folder" in section(response.content.decode(), "profile")
    assert "from elsewhere" not in response.content.decode()


def test_memory_search_and_the_secrets_report_skip_a_fifo(client, memory, editor, fifo):
    fifo(memory / ALICE / "memory.md")
    fifo(memory / ALICE / "sessions" / "20250101-000000.jsonl")
    assert get_json(client, reverse("api-workspace-search"), q="Stripe")["hits"]
    assert "findings" in get_json(client, reverse("api-workspace-secrets"))
    client.get(reverse("workspace-jid", args=[0, ALICE]))
    assert fifo.opened == []


def test_a_stored_file_replaced_by_a_fifo_is_404_without_opening_it(client, memory, editor, fifo):
    name = "7d3f1a92-5c4e-4b8a-9f21-0e6d8c4b2a17_notes.txt"
    fifo(memory / ALICE / "files" / name)
    assert client.get(reverse("workspace-file", args=[0, ALICE, name])).status_code == 404
    assert fifo.opened == []


def test_a_stored_file_whose_name_has_cr_lf_is_served_with_the_name_encoded(client, memory, editor):
    name = "7d3f1a92-5c4e-4b8a-9f21-0e6d8c4b2a17_a\r\nSet-Cookie: x=1.txt"
    (memory / ALICE / "files" / name).write_text("hello")
    response = client.get(reverse("workspace-file", args=[0, ALICE, name]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("inline; filename*=utf-8''")
    assert "%0D%0ASet-Cookie" in response["Content-Disposition"]
    assert "Set-Cookie" not in response.headers


LONG = "a" * 250 + "@example.com"  # 262 bytes: no file system holds such a name


@pytest.mark.parametrize(
    ("name", "args", "parameter"),
    [
        ("workspace-jid", [0, LONG], "jid"),
        ("api-workspace-jid", [0, LONG], "jid"),
        ("workspace-prompt", [0, LONG], "jid"),
        ("api-workspace-prompt", [0, LONG], "jid"),
        ("workspace-source", [0, ALICE, "n" * 256 + ".md"], "name"),
        ("api-workspace-source", [0, ALICE, "n" * 256 + ".md"], "name"),
        ("workspace-file", [0, ALICE, "é" * 128], "name"),
    ],
)
def test_a_name_over_255_bytes_is_a_400_naming_it(client, memory, editor, name, args, parameter):
    response = client.get(reverse(name, args=args))
    assert response.status_code == 400
    body = orjson.loads(response.content)["error"] if name.startswith("api-") else response.content.decode()
    assert body.startswith(f"{parameter}: longer than 255 bytes")


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.parametrize(
    ("parameter", "value"), [("_page", "²"), ("_page", "٣"), ("_page", "9" * 400), ("jid", LONG)]
)
def test_an_odd_secrets_parameter_is_a_400_naming_it(client, memory, editor, prefix, parameter, value):
    response = client.get(reverse(f"{prefix}workspace-secrets"), {parameter: value})
    assert response.status_code == 400
    body = orjson.loads(response.content)["error"] if prefix else response.content.decode()
    assert body.startswith(f"{parameter}: ")


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_an_odd_audit_log_page_is_a_400_naming_it(client, memory, editor, prefix):
    response = client.get(reverse(f"{prefix}workspace-audit-log"), {"_page": "１２"})
    assert response.status_code == 400
    body = orjson.loads(response.content)["error"] if prefix else response.content.decode()
    assert body.startswith("_page: ")


def test_bad_entries_in_files_and_sessions_are_listed_with_their_errors_and_no_links(
    client, memory, editor, tmp_path, fifo
):
    (tmp_path / "secret.txt").write_text("outside")
    files, sessions = memory / ALICE / "files", memory / ALICE / "sessions"
    (files / "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_stolen.txt").symlink_to(tmp_path / "secret.txt")
    (files / "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_gone.png").symlink_to(files / "nothing-here")
    fifo(sessions / "20250701-090000.jsonl")
    (sessions / "20250801-090000.jsonl").symlink_to(sessions / "20250801-090000.jsonl")
    response = client.get(reverse("workspace-jid", args=[0, ALICE]))
    page = response.content.decode()
    assert response.status_code == 200
    stored, listed = section(page, "stored-files"), section(page, "sessions")
    assert "stolen.txt" in stored and "leads outside its folder" in stored
    assert "gone.png" in stored and "a broken link" in stored
    assert "mockup.png" in stored  # the good files are still there, with their links
    for name in (
        "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_stolen.txt",
        "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_gone.png",
    ):
        assert reverse("workspace-file", args=[0, ALICE, name]) not in stored  # no link to preview or raw
    assert "20250701-090000.jsonl" in listed and "not a regular file (a FIFO)" in listed
    assert "20250801-090000.jsonl" in listed and "loop of links" in listed
    for name in ("20250701-090000.jsonl", "20250801-090000.jsonl"):
        assert reverse("workspace-session-source", args=[0, ALICE, name]) not in listed
    assert "outside" not in page.replace("leads outside", "")  # a link leaving the root is never read
    body = get_json(client, reverse("api-workspace-jid", args=[0, ALICE]))
    errors = {f["original_name"]: (f["error"], f["url"]) for f in body["stored_files"]}
    assert errors["stolen.txt"][1] is None and "leads outside" in errors["stolen.txt"][0]
    assert errors["gone.png"][1] is None and "a broken link" in errors["gone.png"][0]
    assert errors["mockup.png"][0] is None and errors["mockup.png"][1]
    rows = {s["name"]: s for s in body["sessions"]}
    fifo_row = rows["sessions/20250701-090000.jsonl"]
    assert (fifo_row["error"], fifo_row["source_url"], fifo_row["transcript_url"]) == (
        "not a regular file (a FIFO)",
        None,
        None,
    )
    assert rows["sessions/20250601-143022.jsonl"]["error"] is None
    assert fifo.opened == []


# The editor in front of a file it cannot read


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_the_editor_shows_an_unreadable_file_read_only_with_its_error(client, memory, editor, fifo, kind):
    path = memory / ALICE / "user.md"
    path.unlink(missing_ok=True)
    fifo(path) if kind == "fifo" else path.mkdir()
    response = client.get(edit_url(ALICE, "user.md"))
    page = response.content.decode()
    assert response.status_code == 200
    assert f"not a regular file (a {'FIFO' if kind == 'fifo' else 'folder'})" in page
    assert "undecodable bytes" not in page  # that is the message for a file that is not UTF-8
    assert save_url(ALICE, "user.md") not in page  # no form to save over it
    assert fifo.opened == []


def test_the_jid_page_offers_no_create_link_for_an_unreadable_file(client, memory, editor, fifo):
    path = memory / ALICE / "user.md"
    path.unlink(missing_ok=True)
    fifo(path)
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert "not a regular file (a FIFO)" in section(page, "profile")
    assert edit_url(ALICE, "user.md") not in section(page, "profile")


@pytest.mark.parametrize("version", ["", "absent"])
def test_a_save_over_an_unreadable_file_is_refused_with_the_text_kept(client, memory, editor, fifo, version):
    path = memory / ALICE / "user.md"
    path.unlink(missing_ok=True)
    fifo(path)
    response = client.post(save_url(ALICE, "user.md"), {"text": "Mine, kept", "version": version})
    page = response.content.decode()
    assert response.status_code == 409
    assert "not a regular file (a FIFO)" in page
    assert "Mine, kept" in page
    assert path.is_fifo()  # nothing on disk changed
    assert not Revision.objects.exists()
    assert fifo.opened == []


def test_removing_an_override_that_became_a_fifo_is_refused_with_its_error(client, memory, editor, fifo):
    path = memory / ALICE / "identity.md"
    fifo(path)
    response = client.post(
        reverse("workspace-remove-run", args=[0, ALICE, "identity.md"]), {"version": "absent"}
    )
    assert response.status_code == 409
    assert "Not removed: not a regular file (a FIFO)" in response.content.decode()
    assert path.is_fifo() and not Revision.objects.exists()
    assert fifo.opened == []


def test_restoring_over_a_file_that_became_a_fifo_is_refused_with_its_error(client, memory, editor, fifo):
    path = memory / "identity.md"
    save(client, "", "identity.md", "First.\n", path=path)
    first = Revision.objects.get()
    path.unlink()
    fifo(path)
    response = client.post(reverse("workspace-revision-restore", args=[first.id]), {"version": "absent"})
    assert response.status_code == 409
    assert "Not restored: not a regular file (a FIFO)" in response.content.decode()
    assert path.is_fifo() and Revision.objects.count() == 1
    assert fifo.opened == []


def test_new_with_a_fifo_for_history_is_refused_with_its_error(client, memory, editor, fifo):
    history = memory / ALICE / "history.jsonl"
    history.unlink()
    fifo(history)
    confirm = client.get(reverse("workspace-new", args=[0, ALICE]))
    assert confirm.status_code == 200
    assert "not a regular file (a FIFO)" in confirm.content.decode()
    response = client.post(reverse("workspace-new-run", args=[0, ALICE]), {"version": "absent"})
    assert response.status_code == 409
    assert "Not archived: not a regular file (a FIFO)" in response.content.decode()
    assert history.is_fifo() and not AuditEvent.objects.exists()
    assert fifo.opened == []


# Every page's JSON twin is its own path under /api/


@pytest.mark.parametrize("page", ["workspace-secrets", "workspace-audit-log"])
def test_the_twin_of_a_workspace_report_is_its_own_path_under_api(page):
    assert reverse(f"api-{page}") == "/api" + reverse(page).rstrip("/")


@pytest.mark.parametrize(
    ("old", "new"),
    # /api/secrets redirected to the memory report until #31 gave it the sessions' Secrets page.
    [("/api/audit-log", "/api/workspaces/audit-log")],
)
def test_the_old_twin_of_a_workspace_report_redirects_for_good_keeping_its_query(client, old, new):
    response = client.get(old + "?jid=alice%40example.com&_page=2")
    assert response.status_code == 301
    assert response["Location"] == new + "?jid=alice%40example.com&_page=2"


# Every query string read by a form: a bad value is a 400 whose message starts with its name


def _error_body(response) -> str:
    if response["Content-Type"] == "application/json":
        return orjson.loads(response.content)["error"]
    return response.content.decode()


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.parametrize("value", ["gossip", " email"])
def test_an_unknown_secrets_kind_is_a_400_naming_it(client, memory, editor, prefix, value):
    response = client.get(reverse(f"{prefix}workspace-secrets"), {"kind": value})
    assert response.status_code == 400
    assert _error_body(response).startswith("kind: ")


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_a_secrets_jid_with_spaces_around_it_is_the_jid(client, memory, editor, prefix):
    (memory / CAROL / "memory.md").write_text("- erin@shop.example\n")
    response = client.get(reverse(f"{prefix}workspace-secrets"), {"jid": f"  {CAROL} "})
    assert response.status_code == 200
    if prefix:
        assert orjson.loads(response.content)["jid"] == CAROL


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.parametrize("parameter", ["root", "jid"])
def test_a_nul_in_an_audit_log_filter_is_a_400_naming_it(client, memory, editor, prefix, parameter):
    response = client.get(reverse(f"{prefix}workspace-audit-log"), {parameter: "a\x00b"})
    assert response.status_code == 400
    assert _error_body(response).startswith(f"{parameter}: ")


@pytest.mark.parametrize("url_name", ["workspace-audit-log", "api-workspace-audit-log"])
def test_an_unknown_audit_action_names_the_actions_it_takes(client, memory, editor, url_name):
    response = client.get(reverse(url_name), {"action": "delete"})
    assert (
        _error_body(response)
        == "action: must be one of create, edit, remove, restore, new, forget, purge, share-create, share-open, share-revoke"
    )


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_a_nul_in_the_memory_search_is_a_400_naming_q(client, memory, editor, prefix):
    response = client.get(reverse(f"{prefix}workspace-search"), {"q": "a\x00b"})
    assert response.status_code == 400
    assert _error_body(response).startswith("q: ")


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.parametrize("page", ["workspace-memory-changes", "workspace-memory-findings"])
@pytest.mark.parametrize("value", ["x", "-1", "٣"])
def test_a_bad_root_index_is_a_400_naming_root(client, memory, editor, prefix, page, value):
    response = client.get(reverse(f"{prefix}{page}"), {"root": value})
    assert response.status_code == 400
    assert _error_body(response).startswith("root: ")


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.parametrize("page", ["workspace-memory-changes", "workspace-memory-findings"])
def test_a_root_index_past_the_roots_is_a_404(client, memory, editor, prefix, page):
    assert client.get(reverse(f"{prefix}{page}"), {"root": "7"}).status_code == 404


def test_a_root_index_is_not_a_filter_of_the_memory_changes_json(client, memory, editor):
    data = get_json(client, reverse("api-workspace-memory-changes"), root="0")
    assert "root" not in data["filters"] and data["root"] == 0


def test_a_root_index_is_not_a_filter_of_the_memory_findings_json(client, memory, editor):
    data = get_json(client, reverse("api-workspace-memory-findings"), root="0")
    assert "root" not in data["filters"] and data["root"] == 0


# Every JSON twin answers what it cannot find with the JSON error (views/http.errors_as_json)

FP = "0" * 64


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("api-workspace-jid", [7, ALICE]),
        ("api-workspace-prompt", [7, ALICE]),
        ("api-workspace-memory-timeline", [7, ALICE]),
        ("api-workspace-memory-as-of", [7, ALICE]),
        ("api-workspace-source", [7, ALICE, "memory.md"]),
        ("api-workspace-session-source", [7, ALICE, "20250601-143022.jsonl"]),
        ("api-workspace-global-source", [7, "identity.md"]),
        ("api-workspace-edit", [7, ALICE, "memory.md"]),
        ("api-workspace-global-edit", [7, "identity.md"]),
        ("api-workspace-remove", [7, ALICE, "identity.md"]),
        ("api-workspace-new", [7, ALICE]),
        ("api-workspace-forget", [7, ALICE]),
        ("api-workspace-purge", [7, ALICE, FP]),
        ("api-workspace-global-purge", [7, FP]),
    ],
)
def test_every_twin_answers_an_unknown_root_with_a_json_404_naming_it(client, memory, editor, name, args):
    assert get_json(client, reverse(name, args=args), status=404) == {
        "error": "no memory root 7",
        "status": 404,
    }


def test_the_revision_twin_answers_an_unknown_revision_with_a_json_404(client, memory, editor):
    body = get_json(client, reverse("api-workspace-revision", args=[999]), status=404)
    assert body == {"error": "no revision 999", "status": 404}


@pytest.mark.parametrize("name", ["api-workspace-purge", "api-workspace-global-purge"])
def test_the_purge_twin_answers_an_unknown_finding_with_a_json_404(client, memory, editor, name):
    args = [0, ALICE, FP] if name == "api-workspace-purge" else [0, FP]
    assert get_json(client, reverse(name, args=args), status=404)["error"].startswith("no such finding")


@pytest.mark.parametrize(
    ("name", "args", "twin"),
    [
        ("workspace-memory-timeline", [0, ALICE], "api-workspace-memory-timeline"),
        ("workspace-memory-as-of", [0, ALICE], "api-workspace-memory-as-of"),
        ("workspace-memory-changes", [], "api-workspace-memory-changes"),
        ("workspace-memory-findings", [], "api-workspace-memory-findings"),
    ],
)
def test_a_memory_page_links_its_json_twin_with_the_same_query(client, memory, editor, name, args, twin):
    page = client.get(reverse(name, args=args), {"_page": "1"}).content.decode()
    assert f'href="{reverse(twin, args=args)}?_page=1">JSON</a>' in page


def test_the_jid_page_links_the_reports_of_that_jid(client, memory, editor):
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    jid = ALICE.replace("@", "%40")
    assert f'href="{reverse("workspace-secrets")}?jid={jid}">Secrets report' in page
    assert f'href="{reverse("workspace-audit-log")}?jid={jid}">Audit log' in page
