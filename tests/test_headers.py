"""Headers every response needs on a network (sessionviewer/middleware.py and django-csp): pages,
fragments, JSON and downloads are `Cache-Control: private`, and every page has a
Content-Security-Policy that needs no inline script or style, and none in it."""

from __future__ import annotations

import base64
import hashlib
import html
import re
from html.parser import HTMLParser

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.index import index_roots
from sessionviewer.models import Revision, Session

from .demo_index import DEMO_SPECS

pytestmark = pytest.mark.django_db

ALICE = "alice@example.com"


@pytest.fixture
def site(client, settings, memory):
    """The demo index and memory tree, a revision, and an admin logged in: every page has something to show."""
    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in DEMO_SPECS]
    index_roots(DEMO_SPECS)
    client.force_login(User.objects.create_superuser("admin", password="pw"))
    path = memory / ALICE / "memory.md"
    saved = client.post(
        reverse("workspace-save", args=[0, ALICE, "memory.md"]),
        {"text": "Alice likes tea.", "version": ws.file_version(path)},
    )
    assert saved.status_code == 302
    session = Session.objects.order_by("id").first()
    return {"session": session.id, "revision": Revision.objects.get().id}


def urls(site) -> dict[str, str]:
    s, r = site["session"], site["revision"]
    return {
        "session list": reverse("session-list"),
        "search": reverse("session-list") + "?q=the",
        "transcript": reverse("session-detail", args=[s]),
        "activity": reverse("activity"),
        "workspaces": reverse("workspace-list"),
        "JID page": reverse("workspace-jid", args=[0, ALICE]),
        "prompt": reverse("workspace-prompt", args=[0, ALICE]),
        "file": reverse("workspace-source", args=[0, ALICE, "memory.md"]),
        "file edit": reverse("workspace-edit", args=[0, ALICE, "memory.md"]),
        "memory search": reverse("workspace-search") + "?q=tea",
        "revision": reverse("workspace-revision", args=[r]),
        "audit log": reverse("workspace-audit-log"),
        "secrets": reverse("workspace-secrets"),
        "forget": reverse("workspace-forget", args=[0, ALICE]),
        "admin": reverse("admin:index"),
        "admin users": reverse("admin:auth_user_changelist"),
        "admin login attempts": reverse("admin:axes_accessattempt_changelist"),
    }


def api_urls(site) -> dict[str, str]:
    s, r = site["session"], site["revision"]
    return {
        "sessions": reverse("api-session-list"),
        "session": reverse("api-session-detail", args=[s]),
        "raw file": reverse("api-session-raw", args=[s]),
        "facets": reverse("api-session-facets"),
        "search": reverse("api-search") + "?q=the",
        "activity": reverse("api-activity"),
        "workspaces": reverse("api-workspace-list"),
        "JID": reverse("api-workspace-jid", args=[0, ALICE]),
        "file edit": reverse("api-workspace-edit", args=[0, ALICE, "memory.md"]),
        "revision": reverse("api-workspace-revision", args=[r]),
        "audit log": reverse("api-workspace-audit-log"),
        "secrets": reverse("api-workspace-secrets"),
        "HTML export": reverse("session-export-html", args=[s]),
        "Markdown export": reverse("session-export-md", args=[s]),
    }


def get(client, url: str):
    response = client.get(url)
    assert response.status_code == 200, (url, response.status_code)
    return response


def cache_control(response) -> set[str]:
    return {part.strip() for part in response.get("Cache-Control", "").split(",")}


# Cache-Control: private


def test_every_page_is_private_to_its_user(client, site):
    public = [name for name, url in urls(site).items() if "private" not in cache_control(get(client, url))]
    assert public == []


def test_every_json_response_and_download_is_private_to_its_user(client, site):
    public = [
        name for name, url in api_urls(site).items() if "private" not in cache_control(get(client, url))
    ]
    assert public == []


def test_an_htmx_fragment_is_private_to_its_user(client, site):
    response = client.get(reverse("session-list"), {"format": "go_agent"}, HTTP_HX_REQUEST="true")
    assert "private" in cache_control(response)


def test_the_login_page_and_an_anonymous_api_answer_are_private(db):
    assert "private" in cache_control(Client().get(reverse("login")))
    refused = Client().get(reverse("api-session-list"))
    assert refused.status_code == 401
    assert "private" in cache_control(refused)


