"""Persona editor and memory audit: the pages under /workspaces/ (their JSON twins are in
views/api_workspaces.py).

Thin views over sessionviewer.workspaces, which does all the reading and writing, and
workspace_pages, which finds the root, JID and file a URL names and builds what a page and
its twin share. Here too: the answer of a page or twin whose tree is on another machine,
and of a write not made. Each write is recorded through workspace_records.
"""

from __future__ import annotations

import mimetypes
from functools import wraps
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.db import DatabaseError, transaction
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe
from django.views.decorators.vary import vary_on_headers

from sessionviewer import links, memory_findings, memory_index
from sessionviewer import workspace_records as records
from sessionviewer import workspaces as ws
from sessionviewer.forms import (
    AUDIT_ACTIONS,
    EditLineForm,
    FileForm,
    MemorySearchForm,
    MemoryTimelineForm,
    PreviewForm,
    VersionForm,
)
from sessionviewer.memory_index import MemoryRoot, known_roots
from sessionviewer.models import AuditEvent, Revision, Session
from sessionviewer.render import IMAGE_TYPES
from sessionviewer.views.http import bad_parameter_is_400, json_error
from sessionviewer.workspace_pages import (
    EDIT,
    TEXT_SUFFIXES,
    VIEW,
    Target,
    as_of_context,
    audit_page,
    changes_params,
    edit_start,
    edit_target,
    effective_prompt,
    existing_override,
    findings_history,
    findings_page,
    forget_plan,
    has_snapshots,
    is_elsewhere,
    jid_entry,
    jid_folder,
    located,
    member_path,
    memory_hits,
    override_target,
    purge_plan,
    purge_urls,
    session_rows,
    source_path,
    stored_file_rows,
    target_of,
    text_parts,
    timeline_context,
    usage_report,
)
from sessionviewer.workspaces import memory_files

# A tree on another machine, and writes not made


def held_elsewhere(request: HttpRequest, base: Path, machine: str, status: int = 409) -> HttpResponse:
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


def tree_required(view):
    """A write, or the page confirming one: only where the tree is mounted (409 elsewhere).
    The view gets the root as located here, as held=: it need not look it up again."""

    @wraps(view)
    def wrapper(request: HttpRequest, root: int, *args, **kwargs) -> HttpResponse:
        held = located(root)
        if is_elsewhere(*held.pair):
            return held_elsewhere(request, *held.pair)
        return view(request, root, *args, held=held, **kwargs)

    return wrapper


def _bad_version(form: VersionForm) -> HttpResponse:
    """400: a confirmation posted without the file version it was shown."""
    return HttpResponseBadRequest("version: " + "; ".join(form.errors.get("version", [])))


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


def _section_url(root_index: int, jid: str, source: str) -> str | None:
    """Where a prompt section came from: the JID's file, a global file, or nowhere."""
    if source in ("default", "runtime"):
        return None
    if source.startswith(f"{jid}/"):
        return links.memory_source(root_index, jid, source.removeprefix(f"{jid}/"))
    return links.memory_source(root_index, "", source)


# Pages: the workspaces


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def workspace_list(request: HttpRequest) -> HttpResponse:
    roots = []
    for index, known in enumerate(known_roots()):
        root, elsewhere = known.path, is_elsewhere(known.path, known.machine)
        if elsewhere:
            has = has_snapshots(root, known.machine)
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


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def jid_detail(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base, machine = located(root).pair
    jid_dir = jid_folder(base, jid, machine)
    if is_elsewhere(base, machine):
        return _jid_elsewhere(request, root, base, machine, jid)
    entry = jid_entry(base, jid)
    sessions = session_rows(root, machine, jid, jid_dir)
    report = usage_report(request, sessions)
    usage = {
        "report": report,
        "json_url": reverse("api-workspace-jid", args=[root, jid]),
        "list_url": reverse("session-list"),
    }
    if request.htmx:
        return render(request, "workspaces/jid.html#usage-panel", {**usage, "entry": entry})
    persona = [
        {"name": name, "own": entry.files.get(name), "global": ws.global_file_info(base, name)}
        for name in memory_files.root_names()
    ]
    context = {
        "root_index": root,
        "root": base,
        "entry": entry,
        "status": ws.jid_status(base, jid),
        "persona": persona,
        "parts": text_parts(entry, jid_dir),
        "knowledge": ws.knowledge(jid_dir),
        "stored_files": stored_file_rows(root, jid, jid_dir),
        "sessions": sessions,
        **usage,
        "other": [
            {
                "name": name,
                "url": links.memory_source(root, jid, name) if name.endswith(TEXT_SUFFIXES) else None,
            }
            for name in entry.other
        ],
    }
    return render(request, "workspaces/jid.html", context)


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
            {
                "file": f,
                "url": links.memory_source(root_index, jid, f.filename),
                "edit": f.filename in memory_files.editable_names(jid),
            }
            for f in files
            if "/" not in f.filename
        ],
        "stored": [f for f in files if f.filename.startswith(f"{ws.FILES_DIR}/")],
        "sessions": sessions,
        "usage": usage_report(request, sessions),
    }
    return render(request, "workspaces/jid_elsewhere.html", context)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
