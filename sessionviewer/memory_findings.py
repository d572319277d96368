"""What should not be there: every finding of the secrets report in the recorded history of
the memory files, when it first appeared (and in which change and turn), and whether it is
still in the files as the last pass recorded them.

A finding is known by its fingerprint (secrets.fingerprint: keyed, so it names a value
without keeping it), which follows it wherever it moves in a file or between files.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings

from sessionviewer import memory_timeline
from sessionviewer.models import AuditEvent, MemorySnapshot, Revision
from sessionviewer.workspaces.secrets import fingerprint, secret_values


@dataclass(frozen=True, slots=True)
class Place:
    """Where a finding stands in a file's current state."""

    filename: str
    line: int
    column: int

    def to_dict(self) -> dict:
        return {"file": self.filename, "line": self.line, "column": self.column}


@dataclass(frozen=True, slots=True)
class Purge:
    """A purge of a finding, from the audit log: when and by whom, never the value."""

    at: datetime
    by: str

    def to_dict(self) -> dict:
        return {"at": self.at, "by": self.by}


@dataclass
class FindingHistory:
    jid: str  # "": a global persona file
    fp: str
    kind: str
    masked: str  # "": purged, no state holds it to mask
    first_snapshot: int
    first_file: str
    first_line: int
    first_at: datetime | None  # None: purged, its first state rewritten
    first_who: str
    present: list[Place] = field(default_factory=list)  # in the current files; empty: gone
    change: memory_timeline.Change | None = None  # the change that brought it, linked to its turn
    purged: Purge | None = None  # the last purge of it (it may have come back since)

    @property
    def still_present(self) -> bool:
        return bool(self.present)

    @property
    def listed_at(self) -> datetime:
        return self.first_at or self.purged.at

    def to_dict(self) -> dict:
        purged = self.purged.to_dict() if self.purged else None
        if self.first_at is None:  # only its purge is known: no state, no value
            return {"jid": self.jid, "kind": self.kind, "masked": None, "fingerprint": self.fp,
                    "first_seen": None, "still_present": False, "present_in": [], "purged": purged}  # fmt: skip
        link = self.change.link if self.change else None
        return {
            "jid": self.jid,
            "kind": self.kind,
            "masked": self.masked,
            "fingerprint": self.fp,
            "first_seen": {
                "change": f"s{self.first_snapshot}",
                "file": self.first_file,
                "line": self.first_line,
                "at": self.first_at,
                "who": self.first_who,
                "link": link.to_dict() if link else None,
            },
            "still_present": self.still_present,
            "present_in": [place.to_dict() for place in self.present],
            "purged": purged,
        }


def finding_histories(
    root: str, jid: str | None = None, kind: str = "", *, machine: str
) -> list[FindingHistory]:
    """Every finding ever recorded in machine's tree at root (one JID's when jid is given),
    newest first."""
    snapshots = MemorySnapshot.of_root(machine, root).exclude(content=None)
    if jid is not None:
        snapshots = snapshots.filter(jid=jid)
    for snapshot in snapshots.filter(findings=None):
        snapshot.findings_now()  # recorded before findings were kept
    rows = snapshots.exclude(findings=[]).order_by("changed_at", "id")
    found: dict[tuple[str, str], FindingHistory] = {}
    columns = ("id", "jid", "filename", "findings", "current", "changed_at", "who")
    for id_, owner, filename, findings, current, changed_at, who in rows.values_list(*columns):
        for finding in findings or []:
            if kind and finding["kind"] != kind:
                continue
            key = (owner, finding["fp"])
            history = found.get(key)
            if history is None:
                history = found[key] = FindingHistory(
                    owner, finding["fp"], finding["kind"], finding["masked"],
                    id_, filename, finding["line"], changed_at, who,
                )  # fmt: skip
            if current:
                history.present.append(Place(filename, finding["line"], finding["column"]))
    _add_purges(found, root, jid, kind, machine)
    return sorted(found.values(), key=lambda h: (h.listed_at, h.first_snapshot), reverse=True)


def _add_purges(
    found: dict[tuple[str, str], FindingHistory], root: str, jid: str | None, kind: str, machine: str
) -> None:
    """A purged finding stays listed, as purged on a day by someone, without its value: the
    audit log names it by kind and fingerprint, under the machine whose history it rewrote.
    One that came back keeps its states' history."""
    events = AuditEvent.of_root(machine, root).filter(action="purge")
    events = events.select_related("user").order_by("created_at", "id")
    if jid is not None:
        events = events.filter(jid=jid)
    for event in events:
        fp, found_kind = event.detail.get("fingerprint"), event.detail.get("kind", "")
        if not fp or (kind and found_kind != kind):
            continue
        by = event.user.get_username() if event.user else "a user since deleted"
        history = found.get((event.jid, fp))
        if history is None:
            history = found[(event.jid, fp)] = FindingHistory(
                event.jid, fp, found_kind, "", 0, "", 0, None, ""
            )
        history.purged = Purge(event.created_at, by)


