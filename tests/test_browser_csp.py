"""Every page type in a real browser under the Content-Security-Policy: none may break it.

A violation shows both as a `securitypolicyviolation` event in the page and as a console error;
either fails the test, naming the page.
"""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from .browser import ALICE, Watched, log_in
from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def watched(chromium, live_server, request):
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield Watched(page, live_server.url)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True, timeout=60_000)
    context.close()


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
