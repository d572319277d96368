"""A project's page in a real browser: opened from the list, its sessions nested, its charts drawn."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessionviewer.models import Session

from .browser import open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
WEBSHOP = "~/projects/webshop"  # /home/demo/projects/webshop, the home folded


def test_a_project_opens_from_the_list_with_its_sessions_and_charts(browser_page, demo):
    page = browser_page
    open_page(page, "/?format=claude_code")
    page.locator('td[data-label="Project"] a', has_text="webshop").first.click()
    page.wait_for_url("**/projects/**")
    expect(page.locator("h1")).to_have_text(WEBSHOP)
    sessions = Session.objects.filter(project=WEBSHOP)
    expect(page.locator(".totals")).to_contain_text(f"{sessions.count()}sessions")
    rows = page.locator("table.sessions.nested tbody tr")
    expect(rows).to_have_count(sessions.count())
    subagent = Session.objects.get(project=WEBSHOP, kind="subagent")
    nested = page.locator("tr.depth-1", has_text=subagent.display_title[:40])
    expect(nested).to_have_count(1)
    expect(nested.locator(".nest")).to_have_text("↳")
    for chart in ("tokens_per_day", "cost_per_day", "tools"):
        expect(page.locator(f"#chart-{chart} svg")).to_be_visible()
    expect(page.locator(".git-branches")).to_contain_text("fix/checkout-total")


def test_the_range_presets_swap_the_panel_in_place(browser_page, demo):
    page = browser_page
    first = Session.objects.filter(project=WEBSHOP).first()
    open_page(page, first.project_url)
    page.evaluate("window.notReloaded = true")
    page.locator(".range-presets a", has_text="7 days").click()
    expect(page.locator(".range-presets a.current")).to_have_text("7 days")
    assert "_range=7" in page.url
    assert page.evaluate("window.notReloaded") is True
