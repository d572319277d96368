"""What readers read, on the page and in the API: unknown entries, each format's own fields."""

import orjson
import pytest
from django.urls import reverse

from sessionviewer import readers, threads
from sessionviewer.models import Session

from .fixture_files import FORK_FAMILY, FORK_FILE, index_fixture

pytestmark = pytest.mark.django_db


def get(client, name: str, session: Session, **params) -> str:
    response = client.get(reverse(name, args=[session.id]), params)
    assert response.status_code == 200, response.content
    return response.content.decode()


def api(client, session: Session, **params) -> dict:
    return orjson.loads(get(client, "api-session-detail", session, **params))


def test_an_unknown_entry_is_counted_on_its_session_and_is_no_problem(unknown):
    assert unknown.unknown_entry_count == 1
    assert unknown.extra["unknown_entries"] == {"brand-new-record": 1}
    assert unknown.problem_count == 0


def test_the_api_gives_an_unknown_entrys_raw_line_and_its_sessions_count(client, viewer, unknown):
    body = api(client, unknown)
    assert body["session"]["unknown_entry_count"] == 1
    found = next(e for e in body["entries"] if e["id"] == "x-1")
    assert found["kind"] == "raw" and found["subtype"] == "brand-new-record"
    assert found["raw"]["payload"] == {"answer": 42, "note": "<b>not markup</b>"}
    assert all(e["raw"] is None for e in body["entries"] if e["id"] != "x-1")


def test_the_page_shows_an_unknown_entry_as_its_raw_json_folded(client, viewer, unknown):
    body = get(client, "session-detail", unknown)
    row = body[body.index('id="entry-x-1"') :]
    row = row[: row.index("</li>")]
    assert "unknown entry · brand-new-record" in row
    assert '<details class="unknown-entry">' in row  # folded: no "open"
    assert '<span class="nt">"answer"</span>' in row  # the line, as pretty JSON
    assert "&lt;b&gt;not markup&lt;/b&gt;" in row and "<b>not" not in row  # escaped


def test_the_header_and_the_list_say_a_session_holds_unknown_entries(client, viewer, unknown):
    assert "1 line of a type the reader does not know" in get(client, "session-detail", unknown)
    listing = client.get(reverse("session-list")).content.decode()
    assert "1 unknown entry" in listing


def test_a_huge_unknown_line_is_shown_cut_with_a_note():
    from sessionviewer.templatetags.transcript import OUTPUT_LIMIT, raw_json

    shown = raw_json({"payload": "x" * (2 * OUTPUT_LIMIT)})
    assert "the raw file has it whole" in shown
    assert len(shown) < OUTPUT_LIMIT + 1000


@pytest.mark.parametrize("name", ["session-detail", "api-session-detail"])
def test_the_branch_a_summary_names_is_shown_though_its_clock_stepped_back(client, viewer, tmp_path, name):
    session = index_fixture(
        tmp_path, "claude_code", "clock_stepped_back_with_summary.jsonl", "projects/-home-user-project", "s1"
    )
    body = get(client, name, session)
    assert "Renamed to options." in body
    assert "Renamed to settings." not in body


# Go agent forks, and each format's own fields


def test_a_forks_copies_pointing_into_its_parent_are_no_thread_problem():
    entries = readers.read_session(FORK_FAMILY / FORK_FILE, "go_agent").entries
    assert entries[2].parent_id == "p0000001"  # in the parent file only
    assert threads.build_thread(entries).problems == []


def test_a_fork_links_its_copies_to_the_parents_entries(client, viewer, fork):
    assert fork.kind == "fork" and fork.parent is not None
    body = get(client, "session-detail", fork)
    parent = fork.parent.get_absolute_url()
    for copied in ("p0000002", "p0000004"):  # p0000003, a tool result, shows under its call
        assert f'href="{parent}?entry={copied}#entry-{copied}"' in body
    assert f"{parent}?entry=f0000001#" not in body  # the fork's own messages are its own
    assert "threading note" not in body


def test_the_api_carries_each_go_agent_entrys_own_fields_under_extra(client, viewer, fork):
    body = api(client, fork)
    assert body["thread_problems"] == []
    extra = {e["id"]: e["extra"] for e in body["entries"]}
    assert extra["f0000000"]["parent_session_path"].endswith("20260226-143012-22222222.jsonl")
    assert extra["f0000000"]["fork_entry_id"] == "p0000004"
    assert (extra["f0000002"]["provider"], extra["f0000002"]["stop_reason"]) == ("openai", "end_turn")
    assert extra["p0000003"]["details"] == {"exit_code": 0, "duration_ms": 12}
    assert extra["f0000003"]["tokens_before"] == 45000
    reply = next(e for e in body["entries"] if e["id"] == "f0000002")
    assert reply["model"] == "gpt-5"  # the common field stays where it was


def test_the_page_shows_the_provider_beside_the_model(client, viewer, fork):
    body = get(client, "session-detail", fork)
    assert '<span class="model">gpt-5</span><span class="provider" title="Provider">openai</span>' in body
