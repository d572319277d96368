"""Persona editor and memory audit: pages under /workspaces/ and their /api/ twins.

Thin views over sessionviewer.workspaces, which does all the reading and writing. A root is
named by its index in memory_index.known_roots(), never by a path from the request; a JID must name an
existing folder under it (resolve_jid_dir), and file names come from an allow-list per view,
or go through resolve_member for files/ and sessions/.
"""

from __future__ import annotations

import contextlib
import itertools
import mimetypes
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import wraps
from pathlib import Path

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Paginator
from django.db import DatabaseError, transaction
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.utils.http import urlencode
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from sessionviewer import memory_findings, memory_index, memory_timeline, projects
from sessionviewer import workspaces as ws
from sessionviewer.forms import (
    BadParameter,
    EditLineForm,
    FileForm,
    MemoryAsOfForm,
    MemoryFindingsForm,
    MemoryTimelineForm,
    NameField,
    OneOfField,
    PreviewForm,
    ProjectForm,
    TextSearchField,
    VersionForm,
    WholeNumberField,
    clean_param,
)
from sessionviewer.memory_index import MemoryRoot, known_roots
from sessionviewer.models import AuditEvent, KeyCheck, MemorySnapshot, Revision, Session
from sessionviewer.render import IMAGE_TYPES
from sessionviewer.templatetags.workspace_tags import diff_lines
from sessionviewer.views.http import (
    api_permission_required,
    bad_parameter_is_400,
    bad_request,
    json_error,
    json_response,
)

VIEW = "sessionviewer.view_workspace"
EDIT = "sessionviewer.edit_workspace"
GLOBAL_FILES = ws.PERSONA_FILES
JID_EDITABLE = (*ws.PERSONA_FILES, ws.PROFILE, ws.MEMORY)
TEXT_SUFFIXES = (".md", ".jsonl", ".txt")
AUDIT_PAGE_SIZE = 50
AUDIT_ACTIONS = ("create", "edit", "remove", "restore", "new", "forget", "purge")
# The secrets report reads files only until a page is full, so a large tree stays bearable.
SECRETS_PAGE_SIZE = 200


# Locating roots, JIDs and files


def _known(index: int) -> MemoryRoot:
    roots = known_roots()
    if not 0 <= index < len(roots):
        raise Http404(f"no memory root {index}")
    return roots[index]


def _located(index: int) -> MemoryRoot:
    """The root, resolved where it is mounted; one only the index holds is as it was recorded."""
    known = _known(index)
    if _elsewhere(known.path, known.machine):
        if not _has_snapshots(known.path, known.machine):
            raise Http404(f"no memory root {index}")
        return known
    return replace(known, path=known.path.resolve())


def _root(index: int) -> Path:
    return _located(index).path


def _machine(index: int) -> str:
    """The machine whose tree the root is: two machines' trees at one path are two roots."""
    return _known(index).machine


def _elsewhere(base: Path, machine: str) -> bool:
    """Whether this host cannot reach the root (not mounted, or another machine's tree at
    the same path): its pages read the index, and write nothing."""
    return machine != settings.SESSIONVIEWER_MACHINE or not base.is_dir()


_NAME = NameField()


def _jid_dir(root: Path, jid: str, machine: str) -> Path:
    clean_param(_NAME, "jid", jid)  # a name no file system holds is a 400, not a 404
    if _elsewhere(root, machine):
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
        if _elsewhere(known.path, known.machine):
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


def _member(folder: Path, name: str, subdir: str | None = None) -> Path:
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
        return bool(self.jid) and self.name in ws.PERSONA_FILES

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


def _target(root_index: int, jid: str, name: str) -> Target:
    if name not in (JID_EDITABLE if jid else GLOBAL_FILES):
        raise Http404(f"{name!r} cannot be edited here")
    root, machine = _located(root_index).pair
    folder = _jid_dir(root, jid, machine) if jid else root
    if _elsewhere(root, machine):
        clean_param(_NAME, "name", name)
        return Target(root_index, root, machine, jid, name, folder / name)
    return Target(root_index, root, machine, jid, name, _member(folder, name))


def _held_elsewhere(request: HttpRequest, base: Path, machine: str, status: int = 409) -> HttpResponse:
    """A page or write that needs the tree, on a host that cannot reach it: what holds it."""
    machine = memory_index.machine_of(base, machine)
    where = f"machine {machine}" if machine else "another machine"
    message = (
        f"the memory tree {base} is not mounted on this host: it is on {where}, and this host "
        "shows it read-only from the index. Edit it where the tree is mounted."
    )
    if request.path.startswith("/api/"):
        return json_error(message, status)
    context = {"root": base, "machine": machine, "message": message}
    return render(request, "workspaces/elsewhere.html", context, status=status)


def _tree_required(view):
    """A write, or the page confirming one: only where the tree is mounted (409 elsewhere)."""

    @wraps(view)
    def wrapper(request: HttpRequest, root: int, *args, **kwargs) -> HttpResponse:
        base, machine = _located(root).pair
        if _elsewhere(base, machine):
            return _held_elsewhere(request, base, machine)
        return view(request, root, *args, **kwargs)

    return wrapper


def _override_target(root_index: int, jid: str, name: str) -> Target:
    """A JID's own copy of a global persona file: what remove works on."""
    target = _target(root_index, jid, name)
    if not target.is_override:
        raise Http404(f"{name!r} is not a persona override")
    return target


def _existing_override(root_index: int, jid: str, name: str) -> tuple[Target, ws.LoadedFile]:
    """The override and its file as it is now; 404 when there is none to remove."""
    target = _override_target(root_index, jid, name)
    loaded = ws.load_file(target.path)
    if loaded.text is None and loaded.error is None:
        raise Http404(f"{target.label} does not exist")
    return target, loaded


def _target_of(revision: Revision) -> Target:
    for index, known in enumerate(known_roots()):
        elsewhere = _elsewhere(known.path, known.machine)
        if str(known.path if elsewhere else known.path.resolve()) == revision.root:
            return _target(index, revision.jid, revision.filename)
    raise Http404("the memory root of this revision is no longer configured")


def _recorder(request: HttpRequest, target: Target, action: str | None, **detail):
    """The record hook of a save, restore or remove (see workspaces.writes._swap): the revision, with
    the bytes replaced and the bytes written, and the audit entry, in the transaction that the
    rename happens inside. action None: "create" or "edit", by whether the file existed."""

    @contextlib.contextmanager
    def record(before: bytes | None, after: bytes | None):
        with transaction.atomic():
            Revision.record(
                before,
                after,
                root=str(target.root),
                jid=target.jid,
                filename=target.name,
                user=request.user,
                action=action,
                **detail,
            )
            yield

    return record


def _audit(request: HttpRequest, root: Path, jid: str, action: str, **detail) -> None:
    AuditEvent.record(request.user, action, str(root), jid, **detail)


def _unavailable(request: HttpRequest, template: str, context: dict, what: str, error: DatabaseError):
    """503: the database could not record a change, so the change was not made."""
    context["not_done"] = (
        f"{what}: the database could not record it ({error}). Nothing on disk was changed. "
        "Try again in a moment."
    )
    response = render(request, template, context, status=503)
    response["Retry-After"] = "5"
    return response


def _unreadable(request: HttpRequest, template: str, context: dict, what: str, error: OSError):
    """409: what stands at the file's path is no file to replace or read (a FIFO, a folder, a
    bad link, a file without read permission), so the change was not made."""
    context["not_done"] = f"{what}: {ws.read_error(error)}. Nothing on disk was changed."
    return render(request, template, context, status=409)


