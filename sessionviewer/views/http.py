"""The one 400 of pages and API alike: a message that starts with the parameter it is about.

Plain text on pages (the message quotes what was sent, so it is never HTML) and
{"error", "status"} under /api/. Views raise BadRequest (forms.BadParameter and its
kinds); handler400 answers those the views do not catch themselves.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest

from sessionviewer.views.api import json_error


def bad_request(request: HttpRequest, error: Exception | str) -> HttpResponse:
    if request.path.startswith("/api/"):
        return json_error(str(error), 400)
    return HttpResponseBadRequest(str(error), content_type="text/plain; charset=utf-8")


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return bad_request(request, exception or "bad request")
