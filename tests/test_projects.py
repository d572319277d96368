"""A project's page and its JSON twin, and a Fluux JID's usage panel on its workspace page."""

import builtins
import html
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.template import engines
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessionviewer import projects
from sessionviewer.index import index_roots
from sessionviewer.models import Entry, Session, Source
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db

PROJECT = "/srv/me/my app/ünï/../über"  # outside a home: the key is the path as it is
OTHER = "/srv/me/elsewhere"
ALICE = "alice@example.com"


def _call(name: str, call_id: str = "") -> dict:
    block = {"type": "tool_call", "name": name, "arguments": {"command": "ls"}}
    if call_id:
        block["call_id"] = call_id
    return block


def _entry(session: Session, line: int, blocks: list[dict]) -> Entry:
    return Entry.objects.create(
        session=session, line=line, offset=line * 100, entry_id=f"e{line}", kind="message", blocks=blocks
    )


@pytest.fixture
def project(db):
    """Two main sessions of PROJECT, one with a subagent that has a fork of its own; a
    session of another project; tool calls, one copied into a continued session."""
    source = Source.objects.create(path="/roots/claude", format="claude_code")
    now = timezone.now()

    def session(key, project=PROJECT, parent=None, kind="main", branch="main", cost=0.25, days=1, **more):
        started = now - timedelta(days=days)
        return Session.objects.create(
            source=source,
            key=key,
            path=f"/roots/claude/{key}.jsonl",
            format="claude_code",
            kind=kind,
            parent=parent,
            title=key,
            project=project,
            git_branch=branch,
            started_at=started,
            updated_at=started + timedelta(hours=1),
            input_tokens=1000,
            output_tokens=100,
            cost=cost,
            model_costs={"claude-opus-4-6": {"tokens": 1100, "cost": cost}},
            **more,
        )

    first = session("first", days=3)
    helper = session("helper", parent=first, kind="subagent", cost=0.5, days=3)
    fork = session("fork-of-helper", parent=helper, kind="fork", branch="", cost=0.125, days=3)
    second = session("second", branch="feature/ünï", cost=None, unpriced_tokens=1100, days=1)
    elsewhere = session("elsewhere", project=OTHER, branch="other-branch", cost=9.0)
    _entry(first, 1, [{"type": "text", "text": "running"}, _call("Bash", "c1"), _call("Read", "c2")])
    _entry(first, 2, [{"type": "tool_result", "call_id": "c1", "text": '{"type":"tool_call"}'}])
    _entry(helper, 1, [_call("Bash", "c3")])
    _entry(fork, 1, [_call("Grep")])
    _entry(second, 1, [_call("Bash", "c1")])  # the first session's call, copied as it continues
    _entry(second, 2, [_call("Bash"), _call("Bash")])  # two calls without an id: two calls
    _entry(elsewhere, 1, [_call("Write", "c9")])
    return {"first": first, "helper": helper, "fork": fork, "second": second, "elsewhere": elsewhere}


def _get(client, name, project=PROJECT, status=200, **params):
    response = client.get(reverse(name, args=[project]), params)
    assert response.status_code == status, response.content[:2000]
    return response


# --- The key in the URL -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/home/me/app",
        "/home/me/my app",
        "/home/me/ünï/日本",
        "/home/me/../etc/passwd",
        "..",
        "C:\\Users\\me\\app",
        "/a%2Fb/~41/+plus/",
        "//two//slashes",
    ],
)
def test_every_project_path_has_a_key_that_reads_back(path):
    key = projects.encode_key(path)
    assert "/" not in key and "." not in key and "%" not in key
    assert projects.decode_key(key) == path


@pytest.mark.parametrize("key", ["~41", "~2f", "~FF", "~00", "~2", "a.b", "", "~C3~28"])
def test_a_key_encode_key_would_not_make_is_refused(key):
    with pytest.raises(ValueError):
        projects.decode_key(key)


