"""workspace_records: the revision and audit event of each write, in the write's transaction."""

from pathlib import Path

import pytest
from django.conf import settings

from sessionviewer import workspace_records as records
from sessionviewer.memory_index import MemoryRoot
from sessionviewer.models import AuditEvent, Revision
from sessionviewer.workspace_pages import Target
from sessionviewer.workspaces.writes import ErasedFile, ForgetPlan

from .users import EDITOR, make_user

pytestmark = pytest.mark.django_db

JID = "alice@example.com"


@pytest.fixture
def user():
    return make_user(EDITOR, "editors")


def _root(root: Path) -> MemoryRoot:
    return MemoryRoot(root, settings.SESSIONVIEWER_MACHINE)


def _target(root: Path, name: str = "memory.md") -> Target:
    return Target(0, root, settings.SESSIONVIEWER_MACHINE, JID, name, root / JID / name)


def test_a_file_change_records_its_revision_and_the_event_naming_it(tmp_path, user):
    with records.file_change(user, _target(tmp_path), None)(b"old\n", b"new\n"):
        pass
    revision = Revision.objects.get()
    assert (revision.root, revision.jid, revision.filename, revision.after) == (
        str(tmp_path),
        JID,
        "memory.md",
        "new\n",
    )
    event = AuditEvent.objects.get()
    assert (event.action, event.detail["file"], event.detail["revision"]) == (
        "edit",
        "memory.md",
        revision.id,
    )


def test_a_file_change_without_a_file_before_is_a_create(tmp_path, user):
    with records.file_change(user, _target(tmp_path), None)(None, b"new\n"):
        pass
    assert AuditEvent.objects.get().action == "create"


def test_a_file_change_that_fails_inside_leaves_no_record(tmp_path, user):
    with pytest.raises(OSError), records.file_change(user, _target(tmp_path), "remove")(b"old\n", None):
        raise OSError("the rename failed")
    assert not Revision.objects.exists() and not AuditEvent.objects.exists()


def test_an_archive_names_the_file_the_session_became(tmp_path, user):
    with records.archive(user, _root(tmp_path), JID)(tmp_path / JID / "sessions" / "20260303-100000.jsonl"):
        pass
    event = AuditEvent.objects.get()
    assert (event.action, event.detail) == ("new", {"archived": "sessions/20260303-100000.jsonl"})


def test_an_empty_session_is_recorded_with_nothing_archived(tmp_path, user):
    records.empty_session(user, _root(tmp_path), JID)
    assert AuditEvent.objects.get().detail == {"archived": None}


def test_a_forget_records_the_names_and_erases_their_revisions(tmp_path, user):
    with records.file_change(user, _target(tmp_path), None)(None, b"a secret\n"):
        pass
    plan = ForgetPlan(("memory.md",), (ErasedFile("memory.md", 9, "0" * 64),))
    records.forget(user, _root(tmp_path), JID, plan)
    assert not Revision.objects.exists()
    event = AuditEvent.objects.get(action="forget")
    assert event.detail["erased"] == ["memory.md"] and "a secret" not in str(event.detail)


def test_every_record_names_the_machine_whose_tree_was_written(tmp_path, user, settings):
    settings.SESSIONVIEWER_MACHINE = "fluux-host"
    with records.file_change(user, _target(tmp_path), None)(None, b"new\n"):
        pass
    records.empty_session(user, _root(tmp_path), JID)
    records.forget(user, _root(tmp_path), JID, ForgetPlan((), ()))
    assert Revision.objects.get().machine == "fluux-host"
    assert set(AuditEvent.objects.values_list("machine", flat=True)) == {"fluux-host"}
