"""Memory over time: every recorded change to a JID's memory and persona files, newest first,
each with what it changed, who made it, and the conversation turn it happened in.

A change is a snapshot (index/memory.py, or an editor save) compared with the snapshot of
the same file before it; editor revisions saved before snapshots were kept join as changes
of their own. A change made outside the app is linked to a turn by time only, as the agent's
code allows (processone/fluux-agent, src/agent/runtime.rs and src/skills/builtin/memory.rs):
the agent writes memory during its tool loop, and appends its reply to history.jsonl after
the loop; in a direct chat it appends the user's message then too, just before the reply,
while in a room the message was stored when it arrived. So the turn that wrote a file is
the first reply written at or after the file's mtime, with the user message before it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
from django.conf import settings
from django.db.models import Min
from django.utils import timezone

from sessionviewer import links
from sessionviewer.models import AuditEvent, Entry, MemorySnapshot, Revision, Session
from sessionviewer.workspaces import KNOWLEDGE, Prompt, build_prompt, memory_files
from sessionviewer.workspaces.secrets import fingerprint, secret_values

# A reply written longer than this after a change is not claimed as its turn: a turn's tool
# loop lasts seconds to minutes.
TURN_SECONDS = 600
WHO = (MemorySnapshot.OUTSIDE, MemorySnapshot.EDITOR, MemorySnapshot.FORGET, MemorySnapshot.FIRST)
# Whose files a timeline shows: a JID's own, or the root's global persona files, which are part
# of every JID's prompt ("": both).
SCOPES = ("own", "global")
PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class Filters:
    """As forms.MemoryTimelineForm cleaned them: until is already the exclusive bound."""

    file: str = ""
    who: str = ""
    since: datetime | None = None
    until: datetime | None = None
    scope: str = ""  # SCOPES, or "" for both


@dataclass(frozen=True, slots=True)
class Turn:
    session_id: int
    user_entry_id: str | None  # None: no user message before the reply in its file
    reply_entry_id: str
    user_text: str
    reply_text: str
    user_at: datetime | None
    reply_at: datetime

    @property
    def entry_id(self) -> str:
        """The entry a link to the turn opens at: the user's message, or the reply."""
        return self.user_entry_id or self.reply_entry_id

    @property
    def url(self) -> str:
        # For views/api_workspaces.py, which gives it in its JSON: the link belongs in the view.
        return links.entry(self.session_id, self.entry_id)

    def to_dict(self) -> dict:
        return {
            "session": self.session_id,
            "user_entry": self.user_entry_id,
            "reply_entry": self.reply_entry_id,
            "user_text": self.user_text,
            "reply_text": self.reply_text,
            "user_at": self.user_at,
            "reply_at": self.reply_at,
            "url": self.url,
        }


@dataclass(frozen=True, slots=True)
class Link:
    """How a change was tied to a conversation: by time, or not at all, and why."""

    turn: Turn | None
    gap_seconds: float | None  # from the change to the reply; None when there is no reply to measure
    note: str

    def to_dict(self) -> dict:
        return {
            "method": "time" if self.turn else None,
            "gap_seconds": self.gap_seconds,
            "note": self.note,
            "turn": self.turn.to_dict() if self.turn else None,
        }


@dataclass(frozen=True, slots=True)
class Fact:
    key: str
    content: str
    ts: str
    line: str  # the line as written: what is compared

    def to_dict(self) -> dict:
        return {"key": self.key, "content": self.content, "ts": self.ts, "line": self.line}


