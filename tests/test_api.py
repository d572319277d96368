"""The JSON API: filters, pagination, the thread, the raw file, and who may see them."""

import io
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db

ALICE = (
    '{"type":"session","version":1,"created":"2025-02-08T19:00:00Z","jid":"alice@example.com"}\n'
    '{"type":"message","role":"user","content":"Where is the lighthouse?","msg_id":"s-1",'
    '"sender":"alice@example.com","ts":"2025-02-08T19:00:01Z"}\n'
    '{"type":"message","role":"assistant","content":"On the northern cape.","ts":"2025-02-08T19:00:02Z"}\n'
)
BOB = (
    '{"type":"session","version":1,"created":"2025-03-01T10:00:00Z","jid":"bob@example.com"}\n'
    '{"type":"message","role":"user","content":"Recipe for bread please","msg_id":"b-1",'
    '"sender":"bob@example.com","ts":"2025-03-01T10:00:01Z"}\n'
    "{not json\n"
)


@pytest.fixture
def root(tmp_path: Path, settings) -> Path:
    memory = tmp_path / "memory"
    for jid, text in (("alice@example.com", ALICE), ("bob@example.com", BOB)):
        (memory / jid).mkdir(parents=True)
        (memory / jid / "history.jsonl").write_text(text)
    settings.SESSIONVIEWER_ROOTS = [f"fluux_xmpp={memory}"]
    index_roots([RootSpec(memory, "fluux_xmpp")])
    return memory


def get_json(client, url, status=200, **params):
    response = client.get(url, params)
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    return orjson.loads(response.content)


def session_of(jid: str) -> Session:
    return Session.objects.get(jid=jid)


@pytest.mark.parametrize("name", ["api-session-list", "api-session-detail", "api-session-raw"])
def test_anonymous_requests_get_401_and_no_data(client, root, name):
    args = [] if name == "api-session-list" else [session_of("alice@example.com").id]
    response = client.get(reverse(name, args=args))
    assert response.status_code == 401
    assert b"lighthouse" not in response.content


def test_a_user_without_a_role_gets_403(client, root):
    client.force_login(User.objects.create_user("nobody", password="pw"))
    body = get_json(client, reverse("api-session-list"), status=403)
    assert "permission" in body["error"]


def test_list_returns_every_session_newest_first(client, root, viewer):
    body = get_json(client, reverse("api-session-list"))
    assert body["count"] == 2
    assert [s["jid"] for s in body["sessions"]] == ["bob@example.com", "alice@example.com"]


def test_list_filters_by_jid_and_format(client, root, viewer):
    body = get_json(client, reverse("api-session-list"), jid="alice@example.com", format="fluux_xmpp")
    assert [s["jid"] for s in body["sessions"]] == ["alice@example.com"]


def test_list_full_text_search_finds_the_session_with_the_words(client, root, viewer):
    body = get_json(client, reverse("api-session-list"), q="northern cape")
    assert [s["jid"] for s in body["sessions"]] == ["alice@example.com"]


def test_list_full_text_search_refuses_operators_with_400_naming_q(client, root, viewer):
    body = get_json(client, reverse("api-session-list"), status=400, q="bread OR NEAR(")
    assert body["error"].startswith("q: OR is an operator")


def test_list_full_text_search_finds_an_operator_in_quotes_as_a_word(client, root, viewer):
    body = get_json(client, reverse("api-session-list"), q='bread "OR" "NEAR"')
    assert body["count"] == 0


@pytest.mark.parametrize(
    ("q", "jids"),
    [("lighthouse or bread", []), ("bread -lighthouse", []), ("where -is", ["alice@example.com"])],
)
def test_list_full_text_search_reads_or_and_a_leading_minus_as_words_on_both_engines(
    client, root, viewer, q, jids
):
    body = get_json(client, reverse("api-session-list"), q=q)
    assert [s["jid"] for s in body["sessions"]] == jids


def test_list_filters_by_updated_since(client, root, viewer):
    body = get_json(client, reverse("api-session-list"), updated_since="2025-02-15")
    assert [s["jid"] for s in body["sessions"]] == ["bob@example.com"]


