"""Exports: a self-contained HTML file and Markdown, both the latest thread in order."""

import re
from html.parser import HTMLParser

import pytest
from django.http import StreamingHttpResponse
from django.urls import reverse

from sessionviewer import export as exports
from sessionviewer import render, transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import layout
from sessionviewer.transcripts import page as transcript_page

from .fixture_files import index_fixture
from .pages import detail_url, page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


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


def export(client, session, kind, **params):
    response = client.get(reverse(f"session-export-{kind}", args=[session.id]), params)
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment; filename=")
    return response.getvalue().decode()


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
    body = client.get(detail_url(checkout)).content.decode()
    assert reverse("session-export-md", args=[checkout.id]) in body


def test_markdown_export_shows_slash_commands_and_the_summary_once(client, demo, viewer, checkout):
    body = export(client, checkout, "md")
    assert "## command · 2026-03-04 14:04:10\n\n` /compact `" in body
    assert "<local-command" not in body and "<command-name>" not in body
    assert body.count("Primary Request and Intent") == 1


def test_html_export_shows_slash_commands_as_commands(client, demo, viewer, checkout):
    body = export(client, checkout, "html")
    assert '<p class="command-line"><code>/compact</code></p>' in body
    assert "&lt;command-name&gt;" not in body
    assert body.count("Primary Request and Intent") == 1


def test_markdown_export_shows_an_empty_error_turn(client, tmp_path, viewer):
    session = index_fixture(
        tmp_path,
        "openclaw",
        "pi_v3_all_kinds.jsonl",
        "agents/main/sessions",
        "9a9a9a9a-0000-4000-8000-00000000000a",
    )
    assert "**Error:** fetch failed" in export(client, session, "md")


# A meta line of the harness that is none of its commands, outputs, caveats or interruptions.
HARNESS_META = (
    '{"parentUuid":"u-5","isSidechain":false,"type":"user","isMeta":true,"uuid":"u-6",'
    '"sessionId":"11111111-1111-4111-8111-111111111111","timestamp":"2026-02-10T23:00:04.000Z",'
    '"message":{"role":"user","content":"<system-reminder>Plan mode is on.</system-reminder>"}}\n'
)


def test_a_harness_line_is_named_alike_on_the_page_and_in_the_markdown_export(client, tmp_path, viewer):
    session = index_fixture(
        tmp_path,
        "claude_code",
        "local_command_wrappers.jsonl",
        "projects/-home-user-project",
        "11111111-1111-4111-8111-111111111111",
    )
    with open(session.path, "a") as file:
        file.write(HARNESS_META)
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    headings = re.findall(r"^## (.+?) · 2026-", export(client, session, "md", _all="1"), re.M)
    shown = page(client, detail_url(session), _all="1")
    for kind in ("command", "output", "caveat", "meta"):
        assert layout.harness_who(kind) in headings, kind
        assert f">{layout.harness_who(kind)}<" in shown, kind


# --- What the page shows, and everything on request ---------------------------------------------------


@pytest.mark.parametrize("kind", ["html", "md"])
def test_an_export_leaves_out_the_noise_the_page_hides(client, demo, viewer, checkout, kind):
    body = export(client, checkout, kind)
    assert "Compacted (ctrl+o to see full summary)" not in body  # a local command's output
    assert "file-history-snapshot" not in body
    assert "The regression test passes" in body


@pytest.mark.parametrize("kind", ["html", "md"])
def test_an_export_with_all_has_every_entry(client, demo, viewer, checkout, kind):
    body = export(client, checkout, kind, _all=1)
    assert "Compacted (ctrl+o to see full summary)" in body
    assert "file-history-snapshot" in body


def test_an_export_refuses_a_bad_all_naming_it(client, demo, viewer, checkout):
    response = client.get(reverse("session-export-md", args=[checkout.id]), {"_all": "2"})
    assert response.status_code == 400
    assert "_all" in response.content.decode()


def test_the_page_showing_every_entry_links_the_exports_of_every_entry(client, demo, viewer, checkout):
    body = page(client, detail_url(checkout), _all=1)
    assert reverse("session-export-md", args=[checkout.id]) + "?_all=1" in body
    hidden = page(client, detail_url(checkout), _all=0)
    assert f'href="{reverse("session-export-md", args=[checkout.id])}"' in hidden


