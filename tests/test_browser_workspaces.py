"""The persona editor in a browser: live preview, a conflict between two tabs, restoring a revision."""

from __future__ import annotations

import pytest
from django.urls import reverse

from sessionviewer.models import Revision

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

ALICE = "alice@example.com"


def open_page(page, path: str) -> None:
    page.goto(page.live_server_url + path)


def type_text(page, text: str) -> None:
    textarea = page.locator("textarea[name=text]")
    textarea.fill(text)
    textarea.press("End")  # the preview is triggered by keyup


def test_editing_a_persona_file_previews_it_and_changes_the_prompt(browser_page, memory):
    page = browser_page
    open_page(page, reverse("workspace-edit", args=[0, ALICE, "identity.md"]))
    assert "You are Fluux Agent" in page.locator("textarea[name=text]").input_value()  # from the global file
    type_text(page, "You are **Mugbot**, Alice's own helper.")
    page.wait_for_selector("#preview strong:has-text('Mugbot')")
    page.click("form.edit-form button[type=submit]")
    page.wait_for_selector("#prompt-text")
    assert page.locator("#prompt-text").inner_text().startswith("You are **Mugbot**, Alice's own helper.")
    assert f"{ALICE}/identity.md" in page.locator(".kind-identity .source").inner_text()
    assert (memory / ALICE / "identity.md").read_text() == "You are **Mugbot**, Alice's own helper."


def test_a_save_from_a_second_tab_shows_the_conflict(browser_page, memory):
    first = browser_page
    second = first.context.new_page()
    second.live_server_url = first.live_server_url
    url = reverse("workspace-global-edit", args=[0, "instructions.md"])
    open_page(first, url)
    open_page(second, url)

    type_text(first, "Rules:\n- Saved in the first tab")
    first.click("form.edit-form button[type=submit]")
    first.wait_for_selector("#root-0")

    type_text(second, "Rules:\n- Saved in the second tab")
    second.click("form.edit-form button[type=submit]")
    second.wait_for_selector("#conflict")
    assert "Saved in the first tab" in second.locator(".version-disk").inner_text()
    assert "Saved in the second tab" in second.locator(".version-mine").inner_text()
    assert second.locator("#conflict .diff-added").first.inner_text() == "+- Saved in the second tab"
    assert second.locator("textarea[name=text]").input_value() == "Rules:\n- Saved in the second tab"
    assert (memory / "instructions.md").read_text() == "Rules:\n- Saved in the first tab"
    second.close()


def test_restoring_an_old_revision(browser_page, memory):
    page = browser_page
    url = reverse("workspace-edit", args=[0, ALICE, "memory.md"])
    for text in ("- first note", "- second note"):
        open_page(page, url)
        type_text(page, text)
        page.click("form.edit-form button[type=submit]")
        page.wait_for_selector("#prompt-text")
    first = Revision.objects.order_by("id").first()

    open_page(page, url)
    page.click(f"#history a[href='{reverse('workspace-revision', args=[first.id])}']")
    page.wait_for_selector(".restore-form")
    assert "+- first note" in page.locator("pre.diff").first.inner_text()
    page.click(".restore-form button[type=submit]")
    page.wait_for_selector("#prompt-text")
    assert "## Notes and memory\n- first note" in page.locator("#prompt-text").inner_text()
    assert (memory / ALICE / "memory.md").read_text() == "- first note"
    assert Revision.objects.latest("id").after == "- first note"
