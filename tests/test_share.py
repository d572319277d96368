"""Share links (/shared/<token>/): made by someone with share_session from the redaction review,
opened without an account, serving only the redacted page stored when made; expiry, revocation,
the size limit, the rate limit, the audit rows, and no other URL answering to the token."""

from __future__ import annotations

import html
import re
from datetime import datetime, timedelta

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from sessionviewer.models import AuditEvent, SharedSession

from .fixture_files import index_fixture
from .users import VIEWER, make_user

TOKEN = "ghp_Zq7Lm2Xv9Rt4Yp8Wk3Nb6Hc1Jd5Fg0Sa2Qe7"
VALUES = (
    TOKEN,
    "bob.smith@clientcorp.example",
    "/home/alice/shop",
    "build.acme.io",
    "status.acme.io",
    "ClientCorp",
)


@pytest.fixture
def session(tmp_path, db):
    return index_fixture(tmp_path, "claude_code", "values_to_redact.jsonl", "projects/-home-alice-shop", "s1")


@pytest.fixture
def sharer(client, db):
    """vera the viewer, granted share_session."""
    user = make_user(VIEWER, "viewers", permissions=("share_session",))
    client.force_login(user)
    return user


def make_link(client, session, days: int | None = None, **post) -> str:
    url = reverse("session-redact", args=[session.id])
    ids = re.findall(r'name="values" value="(\w+)"', client.get(url).content.decode())
    data = {"values": ids, "words": "ClientCorp", "action": "share", **post}
    if days is not None:
        data["days"] = days
    response = client.post(url, data)
    assert response.status_code == 200, response.content[:500]
    return html.unescape(
        re.search(r'class="share-link" readonly value="([^"]+)"', response.content.decode()).group(1)
    )


def path_of(link: str) -> str:
    return link.removeprefix("http://testserver")


def token_of(link: str) -> str:
    return path_of(link).split("/")[2]


def test_someone_with_share_session_makes_a_link_that_opens_without_login(client, sharer, session):
    link = make_link(client, session)
    client.logout()
    response = client.get(path_of(link))
    assert response.status_code == 200
    assert b"[redacted: github_token]" in response.content
    assert response["Referrer-Policy"] == "no-referrer"
    assert "no-store" in response["Cache-Control"]
    assert "frame-ancestors 'none'" in response["Content-Security-Policy"]


def test_the_shared_page_holds_no_redacted_value_in_any_form(client, sharer, session):
    link = make_link(client, session)
    client.logout()
    body = client.get(path_of(link)).content.decode()
    for value in VALUES:
        for form in {value, html.escape(value), value.replace("/", "\\/")}:
            assert form not in body, form


def test_a_viewer_without_share_session_gets_403(client, viewer, session):
    url = reverse("session-redact", args=[session.id])
    response = client.post(url, {"values": [], "action": "share"})
    assert response.status_code == 403
    assert not SharedSession.objects.exists()
    assert b"Make a share link" not in client.get(url).content


def test_a_link_serves_the_snapshot_made_when_it_was_created(client, sharer, session):
    link = make_link(client, session)
    session.title = session.summary_title = "Renamed since"
    session.save(update_fields=("title", "summary_title"))
    assert b"Renamed since" not in client.get(path_of(link)).content


def test_a_link_expires_after_its_days(client, sharer, session):
    link = make_link(client, session, days=3)
    share = SharedSession.objects.get()
    assert timedelta(days=3) - (share.expires_at - share.created_at) < timedelta(seconds=5)
    share.expires_at = timezone.now() - timedelta(seconds=1)
    share.save(update_fields=("expires_at",))
    response = client.get(path_of(link))
    assert response.status_code == 410
    assert b"[redacted" not in response.content


def test_a_link_lives_seven_days_by_default(client, sharer, session):
    make_link(client, session)
    share = SharedSession.objects.get()
    assert abs((share.expires_at - share.created_at) - timedelta(days=7)) < timedelta(seconds=5)


def test_more_than_the_most_days_is_a_400(client, sharer, session, settings):
    url = reverse("session-redact", args=[session.id])
    response = client.post(
        url, {"values": [], "action": "share", "days": settings.SESSIONVIEWER_SHARE_MAX_DAYS + 1}
    )
    assert response.status_code == 400
    assert not SharedSession.objects.exists()


def test_a_revoked_link_is_refused(client, sharer, session):
    link = make_link(client, session)
    share = SharedSession.objects.get()
    assert client.post(reverse("share-revoke", args=[share.id])).status_code == 302
    assert client.get(path_of(link)).status_code == 410


def test_only_the_maker_or_an_admin_revokes(client, sharer, session, admin_user):
    make_link(client, session)
    share = SharedSession.objects.get()
    client.force_login(make_user("other", "viewers", permissions=("share_session",)))
    assert client.post(reverse("share-revoke", args=[share.id])).status_code == 403
    client.force_login(admin_user)
    assert client.post(reverse("share-revoke", args=[share.id])).status_code == 302
    share.refresh_from_db()
    assert share.revoked_by == admin_user


def test_a_token_with_a_bad_signature_is_a_404(client, sharer, session):
    token = token_of(make_link(client, session))
    assert (
        client.get(reverse("shared-page", args=[token[:-1] + ("A" if token[-1] != "A" else "B")])).status_code
        == 404
    )


