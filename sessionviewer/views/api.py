"""The JSON API: the contract the browser pages and outside tools share.

Every response is encoded with orjson (views/http.py); errors come back as
{"error": message} with the right status. Anonymous requests get 401, never data.
Each view reads its query string with the same form as its page (forms.py).
"""

from __future__ import annotations

from pathlib import Path

from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST, require_safe

from sessionviewer import activity, links, projects, search, transcripts
from sessionviewer.filters import filter_sessions, nested, session_page
from sessionviewer.forms import ActivityForm, ProjectForm, SessionListForm, SessionSecretsForm, TranscriptForm
from sessionviewer.models import SecretDismissal, Session, SessionFinding
from sessionviewer.transcripts.findings import reveal, secret_groups, session_findings
from sessionviewer.views import share
from sessionviewer.views.http import (
    api_permission_required,
    bad_parameter_is_400,
    json_error,
    json_response,
    snapshot_rebuilt_is_retried,
)
from sessionviewer.workspace_pages import jid_links_for
from sessionviewer.workspaces import open_regular, read_error

api_login_required = api_permission_required("sessionviewer.view_session")


def _get_session(session_id: int) -> Session | None:
    return Session.with_source_and_parent().filter(id=session_id).first()


@require_safe
@api_login_required
@bad_parameter_is_400
def session_list(request: HttpRequest) -> HttpResponse:
    params = SessionListForm.read(request.GET)
    query = nested(filter_sessions(params), params)
    page = session_page(query)
    sessions = []
    for session in page.object_list:
        row = session.to_dict() | {"possible_secrets": session.possible_secrets}
        if query.nested:  # as the page shows them: under their parent
            row["subagents"] = [
                child.to_dict() | {"possible_secrets": child.possible_secrets}
                for child in session.nested_subagents
            ]
        sessions.append(row)
    return json_response(
        {
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "size": query.size,
            "nested": query.nested,
            "sessions": sessions,
        }
    )


@require_safe
@api_login_required
@bad_parameter_is_400
@snapshot_rebuilt_is_retried
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _get_session(session_id)
    if session is None:
        return json_error(f"no session {session_id}", 404)
    params = TranscriptForm.read(request.GET)
    leaf = params["leaf"] or None
    try:
        # The cached (or snapshot) thread: a slice of a long session loads only its rows.
        view = transcripts.transcript(session, leaf).thread
    except transcripts.UnknownLeaf:
        return json_error(f"no entry {leaf!r} in session {session_id}", 404)

    def text_url(line: int, block: int) -> str:
        return links.entry_text(session.id, line, block)

    offset = params["_offset"] or 0
    data = transcripts.thread_to_dict(session, view, text_url, offset, params["_limit"])
    data["findings"] = session_findings(session)  # masked: the value is revealed by POST alone
    return json_response(data)


