"""What readers read, on the page and in the API: unknown entries, each format's own fields."""

import orjson
import pytest
from django.urls import reverse

from sessionviewer.models import Session
from tests.test_pages import index_fixture

pytestmark = pytest.mark.django_db


def get(client, name: str, session: Session, **params) -> str:
    response = client.get(reverse(name, args=[session.id]), params)
    assert response.status_code == 200, response.content
    return response.content.decode()


def api(client, session: Session, **params) -> dict:
    return orjson.loads(get(client, "api-session-detail", session, **params))


@pytest.fixture
def unknown(tmp_path) -> Session:
    """A Claude Code session with a line of a type no reader knows between a prompt and its reply."""
    return index_fixture(
        tmp_path, "claude_code", "unknown_entry_in_conversation.jsonl", "projects/-home-user-project", "s1"
    )


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