@dataclass
class Change:
    id: str  # "s<snapshot id>", or "r<revision id>" for a revision older than the snapshots
    jid: str
    filename: str
    who: str
    who_label: str
    changed_at: datetime
    before: bytes | None
    after: bytes | None
    existed_before: bool
    exists_after: bool
    size: int
    sha256: str
    revision_id: int | None = None
    # When a pass recorded it: for a file first seen, the moment its memory was first known.
    recorded_at: datetime | None = None
    link: Link | None = None
    source_url: str | None = None  # the file as it is now, when a page shows it (set by the view)
    as_of_url: str | None = None  # the JID's memory just after this change (set by the view)
    added: list[Fact] = field(default_factory=list)  # knowledge.jsonl
    removed: list[Fact] = field(default_factory=list)
    # The secrets report's findings this change brought: in the state after it, and not before
    # (by fingerprint, wherever they moved). Masked, as the report shows them.
    new_findings: list[dict] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.filename.startswith("files/"):
            return "file"
        return "knowledge" if self.filename == KNOWLEDGE else "text"

    @property
    def before_text(self) -> str | None:
        return None if self.before is None else self.before.decode("utf-8", errors="replace")

    @property
    def after_text(self) -> str | None:
        return None if self.after is None else self.after.decode("utf-8", errors="replace")

    @property
    def what(self) -> str:
        if self.who == MemorySnapshot.FORGET:
            return "erased"
        if self.who == MemorySnapshot.FIRST:
            return "first seen"
        if not self.existed_before and self.exists_after:
            return "created"
        if self.existed_before and not self.exists_after:
            return "removed"
        return "changed"

    def diff(self) -> str:
        old = (self.before_text or "").replace("\r\n", "\n").splitlines()
        new = (self.after_text or "").replace("\r\n", "\n").splitlines()
        return "\n".join(difflib.unified_diff(old, new, "before", "after", lineterm=""))

    def to_dict(self) -> dict:
        data = {
            "id": self.id,
            "jid": self.jid,
            "global": not self.jid,
            "file": self.filename,
            "kind": self.kind,
            "what": self.what,
            "who": self.who,
            "who_label": self.who_label,
            "changed_at": self.changed_at,
            "size": self.size,
            "sha256": self.sha256 or None,
            "revision": self.revision_id,
            "link": self.link.to_dict() if self.link else None,
            "new_findings": [{k: v for k, v in f.items() if k != "fp"} for f in self.new_findings],
        }
        if self.kind == "knowledge":
            data["added"] = [f.to_dict() for f in self.added]
            data["removed"] = [f.to_dict() for f in self.removed]
        elif self.kind == "text":
            data["diff"] = self.diff()
        return data


# Reading the changes


def _owners(query, jid: str | None, scope: str):
    """One JID's changes with the global files' (jid None: every JID's), narrowed to scope."""
    if scope == "global":
        return query.filter(jid="")
    if scope == "own":
        return query.filter(jid=jid) if jid is not None else query.exclude(jid="")
    return query.filter(jid__in=(jid, "")) if jid is not None else query


def _snapshots(machine: str, root: str, jid: str | None, filters: Filters):
    snapshots = _owners(MemorySnapshot.of_root(machine, root), jid, filters.scope)
    if filters.file:
        snapshots = snapshots.filter(filename=filters.file)
    if filters.who:
        snapshots = snapshots.filter(who=filters.who)
    return _in_dates(snapshots, "changed_at", filters)


def _in_dates(query, column: str, filters: Filters):
    if filters.since:
        query = query.filter(**{f"{column}__gte": filters.since})
    if filters.until:
        query = query.filter(**{f"{column}__lt": filters.until})
    return query


def _older_revisions(machine: str, root: str, jid: str | None, filters: Filters):
    """Editor revisions of machine's tree no snapshot stands for: saved before snapshots were kept."""
    if filters.who not in ("", MemorySnapshot.EDITOR):
        return Revision.objects.none()
    older = Revision.of_root(machine, root).filter(snapshots__isnull=True)
    revisions = _owners(older, jid, filters.scope)
    if filters.file:
        revisions = revisions.filter(filename=filters.file)
    return _in_dates(revisions, "created_at", filters)


