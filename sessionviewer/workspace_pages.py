"""What the workspace pages (views/workspaces.py) and their /api/ twins
(views/api_workspaces.py) share: the root, JID and file a URL names, and the data each
page shows.

A root is named by its index in memory_index.known_roots(), never by a path from the
request: a path on one machine, so two machines' trees at one path are two roots, each read
from its own history; a JID must name an existing folder under it (resolve_jid_dir), and file names come
from an allow-list per page, or go through resolve_member for files/ and sessions/. What a
URL names that is not there raises Http404; a bad query parameter raises BadParameter, which
the views answer. Links come from links.py.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from django.conf import settings
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils import timezone

from sessionviewer import links, memory_findings, memory_index, memory_timeline, projects
from sessionviewer import workspaces as ws
from sessionviewer.forms import (
    AuditLogForm,
    BadParameter,
    MemoryAsOfForm,
    MemoryChangesForm,
    MemoryFindingsForm,
    NameField,
    ProjectForm,
    SecretsForm,
    clean_param,
)
from sessionviewer.memory_index import MemoryRoot, known_roots
from sessionviewer.models import AuditEvent, KeyCheck, MemorySnapshot, Revision, Session
from sessionviewer.render import IMAGE_TYPES
from sessionviewer.workspaces import memory_files

VIEW = "sessionviewer.view_workspace"
EDIT = "sessionviewer.edit_workspace"
TEXT_SUFFIXES = (".md", ".jsonl", ".txt")
AUDIT_PAGE_SIZE = 50
FINDINGS_PAGE_SIZE = 50
# The secrets report reads files only until a page is full, so a large tree stays bearable.
SECRETS_PAGE_SIZE = 200


# Locating roots, JIDs and files


def known_root(index: int, roots: list[MemoryRoot] | None = None) -> MemoryRoot:
    """The root at index in roots (known_roots(), when the page has not listed them)."""
    roots = known_roots() if roots is None else roots
    if not 0 <= index < len(roots):
        raise Http404(f"no memory root {index}")
    return roots[index]


def located(index: int, roots: list[MemoryRoot] | None = None) -> MemoryRoot:
    """The root a URL names, with its machine (two machines' trees at one path are two roots)
    and its path resolved where it is mounted; one only the index holds is as it was recorded.

    known_roots() is a DISTINCT over the current snapshots: a request looks its root up here
    once and passes it on, rather than asking again for the path, the machine, or whether to
    name it."""
    return _located(index, known_root(index, roots))


def _located(index: int, known: MemoryRoot) -> MemoryRoot:
    if is_elsewhere(known.path, known.machine):
        if not has_snapshots(known.path, known.machine):
            raise Http404(f"no memory root {index}")
        return known
    return replace(known, path=known.path.resolve())


def shown_machine(held: MemoryRoot) -> str | None:
    """The root's machine, where another machine's tree has the same path: which of the two
    histories this is. None where one machine has the path."""
    return held.machine if held.shared else None


def is_elsewhere(base: Path, machine: str) -> bool:
    """Whether this host cannot reach the root (not mounted, or another machine's tree at
    the same path): its pages read the index, and write nothing."""
    return machine != settings.SESSIONVIEWER_MACHINE or not base.is_dir()


_NAME = NameField()


def jid_folder(root: Path, jid: str, machine: str) -> Path:
    clean_param(_NAME, "jid", jid)  # a name no file system holds is a 400, not a 404
    if is_elsewhere(root, machine):
        if jid not in memory_index.jids(root, machine=machine):
            raise Http404(f"no JID folder {jid!r} in the index")
        return root / jid
    try:
        return ws.resolve_jid_dir(root, jid)
    except ws.UnsafePath as error:
        raise Http404(str(error)) from None


def jid_page_url(jid: str) -> str | None:
    """The workspace page of the JID's folder, in the first memory root that has one."""
    for index, known in enumerate(known_roots()):
        if is_elsewhere(known.path, known.machine):
            continue
        try:
            ws.resolve_jid_dir(known.path, jid)
        except ws.UnsafePath:
            continue
        return reverse("workspace-jid", args=[index, jid])
    return None


def jid_links_for(request: HttpRequest):
    """jid_page_url for someone who may read the workspaces, else None: no links to follow."""
    return jid_page_url if request.user.has_perm(VIEW) else None


def member_path(folder: Path, name: str, subdir: str | None = None) -> Path:
    clean_param(_NAME, "name", name)
    try:
        return ws.resolve_member(folder, name, subdir)
    except ws.UnsafePath as error:
        raise Http404(str(error)) from None


@dataclass(frozen=True, slots=True)
class Target:
    """One editable file: a global persona file (jid "") or a JID's own file."""

    root_index: int
    root: Path
    machine: str
    jid: str
    name: str
    path: Path

    @property
    def label(self) -> str:
        return f"{self.jid}/{self.name}" if self.jid else self.name

    @property
    def is_override(self) -> bool:
        return bool(self.jid) and self.name in memory_files.root_names()

    def _url(self, action: str) -> str:
        if self.jid:
            return reverse(f"workspace-{action}", args=[self.root_index, self.jid, self.name])
        return reverse(f"workspace-global-{action}", args=[self.root_index, self.name])

    @property
    def edit_url(self) -> str:
        return self._url("edit")

    @property
    def save_url(self) -> str:
        return self._url("save")

    @property
    def source_url(self) -> str:
        return self._url("source")

    @property
    def api_edit_url(self) -> str:
        if self.jid:
            return reverse("api-workspace-edit", args=[self.root_index, self.jid, self.name])
        return reverse("api-workspace-global-edit", args=[self.root_index, self.name])

    @property
    def remove_url(self) -> str:
        return reverse("workspace-remove", args=[self.root_index, self.jid, self.name])

    @property
    def remove_run_url(self) -> str:
        return reverse("workspace-remove-run", args=[self.root_index, self.jid, self.name])

    def done_url(self) -> str:
        # After a change, show what the agent will now send.
        if self.jid:
            return reverse("workspace-prompt", args=[self.root_index, self.jid])
        return reverse("workspace-list")


def edit_target(root_index: int, jid: str, name: str, held: MemoryRoot | None = None) -> Target:
    """The file; held is the root, where the request has located it already."""
    if name not in memory_files.editable_names(jid):
        raise Http404(f"{name!r} cannot be edited here")
    root, machine = (located(root_index) if held is None else held).pair
    folder = jid_folder(root, jid, machine) if jid else root
    if is_elsewhere(root, machine):
        clean_param(_NAME, "name", name)
        return Target(root_index, root, machine, jid, name, folder / name)
    return Target(root_index, root, machine, jid, name, member_path(folder, name))


def override_target(root_index: int, jid: str, name: str, held: MemoryRoot | None = None) -> Target:
    """A JID's own copy of a global persona file: what remove works on."""
    target = edit_target(root_index, jid, name, held)
    if not target.is_override:
        raise Http404(f"{name!r} is not a persona override")
    return target


def existing_override(
    root_index: int, jid: str, name: str, held: MemoryRoot | None = None
) -> tuple[Target, ws.LoadedFile]:
    """The override and its file as it is now; 404 when there is none to remove."""
    target = override_target(root_index, jid, name, held)
    loaded = ws.load_file(target.path)
    if loaded.text is None and loaded.error is None:
        raise Http404(f"{target.label} does not exist")
    return target, loaded


def target_of(revision: Revision) -> Target:
    """The file a revision saved, in its machine's tree: another machine's tree at the same
    path holds another file. One saved before machines were named, and not claimed yet, is
    the first tree's at its path (this host's, where it has one)."""
    for index, known in enumerate(known_roots()):
        if revision.machine and known.machine != revision.machine:
            continue
        elsewhere = is_elsewhere(known.path, known.machine)
        if str(known.path if elsewhere else known.path.resolve()) == revision.root:
            return edit_target(index, revision.jid, revision.filename, _located(index, known))
    raise Http404("the memory root of this revision is no longer configured")


# The JID page's pieces, shared by the page and its twin


def jid_entry(root: Path, jid: str) -> ws.JidDir:
    try:
        return ws.jid_entry(root, jid)
    except ws.UnsafePath as error:
        raise Http404(str(error)) from None


def text_parts(entry: ws.JidDir, jid_dir: Path) -> list[dict]:
    """The JID's own text files (memory_files.shown_parts) as its page shows each: the file,
    or the legacy one it replaced where only that exists (context.md for user.md), loaded."""
    parts = []
    for part in memory_files.shown_parts():
        legacy = memory_files.legacy_of(part.name)
        shown = part.name
        if legacy is not None and part.name not in entry.files and legacy.name in entry.files:
            shown = legacy.name
        parts.append({"file": part, "name": shown, "loaded": ws.load_part(jid_dir, shown)})
    return parts


def session_rows(root_index: int, machine: str, jid: str, jid_dir: Path) -> list[dict]:
    """The JID's transcripts on disk, each with its indexed session on machine, the root's:
    another machine's tree at the same path has sessions at the same paths, not these."""
    files = ws.list_sessions(jid_dir)
    # The index stores the path it walked; the core gives the real one: match either.
    paths = {str(f.path) for f in files if f.path} | {str(jid_dir / f.name) for f in files if f.path}
    sessions = Session.objects.filter(path__in=paths, source__machine=machine).only("id", "path")
    indexed = {s.path: s for s in sessions}
    rows = []
    for f in files:
        # A bad link or a FIFO is listed with its error, and nothing links to it.
        session = (indexed.get(str(f.path)) or indexed.get(str(jid_dir / f.name))) if f.path else None
        rows.append(
            {
                **f.to_dict(),
                "session_id": session.id if session else None,
                "transcript_url": reverse("session-detail", args=[session.id]) if session else None,
                "source_url": links.memory_source(root_index, jid, f.name) if f.path else None,
            }
        )
    return rows


def stored_file_rows(root_index: int, jid: str, jid_dir: Path) -> list[dict]:
    return [
        {
            **f.to_dict(),
            "image": f.mime_type in IMAGE_TYPES and not f.error,
            "text": f.mime_type.startswith("text/") and not f.error,
            "url": None if f.error else reverse("workspace-file", args=[root_index, jid, f.name]),
        }
        for f in ws.list_files(jid_dir)
    ]


# The secrets report, the memory search and the audit log


def _finding_url(root_index: int, finding: ws.SecretFinding) -> str | None:
    jid, _, rest = finding.file.partition("/")
    if not rest:
        jid, rest = "", jid
    return links.memory_source(root_index, jid, rest, finding.line)


def _finding_dict(index: int, finding: ws.SecretFinding) -> dict:
    return {"root": index, **finding.to_dict(), "url": _finding_url(index, finding)}


def _iter_findings(roots: list[MemoryRoot], jid: str, kind: str = ""):
    for index, known in enumerate(roots):
        root, machine = known.path, known.machine
        if jid and not _has_jid(root, jid, machine):
            continue  # this root has no such JID
        if is_elsewhere(root, machine):
            found = memory_index.iter_findings(root, jid or None, machine=machine)
        else:
            found = ws.iter_tree_findings(
                root, jid or None, high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY
            )
        for finding in found:
            if not kind or finding.kind == kind:
                yield _finding_dict(index, finding)


@dataclass(frozen=True, slots=True)
class FindingsPage:
    findings: list[dict]
    number: int
    has_next: bool
    jid: str
    kind: str = ""

    def url(self, number: int, api: bool = False) -> str:
        """The report (or its twin) at page number, with the same filters; the first has no _page."""
        query = {"jid": self.jid, "kind": self.kind, "_page": number if number > 1 else None}
        return links.secrets_report(query, api)

    page_size = SECRETS_PAGE_SIZE

    @property
    def first_index(self) -> int:
        return (self.number - 1) * SECRETS_PAGE_SIZE + 1

    @property
    def last_index(self) -> int:
        return self.first_index + len(self.findings) - 1

    def to_dict(self) -> dict:
        return {
            "page": self.number,
            "page_size": SECRETS_PAGE_SIZE,
            "has_next": self.has_next,
            "next_url": self.url(self.number + 1, api=True) if self.has_next else None,
            "jid": self.jid or None,
            "kind": self.kind or None,
            "findings": self.findings,
        }


def findings_page(request: HttpRequest) -> FindingsPage:
    """One page of findings; reading stops one finding past it. Raises BadParameter."""
    params = SecretsForm.read(request.GET)
    number, jid, kind = params["_page"] or 1, params["jid"], params["kind"]
    roots = known_roots()
    if jid and not any(_has_jid(known.path, jid, known.machine) for known in roots):
        raise BadParameter("jid", f"no JID folder {jid!r} in any memory root")
    start = (number - 1) * SECRETS_PAGE_SIZE
    rows = list(itertools.islice(_iter_findings(roots, jid, kind), start, start + SECRETS_PAGE_SIZE + 1))
    return FindingsPage(rows[:SECRETS_PAGE_SIZE], number, len(rows) > SECRETS_PAGE_SIZE, jid, kind)


def _has_jid(root: Path, jid: str, machine: str) -> bool:
    if is_elsewhere(root, machine):
        return jid in memory_index.jids(root, machine=machine)
    try:
        return bool(ws.resolve_jid_dir(root, jid))
    except ws.UnsafePath:
        return False


def memory_hits(roots: list[MemoryRoot], query: str) -> list[dict]:
    return [
        {"root": index, **hit.to_dict(), "url": links.memory_source(index, hit.jid, hit.file, hit.line)}
        for index, known in enumerate(roots)
        for hit in _search_root(known, query)
    ]


def _search_root(known: MemoryRoot, query: str) -> list[ws.SearchHit]:
    if is_elsewhere(known.path, known.machine):
        return memory_index.search(known.path, query, machine=known.machine)
    return ws.search_memory(known.path, query)


# The memory over time: changes, the memory as of a moment, findings


def _agent_name() -> str:
    return settings.SESSIONVIEWER_AGENT_NAME


def has_snapshots(root: Path, machine: str) -> bool:
    return MemorySnapshot.of_root(machine, root).exists()


def usage_report(request: HttpRequest, sessions: list[dict]) -> dict | None:
    """The JID's usage and cost, as a project's page shows them (projects.usage_report),
    over the indexed sessions of its folder; None for someone who may not read sessions."""
    if not request.user.has_perm("sessionviewer.view_session"):
        return None
    params = ProjectForm.read(request.GET)
    ids = [row["session_id"] for row in sessions if row["session_id"] is not None]
    return projects.usage_report(Session.objects.filter(id__in=ids), params)


def effective_prompt(base: Path, machine: str, jid: str) -> ws.Prompt:
    """The effective prompt from the tree, or from the index where the tree is elsewhere."""
    if is_elsewhere(base, machine):
        now = timezone.now()
        return memory_timeline.memory_as_of(str(base), jid, now, _agent_name(), machine=machine).prompt
    return ws.effective_prompt(base, jid, _agent_name())


def timeline_context(params: dict, root_index: int, held: MemoryRoot, jid: str | None) -> dict:
    """One page of memory changes, newest first, with the filters params
    (forms.MemoryTimelineForm's) ask for: one JID's (jid), or every JID's in the root (jid
    None, then params' jid narrows it), in the root's (held, located) machine's history."""
    base, machine = held.pair
    filters = memory_timeline.Filters(
        params["file"], params["who"], params["since"], params["until"], params["scope"]
    )
    if jid is None and params["jid"]:
        jid = params["jid"]
    keys = memory_timeline.change_keys(str(base), jid, filters, machine=machine)
    page = Paginator(keys, memory_timeline.PAGE_SIZE).get_page(params["_page"] or 1)
    changes = memory_timeline.load_changes([key for _, key in page.object_list])
    memory_timeline.link_all(changes, str(base), machine=machine)
    for change in changes:
        change.source_url = _change_source_url(root_index, change)
        change.as_of_url = _as_of_url(root_index, change, jid)
    return {
        "root_index": root_index,
        "root_machine": machine,
        "machine": shown_machine(held),
        "page": page,
        "changes": changes,
        "params": params,
        "files": memory_timeline.filenames(str(base), jid, machine=machine),
        "who_choices": memory_timeline.WHO,
    }


def _change_source_url(root_index: int, change: memory_timeline.Change) -> str | None:
    """The file as it is now, when it is one the source page shows."""
    if change.kind == "file" or not change.exists_after:
        return None
    return links.memory_source(root_index, change.jid, change.filename)


def _as_of_url(root_index: int, change: memory_timeline.Change, jid: str | None) -> str | None:
    """The JID's memory as it was just after the change: a global file's, in the JID's timeline
    (jid) that shows it; on the page of every JID, a global file has no JID to show. A file
    first seen was changed (its mtime) before any snapshot could hold it: its link is to the
    memory as first recorded, the pass that saw it, which the snapshots can rebuild."""
    owner = change.jid or jid
    if not owner:
        return None
    first = change.who == MemorySnapshot.FIRST and change.recorded_at is not None
    at = max(change.recorded_at, change.changed_at) if first else change.changed_at
    return links.memory_as_of(root_index, owner, at.astimezone(UTC).isoformat())


def changes_params(request: HttpRequest) -> tuple[dict, int]:
    """The memory changes' filters, and the index of the root they are in. Raises BadParameter."""
    params = MemoryChangesForm.read(request.GET)
    return params, params.pop("root") or 0


def _moment_field(moment: datetime) -> str:
    """A moment as the as-of form's date-and-time field holds it: in UTC, as the form reads a
    moment without an offset, to the second, rounded up so the change it shows stays in."""
    moment = moment.astimezone(UTC).replace(tzinfo=None)
    if moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.isoformat(timespec="seconds")


def as_of_context(request: HttpRequest, root_index: int, held: MemoryRoot, jid: str) -> dict:
    """The memory of jid as it was at ?at= (now when absent), in the root's (held, located)
    machine's history. Raises BadParameter."""
    bound = MemoryAsOfForm.read(request.GET)["at"] or timezone.now()
    base, machine = held.pair
    state = memory_timeline.memory_as_of(str(base), jid, bound, _agent_name(), machine=machine)
    sections = [{"section": s, "url": None} for s in state.prompt.sections]
    return {
        "root_index": root_index,
        "machine": shown_machine(held),
        "jid": jid,
        "state": state,
        "at_field": _moment_field(state.at),
        "prompt": state.prompt,
        "sections": sections,
    }


def findings_history(request: HttpRequest, roots: list[MemoryRoot] | None = None) -> dict:
    """One page of the findings in the memory's history (?root=&jid=&kind=), the root picked
    from roots where the page lists them. Raises BadParameter."""
    params = MemoryFindingsForm.read(request.GET)
    root_index = params.pop("root") or 0
    held = located(root_index, roots)
    base, machine = str(held.path), held.machine
    histories = memory_findings.finding_histories(
        base, params["jid"] or None, params["kind"], machine=machine
    )
    page = Paginator(histories, FINDINGS_PAGE_SIZE).get_page(params["_page"] or 1)
    memory_findings.attach_changes(page.object_list, base, machine=machine)
    rows = [_history_row(root_index, history) for history in page.object_list]
    # An index whose findings were fingerprinted with another SECRET_KEY: said, not split silently.
    mismatch = KeyCheck.mismatch()
    return {
        "root_index": root_index,
        "root_machine": machine,
        "machine": shown_machine(held),
        "params": params,
        "page": page,
        "rows": rows,
        "kinds": ws.KINDS,
        "key_mismatch": mismatch,
    }


def _history_row(root_index: int, history: memory_findings.FindingHistory) -> dict:
    """A finding with where to go from it: the change that brought it, the file at its line in
    the editor (or the source page, for a file the editor does not edit), and /forget. A
    purged one that no state holds any more has nowhere to go."""
    jid = history.jid
    if history.first_at is None:
        return {
            "history": history,
            "change_url": None,
            "open_url": None,
            "forget_url": None,
            "purge_url": None,
        }
    at = history.first_at.astimezone(UTC).isoformat()
    editable = memory_files.editable_names(jid)
    places = sorted(history.present, key=lambda place: place.filename not in editable)
    place = places[0] if places else None
    opens_editor = place is not None and place.filename in editable
    open_url = None
    if opens_editor:
        open_url = links.memory_file_at_line(root_index, jid, place.filename, place.line)
    elif place is not None:
        open_url = links.memory_source(root_index, jid, place.filename, place.line)
    change = f"change-s{history.first_snapshot}"
    if jid:
        change_url = links.memory_timeline(root_index, jid, until=at, fragment=change)
    else:  # a global file's change: among every JID's, the global ones
        query = {"root": root_index or None, "scope": "global", "until": at}
        change_url = links.memory_changes(query, fragment=change)
    return {
        "history": history,
        "change_url": change_url,
        "open_url": open_url,
        "opens_editor": opens_editor,
        "forget_url": reverse("workspace-forget", args=[root_index, jid]) if jid else None,
        "purge_url": reverse("workspace-purge", args=[root_index, jid, history.fp])
        if jid
        else reverse("workspace-global-purge", args=[root_index, history.fp]),
    }


# Files, writes and purges


def source_path(held: MemoryRoot, name: str, jid: str, subdir: str | None) -> Path:
    """A file the source page may show: a global persona file, or a JID's memory file, in
    the root (held, located)."""
    base = held.path
    if not jid:
        if name not in memory_files.root_names():
            raise Http404(f"{name!r} is not a global file")
        path = member_path(base, name)
    else:
        jid_dir = jid_folder(base, jid, held.machine)
        if subdir is None and name not in ws.known_files() and not name.endswith(TEXT_SUFFIXES):
            raise Http404(f"{name!r} is not a memory file")
        path = member_path(jid_dir, name, subdir)
    if not path.is_file():
        raise Http404(f"no file {name!r}")
    return path


def audit_page(request: HttpRequest):
    """The page of audit events the query asks for: ?root=&jid=&action=&machine=&_page=.
    Raises BadParameter.

    root and machine are compared with the ones the events recorded, as text: they open no file.
    """
    params = AuditLogForm.read(request.GET)
    filters = {key: params[key] for key in ("root", "jid", "action", "machine") if params[key]}
    events = AuditEvent.filtered(**filters)
    return Paginator(events, AUDIT_PAGE_SIZE).get_page(params["_page"] or 1), filters


def initial_text(target: Target, loaded: ws.LoadedFile) -> str:
    """What the edit form starts from: the file, else what it will replace."""
    if loaded.text is not None:
        return loaded.text
    if target.is_override:
        # A new override starts from the global file it replaces.
        return ws.load_file(member_path(target.root, target.name)).text or ""
    if (legacy := memory_files.legacy_of(target.name)) is not None:
        # user.md replaces the legacy context.md, so it starts from it.
        return ws.load_file(member_path(target.path.parent, legacy.name)).text or ""
    return ""


def edit_start(target: Target) -> tuple[ws.LoadedFile, str]:
    """The file the editor opens, and the text its form starts from. Where the tree is on
    another machine, the file as the index holds it, read-only."""
    if is_elsewhere(target.root, target.machine):
        stored = memory_index.stored_file(target.root, target.jid, target.name, machine=target.machine)
        loaded = stored.loaded() if stored else ws.LoadedFile(None, "")
        return loaded, loaded.text or ""
    loaded = ws.load_file(target.path)
    return loaded, initial_text(target, loaded)


def forget_plan(jid_dir: Path) -> tuple[ws.ForgetPlan | None, str | None]:
    try:
        return ws.forget_plan(jid_dir), None
    except ws.UnsafePath as error:
        return None, str(error)


def purge_plan(root_index: int, jid: str, fp: str) -> tuple[Path, memory_findings.PurgePlan]:
    """The root's path, and the purge of one finding of jid's history (jid "": of the global
    files'); a 404 when none holds it."""
    base, machine = located(root_index).pair
    if jid:
        jid_folder(base, jid, machine)
    found = _FINGERPRINT.fullmatch(fp)
    plan = memory_findings.purge_plan(str(base), jid, fp, machine=machine) if found else None
    if plan is None:
        where = "this JID's history" if jid else "the global files' history"
        raise Http404(f"no such finding in {where}")
    return base, plan


_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


def purge_urls(root_index: int, jid: str, fp: str) -> dict:
    """Where the purge of a JID's finding, or of a global one (jid ""), is confirmed and run."""
    if jid:
        return {
            "run_url": reverse("workspace-purge-run", args=[root_index, jid, fp]),
            "api_url": reverse("api-workspace-purge", args=[root_index, jid, fp]),
        }
    return {
        "run_url": reverse("workspace-global-purge-run", args=[root_index, fp]),
        "api_url": reverse("api-workspace-global-purge", args=[root_index, fp]),
    }
