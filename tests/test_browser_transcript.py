"""The transcript page in a real browser: what the first screen shows, compactions in place,
keys that never land in a hidden row and jump to a compaction or the end, search hits marked."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from sessionviewer import transcripts
from sessionviewer.models import Session

from .browser import open_page
from .demo_index import titled

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# compacted_twice and compacted_by_command are conftest.py's, as the server-rendered tests use them.
# compacted_twice: u-1, a-1, u-2, a-2, boundary c-1, its summary s-1 (hidden), u-3, a-3,
# boundary c-2, its summary s-2 (hidden), u-4, a-4.


@pytest.fixture(autouse=True)
def fresh_cache():
    transcripts.clear_cache()


def focused_id(page) -> str:
    return page.locator("li.focused").get_attribute("id")


def test_the_first_screen_shows_the_first_prompt_then_the_session_in_order(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url())
    expect(page.locator("#entry-u-1")).to_be_in_viewport()
    expect(page.locator("#entry-u-1")).to_contain_text("first prompt: plan the release")
    tops = [
        page.locator(f"#entry-{e}").bounding_box()["y"]
        for e in ("u-1", "a-1", "a-2", "c-1", "u-3", "c-2", "a-4")
    ]
    assert tops == sorted(tops)  # what was compacted away shows where it was written


def test_the_compact_command_shows_above_its_banner(browser_page, compacted_by_command):
    page = browser_page
    open_page(page, compacted_by_command.get_absolute_url())
    command = page.locator("#entry-cmd-1").bounding_box()["y"]
    assert (
        command
        < page.locator("#entry-c-1").bounding_box()["y"]
        < page.locator("#entry-u-2").bounding_box()["y"]
    )


def test_j_and_k_step_through_every_message_and_skip_hidden_rows(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url())
    seen = []
    for _ in range(11):
        page.keyboard.press("j")
        seen.append(focused_id(page))
    assert seen == [
        "entry-u-1",
        "entry-a-1",
        "entry-u-2",
        "entry-a-2",
        "entry-c-1",
        "entry-u-3",
        "entry-a-3",
        "entry-c-2",
        "entry-u-4",
        "entry-a-4",
        "entry-a-4",
    ]
    page.keyboard.press("k")
    assert focused_id(page) == "entry-u-4"


def test_c_goes_to_the_next_compaction_and_shift_c_back(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url())
    page.keyboard.press("c")
    assert focused_id(page) == "entry-c-1"
    page.keyboard.press("c")
    assert focused_id(page) == "entry-c-2"
    page.keyboard.press("C")
    assert focused_id(page) == "entry-c-1"


def test_shift_g_goes_to_the_end(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url())
    page.keyboard.press("G")
    assert focused_id(page) == "entry-a-4"
    expect(page.locator("#entry-a-4")).to_be_in_viewport()


def test_opening_a_compaction_summary_loads_it(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url())
    summary = page.locator("#entry-c-1 details.summary")
    expect(summary).not_to_contain_text("Summary one")
    summary.locator("summary").click()
    expect(summary).to_contain_text("Summary one")


def test_question_mark_shows_the_keys(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url())
    page.keyboard.press("?")
    dialog = page.locator("#keys-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("next search hit")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


def test_search_words_are_marked_and_n_goes_to_the_next_hit(browser_page, compacted_twice):
    page = browser_page
    open_page(page, compacted_twice.get_absolute_url() + "?entry=a-3&q=done#entry-a-3")
    expect(page.locator("#hit-bar")).to_contain_text("Hit 2 of 3 for done")
    expect(page.locator("#entry-a-3 mark.hit")).to_have_text("done")
    expect(page.locator("#entry-a-3")).to_be_in_viewport()
    page.keyboard.press("n")
    page.wait_for_url(re.compile(r"entry=a-4"))
    expect(page.locator("#hit-bar")).to_contain_text("Hit 3 of 3")
    expect(page.locator("#entry-a-4 mark.hit")).to_have_text("done")
    page.keyboard.press("N")
    page.wait_for_url(re.compile(r"entry=a-3"))
    expect(page.locator("#hit-bar")).to_contain_text("Hit 2 of 3")


def test_a_message_copy_button_copies_its_text(browser_page, compacted_twice):
    page = browser_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_page(page, compacted_twice.get_absolute_url())
    button = page.locator("#entry-a-4 .entry-head button.copy")
    button.click()
    expect(button).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "Step three is done."


def test_a_subagent_opens_inline_where_its_parent_called_it(browser_page, demo):
    from sessionviewer.models import Session

    child = Session.objects.get(kind="subagent")
    page = browser_page
    open_page(page, f"{child.parent.get_absolute_url()}?entry={child.starting_call_entry()}")
    inline = page.locator("details.subagent-inline").first
    inline.locator("summary").click()
    expect(inline.locator("li.entry").first).to_be_visible()
    expect(page.locator("#live-poller")).to_have_count(1)  # the parent's own, and no second one


def test_on_a_phone_the_first_screen_shows_the_first_message_under_a_short_title(browser_page, demo):
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, titled("The checkout total is one cent off").get_absolute_url())
    lines = page.locator(".session-head h1").evaluate(
        "h => Math.round(h.getBoundingClientRect().height / parseFloat(getComputedStyle(h).lineHeight))"
    )
    assert lines <= 3
    expect(page.locator(".session-head dl.meta")).not_to_be_visible()
    expect(page.locator("#entry-list > li").first).to_be_in_viewport()
    page.get_by_text("Details", exact=True).click()
    expect(page.locator(".session-head dl.meta")).to_be_visible()


def test_at_a_desk_the_details_stay_open(browser_page, demo):
    page = browser_page
    open_page(page, titled("The checkout total is one cent off").get_absolute_url())
    expect(page.locator(".session-head dl.meta")).to_be_visible()
    expect(page.get_by_text("Details", exact=True)).not_to_be_visible()


def test_on_a_phone_no_copy_button_covers_the_text_it_copies(browser_page, demo):
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, titled("Add a cart page").get_absolute_url())
    page.wait_for_selector(".copyable > button.copy", state="attached")
    covered = page.evaluate(
        """() => [...document.querySelectorAll('.copyable > button.copy')].flatMap(button => {
            const block = button.parentElement.firstElementChild;
            const b = button.getBoundingClientRect();
            if (!b.width) return [];  // in a closed fold
            const range = document.createRange();
            range.selectNodeContents(block);
            const over = [...range.getClientRects()].some(r => r.width && r.left < b.right && b.left < r.right && r.top < b.bottom && b.top < r.bottom);
            return over ? [block.textContent.slice(0, 60)] : [];
        })"""
    )
    assert page.locator(".copyable > button.copy").count() > 0
    assert covered == []


def test_on_a_phone_a_message_copy_button_stays_beside_its_line_link(browser_page, demo):
    # A reply's head (model, tokens, cost, time) wraps at 390 px: the link and the button wrap
    # together, at the right, never the button alone at the start of a line.
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    open_page(page, titled("The checkout total is one cent off").get_absolute_url())
    page.wait_for_selector(".entry-head button.copy", state="attached")
    apart = page.evaluate(
        """() => [...document.querySelectorAll('.entry-head')].flatMap(head => {
            const link = head.querySelector('.permalink'), button = head.querySelector('button.copy');
            const l = link.getBoundingClientRect(), b = button.getBoundingClientRect();
            if (!b.width) return [];
            return Math.abs(l.top - b.top) < 8 && b.left > l.right ? [] : [head.textContent.trim().slice(0, 60)];
        })"""
    )
    assert page.locator(".entry-head button.copy").count() > 3
    assert apart == []


def test_show_all_puts_a_reads_whole_file_in_place_of_its_preview(browser_page, tmp_path):
    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec
    from tests.claude_files import write_tool_turn

    lines = "\n".join(f"{n:>6}\u2192x = {n}" for n in range(1, 13))
    call = {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"file_path": "/app/long.py"}}
    write_tool_turn(tmp_path / "projects" / "-w" / "s.jsonl", "read it", [call], {"toolu_1": lines})
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    page = browser_page
    open_page(page, Session.objects.get().get_absolute_url())
    read = page.locator(".read-file")
    expect(read.locator(".cl:visible")).to_have_count(5)
    read.locator(".read-rest > summary").click()
    expect(read.locator(".cl:visible")).to_have_count(12)  # not 17: the preview gives way
    expect(read.locator(".ln[data-n='12']")).to_be_visible()


def test_on_a_phone_an_opened_sender_chip_shows_its_json_within_the_message(browser_page, demo):
    page = browser_page
    page.set_viewport_size({"width": 390, "height": 844})
    dana = Session.objects.get(path__endswith="a999f2d9-9605-4059-9495-ac6396f0a124.jsonl")  # on Telegram
    open_page(page, dana.get_absolute_url())
    chip = page.locator("details.sender-chip").first
    chip.locator("summary").click()
    expect(chip.locator(".envelope-kind").first).to_be_visible()
    expect(chip.locator("pre.highlight").first).to_contain_text('"sender_id": "424242001"')
    overflow = chip.evaluate(
        """chip => {
            const message = chip.closest('li.entry').getBoundingClientRect();
            const envelope = chip.querySelector('.envelope').getBoundingClientRect();
            return [envelope.right - message.right, document.documentElement.scrollWidth - innerWidth];
        }"""
    )
    assert overflow[0] <= 0 and overflow[1] <= 0
