"""The transcript page reads like the session happened: one reply is one message, the
harness's noise waits behind a switch, and each compaction is a banner where it happened."""

from __future__ import annotations

import re

import pytest

from sessionviewer import readers, transcripts
from sessionviewer.transcripts import layout, store

from .fixture_files import CLAUDE_PROJECT, index_fixture
from .pages import detail_url, page


@pytest.fixture(autouse=True)
def fresh_cache():
    store.clear_cache()
    yield
    store.clear_cache()


pytestmark = pytest.mark.django_db


@pytest.fixture
def one_reply(tmp_path):
    """A prompt, then one assistant message (msg_A) written over five lines, with a
    whitespace-only line and two tool calls whose results sit between its lines, then
    a second message, a hook line, a stop-hook summary and a system reminder."""
    return index_fixture(
        tmp_path,
        "claude_code",
        "one_reply_over_many_lines.jsonl",
        CLAUDE_PROJECT,
        "22222222-2222-4222-8222-222222222222",
    )


def thread_of(body: str) -> str:
    return body.split('id="entry-list"', 1)[1]


def entry_ids(body: str) -> list[str]:
    """The ids of the rows, in page order."""
    return re.findall(r'<li id="(entry-[^"]+)"', thread_of(body))


def row(body: str, entry_id: str) -> str:
    """One row's HTML: from its <li> to the next row, list end or live poller."""
    start = body.index(f'<li id="entry-{entry_id}"')
    end = re.compile(r'<li id="entry-|<li id="live-poller"|</ol>').search(body, start + 1)
    return body[start : end.start()]


# --- One reply, one message --------------------------------------------------------------------------------


def test_the_lines_of_one_reply_show_as_one_message(client, one_reply, viewer):
    body = page(client, detail_url(one_reply))
    assert entry_ids(body) == ["entry-u-1", "entry-a-1", "entry-a-6"]
    message = row(body, "a-1")
    assert message.count('class="entry-head"') == 1
    assert message.index("List first, then read.") < message.index("Let me look around.")
    assert message.index("Let me look around.") < message.index("toolu_ls") < message.index("toolu_rd")


def test_a_reply_shows_its_usage_once_in_its_header(client, one_reply, viewer):
    body = page(client, detail_url(one_reply))
    assert row(body, "a-1").count('class="usage"') == 1
    assert thread_of(body).count('class="usage"') == 2  # msg_A and msg_B


def test_permalinks_to_every_line_of_a_reply_land_on_its_message(client, one_reply, viewer):
    message = row(page(client, detail_url(one_reply)), "a-1")
    for line in ("a-2", "a-3", "a-4", "a-5"):
        assert f'<span id="entry-{line}" class="line-anchor"></span>' in message
    body = page(client, detail_url(one_reply), entry="a-4")
    assert 'id="entry-a-4"' in row(body, "a-1")


def test_a_whitespace_only_block_shows_nothing(client, one_reply, viewer):
    message = row(page(client, detail_url(one_reply)), "a-1")
    assert '<div class="md"></div>' not in message
    assert message.count('<div class="md">') == 2  # the thinking and the one text with words


def test_tool_results_between_the_lines_of_a_reply_show_under_their_calls(client, one_reply, viewer):
    body = page(client, detail_url(one_reply))
    assert 'id="entry-r-1"' in row(body, "a-1") and 'id="entry-r-2"' in row(body, "a-1")


# --- Noise out of the way ----------------------------------------------------------------------------------


def test_hook_and_meta_lines_are_hidden_and_counted(client, one_reply, viewer):
    body = page(client, detail_url(one_reply))
    assert "hook_progress" not in thread_of(body) and "stop_hook_summary" not in thread_of(body)
    assert "The user has not asked about tests." not in body
    assert "4 entries hidden (progress, hooks, meta, empty lines)." in body  # a-2 is only whitespace
    assert "Show all 12 entries" in body


