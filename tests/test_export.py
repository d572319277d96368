"""Exports: a self-contained HTML file and Markdown, both the latest thread in order."""

import re
from html.parser import HTMLParser

import pytest
from django.urls import reverse

from sessionviewer import transcripts
from sessionviewer.models import Session
from tests import test_pages

pytestmark = pytest.mark.django_db

# Fixtures shared with test_pages: the demo index and a clean thread cache (viewer is in conftest).
demo = test_pages.demo
fresh_cache = test_pages.fresh_cache


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls: list[tuple[str, str, str]] = []  # (tag, attribute, url)
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.urls.append((tag, name, value))


def export(client, session, kind):
    response = client.get(reverse(f"session-export-{kind}", args=[session.id]))
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment; filename=")
    return response.content.decode()


@pytest.fixture
def checkout():
    return next(s for s in Session.objects.all() if "one cent off" in s.display_title)


def test_html_export_has_inline_styles_and_no_script(client, demo, viewer, checkout):
    body = export(client, checkout, "html")
    parser = Links()
    parser.feed(body)
    assert "script" not in parser.tags
    assert "link" not in parser.tags  # no stylesheet to fetch
    assert "<style>" in body and ".entry.user" in body


def test_html_export_requests_nothing_from_other_hosts(client, demo, viewer, checkout):
    body = export(client, checkout, "html")
    parser = Links()
    parser.feed(body)
    # Links inside rendered messages may point anywhere; nothing else may, and nothing is loaded.
    assert all(not url.startswith(("http:", "https:", "//")) for tag, _, url in parser.urls if tag != "a")
    assert all(not url.startswith("/") for tag, _, url in parser.urls if tag != "a")
    assert "/static/" not in body


def test_html_export_shows_the_whole_thread_with_anchors(client, demo, viewer, checkout):
    body = export(client, checkout, "html")
    t = transcripts.transcript(checkout)
    assert f'id="{transcripts.anchor(t.thread.leaf_id)}"' in body
    assert "Context compacted" in body


def test_markdown_export_has_the_messages_in_thread_order(client, demo, viewer, checkout):
    body = export(client, checkout, "md")
    assert body.startswith(f"# {checkout.display_title}")
    texts = [
        "The checkout total is one cent off",
        "## Compaction",
        "Add a regression test",
        "The regression test passes",
    ]
    positions = [body.index(text) for text in texts]
    assert positions == sorted(positions)
    assert "**Tool call `Task`**" in body


def test_markdown_export_fences_hold_backticks_in_output(client, demo, viewer):
    session = next(s for s in Session.objects.all() if "Add a cart page" in s.display_title)
    body = export(client, session, "md")
    # Every fence opened is closed: an even number of fence lines of each length.
    fences = re.findall(r"^(`{3,})$", body, re.M)
    assert len(fences) % 2 == 0


def test_export_needs_login(client, demo, checkout):
    response = client.get(reverse("session-export-html", args=[checkout.id]))
    assert response.status_code == 302


def test_detail_page_offers_the_exports(client, demo, viewer, checkout):
    body = client.get(test_pages.detail_url(checkout)).content.decode()
    assert reverse("session-export-md", args=[checkout.id]) in body


def test_markdown_export_shows_slash_commands_and_the_summary_once(client, demo, viewer, checkout):
    body = export(client, checkout, "md")
    assert "## command · 2026-03-04 14:04:10\n\n` /compact `" in body
    assert "## command output" in body and "Compacted (ctrl+o to see full summary)" in body
    assert "<local-command" not in body and "<command-name>" not in body
    assert body.count("Primary Request and Intent") == 1


def test_html_export_shows_slash_commands_as_commands(client, demo, viewer, checkout):
    body = export(client, checkout, "html")
    assert '<p class="command-line"><code>/compact</code></p>' in body
    assert "&lt;command-name&gt;" not in body
    assert body.count("Primary Request and Intent") == 1


def test_markdown_export_shows_an_empty_error_turn(client, tmp_path, viewer):
    session = test_pages.index_fixture(
        tmp_path,
        "openclaw",
        "pi_v3_all_kinds.jsonl",
        "agents/main/sessions",
        "9a9a9a9a-0000-4000-8000-00000000000a",
    )
    assert "**Error:** fetch failed" in export(client, session, "md")
