"""What should not be there: every finding of the secrets report in the recorded history of
the memory files, when it first appeared (and in which change and turn), and whether it is
still in the files as the last pass recorded them.

A finding is known by its fingerprint (secrets.fingerprint: keyed, so it names a value
without keeping it), which follows it wherever it moves in a file or between files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sessionviewer import memory_timeline
from sessionviewer.models import MemorySnapshot


@dataclass(frozen=True, slots=True)
class Place:
    """Where a finding stands in a file's current state."""

    filename: str
    line: int
    column: int

    def to_dict(self) -> dict:
        return {"file": self.filename, "line": self.line, "column": self.column}


@dataclass
class FindingHistory:
    jid: str  # "": a global persona file
    fp: str
    kind: str
    masked: str
    first_snapshot: int
    first_file: str
    first_line: int
    first_at: datetime
    first_who: str
    present: list[Place] = field(default_factory=list)  # in the current files; empty: gone
    change: memory_timeline.Change | None = None  # the change that brought it, linked to its turn

    @property
    def still_present(self) -> bool:
        return bool(self.present)

    def to_dict(self) -> dict:
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
        }


def finding_histories(root: str, jid: str | None = None, kind: str = "") -> list[FindingHistory]:
    """Every finding ever recorded in root (one JID's when jid is given), newest first."""
    snapshots = MemorySnapshot.objects.filter(root=root).exclude(content=None)
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
    return sorted(found.values(), key=lambda h: (h.first_at, h.first_snapshot), reverse=True)


def attach_changes(histories: list[FindingHistory], root: str) -> None:
    """The change that brought each finding, linked to its turn: for one page of them."""
    changes = memory_timeline.load_changes(sorted({f"s{h.first_snapshot}" for h in histories}))
    memory_timeline.link_all(changes, root)
    by_id = {change.id: change for change in changes}
    for history in histories:
        history.change = by_id.get(f"s{history.first_snapshot}")