# Dictionaries for the API


def _root_dict(index: int, known: MemoryRoot) -> dict:
    root, machine = known.path, known.machine
    data = {
        "index": index,
        "path": str(root),
        "machine": machine,
        "url": reverse("workspace-list") + f"#root-{index}",
    }
    if _elsewhere(root, machine) and _has_snapshots(root, machine):
        workspace = memory_index.workspace(root, machine=machine).to_dict()
        data["read_only_held_by"] = memory_index.machine_of(root, machine)
    elif _elsewhere(root, machine):
        return {**data, "error": "not a folder", "global_files": [], "jids": []}
    else:
        workspace = ws.list_workspace(root).to_dict()
    for entry in workspace["jids"]:
        entry["url"] = reverse("workspace-jid", args=[index, entry["jid"]])
        entry["api_url"] = reverse("api-workspace-jid", args=[index, entry["jid"]])
    return {**data, **workspace}


# The JID page's pieces, shared by the page and its twin


def _jid_entry(root: Path, jid: str) -> ws.JidDir:
    try:
        return ws.jid_entry(root, jid)
    except ws.UnsafePath as error:
        raise Http404(str(error)) from None


def _sessions(root_index: int, jid: str, jid_dir: Path) -> list[dict]:
    files = ws.list_sessions(jid_dir)
    # The index stores the path it walked; the core gives the real one: match either.
    paths = {str(f.path) for f in files if f.path} | {str(jid_dir / f.name) for f in files if f.path}
    indexed = {s.path: s for s in Session.objects.filter(path__in=paths).only("id", "path")}
    rows = []
    for f in files:
        # A bad link or a FIFO is listed with its error, and nothing links to it.
        session = (indexed.get(str(f.path)) or indexed.get(str(jid_dir / f.name))) if f.path else None
        rows.append(
            {
                **f.to_dict(),
                "session_id": session.id if session else None,
                "transcript_url": reverse("session-detail", args=[session.id]) if session else None,
                "source_url": _source_url(root_index, jid, f.name) if f.path else None,
            }
        )
    return rows


def _stored_files(root_index: int, jid: str, jid_dir: Path) -> list[dict]:
    return [
        {
            **f.to_dict(),
            "image": f.mime_type in IMAGE_TYPES and not f.error,
            "text": f.mime_type.startswith("text/") and not f.error,
            "url": None if f.error else reverse("workspace-file", args=[root_index, jid, f.name]),
        }
        for f in ws.list_files(jid_dir)
    ]


def _source_url(root_index: int, jid: str, relative: str) -> str | None:
    """The page showing a file of the tree with line anchors; relative as scan_tree gives it."""
    parts = relative.split("/")
    if not jid and len(parts) == 1:
        return reverse("workspace-global-source", args=[root_index, parts[0]])
    if len(parts) == 1:
        return reverse("workspace-source", args=[root_index, jid, parts[0]])
    if len(parts) == 2 and parts[0] == ws.SESSIONS_DIR:
        return reverse("workspace-session-source", args=[root_index, jid, parts[1]])
    return None


def _section_url(root_index: int, jid: str, source: str) -> str | None:
    """Where a prompt section came from: the JID's file, a global file, or nowhere."""
    if source in ("default", "runtime"):
        return None
    if source.startswith(f"{jid}/"):
        return _source_url(root_index, jid, source.removeprefix(f"{jid}/"))
    return _source_url(root_index, "", source)


def _finding_url(root_index: int, finding: ws.SecretFinding) -> str | None:
    jid, _, rest = finding.file.partition("/")
    url = _source_url(root_index, jid, rest) if rest else _source_url(root_index, "", jid)
    return f"{url}#L{finding.line}" if url else None


def _finding_dict(index: int, finding: ws.SecretFinding) -> dict:
    return {"root": index, **finding.to_dict(), "url": _finding_url(index, finding)}


def _iter_findings(roots: list[MemoryRoot], jid: str, kind: str = ""):
    for index, known in enumerate(roots):
        root, machine = known.path, known.machine
        if jid and not _has_jid(root, jid, machine):
            continue  # this root has no such JID
        if _elsewhere(root, machine):
            found = memory_index.iter_findings(root, jid or None, machine=machine)
        else:
            found = ws.iter_tree_findings(root, jid or None)
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

    def url(self, name: str, number: int) -> str:
        query = {k: v for k, v in (("jid", self.jid), ("kind", self.kind)) if v}
        if number > 1:
            query["_page"] = number
        return reverse(name) + (f"?{urlencode(query)}" if query else "")

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
            "next_url": self.url("api-workspace-secrets", self.number + 1) if self.has_next else None,
            "jid": self.jid or None,
            "kind": self.kind or None,
            "findings": self.findings,
        }


def _findings_page(request: HttpRequest) -> FindingsPage:
    """One page of findings; reading stops one finding past it. Raises BadParameter."""
    number = _page_number(request)
    jid = request.GET.get("jid", "").strip()
    if jid:
        clean_param(_NAME, "jid", jid)
    roots = known_roots()
    if jid and not any(_has_jid(known.path, jid, known.machine) for known in roots):
        raise BadParameter("jid", f"no JID folder {jid!r} in any memory root")
    kind = clean_param(_KIND, "kind", request.GET.get("kind", ""))
    start = (number - 1) * SECRETS_PAGE_SIZE
    rows = list(itertools.islice(_iter_findings(roots, jid, kind), start, start + SECRETS_PAGE_SIZE + 1))
    return FindingsPage(rows[:SECRETS_PAGE_SIZE], number, len(rows) > SECRETS_PAGE_SIZE, jid, kind)


_KIND = OneOfField(ws.KINDS)


def _has_jid(root: Path, jid: str, machine: str) -> bool:
    if _elsewhere(root, machine):
        return jid in memory_index.jids(root, machine=machine)
    try:
        return bool(ws.resolve_jid_dir(root, jid))
    except ws.UnsafePath:
        return False


def _hits(roots: list[MemoryRoot], query: str) -> list[dict]:
    return [
        {"root": index, **hit.to_dict(), "url": f"{_source_url(index, hit.jid, hit.file)}#L{hit.line}"}
        for index, known in enumerate(roots)
        for hit in _search_root(known, query)
    ]


def _search_root(known: MemoryRoot, query: str) -> list[ws.SearchHit]:
    if _elsewhere(known.path, known.machine):
        return memory_index.search(known.path, query, machine=known.machine)
    return ws.search_memory(known.path, query)


_MEMORY_QUERY = TextSearchField()


def _memory_query(request: HttpRequest) -> str:
    """The q of the memory search, "" when absent; raises BadParameter naming it."""
    return clean_param(_MEMORY_QUERY, "q", request.GET.get("q", ""))


def _agent_name() -> str:
    return settings.SESSIONVIEWER_AGENT_NAME


_PAGE = WholeNumberField(min_value=1)


def _page_number(request: HttpRequest) -> int:
    """The _page parameter, from 1; raises BadParameter naming it."""
    return clean_param(_PAGE, "_page", request.GET.get("_page")) or 1