def change_keys(root: str, jid: str | None, filters: Filters, *, machine: str) -> list[tuple[datetime, str]]:
    """Every change the filters let through in machine's tree at root, newest first, as
    (when, id): light enough to page through before any content is loaded."""
    snapshots = _snapshots(machine, root, jid, filters)
    keys = [(at, f"s{id_}") for id_, at in snapshots.values_list("id", "changed_at")]
    revisions = _older_revisions(machine, root, jid, filters)
    keys += [(at, f"r{id_}") for id_, at in revisions.values_list("id", "created_at")]
    keys.sort(key=lambda key: (key[0], key[1][0] == "s", int(key[1][1:])), reverse=True)
    return keys


def load_changes(ids: list[str]) -> list[Change]:
    """The changes of one page, in the order given, each compared with the state before it."""
    snapshot_ids = [int(i[1:]) for i in ids if i[0] == "s"]
    revision_ids = [int(i[1:]) for i in ids if i[0] == "r"]
    found = {f"s{s.id}": _snapshot_change(s) for s in MemorySnapshot.objects.filter(id__in=snapshot_ids)}
    found |= {f"r{r.id}": _revision_change(r) for r in Revision.objects.filter(id__in=revision_ids)}
    return [found[i] for i in ids if i in found]


def _previous(snapshot: MemorySnapshot) -> MemorySnapshot | None:
    same_file = MemorySnapshot.of_root(snapshot.machine, snapshot.root).filter(
        jid=snapshot.jid, filename=snapshot.filename
    )
    return same_file.filter(id__lt=snapshot.id).order_by("-id").first()


def _snapshot_change(snapshot: MemorySnapshot) -> Change:
    previous = _previous(snapshot) if snapshot.who != MemorySnapshot.FIRST else None
    before = bytes(previous.content) if previous and previous.content is not None else None
    change = Change(
        id=f"s{snapshot.id}",
        jid=snapshot.jid,
        filename=snapshot.filename,
        who=snapshot.who,
        who_label=snapshot.who_label(),
        changed_at=snapshot.changed_at,
        before=before,
        after=bytes(snapshot.content) if snapshot.content is not None else None,
        existed_before=bool(previous and previous.exists),
        exists_after=snapshot.exists,
        size=snapshot.size,
        sha256=snapshot.sha256,
        revision_id=snapshot.revision_id,
        recorded_at=snapshot.recorded_at,
    )
    _compare_facts(change)
    before_findings = previous.findings_now() if previous else []
    change.new_findings = added_findings(before_findings, snapshot.findings_now())
    return change


def _revision_change(revision: Revision) -> Change:
    after = revision.content("after")
    before = revision.content("before")
    change = Change(
        id=f"r{revision.id}",
        jid=revision.jid,
        filename=revision.filename,
        who=MemorySnapshot.EDITOR,
        who_label=revision.user.get_username() if revision.user else "an editor (user since deleted)",
        changed_at=revision.created_at,
        before=before.encode() if isinstance(before, str) else before,
        after=after.encode() if isinstance(after, str) else after,
        existed_before=before is not None,
        exists_after=after is not None,
        size=len(after or b""),
        sha256="",
        revision_id=revision.id,
    )
    _compare_facts(change)
    before_findings = MemorySnapshot.scan(change.before, change.jid) or []
    change.new_findings = added_findings(before_findings, MemorySnapshot.scan(change.after, change.jid) or [])
    return change


def added_findings(before: list[dict], after: list[dict]) -> list[dict]:
    """The findings of after whose fingerprint before does not hold: what a change brought."""
    known = {f["fp"] for f in before}
    return [f for f in after if f["fp"] not in known]


def _compare_facts(change: Change) -> None:
    """knowledge.jsonl: the facts (lines) the change added and removed, as written."""
    if change.kind != "knowledge":
        return
    old = facts_of(change.before)
    new = facts_of(change.after)
    old_lines = [f.line for f in old]
    new_lines = [f.line for f in new]
    change.added = [f for f in new if f.line not in old_lines]
    change.removed = [f for f in old if f.line not in new_lines]


