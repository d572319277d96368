"""Browser pages. Thin: query strings are read by forms, queries live in
filters/transcripts/activity, parsing in readers."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponsePermanentRedirect,
    StreamingHttpResponse,
)
from django.shortcuts import get_object_or_404, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_safe
from django.views.decorators.vary import vary_on_headers

from sessionviewer import activity, export, links, projects, search, transcripts
from sessionviewer.filters import (
    ROW_FIELDS,
    ROW_FIELDS_WITH_MACHINE,
    columns,
    filter_sessions,
    nested,
    session_page,
)
from sessionviewer.forms import (
    ActivityForm,
    EntryTextForm,
    ExportForm,
    ProjectForm,
    SessionListForm,
    SessionSecretsForm,
    TranscriptForm,
)
from sessionviewer.index.fold import fold_home
from sessionviewer.models import Session, Source
from sessionviewer.transcripts.findings import (
    masked_page,
    masked_response,
    secret_groups,
    session_findings,
    transcript_masks,
)
from sessionviewer.views.http import bad_parameter_is_400, snapshot_rebuilt_is_retried
from sessionviewer.workspace_pages import jid_links_for

# The session key holding whether transcripts show every entry or hide the noise.
SHOW_ALL = "transcript_show_all"
FOLD_THINKING = "transcript_fold_thinking"

view_permission = permission_required("sessionviewer.view_session", raise_exception=True)


def _download(body: str, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _get_session(session_id: int) -> Session:
    return get_object_or_404(Session.with_source_and_parent(), id=session_id)


def _masks(request: HttpRequest, session: Session, findings: list[dict] | None = None):
    """The masks of the session's possible secrets for this person (a reveal button if allowed)."""
    can_reveal = request.user.has_perm("sessionviewer.reveal_secret")
    return transcript_masks(session, findings, can_reveal=can_reveal)


@require_safe
@login_required
@view_permission
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def session_list(request: HttpRequest) -> HttpResponse:
    params = SessionListForm.read(request.GET)
    # One full-text statement when it holds every match: the sessions and the hits come from it.
    first = search.first_matches(params["q"])
    query = filter_sessions(params, first=first)
    facets = links.with_facet_links(activity.facets(request.GET, params, query.matched), request.GET)
    hits = search.search_hits_for(params, query.queryset, first, query.narrowed)
    machines = len(Source.machines()) > 1
    # After the search: its hits include subagents. Only the columns a row shows.
    page = session_page(nested(query, params), ROW_FIELDS_WITH_MACHINE if machines else ROW_FIELDS)
    template_name = "sessions/list.html"
    if request.htmx:
        template_name += "#session-table"
    context = {"page": page, "query": query, "facets": facets, "hits": hits, "machines": machines}
    context["columns"] = columns(machines)
    return render(request, template_name, context)


@require_safe
@login_required
@view_permission
@vary_on_headers("HX-Request")
@bad_parameter_is_400
@snapshot_rebuilt_is_retried
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _get_session(session_id)
    params = TranscriptForm.read(request.GET)
    if request.htmx and params["_after"] is not None and params["_read"] == session.read_offset:
        return HttpResponse(status=204)  # nothing written since the last poll: htmx swaps nothing
    if params["_all"] is not None:  # the switch: remembered for this person's next pages
        request.session[SHOW_ALL] = bool(params["_all"])
    if params["_thinking"] is not None:  # the thinking switch: remembered the same way
        request.session[FOLD_THINKING] = not params["_thinking"]
    if params["_summary"] is not None:  # a compaction's summary, loaded as its fold opens
        try:
            summary = transcripts.compaction_summary(session, params)
        except (transcripts.UnknownLeaf, transcripts.UnknownEntry):
            return render(request, "sessions/unknown_leaf.html", {"session": session}, status=404)
        masks = _masks(request, session)
        summary = masks.text(summary) if masks else summary
        response = render(request, "sessions/detail.html#compaction-summary", {"summary": summary})
        return masked_response(response, masks)
    try:
        show_all = request.session.get(SHOW_ALL, False)
        context = transcripts.transcript_page(session, params, show_all, fragment=bool(request.htmx))
    except (transcripts.UnknownLeaf, transcripts.UnknownEntry):
        return render(request, "sessions/unknown_leaf.html", {"session": session}, status=404)
    context["session"] = session
    context["thinking_folded"] = request.session.get(FOLD_THINKING, False)
    findings = None
    if not request.htmx:  # the header, which fragments leave out
        findings = context["findings"] = session_findings(session)
    masks = _masks(request, session, findings)
    masked_page(context, masks)
    template_name = "sessions/detail.html"
    if request.htmx:
        if params["_after"] is not None:
            template_name += "#live-poller"
        elif params["_before"]:
            template_name += "#entry-earlier"
        elif params["_offset"] is not None:
            template_name += "#entry-chunk"
    return masked_response(render(request, template_name, context), masks)


