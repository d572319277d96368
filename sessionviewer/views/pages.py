"""Browser pages. Thin: queries live in filters/transcripts, parsing in readers."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required, permission_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from sessionviewer import transcripts
from sessionviewer.filters import BadFilter, filter_sessions
from sessionviewer.models import Session


@require_GET
@login_required
@permission_required("sessionviewer.view_session", raise_exception=True)
@vary_on_headers("HX-Request")
def session_list(request: HttpRequest) -> HttpResponse:
    try:
        query = filter_sessions(request.GET)
    except BadFilter as error:
        return HttpResponseBadRequest(str(error))
    page = Paginator(query.queryset, query.size).get_page(query.page)
    template_name = "sessions/list.html"
    if request.htmx:
        template_name += "#session-table"
    return render(request, template_name, {"page": page, "query": query})


@require_GET
@login_required
@permission_required("sessionviewer.view_session", raise_exception=True)
def session_detail(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("source", "parent"), id=session_id)
    try:
        view = transcripts.session_thread(session, request.GET.get("leaf") or None)
    except transcripts.UnknownLeaf:
        return render(request, "sessions/unknown_leaf.html", {"session": session}, status=404)
    return render(request, "sessions/detail.html", {"session": session, "thread": view})