def test_showing_all_entries_shows_the_noise_and_is_remembered(client, one_reply, viewer):
    body = page(client, detail_url(one_reply), _all="1")
    assert {"entry-p-1", "entry-s-1", "entry-m-1"} <= set(entry_ids(body))
    assert 'class="entry meta noise"' in body
    assert "Showing all 12 entries." in body
    again = page(client, detail_url(one_reply))  # no parameter: the page remembers the switch
    assert "entry-p-1" in entry_ids(again)
    hidden = page(client, detail_url(one_reply), _all="0")
    assert "entry-p-1" not in entry_ids(hidden)


def test_a_permalink_to_a_hidden_entry_shows_it(client, one_reply, viewer):
    body = page(client, detail_url(one_reply), entry="s-1")
    assert "entry-s-1" in entry_ids(body) and "entry-p-1" not in entry_ids(body)


def test_noise_rule_keeps_errors_commands_and_compactions_in_sight():
    from sessionviewer.readers import Block, Entry

    CLAUDE_CODE = readers.format_of("claude_code")

    def entry(**fields):
        return Entry(id="x", parent_id=None, **fields)

    assert layout.is_noise(entry(kind="progress"), 0, CLAUDE_CODE)
    assert layout.is_noise(entry(kind="file-history-snapshot"), 0, CLAUDE_CODE)
    assert not layout.is_noise(entry(kind="system", extra={"level": "error"}), 0, CLAUDE_CODE)
    assert not layout.is_noise(entry(kind="compaction"), 0, CLAUDE_CODE)
    assert not layout.is_noise(
        entry(kind="raw", subtype="brand-new-type"), 0, CLAUDE_CODE
    )  # unknown: kept in sight
    assert layout.is_noise(
        entry(kind="message", role="user", is_meta=True, blocks=[Block("text", text="x")]), 0, CLAUDE_CODE
    )
    command = entry(kind="message", role="user", extra={"command": "/mcp"}, blocks=[Block("text", text="x")])
    assert not layout.is_noise(command, 0, CLAUDE_CODE)
    reminder = Block("text", text="<system-reminder>hush</system-reminder>")
    assert layout.is_noise(entry(kind="message", role="user", blocks=[reminder]), 0, CLAUDE_CODE)
    assert not layout.is_noise(
        entry(kind="message", role="user", blocks=[reminder, Block("text", text="hi")]), 0, CLAUDE_CODE
    )
    assert layout.is_noise(
        entry(kind="message", role="assistant", blocks=[Block("text", text=" \n")]), 0, CLAUDE_CODE
    )
    error_turn = entry(kind="message", role="assistant", extra={"stop_reason": "error"})
    assert not layout.is_noise(error_turn, 0, CLAUDE_CODE)


# --- Compactions where they happened ------------------------------------------------------------------------


def test_the_page_shows_every_message_in_order_with_each_compaction_where_it_happened(
    client, compacted_twice, viewer
):
    body = page(client, detail_url(compacted_twice))
    assert entry_ids(body) == [
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
    ]
    assert "compacted-run" not in body and "earlier entries</span>, compacted" not in body


def test_a_compaction_banner_gives_its_number_trigger_and_tokens_before(client, compacted_twice, viewer):
    banner = row(page(client, detail_url(compacted_twice)), "c-2")
    assert "<strong>Context compacted (2)</strong> · trigger: auto · 160,000 tokens before" in banner