@pytest.mark.parametrize("prefix", ["/projects/", "/api/projects/"])
@pytest.mark.parametrize("key", ["~41", "~2f", "~FF", "~00", "a.b", "~2E~2E", "%2Fetc"])
def test_a_malformed_or_unknown_key_is_404(client, viewer, project, prefix, key):
    assert client.get(f"{prefix}{key}" + ("/" if prefix == "/projects/" else "")).status_code == 404


def test_a_project_path_in_the_url_is_only_compared_never_opened(client, viewer, project, monkeypatch):
    _get(client, "project-detail", OTHER)  # templates loaded and cached before the watch starts
    opened = []
    real_open = builtins.open

    def watching_open(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", watching_open)
    for path in (PROJECT, "/etc/passwd", "/etc/../etc/passwd", "../../../../etc/passwd"):
        client.get(reverse("project-detail", args=[path]))
        client.get(reverse("api-project-detail", args=[path]))
    assert not [name for name in opened if "passwd" in name or "über" in name]


# --- The page and its twin --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["project-detail", "api-project-detail"])
def test_an_unknown_project_is_404(client, viewer, project, name):
    _get(client, name, "/srv/me/never-seen", status=404)


@pytest.mark.parametrize("name", ["project-detail", "api-project-detail"])
@pytest.mark.parametrize(("parameter", "value"), [("_range", "14"), ("_page", "first")])
def test_a_bad_parameter_is_a_400_naming_it(client, viewer, project, name, parameter, value):
    response = _get(client, name, status=400, **{parameter: value})
    assert parameter in response.content.decode()


def test_the_page_nests_subagents_and_forks_under_their_parents(client, viewer, project):
    body = _get(client, "project-detail").content.decode()
    order = [body.index(f">{key}</a>") for key in ("second", "first", "helper", "fork-of-helper")]
    assert order == sorted(order)
    assert '<tr class="depth-1">' in body and '<tr class="depth-2">' in body
    assert ">elsewhere</a>" not in body


def test_the_twin_lists_the_same_sessions_with_their_depth(client, viewer, project):
    body = _get(client, "api-project-detail").json()
    assert body["project"] == PROJECT
    assert [(s["title"], s["depth"]) for s in body["sessions"]] == [
        ("second", 0),
        ("first", 0),
        ("helper", 1),
        ("fork-of-helper", 2),
    ]
    assert body["sessions"][2]["parent"] == project["first"].id
    assert body["page"] == {"number": 1, "pages": 1, "top_level": 2}


def test_a_subagent_whose_parent_is_in_another_project_is_shown_at_the_top(client, viewer, project):
    Session.objects.filter(id=project["first"].id).update(project=OTHER)
    body = _get(client, "api-project-detail").json()
    assert ("helper", 0) in [(s["title"], s["depth"]) for s in body["sessions"]]


def test_tools_are_counted_by_name_once_per_call(client, viewer, project):
    tools = _get(client, "api-project-detail").json()["tools"]
    # Bash: c1 (twice in the files, once counted), c3 and two calls without an id.
    assert tools == [
        {"name": "Bash", "calls": 4},
        {"name": "Grep", "calls": 1},
        {"name": "Read", "calls": 1},
    ]


def test_the_page_draws_the_most_used_tools(client, viewer, project):
    body = _get(client, "project-detail").content.decode()
    assert '<title id="chart-tools-title">Most used tools</title>' in body
    assert '<td>Bash</td><td class="num">4</td>' in body


def test_past_tool_sessions_the_tools_are_those_of_the_newest_sessions(client, viewer, project, monkeypatch):
    monkeypatch.setattr("sessionviewer.projects.TOOL_SESSIONS", 1)
    body = _get(client, "api-project-detail").json()
    # "second", updated last: the first session's c1 copied into it, and two calls without an id.
    assert (body["tools"], body["tools_sessions"]) == ([{"name": "Bash", "calls": 3}], 1)
    assert body["totals"]["sessions"] == 4  # the other figures still cover every session


def test_the_tools_chart_says_it_counts_the_newest_sessions_only(client, viewer, project, monkeypatch):
    monkeypatch.setattr("sessionviewer.projects.TOOL_SESSIONS", 1)
    body = _get(client, "project-detail").content.decode()
    assert '<title id="chart-tools-title">Most used tools in the newest 1 sessions</title>' in body


def test_the_tools_cover_every_session_up_to_tool_sessions(client, viewer, project):
    body = _get(client, "api-project-detail").json()
    assert body["tools_sessions"] == 4


def test_a_session_that_switched_branches_counts_on_each(client, viewer, project):
    Session.objects.filter(id=project["second"].id).update(git_branches=["main", "feature/ünï"])
    body = _get(client, "api-project-detail").json()
    assert [(b["branch"], b["sessions"]) for b in body["branches"]] == [("feature/ünï", 1), ("main", 3)]


def _branches_counted_afresh(qs) -> list[tuple]:
    """(branch, sessions, last) of every branch named, read session by session."""
    found: dict[str, list] = {}
    for session in qs.exclude(git_branch=""):
        for branch in {session.git_branch, *session.git_branches}:
            row = found.setdefault(branch, [0, None])
            row[0] += 1
            if session.updated_at and (row[1] is None or session.updated_at > row[1]):
                row[1] = session.updated_at
    return sorted((branch, n, last) for branch, (n, last) in found.items())


def test_the_branches_are_those_counted_session_by_session(project):
    # Sessions alike and not: the same branches in another order, none kept, a quote, a
    # backslash, the last branch among the others, one never updated.
    first, helper, second = project["first"], project["helper"], project["second"]
    Session.objects.filter(id=first.id).update(git_branches=["main", 'fix/"q"\\'])
    Session.objects.filter(id=helper.id).update(git_branches=['fix/"q"\\', "main"], updated_at=None)
    Session.objects.filter(id=second.id).update(git_branches=[])
    for n in range(3):
        Session.objects.create(
            source=first.source, key=f"more-{n}", path=f"/roots/claude/more-{n}.jsonl", format="claude_code",
            project=PROJECT, git_branch="main", git_branches=["main"],
            updated_at=timezone.now() - timedelta(days=n),
        )  # fmt: skip
    sessions = projects.project_sessions(PROJECT)
    found = [(b["branch"], b["sessions"], b["last"]) for b in projects.branches(sessions)]
    assert sorted(found) == _branches_counted_afresh(sessions)
    assert len(found) == 3 and found[0][0] == "main"  # the latest written first


def test_the_git_branches_seen_are_listed_latest_first(client, viewer, project):
    body = _get(client, "api-project-detail").json()
    assert [(b["branch"], b["sessions"]) for b in body["branches"]] == [("feature/ünï", 1), ("main", 2)]
    page = html.unescape(_get(client, "project-detail").content.decode())
    assert "<code>feature/ünï</code>" in page and "other-branch" not in page


def test_the_cost_is_the_sum_of_the_sessions_costs_subagents_counted_once(client, viewer, project):
    totals = _get(client, "api-project-detail").json()["totals"]
    sessions = Session.objects.filter(project=PROJECT)
    assert totals["sessions"] == 4
    assert totals["cost"] == pytest.approx(sum(s.cost or 0 for s in sessions)) == pytest.approx(0.875)
    assert totals["unpriced_tokens"] == 1100
    assert totals["tokens"] == sum(s.total_tokens for s in sessions)


def test_the_charts_over_time_add_up_to_the_totals(client, viewer, project):
    body = _get(client, "api-project-detail").json()
    assert sum(d["sessions"] for d in body["days"]) == body["totals"]["sessions"]
    assert sum(d["tokens"] for d in body["days"]) == body["totals"]["tokens"]
    assert sum(d["cost"] for d in body["days"]) == pytest.approx(body["totals"]["cost"])
    assert sum(m["tokens"] for m in body["models"]) == body["totals"]["tokens"]


def test_the_range_narrows_every_figure(client, viewer, project):
    body = _get(client, "api-project-detail", _range="7").json()
    assert body["range"]["name"] == "7" and body["totals"]["sessions"] == 4
    Session.objects.filter(key="second").update(started_at=datetime(2020, 1, 1, tzinfo=UTC))
    body = _get(client, "api-project-detail", _range="7").json()
    assert body["totals"]["sessions"] == 3
    assert "second" not in [s["title"] for s in body["sessions"]]
    assert {"name": "Bash", "calls": 2} in body["tools"]


def test_the_page_draws_tokens_and_cost_over_time(client, viewer, project):
    body = _get(client, "project-detail").content.decode()
    assert '<title id="chart-tokens_per_day-title">' in body
    assert '<title id="chart-cost_per_day-title">' in body
    assert reverse("api-project-detail", args=[PROJECT]) in body


def test_an_htmx_request_gets_only_the_usage_panel(client, viewer, project):
    body = client.get(reverse("project-detail", args=[PROJECT]), {"_range": "30"}, HTTP_HX_REQUEST="true")
    text = body.content.decode()
    assert "<html" not in text and text.lstrip().startswith('<div id="usage-panel"')


def test_the_sessions_are_paged_by_top_level_session(client, viewer, project, monkeypatch):
    monkeypatch.setattr(projects, "PAGE_SIZE", 1)
    body = _get(client, "api-project-detail", _page="2").json()
    assert [s["title"] for s in body["sessions"]] == ["first", "helper", "fork-of-helper"]
    assert body["page"] == {"number": 2, "pages": 2, "top_level": 2}


def test_a_pages_statements_do_not_grow_with_its_rows(client, viewer, project):
    """The rows' sessions hold only the columns a row shows (projects.USAGE_ROW_FIELDS): one read
    of another column would be a statement per row. The same count for 4 sessions and for 24."""

    def statements() -> tuple[int, int]:
        counts = []
        for name in ("project-detail", "api-project-detail"):
            with CaptureQueriesContext(connection) as seen:
                _get(client, name, _range="all")
            counts.append(len(seen))
        return tuple(counts)

    before = statements()
    first = project["first"]
    for n in range(10):
        parent = Session.objects.create(
            source=first.source, key=f"more-{n}", format="claude_code", project=PROJECT, title=f"more {n}",
            started_at=first.started_at, updated_at=first.updated_at, git_branch="main",
            models_used=["claude-opus-4-6"], input_tokens=10, cost=0.01,
        )  # fmt: skip
        Session.objects.create(
            source=first.source, key=f"more-{n}-helper", format="claude_code", project=PROJECT,
            kind="subagent", parent=parent, started_at=first.started_at, updated_at=first.updated_at,
        )  # fmt: skip
    assert statements() == before
    rows = projects.usage_report(projects.project_sessions(PROJECT), {"_range": "all"})["rows"]
    assert len(rows) == 24
    assert all(
        {"usage_lines", "model_costs", "extra"} <= row["session"].get_deferred_fields() for row in rows
    )


# --- Links to it --------------------------------------------------------------------------------------------


def test_the_list_links_each_project_name_to_its_page(client, viewer, project):
    body = client.get(reverse("session-list")).content.decode()
    assert f'<a href="{reverse("project-detail", args=[PROJECT])}">' in body
    assert f'<a href="{reverse("project-detail", args=[OTHER])}">' in body


def test_the_transcript_header_links_the_project(client, viewer, project):
    body = client.get(reverse("session-detail", args=[project["first"].id])).content.decode()
    assert f'<dd><a href="{reverse("project-detail", args=[PROJECT])}">' in body


def test_activity_links_each_project_row_to_its_page(client, viewer, project):
    body = client.get(reverse("activity")).content.decode()
    url = reverse("project-detail", args=[PROJECT])
    assert f'<a href="{url}"><text' in body  # the chart's label
    assert f'<td><a href="{url}">' in body  # the chart's numbers
    # An image role holds nothing to click (axe: nested-interactive): a chart of links is a group.
    assert 'role="group" aria-labelledby="chart-tokens_per_place-title"' in body
    assert 'role="img" aria-labelledby="chart-tokens_per_format-title"' in body
    places = client.get(reverse("api-activity")).json()["places"]
    assert {p["place"]: p["url"] for p in places}[PROJECT] == url


def test_every_demo_project_page_opens(client, viewer, demo):
    for path in Session.objects.exclude(project="").values_list("project", flat=True).distinct():
        assert _get(client, "project-detail", path).status_code == 200


# --- A Fluux JID: its workspace page gains the panel ---------------------------------------------------------


@pytest.fixture
def indexed_memory(memory):
    index_roots([RootSpec(memory, "fluux_xmpp")])
    return memory


def test_the_jid_page_shows_the_usage_of_its_sessions(client, viewer, indexed_memory, django_user_model):
    viewer.user_permissions.add(*_workspace_permissions())
    body = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    indexed = Session.objects.filter(jid=ALICE)
    assert indexed.exists()
    assert '<h2 id="usage-title">Usage and cost</h2>' in body
    assert f"<div>{indexed.count()}<span>sessions</span></div>" in body
    assert '<title id="chart-sessions_per_day-title">' in body
    # Fluux records no tokens: charts of nothing but zeros are left out.
    assert '<title id="chart-tokens_per_day-title">' not in body


def test_the_jid_twin_gains_the_same_numbers(client, viewer, indexed_memory):
    viewer.user_permissions.add(*_workspace_permissions())
    body = client.get(reverse("api-workspace-jid", args=[0, ALICE])).json()
    indexed = Session.objects.filter(jid=ALICE)
    assert body["usage"]["totals"]["sessions"] == indexed.count()
    assert body["usage"]["totals"]["tokens"] == sum(s.total_tokens for s in indexed)
    assert {s["id"] for s in body["usage"]["sessions"]} == {s.id for s in indexed}


def test_the_jid_panel_reads_its_range_and_refuses_a_bad_one(client, viewer, indexed_memory):
    viewer.user_permissions.add(*_workspace_permissions())
    assert client.get(reverse("workspace-jid", args=[0, ALICE]), {"_range": "14"}).status_code == 400
    response = client.get(reverse("api-workspace-jid", args=[0, ALICE]), {"_range": "14"})
    assert response.status_code == 400 and "_range" in response.json()["error"]
    fragment = client.get(
        reverse("workspace-jid", args=[0, ALICE]), {"_range": "all"}, HTTP_HX_REQUEST="true"
    )
    assert fragment.content.decode().lstrip().startswith('<div id="usage-panel"')


def test_a_jid_on_activity_links_its_workspace_page_for_who_may_read_it(
    client, indexed_memory, django_user_model
):
    from django.contrib.auth.models import Permission

    jid_page = reverse("workspace-jid", args=[0, ALICE])
    reader = django_user_model.objects.create_user("rita", password="pw")
    reader.user_permissions.add(
        Permission.objects.get(codename="view_session", content_type__app_label="sessionviewer")
    )
    client.force_login(reader)

    def places():
        found = client.get(reverse("api-activity"), {"_range": "all"}).json()["places"]
        return {p["place"]: p["url"] for p in found}

    assert places()[ALICE] is None  # someone who reads sessions only: no link to a page they may not open
    assert f'href="{jid_page}"' not in client.get(reverse("activity"), {"_range": "all"}).content.decode()
    reader.user_permissions.add(*_workspace_permissions())
    client.force_login(django_user_model.objects.get(id=reader.id))  # permissions are cached per object
    assert places()[ALICE] == jid_page
    assert f'<a href="{jid_page}">' in client.get(reverse("activity"), {"_range": "all"}).content.decode()


def _workspace_permissions():
    from django.contrib.auth.models import Permission

    return Permission.objects.filter(codename="view_workspace")


def test_tools_are_counted_whatever_their_blocks_hold(client, viewer, project):
    # NUL escaped in JSON text (PostgreSQL's jsonb refuses it), a name that is not a string.
    _entry(project["second"], 3, [{"type": "tool_call", "name": "Nul\x00Tool", "arguments": {"x": "\x00"}}])
    _entry(project["second"], 4, [{"type": "tool_call", "name": 42}, {"type": "tool_call"}])
    names = {t["name"]: t["calls"] for t in _get(client, "api-project-detail").json()["tools"]}
    assert names["Nul\ufffdTool"] == 1 and names["42"] == 1 and names["(no name)"] == 1


def test_all_of_a_projects_time_ends_at_its_last_session_not_today(client, viewer, project):
    Session.objects.filter(project=PROJECT).update(started_at=datetime(2025, 1, 6, 12, tzinfo=UTC))
    body = _get(client, "api-project-detail").json()
    assert body["range"]["until"] == "2025-01-06"
    assert [d["day"] for d in body["days"]] == ["2025-01-06"]


def test_the_heading_shows_the_whole_path_breakable_at_its_separators(client, viewer, project):
    body = _get(client, "project-detail").content.decode()
    assert '<h1 class="project-name">/<wbr>srv/<wbr>me/<wbr>my app/<wbr>' in body


def test_a_renamed_tool_is_counted_under_its_new_name(client, viewer, project):
    # Claude Code renamed its subagent tool from Task to Agent: one tool, counted once.
    _entry(project["second"], 3, [_call("Task", "t1")])
    _entry(project["second"], 4, [_call("Agent", "t2")])
    names = {t["name"]: t["calls"] for t in _get(client, "api-project-detail").json()["tools"]}
    assert names["Agent"] == 2
    assert "Task" not in names


# A row of the sessions table as _usage.html made it before display.usage_row, kept as main
# had it: the rows must come out the same, byte for byte.
USAGE_ROW_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "usage_row_before_python.html"
HOSTILE = '<script>alert("x")</script> & \u202e\x07'


def usage_rows() -> list[dict]:
    """Rows taking every branch of usage_row, hostile values where a session file puts text."""
    now = timezone.now()
    variants = [
        {},
        {
            "title": HOSTILE,
            "kind": HOSTILE,
            "status": HOSTILE,
            "git_branch": HOSTILE,
            "models_used": [HOSTILE, "b"],
        },
        {"summary_title": "word " * 40, "status": "idle", "models_used": None, "token_total": 0},
        {"first_prompt": "STRIPE_SECRET_KEY=sk_live_51Hq2mN7pL4rT9wK3sBxY please", "git_branch": "main"},
        {"token_total": 1_234_567, "cost": 0.25, "unpriced_tokens": 10, "message_count": 12_345},
        {"started_at": now - timedelta(minutes=90), "updated_at": datetime(2024, 2, 29, 23, 59, tzinfo=UTC)},
    ]
    rows = []
    for number, variant in enumerate(variants, start=1):
        session = Session(id=number, key="k", kind="main", status="active", format="claude_code")
        session.source = Source(machine=HOSTILE if number % 2 else "laptop")
        session.token_total = 321
        for name, value in variant.items():
            setattr(session, name, value)
        rows += [{"session": session, "depth": depth} for depth in (0, 1, 3, 5)]
    return rows


@pytest.mark.parametrize("machines", [["one"], ["one", "two"]])
@pytest.mark.parametrize("row", usage_rows())
def test_a_usage_row_is_what_its_template_made(row, machines):
    context = {"row": row, "report": {"machines": machines}}
    expected = engines["django"].from_string(USAGE_ROW_TEMPLATE.read_text()).render(context)
    tag = engines["django"].from_string("{% load display %}{% usage_row row machines=report.machines %}")
    assert "\n      " + tag.render(context) == expected


def test_a_usage_row_masks_a_credential_and_escapes_the_rest():
    row = engines["django"].from_string("{% load display %}{% usage_row row machines=m %}")
    assert "sk_live_" not in row.render({"row": usage_rows()[12], "m": []})
    hostile = row.render({"row": usage_rows()[4], "m": ["a", "b"]})
    assert "<script>" not in hostile and "&lt;script&gt;" in hostile