def facts_of(data: bytes | None) -> list[Fact]:
    """The lines of a knowledge.jsonl, each read as {"key", "content", "ts"} when it is one."""
    facts = []
    for line in (data or b"").decode("utf-8", errors="replace").splitlines():
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            obj = None
        if not isinstance(obj, dict):
            facts.append(Fact("", line, "", line))
            continue
        facts.append(Fact(str(obj.get("key", "")), str(obj.get("content", "")), str(obj.get("ts", "")), line))
    return facts


# Linking a change to the turn it happened in


def jid_sessions(root: str, jid: str, machine: str) -> list[int]:
    """The indexed transcripts of one JID folder of a machine's memory root: its history and
    archives."""
    folder = Path(root) / jid
    candidates = Session.objects.filter(format="fluux_xmpp", jid=jid, source__machine=machine)
    candidates = candidates.values_list("id", "path")
    return [id_ for id_, path in candidates if _inside(Path(path), folder)]


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder)
    except (OSError, RuntimeError):
        return False


def link_change(change: Change, sessions: list[int]) -> Link | None:
    """The turn a change made outside the app happened in, by time; None for the others."""
    if change.who != MemorySnapshot.OUTSIDE or not change.jid:
        return None
    if not change.exists_after:
        return Link(None, None, "not linked: a removal is found by a pass, so when it happened is not known")
    replies = Entry.objects.filter(
        session_id__in=sessions, role="assistant", timestamp__gte=change.changed_at
    )
    reply = (
        replies.order_by("timestamp", "id")
        .only("session_id", "line", "entry_id", "timestamp", "text")
        .first()
    )
    if reply is None:
        return Link(None, None, "no turn: no reply was written after this change")
    gap = (reply.timestamp - change.changed_at).total_seconds()
    if gap > TURN_SECONDS:
        return Link(None, gap, f"no turn: the next reply came {gap:,.0f} s later, longer than a turn takes")
    user = (
        Entry.objects.filter(session_id=reply.session_id, role="user", line__lt=reply.line)
        .order_by("-line")
        .only("entry_id", "timestamp", "text")
        .first()
    )
    turn = Turn(
        session_id=reply.session_id,
        user_entry_id=user.entry_id if user else None,
        reply_entry_id=reply.entry_id,
        user_text=user.text if user else "",
        reply_text=reply.text,
        user_at=user.timestamp if user else None,
        reply_at=reply.timestamp,
    )
    return Link(turn, gap, f"linked by time: the file changed {gap:,.1f} s before the reply was written")


def link_all(changes: list[Change], root: str, *, machine: str) -> None:
    sessions: dict[str, list[int]] = {}
    for change in changes:
        if change.who == MemorySnapshot.OUTSIDE and change.jid:
            if change.jid not in sessions:
                sessions[change.jid] = jid_sessions(root, change.jid, machine)
            change.link = link_change(change, sessions[change.jid])
    linked = [change for change in changes if change.link and change.link.turn]
    if linked and (purged := purged_fingerprints(root, machine=machine)):
        for change in linked:
            change.link = _without_purged(change.link, change.jid, purged)


# Purged values: a purge (memory_findings.purge) rewrites the memory's history, never the
# transcripts, which keep the value; a timeline's excerpt of a turn hides it all the same.
PURGED = "[purged]"


def purged_fingerprints(root: str, *, machine: str) -> set[str]:
    """The findings purged in machine's history at root, by fingerprint (the audit log names
    them so)."""
    events = AuditEvent.of_root(machine, root).filter(action="purge").values_list("detail", flat=True)
    return {detail["fingerprint"] for detail in events if detail.get("fingerprint")}


def hide_purged(text: str, jid: str, purged: set[str]) -> str:
    """text with the value of every purged finding in it replaced by PURGED."""
    values = {
        value
        for finding, value in secret_values(
            text, (jid,) if jid else (), high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY
        )
        if fingerprint(finding.kind, value, settings.SECRET_KEY) in purged
    }
    for value in sorted(values, key=len, reverse=True):
        text = text.replace(value, PURGED)
    return text


