"""The memory as it was at a moment: every file as its snapshots show it, and the effective
prompt rebuilt from those bytes, on memory trees whose agent writes have chosen mtimes."""

from __future__ import annotations

import datetime as dt
import re
from datetime import UTC, timedelta

import orjson
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.urls import reverse
from django.utils import timezone

from sessionviewer import memory_timeline
from sessionviewer import workspaces as ws
from sessionviewer.models import MemorySnapshot, Revision
from sessionviewer.workspaces import prompt as prompt_module

from .memory_turns import ALICE, at, direct_turn, fact, index, timeline, write
from .users import NOBODY, make_user

pytestmark = pytest.mark.django_db


def as_of(client, moment: str, jid: str = ALICE) -> dict:
    response = client.get(reverse("api-workspace-memory-as-of", args=[0, jid]), {"at": moment})
    assert response.status_code == 200, response.content
    return orjson.loads(response.content)


def save(client, name: str, text: str, path) -> None:
    url = reverse("workspace-save", args=[0, ALICE, name])
    assert client.post(url, {"text": text, "version": ws.file_version(path)}).status_code == 302


def file_of(data: dict, name: str, jid: str = ALICE) -> dict:
    return next(f for f in data["files"] if (f["jid"], f["file"]) == (jid, name))


def frozen_today(monkeypatch, day: dt.date) -> None:
    class Today(dt.date):
        @classmethod
        def today(cls):
            return day

    monkeypatch.setattr(prompt_module, "date", Today)


def test_the_as_of_view_reproduces_an_earlier_effective_prompt_byte_for_byte(
    client, tree, editor, monkeypatch
):
    write(tree / "identity.md", "You are Fluux.\n", at(9, 30))
    write(tree / ALICE / "user.md", "Name: Alice\n", at(10, 0))
    write(tree / ALICE / "memory.md", "Likes tea.\nPrefers mornings.\n", at(10, 5))
    index(tree)
    save(client, "instructions.md", "Answer in French.", tree / ALICE / "instructions.md")
    t1 = timezone.now()
    frozen_today(monkeypatch, t1.astimezone().date())
    then = orjson.loads(client.get(reverse("api-workspace-prompt", args=[0, ALICE])).content)["text"]
    save(client, "memory.md", "Likes coffee now.", tree / ALICE / "memory.md")
    later = (t1 + timedelta(seconds=5)).timestamp()
    write(tree / ALICE / "user.md", "Name: Alice B.\n", later)
    write(tree / "identity.md", "You are someone else.\n", later)
    index(tree)
    now = orjson.loads(client.get(reverse("api-workspace-prompt", args=[0, ALICE])).content)["text"]
    assert now != then
    assert as_of(client, t1.astimezone(UTC).isoformat())["prompt"]["text"] == then


def test_each_file_shows_its_bytes_as_they_were_then(client, tree, editor):
    write(tree / ALICE / "memory.md", "first\n", at(10, 0))
    index(tree)
    write(tree / ALICE / "memory.md", "second\n", at(11, 0))
    index(tree)
    data = as_of(client, "2025-06-02T10:30:00Z")
    assert file_of(data, "memory.md")["text"] == "first\n"
    assert file_of(data, "memory.md")["status"] == "present"


def test_a_file_before_the_snapshots_began_is_said_unknown_not_guessed(client, tree, editor):
    data = as_of(client, "2025-06-01")  # memory.md was first seen with an mtime of June 2, 08:00
    memory = file_of(data, "memory.md")
    assert (memory["status"], memory["text"]) == ("unknown", None)
    assert "began later" in memory["note"]
    assert data["prompt"]["text"] == ""
    assert any("no snapshot of this file at that time" in error for error in data["prompt"]["errors"])


def test_a_file_created_after_the_snapshots_began_was_absent_before(client, tree, editor):
    began = MemorySnapshot.objects.order_by("recorded_at").first().recorded_at
    later = (timezone.now() + timedelta(seconds=5)).timestamp()
    write(tree / ALICE / "user.md", "Name: Alice\n", later)
    index(tree)
    before = as_of(client, (began + timedelta(seconds=1)).astimezone(UTC).isoformat())
    assert file_of(before, "user.md")["status"] == "absent"
    after = as_of(client, (timezone.now() + timedelta(seconds=10)).astimezone(UTC).isoformat())
    assert file_of(after, "user.md")["text"] == "Name: Alice\n"


