"""A line of several MB (a pasted log): the page shows it folded and cut, the rest comes on
request (views.pages.entry_text), and the API cuts it too, with a link to the whole text."""

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec

from .claude_files import write_tool_turn
from .pasted_log import pasted_log

pytestmark = pytest.mark.django_db

LIMIT = transcripts.TEXT_LIMIT


@pytest.fixture
def reader(client):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    return client


def rest_url(session: Session) -> str:
    return reverse("session-entry-text", args=[session.id, 1, 0])


def test_a_long_line_shows_folded_and_the_page_stays_small(long_session, reader):
    response = reader.get(reverse("session-detail", args=[long_session.id]))
    html = response.content.decode()
    assert len(pasted_log()) > 2_500_000
    assert len(html) < 400_000
    assert '<details class="output long-text">' in html
    assert "Show the rest" in html
    assert f'hx-get="{rest_url(long_session)}?_from={LIMIT}"' in html


def test_the_rest_comes_a_part_at_a_time_and_escaped(long_session, reader):
    response = reader.get(rest_url(long_session), {"_from": LIMIT}, HTTP_HX_REQUEST="true")
    html = response.content.decode()
    text = pasted_log()
    assert response.status_code == 200
    assert len(html) < 3 * LIMIT
    assert "&lt;script&gt;alert" in html
    assert "<script>" not in html
    assert text[LIMIT + 10 : LIMIT + 60] in html
    assert f"?_from={2 * LIMIT}" in html


def test_the_last_part_offers_no_more(long_session, reader):
    start = len(pasted_log()) - 100
    html = reader.get(rest_url(long_session), {"_from": start}, HTTP_HX_REQUEST="true").content.decode()
    assert "Show the rest" not in html
    assert "Download the whole text" in html


def test_without_htmx_the_whole_text_is_a_download(long_session, reader):
    response = reader.get(rest_url(long_session))
    assert response["Content-Disposition"].startswith("attachment;")
    assert response.content.decode() == pasted_log()


def test_the_rest_needs_the_permission_to_view_sessions(long_session, client, django_user_model):
    assert client.get(rest_url(long_session)).status_code == 302  # to the login page
    client.force_login(django_user_model.objects.create_user("nobody", password="pw"))
    assert client.get(rest_url(long_session)).status_code == 403


def test_the_rest_of_a_block_that_is_not_there_is_404(long_session, reader):
    url = reverse("session-entry-text", args=[long_session.id, 1, 5])
    assert reader.get(url, HTTP_HX_REQUEST="true").status_code == 404
    url = reverse("session-entry-text", args=[long_session.id, 99, 0])
    assert reader.get(url, HTTP_HX_REQUEST="true").status_code == 404


def test_a_bad_start_is_a_400_naming_it(long_session, reader):
    response = reader.get(rest_url(long_session), {"_from": "-3"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    assert response.content.decode().startswith("_from")


def test_the_api_cuts_long_texts_and_links_to_the_whole(long_session, reader):
    response = reader.get(reverse("api-session-detail", args=[long_session.id]))
    assert len(response.content) < 4 * LIMIT
    entry = response.json()["entries"][0]
    block = entry["blocks"][0]
    assert block["truncated"] is True
    assert block["length"] == len(pasted_log())
    assert len(block["text"]) == LIMIT
    assert block["text_url"] == rest_url(long_session)
    assert entry["text_truncated"] is True


def test_the_api_leaves_short_texts_whole(long_session, reader):
    entries = reader.get(reverse("api-session-detail", args=[long_session.id])).json()["entries"]
    reply = entries[1]
    assert reply["blocks"][0] == {"type": "text", "text": "Read it."}
    assert "text_truncated" not in reply


def test_a_long_tool_output_is_cut_with_a_link_to_the_whole_of_it(tmp_path, reader):
    root = tmp_path / "projects"
    call = {"type": "tool_use", "id": "call_log", "name": "Bash", "input": {"command": "cat app.log"}}
    write_tool_turn(root / "-w" / "s.jsonl", "Show the log", [call], {"call_log": pasted_log()})
    index_roots([RootSpec(root, "claude_code")])
    transcripts.clear_cache()
    session = Session.objects.get(kind="main")
    body = reader.get(session.get_absolute_url()).content.decode()
    whole = reverse("session-entry-text", args=[session.id, 3, 0])
    assert "Output cut at 100,000 of " in body
    assert f'<a href="{whole}" download>Download the whole output</a>' in body
    assert len(body) < 400_000
    download = reader.get(whole)
    assert (
        b"".join(download.streaming_content if download.streaming else [download.content]).decode()
        == pasted_log()
    )
