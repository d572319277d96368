"""The workspaces' JSON twins: /api/workspaces/..., the same paths and query strings as the
pages in views/workspaces.py, as views/api.py is for the session pages.

Each view reads what its page reads (workspace_pages) and answers it as JSON through
views/http.py; errors_as_json answers an unknown root, JID, file or revision (404) and a
bad parameter (400) alike. Anonymous requests get 401, never data.
"""

from __future__ import annotations

from pathlib import Path

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_safe

from sessionviewer import links, memory_findings, memory_index, memory_timeline, projects
from sessionviewer import workspaces as ws
from sessionviewer.forms import BadParameter, MemorySearchForm, MemoryTimelineForm
from sessionviewer.memory_index import MemoryRoot, known_roots
from sessionviewer.models import Revision
from sessionviewer.templatetags.workspace_tags import diff_lines
from sessionviewer.views.http import api_permission_required, errors_as_json, json_response
from sessionviewer.views.workspaces import source_file, tree_required
from sessionviewer.workspace_pages import (
    EDIT,
    VIEW,
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
    purge_plan,
    purge_urls,
    session_rows,
    stored_file_rows,
    timeline_context,
    usage_report,
)
from sessionviewer.workspaces import memory_files


def _root_dict(index: int, known: MemoryRoot) -> dict:
    root, machine = known.path, known.machine
    data = {"index": index, "path": str(root), "machine": machine, "url": links.workspace_root(index)}
    if is_elsewhere(root, machine) and has_snapshots(root, machine):
        workspace = memory_index.workspace(root, machine=machine).to_dict()
        data["read_only_held_by"] = memory_index.machine_of(root, machine)
    elif is_elsewhere(root, machine):
        return {**data, "error": "not a folder", "global_files": [], "jids": []}
    else:
        workspace = ws.list_workspace(root).to_dict()
    for entry in workspace["jids"]:
        entry["url"] = reverse("workspace-jid", args=[index, entry["jid"]])
        entry["api_url"] = reverse("api-workspace-jid", args=[index, entry["jid"]])
    return {**data, **workspace}


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


