"""An OpenClaw agent database's sessions in a real browser: the list names them, the page
reads like a JSONL session's, a reset window leads to the window before it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec
from tests.openclaw_store_files import AgentStore, header, said

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def agent_database(tmp_path, settings):
    store = AgentStore(tmp_path / "openclaw")
    store.window("w1", key="agent:main:telegram:direct:424242001")
    store.conversation("w1", "telegram", "direct", "424242001", "Dana")
    store.events(
        "w1",
        header("w1"),
        said("p1", "user", "Is the harbour poster back?"),
        said("r1", "assistant", "Yes: 12 prints.", "p1"),
    )
    store.window("w2", key="agent:main:telegram:direct:424242001", previous="w1", reason="reset")
    store.events("w2", header("w2"), said("p2", "user", "Any orders overnight?"))
    root = tmp_path / "openclaw" / "agents"
    settings.SESSIONVIEWER_ROOTS = [f"openclaw={root}"]
    transcripts.clear_cache()
    index_roots([RootSpec(root, "openclaw")])
    return {key: Session.objects.get(path__endswith="#" + key) for key in ("w1", "w2")}


def test_a_database_session_opens_from_the_list_and_its_reset_leads_back(browser_page, agent_database):
    page = browser_page
    page.goto(page.live_server_url + "/")
    page.get_by_role("link", name="Any orders overnight?").click()
    expect(page.locator("main")).to_contain_text("Any orders overnight?")
    expect(page.get_by_role("link", name="Raw file")).to_have_count(0)  # no file of its own
    page.get_by_role("link", name="Dana").first.click()
    expect(page).to_have_url(page.live_server_url + agent_database["w1"].get_absolute_url())
    expect(page.locator("main")).to_contain_text("Yes: 12 prints.")
