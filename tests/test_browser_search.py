"""Search in a real browser: hits grouped by session, their order and filters in place, a hit opened at its entry."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessionviewer.search import matching_entries

from .browser import open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_search_groups_hits_by_session_and_filters_them_in_place(browser_page, demo):
    page = browser_page
    open_page(page, "/")
    page.locator("#search-box").fill("the")
    page.keyboard.press("Enter")
    sessions = page.locator(".hit-session")
    expect(sessions.first).to_be_visible()
    hits = matching_entries("the")
    total, in_sessions = hits.count(), hits.values("session_id").distinct().count()
    heading = page.locator("#hits-title .count")
    expect(heading).to_contain_text(f"{total} hits in {in_sessions} sessions")
    # Most hits first: each session's count is no more than the one above it.
    counts = [
        int(re.match(r"\d+", text).group()) for text in sessions.locator(".hit-count").all_inner_texts()
    ]
    assert counts == sorted(counts, reverse=True) and len(counts) == 10
    titles = sessions.locator("h3 > a").all_inner_texts()
    assert len(set(titles)) == len(titles)

    page.evaluate("window.notReloaded = true")
    page.locator(".hit-sort a", has_text="Newest").click()
    expect(page.locator(".hit-sort a.selected")).to_have_text("Newest")
    assert "_hits_sort=newest" in page.url
    page.locator('[data-facet="who"] a', has_text="User").click()
    expect(page.locator('[data-facet="who"] a.selected')).to_contain_text("User")
    assert page.evaluate("window.notReloaded") is True  # htmx swapped the hits, no page load
    user_hits = hits.filter(role="user").count()
    expect(heading).to_contain_text(f"{user_hits} hit")
    for label in page.locator(".hit-link").all_inner_texts():
        assert label.startswith("User")

    hit = page.locator(".hit-link").first
    hit.click()
    page.wait_for_url("**/sessions/**")
    fragment = page.url.split("#", 1)[1]
    expect(page.locator(f"#{fragment}")).to_be_in_viewport()
    expect(page.locator("#hit-bar .hit-count")).to_contain_text(re.compile(r"^Hit \d+ of \d+ for the$"))


def test_the_search_help_says_why_there_is_no_relevance_order(browser_page, demo):
    page = browser_page
    open_page(page, "/?q=cart")
    help_text = page.locator("#search-help")
    help_text.locator("summary").click()
    expect(help_text).to_contain_text("no relevance score such as bm25")
