"""A session's possible secrets (SessionFinding) as the transcript shows them: masked, and on
request revealed, scanned again from the stored entry (the index never keeps a value)."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.urls import reverse
from django.utils.html import escape, format_html

from sessionviewer import readers
from sessionviewer.index.findings import block_secrets, entry_findings, masked_credentials
from sessionviewer.models import AuditEvent, SecretDismissal, Session, SessionFinding
from sessionviewer.transcripts.entries import select_entries
from sessionviewer.transcripts.masks import Mask, Masks
from sessionviewer.transcripts.page import anchor
from sessionviewer.workspaces.secrets import RULES, fingerprint


def finding_value(finding: SessionFinding) -> str | None:
    """The value a finding masks, found again in its entry's block by its fingerprint; None:
    the entry no longer holds it (the file was read again since the page was drawn)."""
    entries = select_entries("session_id = %s AND line = %s", [finding.session_id, finding.line])
    for entry in entries:
        if entry.id == finding.entry_id:
            return _block_value(entry, finding.block, finding.kind, finding.fingerprint)
    return None


def _block_value(entry: readers.Entry, block: int, kind: str, fp: str) -> str | None:
    if block >= len(entry.blocks):
        return None
    for found_kind, _, value in block_secrets(entry.blocks[block], high_entropy=kind == "high_entropy"):
        if found_kind == kind and fingerprint(kind, value, settings.SECRET_KEY) == fp:
            return _whole_key(entry.blocks[block], value) if kind == "private_key" else value
    return None


def _whole_key(block: readers.Block, begin: str) -> str:
    """A private key's BEGIN line (what the rule finds) with the key that follows it, to its
    END line or the end of its text: the lines after the BEGIN line are the secret."""
    key = re.compile(re.escape(begin) + r"[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)")
    for text in _strings(block.arguments) if block.type == readers.TOOL_CALL else [block.text]:
        if found := key.search(text):
            return found.group()
    return begin


def _strings(value) -> list[str]:
    """The strings of a tool call's arguments, at any depth (a JSON text as written)."""
    found, pending = [], [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, list):
            pending.extend(item)
        elif isinstance(item, dict):
            pending.extend(item.values())
    return found


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
    dismissed = SecretDismissal.dismissed({f.fingerprint for f in findings})
    return [
        {**f.to_dict(), "id": f.id, "anchor": anchor(f.entry_id), "dismissed": f.fingerprint in dismissed}
        for f in findings
    ]


def transcript_masks(
    session: Session, findings: list[dict] | None = None, *, can_reveal: bool
) -> Masks | None:
    """The masks of the session's possible secrets (not those marked not a secret), for the
    transcript page and its fragments; None when there are none, so a session without
    findings costs one indexed query. findings: session_findings(session), when already read.

    One value per fingerprint, read again from the first entry holding it (the index keeps no
    value); it is masked wherever the page shows it. can_reveal: each mark gets its button."""
    if findings is None:  # a fragment: the fields a mark needs, no anchors
        findings = list(
            session.findings.order_by("line", "block", "id").values(
                "id", "line", "entry_id", "block", "kind", "masked", "fingerprint"
            )
        )
        dismissed = SecretDismissal.dismissed({f["fingerprint"] for f in findings})
    else:
        dismissed = {f["fingerprint"] for f in findings if f["dismissed"]}
    first: dict[str, _Masked] = {}
    for finding in findings:
        if finding["fingerprint"] not in dismissed:
            first.setdefault(finding["fingerprint"], _Masked(*(finding[name] for name in _Masked._fields)))
    if not first:
        return None
    return _built_masks(session.id, session.read_offset, tuple(first.values()), can_reveal) or None


class _Masked(NamedTuple):
    """What a mark needs of a finding (a SessionFinding's fields)."""

    id: int
    line: int
    entry_id: str
    block: int
    kind: str
    masked: str
    fingerprint: str


MASKS_KEPT = 32  # sessions' masks kept, the least used dropped first


@functools.lru_cache(maxsize=MASKS_KEPT)
def _built_masks(session_id: int, read_offset: int, firsts: tuple[_Masked, ...], can_reveal: bool) -> Masks:
    """Masks of these findings (one per fingerprint), each value read again from its entry.
    The same page asked again (its chunks, the poller) builds the same masks: kept for the
    file as it was read (read_offset, a key only), these findings and the right to reveal."""
    lines = sorted({f.line for f in firsts})
    entries: dict[tuple[int, str], readers.Entry] = {}
    for at in range(0, len(lines), 500):
        batch = lines[at : at + 500]
        marks = ", ".join(["%s"] * len(batch))
        for entry in select_entries(f"session_id = %s AND line IN ({marks})", [session_id, *batch]):
            entries[entry.line, entry.id] = entry
    masks = []
    for finding in firsts:
        entry = entries.get((finding.line, finding.entry_id))
        value = entry and _block_value(entry, finding.block, finding.kind, finding.fingerprint)
        if value:
            masks.append(_mask(session_id, finding, value, can_reveal))
    return Masks(masks)


def _mask(session_id: int, finding: _Masked, value: str, can_reveal: bool) -> Mask:
    title = f"Possible secret ({finding.kind}), masked"
    shown = finding.masked
    if finding.kind == "private_key":  # its mask is the BEGIN line: the key after it is hidden
        shown += " (the key is masked)"
    inert = format_html(
        '<mark class="secret" data-finding="{}" data-fingerprint="{}" title="{}">{}</mark>',
        finding.id, finding.fingerprint, title, shown,
    )  # fmt: skip
    mark = inert
    if can_reveal:
        mark = format_html(
            '<mark class="secret" data-finding="{}" data-fingerprint="{}" title="{}">{}'
            '<button type="button" class="reveal" hx-post="{}" hx-swap="none" data-fingerprint="{}">'
            "reveal</button></mark>",
            finding.id, finding.fingerprint, title, shown,
            reverse("api-finding-reveal", args=[session_id, finding.id]), finding.fingerprint,
        )  # fmt: skip
    return Mask(value=value, mark=str(mark), mark_inert=str(inert), text=str(escape(shown)))


def masked_page(context: dict, masks: Masks | None) -> dict:
    """The transcript page's context (page.transcript_page) with its values masked: the rows'
    entries, blocks, results and the later lines an edit shows, the poller's late results."""
    if not masks:
        return context
    for group in context.get("groups", ()):
        for row in group.rows:
            row.item = masks.apply(row.item)
            row.usage_entry = masks.apply(row.usage_entry)
            row.pieces = [
                masks.apply_fields(piece, ("block", "result", "result_entry", "later_lines"))
                for piece in row.pieces
            ]
    if context.get("thread") is not None:  # whose compaction summaries a summary line is compared with
        context["thread"] = masks.apply_fields(context["thread"], ("compactions",))
    context["late_results"] = [
        masks.apply_fields(late, ("result", "result_entry")) for late in context.get("late_results", ())
    ]
    return context


def masked_response(response, masks: Masks | None):
    """A rendered page or fragment with its placeholders turned into marks."""
    if masks and response.status_code == 200:
        charset = response.charset or "utf-8"
        response.content = masks.swap(response.content.decode(charset)).encode(charset)
    return response


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
    dismissed = SecretDismissal.dismissed(groups)
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
        "title": masked_credentials(session.display_title),
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
            SessionFinding(session=session, source_id=session.source_id, line=line, entry_id=entry_id,
                           block=block, kind=kind, masked=masked, fingerprint=fp)
            for line, entry_id, block, kind, masked, fp in found
        )  # fmt: skip
    return len(found)