@require_safe
@api_login_required
@bad_parameter_is_400
def session_changes(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _get_session(session_id)
    if session is None:
        return json_error(f"no session {session_id}", 404)
    params = TranscriptForm.read(request.GET)
    try:
        files = transcripts.thread_changes(session, params["leaf"] or None)
    except transcripts.UnknownLeaf:
        return json_error(f"no entry {params['leaf']} in this session", 404)
    return json_response({"session": session.id, "files": [f.to_dict() for f in files]})


@require_safe
@api_login_required
def session_cost(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _get_session(session_id)
    if session is None:
        return json_error(f"no session {session_id}", 404)
    return json_response(session.cost_to_dict())


@require_safe
@api_login_required
def session_raw(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("source"), id=session_id)
    path = Path(session.path)
    if not session.file_inside_source():  # the path came from the index; check it still holds
        return _raw_elsewhere(request, session, "it is not inside its root here")
    try:
        handle = open_regular(path)
    except OSError as error:
        return _raw_elsewhere(request, session, read_error(error))
    # filename=: Django quotes or encodes the name, whatever it holds (CR, LF, quotes).
    return FileResponse(handle, content_type="application/x-ndjson; charset=utf-8", filename=path.name)


def _raw_elsewhere(request: HttpRequest, session: Session, reason: str) -> HttpResponse:
    """A 404 naming the machine and the path that hold the file: on a web host of a shared
    index the files stay where the agents wrote them, and the index keeps what it read, not
    their bytes. A browser gets a page, a client JSON."""
    machine = session.source.machine
    message = f"the file of session {session.id} is not available on this host: {reason}"
    if "text/html" in request.headers.get("Accept", ""):
        context = {"session": session, "machine": machine, "reason": reason}
        return render(request, "sessions/raw_elsewhere.html", context, status=404)
    return json_response({"error": message, "status": 404, "machine": machine, "path": session.path}, 404)


@require_safe
@api_login_required
@snapshot_rebuilt_is_retried
def session_redact(request: HttpRequest, session_id: int) -> HttpResponse:
    """The redaction review's list: each value masked (never the value), its kind and whether
    the page checks it; for someone with share_session, the session's share links."""
    session = _get_session(session_id)
    if session is None:
        return json_error(f"no session {session_id}", 404)
    shown = share.review(request, session, share.candidates_of(session))
    shares = shown["shares"]
    if shares is not None:
        shares = [s.to_dict() | {"may_revoke": s.may_revoke} for s in shares]
    return json_response(
        {
            "session": session.id,
            "title": shown["title"],
            "url": links.redact(session.id),
            "count": len(shown["rows"]),
            "counts": shown["counts"],
            "values": shown["rows"],
            "may_share": shown["may_share"],
            "shares": shares,
        }
    )


@require_safe
@api_login_required
@bad_parameter_is_400
def session_facets(request: HttpRequest) -> HttpResponse:
    """The list page's facets for the same query string as /api/sessions."""
    facets = activity.facets(request.GET, SessionListForm.read(request.GET))
    return json_response({"facets": links.with_facet_links(facets, request.GET)})


def _snippet_to_dict(session_id: int, snippet: search.Snippet, q: str) -> dict:
    entry = snippet.entry
    return {
        "session": session_id,
        "entry": entry.entry_id,
        "line": entry.line,
        "snippet_html": snippet.html,
        "url": links.entry(session_id, entry.entry_id, q),  # the page marks the words that found it
        "count": snippet.count,
        "what": snippet.what,
        "who": snippet.who,
        "timestamp": entry.timestamp,
    }


@require_safe
@api_login_required
@bad_parameter_is_400
def search_hits(request: HttpRequest) -> HttpResponse:
    """The list page's search hits, grouped by session: each session with its hit count and its
    best snippets (HTML, escaped, identical texts counted once), and the what/who facets.
    "hits" lists every snippet shown, as before grouping; "count" counts every hit, or those of
    the newest search.HIT_CAP when "capped" says there are more; "window", when not 0, is how
    many of the newest entries holding a phrase's words were read for it."""
    params = SessionListForm.read(request.GET)
    # The sessions the other filters select: the hits themselves say which ones match q, so
    # the list of every matching session (one pass over every hit) is not needed here.
    query = filter_sessions(params, by_text=False)
    first = search.first_matches(params["q"]) if not query.narrowed else None
    results = search.search_hits_for(params, query.queryset, first, query.narrowed)
    if results is None:
        return json_response(
            {
                "q": query.q,
                "count": 0,
                "capped": False,
                "page": 1,
                "pages": 0,
                "hits": [],
                "session_count": 0,
                "sessions": [],
            }
        )
    page = results.page
    sessions = [
        {
            "session": group.session.id,
            "title": group.session.display_title,
            "format": group.session.format,
            "updated_at": group.session.updated_at,
            "hits": group.count,
            "texts": group.texts,
            "url": links.session(group.session.id, q=query.q),
            "snippets": [_snippet_to_dict(group.session.id, s, query.q) for s in group.snippets],
        }
        for group in page.object_list
    ]
    return json_response(
        {
            "q": query.q,
            "count": results.count,
            "capped": results.capped,
            "cap": results.cap,
            "window": results.window,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "hits": [snippet for group in sessions for snippet in group["snippets"]],
            "session_count": page.paginator.count,
            "sort": results.sort,
            "what": results.what,
            "who": results.who,
            "sessions": sessions,
            "facets": results.facets,
        }
    )


@require_safe
@api_login_required
@bad_parameter_is_400
def activity_report(request: HttpRequest) -> HttpResponse:
    params = ActivityForm.read(request.GET)
    report = activity.report(params, jid_url=jid_links_for(request), project_url=links.project)
    return json_response(activity.report_to_dict(report))


@require_safe
@api_login_required
@bad_parameter_is_400
def project_detail(request: HttpRequest, project: str) -> HttpResponse:
    params = ProjectForm.read(request.GET)
    sessions = projects.project_sessions(project)
    if not sessions.exists():
        return json_error("no session ran in this project", 404)
    report = projects.usage_to_dict(projects.usage_report(sessions, params, project=project))
    return json_response({"project": project, "url": links.project(project), **report})


@require_POST
@api_permission_required("sessionviewer.reveal_secret")
def reveal_finding(request: HttpRequest, session_id: int, finding_id: int) -> HttpResponse:
    """A possible secret's value, for someone allowed to see it; audited."""
    finding = get_object_or_404(
        SessionFinding.objects.select_related("session__source"), id=finding_id, session_id=session_id
    )
    value = reveal(finding, request.user)
    if value is None:
        return json_error("the entry no longer holds this value; reload the page", 404)
    return json_response({"value": value, **finding.to_dict()})


@require_POST
@api_permission_required("sessionviewer.dismiss_secret")
def dismiss_finding(request: HttpRequest, session_id: int, finding_id: int) -> HttpResponse:
    """Mark a finding's fingerprint not a secret, everywhere it appears; undo=1 in the form takes it back.
    Both are audited."""
    finding = get_object_or_404(SessionFinding, id=finding_id, session_id=session_id)
    if request.POST.get("undo") == "1":
        SecretDismissal.undo(request.user, finding.fingerprint)
        return json_response({"fingerprint": finding.fingerprint, "dismissed": False})
    SecretDismissal.dismiss(request.user, finding.fingerprint, finding.kind)
    return json_response({"fingerprint": finding.fingerprint, "dismissed": True})


@require_safe
@api_login_required
@bad_parameter_is_400
def session_secrets(request: HttpRequest) -> HttpResponse:
    """The Secrets page's groups, masked."""
    return json_response({"groups": secret_groups(**SessionSecretsForm.read(request.GET))})
