"""A session's possible secrets (SessionFinding) as the transcript shows them: masked, and on
request revealed, scanned again from the stored entry (the index never keeps a value)."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.db.models import Count

from sessionviewer.index.findings import block_secrets, entry_findings
from sessionviewer.models import AuditEvent, SecretDismissal, Session, SessionFinding
from sessionviewer.transcripts.entries import select_entries
from sessionviewer.transcripts.page import anchor
from sessionviewer.workspaces.secrets import RULES, credentials_masked, fingerprint


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


# How to rotate each kind: the first rule of that kind says it.
ROTATE = {rule.kind: rule.rotate for rule in reversed(RULES)}

PLACES_SHOWN = 50  # of one fingerprint, on the Secrets page


def secret_groups(kind="", project="", machine="", since=None, until=None, limit=200) -> list[dict]:
    """The possible secrets of every session, one group per fingerprint, the most widespread
    first: in how many sessions and projects, first and last seen (by the sessions' start),
    how to rotate that kind, whether it was marked not a secret, and the places it appears."""
    findings = SessionFinding.objects.all()
    if kind:
        findings = findings.filter(kind=kind)
    if project:
        findings = findings.filter(session__project=project)
    if machine:
        findings = findings.filter(session__source__machine=machine)
    if since:
        findings = findings.filter(session__started_at__gte=since)
    if until:
        findings = findings.filter(session__started_at__lt=until)
    counted = (
        findings.values("fingerprint")
        .annotate(sessions=Count("session", distinct=True), projects=Count("session__project", distinct=True))
        .order_by("-sessions", "fingerprint")[:limit]
    )
    groups = {row["fingerprint"]: {**row, "places": []} for row in counted}
    dismissed = set(
        SecretDismissal.objects.filter(fingerprint__in=groups).values_list("fingerprint", flat=True)
    )
    places = findings.filter(fingerprint__in=groups).select_related("session__source")
    for finding in places.order_by("session__started_at", "session_id", "line", "block"):
        group = groups[finding.fingerprint]
        group["kind"], group["masked"] = finding.kind, finding.masked
        group["last"] = _place(finding)
        group.setdefault("first", group["last"])
        if len(group["places"]) < PLACES_SHOWN:
            group["places"].append(group["last"])
    for fp, group in groups.items():
        group["dismissed"] = fp in dismissed
        group["rotate"] = ROTATE.get(group["kind"], "")
    return list(groups.values())


def _place(finding: SessionFinding) -> dict:
    session = finding.session
    return {
        "session": session.id,
        # Beside the masked findings: the credentials a first prompt holds are masked in it too.
        "title": credentials_masked(session.display_title),
        "project": session.project,
        "machine": session.source.machine,
        "started_at": session.started_at,
        "line": finding.line,
        "entry_id": finding.entry_id,
        "anchor": anchor(finding.entry_id),
    }


def scan_again(session: Session) -> int:
    """Replace a session's findings by a scan of its stored entries (for sessions indexed
    before the index scanned them: `manage.py scanfindings`); the number found."""
    found = entry_findings(
        select_entries("session_id = %s", [session.id]),
        settings.SECRET_KEY,
        high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY,
    )
    with transaction.atomic():
        session.findings.all().delete()
        SessionFinding.objects.bulk_create(
            SessionFinding(session=session, line=line, entry_id=entry_id, block=block, kind=kind,
                           masked=masked, fingerprint=fp)
            for line, entry_id, block, kind, masked, fp in found
        )  # fmt: skip
    return len(found)
