"""Revisions and audit events record themselves: one model method per thing the editor does."""

import pytest
from django.contrib.auth.models import User

from sessionviewer.models import AuditEvent, MemorySnapshot, Revision

pytestmark = pytest.mark.django_db

ROOT = "/srv/memory"
MACHINE = "fluux-host"
ALICE = "alice@example.com"


@pytest.fixture
def user() -> User:
    return User.objects.create_user("ed")


def test_recording_a_change_saves_its_revision_and_an_audit_event_naming_it(user):
    revision = Revision.record(
        b"old", b"new", machine=MACHINE, root=ROOT, jid=ALICE, filename="memory.md", user=user
    )
    assert (bytes(revision.before_bytes), bytes(revision.after_bytes)) == (b"old", b"new")
    event = AuditEvent.objects.get()
    assert (event.user, event.action, event.root, event.jid) == (user, "edit", ROOT, ALICE)
    assert event.detail == {"file": "memory.md", "revision": revision.id}


def test_recording_a_change_to_a_new_file_is_a_create(user):
    Revision.record(None, b"new", machine=MACHINE, root=ROOT, jid=ALICE, filename="memory.md", user=user)
    assert AuditEvent.objects.get().action == "create"


def test_recording_a_restore_names_its_action_and_detail(user):
    revision = Revision.record(
        b"new",
        b"old",
        machine=MACHINE,
        root=ROOT,
        jid="",
        filename="identity.md",
        user=user,
        action="restore",
        restored=7,
    )
    event = AuditEvent.objects.get()
    assert event.action == "restore"
    assert event.detail == {"file": "identity.md", "revision": revision.id, "restored": 7}


def test_recording_an_event_keeps_its_detail(user):
    event = AuditEvent.record(
        user, "new", ROOT, ALICE, machine=MACHINE, archived="sessions/20250601-143022.jsonl"
    )
    assert AuditEvent.objects.get().to_dict() == event.to_dict()
    assert event.detail == {"archived": "sessions/20250601-143022.jsonl"}


def test_recording_a_forget_erases_the_revisions_of_the_files_it_names_and_no_others(user):
    for filename in ("memory.md", "user.md", "identity.md"):
        Revision.record(None, b"x", machine=MACHINE, root=ROOT, jid=ALICE, filename=filename, user=user)
    files = [{"name": "memory.md", "size": 1, "sha256": "ab"}]
    event = AuditEvent.record_forget(user, ROOT, ALICE, ["memory.md", "user.md"], files, machine=MACHINE)
    assert sorted(Revision.objects.values_list("filename", flat=True)) == ["identity.md"]
    assert event.detail == {
        "erased": ["memory.md", "user.md"],
        "files": files,
        "revisions": 2,
        "snapshots": 2,
    }


def test_the_history_of_a_file_is_newest_first_and_bounded(user):
    made = [
        Revision.record(None, b"x", machine=MACHINE, root=ROOT, jid=ALICE, filename="memory.md", user=user)
        for _ in range(3)
    ]
    Revision.record(None, b"x", machine=MACHINE, root=ROOT, jid=ALICE, filename="user.md", user=user)
    assert list(Revision.history_of(MACHINE, ROOT, ALICE, "memory.md", limit=2)) == made[::-1][:2]


def test_events_filter_by_root_jid_and_action_newest_first(user):
    AuditEvent.record(user, "new", ROOT, ALICE, machine=MACHINE)
    AuditEvent.record(user, "forget", ROOT, ALICE, machine=MACHINE)
    AuditEvent.record(user, "new", "/elsewhere", ALICE, machine=MACHINE)
    last = AuditEvent.record(user, "new", ROOT, ALICE, machine=MACHINE)
    assert [e.id for e in AuditEvent.filtered(root=ROOT, jid=ALICE, action="new")][0] == last.id
    assert AuditEvent.filtered(root=ROOT, jid=ALICE, action="new").count() == 2
    assert AuditEvent.filtered().count() == 4
    assert AuditEvent.recorded_roots() == ["/elsewhere", ROOT]


# Two machines' trees at one path: two histories of revisions and events.


def test_a_change_is_recorded_in_its_machines_history(user):
    revision = Revision.record(
        None, b"x", machine=MACHINE, root=ROOT, jid=ALICE, filename="memory.md", user=user
    )
    event = AuditEvent.objects.get()
    assert (revision.machine, event.machine, revision.snapshots.get().machine) == (MACHINE, MACHINE, MACHINE)
    assert revision.to_dict()["machine"] == event.to_dict()["machine"] == MACHINE


def test_the_history_of_a_file_is_its_machines_alone(user):
    mine = Revision.record(None, b"x", machine=MACHINE, root=ROOT, jid=ALICE, filename="memory.md", user=user)
    Revision.record(None, b"y", machine="laptop", root=ROOT, jid=ALICE, filename="memory.md", user=user)
    assert list(Revision.history_of(MACHINE, ROOT, ALICE, "memory.md")) == [mine]


def test_a_forget_erases_only_its_machines_revisions(user):
    for machine in (MACHINE, "laptop"):
        Revision.record(None, b"x", machine=machine, root=ROOT, jid=ALICE, filename="memory.md", user=user)
    event = AuditEvent.record_forget(user, ROOT, ALICE, ["memory.md"], [], machine=MACHINE)
    assert list(Revision.objects.values_list("machine", flat=True)) == ["laptop"]
    assert (event.machine, event.detail["revisions"]) == (MACHINE, 1)


def test_events_filter_by_machine(user):
    AuditEvent.record(user, "new", ROOT, ALICE, machine=MACHINE)
    laptop = AuditEvent.record(user, "new", ROOT, ALICE, machine="laptop")
    AuditEvent.objects.create(user=user, action="new", root=ROOT, jid=ALICE)  # before machines
    assert list(AuditEvent.filtered(machine="laptop")) == [laptop]
    assert AuditEvent.recorded_machines() == [MACHINE, "laptop"]


def test_a_claim_gives_a_paths_unclaimed_revisions_and_events_to_the_machine(user):
    Revision.record(None, b"x", machine="", root=ROOT, jid=ALICE, filename="memory.md", user=user)
    Revision.record(None, b"y", machine="laptop", root=ROOT, jid=ALICE, filename="user.md", user=user)
    Revision.record(None, b"z", machine="", root="/elsewhere", jid=ALICE, filename="memory.md", user=user)
    MemorySnapshot.claim(MACHINE, ROOT)
    assert sorted(Revision.objects.values_list("machine", "root")) == [
        ("", "/elsewhere"), (MACHINE, ROOT), ("laptop", ROOT)
    ]  # fmt: skip
    assert sorted(AuditEvent.objects.values_list("machine", "root")) == [
        ("", "/elsewhere"), (MACHINE, ROOT), ("laptop", ROOT)
    ]  # fmt: skip