@require_safe
@login_required
@view_permission
@bad_parameter_is_400
def session_changes(request: HttpRequest, session_id: int) -> HttpResponse:
    """Every file the session edited or wrote: one diff each, start to end, hunk by call."""
    session = _get_session(session_id)
    params = TranscriptForm.read(request.GET)
    try:
        files = transcripts.thread_changes(session, params["leaf"] or None)
    except transcripts.UnknownLeaf:
        return render(request, "sessions/unknown_leaf.html", {"session": session}, status=404)
    masks = _masks(request, session)
    if masks:  # an edit's text holds what the transcript masks
        files = masks.apply(files)
    context = {"session": session, "files": files, "leaf": params["leaf"]}
    return masked_response(render(request, "sessions/changes.html", context), masks)


@require_safe
@login_required
@view_permission
def session_cost(request: HttpRequest, session_id: int) -> HttpResponse:
    """How the session's cost was computed: tokens by kind x rates, per model."""
    session = _get_session(session_id)
    return render(request, "sessions/cost.html", {"session": session, "costing": session.cost_to_dict()})


@require_safe
@login_required
@view_permission
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def entry_text(request: HttpRequest, session_id: int, line: int, block: int) -> HttpResponse:
    """The rest of a block's text that the page cut at TEXT_LIMIT: the next part from _from,
    for "show the rest" (htmx), or the whole text as a download."""
    session = _get_session(session_id)
    params = EntryTextForm.read(request.GET)
    entry = transcripts.load_entry(session.id, line)
    if entry is None or block >= len(entry.blocks):
        raise Http404("no such entry or block")
    text = entry.blocks[block].text
    if not request.htmx:
        return _download(text, "text/plain", f"session-{session.id}-line-{line}-block-{block}.txt")
    masks = _masks(request, session)
    if masks:  # before the cut: a placeholder has its value's length, so the parts stay where they were
        text = masks.text(text)
    start = params["_from"] or 0
    stop = start + transcripts.TEXT_LIMIT
    context = {"session": session, "text": text[start:stop], "line": line, "at": block, "stop": stop}
    context["more"] = len(text) - stop if stop < len(text) else 0
    return masked_response(render(request, "sessions/_long_text.html#long-text-rest", context), masks)


def _stream(parts, content_type: str, filename: str) -> StreamingHttpResponse:
    """A download sent as it is made: an export of any length, a part at a time."""
    response = StreamingHttpResponse(parts, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@require_safe
@login_required
@view_permission
@bad_parameter_is_400
@snapshot_rebuilt_is_retried
def session_export_html(request: HttpRequest, session_id: int) -> StreamingHttpResponse:
    session = _get_session(session_id)
    show_all = bool(ExportForm.read(request.GET)["_all"])
    response = _stream(export.as_html(session, show_all), "text/html", export.filename(session, "html"))
    # The file carries its own policy (a <meta>); the app's would refuse its inline <style>.
    response["Content-Security-Policy"] = export.content_security_policy()
    return response


@require_safe
@login_required
@view_permission
@bad_parameter_is_400
@snapshot_rebuilt_is_retried
def session_export_md(request: HttpRequest, session_id: int) -> StreamingHttpResponse:
    session = _get_session(session_id)
    show_all = bool(ExportForm.read(request.GET)["_all"])
    return _stream(export.as_markdown(session, show_all), "text/markdown", export.filename(session, "md"))


@require_safe
@login_required
@view_permission
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def activity_page(request: HttpRequest) -> HttpResponse:
    params = ActivityForm.read(request.GET)
    report = activity.report(params, jid_url=jid_links_for(request), project_url=links.project)
    facets = links.with_facet_links(activity.facets(request.GET, params), request.GET)
    template_name = "activity/activity.html"
    if request.htmx:
        template_name += "#activity-charts"
    return render(request, template_name, {"report": report, "facets": facets})


@require_safe
@login_required
@view_permission
@vary_on_headers("HX-Request")
@bad_parameter_is_400
def project_detail(request: HttpRequest, project: str) -> HttpResponse:
    """One working directory: its sessions with their subagents, usage, tools and branches."""
    params = ProjectForm.read(request.GET)
    if (folded := fold_home(project)) != project:  # a key from before projects were folded
        return HttpResponsePermanentRedirect(links.project(folded, request.GET))
    sessions = projects.project_sessions(project)
    if not sessions.exists():
        raise Http404("no session ran in this project")
    context = {
        "project": project,
        "report": projects.usage_report(sessions, params, project=project),
        "json_url": reverse("api-project-detail", args=[project]),
    }
    template_name = "projects/project.html"
    if request.htmx:
        template_name += "#usage-panel"
    return render(request, template_name, context)


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page links: send them to the SVG one
    (its static URL is only known at run time, once collectstatic has named it)."""
    return HttpResponsePermanentRedirect(static("favicon.svg"))


@require_safe
@login_required
@view_permission
@bad_parameter_is_400
def session_secrets(request: HttpRequest) -> HttpResponse:
    """Possible secrets across all sessions, grouped by fingerprint."""
    params = SessionSecretsForm.read(request.GET)
    groups = secret_groups(**params)
    kinds = sorted({g["kind"] for g in groups} | ({params["kind"]} if params["kind"] else set()))
    return render(request, "sessions/secrets.html", {"groups": groups, "params": params, "kinds": kinds})
