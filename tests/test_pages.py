"""The browser pages: the session list and search, the transcript, its fragments, and who may see them."""

import html
import re
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import User
from django.db.models import Value
from django.db.models.functions import Coalesce, NullIf
from django.urls import reverse

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Entry, Session
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import CHUNK, FIRST_SCREEN

from .active_content import active_content
from .claude_files import write_tool_turn
from .fixture_files import index_fixture
from .go_agent_files import go_line, go_tool_line, write_go_session
from .pages import detail_url, page, whole_page

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fresh_cache")]


def session_titled(text: str) -> Session:
    return next(s for s in Session.objects.all() if text in s.display_title)


# --- Who may see the pages ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["session-list", "session-detail", "activity", "session-export-html"])
def test_anonymous_visitors_are_sent_to_the_login_page(client, demo, name):
    args = [] if name in ("session-list", "activity") else [Session.objects.first().id]
    response = client.get(reverse(name, args=args))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("name", ["session-list", "session-detail", "activity", "session-export-md"])
def test_a_user_without_the_view_permission_gets_403(client, demo, name):
    client.force_login(User.objects.create_user("nobody", password="pw"))
    args = [] if name in ("session-list", "activity") else [Session.objects.first().id]
    assert client.get(reverse(name, args=args)).status_code == 403


# --- The list --------------------------------------------------------------------------------------------


def test_list_shows_sessions_of_every_format(client, demo, viewer):
    body = page(client, reverse("session-list"))
    assert "17 sessions · subagents under their parents" in body  # the demo's subagent is under its parent
    for name in ("Claude Code", "Go agent", "OpenClaw", "Fluux", "Codex CLI"):
        assert f">{name}</span></td>" in body


def test_list_facets_count_without_their_own_filter(client, demo, viewer):
    body = page(client, reverse("session-list"), format="go_agent")
    assert "2 sessions" in body
    formats = re.search(r'data-facet="format">(.*?)</section>', body, re.S).group(1)
    # The format facet still offers the other formats, with their full counts.
    assert re.search(r">Fluux</span></a> <span class=\"n\">5</span>", formats)
    assert re.search(
        r"✕ <span class=\"format\">[^\n]*>Go agent</span></a> <span class=\"n\">2</span>", formats
    )
    models = re.search(r'data-facet="model">(.*?)</section>', body, re.S).group(1)
    assert "claude-opus-4-6" not in models  # no go_agent session used it


def test_list_facet_link_keeps_other_filters_and_drops_the_page(client, demo, viewer):
    body = page(client, reverse("session-list"), format="fluux_xmpp", _page="1")
    assert 'href="?format=fluux_xmpp&amp;jid=alice%40example.com"' in body


def test_list_sorts_by_a_column_both_ways(client, demo, viewer):
    first = page(client, reverse("session-list"), _sort="tokens", _sort_desc="1")
    last = page(client, reverse("session-list"), _sort="tokens", _sort_desc="0")
    top = session_titled("Add a cart page")
    assert first.index(top.display_title) < first.index("Dana")
    assert last.index(top.display_title) > last.index("Dana")


def test_list_paginates(client, demo, viewer):
    body = page(client, reverse("session-list"), _size="5", _page="2")
    assert "Page 2 of 4" in body
    assert "_page=3" in body


@pytest.mark.parametrize(
    ("parameter", "value"), [("format", "word_doc"), ("_sort", "colour"), ("_page", "x")]
)
def test_list_with_a_bad_filter_is_400_naming_it(client, demo, viewer, parameter, value):
    body = page(client, reverse("session-list"), status=400, **{parameter: value})
    assert body.startswith(parameter)


