"""Memory over time in a browser: a JID's timeline, its diffs and facts, its filters, and
the jump from a change to the turn that made it."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import Revision
from sessionviewer.roots import RootSpec

from .conftest import SCREENSHOTS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALICE = "alice@example.com"


def index(root: Path) -> None:
    index_roots([RootSpec(root, "fluux_xmpp")], memory=[root])


def overflow_shot(page, url: str, selector: str, name: str, width: int, scheme: str) -> int:
    """Open url at this width and colour scheme, save a screenshot of it as name, and
    return how far the page is wider than the screen (0 or less: nothing is)."""
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    page.goto(page.live_server_url + url)
    page.wait_for_selector(selector)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=False)
    return page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")


def agent_turn(root: Path, start: float) -> None:
    """One direct-chat turn as the agent runs it: knowledge.jsonl and memory.md written in
    its tool loop, then the user's message and the reply appended to history.jsonl."""
    folder = root / ALICE
    knowledge = folder / "knowledge.jsonl"
    fact = {"key": "deadline", "content": "Proofs due Friday", "ts": "2026-03-03T09:30:02+00:00"}
    knowledge.write_bytes(knowledge.read_bytes() + orjson.dumps(fact) + b"\n")
    os.utime(knowledge, (start + 2, start + 2))
    memory = folder / "memory.md"
    memory.write_text(memory.read_text() + "- Proofs are due on Friday.\n")
    os.utime(memory, (start + 2.5, start + 2.5))
    with (folder / "history.jsonl").open("ab") as history:
        for role, content, msg_id, offset in (
            ("user", "The proofs are due Friday, remember that.", "stanza-due", 4),
            ("assistant", "Noted: proofs due Friday.", "reply-due", 4.2),
        ):
            ts = datetime.fromtimestamp(start + offset, UTC).isoformat()
            line = {"type": "message", "role": role, "content": content, "msg_id": msg_id, "ts": ts}
            history.write(orjson.dumps(line) + b"\n")


@pytest.fixture
def timeline_url(memory) -> str:
    index(memory)
    agent_turn(memory, time.time() + 60)  # after the copied tree's own mtimes
    index(memory)
    return reverse("workspace-memory-timeline", args=[0, ALICE])


def test_the_timeline_shows_the_agents_change_and_jumps_to_its_turn(browser_page, timeline_url):
    page = browser_page
    page.goto(page.live_server_url + reverse("workspace-jid", args=[0, ALICE]))
    page.click("text=Memory over time")
    page.wait_for_selector("#timeline")
    latest = page.locator("li.change").first
    assert "memory.md" in latest.locator(".change-file").inner_text()
    assert latest.locator(".diff-added").inner_text() == "+- Proofs are due on Friday."
    assert (
        "Linked by time: the file changed 1.7 s before the reply" in latest.locator(".link-note").inner_text()
    )
    knowledge = page.locator("li.change", has=page.locator("code:text-is('knowledge.jsonl')")).first
    assert knowledge.locator(".fact-added").inner_text().endswith("deadline: Proofs due Friday")
    latest.locator("a.turn-link").click()
    page.wait_for_selector("[id^='e-'], .entry")
    assert "The proofs are due Friday, remember that." in page.content()
    assert "entry=stanza-due" in page.url


def test_filtering_the_timeline_by_file_replaces_the_list_in_place(browser_page, timeline_url):
    page = browser_page
    page.goto(page.live_server_url + timeline_url)
    page.select_option("select[name=file]", "knowledge.jsonl")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**file=knowledge.jsonl**")
    files = page.locator("li.change .change-file").all_inner_texts()
    assert files and set(files) == {"knowledge.jsonl"}


def test_a_global_persona_change_shows_in_the_jids_timeline_and_can_be_hidden(browser_page, memory):
    index(memory)
    later = time.time() + 60
    instructions = memory / "instructions.md"
    instructions.write_text(instructions.read_text() + "Never share API keys.\n")
    os.utime(instructions, (later, later))
    index(memory)
    page = browser_page
    page.goto(page.live_server_url + reverse("workspace-memory-timeline", args=[0, ALICE]))
    change = page.locator("li.change").first
    assert change.locator(".badge.global").inner_text() == "global"
    assert change.locator(".diff-added").inner_text() == "+Never share API keys."
    page.select_option("select[name=scope]", "own")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**scope=own**")
    assert page.locator("li.change .badge.global").count() == 0
    assert page.locator("li.change").count() > 0


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_timeline_at_each_width_and_scheme(browser_page, timeline_url, scheme, width):
    # Nothing is wider than the screen: long file names, facts and diffs wrap or scroll inside.
    assert (
        overflow_shot(
            browser_page, timeline_url, "li.change", f"memory-timeline-{width}-{scheme}", width, scheme
        )
        <= 0
    )


