"""The record of each write to a memory tree: the revision and the audit event, made in
the transaction the write happens inside (workspaces.writes calls these hooks; see
writes._swap), so a change the database cannot record is not made. Only the views that
write call them."""

from __future__ import annotations

import contextlib
from pathlib import Path

from django.db import transaction

from sessionviewer import workspaces as ws
from sessionviewer.memory_index import MemoryRoot
from sessionviewer.models import AuditEvent, Revision
from sessionviewer.workspace_pages import Target


def file_change(user, target: Target, action: str | None, **detail):
    """The record hook of a save, restore or remove: the revision, with the bytes replaced
    and the bytes written, and the audit entry, in the target's machine's history. action
    None: "create" or "edit", by whether the file existed."""

    @contextlib.contextmanager
    def record(before: bytes | None, after: bytes | None):
        with transaction.atomic():
            Revision.record(
                before,
                after,
                machine=target.machine,
                root=str(target.root),
                jid=target.jid,
                filename=target.name,
                user=user,
                action=action,
                **detail,
            )
            yield

    return record


def archive(user, held: MemoryRoot, jid: str):
    """The record hook of /new in the root (held, located): the audit entry naming the
    archive the session became."""

    @contextlib.contextmanager
    def record(archive: Path):
        with transaction.atomic():
            archived = f"{ws.SESSIONS_DIR}/{archive.name}"
            AuditEvent.record(user, "new", str(held.path), jid, machine=held.machine, archived=archived)
            yield

    return record


def empty_session(user, held: MemoryRoot, jid: str) -> None:
    """/new on a session with nothing in it: recorded, with nothing archived."""
    AuditEvent.record(user, "new", str(held.path), jid, machine=held.machine, archived=None)


def forget(user, held: MemoryRoot, jid: str, plan: ws.ForgetPlan) -> None:
    """Before anything is deleted, and committed: the audit entry (names, sizes and hashes,
    never content), and the erasure of the revisions held of the files about to go."""
    with transaction.atomic():
        files = [f.to_dict() for f in plan.files]
        AuditEvent.record_forget(user, str(held.path), jid, list(plan.names), files, machine=held.machine)