def test_list_paginates(client, root, viewer):
    body = get_json(client, reverse("api-session-list"), _size=1, _page=2)
    assert (body["count"], body["pages"], body["page"]) == (2, 2, 2)
    assert [s["jid"] for s in body["sessions"]] == ["alice@example.com"]


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("format", "word_doc"),
        ("_sort", "colour"),
        ("_page", "zero"),
        ("_size", "100000"),
        ("updated_since", "soon"),
    ],
)
def test_a_bad_filter_gets_400_naming_the_parameter(client, root, viewer, parameter, value):
    body = get_json(client, reverse("api-session-list"), status=400, **{parameter: value})
    assert body["error"].startswith(parameter)


def test_detail_returns_the_thread_with_the_files_own_ids(client, root, viewer):
    body = get_json(client, reverse("api-session-detail", args=[session_of("alice@example.com").id]))
    messages = [e for e in body["entries"] if e["kind"] == "message"]
    assert [m["id"] for m in messages] == ["s-1", "line:3"]
    assert [m["text"] for m in messages] == ["Where is the lighthouse?", "On the northern cape."]
    assert all(m["compacted"] is False for m in messages)
    assert body["session"]["jid"] == "alice@example.com"


def test_detail_gives_each_entrys_time_with_its_offset(client, root, viewer):
    body = get_json(client, reverse("api-session-detail", args=[session_of("alice@example.com").id]))
    times = [e["timestamp"] for e in body["entries"] if e["kind"] == "message"]
    assert times == ["2025-02-08T19:00:01+00:00", "2025-02-08T19:00:02+00:00"]


def test_detail_lists_the_bad_lines_of_the_file(client, root, viewer):
    body = get_json(client, reverse("api-session-detail", args=[session_of("bob@example.com").id]))
    assert [p["line"] for p in body["problems"]] == [3]


def test_detail_of_an_unknown_session_is_404(client, root, viewer):
    body = get_json(client, reverse("api-session-detail", args=[999999]), status=404)
    assert "999999" in body["error"]


def test_detail_with_an_unknown_leaf_is_404(client, root, viewer):
    url = reverse("api-session-detail", args=[session_of("alice@example.com").id])
    body = get_json(client, url, status=404, leaf="no-such-entry")
    assert "no-such-entry" in body["error"]


def test_detail_with_a_leaf_shows_the_thread_up_to_it(client, root, viewer):
    url = reverse("api-session-detail", args=[session_of("alice@example.com").id])
    body = get_json(client, url, leaf="s-1")
    assert body["leaf"] == "s-1"
    assert [e["id"] for e in body["entries"] if e["kind"] == "message"] == ["s-1"]