def test_markdown_export_shows_one_reply_as_one_message_with_each_result_under_its_call(
    client, demo, viewer, checkout
):
    body = export(client, checkout, "md")
    t = transcripts.transcript(checkout)
    replies = {item.entry.message_id for item in t.items if item.entry.role == "assistant"}
    assert body.count("## assistant") == len(replies - {""})
    call = body.index("**Tool call `Bash`**")
    assert call < body.index("```console\n$ pytest -q\n```") < body.index("**Tool result**", call)


def test_markdown_export_shows_a_written_file_as_code_in_its_language(client, demo, viewer):
    session = next(s for s in Session.objects.all() if "Add a cart page" in s.display_title)
    body = export(client, session, "md")
    assert re.search(r"\*\*Tool call `Write`\*\* \(`[^`]+`\)\n\n` [^`]+\.py `\n\n```py\n", body)


def test_html_export_has_a_print_stylesheet_inline(client, demo, viewer, checkout):
    body = export(client, checkout, "html")
    [style] = re.findall(r"<style>(.*?)</style>", body, re.S)
    assert "@media print" in style and "details::details-content" in style
    # The dark palette is for screens: on paper the page stays black on white.
    assert "@media (prefers-color-scheme: dark)" not in style


# --- Streamed, a chunk at a time -----------------------------------------------------------------------


@pytest.fixture
def rows_made(monkeypatch):
    """How many times a chunk of rows was made, and each chunk a message long."""
    made = []
    rows_for = transcript_page.rows_for

    def counting(*args, **kwargs):
        made.append(kwargs.get("limit"))
        return rows_for(*args, **kwargs)

    monkeypatch.setattr(transcript_page, "rows_for", counting)
    monkeypatch.setattr(exports, "CHUNK", 1)
    return made


@pytest.mark.parametrize("kind", ["html", "md"])
def test_an_export_is_streamed_a_chunk_at_a_time_as_it_is_read(
    client, demo, viewer, checkout, rows_made, kind
):
    response = client.get(reverse(f"session-export-{kind}", args=[checkout.id]))
    assert isinstance(response, StreamingHttpResponse)
    parts = iter(response.streaming_content)
    head = next(parts).decode()
    assert rows_made == []  # the head is sent before any row is made
    assert "one cent off" in head
    next(parts)
    assert rows_made == [1]
    rest = b"".join(parts).decode()
    assert len(rows_made) > 5  # one message a chunk
    assert "The regression test passes" in rest


def test_an_export_stops_with_a_note_when_its_thread_is_built_again(
    client, demo, viewer, checkout, monkeypatch
):
    transcripts.transcript(checkout)
    transcripts.clear_cache()  # read back from its snapshot, as a long session is

    def rebuilt(t, start, ahead):
        raise transcripts.StaleSnapshot("built again")

    monkeypatch.setattr(exports.transcripts, "walk_to", rebuilt)
    body = export(client, checkout, "html")
    assert exports.REBUILT in body
    assert body.rstrip().endswith("</html>")


def test_a_walk_forgets_the_entries_before_it_and_reads_those_ahead(demo, checkout):
    transcripts.transcript(checkout)
    transcripts.clear_cache()
    t = transcripts.transcript_to_walk(checkout)
    assert t is not transcripts.transcript(checkout)  # its own copy: the cached one is left alone
    items = t.items
    entries = [items[i].entry for i in range(len(items))]
    transcripts.walk_to(t, 5, 3)
    assert set(items.made) == set(range(5, len(items)))
    assert min(items.source.loaded) == entries[5].line
    transcripts.walk_to(t, 10, 4)
    assert (
        {entries[i].line for i in range(10, 14)} <= set(items.source.loaded) <= {e.line for e in entries[10:]}
    )
    assert items[2].entry.id == entries[2].id  # asked for again, read again


def test_an_html_export_keeps_none_of_the_html_it_made_for_the_pages(client, demo, viewer, checkout):
    render.MEMO.clear()
    body = export(client, checkout, "html")
    assert '<div class="md">' in body  # it rendered Markdown
    assert len(render.MEMO) == 0
