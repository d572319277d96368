"""The pages a web host without the files shows in their place, in a browser: the read-only
editor of a memory tree on another machine, and the raw download's 404 naming the machine.
At 390 px and wide, light and dark, neither scrolls sideways."""

from __future__ import annotations

import shutil

import pytest
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import MemorySnapshot, Session, Source
from sessionviewer.roots import RootSpec

from .conftest import SCREENSHOTS
from .demo_index import DEMO

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALICE = "alice@example.com"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [1280, 390])
def test_the_pages_in_place_of_the_files_fit_and_name_the_machine(
    browser_page, memory, tmp_path, width, scheme
):
    claude = shutil.copytree(DEMO / "claude/projects", tmp_path / "claude")
    index_roots([RootSpec(claude, "claude_code"), RootSpec(memory, "fluux_xmpp")], memory=[memory])
    Source.objects.update(machine="fluux-host-with-a-rather-long-name-7")
    MemorySnapshot.objects.update(machine="fluux-host-with-a-rather-long-name-7")  # its tree's indexer
    session = Session.objects.filter(format="claude_code").first()
    memory.rename(tmp_path / "memory-elsewhere")
    claude.rename(tmp_path / "claude-elsewhere")
    page = browser_page
    page.set_viewport_size({"width": width, "height": 900})
    page.emulate_media(color_scheme=scheme)
    for name, url in (
        ("editor", reverse("workspace-edit", args=[0, ALICE, "memory.md"])),
        ("raw", reverse("api-session-raw", args=[session.id])),
    ):
        page.goto(page.live_server_url + url)
        assert "fluux-host-with-a-rather-long-name-7" in page.inner_text("main")
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / f"without-files-{name}-{width}-{scheme}.png"), full_page=True)
        assert (
            page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth") <= 0
        )
    page.goto(page.live_server_url + reverse("workspace-edit", args=[0, ALICE, "memory.md"]))
    assert page.locator("fieldset[disabled] textarea").count() == 1
    assert page.get_by_role("button", name="Save").count() == 0