def _revision_dict(revision: Revision) -> dict:
    return {
        **revision.to_dict(),
        "url": reverse("workspace-revision", args=[revision.id]),
        "api_url": reverse("api-workspace-revision", args=[revision.id]),
    }


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_workspace_list(request: HttpRequest) -> HttpResponse:
    return json_response({"roots": [_root_dict(i, known) for i, known in enumerate(known_roots())]})


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_jid_detail(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base, machine = located(root).pair
    jid_dir = jid_folder(base, jid, machine)
    if is_elsewhere(base, machine):
        return _api_jid_elsewhere(root, base, machine, jid)
    entry = jid_entry(base, jid)
    knowledge = ws.knowledge(jid_dir)
    status = ws.jid_status(base, jid)
    sessions = session_rows(root, machine, jid, jid_dir)
    report = usage_report(request, sessions)
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
            "stored_files": stored_file_rows(root, jid, jid_dir),
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
@errors_as_json
def api_prompt(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    base, machine = located(root).pair
    jid_folder(base, jid, machine)
    return json_response({"root": root, "jid": jid, **effective_prompt(base, machine, jid).to_dict()})


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_search(request: HttpRequest) -> HttpResponse:
    query = MemorySearchForm.read(request.GET)["q"]
    if not query.strip():
        raise BadParameter("q", "give the text to search for")
    return json_response({"q": query, "hits": memory_hits(known_roots(), query)})


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_secrets(request: HttpRequest) -> HttpResponse:
    return json_response(findings_page(request).to_dict())


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_audit_log(request: HttpRequest) -> HttpResponse:
    page, filters = audit_page(request)
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
@errors_as_json
def api_revision_detail(request: HttpRequest, revision_id: int) -> HttpResponse:
    revision = Revision.objects.select_related("user").filter(id=revision_id).first()
    if revision is None:
        raise Http404(f"no revision {revision_id}")
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
@errors_as_json
def api_memory_timeline(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    held = located(root)
    jid_folder(held.path, jid, held.machine)
    context = timeline_context(MemoryTimelineForm.read(request.GET), root, held, jid)
    return json_response(
        {
            "jid": jid,
            **_timeline_dict(context),
            "url": reverse("workspace-memory-timeline", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_memory_as_of(request: HttpRequest, root: int, jid: str) -> HttpResponse:
    held = located(root)
    jid_folder(held.path, jid, held.machine)
    state = as_of_context(request, root, held, jid)["state"]
    url = reverse("workspace-memory-as-of", args=[root, jid])
    return json_response({"root": root, "jid": jid, **state.to_dict(), "url": url})


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_memory_findings(request: HttpRequest) -> HttpResponse:
    context = findings_history(request)
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
@errors_as_json
def api_memory_changes(request: HttpRequest) -> HttpResponse:
    params, root = changes_params(request)
    return json_response(
        {
            **_timeline_dict(timeline_context(params, root, located(root), None)),
            "url": reverse("workspace-memory-changes"),
        }
    )


@require_safe
@api_permission_required(VIEW)
@errors_as_json
def api_file_source(request: HttpRequest, root: int, name: str, jid: str = "", subdir: str | None = None):
    loaded = source_file(request, root, name, jid, subdir)
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
            "url": links.memory_source(root, jid, "/".join(part for part in (subdir, name) if part)),
        }
    )


@require_safe
@api_permission_required(EDIT)
@errors_as_json
def api_edit_file(request: HttpRequest, root: int, name: str, jid: str = "") -> HttpResponse:
    """What the edit form holds: the text to start from and the version a save must send."""
    target = edit_target(root, jid, name)
    loaded, initial = edit_start(target)
    # Read-only where the tree is on another machine: no version, so nothing saves from it.
    elsewhere = is_elsewhere(target.root, target.machine)
    held_by = memory_index.machine_of(target.root, target.machine) if elsewhere else None
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
                _revision_dict(r)
                for r in Revision.history_of(target.machine, str(target.root), target.jid, target.name)
            ],
        }
    )


@require_safe
@api_permission_required(EDIT)
@errors_as_json
@tree_required
def api_remove_confirm(
    request: HttpRequest, root: int, jid: str, name: str, *, held: MemoryRoot
) -> HttpResponse:
    target, loaded = existing_override(root, jid, name, held)
    global_file = ws.load_file(member_path(target.root, name))
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
@errors_as_json
@tree_required
def api_new_confirm(request: HttpRequest, root: int, jid: str, *, held: MemoryRoot) -> HttpResponse:
    base, machine = held.pair
    jid_folder(base, jid, machine)
    status = ws.jid_status(base, jid)
    return json_response(
        {
            "root": root,
            "jid": jid,
            "version": ws.file_version(member_path(jid_folder(base, jid, machine), ws.HISTORY)),
            "messages": status.messages,
            "will_archive": status.messages > 0,
            "url": reverse("workspace-new", args=[root, jid]),
            "run_url": reverse("workspace-new-run", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(EDIT)
@errors_as_json
@tree_required
def api_forget_confirm(request: HttpRequest, root: int, jid: str, *, held: MemoryRoot) -> HttpResponse:
    jid_dir = jid_folder(held.path, jid, held.machine)
    plan, refused = forget_plan(jid_dir)
    return json_response(
        {
            "root": root,
            "jid": jid,
            "erasable": list(plan.names) if plan else ws.forgettable(jid_dir),
            "version": plan.version if plan else None,
            "refused": refused,
            "kept": [f"{ws.SESSIONS_DIR}/", *memory_files.kept_names()],
            "url": reverse("workspace-forget", args=[root, jid]),
            "run_url": reverse("workspace-forget-run", args=[root, jid]),
        }
    )


@require_safe
@api_permission_required(EDIT)
@errors_as_json
def api_purge_confirm(request: HttpRequest, root: int, fp: str, jid: str = "") -> HttpResponse:
    base, plan = purge_plan(root, jid, fp)
    run = purge_urls(root, jid, fp)["run_url"]
    data = {"root": root, "jid": jid or None, **plan.to_dict(), "run_url": run, "method": "POST"}
    if not jid:
        data["also_in_jids"] = memory_findings.jids_holding(str(base), fp, machine=plan.machine)
    return json_response(data)