def test_a_change_opens_the_memory_and_prompt_as_they_were_just_after_it(browser_page, timeline_url):
    page = browser_page
    page.goto(page.live_server_url + timeline_url)
    page.locator("li.change").first.locator("a.as-of-link").click()
    page.wait_for_selector("#prompt-text")
    assert "Proofs are due on Friday." in page.locator("#prompt-text").inner_text()
    memory = page.locator("li.as-of-file", has=page.locator("code:text-is('alice@example.com/memory.md')"))
    assert "Proofs are due on Friday." in memory.locator("pre").inner_text()


def test_the_as_of_view_shows_an_editor_save_older_than_the_snapshots(browser_page, memory):
    index(memory)
    revision = Revision.of_bytes(
        None,
        b"Saved before snapshots.\n",
        machine=settings.SESSIONVIEWER_MACHINE,  # the tree's: this web host's own
        root=str(memory.resolve()),
        jid=ALICE,
        filename="context.md",
        user=None,
    )
    revision.save()
    Revision.objects.filter(id=revision.id).update(created_at=datetime(2025, 5, 20, 12, tzinfo=UTC))
    page = browser_page
    page.goto(page.live_server_url + reverse("workspace-memory-as-of", args=[0, ALICE]) + "?at=2025-05-25")
    context = page.locator("li.as-of-file", has=page.locator("code:text-is('alice@example.com/context.md')"))
    assert (
        context.locator("p.source")
        .inner_text()
        .startswith("From the editor's revision of 2025-05-20 12:00:00")
    )
    assert context.locator("pre").inner_text().strip() == "Saved before snapshots."


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_as_of_view_at_each_width_and_scheme(browser_page, timeline_url, scheme, width):
    url = reverse("workspace-memory-as-of", args=[0, ALICE])
    assert (
        overflow_shot(browser_page, url, "li.as-of-file", f"memory-as-of-{width}-{scheme}", width, scheme)
        <= 0
    )


@pytest.fixture
def leaked(memory) -> str:
    """The agent stores an API key in memory.md during a turn."""
    index(memory)
    start = time.time() + 60
    path = memory / ALICE / "memory.md"
    path.write_text(path.read_text() + "- Shop API key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv\n")
    os.utime(path, (start, start))
    index(memory)
    return reverse("workspace-memory-findings")


def test_a_leaked_key_is_flagged_and_opens_the_editor_at_its_line(browser_page, leaked):
    page = browser_page
    page.goto(page.live_server_url + reverse("workspace-memory-timeline", args=[0, ALICE]))
    flagged = page.locator("li.change.flagged").first
    assert "1 new finding" in flagged.locator(".finding-flag").inner_text()
    page.goto(page.live_server_url + leaked)
    row = page.locator("li.finding-history", has=page.locator("text=anthropic_key")).first
    assert "still there" in row.inner_text()
    row.locator("a.open-finding").click()
    page.wait_for_selector("#highlight")
    selected = page.evaluate(
        "(() => { const a = document.querySelector('textarea'); return a.value.slice(a.selectionStart, a.selectionEnd); })()"
    )
    assert selected == "- Shop API key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_findings_over_time_at_each_width_and_scheme(browser_page, leaked, scheme, width):
    name = f"memory-findings-{width}-{scheme}"
    assert overflow_shot(browser_page, leaked, "li.finding-history", name, width, scheme) <= 0


def test_a_global_finding_is_purged_from_the_findings_page(browser_page, memory):
    index(memory)
    later = time.time() + 60
    identity = memory / "identity.md"
    identity.write_text(identity.read_text() + "Deploy token: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv\n")
    os.utime(identity, (later, later))
    index(memory)
    page = browser_page
    page.goto(page.live_server_url + reverse("workspace-memory-findings"))
    row = page.locator("li.finding-history", has=page.locator(".badge.global")).first
    row.locator("a.purge-finding").click()
    page.wait_for_selector("h1:has-text('global persona files')")
    page.get_by_role("button", name="Purge").click()
    page.wait_for_selector("ul.messages")
    assert "Purged the anthropic_key" in page.content()
    # Listed still, as purged, with nothing left to purge or show.
    purged = page.locator("li.finding-history", has=page.locator(".badge.global"))
    assert purged.count() == 1
    assert "Purged on" in purged.inner_text() and purged.locator("a.purge-finding, code").count() == 0