def test_raw_streams_the_original_file(client, root, viewer):
    response = client.get(reverse("api-session-raw", args=[session_of("alice@example.com").id]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == ALICE.encode()


def test_raw_refuses_a_file_outside_the_root_it_was_indexed_from(client, root, viewer, tmp_path):
    session = session_of("alice@example.com")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text("secret\n")
    Session.objects.filter(id=session.id).update(path=str(outside))
    response = client.get(reverse("api-session-raw", args=[session.id]))
    assert response.status_code == 404


def test_raw_serves_a_session_indexed_from_a_root_given_on_the_command_line(
    client, viewer, settings, tmp_path
):
    from django.core.management import call_command

    settings.SESSIONVIEWER_ROOTS = [f"fluux_xmpp={tmp_path / 'configured'}"]
    folder = tmp_path / "given" / "alice@example.com"
    folder.mkdir(parents=True)
    (folder / "history.jsonl").write_text(ALICE)
    call_command("index", f"fluux_xmpp={tmp_path / 'given'}", stdout=io.StringIO())
    response = client.get(reverse("api-session-raw", args=[Session.objects.get().id]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == ALICE.encode()


@pytest.fixture
def demo_claude(settings):
    root = settings.BASE_DIR / "demo" / "claude" / "projects"
    settings.SESSIONVIEWER_ROOTS = [f"claude_code={root}"]
    index_roots([RootSpec(root, "claude_code")])
    return root


def test_detail_lists_alternative_leaves_at_a_branch_point_and_shows_each(client, demo_claude, viewer):
    found = False
    for session in Session.objects.filter(kind="main"):
        url = reverse("api-session-detail", args=[session.id])
        body = get_json(client, url)
        points = [e for e in body["entries"] if e.get("alternatives")]
        if not points:
            continue
        found = True
        alternatives = points[0]["alternatives"]
        assert len(alternatives) >= 2
        assert body["leaf"] in body["leaves"]
        for leaf in alternatives:
            branch = get_json(client, url, leaf=leaf)
            assert branch["leaf"] == leaf
            assert leaf in [e["id"] for e in branch["entries"]]
    assert found, "the demo data should have a branch point"


def test_detail_marks_entries_before_a_compaction_as_compacted(client, demo_claude, viewer):
    compacted_sessions = 0
    for session in Session.objects.filter(kind="main"):
        body = get_json(client, reverse("api-session-detail", args=[session.id]))
        kinds = [e["kind"] for e in body["entries"]]
        if "compaction" not in kinds:
            continue
        compacted_sessions += 1
        boundary = kinds.index("compaction")
        assert all(e["compacted"] for e in body["entries"][:boundary] if e["kind"] == "message")
        assert not any(e["compacted"] for e in body["entries"][boundary + 1 :])
    assert compacted_sessions >= 1


def test_subagent_sessions_name_their_parent_and_the_tool_call_that_started_them(client, demo_claude, viewer):
    subagent = Session.objects.get(kind="subagent")
    body = get_json(client, reverse("api-session-detail", args=[subagent.id]))
    assert body["session"]["parent"] == subagent.parent_id
    parent = get_json(client, reverse("api-session-detail", args=[subagent.parent_id]))
    (child,) = parent["children"]
    calls = [b["call_id"] for e in parent["entries"] for b in e["blocks"] if b["type"] == "tool_call"]
    assert child["parent_tool_id"] in calls


def test_a_subagent_is_titled_by_its_task_and_counts_its_messages(client, demo_claude, viewer):
    subagent = Session.objects.get(kind="subagent")
    assert subagent.message_count > 0
    assert subagent.display_title != subagent.key


def test_a_slash_command_is_not_taken_for_the_sessions_title(client, demo_claude, viewer):
    for session in Session.objects.all():
        assert not session.display_title.startswith("<"), session.key


def test_detail_returns_a_slice_of_the_thread_with_offset_and_limit(client, demo_claude, viewer):
    session = Session.objects.filter(kind="main").order_by("-entry_count").first()
    url = reverse("api-session-detail", args=[session.id])
    whole = get_json(client, url)
    part = get_json(client, url, _offset=2, _limit=3)
    assert (part["total"], part["offset"]) == (whole["total"], 2)
    assert [e["id"] for e in part["entries"]] == [e["id"] for e in whole["entries"][2:5]]


def test_detail_with_a_bad_offset_is_400_naming_it(client, demo_claude, viewer):
    session = Session.objects.filter(kind="main").first()
    body = get_json(client, reverse("api-session-detail", args=[session.id]), status=400, _offset="-1")
    assert body["error"].startswith("_offset")


# Odd values get a 400 naming the parameter, on the page and its JSON twin alike

LIST = {"": "session-list", "/api": "api-session-list"}
SEARCH = {"": "session-list", "/api": "api-search"}


def error_of(response) -> str:
    assert response.status_code == 400, response.content
    if response["Content-Type"] == "application/json":
        return orjson.loads(response.content)["error"]
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    return response.content.decode()


@pytest.mark.parametrize("prefix", LIST)
@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("_page", "²"),
        ("_page", "٣"),
        ("_size", "１２"),
        ("_page", "9" * 400),
        ("parent", "9" * 400),
        ("root", "9" * 400),
        ("updated_since", "9999-99-99"),
        ("updated_before", "2025-02-08T10:00+99:00"),
        ("updated_since", "0001-01-01T00:00+01:00"),
        ("q", '"unclosed'),
        ("q", "AND OR NOT"),
        ("q", "*"),
        ("q", "NEAR("),
        ("q", "text:bread"),
        ("q", "bread\x00"),
    ],
)
def test_an_odd_list_parameter_is_a_400_naming_it(client, root, viewer, prefix, parameter, value):
    response = client.get(reverse(LIST[prefix]), {parameter: value})
    assert error_of(response).startswith(f"{parameter}: ")


@pytest.mark.parametrize("prefix", SEARCH)
@pytest.mark.parametrize("value", ["²", "٣", "9" * 400])
def test_an_odd_hits_page_is_a_400_naming_it(client, root, viewer, prefix, value):
    response = client.get(reverse(SEARCH[prefix]), {"q": "bread", "_hits_page": value})
    assert error_of(response).startswith("_hits_page: ")


@pytest.mark.parametrize("prefix", LIST)
def test_a_quoted_operator_is_searched_as_a_word(client, root, viewer, prefix):
    response = client.get(reverse(LIST[prefix]), {"q": '"OR" bread'})
    assert response.status_code == 200


@pytest.mark.parametrize("prefix", ["", "/api"])
@pytest.mark.parametrize(("parameter", "value"), [("_offset", "٣"), ("_offset", "9" * 400), ("_after", "²")])
def test_an_odd_transcript_parameter_is_a_400_naming_it(client, root, viewer, prefix, parameter, value):
    session = session_of("alice@example.com")
    name = "api-session-detail" if prefix else "session-detail"
    if prefix and parameter == "_after":
        parameter = "_limit"  # the API's slice; the page's live updates read _after
    response = client.get(reverse(name, args=[session.id]), {parameter: value})
    assert error_of(response).startswith(f"{parameter}: ")


# Each page and its /api/ twin read the query string with one form: the same 400 for a bad value

BAD_LIST_VALUES = [
    ("format", "word_doc"),
    ("_sort", "colour"),
    ("_sort_desc", "2"),
    ("_hits_page", "0"),
    ("_page", "x"),
    ("project", "a\x00b"),
    ("root", "0"),
]
LIST_TWINS = ["api-session-list", "api-session-facets", "api-search"]


def same_400(client, page_url: str, twin_url: str, params: dict) -> tuple[str, str]:
    return error_of(client.get(page_url, params)), error_of(client.get(twin_url, params))


@pytest.mark.parametrize("twin", LIST_TWINS)
@pytest.mark.parametrize(("parameter", "value"), BAD_LIST_VALUES)
def test_the_list_and_each_json_twin_give_the_same_400_naming_the_parameter(
    client, root, viewer, twin, parameter, value
):
    on_page, on_twin = same_400(
        client, reverse("session-list"), reverse(twin), {"q": "bread", parameter: value}
    )
    assert on_page == on_twin
    assert on_page.startswith(f"{parameter}: ")


@pytest.mark.parametrize(("parameter", "value"), [p for p in BAD_LIST_VALUES if p[0] != "_hits_page"])
def test_the_activity_page_and_its_twin_give_the_same_400_naming_the_parameter(
    client, root, viewer, parameter, value
):
    on_page, on_twin = same_400(client, reverse("activity"), reverse("api-activity"), {parameter: value})
    assert on_page == on_twin
    assert on_page.startswith(f"{parameter}: ")


@pytest.mark.parametrize(
    ("parameter", "value"),
    [
        ("_offset", "-1"),
        ("_after", "x"),
        ("_limit", "²"),
        ("_read", "y"),
        ("_before", "x"),
        ("leaf", "a\x00b"),
        ("entry", "a\x00b"),
    ],
)
def test_the_transcript_and_its_twin_give_the_same_400_naming_the_parameter(
    client, root, viewer, parameter, value
):
    session = session_of("alice@example.com")
    urls = reverse("session-detail", args=[session.id]), reverse("api-session-detail", args=[session.id])
    on_page, on_twin = same_400(client, *urls, {parameter: value})
    assert on_page == on_twin
    assert on_page.startswith(f"{parameter}: ")


def test_a_400_page_is_plain_text_so_the_value_it_quotes_is_never_html(client, root, viewer):
    response = client.get(reverse("session-list"), {"_page": "<script>alert(1)</script>"})
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert error_of(response).startswith("_page: ")


def test_raw_gives_a_file_whose_name_has_cr_lf_with_the_name_encoded(client, root, viewer):
    archives = root / "carol@example.com" / "sessions"
    archives.mkdir(parents=True)
    odd = archives / "evil\r\nSet-Cookie: x=1.jsonl"
    odd.write_text(ALICE.replace("alice", "carol"))
    index_roots([RootSpec(root, "fluux_xmpp")])
    session = Session.objects.get(path=str(odd))
    response = client.get(reverse("api-session-raw", args=[session.id]))
    assert response.status_code == 200
    assert response["Content-Disposition"] == "inline; filename*=utf-8''evil%0D%0ASet-Cookie%3A%20x%3D1.jsonl"
    assert "Set-Cookie" not in response.headers
    assert b"".join(response.streaming_content) == odd.read_bytes()


def test_raw_of_a_session_file_replaced_by_a_fifo_is_404_without_opening_it(client, root, viewer, fifo):
    session = session_of("alice@example.com")
    fifo(Path(session.path))
    response = client.get(reverse("api-session-raw", args=[session.id]))
    assert response.status_code == 404
    assert "not a regular file (a FIFO)" in orjson.loads(response.content)["error"]
