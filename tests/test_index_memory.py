"""Snapshots of the memory and persona files (index/memory.py), on memory trees built here:
the agent's changes are files written with chosen mtimes."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.index import index_roots
from sessionviewer.index.memory import snapshot_roots
from sessionviewer.models import AuditEvent, MemorySnapshot, Revision

from .workspace_files import make_tree

pytestmark = pytest.mark.django_db

ALICE = "alice@example.com"
T0 = datetime(2025, 6, 2, 10, 0, tzinfo=UTC).timestamp()


def write(path: Path, data: bytes | str, at: float) -> None:
    """What the agent does: write a file, which then carries the time it was written."""
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    os.utime(path, (at, at))


@pytest.fixture
def tree(tmp_path, settings) -> Path:
    root = make_tree(
        tmp_path / "memory",
        {
            "identity.md": "You are Fluux.\n",
            f"{ALICE}/memory.md": "Likes tea.\r\n",
            f"{ALICE}/knowledge.jsonl": '{"key":"lang","content":"Rust","ts":"2025-06-01T09:00:00Z"}\n',
            f"{ALICE}/history.jsonl": "",
            f"{ALICE}/files/photo.png": b"\x89PNG\r\n\x1a\n",
        },
    )
    for path in root.rglob("*"):
        if path.is_file():
            os.utime(path, (T0 - 86400, T0 - 86400))
    settings.SESSIONVIEWER_MEMORY_ROOTS = [str(root)]
    return root.resolve()


def snapshots(root: Path, filename: str, jid: str = ALICE) -> list[MemorySnapshot]:
    return list(MemorySnapshot.objects.filter(root=str(root), jid=jid, filename=filename).order_by("id"))


def test_the_first_pass_records_every_tracked_file_as_first_seen(tree):
    summary = snapshot_roots([tree])
    recorded = set(MemorySnapshot.objects.values_list("jid", "filename", "who"))
    assert recorded == {
        ("", "identity.md", "first"),
        (ALICE, "memory.md", "first"),
        (ALICE, "knowledge.jsonl", "first"),
        (ALICE, "files/photo.png", "first"),
    }
    assert summary.changes == 4


def test_a_snapshot_keeps_the_bytes_exactly(tree):
    data = b"caf\xe9 \xff not utf-8\r\nsecond line\r\n"
    write(tree / ALICE / "memory.md", data, T0)
    snapshot_roots([tree])
    (snapshot,) = snapshots(tree, "memory.md")
    assert bytes(snapshot.content) == data
    assert snapshot.size == len(data)


def test_files_are_kept_by_name_size_and_hash_without_content(tree):
    snapshot_roots([tree])
    (snapshot,) = snapshots(tree, "files/photo.png")
    assert snapshot.content is None
    assert (snapshot.size, len(snapshot.sha256)) == (8, 64)


def test_an_unchanged_tree_is_not_read_again(tree):
    snapshot_roots([tree])
    summary = snapshot_roots([tree])
    assert (summary.files, summary.read, summary.changes) == (4, 0, 0)


def test_an_agent_write_is_recorded_as_outside_the_app_at_the_files_mtime(tree):
    snapshot_roots([tree])
    line = b'{"key":"tz","content":"Europe/Paris","ts":"2025-06-02T10:00:00Z"}\n'
    knowledge = tree / ALICE / "knowledge.jsonl"
    write(knowledge, knowledge.read_bytes() + line, T0)
    snapshot_roots([tree])
    first, second = snapshots(tree, "knowledge.jsonl")
    assert (second.who, second.changed_at.timestamp(), second.current) == ("outside", T0, True)
    assert bytes(second.content).endswith(line)
    assert not first.current


def test_several_changes_between_two_passes_are_one(tree):
    snapshot_roots([tree])
    for n in range(3):
        write(tree / ALICE / "memory.md", f"version {n}\n", T0 + n)
    snapshot_roots([tree])
    assert [bytes(s.content) for s in snapshots(tree, "memory.md")][1:] == [b"version 2\n"]


def test_a_touched_file_with_the_same_bytes_is_no_change_and_costs_a_stat_afterwards(tree):
    snapshot_roots([tree])
    os.utime(tree / ALICE / "memory.md", (T0, T0))
    assert snapshot_roots([tree]).changes == 0
    assert snapshot_roots([tree]).read == 0
    assert len(snapshots(tree, "memory.md")) == 1


def test_a_removed_file_is_recorded_as_gone(tree):
    snapshot_roots([tree])
    (tree / ALICE / "memory.md").unlink()
    snapshot_roots([tree])
    gone = snapshots(tree, "memory.md")[-1]
    assert (gone.exists, gone.content, gone.who) == (False, None, "outside")


def test_a_file_created_after_the_first_pass_is_a_change_not_a_first_sight(tree):
    snapshot_roots([tree])
    write(tree / ALICE / "user.md", "Alice, a developer.\n", T0)
    snapshot_roots([tree])
    (created,) = snapshots(tree, "user.md")
    assert created.who == "outside"


def test_a_link_leading_outside_the_root_is_never_read(tree, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("outside the root")
    (tree / ALICE / "memory.md").unlink()
    (tree / ALICE / "memory.md").symlink_to(secret)
    summary = snapshot_roots([tree])
    assert snapshots(tree, "memory.md") == []
    assert any("memory.md" in error for error in summary.errors)


def test_the_index_command_snapshots_the_memory_roots(tree):
    call_command("index", str(tree), verbosity=0)
    assert MemorySnapshot.objects.filter(root=str(tree), jid=ALICE, filename="memory.md").exists()


def test_index_roots_snapshots_the_memory_roots_it_is_given(tree):
    summary = index_roots([], memory=[tree])
    assert summary.memory.changes == 4


def test_retention_drops_past_states_older_than_the_setting_and_keeps_the_current_one(tree, settings):
    snapshot_roots([tree])
    write(tree / ALICE / "memory.md", "newer\n", datetime.now(UTC).timestamp())
    settings.SESSIONVIEWER_MEMORY_RETENTION_DAYS = 30
    snapshot_roots([tree])
    (kept,) = snapshots(tree, "memory.md")
    assert bytes(kept.content) == b"newer\n"
    assert len(snapshots(tree, "knowledge.jsonl")) == 1  # an old current state stays


def test_retention_zero_keeps_every_state(tree, settings):
    settings.SESSIONVIEWER_MEMORY_RETENTION_DAYS = 0
    snapshot_roots([tree])
    write(tree / ALICE / "memory.md", "newer\n", datetime.now(UTC).timestamp())
    snapshot_roots([tree])
    assert len(snapshots(tree, "memory.md")) == 2


# The editor's saves and the agent's writes, interleaved


def save(client, name: str, text: str, path: Path):
    url = reverse("workspace-save", args=[0, ALICE, name])
    return client.post(url, {"text": text, "version": ws.file_version(path)})


def test_an_editor_save_is_recorded_once_with_its_user_and_revision(client, tree, editor):
    snapshot_roots([tree])
    assert save(client, "memory.md", "Likes coffee.", tree / ALICE / "memory.md").status_code == 302
    summary = snapshot_roots([tree])
    first, saved = snapshots(tree, "memory.md")
    assert (saved.who, saved.user, saved.revision) == ("editor", editor, Revision.objects.get())
    assert bytes(saved.content) == b"Likes coffee."
    assert summary.changes == 0
    assert snapshot_roots([tree]).read == 0


def test_editor_saves_and_agent_writes_interleaved_each_keep_their_author(client, tree, editor):
    path = tree / ALICE / "memory.md"
    snapshot_roots([tree])
    write(path, "agent 1\n", T0)
    snapshot_roots([tree])
    save(client, "memory.md", "editor 1", path)
    write(path, "agent 2\n", T0 + 60)
    snapshot_roots([tree])
    save(client, "memory.md", "editor 2", path)
    snapshot_roots([tree])
    history = [(s.who, bytes(s.content)) for s in snapshots(tree, "memory.md")]
    assert history == [
        ("first", b"Likes tea.\r\n"),
        ("outside", b"agent 1\n"),
        ("editor", b"editor 1"),
        ("outside", b"agent 2\n"),
        ("editor", b"editor 2"),
    ]


def test_forget_erases_the_jids_snapshots_and_leaves_only_a_marker(client, tree, editor):
    snapshot_roots([tree])
    write(tree / ALICE / "memory.md", "secret plan\n", T0)
    snapshot_roots([tree])
    version = ws.forget_plan(tree / ALICE).version
    response = client.post(reverse("workspace-forget-run", args=[0, ALICE]), {"version": version})
    assert response.status_code == 302
    left = MemorySnapshot.objects.filter(root=str(tree), jid=ALICE)
    assert all(s.content is None and s.who == "forget" for s in left)
    assert set(left.values_list("filename", flat=True)) == {"memory.md", "knowledge.jsonl", "files/photo.png"}
    assert AuditEvent.objects.get(action="forget").detail["snapshots"] == 4
    assert MemorySnapshot.objects.filter(jid="").count() == 1  # the global files stay
    snapshot_roots([tree])
    assert left.count() == 3  # the pass after it finds nothing more to say
