"""Every page type in a real browser under the Content-Security-Policy: none may break it.

A violation shows both as a `securitypolicyviolation` event in the page and as a console error;
either fails the test, naming the page.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from sessionviewer import transcripts
from sessionviewer import workspaces as ws
from sessionviewer.index import index_roots
from sessionviewer.models import Revision, Session

from .conftest import SCREENSHOTS
from .test_pages import DEMO_SPECS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALICE = "alice@example.com"
RECORD_VIOLATIONS = """
window.cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.cspViolations.push(`${event.violatedDirective} refused ${event.blockedURI || "inline code"}`);
});
"""


@pytest.fixture
def site(settings, memory, admin_user):
    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in DEMO_SPECS]
    transcripts.clear_cache()
    index_roots(DEMO_SPECS)
    client = Client()
    client.force_login(admin_user)
    path = memory / ALICE / "memory.md"
    saved = client.post(
        reverse("workspace-save", args=[0, ALICE, "memory.md"]),
        {"text": "Alice likes tea.", "version": ws.file_version(path)},
    )
    assert saved.status_code == 302
    return {
        "revision": Revision.objects.get().id,
        "session": Session.objects.order_by("-entry_count").first().id,
    }


class Watched:
    """A browser page that records every CSP violation, with the page it happened on."""

    def __init__(self, page, base_url: str):
        self.page = page
        self.base_url = base_url
        self.violations: list[str] = []
        page.add_init_script(RECORD_VIOLATIONS)
        page.on("console", self._console)

    def _console(self, message) -> None:
        if "Content Security Policy" in message.text or "Content-Security-Policy" in message.text:
            self.violations.append(f"{self.page.url}: console: {message.text}")

    def check(self) -> None:
        for violation in self.page.evaluate("window.cspViolations || []"):
            self.violations.append(f"{self.page.url}: {violation}")

    def open(self, path: str) -> None:
        self.page.goto(self.base_url + path)
        self.page.wait_for_load_state("load")
        self.check()


@pytest.fixture
def watched(chromium, live_server, request):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield Watched(page, live_server.url)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True, timeout=60_000)
    context.close()


def log_in(watched: Watched) -> None:
    watched.open(reverse("login"))
    watched.page.fill("input[name=username]", "admin")
    watched.page.fill("input[name=password]", "admin-password")
    watched.page.click("button[type=submit]")
    watched.page.wait_for_selector("h1:has-text('Sessions')")
    watched.check()


def test_no_page_type_breaks_the_policy(watched, site):
    log_in(watched)
    page = watched.page
    user = User.objects.get(username="admin")
    for path in [
        reverse("session-list"),
        reverse("session-list") + "?q=the",
        reverse("session-detail", args=[site["session"]]),
        reverse("activity"),
        reverse("workspace-list"),
        reverse("workspace-jid", args=[0, ALICE]),
        reverse("workspace-prompt", args=[0, ALICE]),
        reverse("workspace-source", args=[0, ALICE, "memory.md"]),
        reverse("workspace-revision", args=[site["revision"]]),
        reverse("workspace-audit-log"),
        reverse("workspace-secrets"),
        reverse("workspace-search") + "?q=tea",
        reverse("workspace-forget", args=[0, ALICE]),
        reverse("admin:index"),
        reverse("admin:auth_user_changelist"),
        reverse("admin:auth_user_change", args=[user.id]),
        reverse("admin:axes_accesslog_changelist"),
    ]:
        watched.open(path)
        assert page.locator("h1").count() >= 1, path  # the page rendered
    assert watched.violations == []


def test_htmx_swaps_break_no_policy(watched, site):
    log_in(watched)
    page = watched.page
    watched.open(reverse("session-list"))
    page.locator('[data-facet="format"] a', has_text="Go agent").click()
    page.wait_for_url("**format=go_agent**")
    watched.open(reverse("workspace-edit", args=[0, ALICE, "memory.md"]))
    page.locator("textarea[name=text]").fill("Alice likes **green** tea.")
    page.locator("textarea[name=text]").press("End")
    page.wait_for_selector("#preview strong:has-text('green')")
    watched.check()
    assert watched.violations == []


def test_the_login_pages_break_no_policy(watched, site):
    watched.open(reverse("login"))
    watched.open(reverse("admin:login"))
    assert watched.violations == []


def test_the_html_export_opened_from_disk_shows_its_styles_and_breaks_no_policy(watched, site, tmp_path):
    log_in(watched)
    download = watched.page.request.get(
        watched.base_url + reverse("session-export-html", args=[site["session"]])
    )
    assert download.ok
    path = tmp_path / "export.html"
    path.write_bytes(download.body())
    watched.page.goto(path.as_uri())
    watched.check()
    # The app's stylesheet, inlined and allowed by its hash, applies: exports are 64rem wide.
    assert watched.page.evaluate("getComputedStyle(document.querySelector('main')).maxWidth") == "1024px"
    assert watched.violations == []
