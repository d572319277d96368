"""Possible secrets on the transcript in a real browser: the header's count, s and S stepping
through the entries holding one, and reveal replacing a mask with the value."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.roots import RootSpec

from .browser import open_page
from .fixture_files import CLAUDE_PROJECT, FIXTURES, index_fixture

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SHOTS = Path("/tmp/findings-shots")
AXE = Path(__file__).resolve().parents[1] / "node_modules" / "axe-core" / "axe.min.js"
AXE_RUN = (
    "axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa']}, resultTypes: ['violations']})"
)


def axe_violations(page) -> list[str]:
    """What axe-core finds against WCAG 2 A and AA on the page, as test_browser_sweep.py runs it."""
    page.evaluate(AXE.read_text())
    return [
        f"{violation['id']} at {node['target']}"
        for violation in page.evaluate(AXE_RUN)["violations"]
        for node in violation["nodes"]
    ]


@pytest.fixture(autouse=True)
def fresh_cache():
    transcripts.clear_cache()


@pytest.fixture
def with_secrets(tmp_path):
    return index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")


def test_s_and_shift_s_step_through_the_entries_holding_a_possible_secret(browser_page, with_secrets):
    page = browser_page
    open_page(page, with_secrets.get_absolute_url())
    expect(page.locator("#findings summary")).to_contain_text("4 possible secrets")
    page.keyboard.press("s")
    expect(page.locator("li.focused")).to_have_attribute("data-line", "1")
    page.keyboard.press("s")
    expect(page.locator("li.focused")).to_have_attribute("data-line", "2")
    page.keyboard.press("s")  # line 2's tool input
    expect(page.locator("li.focused")).to_have_attribute("data-line", "2")
    page.keyboard.press("s")  # line 3, the tool's output, shows in line 2's row
    expect(page.locator("li.focused")).to_have_attribute("data-line", "2")
    page.keyboard.press("S")
    page.keyboard.press("S")
    page.keyboard.press("S")
    expect(page.locator("li.focused")).to_have_attribute("data-line", "1")


def test_reveal_shows_the_value_in_place_of_its_mask(browser_page, with_secrets):
    page = browser_page
    open_page(page, with_secrets.get_absolute_url())
    page.locator("#findings summary").click()
    first = page.locator("#findings li").first
    expect(first.locator("code.masked")).to_have_text("sk-a*******************************Hd")
    first.locator("button.reveal").click()
    expect(first.locator("code.masked")).to_have_text("sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sBq7Hd")
    expect(first.locator("button.reveal")).to_have_count(0)


def test_not_a_secret_marks_the_finding_and_undo_takes_it_back(browser_page, with_secrets):
    page = browser_page
    open_page(page, with_secrets.get_absolute_url())
    page.locator("#findings summary").click()
    with page.expect_navigation():  # the page is drawn again
        page.locator("#findings li").first.locator("button.dismiss").click()
    page.locator("#findings summary").click()
    first = page.locator("#findings li").first
    expect(first).to_contain_text("marked not a secret")
    with page.expect_navigation():
        first.locator("button.dismiss").click()
    page.locator("#findings summary").click()
    expect(page.locator("#findings li").first).not_to_contain_text("marked not a secret")


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
@pytest.mark.parametrize("shown", ["transcript", "secrets"])
def test_the_transcript_header_and_the_secrets_page_fit_and_are_shot(
    browser_page, with_secrets, shown, width, scheme
):
    """Screenshots in /tmp/findings-shots/, to look at; and neither page scrolls sideways."""
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    if shown == "transcript":
        open_page(page, with_secrets.get_absolute_url())
        page.locator("#findings summary").click()
        expect(page.locator("#findings li")).to_have_count(4)
    else:
        open_page(page, reverse("session-secrets"))
        expect(page.locator(".secret-group")).to_have_count(4)
    scroll_width, inner_width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= inner_width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{shown}-{width}-{scheme}.png"), full_page=shown == "secrets")


@pytest.fixture
def with_and_without_secrets(tmp_path):
    """Two Claude Code sessions: one holding four possible secrets, one none."""
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude_code" / "secrets_in_every_block.jsonl", folder / "leaky.jsonl")
    shutil.copy(FIXTURES / "claude_code" / "thinking_block.jsonl", folder / "clean.jsonl")
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_lists_possible_secrets_facet_narrows_the_list_and_is_shot(
    browser_page, with_and_without_secrets, width, scheme
):
    """Screenshots in /tmp/findings-shots/list-*.png, before and after choosing the facet;
    axe-core finds nothing on either."""
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    open_page(page, reverse("session-list"))
    facet = page.locator('section.facet[data-facet="possible_secrets"]')
    if not facet.is_visible():  # a phone folds the filters
        page.locator("details.filters > summary").click()
    expect(facet.locator("h2")).to_have_text("Possible secrets")
    expect(facet.locator("li")).to_have_text("At least one 1")
    expect(page.locator("table.sessions tbody tr")).to_have_count(2)
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"list-{width}-{scheme}.png"), full_page=True)
    assert axe_violations(page) == []
    facet.locator("a").click()
    expect(page).to_have_url(f"{page.live_server_url}{reverse('session-list')}?possible_secrets=1")
    expect(page.locator("table.sessions tbody tr")).to_have_count(1)
    expect(page.locator("table.sessions tbody")).to_contain_text("4 possible secrets")
    chosen = page.locator('section.facet[data-facet="possible_secrets"] li.selected')
    if not chosen.is_visible():
        page.locator("details.filters > summary").click()
    expect(chosen).to_have_text("✕ At least one 1")
    scroll_width, inner_width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= inner_width
    page.screenshot(path=str(SHOTS / f"list-chosen-{width}-{scheme}.png"), full_page=True)
    assert axe_violations(page) == []


# --- The values masked in the transcript itself (transcripts/masks.py) ---------------------------------

ANTHROPIC = "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sBq7Hd"


@pytest.fixture
def key_twice(tmp_path):
    """The four possible secrets, then a line holding the first one again: one fingerprint, two marks."""
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    with open(folder / "s1.jsonl", "wb") as handle:
        for name in ("secrets_in_every_block.jsonl", "secrets_appended.jsonl"):
            handle.write((FIXTURES / "claude_code" / name).read_bytes())
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    from sessionviewer.models import Session

    return Session.objects.get()


def test_the_transcript_shows_each_value_masked(browser_page, key_twice):
    page = browser_page
    open_page(page, key_twice.get_absolute_url())
    marks = page.locator("#entry-list mark.secret")
    expect(marks.first).to_be_visible()
    assert ANTHROPIC not in page.locator("#entry-list").inner_text()
    fingerprint = key_twice.findings.get(line=1).fingerprint
    expect(page.locator(f'#entry-list mark.secret[data-fingerprint="{fingerprint}"]')).to_have_count(2)


def test_reveal_on_a_mark_reveals_every_mark_of_its_fingerprint_and_is_audited(browser_page, key_twice):
    from sessionviewer.models import AuditEvent

    page = browser_page
    open_page(page, key_twice.get_absolute_url())
    fingerprint = key_twice.findings.get(line=1).fingerprint
    same = page.locator(f'#entry-list mark.secret[data-fingerprint="{fingerprint}"]')
    expect(same).to_have_count(2)
    same.first.locator("button.reveal").click()
    expect(same.nth(0)).to_have_text(ANTHROPIC)
    expect(same.nth(1)).to_have_text(ANTHROPIC)
    expect(page.locator(f'button.reveal[data-fingerprint="{fingerprint}"]')).to_have_count(0)
    page.locator("#findings summary").click()
    expect(page.locator(f'#findings li[data-fingerprint="{fingerprint}"] code.masked').first).to_have_text(
        ANTHROPIC
    )
    others = page.locator("#entry-list mark.secret:not(.revealed)")
    expect(others.first).to_be_visible()  # the other fingerprints stay masked
    assert AuditEvent.objects.filter(action="reveal_secret").count() == 1


def test_s_brings_the_findings_mark_into_view(browser_page, key_twice):
    page = browser_page
    open_page(page, key_twice.get_absolute_url())
    page.keyboard.press("s")
    current = page.locator("li.focused mark.secret.current")
    expect(current).to_have_count(1)
    expect(current).to_be_in_viewport()
    page.keyboard.press("s")  # line 2: the thinking's token, in a row of its own
    expect(page.locator("li.focused")).to_have_attribute("data-line", "2")
    expect(page.locator("li.focused mark.secret.current")).to_have_count(1)
    expect(page.locator("mark.secret.current")).to_have_count(1)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [390, 1280])
def test_the_masked_transcript_fits_passes_axe_and_is_shot(browser_page, key_twice, width, scheme):
    """Screenshots in /tmp/findings-shots/masked-*.png; no sideways scroll; axe-core finds nothing."""
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    open_page(page, key_twice.get_absolute_url())
    expect(page.locator("#entry-list mark.secret").first).to_be_visible()
    scroll_width, inner_width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert scroll_width <= inner_width
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"masked-{width}-{scheme}.png"), full_page=True)
    assert axe_violations(page) == []