def _without_purged(link: Link, jid: str, purged: set[str]) -> Link:
    turn = link.turn
    texts = {
        "user_text": hide_purged(turn.user_text, jid, purged),
        "reply_text": hide_purged(turn.reply_text, jid, purged),
    }
    return replace(link, turn=replace(turn, **texts))


def filenames(root: str, jid: str | None, *, machine: str) -> list[str]:
    """The files that have a history: the file filter's choices (a JID's and the global ones)."""
    snapshots = _owners(MemorySnapshot.of_root(machine, root), jid, "")
    return sorted(set(snapshots.values_list("filename", flat=True).distinct()))


# The memory as it was at a moment


@dataclass
class FileState:
    """One tracked file at a past moment, as the snapshots show it, and no more; where none
    does, as the last editor revision before it left it (saves made before snapshots were kept).

    status: "present" (content as recorded), "absent" (no such file then), or "unknown"
    (nothing tells: snapshots began later, retention dropped them, or /forget erased them)."""

    jid: str  # "": a global persona file
    filename: str
    status: str
    note: str
    snapshot: MemorySnapshot | None = None
    revision: Revision | None = None  # only when no snapshot covers the moment

    @property
    def content(self) -> bytes | None:
        if self.revision is not None:
            after = self.revision.content("after")
            return after.encode() if isinstance(after, str) else after
        snapshot = self.snapshot
        return bytes(snapshot.content) if snapshot and snapshot.content is not None else None

    @property
    def changed_at(self) -> datetime | None:
        if self.revision is not None:
            return self.revision.created_at
        return self.snapshot.changed_at if self.snapshot else None

    @property
    def size(self) -> int | None:
        if self.status != "present":
            return None
        return len(self.content or b"") if self.revision is not None else self.snapshot.size

    @property
    def text(self) -> str | None:
        content = self.content
        return None if content is None else content.decode("utf-8", errors="replace")

    @property
    def kind(self) -> str:
        if self.filename.startswith("files/"):
            return "file"
        return "knowledge" if self.filename == KNOWLEDGE else "text"

    def facts(self) -> list[Fact]:
        return facts_of(self.content)

    def load(self) -> tuple[str | None, str | None]:
        """As paths.read_text reads a file from disk, for prompt.build_prompt."""
        if self.status == "unknown":
            return None, f"no snapshot of this file at that time ({self.note})"
        if self.status == "absent":
            return None, None
        try:
            return (self.content or b"").decode("utf-8"), None
        except UnicodeDecodeError as exc:
            return None, f"not valid UTF-8 (byte {exc.start})"

    def to_dict(self) -> dict:
        snapshot, revision = self.snapshot, self.revision
        present = self.status == "present"
        data = {
            "jid": self.jid,
            "file": self.filename,
            "status": self.status,
            "note": self.note,
            "snapshot": f"s{snapshot.id}" if snapshot else None,
            "revision": revision.id if revision else None,
            "changed_at": self.changed_at,
            "who": MemorySnapshot.EDITOR if revision else snapshot.who if snapshot else None,
            "size": self.size,
            "sha256": (snapshot.sha256 or None) if snapshot and present else None,
        }
        if self.kind != "file":
            data["text"] = self.text if self.status == "present" else None
        return data


@dataclass
class MemoryAsOf:
    at: datetime  # the moment: every change made up to and including it
    began: datetime | None  # the first pass over this root: before it, nothing is known
    files: list[FileState]  # the persona and memory files, global first
    stored: list[FileState]  # files/ entries present then
    unknown_stored: bool  # files/ could not be listed then
    prompt: Prompt

    def to_dict(self) -> dict:
        return {
            "at": self.at,
            "snapshots_began": self.began,
            "files": [f.to_dict() for f in self.files],
            "stored_files": None if self.unknown_stored else [f.to_dict() for f in self.stored],
            "prompt": self.prompt.to_dict(),
        }