def prompt_detail(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base, machine = located(root).pair
    jid_folder(base, jid, machine)
    prompt = effective_prompt(base, machine, jid)
    sections = [{"section": s, "url": _section_url(root, jid, s.source)} for s in prompt.sections]
    context = {"root_index": root, "jid": jid, "prompt": prompt, "sections": sections}
    return render(request, "workspaces/prompt.html", context)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def memory_timeline_page(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    """Every recorded change to one JID's memory and persona files, newest first."""
    held = located(root)
    jid_folder(held.path, jid, held.machine)
    context = {**timeline_context(MemoryTimelineForm.read(request.GET), root, held, jid), "jid": jid}
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
    params, root = changes_params(request)
    roots = known_roots()  # the root picker's, and the one picked
    context = {**timeline_context(params, root, located(root, roots), None), "jid": None, "roots": roots}
    template_name = "workspaces/memory_changes.html"
    if request.htmx:
        template_name += "#timeline"
    return render(request, template_name, context)


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@bad_parameter_is_400
def memory_as_of_page(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    """Every memory file of a JID, and its effective prompt, as they were at a moment."""
    held = located(root)
    jid_folder(held.path, jid, held.machine)
    return render(request, "workspaces/as_of.html", as_of_context(request, root, held, jid))


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@bad_parameter_is_400
def memory_findings_page(request: HttpRequest) -> HttpResponse:
    """Every finding the memory's history holds: when it came, in which turn, and if it is still there."""
    roots = known_roots()  # the root picker's, and the one picked
    context = {**findings_history(request, roots), "roots": roots}
    return render(request, "workspaces/memory_findings.html", context)


def source_file(
    request: HttpRequest, root: int, name: str, jid: str, subdir: str | None
) -> ws.LoadedFile | HttpResponse:
    """The file the source page shows: from the tree, or from the index where the tree is
    elsewhere (a transcript there: its transcript page; a file the index lacks: 404, naming
    the machine that holds the tree)."""
    held = located(root)
    base, machine = held.pair
    if not is_elsewhere(base, machine):
        return ws.load_file(source_path(held, name, jid, subdir))
    if jid:
        jid_folder(base, jid, machine)
    stored = None if subdir else memory_index.stored_file(base, jid, name, machine=machine)
    if stored is not None and stored.content is not None:
        return stored.loaded()
    # A transcript: its lines are not kept, its entries are. Its transcript page shows them.
    path = "/".join(part for part in (str(base), jid, subdir, name) if part)
    session = Session.objects.filter(path=path, source__machine=machine).only("id").first()
    if session is None:
        return held_elsewhere(request, base, machine, 404)
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
    loaded = source_file(request, root, name, jid, subdir)
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
    base, machine = located(root).pair
    if is_elsewhere(base, machine):
        return held_elsewhere(request, base, machine, 404)  # files/ is indexed by name, size and hash
    path = member_path(jid_folder(base, jid, machine), name, ws.FILES_DIR)
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
@bad_parameter_is_400
def search(request: HttpRequest) -> HttpResponse:
    query = MemorySearchForm.read(request.GET)["q"]
    hits = memory_hits(known_roots(), query) if query.strip() else []
    template_name = "workspaces/search.html"
    if request.htmx:
        template_name += "#search-results"
    return render(request, template_name, {"q": query, "hits": hits})


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@bad_parameter_is_400
def secrets(request: HttpRequest) -> HttpResponse:
    page = findings_page(request)
    context = {
        "page": page,
        "api_url": page.url(page.number, api=True),
        "previous_url": page.url(page.number - 1),
        "next_url": page.url(page.number + 1),
        "kinds": ws.KINDS,
    }
    return render(request, "workspaces/secrets.html", context)


def _audit_roots() -> list[str]:
    """The roots events were recorded in, and the configured ones: the root filter's choices."""
    return sorted({*AuditEvent.recorded_roots(), *(str(known.path) for known in known_roots())})


@require_safe
@login_required
@permission_required(VIEW, raise_exception=True)
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def audit_log(request: HttpRequest) -> HttpResponse:
    page, filters = audit_page(request)
    context = {
        "page": page,
        "filters": filters,
        "actions": AUDIT_ACTIONS,
        # The machine filter's choices; its column, once events name two machines.
        "machines": AuditEvent.recorded_machines(),
        "json_url": links.audit_log(filters, api=True),
        "previous_url": links.audit_log(filters, page.previous_page_number())
        if page.has_previous()
        else None,
        "next_url": links.audit_log(filters, page.next_page_number()) if page.has_next() else None,
    }
    if request.htmx:  # the table alone: the filter form, with its roots, stays on the page
        return render(request, "workspaces/audit_log.html#audit-log", context)
    return render(request, "workspaces/audit_log.html", {**context, "roots": _audit_roots()})


# Pages: editing


def _edit_context(target: Target, form: FileForm, loaded: ws.LoadedFile, **extra) -> dict:
    return {
        "target": target,
        "form": form,
        "loaded": loaded,
        "revisions": Revision.history_of(target.machine, str(target.root), target.jid, target.name),
        "preview_text": form["text"].value() or "",
        **extra,
    }


def _unwritable(request: HttpRequest, target: Target, form: FileForm, loaded: ws.LoadedFile, text: str):
    """409: what is on disk at the file's path is not a file the editor may replace (a FIFO,
    a folder, a bad link, a file it cannot read). Nothing is written; the text is shown back."""
    context = _edit_context(target, form, loaded, unsaved=text)
    return render(request, "workspaces/edit.html", context, status=409)


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
@bad_parameter_is_400
def edit_file(request: HttpRequest, root: int, name: str, jid: str = "") -> HttpResponse:
    """The editor; ?line=N highlights that line (a finding's), in the text and beside it."""
    line = EditLineForm.read(request.GET)["line"]
    target = edit_target(root, jid, name)
    loaded, text = edit_start(target)
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
    if is_elsewhere(target.root, target.machine):
        context["elsewhere"] = {"machine": memory_index.machine_of(target.root, target.machine)}
    return render(request, "workspaces/edit.html", context)


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@tree_required
def save_file(request: HttpRequest, root: int, name: str, jid: str = "", *, held: MemoryRoot) -> HttpResponse:
    target = edit_target(root, jid, name, held)
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
        ws.atomic_write(
            target.path, text, form.cleaned_data["version"], records.file_change(request.user, target, None)
        )
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
@tree_required
def remove_confirm(request: HttpRequest, root: int, jid: str, name: str, *, held: MemoryRoot) -> HttpResponse:
    target, loaded = existing_override(root, jid, name, held)
    form = VersionForm(initial={"version": loaded.version})
    global_file = ws.load_file(member_path(target.root, name))
    return render(
        request,
        "workspaces/remove.html",
        {"target": target, "loaded": loaded, "form": form, "global_file": global_file},
    )


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@tree_required
def remove_file(request: HttpRequest, root: int, jid: str, name: str, *, held: MemoryRoot) -> HttpResponse:
    target = override_target(root, jid, name, held)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return _bad_version(form)
    before = ws.load_file(target.path)
    record = records.file_change(request.user, target, "remove")
    try:
        ws.remove_override(
            jid_folder(target.root, jid, target.machine), name, form.cleaned_data["version"], record
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
        target = target_of(revision)
    except Http404:
        target, current = None, None
    else:
        current = ws.load_file(target.path)
    if target and is_elsewhere(target.root, target.machine):  # read-only here: no restore from this page
        stored = memory_index.stored_file(target.root, target.jid, target.name, machine=target.machine)
        current = None if stored is None else stored.loaded()
    form = VersionForm(initial={"version": current.version}) if current and current.version else None
    context = {"revision": revision, "target": target, "current": current, "form": form}
    return render(request, "workspaces/revision.html", context)


def _restore(request: HttpRequest, revision_id: int, side: str) -> HttpResponse:
    """Put the file back as one side of a revision has it: a save like any other, version-checked.
    The exact bytes come back, not the text shown (which replaced bytes that are not UTF-8)."""
    revision = get_object_or_404(Revision, id=revision_id)
    target = target_of(revision)
    if is_elsewhere(target.root, target.machine):
        return held_elsewhere(request, target.root, target.machine)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return _bad_version(form)
    content = revision.content(side)
    detail = {"restored": revision.id} if side == "after" else {"restored": revision.id, "side": "before"}
    record = records.file_change(request.user, target, "restore", **detail)
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
@tree_required
def new_confirm(request: HttpRequest, root: int, jid: str, *, held: MemoryRoot) -> HttpResponse:
    base = held.path
    jid_dir = jid_folder(base, jid, held.machine)
    return render(request, "workspaces/new.html", _new_context(root, base, jid_dir, jid))


def _new_context(root_index: int, base: Path, jid_dir: Path, jid: str, **extra) -> dict:
    # The form carries the history's version: a second /new from the same page is refused.
    context = {"root_index": root_index, "jid": jid, "status": ws.jid_status(base, jid)}
    try:
        version = ws.file_version(member_path(jid_dir, ws.HISTORY))
    except OSError:  # a FIFO or folder for history: status.errors says so, and /new is refused
        version = ""
    return {**context, "form": VersionForm(initial={"version": version}), **extra}


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@tree_required
def new_session(request: HttpRequest, root: int, jid: str, *, held: MemoryRoot) -> HttpResponse:
    base = held.path
    jid_dir = jid_folder(base, jid, held.machine)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return _bad_version(form)
    record = records.archive(request.user, held, jid)
    try:
        archived = ws.archive_session(jid_dir, timezone.now(), form.cleaned_data["version"], record)
        if not archived:
            records.empty_session(request.user, held, jid)
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
@tree_required
def forget_confirm(request: HttpRequest, root: int, jid: str, *, held: MemoryRoot) -> HttpResponse:
    jid_dir = jid_folder(held.path, jid, held.machine)
    return render(request, "workspaces/forget.html", _forget_context(root, jid, jid_dir))


def _forget_context(root_index: int, jid: str, jid_dir: Path, **extra) -> dict:
    plan, refused = forget_plan(jid_dir)
    return {
        "root_index": root_index,
        "jid": jid,
        "erasable": plan.names if plan else ws.forgettable(jid_dir),
        "refused": refused,
        # The form carries the plan's version: what is erased is what the user was shown.
        "form": VersionForm(initial={"version": plan.version}) if plan else None,
        **extra,
    }


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
@tree_required
def forget(request: HttpRequest, root: int, jid: str, *, held: MemoryRoot) -> HttpResponse:
    base = held.path
    jid_dir = jid_folder(base, jid, held.machine)
    form = VersionForm(request.POST)
    if not form.is_valid():
        return _bad_version(form)
    try:
        erased = ws.forget_user(
            jid_dir, form.cleaned_data["version"], lambda plan: records.forget(request.user, held, jid, plan)
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


def _findings_url(root_index: int, jid: str) -> str:
    return links.memory_findings({"root": root_index or None, "jid": jid})


def _purge_context(root_index: int, base: Path, jid: str, plan: memory_findings.PurgePlan) -> dict:
    context = {"root_index": root_index, "jid": jid, "plan": plan, "fp": plan.fp}
    context |= purge_urls(root_index, jid, plan.fp)
    context["cancel_url"] = _findings_url(root_index, jid)
    # A purge rewrites the memory's history only: the transcripts may hold the value too.
    context["transcripts_url"] = links.secrets_report({"jid": jid, "kind": plan.kind})
    if not jid:
        # The same value in a JID's own files is that JID's finding: purged from its history.
        others = memory_findings.jids_holding(str(base), plan.fp, machine=plan.machine)
        context["others"] = [
            {"jid": other, "purge_url": reverse("workspace-purge", args=[root_index, other, plan.fp])}
            for other in others
        ]
    return context


@require_safe
@login_required
@permission_required(EDIT, raise_exception=True)
def purge_confirm(request: HttpRequest, root: int, fp: str, jid: str = "") -> HttpResponse:
    base, plan = purge_plan(root, jid, fp)
    return render(request, "workspaces/purge.html", _purge_context(root, base, jid, plan))


@require_POST
@login_required
@permission_required(EDIT, raise_exception=True)
def purge_finding(request: HttpRequest, root: int, fp: str, jid: str = "") -> HttpResponse:
    """Replace one finding by [purged] in every stored state and revision of jid (and of the
    root's global files; jid "": of those alone), audited by kind and fingerprint. Planned again
    here: what is purged is whatever holds the value now."""
    base, plan = purge_plan(root, jid, fp)
    try:
        with transaction.atomic():
            memory_findings.purge(plan, str(base), jid, request.user)
    except DatabaseError as error:
        context = _purge_context(root, base, jid, plan)
        return _unavailable(request, "workspaces/purge.html", context, "Nothing was purged", error)
    messages.success(
        request,
        f"Purged the {plan.kind} {plan.masked} from {len(plan.snapshots)} stored "
        f"state{pluralize(len(plan.snapshots))} and {len(plan.revisions)} revision{pluralize(len(plan.revisions))}.",
    )
    return redirect(_findings_url(root, jid))
