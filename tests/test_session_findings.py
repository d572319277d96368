"""Possible secrets in indexed sessions (issue 31): the findings' table and its permissions,
the dismissals and their audit, and the scan the indexer runs as it reads each entry."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from sessionviewer.models import AuditEvent, SecretDismissal, Session, SessionFinding

from .fixture_files import CLAUDE_PROJECT, index_fixture
from .users import ADMIN, VIEWER, make_admin, make_user

pytestmark = pytest.mark.django_db

FP = "ab" * 32


def test_admins_may_reveal_and_dismiss_and_viewers_may_not():
    admin, viewer = make_admin(), make_user(VIEWER, "viewers")
    assert admin.username == ADMIN
    for permission in ("sessionviewer.reveal_secret", "sessionviewer.dismiss_secret"):
        assert admin.has_perm(permission)
        assert not viewer.has_perm(permission)


def test_createuser_grant_gives_the_secret_permissions_beyond_the_role():
    out = StringIO()
    call_command(
        "createuser", "sam", "--role", "viewer", "--grant", "reveal_secret", "--password", "quiet orchard lantern",
        stdout=out,
    )  # fmt: skip
    sam = User.objects.get(username="sam")
    assert sam.has_perm("sessionviewer.reveal_secret")
    assert not sam.has_perm("sessionviewer.dismiss_secret")
    assert "reveal_secret" in out.getvalue()


def test_dismissing_a_fingerprint_is_audited_once():
    admin = make_admin()
    SecretDismissal.dismiss(admin, FP, "openai_key")
    SecretDismissal.dismiss(admin, FP, "openai_key")  # already dismissed: nothing new
    assert SecretDismissal.objects.get().by == admin
    events = list(AuditEvent.objects.filter(action="dismiss_secret"))
    assert [(e.user, e.detail) for e in events] == [(admin, {"fingerprint": FP, "kind": "openai_key"})]


def test_undoing_a_dismissal_deletes_it_and_is_audited():
    admin = make_admin()
    SecretDismissal.dismiss(admin, FP, "openai_key")
    assert SecretDismissal.undo(admin, FP) is True
    assert not SecretDismissal.objects.exists()
    assert AuditEvent.objects.get(action="undismiss_secret").detail == {
        "fingerprint": FP,
        "kind": "openai_key",
    }
    assert SecretDismissal.undo(admin, FP) is False
    assert AuditEvent.objects.filter(action="undismiss_secret").count() == 1


def test_findings_go_with_their_session(tmp_path):
    session = index_fixture(tmp_path, "claude_code", "thinking_block.jsonl", CLAUDE_PROJECT, "s1")
    SessionFinding.objects.create(
        session=session,
        line=1,
        entry_id="e1",
        block=0,
        kind="openai_key",
        masked="sk-p****ab",
        fingerprint=FP,
    )
    Session.objects.all().delete()
    assert not SessionFinding.objects.exists()