def attach_changes(histories: list[FindingHistory], root: str, *, machine: str) -> None:
    """The change that brought each finding, linked to its turn: for one page of them."""
    changes = memory_timeline.load_changes(sorted({f"s{h.first_snapshot}" for h in histories if h.first_at}))
    memory_timeline.link_all(changes, root, machine=machine)
    by_id = {change.id: change for change in changes}
    for history in histories:
        history.change = by_id.get(f"s{history.first_snapshot}")


# Purging one finding from the stored history

PURGED = memory_timeline.PURGED


@dataclass
class PurgePlan:
    """What a purge of one finding would rewrite: the stored states and revisions of a JID (and
    of the root's global files) that hold its value. The value lives only in this object, for
    the request that purges it: never shown, logged or kept."""

    kind: str
    masked: str
    fp: str
    value: str
    snapshots: list[int]
    revisions: list[int]
    present: list[Place]  # in the current files: the disk still holds it there
    machine: str  # whose history is rewritten

    def to_dict(self) -> dict:
        return {
            "kind": self.kind,
            "masked": self.masked,
            "fingerprint": self.fp,
            "snapshots": len(self.snapshots),
            "revisions": len(self.revisions),
            "still_present": [place.to_dict() for place in self.present],
            "replacement": PURGED,
        }


def purge_plan(root: str, jid: str, fp: str, *, machine: str) -> PurgePlan | None:
    """The purge of the finding with fingerprint fp in jid's history in machine's tree (its
    snapshots and editor revisions); None when none holds it."""
    owners = MemorySnapshot.of_root(machine, root).filter(jid__in=(jid, "")).exclude(content=None)
    found = None
    present: list[Place] = []
    for snapshot in owners.order_by("-current", "id"):
        mine = [f for f in snapshot.findings_now() if f["fp"] == fp]
        if mine and snapshot.current:
            present += [Place(snapshot.filename, f["line"], f["column"]) for f in mine]
        if mine and found is None:
            found = _value_of(snapshot, fp)
    if found is None:
        return None
    kind, masked, value = found
    needle = value.encode()
    snapshots = [id_ for id_, content in owners.values_list("id", "content") if needle in bytes(content)]
    revisions = [
        revision.id
        for revision in Revision.of_root(machine, root).filter(jid__in=(jid, ""))
        if any(value in (text or "") for text in (revision.before, revision.after))
        or any(needle in bytes(data or b"") for data in (revision.before_bytes, revision.after_bytes))
    ]
    return PurgePlan(kind, masked, fp, value, snapshots, revisions, present, machine)


def jids_holding(root: str, fp: str, *, machine: str) -> list[str]:
    """The JIDs whose own files' history holds the finding fp: each its own finding to purge."""
    snapshots = MemorySnapshot.of_root(machine, root).exclude(jid="").exclude(content=None)
    for snapshot in snapshots.filter(findings=None):
        snapshot.findings_now()  # recorded before findings were kept
    rows = snapshots.exclude(findings=[]).values_list("jid", "findings")
    return sorted({jid for jid, findings in rows if any(f["fp"] == fp for f in findings or [])})


def _value_of(snapshot: MemorySnapshot, fp: str) -> tuple[str, str, str] | None:
    text = bytes(snapshot.content).decode("utf-8", errors="replace")
    ignore = (snapshot.jid,) if snapshot.jid else ()
    for finding, value in secret_values(
        text, ignore, high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY
    ):
        if fingerprint(finding.kind, value, settings.SECRET_KEY) == fp:
            return finding.kind, finding.masked, value
    return None


def purge(plan: PurgePlan, root: str, jid: str, user) -> AuditEvent:
    """Replace the value by PURGED in every state and revision the plan names, their other bytes
    kept, and audit it by kind and fingerprint. The caller holds the transaction."""
    needle, replacement = plan.value.encode(), PURGED.encode()
    for snapshot in MemorySnapshot.objects.filter(id__in=plan.snapshots):
        content = bytes(snapshot.content).replace(needle, replacement)
        MemorySnapshot.objects.filter(id=snapshot.id).update(
            content=content,
            size=len(content),
            sha256=hashlib.sha256(content).hexdigest(),
            findings=MemorySnapshot.scan(content, snapshot.jid),
        )
    for revision in Revision.objects.filter(id__in=plan.revisions):
        for side in ("before", "after"):
            text, data = getattr(revision, side), getattr(revision, f"{side}_bytes")
            if text is not None:
                setattr(revision, side, text.replace(plan.value, PURGED))
            if data is not None:
                setattr(revision, f"{side}_bytes", bytes(data).replace(needle, replacement))
        revision.save(update_fields=("before", "after", "before_bytes", "after_bytes"))
    return AuditEvent.record(
        user,
        "purge",
        root,
        jid,
        machine=plan.machine,
        kind=plan.kind,
        fingerprint=plan.fp,
        snapshots=len(plan.snapshots),
        revisions=len(plan.revisions),
    )
