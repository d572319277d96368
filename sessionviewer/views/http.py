"""JSON responses, the API's permission check, and the one 400 of pages and API alike: a message that starts with the
parameter it is about.

Plain text on pages (the message quotes what was sent, so it is never HTML) and
{"error", "status"} under /api/. Views raise BadRequest (forms.BadParameter and its
kinds): bad_parameter_is_400 answers it for the session pages and their twins,
errors_as_json answers it and Http404 for the workspaces' twins, and handler400 answers
those no view catches.
"""

from __future__ import annotations

from functools import wraps

import orjson
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest

from sessionviewer import transcripts
from sessionviewer.forms import BadParameter


def json_response(data, status: int = 200) -> HttpResponse:
    body = orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS | orjson.OPT_NAIVE_UTC, default=str)
    return HttpResponse(body, status=status, content_type="application/json")


def json_error(message: str, status: int) -> HttpResponse:
    return json_response({"error": message, "status": status}, status=status)


def api_permission_required(permission: str):
    """Like permission_required, but an API client gets a 401 or 403 it can act on, not a redirect."""

    def decorator(view):
        @wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if not request.user.is_authenticated:
                return json_error("authentication required", 401)
            if not request.user.has_perm(permission):
                return json_error(f"permission {permission} required", 403)
            return view(request, *args, **kwargs)

        return wrapper

    return decorator


def bad_request(request: HttpRequest, error: Exception | str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return json_error(str(error), 400)
    return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return bad_request(request, exception or "bad request")


def bad_parameter_is_400(view):
    """A view whose query string a form reads: a BadParameter it raises is the one 400."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except BadParameter as error:
            return bad_request(request, error)

    return wrapper


def errors_as_json(view):
    """An /api/ view: the Http404 (no such root, JID, file or revision) or BadParameter it
    raises is the JSON error, 404 or 400, so the view itself catches neither."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, *args, **kwargs)
        except Http404 as error:
            return json_error(str(error), 404)
        except BadParameter as error:
            return json_error(str(error), 400)

    return wrapper


def snapshot_rebuilt_is_retried(view):
    """A session view whose thread read a snapshot built again while it was being read
    (transcripts.StaleSnapshot: another process prepared it anew) drops that session's
    built threads and answers again, once, from the new snapshot."""

    @wraps(view)
    def wrapper(request: HttpRequest, session_id: int, *args, **kwargs) -> HttpResponse:
        try:
            return view(request, session_id, *args, **kwargs)
        except transcripts.StaleSnapshot:
            transcripts.forget_session(session_id)
            return view(request, session_id, *args, **kwargs)

    return wrapper
