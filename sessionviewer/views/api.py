"""The JSON API: the contract the browser pages and outside tools share.

Every response is encoded with orjson (views/http.py); errors come back as
{"error": message} with the right status. Anonymous requests get 401, never data.
Each view reads its query string with the same form as its page (forms.py).
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from django.core.paginator import Paginator
from django.http import FileResponse, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET

from sessionviewer import activity, search, transcripts
from sessionviewer.filters import filter_sessions
from sessionviewer.forms import ActivityForm, SessionListForm, TranscriptForm
from sessionviewer.models import Session
from sessionviewer.roots import configured_roots, is_inside_roots
from sessionviewer.views.http import api_permission_required, bad_parameter_is_400, json_error, json_response
from sessionviewer.workspaces import open_regular, read_error

api_login_required = api_permission_required("sessionviewer.view_session")


def _get_session(session_id: int) -> Session | None:
    return Session.objects.select_related("source", "parent").filter(id=session_id).first()


@require_GET
@api_login_required
@bad_parameter_is_400
def session_list(request: HttpRequest) -> HttpResponse:
    query = filter_sessions(SessionListForm.read(request.GET))
    page = Paginator(query.queryset, query.size).get_page(query.page)
    return json_response(
        {
            "count": page.paginator.count,
            "page": page.number,
            "pages": page.paginator.num_pages,
            "size": query.size,
            "sessions": [s.to_dict() for s in page.object_list],
        }
    )


@require_GET
@api_login_required
@bad_parameter_is_400
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
    return json_response(transcripts.thread_to_dict(session, view, params["_offset"] or 0, params["_limit"]))


@require_GET
@api_login_required
def session_cost(request: HttpRequest, session_id: int) -> HttpResponse:
    session = _get_session(session_id)
    if session is None:
        return json_error(f"no session {session_id}", 404)
    return json_response(session.cost_to_dict())


@require_GET
@api_login_required
def session_raw(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session, id=session_id)
    path = Path(session.path)
    # The path came from the index, but check it still lies under a configured root.
    if not is_inside_roots(path, [spec.path for spec in configured_roots()]):
        return json_error(f"the file of session {session_id} is not available", 404)
    try:
        handle = open_regular(path)
    except OSError as error:
        return json_error(f"the file of session {session_id} is not available: {read_error(error)}", 404)
    # filename=: Django quotes or encodes the name, whatever it holds (CR, LF, quotes).
    return FileResponse(handle, content_type="application/x-ndjson; charset=utf-8", filename=path.name)


@require_GET
@api_login_required
@bad_parameter_is_400
def session_facets(request: HttpRequest) -> HttpResponse:
    """The list page's facets for the same query string as /api/sessions."""
    return json_response({"facets": activity.facets(request.GET, SessionListForm.read(request.GET))})


@require_GET
@api_login_required
@bad_parameter_is_400
def search_hits(request: HttpRequest) -> HttpResponse:
    """Matching entries with highlighted snippets (HTML, escaped) and a link into the transcript."""
    params = SessionListForm.read(request.GET)
    query = filter_sessions(params)
    page = search.hit_page(query.q, query.queryset, params["_hits_page"])
    hits = page.object_list if page is not None else []
    return json_response(
        {
            "q": query.q,
            "count": page.paginator.count if page is not None else 0,
            "page": page.number if page is not None else 1,
            "pages": page.paginator.num_pages if page is not None else 0,
            "hits": [
                {
                    "session": hit["session"].id,
                    "entry": hit["entry"].entry_id,
                    "line": hit["entry"].line,
                    "snippet_html": str(hit["snippet"]),
                    "url": reverse("session-detail", args=[hit["session"].id])
                    + "?"
                    + urlencode({"entry": hit["entry"].entry_id})
                    + "#"
                    + transcripts.anchor(hit["entry"].entry_id),
                }
                for hit in hits
            ],
        }
    )


@require_GET
@api_login_required
@bad_parameter_is_400
def activity_report(request: HttpRequest) -> HttpResponse:
    report = activity.report(ActivityForm.read(request.GET))
    return json_response(activity.report_to_dict(report))