def test_states_erased_by_forget_are_unknown_before_it(client, tree, editor):
    write(tree / ALICE / "memory.md", "a secret\n", at(10, 0))
    index(tree)
    version = ws.forget_plan(tree / ALICE).version
    client.post(reverse("workspace-forget-run", args=[0, ALICE]), {"version": version})
    data = as_of(client, "2025-06-02T12:00:00Z")
    memory = file_of(data, "memory.md")
    assert memory["status"] == "unknown" and "/forget" in memory["note"]
    assert b"a secret" not in client.get(reverse("workspace-memory-as-of", args=[0, ALICE])).content


def test_files_are_listed_by_name_size_and_hash_as_they_were(client, tree, editor):
    (tree / ALICE / "files").mkdir()
    write(tree / ALICE / "files" / "a.txt", "hello", at(10, 0))
    index(tree)
    stored = as_of(client, timezone.now().astimezone(UTC).isoformat())["stored_files"]
    assert [(f["file"], f["size"]) for f in stored] == [("files/a.txt", 5)]


def test_the_as_of_moment_includes_the_change_made_at_it(tree):
    write(tree / ALICE / "memory.md", "exactly then\n", at(10, 0))
    index(tree)
    change = memory_timeline.load_changes(
        [
            memory_timeline.change_keys(
                str(tree), ALICE, memory_timeline.Filters(), machine=settings.SESSIONVIEWER_MACHINE
            )[0][1]
        ]
    )[0]
    state = memory_timeline.memory_as_of(
        str(tree),
        ALICE,
        change.changed_at + timedelta(microseconds=1),
        "Bot",
        machine=settings.SESSIONVIEWER_MACHINE,
    )
    assert next(f for f in state.files if f.filename == "memory.md").text == "exactly then\n"


def test_each_timeline_entry_links_to_the_memory_just_after_it(client, tree, editor):
    write(tree / ALICE / "memory.md", "linked\n", at(10, 0))
    index(tree)
    change = timeline(client)["changes"][0]
    response = client.get(change["as_of_url"])
    assert response.status_code == 200
    assert "linked" in response.content.decode()
    page = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    assert "memory as it was just after this" in page


@pytest.mark.parametrize("prefix", ["", "api-"])
def test_a_bad_moment_is_a_400_naming_it(client, tree, editor, prefix):
    response = client.get(reverse(f"{prefix}workspace-memory-as-of", args=[0, ALICE]), {"at": "2025-02-30"})
    assert response.status_code == 400
    assert b"at" in response.content


def test_the_page_shows_the_prompt_then_and_says_which_files_are_unknown(client, tree, editor):
    page = client.get(reverse("workspace-memory-as-of", args=[0, ALICE]), {"at": "2025-06-01"})
    text = page.content.decode()
    assert "cannot be rebuilt from what was recorded" in text
    assert "No snapshot at that time" in text


def test_someone_who_may_not_read_workspaces_gets_no_past_memory(client, tree):
    client.force_login(make_user(NOBODY))
    assert client.get(reverse("workspace-memory-as-of", args=[0, ALICE])).status_code == 403
    assert client.get(reverse("api-workspace-memory-as-of", args=[0, ALICE])).status_code == 403


# Editor saves made before snapshots were kept


def older_save(tree, filename: str, before: str | None, after: str | None, day: int, jid: str = ALICE):
    """An editor save recorded as the app did before it kept snapshots: a revision alone."""
    revision = Revision.of_bytes(
        before and before.encode(),
        after and after.encode(),
        machine=settings.SESSIONVIEWER_MACHINE,
        root=str(tree),
        jid=jid,
        filename=filename,
        user=User.objects.get(username="edith"),
    )
    revision.save()
    moment = dt.datetime(2025, 5, day, 12, tzinfo=UTC)
    Revision.objects.filter(id=revision.id).update(created_at=moment)
    return revision


def test_where_no_snapshot_covers_a_moment_the_editors_revision_before_it_tells(client, tree, editor):
    older_save(tree, "memory.md", None, "Likes green tea.\n", 20)
    data = as_of(client, "2025-05-25")
    memory = file_of(data, "memory.md")
    assert (memory["status"], memory["text"], memory["who"]) == ("present", "Likes green tea.\n", "editor")
    assert memory["note"] == "from the editor's revision of 2025-05-20 12:00:00 UTC"
    assert memory["revision"] is not None and memory["snapshot"] is None
    page = client.get(reverse("workspace-memory-as-of", args=[0, ALICE]), {"at": "2025-05-25"})
    assert "From the editor's revision of" in page.content.decode()