def test_an_htmx_request_gets_only_the_session_table(client, demo, viewer):
    response = client.get(reverse("session-list"), {"format": "go_agent"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in body
    assert body.lstrip().startswith('<div id="session-table"')
    assert "2 sessions" in body
    assert "HX-Request" in response["Vary"]


def test_search_shows_the_hit_with_the_terms_marked_and_a_link_to_the_entry(client, demo, viewer):
    body = page(client, reverse("session-list"), q="rounds half")
    hit = re.search(r'<li class="hit">(.*?)</li>', body, re.S).group(1)
    assert "<mark>rounds</mark>" in hit and "<mark>half</mark>" in hit
    link = html.unescape(re.search(r'class="hit-link" href="([^"]+)"', hit).group(1))
    path, fragment = link.split("#")
    landed = page(client, path)
    assert f'id="{fragment}"' in landed


def write_go_sessions(folder: Path, sessions: int, messages: int) -> None:
    for n in range(sessions):
        write_go_session(folder, messages, name=f"20260101-{n:06d}-0000abcd.jsonl")


def test_search_hits_come_in_pages_of_sessions(client, tmp_path, viewer):
    write_go_sessions(tmp_path / "go", 25, 2)
    index_roots([RootSpec(tmp_path / "go", "go_agent")])
    body = page(client, reverse("session-list"), q="number")
    assert "50 hits in 25 sessions · sessions 1–10" in body
    assert body.count('<li class="hit-session">') == 10
    assert "_hits_page=2" in body
    last = page(client, reverse("session-list"), q="number", _hits_page="3")
    assert "sessions 21–25" in last and last.count('<li class="hit-session">') == 5
    assert "Previous matches" in last and "More matches" not in last


def test_search_hits_page_must_be_a_whole_number(client, demo, viewer):
    body = page(client, reverse("session-list"), status=400, q="cart", _hits_page="two")
    assert body.startswith("_hits_page")


def test_search_api_twin_pages_its_sessions_and_keeps_its_keys(client, tmp_path, viewer):
    write_go_sessions(tmp_path / "go", 25, 2)
    index_roots([RootSpec(tmp_path / "go", "go_agent")])
    body = orjson.loads(client.get(reverse("api-search"), {"q": "number", "_hits_page": "2"}).content)
    assert (body["count"], body["page"], body["pages"], body["session_count"]) == (50, 2, 3, 25)
    assert len(body["sessions"]) == 10 and len(body["hits"]) == 20
    assert {"session", "entry", "line", "snippet_html", "url"} <= body["hits"][0].keys()


def test_a_hit_in_a_long_session_opens_the_chunk_that_holds_it(client, long_session, viewer):
    body = page(client, reverse("session-list"), q="number 876")
    link = html.unescape(re.search(r'class="hit-link" href="([^"]+)"', body).group(1))
    path, fragment = link.split("#")
    assert fragment == transcripts.anchor("m00876")
    assert f'id="{fragment}"' in page(client, path)


@pytest.mark.parametrize("column", ["title", "format", "project", "agent", "started", "updated",
                                    "messages", "models", "tokens"])  # fmt: skip
def test_every_column_of_the_list_sorts(client, demo, viewer, column):
    body = page(client, reverse("session-list"), _sort=column, _sort_desc="0", _flat="1")
    assert 'aria-sort="ascending"' in body
    assert "18 sessions" in body


def test_the_project_or_jid_column_sorts_by_what_it_shows(client, demo, viewer):
    # Fluux sessions have a JID and no project: they sort among the projects by their JID,
    # in the database's own collation (paths and JIDs order differently under a locale's).
    # The demo's projects are in a home ("~/..."), after every JID: one outside a home comes before them.
    Session.objects.filter(pk=Session.objects.exclude(project="").order_by("id")[0].pk).update(
        project="/srv/app"
    )
    shown = Coalesce(NullIf("project", Value("")), "jid")
    expected = [v for v in Session.objects.order_by(shown.asc()).values_list(shown, flat=True) if v]
    by_project_only = [s.project or s.jid for s in Session.objects.order_by("project") if s.project or s.jid]
    assert expected != by_project_only  # the demo tells the two apart

    def column(body: str) -> list[str]:
        return [
            html.unescape(title or text.replace("<wbr>", ""))
            for title, text in re.findall(
                r'<td data-label="(?:Project|JID)">(?:<a href="[^"]*">)?'
                r'(?:<span class="path" title="([^"]*)">(?:[^<]|<wbr>)*</span>|((?:[^<]|<wbr>)*))(?:</a>)?</td>',
                body,
            )
            if html.unescape(title or text.replace("<wbr>", "")) in expected
        ]

    body = page(client, reverse("session-list"), _sort="project", _sort_desc="0", _size="50")
    assert column(body) == expected
    body = page(client, reverse("session-list"), _sort="project", _sort_desc="1", _size="50")
    assert column(body) == expected[::-1]


def test_list_sorts_by_agent_and_by_models(client, demo, viewer):
    by_agent = page(client, reverse("session-list"), _sort="agent", _sort_desc="1")
    assert by_agent.index("#webshop-dev") < by_agent.index("Add a cart page")  # agent "main" before ""
    by_models = page(client, reverse("session-list"), _sort="models", _sort_desc="0")
    assert by_models.index("claude-haiku-4-5") < by_models.index("claude-opus-4-6</span></td>")


def test_list_has_a_date_range_form_that_keeps_the_other_filters(client, demo, viewer):
    body = page(client, reverse("session-list"), format="go_agent", updated_since="2026-03-01")
    form = re.search(r'<form method="get" action="/" class="date-range.*?</form>', body, re.S).group(0)
    assert '<input type="hidden" name="format" value="go_agent">' in form
    assert 'name="updated_since" value="2026-03-01"' in form
    before = Session.objects.filter(updated_at__lt="2026-03-04T00:00:00Z").count()
    assert 0 < before < 15
    assert f"{before} sessions" in page(client, reverse("session-list"), updated_before="2026-03-04")


def test_search_snippet_escapes_the_transcript_text():
    from sessionviewer.search import highlight

    snippet = highlight('say <script>alert("x")</script> hello', "hello")
    assert "<script>" not in snippet
    assert "&lt;script&gt;" in snippet
    assert "<mark>hello</mark>" in snippet


def test_search_api_twin_returns_snippets_and_links(client, demo, viewer):
    body = orjson.loads(client.get(reverse("api-search"), {"q": "cart"}).content)
    assert body["hits"]
    assert all("<mark>" in hit["snippet_html"] for hit in body["hits"])
    assert all(hit["url"].startswith("/sessions/") for hit in body["hits"])


def test_facets_api_twin_counts_like_the_page(client, demo, viewer):
    body = orjson.loads(client.get(reverse("api-session-facets"), {"format": "go_agent"}).content)
    formats = next(f for f in body["facets"] if f["name"] == "format")
    assert {v["value"]: v["count"] for v in formats["values"]}["fluux_xmpp"] == 5


def test_a_search_hit_on_another_branch_opens_that_branch(client, demo, viewer):
    session = session_titled("Add a cart page")
    main = transcripts.transcript(session)
    other = next(leaf for leaf in main.thread.leaves if leaf != main.thread.leaf_id)
    body = page(client, detail_url(session), entry=other)
    assert f'id="{transcripts.anchor(other)}"' in body
    assert "Branch 1 of 2" in body


# --- The transcript -------------------------------------------------------------------------------------


def test_claude_transcript_has_compaction_banner_in_place_and_subagent_link(client, demo, viewer):
    session = session_titled("one cent off")
    url = detail_url(session)
    body = whole_page(client, url, page(client, url))
    assert "Context compacted" in body and "trigger: manual" in body and "48,213 tokens before" in body
    assert 'class="compacted-run"' not in body
    body = body[: body.index("Context compacted")]  # the call that started the subagent came before it
    child = session.children.get()
    assert f'href="{child.get_absolute_url()}"' in body
    assert "Open the subagent transcript" in body


def test_subagent_transcript_links_back_to_its_parent(client, demo, viewer):
    child = Session.objects.get(kind="subagent")
    body = page(client, detail_url(child))
    assert f'href="{child.parent.get_absolute_url()}"' in body


def test_a_transcripts_read_brings_its_parents_title_and_not_the_rest(
    client, demo, viewer, django_assert_num_queries
):
    child = Session.objects.get(kind="subagent")
    session = Session.with_source_and_parent().get(id=child.id)
    assert {"usage_lines", "model_costs", "extra", "models_used"} <= session.parent.get_deferred_fields()
    assert not session.get_deferred_fields() and not session.source.get_deferred_fields()
    with django_assert_num_queries(0):  # what the header shows of the parent is read already
        title, url = session.parent.display_title, session.parent.get_absolute_url()
    assert title == child.parent.display_title and url == child.parent.get_absolute_url()
    body = page(client, detail_url(child))
    assert f'<a href="{url}">{html.escape(title)[:60]}' in body


def test_a_subagent_links_back_to_the_call_that_started_it(client, demo, viewer):
    child = Session.objects.get(kind="subagent")
    call_entry = child.starting_call_entry()
    assert call_entry  # the parent's assistant line holding the Task call
    body = page(client, detail_url(child))
    assert f'href="{child.parent.get_absolute_url()}?entry={call_entry}#entry-{call_entry}"' in body
    parent = page(client, detail_url(child.parent), entry=call_entry)
    call = parent[parent.index(f'id="entry-{call_entry}"') :]
    assert child.parent_tool_id in call[: call.index('class="subagent-inline"')]


def test_a_parent_shows_its_subagent_inline_where_it_was_called(client, demo, viewer):
    child = Session.objects.get(kind="subagent")
    url = detail_url(child)
    parent = whole_page(client, detail_url(child.parent), page(client, detail_url(child.parent)))
    assert (
        f'<li class="more fold-chunk" hx-get="{url}?_offset=0&amp;_inline=1" hx-trigger="intersect once"'
        in parent
    )
    response = client.get(url, {"_offset": "0", "_inline": "1"}, HTTP_HX_REQUEST="true")
    fragment = response.content.decode()
    assert "<html" not in fragment and 'class="entry ' in fragment
    assert "live-poller" not in fragment and 'id="entry-chunk"' not in fragment  # ids stay the parent's


def test_claude_transcript_pairs_tool_calls_with_results_and_shows_thinking(client, demo, viewer):
    body = page(client, detail_url(session_titled("Add a cart page")))
    call = next(part for part in body.split('<div class="tool-call') if "toolu_01Zk" in part)
    assert 'class="tool-result error' in call  # the failing pytest run, under its call
    assert '<span class="badge exit error">exit 1</span>' in call
    assert 'class="thinking readable"' in body
    assert "Branch 2 of 2" in body


def test_a_permalink_to_an_entry_opens_its_folded_thinking(client, demo, viewer):
    session = session_titled("Add a cart page")
    thinking = next(
        item.entry.id
        for item in transcripts.transcript(session).items
        if any(b.type == "thinking" for b in item.entry.blocks)
    )
    assert '<details class="thinking">' in page(client, detail_url(session), _thinking="0")
    body = page(client, detail_url(session), entry=thinking)
    row = re.search(rf'<li id="{transcripts.anchor(thinking)}".*?</li>', body, re.S).group(0)
    assert '<details class="thinking" open>' in row


def test_a_long_thinking_block_shows_its_opening_lines_then_show_all(client, tmp_path, viewer):
    thought = "\n\n".join(f"Step {n}: weigh <option {n}> and move on." for n in range(1, 9))
    write_tool_turn(
        tmp_path / "projects" / "-w" / "s.jsonl", "go", [{"type": "thinking", "thinking": thought}]
    )
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    body = page(client, detail_url(Session.objects.get()))
    block = body[body.index('<details class="thinking readable">') :]
    opening = block[: block.index("</summary>")]
    assert "Step 4: weigh &lt;option 4&gt; and move on.…" in opening and "Step 5" not in opening
    assert '<span class="show-all">Show all</span>' in opening
    assert "<p>Step 8: weigh &lt;option 8&gt; and move on.</p>" in block  # the whole of it, after


def test_a_short_thinking_block_shows_whole_without_a_fold(client, tmp_path, viewer):
    write_tool_turn(
        tmp_path / "projects" / "-w" / "s.jsonl", "go", [{"type": "thinking", "thinking": "Easy one."}]
    )
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    body = page(client, detail_url(Session.objects.get()))
    assert (
        '<div class="thinking readable"><span class="thinking-label">Thinking</span><div class="md"><p>Easy one.</p>'
        in body
    )


def test_the_thinking_switch_folds_every_block_and_is_remembered(client, tmp_path, viewer):
    write_tool_turn(
        tmp_path / "projects" / "-w" / "s.jsonl", "go", [{"type": "thinking", "thinking": "Easy one."}]
    )
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    url = detail_url(Session.objects.get())
    folded = page(client, url, _thinking="0")
    assert '<details class="thinking"><summary>Thinking: Easy one.</summary>' in folded
    assert 'href="?_thinking=1">Show thinking</a>' in folded
    assert '<details class="thinking"><summary>' in page(client, url)  # no parameter: remembered
    shown = page(client, url, _thinking="1")
    assert 'class="thinking readable"' in shown and 'href="?_thinking=0">Fold thinking</a>' in shown


def test_a_permalink_or_search_hit_on_a_tool_call_opens_its_long_arguments(client, tmp_path, viewer):
    # A search hit in a command or an edit lands on the call: the arguments must show.
    content = "\n".join(f"line {n} of the new file" for n in range(80))  # over FOLD_CHARS
    call = {
        "type": "tool_use",
        "id": "t1",
        "name": "Write",
        "input": {"file_path": "/w/a.py", "content": content},
    }
    write_tool_turn(tmp_path / "projects" / "-w" / "s.jsonl", "write it", [call])
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    assert '<details class="file-content">' in page(client, detail_url(session))  # long: folded
    body = page(client, detail_url(session), entry="a1")
    row = re.search(rf'<li id="{transcripts.anchor("a1")}".*?</li>', body, re.S).group(0)
    assert '<details class="file-content" open>' in row


def test_leaf_switches_the_branch(client, demo, viewer):
    session = session_titled("Add a cart page")
    t = transcripts.transcript(session)
    other = next(leaf for leaf in t.thread.leaves if leaf != t.thread.leaf_id)
    body = page(client, detail_url(session), leaf=other)
    assert "Branch 1 of 2" in body
    assert f'id="{transcripts.anchor(other)}"' in body
    assert f'id="{transcripts.anchor(t.thread.leaf_id)}"' not in body


def test_an_unknown_leaf_is_404(client, demo, viewer):
    page(client, detail_url(session_titled("Add a cart page")), status=404, leaf="no-such-entry")


def test_a_bad_offset_is_400_naming_it(client, demo, viewer):
    body = page(client, detail_url(session_titled("Add a cart page")), status=400, _offset="-3")
    assert body.startswith("_offset")


def test_go_agent_fork_links_its_parent_and_compaction_shows_tokens(client, demo, viewer):
    fork = Session.objects.get(format="go_agent", kind="fork")
    body = page(client, detail_url(fork))
    assert f'href="{fork.parent.get_absolute_url()}"' in body
    parent = whole_page(client, detail_url(fork.parent), page(client, detail_url(fork.parent)))
    assert "Context compacted" in parent and "38,214 tokens before" in parent
    assert '<img class="thumb" src="data:image/png;base64,' in parent
    assert "edit failed" in parent


def test_openclaw_transcript_shows_model_change_and_results(client, demo, viewer):
    body = page(client, detail_url(next(s for s in Session.objects.all() if s.display_title == "Dana")))
    assert "claude-opus-4-6" in body
    assert "job-stock-report" in body
    assert "Context compacted" in body


def test_a_model_switch_is_labelled_in_words(client, demo, viewer):
    body = page(client, detail_url(next(s for s in Session.objects.all() if s.display_title == "Dana")))
    assert '<span class="who">model change</span>' in body
    assert '<span class="who">model_change' not in body


def test_fluux_room_shows_senders_attachments_and_reactions(client, demo, viewer):
    room = Session.objects.get(jid="dev@conference.example.com")
    body = page(client, detail_url(room))
    assert "carol@muc" in body and "dave@muc" in body
    assert '<span class="chip attachment"' in body and "ci-log.txt" in body
    target = transcripts.anchor("6b7c8d9e-0f1a-4b2c-9d3e-4f5a6b7c8d9e")
    assert f'<a href="#{target}">reacting to a message</a>' in body
    assert f'id="{target}"' in body


def test_anchors_are_safe_and_distinct_for_odd_ids():
    assert transcripts.anchor("line:9") == "entry-line_3a_9"
    assert transcripts.anchor('a"b<c') != transcripts.anchor("a_b_c")
    assert re.fullmatch(r"[A-Za-z0-9_-]+", transcripts.anchor("x y\"<>'&é"))


def test_problems_are_listed_with_line_numbers(client, tmp_path, settings, viewer):
    memory = tmp_path / "memory" / "bob@example.com"
    memory.mkdir(parents=True)
    (memory / "history.jsonl").write_text(
        '{"type":"session","version":1,"created":"2025-03-01T10:00:00Z","jid":"bob@example.com"}\n'
        '{"type":"message","role":"user","content":"Bread","msg_id":"b-1","ts":"2025-03-01T10:00:01Z"}\n'
        "{not json\n"
    )
    index_roots([RootSpec(tmp_path / "memory", "fluux_xmpp")])
    body = page(client, detail_url(Session.objects.get()))
    assert "line 3</a>: not valid JSON" in body


@pytest.fixture
def command_wrappers(tmp_path) -> Session:
    """A Claude Code session with typed slash commands, their output and the harness caveats."""
    return index_fixture(
        tmp_path,
        "claude_code",
        "local_command_wrappers.jsonl",
        "projects/-home-user-project",
        "11111111-1111-4111-8111-111111111111",
    )


def test_claude_slash_commands_show_as_commands_with_their_output(client, command_wrappers, viewer):
    body = page(client, detail_url(command_wrappers), _all="1")
    assert '<p class="command-line"><code>/mcp</code></p>' in body
    assert '<p class="command-line"><code>/review src/ only</code></p>' in body
    assert '<div class="command-output"><pre class="plain">Reconnected to tidewave.</pre></div>' in body
    thread = body.split('id="entry-list"')[1]  # the title is the indexer's first prompt, tags and all
    assert "&lt;command-name&gt;" not in thread and "&lt;local-command-stdout&gt;" not in thread


def test_claude_command_output_and_caveats_are_hidden_until_all_entries_are_shown(
    client, command_wrappers, viewer
):
    body = page(client, detail_url(command_wrappers))
    assert '<p class="command-line"><code>/mcp</code></p>' in body  # what the person typed stays
    assert "Reconnected to tidewave." not in body and 'class="harness-text"' not in body
    assert 'hidden (progress, hooks, meta, empty lines). <a href="?_all=1">Show all' in body


def test_claude_local_command_caveats_are_folded(client, command_wrappers, viewer):
    body = page(client, detail_url(command_wrappers), _all="1")
    assert body.count('<details class="harness-text">') == 2
    assert "&lt;local-command-caveat&gt;" not in body
    assert body.count('class="entry user ') == 2  # only the two typed commands count as the user's


def test_command_output_loses_terminal_colour_codes():
    from sessionviewer.readers import Block, Entry
    from sessionviewer.templatetags.transcript import harness

    entry = Entry(
        id="u", parent_id=None, kind="message", role="user", is_meta=True,
        blocks=[Block("text", text="<local-command-stdout>\x1b[2mCompacted\x1b[22m</local-command-stdout>")],
    )  # fmt: skip
    assert harness(entry, "claude_code") == {"kind": "output", "text": "Compacted", "error": False}


def test_the_compact_summary_shows_only_in_the_compaction_banner(client, demo, viewer):
    session = session_titled("one cent off")
    body = page(client, detail_url(session))
    assert "Primary Request and Intent" not in body  # folded in the banner, loaded when opened
    assert "shown in the compaction banner above" not in body  # the summary line is hidden
    at = re.search(r'class="md summary-later" hx-get="[^"]*_summary=(\d+)"', body).group(1)
    summary = client.get(detail_url(session), {"_summary": at}, HTTP_HX_REQUEST="true").content.decode()
    assert summary.count("Primary Request and Intent") == 1
    body = page(client, detail_url(session), _all="1")
    assert "Primary Request and Intent" not in body
    assert "shown in the compaction banner above" in body
    assert "Compacted (ctrl+o to see full summary)</pre>" in body


def test_an_empty_error_turn_shows_its_error(client, tmp_path, viewer):
    session = index_fixture(
        tmp_path,
        "openclaw",
        "pi_v3_all_kinds.jsonl",
        "agents/main/sessions",
        "9a9a9a9a-0000-4000-8000-00000000000a",
    )
    body = page(client, detail_url(session))
    error = re.search(r'<li id="entry-e0000005"(.*?)</li>', body, re.S).group(0)
    assert "has-error" in error
    assert '<span class="badge error">error</span> fetch failed' in error


# --- Long and growing transcripts -------------------------------------------------------------------------


@pytest.fixture
def long_session(tmp_path) -> Session:
    root = tmp_path / "go"
    write_go_session(root, 1000)
    index_roots([RootSpec(root, "go_agent")])
    return Session.objects.get()


def test_a_long_transcript_renders_only_its_first_screen(client, long_session, viewer):
    body = page(client, detail_url(long_session))
    assert f'id="entry-m{FIRST_SCREEN:05d}"' in body  # m00001 is the first message
    assert f'id="entry-m{FIRST_SCREEN + 1:05d}"' not in body
    # The session header is hidden: the first FIRST_SCREEN messages end before item FIRST_SCREEN + 1.
    assert 'hx-trigger="revealed"' in body and f"_offset={FIRST_SCREEN + 1}" in body


def test_the_next_chunk_comes_as_a_fragment(client, long_session, viewer):
    response = client.get(detail_url(long_session), {"_offset": str(CHUNK)}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "<html" not in body
    assert f'id="entry-m{CHUNK:05d}"' in body and f'id="entry-m{2 * CHUNK - 1:05d}"' in body
    assert f'id="entry-m{CHUNK - 1:05d}"' not in body
    assert f"_offset={2 * CHUNK}" in body


def test_the_last_chunk_ends_with_the_live_poller(client, long_session, viewer):
    body = client.get(detail_url(long_session), {"_offset": "1000"}, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="entry-m01000"' in body and 'id="entry-m00999"' not in body
    assert 'id="live-poller"' in body and 'hx-trigger="every 5s"' in body


def test_a_permalink_to_a_late_entry_lands_on_it(client, long_session, viewer):
    body = page(client, detail_url(long_session), entry="m00876")
    assert 'id="entry-m00876"' in body
    assert 'id="entry-m00010"' not in body
    assert "Show earlier entries" in body


def test_earlier_entries_load_as_a_fragment(client, long_session, viewer):
    body = client.get(
        detail_url(long_session), {"_offset": "700", "_before": "1"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert 'id="entry-m00700"' in body and f'id="entry-m{700 + CHUNK - 1:05d}"' in body
    assert 'id="entry-earlier"' in body and 'id="entry-chunk"' not in body


def test_the_live_poller_brings_entries_appended_to_the_file(client, tmp_path, viewer):
    root = tmp_path / "go"
    path = write_go_session(root, 4)
    index_roots([RootSpec(root, "go_agent")])
    session = Session.objects.get()
    params = {"_after": "5", "_read": str(session.read_offset)}
    response = client.get(detail_url(session), params, HTTP_HX_REQUEST="true")
    assert response.status_code == 204  # nothing new yet

    with path.open("ab") as handle:
        handle.write(go_line(5, "m00004", "user", "A late question"))
    index_roots([RootSpec(root, "go_agent")])
    response = client.get(detail_url(session), params, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert response.status_code == 200
    assert "A late question" in body and 'id="entry-m00005"' in body
    assert 'id="entry-m00004"' not in body
    assert 'id="live-poller"' in body
    session.refresh_from_db()
    assert f"_read={session.read_offset}" in body


@pytest.fixture
def waiting_call(tmp_path):
    """A Go session whose last line calls a tool that has not answered yet."""
    root = tmp_path / "go"
    path = write_go_session(root, 3)
    with path.open("ab") as handle:
        handle.write(go_tool_line(4, "m00003", "call<1>"))
    index_roots([RootSpec(root, "go_agent")])
    return root, path, Session.objects.get()


def grow(waiting_call, *lines: bytes) -> tuple[Session, int]:
    """Append lines to the session's file and index them: the session, and where its file was read to before."""
    root, path, session = waiting_call
    read = session.read_offset
    with path.open("ab") as handle:
        handle.write(b"".join(lines))
    index_roots([RootSpec(root, "go_agent")])
    return session, read


def live_poll(client, session, after: int, read: int, **extra) -> str:
    params = {"_after": str(after), "_read": str(read), **extra}
    response = client.get(detail_url(session), params, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    return response.content.decode()


def test_a_call_still_waiting_keeps_a_place_for_its_result_that_the_poller_names(
    client, waiting_call, viewer
):
    _root, _path, session = waiting_call
    body = page(client, detail_url(session))
    slot = transcripts.result_slot("call<1>")
    assert slot == "result-of-call_3c_1_3e_"  # an element id, whatever the file wrote
    assert f'<p class="no-result" id="{slot}">' in body
    assert '<input type="hidden" class="pending-call" name="_pending" value="call&lt;1&gt;">' in body
    assert 'hx-include=".pending-call"' in body


def test_a_result_polled_in_for_a_call_on_the_page_takes_the_place_it_kept(client, waiting_call, viewer):
    session, read = grow(
        waiting_call,
        go_tool_line(5, "m00004", "call<1>", "file-a\nfile-b"),
        go_line(6, "m00005", "assistant", "Two files."),
    )
    body = live_poll(client, session, 5, read, _pending="call<1>")
    slot = transcripts.result_slot("call<1>")
    oob = re.search(rf'<div id="{slot}" hx-swap-oob="outerHTML">(.*?)</div>\s*</div>', body, re.S)
    assert oob and "file-a" in oob.group(1)
    # Its own row is gone, and its permalink moved onto the result.
    assert '<li id="entry-m00005"' not in body and 'id="entry-m00005"' in oob.group(1)
    assert '<li id="entry-m00006"' in body and "Two files." in body


def test_a_polled_result_whose_call_the_page_does_not_show_gets_its_own_row(client, waiting_call, viewer):
    session, read = grow(waiting_call, go_tool_line(5, "m00004", "call<1>", "file-a"))
    body = live_poll(client, session, 5, read)  # no _pending: the call is not on the page
    assert "hx-swap-oob" not in body
    assert '<li id="entry-m00005"' in body and "file-a" in body


def test_a_call_and_its_result_polled_in_together_show_together(client, waiting_call, viewer):
    session, read = grow(
        waiting_call,
        go_tool_line(5, "m00004", "call<1>", "file-a"),
        go_tool_line(6, "m00005", "call-2"),
        go_tool_line(7, "m00006", "call-2", "second output"),
    )
    body = live_poll(client, session, 5, read)
    assert '<li id="entry-m00006"' in body and '<li id="entry-m00007"' not in body
    call_row = body[body.index('<li id="entry-m00006"') :]
    assert "second output" in call_row and 'id="entry-m00007"' in call_row


def test_the_thread_is_built_once_per_version(long_session, django_assert_num_queries):
    transcripts.transcript(long_session)
    with django_assert_num_queries(0):
        transcripts.transcript(long_session)
    assert Entry.objects.filter(session=long_session).count() == 1001


# --- Exports and activity twins live in test_export.py and test_activity.py ------------------------------


def test_detail_page_links_raw_file_and_exports(client, demo, viewer):
    session = session_titled("Add a cart page")
    body = page(client, detail_url(session))
    for name in ("api-session-raw", "session-export-html", "session-export-md", "api-session-detail"):
        assert reverse(name, args=[session.id]) in body


# --- Hostile transcripts ---------------------------------------------------------------------------------

HOSTILE = Path(__file__).parent / "fixtures" / "hostile"


@pytest.fixture
def hostile(tmp_path):
    import shutil

    shutil.copytree(HOSTILE, tmp_path / "hostile")
    index_roots(
        [
            RootSpec(tmp_path / "hostile" / "go", "go_agent"),
            RootSpec(tmp_path / "hostile" / "fluux", "fluux_xmpp"),
            RootSpec(tmp_path / "hostile" / "claude", "claude_code"),
        ]
    )
    return {s.format: s for s in Session.objects.all()}


def test_hostile_go_transcript_renders_nothing_that_runs(client, hostile, viewer):
    body = page(client, detail_url(hostile["go_agent"]))
    assert active_content(body) == []


def test_hostile_go_transcript_is_still_readable(client, hostile, viewer):
    body = page(client, detail_url(hostile["go_agent"]))
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body  # shown as text
    assert "\\u202e" in body and "\u202e" not in body  # the override is made visible
    assert "\\u0007" in body
    assert "HUGE" in body
    assert "Image not shown (image/svg+xml" in body
    assert "Image not shown (image/png" in body  # data that is not base64
    assert "onerror=alert(15)" in body  # tool arguments, escaped inside the highlighted JSON
    assert 'href="https://example.com/docs"' in body  # ordinary links survive


def test_hostile_fluux_transcript_renders_nothing_that_runs(client, hostile, viewer):
    body = page(client, detail_url(hostile["fluux_xmpp"]))
    assert active_content(body) == []
    assert "javascript:alert(32)" in body  # the attachment's name, as text in a chip
    assert "&lt;img src=x onerror=alert(35)&gt;" in body


def test_hostile_claude_harness_lines_render_nothing_that_runs(client, hostile, viewer):
    body = page(client, detail_url(hostile["claude_code"]), _all="1")
    assert active_content(body) == []
    thread = body.split('id="entry-list"')[1]
    assert (
        "<code>/&lt;script&gt;alert(43)&lt;/script&gt; &lt;img src=x onerror=alert(44)&gt;</code>" in thread
    )
    assert '<pre class="plain">&lt;script&gt;alert(45)&lt;/script&gt;</pre>' in thread  # colour codes gone
    assert '<div class="command-output error"><pre class="plain">&lt;iframe' in thread
    assert "&lt;svg onload=alert(48)&gt;" in thread
    assert "<code>!echo &#x27;&lt;script&gt;alert(49)&lt;/script&gt;&#x27;</code>" in thread


@pytest.mark.parametrize("name", ["session-export-html"])
def test_hostile_export_renders_nothing_that_runs(client, hostile, viewer, name):
    body = page(client, reverse(name, args=[hostile["go_agent"].id]))
    assert [found for found in active_content(body) if found != "<style>"] == []


def test_hostile_list_and_search_render_nothing_that_runs(client, hostile, viewer):
    assert active_content(page(client, reverse("session-list"))) == []
    body = page(client, reverse("session-list"), q="alert")
    assert "<mark>alert</mark>" in body
    assert active_content(body) == []


# --- What the index could not keep whole -----------------------------------------------------------------


def write_go_tool_call(folder: Path, arguments: str) -> Path:
    """A Go agent session: a prompt, then a reply calling a tool with these arguments (JSON text)."""
    path = write_go_session(folder, 1)
    call = {
        "type": "message",
        "id": "m00002",
        "parent_id": "m00001",
        "timestamp": "2026-01-01T00:00:02Z",
        "role": "assistant",
        "message": {
            "role": "assistant",
            "content": [{"type": "tool_call", "id": "call_1", "name": "deep", "arguments": "ARGUMENTS"}],
        },
    }
    with path.open("ab") as handle:
        handle.write(orjson.dumps(call).replace(b'"ARGUMENTS"', arguments.encode()) + b"\n")
    return path


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_a_line_nested_too_deep_shows_cut_with_a_note_and_is_listed_as_a_bad_line(
    client, viewer, tmp_path, prefix
):
    write_go_tool_call(tmp_path, '{"a": ' * 900 + '"bottom"' + "}" * 900)
    assert index_roots([RootSpec(tmp_path, "go_agent")]).errors == []
    session = Session.objects.get()
    if prefix:
        body = orjson.loads(page(client, reverse("api-session-detail", args=[session.id])))
        assert body["problems"][0]["line"] == 3
        return
    body = page(client, detail_url(session))
    assert "1 line could not be read" in body
    assert "Nested deeper than 200 levels: the index keeps this line cut at that depth" in body
    assert "nested deeper than the index keeps" in body  # in the arguments, where they are cut


def test_an_entry_longer_than_search_covers_says_so(client, viewer, tmp_path, monkeypatch):
    from sessionviewer.index import rows

    monkeypatch.setattr(rows, "SEARCHABLE_CHARS", 20)  # a small pass is read in this process
    write_go_session(tmp_path, 2)
    index_roots([RootSpec(tmp_path, "go_agent")])
    body = page(client, detail_url(Session.objects.get()))
    assert body.count("Search covers the first 20 characters of this entry") == 2
    assert "Message number 2 (assistant)" in body  # shown whole


def test_the_list_shows_a_file_that_could_not_be_indexed_with_its_error(
    client, viewer, tmp_path, monkeypatch
):
    from sessionviewer.index import passes

    write_go_session(tmp_path, 2)

    def failing(*args):
        raise ValueError("a bug")

    monkeypatch.setattr(passes, "write_files", failing)
    index_roots([RootSpec(tmp_path, "go_agent")])
    session = Session.objects.get()
    assert "not indexed</span> ValueError: a bug" in page(client, reverse("session-list"))
    assert "The last index pass could not read this file" in page(client, detail_url(session))


def test_the_transcript_header_folds_its_metadata_behind_details(client, demo, viewer):
    session = session_titled("The checkout total is one cent off")
    body = page(client, detail_url(session))
    start = body.index('<header class="session-head">')
    header = body[start : body.index("</header>", start)]
    assert re.search(
        r'</h1>\s*<details class="session-meta" open><summary>Details</summary>\s*<dl class="meta">', header
    )
    assert header.index('class="links"') < header.index("</details>")
    export = page(client, reverse("session-export-html", args=[session.id]))
    assert 'class="session-meta"' not in export