def memory_as_of(root: str, jid: str, bound: datetime, agent_name: str, *, machine: str) -> MemoryAsOf:
    """Every file of jid (and the root's global persona files) in machine's tree as the
    snapshots show them just before bound (exclusive), and the effective prompt built from
    those bytes by the code that builds today's."""
    all_snapshots = MemorySnapshot.of_root(machine, root)
    began = all_snapshots.aggregate(first=Min("recorded_at"))["first"]
    days = settings.SESSIONVIEWER_MEMORY_RETENTION_DAYS
    dropped_before = timezone.now() - timedelta(days=days) if days > 0 else None
    mine = all_snapshots.filter(jid__in=("", jid))
    latest: dict[tuple[str, str], MemorySnapshot] = {}
    for snapshot in mine.filter(changed_at__lt=bound).order_by("changed_at", "id"):
        latest[(snapshot.jid, snapshot.filename)] = snapshot
    # Where no snapshot covers the moment, an editor save before it still tells what it left.
    saved: dict[tuple[str, str], Revision] = {}
    revisions = Revision.of_root(machine, root).filter(jid__in=("", jid), created_at__lt=bound)
    for revision in revisions.select_related("user").order_by("created_at", "id"):
        saved[(revision.jid, revision.filename)] = revision
    forgotten = (
        mine.filter(jid=jid, who=MemorySnapshot.FORGET, changed_at__gte=bound)
        .order_by("changed_at")
        .values_list("changed_at", flat=True)
        .first()
    )

    def unseen_note(owner: str) -> tuple[str, str]:
        """A file no snapshot before the moment shows: absent, or not known."""
        if owner and forgotten is not None:
            return "unknown", f"/forget erased this JID's earlier states on {forgotten:%Y-%m-%d %H:%M:%S}"
        if dropped_before is not None and bound <= dropped_before:
            return "unknown", f"states older than {days} days are not kept"
        if began is None or bound <= began:
            when = f" on {began:%Y-%m-%d %H:%M:%S}" if began else ""
            return "unknown", f"snapshots of this root began later{when}"
        return "absent", "no such file then"

    def state(owner: str, filename: str) -> FileState:
        snapshot = latest.get((owner, filename))
        if snapshot is None:
            status, note = unseen_note(owner)
            # Only where the snapshots cannot tell: once they began, no snapshot means no file.
            if status == "unknown" and (owner, filename) in saved:
                return _revision_state(saved[(owner, filename)])
            return FileState(owner, filename, status, note)
        if snapshot.who == MemorySnapshot.FORGET:
            return FileState(owner, filename, "absent", "erased by /forget", snapshot)
        if not snapshot.exists:
            return FileState(owner, filename, "absent", "removed", snapshot)
        return FileState(owner, filename, "present", snapshot.who_label(), snapshot)

    files = [state("", name) for name in memory_files.root_names()]
    files += [state(jid, name) for name in memory_files.jid_names()]
    stored = [
        state(jid, name) for (owner, name) in sorted(latest) if owner == jid and name.startswith("files/")
    ]
    stored = [f for f in stored if f.status == "present"]
    by_name = {(f.jid, f.filename): f for f in files}
    prompt = build_prompt(
        lambda owner, name: by_name[(owner, name)].load(),
        jid,
        agent_name,
        _local_day(bound - timedelta(microseconds=1)),
    )
    unknown_stored = unseen_note(jid)[0] == "unknown" and not stored
    return MemoryAsOf(bound - timedelta(microseconds=1), began, files, stored, unknown_stored, prompt)


def _revision_state(revision: Revision) -> FileState:
    """A file as an editor save left it, said so: a change made outside the app after the
    save, before snapshots were kept, would not be known."""
    when = f"{revision.created_at.astimezone(UTC):%Y-%m-%d %H:%M:%S} UTC"
    if revision.content("after") is None:
        note = f"removed in the editor's revision of {when}"
        return FileState(revision.jid, revision.filename, "absent", note, revision=revision)
    note = f"from the editor's revision of {when}"
    return FileState(revision.jid, revision.filename, "present", note, revision=revision)


def _local_day(moment: datetime):
    """The day the agent's "Current date" line named then: chrono::Local, like date.today()."""
    return moment.astimezone().date()
