"""The memory file registry (workspaces/memory_files.py): what it lists, and that a new memory
file type is its entry and nothing more: listed, indexed, editable, shown and forgotten."""

from __future__ import annotations

import orjson
import pytest
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.index.memory import snapshot_roots
from sessionviewer.models import MemorySnapshot
from sessionviewer.readers import fluux_xmpp
from sessionviewer.workspaces import memory_files
from sessionviewer.workspaces.memory_files import Kind, MemoryFile, Scope

ALICE = "alice@example.com"
PERSONA = ("identity.md", "personality.md", "instructions.md")


def test_the_persona_files_are_the_readers_global_files_in_prompt_order():
    assert memory_files.root_names() == memory_files.PERSONA_FILES == fluux_xmpp.GLOBAL_FILES == PERSONA


def test_each_name_is_listed_once():
    names = [f.name for f in memory_files.MEMORY_FILES]
    assert sorted(names) == sorted(set(names))


def test_every_kind_has_a_file():
    assert {f.kind for f in memory_files.MEMORY_FILES} == set(Kind)


def test_a_jid_folder_holds_its_own_copies_of_the_persona_files_then_its_own():
    assert memory_files.jid_names() == (*PERSONA, "user.md", "context.md", "memory.md", "knowledge.jsonl")


def test_context_md_is_read_where_user_md_does_not_exist():
    legacy = memory_files.legacy_of("user.md")
    assert (legacy.name, legacy.kind, legacy.section) == ("context.md", Kind.CONTEXT, "profile")
    assert memory_files.legacy_of("memory.md") is None


def test_the_editor_writes_persona_files_at_the_root_and_a_jids_text_files():
    assert memory_files.editable_names("") == PERSONA
    assert memory_files.editable_names(ALICE) == (*PERSONA, "user.md", "memory.md")


def test_forget_erases_the_jids_own_files_and_keeps_its_persona_overrides():
    assert memory_files.forgotten_names() == ("user.md", "context.md", "memory.md", "knowledge.jsonl")
    assert ws.forgotten() == ("history.jsonl", "history.md", *memory_files.forgotten_names())
    assert memory_files.kept_names() == PERSONA


def test_each_file_in_the_prompt_has_a_heading_and_the_others_none():
    for f in memory_files.MEMORY_FILES:
        assert bool(f.section) == bool(f.heading), f.name
    assert [f.name for f in memory_files.MEMORY_FILES if not f.section] == ["knowledge.jsonl", "files/"]


def test_the_jid_page_shows_the_profile_then_the_memory():
    assert [f.name for f in memory_files.shown_parts()] == ["user.md", "memory.md"]


# A made-up type, added to the registry alone: everything else must follow.

GOALS = MemoryFile(
    "goals.md", Kind.MEMORY, Scope.JID, "Goals", editable=True, forgotten=True, absent="No goals."
)


@pytest.fixture
def goals(monkeypatch, memory):
    monkeypatch.setattr(memory_files, "MEMORY_FILES", (*memory_files.MEMORY_FILES, GOALS))
    path = memory / ALICE / "goals.md"
    path.write_text("- ship the viewer\n", encoding="utf-8")
    return path


def test_a_new_memory_file_type_is_listed(goals, memory):
    entry = ws.jid_entry(memory, ALICE)
    assert entry.files["goals.md"].present
    assert "goals.md" not in entry.other


@pytest.mark.django_db
def test_a_new_memory_file_type_is_indexed(goals, memory):
    snapshot_roots([memory])
    kept = MemorySnapshot.objects.get(jid=ALICE, filename="goals.md", current=True)
    assert bytes(kept.content) == b"- ship the viewer\n"


@pytest.mark.django_db
def test_a_new_memory_file_type_is_editable(goals, client, editor):
    page = client.get(reverse("workspace-edit", args=[0, ALICE, "goals.md"]))
    assert page.status_code == 200
    assert "- ship the viewer" in page.content.decode()
    url = reverse("workspace-save", args=[0, ALICE, "goals.md"])
    response = client.post(url, {"text": "- write its tests\n", "version": ws.file_version(goals)})
    assert response.status_code == 302
    assert goals.read_text(encoding="utf-8") == "- write its tests\n"


@pytest.mark.django_db
def test_a_new_memory_file_type_is_shown_on_the_jid_page(goals, client, editor):
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert '<section id="goals">' in page
    assert "<h2>Goals <code>goals.md</code></h2>" in page
    assert "<li>ship the viewer</li>" in page
    assert "Edit goals.md</a>" in page


@pytest.mark.django_db
def test_a_new_memory_file_type_not_written_yet_can_be_created(goals, client, editor):
    goals.unlink()
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert '<p class="muted">No goals.</p>' in page
    assert "Create goals.md</a>" in page


@pytest.mark.django_db
def test_a_new_memory_file_type_is_in_the_memory_as_of_a_moment(goals, memory, client, editor):
    snapshot_roots([memory])
    url = reverse("api-workspace-memory-as-of", args=[0, ALICE])
    data = orjson.loads(client.get(url, {"at": "2100-01-01T00:00:00Z"}).content)
    assert [f["status"] for f in data["files"] if (f["jid"], f["file"]) == (ALICE, "goals.md")] == ["present"]


def test_a_new_memory_file_type_is_erased_by_forget(goals, memory):
    assert "goals.md" in ws.forgettable(memory / ALICE)
