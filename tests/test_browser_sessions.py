"""The transcript browser in a real browser: facets in place, search to the hit, folds, branches, scrolling."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec

from .browser import open_page
from .demo_index import titled
from .go_agent_files import go_line, go_tool_line, write_go_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_facet_click_filters_the_table_in_place(browser_page, demo):
    page = browser_page
    open_page(page, "/")
    expect(page.locator("#session-table .count").last).to_contain_text("17 sessions · subagents under")
    page.evaluate("window.notReloaded = true")
    page.locator('[data-facet="format"] a', has_text="Go agent").click()
    expect(page.locator("#session-table .count").last).to_contain_text("2 sessions")
    assert "format=go_agent" in page.url
    assert page.evaluate("window.notReloaded") is True  # htmx swapped the table, no page load


def test_search_lands_on_the_hit(browser_page, demo):
    page = browser_page
    open_page(page, "/")
    page.keyboard.press("/")
    page.keyboard.type("rounds half")
    page.keyboard.press("Enter")
    hit = page.locator(".hit-link").first
    expect(hit).to_be_visible()
    expect(page.locator(".hit mark").first).to_have_text("rounds", ignore_case=True)
    hit.click()
    page.wait_for_url("**/sessions/**")
    fragment = page.url.split("#", 1)[1]
    expect(page.locator(f"#{fragment}")).to_be_in_viewport()
    expect(page.locator("#hit-bar .hit-count")).to_contain_text(
        re.compile(r"^Hit \d+ of \d+ for rounds half$")
    )
    expect(page.locator("li.entry mark.hit").first).to_be_attached()


def test_a_tool_result_expands_and_a_compaction_summary_unfolds(browser_page, demo):
    page = browser_page
    open_page(page, titled("Add a cart page").get_absolute_url())
    output = page.locator("details.output, details.read-rest").first  # a Read's whole file folds too
    expect(output.locator("pre")).to_be_hidden()
    output.locator("summary").click()
    expect(output.locator("pre")).to_be_visible()

    open_page(page, titled("one cent off").get_absolute_url())
    page.keyboard.press("c")  # the next compaction, wherever it is: past the first screen here
    summary = page.locator(".compaction-banner details.summary").first
    expect(summary.locator(".md")).to_be_hidden()
    summary.locator("summary").click()
    expect(summary.locator(".md")).to_contain_text("Primary Request and Intent")
    page.keyboard.press("j")
    expect(page.locator("li.entry.focused")).to_have_count(1)


def test_the_branch_switcher_opens_the_other_branch(browser_page, demo):
    page = browser_page
    open_page(page, titled("Add a cart page").get_absolute_url())
    expect(page.locator(".branches").first).to_contain_text("Branch 2 of 2")
    page.locator(".branches a.prev").first.click()
    expect(page.locator(".branches").first).to_contain_text("Branch 1 of 2")
    assert "leaf=" in page.url


def test_a_long_session_loads_to_the_end_as_it_scrolls(browser_page, tmp_path):
    root = tmp_path / "go"
    write_go_session(root, 600)
    transcripts.clear_cache()
    index_roots([RootSpec(root, "go_agent")])
    page = browser_page
    open_page(page, Session.objects.get().get_absolute_url())
    expect(page.locator("li.entry")).to_have_count(transcripts.FIRST_SCREEN)
    last = page.locator("#entry-m00600")
    for _ in range(601 // transcripts.CHUNK + 2):
        if last.count():
            break
        shown = page.locator("li.entry").count()
        page.locator("#entry-chunk").scroll_into_view_if_needed()  # "revealed" fetches the next chunk
        # A locator, not wait_for_function: the page's CSP refuses the eval that would need.
        page.locator("li.entry").nth(shown).wait_for(state="attached")
    expect(last).to_be_attached()
    expect(page.locator("li.entry")).to_have_count(600)  # every message; the session header is hidden
    expect(page.locator("#live-poller")).to_be_attached()


def test_j_and_k_move_between_messages_and_slash_focuses_search(browser_page, demo):
    page = browser_page
    open_page(page, titled("Add a cart page").get_absolute_url())
    entries = page.locator("li.entry")
    first, second = entries.nth(0).get_attribute("id"), entries.nth(1).get_attribute("id")
    page.keyboard.press("j")
    expect(page.locator("li.entry.focused")).to_have_attribute("id", first)
    page.keyboard.press("j")
    expect(page.locator("li.entry.focused")).to_have_attribute("id", second)
    page.keyboard.press("k")
    expect(page.locator("li.entry.focused")).to_have_attribute("id", first)
    page.keyboard.press("/")
    expect(page.locator("#site-search")).to_be_focused()
    page.keyboard.press("j")  # typed into the box, not a move
    expect(page.locator("#site-search")).to_have_value("j")
    expect(page.locator("li.entry.focused")).to_have_attribute("id", first)


def test_the_activity_charts_read_in_dark_mode(browser_page, demo):
    page = browser_page
    page.emulate_media(color_scheme="dark")
    open_page(page, "/activity/")
    bar = page.locator("#chart-sessions_per_format rect.bar").first
    expect(bar).to_be_visible()
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    label = page.evaluate("getComputedStyle(document.querySelector('.chart text')).fill")
    assert background != label  # text drawn in the page's foreground, not its background


def test_a_slash_command_reads_as_a_command_in_the_transcript(browser_page, demo):
    page = browser_page
    url = titled("one cent off").get_absolute_url()
    open_page(page, url)
    expect(page.locator("li.entry.command .command-line code")).to_have_text("/compact")
    expect(page.locator("li.entry.output")).to_have_count(0)  # its output waits behind "show all"
    page.get_by_role("link", name=re.compile(r"^Show all \d+ entries$")).click()
    expect(page.locator("li.entry.output pre")).to_contain_text("Compacted")
    expect(page.locator("details.harness-text").first).not_to_have_attribute("open", "")


def test_a_tool_result_written_after_the_page_opened_appears_under_its_call(browser_page, tmp_path):
    root = tmp_path / "go"
    path = write_go_session(root, 3)
    with path.open("ab") as handle:
        handle.write(go_tool_line(4, "m00003", "call-1"))
    transcripts.clear_cache()
    index_roots([RootSpec(root, "go_agent")])
    page = browser_page
    open_page(page, Session.objects.get().get_absolute_url())
    call = page.locator("#entry-m00004 .tool-call")
    expect(call.locator(".no-result")).to_have_count(1)
    with path.open("ab") as handle:
        handle.write(go_tool_line(5, "m00004", "call-1", "polled-in output"))
        handle.write(go_line(6, "m00005", "assistant", "Seen it."))
    index_roots([RootSpec(root, "go_agent")])
    # The poller asks every 5 s: the result takes the place its call kept, and has no row of its own.
    expect(page.locator("#entry-m00006")).to_be_attached(timeout=12_000)
    expect(call.locator(".tool-result")).to_contain_text("polled-in output")
    expect(call.locator(".no-result")).to_have_count(0)
    expect(page.locator("li#entry-m00005")).to_have_count(0)
    expect(page.locator("#live-poller")).to_be_attached()


def test_the_list_nests_subagents_lists_them_flat_and_takes_a_one_day_range(browser_page, demo):
    page = browser_page
    open_page(page, "/")
    child = Session.objects.get(kind="subagent")
    nested = page.locator("tr.nested")
    expect(nested).to_have_count(1)
    expect(nested).to_contain_text(child.display_title[:30])
    page.get_by_role("link", name="list them flat").click()
    expect(page.locator("tr.nested")).to_have_count(0)
    expect(page.locator("#session-table .count").last).to_contain_text("18 sessions")
    day = child.updated_at.date().isoformat()
    page.fill('input[name="updated_since"]', day)
    page.fill('input[name="updated_until"]', day)
    page.get_by_role("button", name="Apply").click()
    page.wait_for_url(re.compile(f"updated_until={day}"))
    expect(page.locator("table.sessions")).to_contain_text(child.display_title[:30])


LINES = """(el) => {
    // How many lines an element's text takes: the distinct tops of its text's boxes.
    const range = document.createRange();
    range.selectNodeContents(el);
    return new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top))).size;
}"""


def test_the_list_fits_1280_px_with_short_headers_and_names_kept_whole(browser_page, demo):
    page = browser_page
    open_page(page, "/?_flat=1")
    table = page.locator("table.sessions")
    assert table.evaluate("t => t.getBoundingClientRect().width <= t.parentElement.clientWidth")
    headers = [
        (th.inner_text(), th.evaluate(LINES))
        for th in page.locator("table.sessions th").all()
        if th.is_visible()
    ]
    assert [label for label, lines in headers if lines > 2] == []
    models = page.locator("table.sessions .model").all()
    assert models and [m.inner_text() for m in models if m.evaluate(LINES) > 1] == []
    # Each name of a path or JID (a text between two <wbr>) sits on one line.
    broken = page.evaluate(
        """() => [...document.querySelectorAll('table.sessions td:nth-child(3)')].flatMap(td => {
            const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
            const names = [];
            while (walker.nextNode()) names.push(walker.currentNode);
            return names.filter(text => {
                const range = document.createRange();
                range.selectNodeContents(text);
                return new Set([...range.getClientRects()].map(r => Math.round(r.top))).size > 1;
            }).map(text => text.textContent);
        })"""
    )
    assert broken == []