def test_every_compaction_summary_starts_folded_and_loads_when_opened(client, compacted_twice, viewer):
    url = detail_url(compacted_twice)
    body = page(client, url)
    assert "Summary one" not in body and "Summary two" not in body
    assert '<details class="summary" open>' not in body
    assert f'<div class="md summary-later" hx-get="{url}?_summary=4" hx-trigger="intersect once"' in body
    response = client.get(url, {"_summary": "4"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "<html" not in response.content.decode()
    assert (
        "<p>This session is being continued from a previous conversation. Summary one"
        in response.content.decode()
    )
    assert client.get(url, {"_summary": "5"}).status_code == 404  # item 5 is no compaction


def test_a_permalink_to_a_compaction_opens_its_summary(client, compacted_twice, viewer):
    banner = row(page(client, detail_url(compacted_twice), entry="c-1"), "c-1")
    assert '<details class="summary" open>' in banner and "Summary one" in banner


def test_the_compact_command_shows_before_the_banner_of_the_compaction_it_caused(
    client, compacted_by_command, viewer
):
    body = page(client, detail_url(compacted_by_command))
    assert entry_ids(body) == ["entry-u-1", "entry-a-1", "entry-cmd-1", "entry-c-1", "entry-u-2", "entry-a-2"]
    assert '<span id="compaction-1" class="line-anchor"></span>' in row(body, "cmd-1")
    everything = page(client, detail_url(compacted_by_command), _all="1")
    ids = entry_ids(everything)
    assert ids.index("entry-cmd-1") < ids.index("entry-c-1") < ids.index("entry-s-1")
    assert ids.count("entry-cmd-1") == 1


def test_a_chunk_starting_after_a_compaction_leaves_out_the_command_its_banner_showed(
    client, compacted_by_command, viewer
):
    response = client.get(detail_url(compacted_by_command), {"_offset": "3"}, HTTP_HX_REQUEST="true")
    assert re.findall(r'<li id="(entry-[^"]+)"', response.content.decode()) == ["entry-u-2", "entry-a-2"]


def test_a_chunk_ending_at_a_compaction_brings_the_command_with_its_banner(
    client, compacted_by_command, viewer
):
    response = client.get(
        detail_url(compacted_by_command),
        {"_offset": "0", "_stop": "3", "_before": "1"},
        HTTP_HX_REQUEST="true",
    )
    ids = re.findall(r'<li id="(entry-[^"]+)"', response.content.decode())
    assert ids == ["entry-u-1", "entry-a-1", "entry-cmd-1", "entry-c-1"]


def test_the_page_links_each_compaction_and_the_end(client, compacted_twice, viewer):
    body = page(client, detail_url(compacted_twice))
    jumps = body[body.index('<nav id="jumps"') : body.index("</nav>", body.index('<nav id="jumps"'))]
    assert 'href="?_offset=4#compaction-1" data-item="4" data-compaction="1"' in jumps
    assert 'href="?_offset=8#compaction-2" data-item="8" data-compaction="2"' in jumps
    assert 'class="jump-end" href="?entry=a-4#entry-a-4"' in jumps
    assert '<span id="compaction-2" class="line-anchor"></span>' in row(body, "c-2")


def test_a_jump_to_a_compaction_opens_at_its_banner_with_what_came_before_a_click_away(
    client, compacted_twice, viewer
):
    body = page(client, detail_url(compacted_twice), _offset="8")
    assert entry_ids(body) == ["entry-earlier", "entry-c-2", "entry-u-4", "entry-a-4"]
    assert "Show earlier entries (8 before these)" in body


def test_a_short_session_without_compactions_has_no_jumps(client, one_reply, viewer):
    assert 'id="jumps"' not in page(client, detail_url(one_reply))


def test_a_snapshot_keeps_the_compactions_and_the_noise(compacted_twice, db):
    built = store.transcript(compacted_twice)  # built from the entries, and saved as a snapshot
    store.clear_cache()
    loaded = store.transcript(compacted_twice)
    assert isinstance(loaded.items, store.LazyItems)  # read back from the snapshot
    assert loaded.noise == built.noise
    assert loaded.compactions == built.compactions == (4, 8)


def test_an_export_shows_each_compaction_in_place_without_folds(client, compacted_twice, viewer):
    from django.urls import reverse

    body = page(client, reverse("session-export-html", args=[compacted_twice.id]))
    assert "compacted-run" not in thread_of(body) and "fold-" not in thread_of(body)
    order = ["u-1", "a-1", "u-2", "a-2", "c-1", "u-3", "a-3", "c-2", "u-4", "a-4"]
    assert entry_ids(body) == [f"entry-{entry_id}" for entry_id in order]  # the summary lines are noise
    assert body.count("Context compacted") == 2
    every = page(client, reverse("session-export-html", args=[compacted_twice.id]), _all=1)
    assert 'id="entry-s-1"' in every and 'id="entry-s-2"' in every


# --- Opened from a search hit ----------------------------------------------------------------------------


def test_a_page_opened_from_a_hit_says_which_hit_it_is_and_links_its_neighbours(
    client, compacted_twice, viewer
):
    body = page(client, detail_url(compacted_twice), entry="a-3", q="done")
    bar = body[body.index('<nav id="hit-bar"') : body.index("</nav>", body.index('<nav id="hit-bar"'))]
    assert "Hit 2 of 3 for <q>done</q>" in bar
    assert 'href="?entry=a-2&amp;q=done#entry-a-2"' in bar and 'href="?entry=a-4&amp;q=done#entry-a-4"' in bar
    assert '<script id="hit-terms" type="application/json">["done"]</script>' in bar


def test_the_last_hit_has_no_next_and_a_query_without_hits_says_so(client, compacted_twice, viewer):
    body = page(client, detail_url(compacted_twice), entry="a-4", q="done")
    assert "Hit 3 of 3" in body and 'class="hit-next"' not in body and 'class="hit-previous"' in body
    none = page(client, detail_url(compacted_twice), q="nowhere")
    assert "No hits for <q>nowhere</q> on this thread" in none


def test_a_hit_query_the_index_cannot_read_is_a_400(client, compacted_twice, viewer):
    response = client.get(detail_url(compacted_twice), {"q": '"unclosed'})
    assert response.status_code == 400 and b"q" in response.content


def test_an_interruption_shows_where_the_person_stopped_the_agent(client, tmp_path, viewer):
    session = index_fixture(
        tmp_path,
        "claude_code",
        "interrupted_turn.jsonl",
        CLAUDE_PROJECT,
        "44444444-4444-4444-8444-444444444444",
    )
    assert session.display_title == "run the slow migration"
    interruption = row(page(client, detail_url(session)), "i-1")
    assert 'class="entry meta harness interrupt"' in interruption
    assert "Stopped by the person during a tool call." in interruption


def test_a_chunk_of_a_page_opened_from_a_hit_does_not_search_again(client, compacted_twice, viewer):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    params = {"_offset": "9", "q": "done"}
    with CaptureQueriesContext(connection) as queries:
        response = client.get(detail_url(compacted_twice), params, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and b"hit-bar" not in response.content
    assert not any("entry_fts" in q["sql"] or "search_vector" in q["sql"] for q in queries.captured_queries)


def write_compacted_session(path, compactions: int, between: int) -> None:
    """A Claude Code session with `between` messages before each of `compactions` boundaries."""
    import json

    base = {"sessionId": path.stem, "cwd": "/home/user/project", "timestamp": "2026-03-01T10:00:00Z"}
    lines, parent, n = [], None, 0

    def add(**fields):
        nonlocal parent, n
        n += 1
        uuid = f"x-{n:05d}"
        lines.append({**base, "uuid": uuid, "parentUuid": parent, **fields})
        parent = uuid
        return uuid

    for k in range(compactions + 1):
        for m in range(between):
            role = "user" if m % 2 == 0 else "assistant"
            add(type=role, message={"role": role, "content": f"message {k}.{m}", "id": f"msg-{k}-{m}"})
        if k < compactions:
            logical = parent
            parent = None
            add(
                type="system",
                subtype="compact_boundary",
                logicalParentUuid=logical,
                compactMetadata={"trigger": "auto"},
            )
            add(type="user", isCompactSummary=True, message={"role": "user", "content": f"Summary {k}"})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def test_a_first_screen_read_from_a_snapshot_loads_only_the_rows_it_shows(tmp_path, db):
    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec

    root = tmp_path / "projects"
    write_compacted_session(
        root / "-home-user-project" / "55555555-5555-4555-8555-555555555555.jsonl", 30, 100
    )
    index_roots([RootSpec(root, "claude_code")])
    session = Session.objects.get()
    store.transcript(session)  # built once and saved as a snapshot
    store.clear_cache()
    context = transcripts.transcript_page(session, {})
    loaded = context["transcript"].items.source.loaded
    assert len(context["transcript"].compactions) == 30
    assert len(loaded) < 200  # the first chunk and what it plans ahead: not the 3,000 items
