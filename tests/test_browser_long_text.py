"""A line of several MB in a real browser: folded, and "show the rest" loads the next part."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_show_the_rest_loads_the_next_part_of_a_long_line(browser_page, long_session):
    page = browser_page
    page.goto(page.live_server_url + long_session.get_absolute_url())
    fold = page.locator("details.long-text").first
    expect(fold).not_to_have_attribute("open", "")
    fold.locator("summary").click()
    expect(fold.locator(".terminal")).to_have_count(1)
    fold.get_by_role("link", name="Show the rest").click()
    expect(fold.locator(".terminal")).to_have_count(2)
    expect(fold.locator(".terminal").nth(1)).to_contain_text("<script>alert('rest')</script>")
    expect(fold.get_by_role("link", name="Show the rest")).to_have_count(1)  # a third part waits