# Pages: the workspaces


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def workspace_list(request: HttpRequest) -> HttpResponse:
    roots = []
    for index, known in enumerate(known_roots()):
        root, elsewhere = known.path, _elsewhere(known.path, known.machine)
        if elsewhere:
            has = _has_snapshots(root, known.machine)
            held = memory_index.workspace(root, machine=known.machine) if has else None
            machine = memory_index.machine_of(root, known.machine)
        else:
            held, machine = ws.list_workspace(root), ""
        roots.append(
            {
                "index": index,
                "path": root,
                "shown_machine": known.machine if known.shared else None,
                "workspace": held,
                "elsewhere": elsewhere,
                "machine": machine,
            }
        )
    return render(request, "workspaces/list.html", {"roots": roots})


def _has_snapshots(root: Path, machine: str) -> bool:
    return MemorySnapshot.of_root(machine, root).exists()


def _usage(request: HttpRequest, sessions: list[dict]) -> dict | None:
    """The JID's usage and cost, as a project's page shows them (projects.usage_report),
    over the indexed sessions of its folder; None for someone who may not read sessions."""
    if not request.user.has_perm("sessionviewer.view_session"):
        return None
    params = ProjectForm.read(request.GET)
    ids = [row["session_id"] for row in sessions if row["session_id"] is not None]
    return projects.usage_report(Session.objects.filter(id__in=ids), params)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def jid_detail(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base, machine = _located(root).pair
    jid_dir = _jid_dir(base, jid, machine)
    if _elsewhere(base, machine):
        return _jid_elsewhere(request, root, base, machine, jid)
    entry = _jid_entry(base, jid)
    sessions = _sessions(root, jid, jid_dir)
    report = _usage(request, sessions)
    usage = {
        "report": report,
        "json_url": reverse("api-workspace-jid", args=[root, jid]),
        "list_url": reverse("session-list"),
    }
    if request.htmx:
        return render(request, "workspaces/jid.html#usage-panel", {**usage, "entry": entry})
    persona = [
        {"name": name, "own": entry.files.get(name), "global": ws.global_file_info(base, name)}
        for name in ws.PERSONA_FILES
    ]
    profile_name = (
        ws.PROFILE if ws.PROFILE in entry.files or ws.LEGACY_PROFILE not in entry.files else ws.LEGACY_PROFILE
    )
    context = {
        "root_index": root,
        "root": base,
        "entry": entry,
        "status": ws.jid_status(base, jid),
        "persona": persona,
        "profile_name": profile_name,
        "profile": ws.load_part(jid_dir, profile_name),
        "memory": ws.load_part(jid_dir, ws.MEMORY),
        "knowledge": ws.knowledge(jid_dir),
        "stored_files": _stored_files(root, jid, jid_dir),
        "sessions": sessions,
        **usage,
        "other": [
            {"name": name, "url": _source_url(root, jid, name) if name.endswith(TEXT_SUFFIXES) else None}
            for name in entry.other
        ],
    }
    return render(request, "workspaces/jid.html", context)


def _prompt(base: Path, machine: str, jid: str) -> ws.Prompt:
    """The effective prompt from the tree, or from the index where the tree is elsewhere."""
    if _elsewhere(base, machine):
        now = timezone.now()
        return memory_timeline.memory_as_of(str(base), jid, now, _agent_name(), machine=machine).prompt
    return ws.effective_prompt(base, jid, _agent_name())


def _jid_elsewhere(request: HttpRequest, root_index: int, base: Path, machine: str, jid: str) -> HttpResponse:
    """A JID of a tree this host cannot reach: its files as the index holds them, read-only."""
    files = memory_index.current_files(base, jid, machine=machine)
    sessions = [
        {
            "session_id": s.id,
            "name": s.path.rsplit("/", 1)[-1],
            "transcript_url": reverse("session-detail", args=[s.id]),
        }
        for s in memory_index.transcripts(base, jid, machine=machine).only("id", "path")
    ]
    context = {
        "root_index": root_index,
        "root": base,
        "jid": jid,
        "machine": memory_index.machine_of(base, machine),
        "files": [
            {"file": f, "url": _source_url(root_index, jid, f.filename), "edit": f.filename in JID_EDITABLE}
            for f in files
            if "/" not in f.filename
        ],
        "stored": [f for f in files if f.filename.startswith(f"{ws.FILES_DIR}/")],
        "sessions": sessions,
        "usage": _usage(request, sessions),
    }
    return render(request, "workspaces/jid_elsewhere.html", context)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def prompt_detail(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base, machine = _located(root).pair
    _jid_dir(base, jid, machine)
    prompt = _prompt(base, machine, jid)
    sections = [{"section": s, "url": _section_url(root, jid, s.source)} for s in prompt.sections]
    context = {"root_index": root, "jid": jid, "prompt": prompt, "sections": sections}
    return render(request, "workspaces/prompt.html", context)


def _timeline(request: HttpRequest, root_index: int, held: MemoryRoot, jid: str | None) -> dict:
    """One page of memory changes, newest first, with the filters the query asks for: one
    JID's (jid), or every JID's in the root (jid None, then ?jid= narrows it). Raises BadParameter."""
    base, machine = held.pair
    params = MemoryTimelineForm.read(request.GET)
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
        "machine": _shown_machine(held),
        "page": page,
        "changes": changes,
        "params": params,
        "files": memory_timeline.filenames(str(base), jid, machine=machine),
        "who_choices": memory_timeline.WHO,
    }


def _shown_machine(held: MemoryRoot) -> str | None:
    """The root's machine, where another machine's tree has the same path: which of the two
    histories this is. None where one machine has the path."""
    return held.machine if held.shared else None


def _change_source_url(root_index: int, change: memory_timeline.Change) -> str | None:
    """The file as it is now, when it is one the source page shows."""
    if change.kind == "file" or not change.exists_after:
        return None
    return _source_url(root_index, change.jid, change.filename)


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
    at = at.astimezone(UTC).isoformat()
    return reverse("workspace-memory-as-of", args=[root_index, owner]) + f"?{urlencode({'at': at})}"


def _change_dict(root_index: int, change: memory_timeline.Change) -> dict:
    revision = change.revision_id
    return {
        **change.to_dict(),
        "revision_url": reverse("workspace-revision", args=[revision]) if revision else None,
        "source_url": change.source_url,
        "as_of_url": change.as_of_url,
        "timeline_url": reverse("workspace-memory-timeline", args=[root_index, change.jid])
        if change.jid
        else None,
    }


def _timeline_dict(context: dict) -> dict:
    page = context["page"]
    params = {k: v for k, v in context["params"].items() if k != "_page"}
    return {
        "root": context["root_index"],
        "machine": context["root_machine"],
        "filters": {k: (v.isoformat() if hasattr(v, "isoformat") else v or None) for k, v in params.items()},
        "count": page.paginator.count,
        "page": page.number,
        "pages": page.paginator.num_pages,
        "changes": [_change_dict(context["root_index"], change) for change in context["changes"]],
    }


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def memory_timeline_page(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    """Every recorded change to one JID's memory and persona files, newest first."""
    held = _located(root)
    _jid_dir(held.path, jid, held.machine)
    context = {**_timeline(request, root, held, jid), "jid": jid}
    template_name = "workspaces/timeline.html"
    if request.htmx:
        template_name += "#timeline"
    return render(request, template_name, context)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def memory_changes(request: HttpRequest) -> HttpResponse:
    """Recent memory changes of every JID, in every memory root (?root= picks one)."""
    root = _root_param(request)
    context = {**_timeline(request, root, _located(root), None), "jid": None, "roots": known_roots()}
    template_name = "workspaces/memory_changes.html"
    if request.htmx:
        template_name += "#timeline"
    return render(request, template_name, context)


def _moment_field(moment: datetime) -> str:
    """A moment as the as-of form's date-and-time field holds it: in UTC, as the form reads a
    moment without an offset, to the second, rounded up so the change it shows stays in."""
    moment = moment.astimezone(UTC).replace(tzinfo=None)
    if moment.microsecond:
        moment = moment.replace(microsecond=0) + timedelta(seconds=1)
    return moment.isoformat(timespec="seconds")


def _as_of(request: HttpRequest, root_index: int, held: MemoryRoot, jid: str) -> dict:
    """The memory of jid as it was at ?at= (now when absent). Raises BadParameter."""
    bound = MemoryAsOfForm.read(request.GET)["at"] or timezone.now()
    base, machine = held.pair
    state = memory_timeline.memory_as_of(str(base), jid, bound, _agent_name(), machine=machine)
    sections = [{"section": s, "url": None} for s in state.prompt.sections]
    return {
        "root_index": root_index,
        "machine": _shown_machine(held),
        "jid": jid,
        "state": state,
        "at_field": _moment_field(state.at),
        "prompt": state.prompt,
        "sections": sections,
    }


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@bad_parameter_is_400
def memory_as_of_page(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    """Every memory file of a JID, and its effective prompt, as they were at a moment."""
    held = _located(root)
    _jid_dir(held.path, jid, held.machine)
    return render(request, "workspaces/as_of.html", _as_of(request, root, held, jid))


FINDINGS_PAGE_SIZE = 50


def _findings_history(request: HttpRequest) -> dict:
    """One page of the findings in the memory's history (?root=&jid=&kind=). Raises BadParameter."""
    params = MemoryFindingsForm.read(request.GET)
    root_index = _root_param(request)
    held = _located(root_index)
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
        "machine": _shown_machine(held),
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
    timeline = reverse("workspace-memory-timeline", args=[root_index, jid]) if jid else None
    editable = JID_EDITABLE if jid else GLOBAL_FILES
    places = sorted(history.present, key=lambda place: place.filename not in editable)
    place = places[0] if places else None
    open_url = None
    if place is not None and place.filename in editable:
        name = "workspace-edit" if jid else "workspace-global-edit"
        args = [root_index, jid, place.filename] if jid else [root_index, place.filename]
        open_url = reverse(name, args=args) + f"?{urlencode({'line': place.line})}"
    elif place is not None:
        source = _source_url(root_index, jid, place.filename)
        open_url = f"{source}#L{place.line}" if source else None
    if timeline:
        change_url = f"{timeline}?{urlencode({'until': at})}#change-s{history.first_snapshot}"
    else:  # a global file's change: among every JID's, the global ones
        query = {"root": root_index} if root_index else {}
        query |= {"scope": "global", "until": at}
        change_url = (
            reverse("workspace-memory-changes") + f"?{urlencode(query)}#change-s{history.first_snapshot}"
        )
    return {
        "history": history,
        "change_url": change_url,
        "open_url": open_url,
        "opens_editor": bool(open_url and "?line=" in open_url),
        "forget_url": reverse("workspace-forget", args=[root_index, jid]) if jid else None,
        "purge_url": reverse("workspace-purge", args=[root_index, jid, history.fp])
        if jid
        else reverse("workspace-global-purge", args=[root_index, history.fp]),
    }


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@bad_parameter_is_400
def memory_findings_page(request: HttpRequest) -> HttpResponse:
    """Every finding the memory's history holds: when it came, in which turn, and if it is still there."""
    context = {**_findings_history(request), "roots": known_roots()}
    return render(request, "workspaces/memory_findings.html", context)


_ROOT_INDEX = WholeNumberField(min_value=0)


def _root_param(request: HttpRequest) -> int:
    return clean_param(_ROOT_INDEX, "root", request.GET.get("root")) or 0


def _source_path(root: int, name: str, jid: str, subdir: str | None) -> Path:
    """A file the source page may show: a global persona file, or a JID's memory file."""
    base = _root(root)
    if not jid:
        if name not in GLOBAL_FILES:
            raise Http404(f"{name!r} is not a global file")
        path = _member(base, name)
    else:
        jid_dir = _jid_dir(base, jid, _machine(root))
        if subdir is None and name not in ws.JID_FILES and not name.endswith(TEXT_SUFFIXES):
            raise Http404(f"{name!r} is not a memory file")
        path = _member(jid_dir, name, subdir)
    if not path.is_file():
        raise Http404(f"no file {name!r}")
    return path


def _source_file(
    request: HttpRequest, root: int, name: str, jid: str, subdir: str | None
) -> ws.LoadedFile | HttpResponse:
    """The file the source page shows: from the tree, or from the index where the tree is
    elsewhere (a transcript there: its transcript page; a file the index lacks: 404, naming
    the machine that holds the tree)."""
    base, machine = _located(root).pair
    if not _elsewhere(base, machine):
        return ws.load_file(_source_path(root, name, jid, subdir))
    if jid:
        _jid_dir(base, jid, machine)
    stored = None if subdir else memory_index.stored_file(base, jid, name, machine=machine)
    if stored is not None and stored.content is not None:
        return stored.loaded()
    # A transcript: its lines are not kept, its entries are. Its transcript page shows them.
    path = "/".join(part for part in (str(base), jid, subdir, name) if part)
    session = Session.objects.filter(path=path, source__machine=machine).only("id").first()
    if session is None:
        return _held_elsewhere(request, base, machine, 404)
    api = request.path.startswith("/api/")
    return redirect(reverse("api-session-detail" if api else "session-detail", args=[session.id]))


def _source_api_url(root: int, name: str, jid: str, subdir: str | None) -> str:
    if not jid:
        return reverse("api-workspace-global-source", args=[root, name])
    if subdir:
        return reverse("api-workspace-session-source", args=[root, jid, name])
    return reverse("api-workspace-source", args=[root, jid, name])


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def file_source(request: HttpRequest, root: int, name: str, jid: str = "", subdir: str | None = None):
    """A memory file or transcript with numbered lines, so findings can link to #L<line>."""
    loaded = _source_file(request, root, name, jid, subdir)
    if isinstance(loaded, HttpResponse):
        return loaded
    label = "/".join(part for part in (jid, subdir, name) if part)
    context = {"root_index": root, "jid": jid, "label": label, "loaded": loaded}
    context["api_url"] = _source_api_url(root, name, jid, subdir)
    context["lines"] = (loaded.text or "").replace("\r\n", "\n").split("\n")
    return render(request, "workspaces/source.html", context)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def stored_file(request: HttpRequest, root: int, jid: str, name: str) -> HttpResponse:
    """A preview of a downloaded file: raster images as themselves, text as plain text."""
    base, machine = _located(root).pair
    if _elsewhere(base, machine):
        return _held_elsewhere(request, base, machine, 404)  # files/ is indexed by name, size and hash
    path = _member(_jid_dir(base, jid, machine), name, ws.FILES_DIR)
    mime_type = mimetypes.guess_type(name)[0] or ""
    if mime_type in IMAGE_TYPES:
        content_type = mime_type
    elif mime_type.startswith("text/"):
        content_type = "text/plain; charset=utf-8"
    else:
        raise Http404(f"no preview for {mime_type or 'this type'}")
    try:
        handle = ws.open_regular(path)
    except OSError as error:
        raise Http404(f"{name!r}: {ws.read_error(error)}") from None
    response = FileResponse(handle, content_type=content_type, filename=name)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    return response


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
def search(request: HttpRequest) -> HttpResponse:
    try:
        query = _memory_query(request)
    except BadParameter as error:
        return bad_request(request, error)
    hits = _hits(known_roots(), query) if query.strip() else []
    template_name = "workspaces/search.html"
    if request.htmx:
        template_name += "#search-results"
    return render(request, template_name, {"q": query, "hits": hits})


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def secrets(request: HttpRequest) -> HttpResponse:
    try:
        page = _findings_page(request)
    except BadParameter as error:
        return bad_request(request, error)
    context = {
        "page": page,
        "api_url": page.url("api-workspace-secrets", page.number),
        "previous_url": page.url("workspace-secrets", page.number - 1),
        "next_url": page.url("workspace-secrets", page.number + 1),
        "kinds": ws.KINDS,
    }
    return render(request, "workspaces/secrets.html", context)


def _audit_page(request: HttpRequest):
    """The page of audit events the query asks for: ?root=&jid=&action=&_page=. Raises BadParameter.

    root is compared with the roots the events recorded, as text: it opens no file.
    """
    number = _page_number(request)
    root, jid, action = (request.GET.get(name, "").strip() for name in ("root", "jid", "action"))
    if action and action not in AUDIT_ACTIONS:
        raise BadParameter("action", f"must be one of {', '.join(AUDIT_ACTIONS)}")
    events = AuditEvent.filtered(root, jid, action)
    filters = {key: value for key, value in (("root", root), ("jid", jid), ("action", action)) if value}
    return Paginator(events, AUDIT_PAGE_SIZE).get_page(number), filters


def _audit_roots() -> list[str]:
    """The roots events were recorded in, and the configured ones: the root filter's choices."""
    return sorted({*AuditEvent.recorded_roots(), *(str(known.path) for known in known_roots())})


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
def audit_log(request: HttpRequest) -> HttpResponse:
    try:
        page, filters = _audit_page(request)
    except BadParameter as error:
        return bad_request(request, error)
    context = {"page": page, "filters": filters, "query": urlencode(filters), "actions": AUDIT_ACTIONS}
    if request.htmx:  # the table alone: the filter form, with its roots, stays on the page
        return render(request, "workspaces/audit_log.html#audit-log", context)
    return render(request, "workspaces/audit_log.html", {**context, "roots": _audit_roots()})


# Pages: editing


def _edit_context(target: Target, form: FileForm, loaded: ws.LoadedFile, **extra) -> dict:
    return {
        "target": target,
        "form": form,
        "loaded": loaded,
        "revisions": Revision.history_of(str(target.root), target.jid, target.name),
        "preview_text": form["text"].value() or "",
        **extra,
    }


def _unwritable(request: HttpRequest, target: Target, form: FileForm, loaded: ws.LoadedFile, text: str):
    """409: what is on disk at the file's path is not a file the editor may replace (a FIFO,
    a folder, a bad link, a file it cannot read). Nothing is written; the text is shown back."""
    context = _edit_context(target, form, loaded, unsaved=text)
    return render(request, "workspaces/edit.html", context, status=409)


def _initial_text(target: Target, loaded: ws.LoadedFile) -> str:
    """What the edit form starts from: the file, else what it will replace."""
    if loaded.text is not None:
        return loaded.text
    if target.is_override:
        # A new override starts from the global file it replaces.
        return ws.load_file(_member(target.root, target.name)).text or ""
    if target.name == ws.PROFILE:
        # user.md replaces the legacy context.md, so it starts from it.
        return ws.load_file(_member(target.path.parent, ws.LEGACY_PROFILE)).text or ""
    return ""


def _revision_dict(revision: Revision) -> dict:
    return {
        **revision.to_dict(),
        "url": reverse("workspace-revision", args=[revision.id]),
        "api_url": reverse("api-workspace-revision", args=[revision.id]),
    }


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
@bad_parameter_is_400
def edit_file(request: HttpRequest, root: int, name: str, jid: str = "") -> HttpResponse:
    """The editor; ?line=N highlights that line (a finding's), in the text and beside it."""
    line = EditLineForm.read(request.GET)["line"]
    target = _target(root, jid, name)
    elsewhere = _elsewhere(target.root, target.machine)
    if elsewhere:
        stored = memory_index.stored_file(target.root, jid, name, machine=target.machine)
        loaded = stored.loaded() if stored else ws.LoadedFile(None, "")
        text = loaded.text or ""
    else:
        loaded = ws.load_file(target.path)
        text = _initial_text(target, loaded)
    form = FileForm(
        initial={"text": text, "version": loaded.version}, preview_url=reverse("workspace-preview")
    )
    lines = text.replace("\r\n", "\n").split("\n")
    highlight = None
    if line is not None and line <= len(lines):
        form.fields["text"].widget.attrs["data-line"] = line
        numbered = list(enumerate(lines, start=1))[max(0, line - 3) : line + 2]
        highlight = {"line": line, "around": numbered}
    context = _edit_context(target, form, loaded, highlight=highlight)
    if elsewhere:
        context["elsewhere"] = {"machine": memory_index.machine_of(target.root, target.machine)}
    return render(request, "workspaces/edit.html", context)


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def save_file(request: HttpRequest, root: int, name: str, jid: str = "") -> HttpResponse:
    target = _target(root, jid, name)
    preview_url = reverse("workspace-preview")
    form = FileForm(request.POST, preview_url=preview_url)
    before = ws.load_file(target.path)
    if not before.readable:
        return _unwritable(request, target, form, before, request.POST.get("text", ""))
    if not form.is_valid():
        return render(request, "workspaces/edit.html", _edit_context(target, form, before), status=400)
    text = form.cleaned_data["text"].replace("\r\n", "\n")
    unchanged = before.text is not None and before.error is None and before.text.replace("\r\n", "\n") == text
    if unchanged and before.version == form.cleaned_data["version"]:
        messages.info(request, f"No change to {target.label}.")
        return redirect(target.done_url())
    try:
        ws.atomic_write(target.path, text, form.cleaned_data["version"], _recorder(request, target, None))
    except ws.Conflict as conflict:
        # Keep the user's text; the form now carries the disk's version, so saving again is a
        # deliberate choice made with both versions in view.
        form = FileForm(initial={"text": text, "version": conflict.current_version}, preview_url=preview_url)
        context = _edit_context(target, form, ws.load_file(target.path), conflict=conflict, mine=text)
        return render(request, "workspaces/edit.html", context, status=409)
    except DatabaseError as error:
        # The form still holds the user's text and the version it was loaded from.
        context = _edit_context(target, form, before)
        return _unavailable(request, "workspaces/edit.html", context, "Not saved", error)
    except OSError as error:  # it became a FIFO, folder or unreadable file since it was loaded
        return _unwritable(request, target, form, ws.LoadedFile(None, "", ws.read_error(error), False), text)
    messages.success(request, f"Saved {target.label}.")
    return redirect(target.done_url())


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
def preview(request: HttpRequest) -> HttpResponse:
    form = PreviewForm(request.POST)
    text = form.cleaned_data["text"] if form.is_valid() else ""
    return render(request, "workspaces/edit.html#preview", {"preview_text": text})


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def remove_confirm(request: HttpRequest, root: int, jid: str, name: str) -> HttpResponse:
    target, loaded = _existing_override(root, jid, name)
    form = VersionForm(initial={"version": loaded.version})
    global_file = ws.load_file(_member(target.root, name))
    return render(
        request,
        "workspaces/remove.html",
        {"target": target, "loaded": loaded, "form": form, "global_file": global_file},
    )


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def remove_file(request: HttpRequest, root: int, jid: str, name: str) -> HttpResponse:
    target = _override_target(root, jid, name)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("version: " + "; ".join(form.errors.get("version", [])))
    before = ws.load_file(target.path)
    record = _recorder(request, target, "remove")
    try:
        ws.remove_override(
            _jid_dir(target.root, jid, target.machine), name, form.cleaned_data["version"], record
        )
    except ws.Conflict as conflict:
        context = {
            "target": target,
            "loaded": ws.load_file(target.path),
            "form": VersionForm(initial={"version": conflict.current_version}),
        }
        return render(request, "workspaces/remove.html", {**context, "conflict": conflict}, status=409)
    except DatabaseError as error:
        context = {"target": target, "loaded": before, "form": form}
        return _unavailable(request, "workspaces/remove.html", context, "Not removed", error)
    except OSError as error:
        context = {"target": target, "loaded": before, "form": form}
        return _unreadable(request, "workspaces/remove.html", context, "Not removed", error)
    messages.success(request, f"Removed {target.label}: the global file applies again.")
    return redirect(target.done_url())


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def revision_detail(request: HttpRequest, revision_id: int) -> HttpResponse:
    revision = get_object_or_404(Revision.objects.select_related("user"), id=revision_id)
    try:
        target = _target_of(revision)
    except Http404:
        target, current = None, None
    else:
        current = ws.load_file(target.path)
    if target and _elsewhere(target.root, target.machine):  # read-only here: no restore from this page
        stored = memory_index.stored_file(target.root, target.jid, target.name, machine=target.machine)
        current = None if stored is None else stored.loaded()
    form = VersionForm(initial={"version": current.version}) if current and current.version else None
    context = {"revision": revision, "target": target, "current": current, "form": form}
    return render(request, "workspaces/revision.html", context)


def _restore(request: HttpRequest, revision_id: int, side: str) -> HttpResponse:
    """Put the file back as one side of a revision has it: a save like any other, version-checked.
    The exact bytes come back, not the text shown (which replaced bytes that are not UTF-8)."""
    revision = get_object_or_404(Revision, id=revision_id)
    target = _target_of(revision)
    if _elsewhere(target.root, target.machine):
        return _held_elsewhere(request, target.root, target.machine)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("version: " + "; ".join(form.errors.get("version", [])))
    content = revision.content(side)
    detail = {"restored": revision.id} if side == "after" else {"restored": revision.id, "side": "before"}
    record = _recorder(request, target, "restore", **detail)
    version = form.cleaned_data["version"]
    try:
        if content is None:
            ws.remove_file(target.path, version, record)
        else:
            ws.atomic_write(target.path, content, version, record)
    except (ws.Conflict, DatabaseError) as error:
        current = ws.load_file(target.path)
        context = {
            "revision": revision,
            "target": target,
            "current": current,
            "form": VersionForm(initial={"version": current.version}),
        }
        if isinstance(error, DatabaseError):
            return _unavailable(request, "workspaces/revision.html", context, "Not restored", error)
        return render(request, "workspaces/revision.html", {**context, "conflict": error}, status=409)
    except OSError as error:
        context = {"revision": revision, "target": target, "current": ws.load_file(target.path), "form": None}
        return _unreadable(request, "workspaces/revision.html", context, "Not restored", error)
    when = "as of" if side == "after" else "as it was before"
    messages.success(request, f"Restored {target.label} {when} revision {revision.id}.")
    return redirect(target.done_url())


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
def revision_restore(request: HttpRequest, revision_id: int) -> HttpResponse:
    """Put the file back as this revision left it."""
    return _restore(request, revision_id, "after")


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
def revision_restore_before(request: HttpRequest, revision_id: int) -> HttpResponse:
    """Undo a save: put the file back as it was before it, byte for byte."""
    return _restore(request, revision_id, "before")


# Pages: the agent's own commands


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def new_confirm(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base = _root(root)
    return render(
        request, "workspaces/new.html", _new_context(root, base, _jid_dir(base, jid, _machine(root)), jid)
    )


def _new_context(root_index: int, base: Path, jid_dir: Path, jid: str, **extra) -> dict:
    # The form carries the history's version: a second /new from the same page is refused.
    context = {"root_index": root_index, "jid": jid, "status": ws.jid_status(base, jid)}
    try:
        version = ws.file_version(_member(jid_dir, ws.HISTORY))
    except OSError:  # a FIFO or folder for history: status.errors says so, and /new is refused
        version = ""
    return {**context, "form": VersionForm(initial={"version": version}), **extra}


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def new_session(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base = _root(root)
    jid_dir = _jid_dir(base, jid, _machine(root))
    form = VersionForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("version: " + "; ".join(form.errors.get("version", [])))

    @contextlib.contextmanager
    def record(archive: Path):
        with transaction.atomic():
            _audit(request, base, jid, "new", archived=f"{ws.SESSIONS_DIR}/{archive.name}")
            yield

    try:
        archived = ws.archive_session(jid_dir, timezone.now(), form.cleaned_data["version"], record)
        if not archived:
            _audit(request, base, jid, "new", archived=None)
    except ws.Conflict as conflict:
        context = _new_context(root, base, jid_dir, jid, conflict=conflict)
        return render(request, "workspaces/new.html", context, status=409)
    except DatabaseError as error:
        context = _new_context(root, base, jid_dir, jid)
        return _unavailable(request, "workspaces/new.html", context, "Not archived", error)
    except OSError as error:
        context = _new_context(root, base, jid_dir, jid)
        return _unreadable(request, "workspaces/new.html", context, "Not archived", error)
    name = f"{ws.SESSIONS_DIR}/{archived.name}" if archived else None
    if archived:
        messages.success(request, f"Archived the session as {name}.")
    else:
        messages.info(request, "Session is already empty: nothing was archived.")
    return redirect("workspace-jid", root, jid)


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def forget_confirm(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    jid_dir = _jid_dir(_root(root), jid, _machine(root))
    return render(request, "workspaces/forget.html", _forget_context(root, jid, jid_dir))


def _forget_plan(jid_dir: Path) -> tuple[ws.ForgetPlan | None, str | None]:
    try:
        return ws.forget_plan(jid_dir), None
    except ws.UnsafePath as error:
        return None, str(error)


def _forget_context(root_index: int, jid: str, jid_dir: Path, **extra) -> dict:
    plan, refused = _forget_plan(jid_dir)
    return {
        "root_index": root_index,
        "jid": jid,
        "erasable": plan.names if plan else ws.forgettable(jid_dir),
        "refused": refused,
        # The form carries the plan's version: what is erased is what the user was shown.
        "form": VersionForm(initial={"version": plan.version}) if plan else None,
        **extra,
    }


def _record_forget(request: HttpRequest, root: Path, jid: str, plan: ws.ForgetPlan) -> None:
    """Before anything is deleted, and committed: the audit entry (names, sizes and hashes,
    never content), and the erasure of the revisions held of the files about to go."""
    with transaction.atomic():
        files = [f.to_dict() for f in plan.files]
        AuditEvent.record_forget(request.user, str(root), jid, list(plan.names), files)


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@_tree_required
def forget(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base = _root(root)
    jid_dir = _jid_dir(base, jid, _machine(root))
    form = VersionForm(request.POST)
    if not form.is_valid():
        return HttpResponseBadRequest("version: " + "; ".join(form.errors.get("version", [])))
    try:
        erased = ws.forget_user(
            jid_dir, form.cleaned_data["version"], lambda plan: _record_forget(request, base, jid, plan)
        )
    except (ws.Conflict, ws.UnsafePath) as error:
        # Refused, nothing deleted: the page shows what there is now, or why it cannot go.
        context = _forget_context(root, jid, jid_dir, conflict=isinstance(error, ws.Conflict))
        return render(request, "workspaces/forget.html", context, status=409)
    except DatabaseError as error:
        return _unavailable(
            request,
            "workspaces/forget.html",
            _forget_context(root, jid, jid_dir),
            "Nothing was forgotten",
            error,
        )
    except OSError as error:
        # After the audit entry: it names what /forget set out to erase; the page lists what is left.
        context = _forget_context(root, jid, jid_dir, stopped=f"{error.strerror or error}: {error.filename}")
        return render(request, "workspaces/forget.html", context, status=500)
    if erased:
        messages.success(request, f"Erased {', '.join(erased)}.")
    else:
        messages.info(request, "There was nothing to forget.")
    return redirect("workspace-jid", root, jid)


def _purge_plan(root_index: int, jid: str, fp: str) -> tuple[Path, memory_findings.PurgePlan]:
    """The purge of one finding of jid's history (jid "": of the global files'); a 404 when
    none holds it."""
    base, machine = _located(root_index).pair
    if jid:
        _jid_dir(base, jid, machine)
    found = _FINGERPRINT.fullmatch(fp)
    plan = memory_findings.purge_plan(str(base), jid, fp, machine=machine) if found else None
    if plan is None:
        where = "this JID's history" if jid else "the global files' history"
        raise Http404(f"no such finding in {where}")
    return base, plan


_FINGERPRINT = re.compile(r"[0-9a-f]{64}")


def _purge_urls(root_index: int, jid: str, fp: str) -> dict:
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


def _findings_url(root_index: int, jid: str) -> str:
    query = {k: v for k, v in (("root", root_index), ("jid", jid)) if v}
    return reverse("workspace-memory-findings") + (f"?{urlencode(query)}" if query else "")


def _purge_context(root_index: int, jid: str, plan: memory_findings.PurgePlan) -> dict:
    context = {"root_index": root_index, "jid": jid, "plan": plan, "fp": plan.fp}
    context |= _purge_urls(root_index, jid, plan.fp)
    context["cancel_url"] = _findings_url(root_index, jid)
    # A purge rewrites the memory's history only: the transcripts may hold the value too.
    scan = {k: v for k, v in (("jid", jid), ("kind", plan.kind)) if v}
    context["transcripts_url"] = reverse("workspace-secrets") + f"?{urlencode(scan)}"
    if not jid:
        # The same value in a JID's own files is that JID's finding: purged from its history.
        others = memory_findings.jids_holding(str(_root(root_index)), plan.fp, machine=plan.machine)
        context["others"] = [
            {"jid": other, "purge_url": reverse("workspace-purge", args=[root_index, other, plan.fp])}
            for other in others
        ]
    return context


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
def purge_confirm(request: HttpRequest, root: int, fp: str, jid: str = "") -> HttpResponse:
    _, plan = _purge_plan(root, jid, fp)
    return render(request, "workspaces/purge.html", _purge_context(root, jid, plan))


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
def purge_finding(request: HttpRequest, root: int, fp: str, jid: str = "") -> HttpResponse:
    """Replace one finding by [purged] in every stored state and revision of jid (and of the
    root's global files; jid "": of those alone), audited by kind and fingerprint. Planned again
    here: what is purged is whatever holds the value now."""
    base, plan = _purge_plan(root, jid, fp)
    try:
        with transaction.atomic():
            memory_findings.purge(plan, str(base), jid, request.user)
    except DatabaseError as error:
        context = _purge_context(root, jid, plan)
        return _unavailable(request, "workspaces/purge.html", context, "Nothing was purged", error)
    messages.success(
        request,
        f"Purged the {plan.kind} {plan.masked} from {len(plan.snapshots)} stored "
        f"state{pluralize(len(plan.snapshots))} and {len(plan.revisions)} revision{pluralize(len(plan.revisions))}.",
    )
    return redirect(_findings_url(root, jid))


# The JSON twins


@require_safe
@api_permission_required(VIEW)
def api_workspace_list(request: HttpRequest) -> HttpResponse:
    return json_response({"roots": [_root_dict(i, root) for i, root in enumerate(known_roots())]})


@require_safe
@api_permission_required(VIEW)
@bad_parameter_is_400
def api_jid_detail(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    try:
        base = _root(root)
        jid_dir = _jid_dir(base, jid, _machine(root))
        if _elsewhere(base, _machine(root)):
            return _api_jid_elsewhere(root, base, _machine(root), jid)
        entry = _jid_entry(base, jid)
        knowledge = ws.knowledge(jid_dir)
    except Http404 as error:
        return json_error(str(error), 404)
    status = ws.jid_status(base, jid)
    sessions = _sessions(root, jid, jid_dir)
    report = _usage(request, sessions)
    return json_response(
        {
            "root": root,
            "jid": jid,
            "is_room": entry.is_room,
            "files": [info.to_dict() for info in entry.files.values()],
            "overrides": list(entry.overrides),
            "dirs": list(entry.dirs),
            "other": list(entry.other),
            "status": status.to_dict(),
            "knowledge": knowledge.to_dict(),
            "stored_files": _stored_files(root, jid, jid_dir),
            "sessions": sessions,
            # The indexed sessions' usage and cost, as on a project's page (null without
            # the permission to read sessions).
            "usage": projects.usage_to_dict(report) if report is not None else None,
            "url": reverse("workspace-jid", args=[root, jid]),
            "prompt_url": reverse("api-workspace-prompt", args=[root, jid]),
        }
    )


def _api_jid_elsewhere(root: int, base: Path, machine: str, jid: str) -> HttpResponse:
    """The JID's files as the index holds them: the tree is on another machine."""
    held = next(
        (entry for entry in memory_index.workspace(base, machine=machine).jids if entry.jid == jid), None
    )
    sessions = memory_index.transcripts(base, jid, machine=machine).values_list("id", flat=True)
    return json_response(
        {
            "root": root,
            "jid": jid,
            "is_room": ws.is_room(jid),
            "files": [info.to_dict() for info in held.files.values()] if held else [],
            "overrides": list(held.overrides) if held else [],
            "read_only_held_by": memory_index.machine_of(base, machine),
            "sessions": [
                {"session_id": id_, "transcript_url": reverse("session-detail", args=[id_])}
                for id_ in sessions
            ],
            "url": reverse("workspace-jid", args=[root, jid]),
            "prompt_url": reverse("api-workspace-prompt", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(VIEW)
def api_prompt(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    try:
        base = _root(root)
        _jid_dir(base, jid, _machine(root))
    except Http404 as error:
        return json_error(str(error), 404)
    return json_response({"root": root, "jid": jid, **_prompt(base, _machine(root), jid).to_dict()})


@require_safe
@api_permission_required(VIEW)
def api_search(request: HttpRequest) -> HttpResponse:
    try:
        query = _memory_query(request)
    except BadParameter as error:
        return json_error(str(error), 400)
    if not query.strip():
        return json_error("q: give the text to search for", 400)
    return json_response({"q": query, "hits": _hits(known_roots(), query)})


@require_safe
@api_permission_required(VIEW)
def api_secrets(request: HttpRequest) -> HttpResponse:
    try:
        page = _findings_page(request)
    except BadParameter as error:
        return json_error(str(error), 400)
    return json_response(page.to_dict())


@require_safe
@api_permission_required(VIEW)
def api_audit_log(request: HttpRequest) -> HttpResponse:
    try:
        page, filters = _audit_page(request)
    except BadParameter as error:
        return json_error(str(error), 400)
    return json_response(
        {
            "filters": filters,
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "events": [event.to_dict() for event in page.object_list],
        }
    )


@require_safe
@api_permission_required(VIEW)
def api_revision_detail(request: HttpRequest, revision_id: int) -> HttpResponse:
    revision = Revision.objects.select_related("user").filter(id=revision_id).first()
    if revision is None:
        return json_error(f"no revision {revision_id}", 404)
    diff = "\n".join(line.text for line in diff_lines(revision.before, revision.after))
    return json_response(
        {
            **revision.to_dict(),
            "before": revision.before,
            "after": revision.after,
            # False: the text above shows U+FFFD for bytes that are not UTF-8; a restore puts them back.
            "before_is_utf8": revision.before_is_utf8,
            "after_is_utf8": revision.after_is_utf8,
            "diff": diff,
        }
    )


@require_safe
@api_permission_required(VIEW)
@bad_parameter_is_400
def api_memory_timeline(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    try:
        held = _located(root)
        _jid_dir(held.path, jid, held.machine)
    except Http404 as error:
        return json_error(str(error), 404)
    context = _timeline(request, root, held, jid)
    return json_response(
        {
            "jid": jid,
            **_timeline_dict(context),
            "url": reverse("workspace-memory-timeline", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(VIEW)
@bad_parameter_is_400
def api_memory_as_of(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    try:
        held = _located(root)
        _jid_dir(held.path, jid, held.machine)
    except Http404 as error:
        return json_error(str(error), 404)
    state = _as_of(request, root, held, jid)["state"]
    url = reverse("workspace-memory-as-of", args=[root, jid])
    return json_response({"root": root, "jid": jid, **state.to_dict(), "url": url})


@require_safe
@api_permission_required(VIEW)
@bad_parameter_is_400
def api_memory_findings(request: HttpRequest) -> HttpResponse:
    try:
        context = _findings_history(request)
    except Http404 as error:
        return json_error(str(error), 404)
    page = context["page"]
    findings = [
        {
            **row["history"].to_dict(),
            **{k: row[k] for k in ("change_url", "open_url", "forget_url", "purge_url")},
        }
        for row in context["rows"]
    ]
    return json_response(
        {
            "root": context["root_index"],
            "machine": context["root_machine"],
            "filters": {k: v or None for k, v in context["params"].items() if k != "_page"},
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "findings": findings,
            "key_mismatch": context["key_mismatch"],  # "" unless SECRET_KEY is not the index's
            "url": reverse("workspace-memory-findings"),
        }
    )


@require_safe
@api_permission_required(VIEW)
@bad_parameter_is_400
def api_memory_changes(request: HttpRequest) -> HttpResponse:
    root = _root_param(request)
    try:
        held = _located(root)
    except Http404 as error:
        return json_error(str(error), 404)
    return json_response(
        {**_timeline_dict(_timeline(request, root, held, None)), "url": reverse("workspace-memory-changes")}
    )


def _json_not_found(view):
    """An API view whose Http404 (unknown root, JID or file) becomes a JSON 404."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        try:
            return view(request, *args, **kwargs)
        except Http404 as error:
            return json_error(str(error), 404)

    return wrapper


@require_safe
@api_permission_required(VIEW)
@_json_not_found
def api_file_source(request: HttpRequest, root: int, name: str, jid: str = "", subdir: str | None = None):
    loaded = _source_file(request, root, name, jid, subdir)
    if isinstance(loaded, HttpResponse):
        return loaded
    return json_response(
        {
            "root": root,
            "jid": jid,
            "file": "/".join(part for part in (subdir, name) if part),
            "text": loaded.text,
            "version": loaded.version,
            "error": loaded.error,
            "url": _source_url(root, jid, "/".join(part for part in (subdir, name) if part)),
        }
    )


@require_safe
@api_permission_required(EDIT)
@_json_not_found
def api_edit_file(request: HttpRequest, root: int, name: str, jid: str = "") -> HttpResponse:
    """What the edit form holds: the text to start from and the version a save must send."""
    target = _target(root, jid, name)
    if _elsewhere(target.root, target.machine):  # read-only here: no version, so nothing saves from it
        stored = memory_index.stored_file(target.root, jid, name, machine=target.machine)
        loaded = stored.loaded() if stored else ws.LoadedFile(None, "")
        initial, held_by = loaded.text or "", memory_index.machine_of(target.root, target.machine)
    else:
        loaded = ws.load_file(target.path)
        initial, held_by = _initial_text(target, loaded), None
    return json_response(
        {
            "root": root,
            "jid": jid,
            "file": name,
            "exists": loaded.text is not None or loaded.error is not None,
            "is_override": target.is_override,
            "text": loaded.text,
            "initial_text": initial,
            "read_only_held_by": held_by,
            "version": loaded.version,
            "error": loaded.error,
            "url": target.edit_url,
            "save_url": target.save_url,
            "revisions": [
                _revision_dict(r) for r in Revision.history_of(str(target.root), target.jid, target.name)
            ],
        }
    )


@require_safe
@api_permission_required(EDIT)
@_json_not_found
@_tree_required
def api_remove_confirm(request: HttpRequest, root: int, jid: str, name: str) -> HttpResponse:
    target, loaded = _existing_override(root, jid, name)
    global_file = ws.load_file(_member(target.root, name))
    return json_response(
        {
            "root": root,
            "jid": jid,
            "file": name,
            "text": loaded.text,
            "version": loaded.version,
            "error": loaded.error,
            "global_exists": global_file.text is not None or global_file.error is not None,
            "url": target.remove_url,
            "run_url": target.remove_run_url,
        }
    )


@require_safe
@api_permission_required(EDIT)
@_json_not_found
@_tree_required
def api_new_confirm(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base = _root(root)
    _jid_dir(base, jid, _machine(root))
    status = ws.jid_status(base, jid)
    return json_response(
        {
            "root": root,
            "jid": jid,
            "version": ws.file_version(_member(_jid_dir(base, jid, _machine(root)), ws.HISTORY)),
            "messages": status.messages,
            "will_archive": status.messages > 0,
            "url": reverse("workspace-new", args=[root, jid]),
            "run_url": reverse("workspace-new-run", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(EDIT)
@_json_not_found
@_tree_required
def api_forget_confirm(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    jid_dir = _jid_dir(_root(root), jid, _machine(root))
    plan, refused = _forget_plan(jid_dir)
    return json_response(
        {
            "root": root,
            "jid": jid,
            "erasable": list(plan.names) if plan else ws.forgettable(jid_dir),
            "version": plan.version if plan else None,
            "refused": refused,
            "kept": [f"{ws.SESSIONS_DIR}/", *ws.PERSONA_FILES],
            "url": reverse("workspace-forget", args=[root, jid]),
            "run_url": reverse("workspace-forget-run", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(EDIT)
@_json_not_found
def api_purge_confirm(request: HttpRequest, root: int, fp: str, jid: str = "") -> HttpResponse:
    _, plan = _purge_plan(root, jid, fp)
    run = _purge_urls(root, jid, fp)["run_url"]
    data = {"root": root, "jid": jid or None, **plan.to_dict(), "run_url": run, "method": "POST"}
    if not jid:
        data["also_in_jids"] = memory_findings.jids_holding(str(_root(root)), fp, machine=_machine(root))
    return json_response(data)
