"""A session shared safely: the redaction review (/sessions/<id>/redact/), its redacted exports,
and share links (/shared/<token>/), which serve the redacted page stored when they were made."""

from __future__ import annotations

import secrets
from collections import Counter
from datetime import timedelta

import zstandard
from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.core import signing
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from sessionviewer import export, redaction
from sessionviewer.models import AuditEvent, Session, SharedSession
from sessionviewer.views.http import snapshot_rebuilt_is_retried
from sessionviewer.views.pages import view_permission

# The link's token is signed: a made-up one is refused before the database is asked.
_SIGNER = signing.Signer(salt="sessionviewer.share")
SHARE_PERMISSION = "sessionviewer.share_session"


class RedactForm(forms.Form):
    """The review's choices: the ids of the values to take out (checked), the person's own words
    (one a line), what to make, and for a link, the days it lives."""

    values = forms.MultipleChoiceField(required=False)
    words = forms.CharField(required=False, widget=forms.Textarea, max_length=10_000)
    action = forms.ChoiceField(choices=[("html", "HTML"), ("md", "Markdown"), ("share", "Share link")])
    days = forms.IntegerField(required=False)  # bounded in __init__, by the settings read then

    def __init__(self, *args, candidates: list[redaction.Candidate], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["values"].choices = [(c.id(settings.SECRET_KEY), c.masked) for c in candidates]
        self.fields["days"] = forms.IntegerField(
            min_value=1, max_value=settings.SESSIONVIEWER_SHARE_MAX_DAYS, required=False
        )

    def words_list(self) -> list[str]:
        return self.cleaned_data["words"].splitlines()


def candidates_of(session: Session) -> list[redaction.Candidate]:
    """The values a person may take out of the session (export.review_candidates, made once
    per version of it): the page names them by opaque ids, never by value."""
    return export.review_candidates(session, high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY)


def review(request: HttpRequest, session: Session, candidates, checked=None) -> dict:
    """What the review shows, for its page and its JSON twin alike: the title (every value
    taken out of it), the values masked, how many of each kind, and the session's share
    links to someone with share_session (None to anyone else: the page shows none).
    checked: the ids the person sent (None: the defaults)."""
    rows = redaction.review_rows(candidates, settings.SECRET_KEY, checked)
    may_share = _may_share(request)
    shares = None
    if may_share:
        shares = list(session.shares.select_related("created_by").order_by("-created_at"))
        for share in shares:  # the page's Revoke button, and its twin's may_revoke
            share.may_revoke = share.state == "active" and may_revoke(request.user, share)
    # The title as the default choice redacts it: the page shows no value unmasked.
    everything = redaction.Redaction({c.value: c.kind for c in candidates})
    return {
        "title": everything.text(session.display_title),
        "rows": rows,
        "counts": dict(Counter(row["kind"] for row in rows)),
        "shares": shares,
        "may_share": may_share,
    }


def may_revoke(user, share: SharedSession) -> bool:
    """Whether user may revoke the link: its maker (with share_session) or an admin."""
    return user.is_superuser or (share.created_by_id == user.id and user.has_perm(SHARE_PERMISSION))


def _review(
    request: HttpRequest, session: Session, candidates, form, status: int = 200, **extra
) -> HttpResponse:
    checked = form.cleaned_data["values"] if form.is_bound and form.is_valid() else None
    context = {
        "session": session,
        **review(request, session, candidates, checked),
        "form": form,
        "default_days": settings.SESSIONVIEWER_SHARE_DAYS,
        "max_days": settings.SESSIONVIEWER_SHARE_MAX_DAYS,
        **extra,
    }
    return render(request, "sessions/redact.html", context, status=status)


def _may_share(request: HttpRequest) -> bool:
    return request.user.has_perm(SHARE_PERMISSION)


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
@view_permission
@snapshot_rebuilt_is_retried
def session_redact(request: HttpRequest, session_id: int) -> HttpResponse:
    session = get_object_or_404(Session.objects.select_related("source", "parent"), id=session_id)
    candidates = candidates_of(session)
    if request.method != "POST":
        return _review(request, session, candidates, RedactForm(candidates=candidates))
    form = RedactForm(request.POST, candidates=candidates)
    if not form.is_valid():
        return _review(request, session, candidates, form, status=400)
    chosen = redaction.chosen(candidates, form.cleaned_data["values"], settings.SECRET_KEY, form.words_list())
    action = form.cleaned_data["action"]
    if action == "share":
        if not _may_share(request):
            raise PermissionDenied("sharing needs the share_session permission")
        return _create_share(request, session, candidates, form, chosen)
    parts = (
        export.as_html(session, False, chosen)
        if action == "html"
        else export.as_markdown(session, False, chosen)
    )
    content_type = "text/html" if action == "html" else "text/markdown"
    response = StreamingHttpResponse(parts, content_type=f"{content_type}; charset=utf-8")
    name = export.redacted_filename(session, action)
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    if action == "html":
        response["Content-Security-Policy"] = export.content_security_policy()
    return response


def _create_share(request, session, candidates, form, chosen: redaction.Redaction) -> HttpResponse:
    """Render the redacted page once and keep it; too large a page is said, and nothing kept."""
    size, parts = 0, []
    for part in export.as_html(session, False, chosen):
        data = part.encode("utf-8")
        size += len(data)
        if size > settings.SESSIONVIEWER_SHARE_MAX_BYTES:
            limit = settings.SESSIONVIEWER_SHARE_MAX_BYTES
            message = f"This session is too large to share: its redacted page passes the limit of {limit:,} bytes (SESSIONVIEWER_SHARE_MAX_BYTES)."
            return _review(request, session, candidates, form, status=413, share_error=message)
        parts.append(data)
    page = b"".join(parts)
    token = secrets.token_urlsafe(32)
    days = form.cleaned_data["days"] or settings.SESSIONVIEWER_SHARE_DAYS
    share = SharedSession.objects.create(
        token_hash=SharedSession.hash_of(token),
        session=session,
        created_by=request.user,
        expires_at=timezone.now() + timedelta(days=days),
        page=zstandard.ZstdCompressor(level=10).compress(page),
        page_bytes=len(page),
        policy=export.content_security_policy() + "; frame-ancestors 'none'",
        redacted=chosen.counts,
    )
    _audit(request.user, "share-create", share, days=days, redacted=chosen.counts)
    link = request.build_absolute_uri(reverse("shared-page", args=[_SIGNER.sign(token)]))
    return _review(request, session, candidates, form, new_link=link, new_share=share)


def _audit(user, action: str, share: SharedSession, **detail) -> None:
    session = share.session
    AuditEvent.record(
        user,
        action,
        session.source.path,
        session.jid,
        machine=session.source.machine,
        session=session.id,
        share=share.id,
        **detail,
    )


@require_POST
@login_required
def share_revoke(request: HttpRequest, share_id: int) -> HttpResponse:
    share = get_object_or_404(SharedSession.objects.select_related("session__source"), id=share_id)
    if not may_revoke(request.user, share):
        raise PermissionDenied("only the link's maker or an admin may revoke it")
    if share.revoked_at is None:
        share.revoked_at, share.revoked_by = timezone.now(), request.user
        share.save(update_fields=("revoked_at", "revoked_by"))
        _audit(request.user, "share-revoke", share)
    return redirect(reverse("session-redact", args=[share.session_id]) + "#shares")


@require_safe
def shared_page(request: HttpRequest, token: str) -> HttpResponse:
    """The stored page, to anyone holding the link, while it is neither expired nor revoked."""
    try:
        raw = _SIGNER.unsign(token)
    except signing.BadSignature:
        raise Http404("no such link") from None
    share = (
        SharedSession.objects.select_related("session__source")
        .filter(token_hash=SharedSession.hash_of(raw))
        .first()
    )
    if share is None:
        raise Http404("no such link")
    if share.state != "active":
        return _plain(f"This link was {share.state}: ask whoever sent it for a new one.", 410)
    if not share.open_within_limit(settings.SESSIONVIEWER_SHARE_OPENS_PER_MINUTE):
        response = _plain("This link was opened too often in the last minute: try again in a minute.", 429)
        response["Retry-After"] = "60"
        return response
    _audit(None, "share-open", share)
    response = HttpResponse(
        zstandard.ZstdDecompressor().decompress(share.page), content_type="text/html; charset=utf-8"
    )
    response["Content-Security-Policy"] = share.policy
    return _strict(response)


def _plain(text: str, status: int) -> HttpResponse:
    response = HttpResponse(text, content_type="text/plain; charset=utf-8", status=status)
    response["Content-Security-Policy"] = "default-src 'none'; frame-ancestors 'none'"
    return _strict(response)


def _strict(response: HttpResponse) -> HttpResponse:
    # The token is in the URL: no page it leads to learns it, no cache or search engine keeps it.
    response["Referrer-Policy"] = "no-referrer"
    response["Cache-Control"] = "no-store"
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["X-Content-Type-Options"] = "nosniff"
    return response
