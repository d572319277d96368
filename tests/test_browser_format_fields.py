"""What readers read, in a real browser: an unknown entry folded with its raw JSON, the
provider beside the model, a fork's copies linked to its parent."""

from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from sessionviewer import transcripts

from .browser import open_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def fresh_cache():
    transcripts.clear_cache()


def screenshot(page, locator, name: str) -> None:
    # SCREENSHOTS=folder keeps a picture of what a test looked at, for a person to check.
    if folder := os.environ.get("SCREENSHOTS"):
        locator.screenshot(path=os.path.join(folder, name))


def test_an_unknown_entry_opens_to_its_raw_json(browser_page, unknown):
    page = browser_page
    open_page(page, unknown.get_absolute_url())
    row = page.locator("#entry-x-1")
    expect(row.locator(".who")).to_have_text("unknown entry · brand-new-record")
    expect(row.locator("details.unknown-entry pre")).not_to_be_visible()  # folded
    row.locator("details.unknown-entry > summary").click()
    expect(row.locator("details.unknown-entry pre")).to_be_visible()
    expect(row.locator("details.unknown-entry pre")).to_contain_text('"answer": 42')
    expect(page.locator("dd.unknown-entries")).to_contain_text("brand-new-record × 1")
    screenshot(page, page.locator("main"), "unknown-entry.png")


def test_a_reply_shows_its_provider_beside_its_model_and_copies_link_to_the_parent(browser_page, fork):
    page = browser_page
    open_page(page, fork.get_absolute_url())
    head = page.locator("#entry-f0000002 .entry-head")
    expect(head.locator(".model")).to_have_text("gpt-5")
    expect(head.locator(".provider")).to_have_text("openai")
    assert "via" in page.evaluate(
        "getComputedStyle(document.querySelector('#entry-f0000002 .provider'), '::before').content"
    )
    expect(page.locator(".thread-problems")).to_have_count(0)
    screenshot(page, page.locator("main"), "provider-and-fork.png")
    page.locator("#entry-p0000004 a.copied-from").click()
    expect(page).to_have_url(
        f"{page.live_server_url}{fork.parent.get_absolute_url()}?entry=p0000004#entry-p0000004"
    )
    expect(page.locator("#entry-p0000004")).to_contain_text("Two files")