# Content-Security-Policy


def policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in header.split(";") if part.strip())}


class InlineCode(HTMLParser):
    """Everything a page could hold that a policy without 'unsafe-inline' refuses."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag, attrs):
        for name, _value in attrs:
            if name == "style" or name.startswith("on"):
                self.found.append(f"<{tag} {name}>")
            if name.startswith("hx-on"):
                self.found.append(f"<{tag} {name}>")
        if tag == "style":
            self.found.append("<style>")
        self.in_script = tag == "script"
        if self.in_script and not dict(attrs).get("src"):
            self.found.append("<script> without src")

    def handle_endtag(self, tag):
        self.in_script = False

    def handle_data(self, data):
        if self.in_script and data.strip():
            self.found.append(f"inline script {data.strip()[:40]!r}")


def inline_code(body: str) -> list[str]:
    parser = InlineCode()
    parser.feed(body)
    return parser.found


def test_every_page_has_a_policy_without_inline_script_or_style(client, site):
    pages = {name: get(client, url) for name, url in urls(site).items()}
    pages["login"] = Client().get(reverse("login"))
    pages["admin login"] = Client().get(reverse("admin:login"))
    for name, response in pages.items():
        directives = policy(response)
        assert directives["script-src"] == ["'self'"], name
        assert directives["style-src"] == ["'self'"], name
        assert directives["default-src"] == ["'self'"], name
        assert directives["object-src"] == ["'none'"], name
        assert directives["frame-ancestors"] == ["'none'"], name


def test_no_page_holds_inline_script_style_or_handlers(client, site):
    pages = {name: get(client, url).getvalue().decode() for name, url in urls(site).items()}
    pages["login"] = Client().get(reverse("login")).content.decode()
    pages["admin login"] = Client().get(reverse("admin:login")).content.decode()
    found = {name: inline_code(body) for name, body in pages.items() if inline_code(body)}
    assert found == {}


def test_htmx_is_told_not_to_add_its_own_style(client, site):
    body = get(client, reverse("session-list")).content.decode()
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles": false}'>""" in body


def test_the_html_export_carries_its_own_policy_allowing_only_its_style(client, site):
    response = get(client, reverse("session-export-html", args=[site["session"]]))
    body = response.getvalue().decode()
    [style] = re.findall(r"<style>(.*?)</style>", body, re.S)
    digest = base64.b64encode(hashlib.sha256(style.encode()).digest()).decode()
    expected = (
        f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; base-uri 'none'; form-action 'none'"
    )
    [meta] = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', body)
    assert html.unescape(meta) == expected
    assert response["Content-Security-Policy"] == expected
    assert inline_code(body) == ["<style>"]


def test_a_refused_form_gets_a_page_of_ours_without_inline_style(db):
    # Django's own CSRF failure page has a <style> the policy would refuse.
    response = Client(enforce_csrf_checks=True).post(reverse("login"), {"username": "a", "password": "b"})
    assert response.status_code == 403
    body = response.content.decode()
    assert "Form refused" in body
    assert "SESSIONVIEWER_BEHIND_TLS_PROXY=1" in body
    assert inline_code(body) == []


# HEAD: monitors and link checkers send it


def test_head_answers_every_page_and_json_twin_like_get_without_a_body(client, site):
    session = Session.objects.get(id=site["session"])
    more = {
        "cost": reverse("session-cost", args=[session.id]),
        "timeline": reverse("workspace-memory-timeline", args=[0, ALICE]),
        "as of": reverse("workspace-memory-as-of", args=[0, ALICE]),
        "memory changes": reverse("workspace-memory-changes"),
        "memory findings": reverse("workspace-memory-findings"),
    }
    differ = {}

    def body(response) -> bytes:
        return b"".join(response.streaming_content) if response.streaming else response.content

    for name, url in {**urls(site), **api_urls(site), **more}.items():
        got, head = client.get(url), client.head(url)
        if (head.status_code, head.get("Content-Type"), body(head)) != (
            got.status_code,
            got.get("Content-Type"),
            b"",
        ):
            differ[name] = (got.status_code, head.status_code, body(head)[:80])
    assert differ == {}


def test_head_of_the_front_page_answers_an_anonymous_monitor_like_get(db):
    assert Client().head("/").status_code == Client().get("/").status_code == 302