@pytest.mark.parametrize(
    "name",
    [
        "session-detail",
        "session-export-html",
        "session-export-md",
        "api-session-detail",
        "api-session-raw",
        "session-redact",
    ],
)
def test_no_other_url_answers_to_the_token(client, sharer, session, name):
    token = token_of(make_link(client, session))
    client.logout()
    url = reverse(name, args=[session.id])
    for request in (f"{url}?token={token}", f"{url}?t={token}&_all=1"):
        response = client.get(request)
        # The login page, or the API's 401: the token opens nothing but its own page.
        assert response.status_code in (302, 401)
        assert response.status_code == 401 or "/accounts/login/" in response["Location"]
        assert b"redacted" not in response.content
    assert client.get(f"/shared/{token}/raw").status_code == 404
    assert client.get(f"/api/shared/{token}/").status_code == 404
    assert client.get(f"/sessions/{token}/").status_code == 404


def test_a_session_too_large_to_share_says_so_and_keeps_nothing(client, sharer, session, settings):
    settings.SESSIONVIEWER_SHARE_MAX_BYTES = 1000
    url = reverse("session-redact", args=[session.id])
    response = client.post(url, {"values": [], "action": "share"})
    assert response.status_code == 413
    assert b"too large to share" in response.content
    assert not SharedSession.objects.exists()


def test_opens_past_the_rate_limit_get_429(client, sharer, session, settings):
    settings.SESSIONVIEWER_SHARE_OPENS_PER_MINUTE = 2
    link = make_link(client, session)
    statuses = [client.get(path_of(link)).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


def test_creating_opening_and_revoking_are_audited(client, sharer, session):
    link = make_link(client, session)
    share = SharedSession.objects.get()
    client.get(path_of(link))
    client.post(reverse("share-revoke", args=[share.id]))
    events = list(AuditEvent.objects.order_by("id").values_list("action", "user_id", "detail"))
    assert [(action, user) for action, user, _ in events] == [
        ("share-create", sharer.id),
        ("share-open", None),
        ("share-revoke", sharer.id),
    ]
    assert all(detail["share"] == share.id and detail["session"] == session.id for _, _, detail in events)


def test_the_audit_log_shows_and_filters_share_events(client, sharer, session, admin_user):
    make_link(client, session)
    share = SharedSession.objects.get()
    client.force_login(admin_user)
    page = client.get(reverse("workspace-audit-log") + "?action=share-create")
    assert page.status_code == 200
    assert f"share link {share.id} of".encode() in page.content


def test_the_stored_page_is_compressed(client, sharer, session):
    make_link(client, session)
    share = SharedSession.objects.get()
    assert len(bytes(share.page)) < share.page_bytes


def test_createuser_grants_share_session(db):
    call_command("createuser", "sam", "--role", "viewer", "--grant", "share_session")
    from django.contrib.auth.models import User

    assert User.objects.get(username="sam").has_perm("sessionviewer.share_session")


def test_admins_may_share(admin_user):
    assert admin_user.has_perm("sessionviewer.share_session")


@pytest.mark.parametrize("which", ["subagent", "parent"])
def test_a_shared_page_links_to_nothing_of_the_app(client, sharer, family, which):
    session = family if which == "subagent" else family.parent
    assert session.problems.exists() and (session.parent_id or session.children.exists())
    link = make_link(client, session)
    client.logout()
    body = re.sub(r"<style>.*?</style>", "", client.get(path_of(link)).content.decode(), flags=re.S)
    hrefs = re.findall(r'(?:href|src|action|hx-get)="([^"]*)"', body)
    assert [href for href in hrefs if not href.startswith(("#", "http://", "https://", "data:"))] == []
    assert "/sessions/" not in body and "/api/" not in body
    for path in (session.path, session.source.path, family.parent.path, session.project):
        assert path not in body


def test_the_review_lists_each_link_with_what_it_took_out_in_words(client, sharer, session):
    make_link(client, session)
    page = client.get(reverse("session-redact", args=[session.id])).content.decode()
    listed = re.search(r'<ul class="share-list">(.*?)</ul>', page, re.S).group(1)
    assert "1 github token" in listed and "1 word" in listed and "home paths" in listed
    assert "_" not in re.search(r"redacted: ([^<]*)", listed).group(1)


def twin(client, session) -> dict:
    response = client.get(reverse("api-session-redact", args=[session.id]))
    assert response.status_code == 200
    return response.json()


def test_the_review_twin_lists_each_link_as_the_page_does(client, sharer, session):
    make_link(client, session)
    share = SharedSession.objects.get()
    data = twin(client, session)
    assert data["may_share"] is True
    [listed] = data["shares"]
    assert (listed["id"], listed["state"], listed["created_by"]) == (share.id, "active", "vera")
    assert datetime.fromisoformat(listed["created_at"]) == share.created_at
    assert datetime.fromisoformat(listed["expires_at"]) == share.expires_at
    assert listed["redacted"] == share.redacted and listed["redacted"]["word"] == 1
    page = client.get(reverse("session-redact", args=[session.id])).content.decode()
    assert f"redacted: {listed['redacted_text']}" in page
    assert listed["may_revoke"] is True


def test_the_review_twin_never_holds_a_links_token(client, sharer, session):
    link = make_link(client, session)
    raw = client.get(reverse("api-session-redact", args=[session.id])).content.decode()
    signed = token_of(link)
    for secret in (signed, signed.split(":")[0], SharedSession.objects.get().token_hash):
        assert secret not in raw


def test_a_revoked_link_is_revoked_in_the_twin(client, sharer, session):
    make_link(client, session)
    share = SharedSession.objects.get()
    client.post(reverse("share-revoke", args=[share.id]))
    [listed] = twin(client, session)["shares"]
    assert listed["state"] == "revoked" and listed["revoked_at"] is not None
    assert listed["may_revoke"] is False


def test_the_review_twin_shows_no_links_without_share_session(client, sharer, session):
    make_link(client, session)
    client.force_login(make_user("viola", "viewers"))
    data = twin(client, session)
    assert (data["may_share"], data["shares"]) == (False, None)
    assert b'id="shares"' not in client.get(reverse("session-redact", args=[session.id])).content
