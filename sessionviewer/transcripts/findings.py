"""A session's possible secrets (SessionFinding) as the transcript shows them: masked, and on
request revealed, scanned again from the stored entry (the index never keeps a value)."""

from __future__ import annotations

from django.conf import settings

from sessionviewer.index.findings import block_secrets
from sessionviewer.models import AuditEvent, SecretDismissal, Session, SessionFinding
from sessionviewer.transcripts.entries import select_entries
from sessionviewer.transcripts.page import anchor
from sessionviewer.workspaces.secrets import fingerprint


def finding_value(finding: SessionFinding) -> str | None:
    """The value a finding masks, found again in its entry's block by its fingerprint; None:
    the entry no longer holds it (the file was read again since the page was drawn)."""
    entries = select_entries("session_id = %s AND line = %s", [finding.session_id, finding.line])
    for entry in entries:
        if entry.id != finding.entry_id or finding.block >= len(entry.blocks):
            continue
        high_entropy = finding.kind == "high_entropy"
        for kind, _, value in block_secrets(entry.blocks[finding.block], high_entropy=high_entropy):
            if kind == finding.kind and fingerprint(kind, value, settings.SECRET_KEY) == finding.fingerprint:
                return value
    return None


def reveal(finding: SessionFinding, user) -> str | None:
    """finding_value, audited: who saw which finding of which session (never the value)."""
    value = finding_value(finding)
    AuditEvent.record(
        user,
        "reveal_secret",
        finding.session.source.path,
        "",
        machine=finding.session.source.machine,
        session=finding.session_id,
        line=finding.line,
        block=finding.block,
        kind=finding.kind,
        fingerprint=finding.fingerprint,
        found=value is not None,
    )
    return value


def session_findings(session: Session) -> list[dict]:
    """The session's possible secrets in file order, masked, each with the anchor of its
    entry on the page and whether someone marked its fingerprint not a secret."""
    findings = list(session.findings.order_by("line", "block", "id"))
    dismissed = set(
        SecretDismissal.objects.filter(fingerprint__in={f.fingerprint for f in findings}).values_list(
            "fingerprint", flat=True
        )
    )
    return [
        {**f.to_dict(), "id": f.id, "anchor": anchor(f.entry_id), "dismissed": f.fingerprint in dismissed}
        for f in findings
    ]