def test_the_last_revision_before_the_moment_is_the_one_shown(client, tree, editor):
    older_save(tree, "memory.md", None, "first save\n", 10)
    older_save(tree, "memory.md", "first save\n", "second save\n", 20)
    assert file_of(as_of(client, "2025-05-15"), "memory.md")["text"] == "first save\n"
    assert file_of(as_of(client, "2025-05-25"), "memory.md")["text"] == "second save\n"
    assert file_of(as_of(client, "2025-05-05"), "memory.md")["status"] == "unknown"


def test_a_revision_that_removed_the_file_shows_it_absent(client, tree, editor):
    older_save(tree, "user.md", "Name: Alice\n", None, 20)
    user = file_of(as_of(client, "2025-05-25"), "user.md")
    assert (user["status"], user["note"]) == (
        "absent",
        "removed in the editor's revision of 2025-05-20 12:00:00 UTC",
    )


def test_a_snapshot_before_the_moment_wins_over_an_older_revision(client, tree, editor):
    older_save(tree, "memory.md", None, "saved in May\n", 20)
    memory = file_of(as_of(client, "2025-06-02T12:00:00Z"), "memory.md")
    assert (memory["text"], memory["revision"]) == ("Likes tea.\n", None)


def test_the_prompt_of_a_moment_before_the_snapshots_is_rebuilt_from_revisions(client, tree, editor):
    for name, text in (("identity.md", "You are Fluux.\n"), ("personality.md", "Calm.\n")):
        older_save(tree, name, None, text, 20, jid="")
    older_save(tree, "instructions.md", None, "Be brief.\n", 20, jid="")
    for name in (
        "identity.md",
        "personality.md",
        "instructions.md",
        "user.md",
        "context.md",
        "knowledge.jsonl",
    ):
        older_save(tree, name, "x", None, 20)
    older_save(tree, "memory.md", None, "Likes green tea.\n", 20)
    prompt = as_of(client, "2025-05-25")["prompt"]
    assert prompt["errors"] == []
    assert "You are Fluux." in prompt["text"] and "Likes green tea." in prompt["text"]


def test_an_old_revision_does_not_bring_back_a_file_the_snapshots_show_absent(client, tree, editor):
    older_save(tree, "context.md", None, "Saved in May.\n", 20)
    context = file_of(as_of(client, timezone.now().astimezone(UTC).isoformat()), "context.md")
    assert (context["status"], context["revision"]) == ("absent", None)


def test_the_page_badges_the_global_files_and_offers_the_first_recorded_moment(client, tree, editor):
    page = client.get(
        reverse("workspace-memory-as-of", args=[0, ALICE]), {"at": "2025-06-01"}
    ).content.decode()
    assert '<span class="badge global"' in page
    assert 'id="before-snapshots"' in page and "Show the memory as first recorded" in page
    now = client.get(reverse("workspace-memory-as-of", args=[0, ALICE])).content.decode()
    assert 'id="before-snapshots"' not in now


def test_a_first_seen_change_links_to_the_memory_as_first_recorded(client, tree, editor):
    # The tree's first pass saw memory.md, written at 08:00, long before it.
    [first] = [c for c in timeline(client)["changes"] if c["file"] == "memory.md"]
    assert first["who"] == "first"
    page = client.get(first["as_of_url"]).content.decode()
    assert 'id="before-snapshots"' not in page
    assert "Likes tea." in page


def test_the_as_of_form_picks_a_moment_and_says_its_zone(client, tree, editor):
    page = client.get(
        reverse("workspace-memory-as-of", args=[0, ALICE]), {"at": "2026-03-05T10:30:15.25+00:00"}
    ).content.decode()
    assert '<input type="datetime-local" name="at" value="2026-03-05T10:30:16" step="1">' in page
    assert '<span class="zone">UTC</span>' in page
    timeline = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    assert (
        '<input type="datetime-local" name="at" step="1" required> <span class="zone">UTC</span>' in timeline
    )


def test_a_moment_from_the_form_is_read_in_utc(client, tree, editor):
    data = as_of(client, "2026-03-05T10:30:16")
    assert data["at"].startswith("2026-03-05T10:30:16")


def test_every_time_on_the_timeline_says_its_zone(client, tree, editor):
    direct_turn(tree, 1, at(10, 0), fact("tea", "Likes green tea", at(10, 0)))
    index(tree)
    page = client.get(reverse("workspace-memory-timeline", args=[0, ALICE])).content.decode()
    times = re.findall(r"<time [^>]*>([^<]*)</time>", page)
    roles = re.findall(r'<span class="turn-role">([^<]*)</span>', page)
    assert times and roles
    assert [t for t in times + roles if not t.endswith(" UTC")] == []
