"""The session list, mended: the title sort, an inclusive end date, the Kind facet, and
subagents nested under their parents; its rows, built in Python, as the row template made them."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.http import QueryDict
from django.template import engines
from django.urls import reverse
from django.utils import timezone

from sessionviewer import filters
from sessionviewer.filters import SORTS
from sessionviewer.forms import SessionListForm
from sessionviewer.models import Session, Source

from .pages import page

pytestmark = pytest.mark.django_db


def titles(body: str) -> list[str]:
    table = body[body.index('<table class="sessions">') :]
    return re.findall(
        r'<td>(?:<span class="nest"[^>]*>[^<]*</span>)?<a href="/sessions/\d+/">([^<]*)</a>', table
    )


def test_the_title_sort_follows_the_title_shown(client, demo, viewer):
    body = page(client, reverse("session-list"), _sort="title", _sort_desc="0", _flat="1")
    shown = titles(body)
    assert shown == sorted(shown, key=str.lower)
    assert len(shown) == Session.objects.count()


def test_a_one_day_range_shows_that_day(client, demo, viewer):
    from datetime import UTC, datetime, time, timedelta

    day = (
        Session.objects.exclude(updated_at=None)
        .order_by("updated_at")
        .first()
        .updated_at.astimezone(UTC)
        .date()
    )
    start = datetime.combine(day, time.min, tzinfo=UTC)  # a date alone is a UTC day
    on_that_day = Session.objects.filter(
        updated_at__gte=start, updated_at__lt=start + timedelta(days=1)
    ).count()
    body = page(client, reverse("session-list"), updated_since=str(day), updated_until=str(day), _flat="1")
    assert f"{on_that_day} session{'s' if on_that_day != 1 else ''}" in body
    assert on_that_day > 0


def test_updated_until_at_a_moment_includes_that_moment(client, demo, viewer):
    first = Session.objects.exclude(updated_at=None).order_by("updated_at").first()
    moment = first.updated_at.isoformat()
    rows = client.get(reverse("api-session-list"), {"updated_until": moment, "_flat": "1"}).json()["sessions"]
    assert first.id in [row["id"] for row in rows]
    before = client.get(reverse("api-session-list"), {"updated_before": moment, "_flat": "1"}).json()
    assert first.id not in [row["id"] for row in before["sessions"]]  # updated_before stays exclusive


@pytest.mark.parametrize("end", ["updated_until", "updated_before"])
def test_an_inverted_range_is_a_400_that_says_so(client, demo, viewer, end):
    response = client.get(reverse("session-list"), {"updated_since": "2026-03-05", end: "2026-03-01"})
    assert response.status_code == 400
    assert response.content.decode().startswith(f"{end}: ends before the range starts")


def test_the_kind_facet_counts_main_sessions_and_subagents(client, demo, viewer):
    body = page(client, reverse("session-list"))
    facet = body[body.index('data-facet="kind"') :]
    facet = facet[: facet.index("</section>")]
    assert (
        "subagent" in facet
        and f'<span class="n">{Session.objects.filter(kind="subagent").count()}</span>' in facet
    )


def test_a_subagent_is_listed_under_its_parent_and_flat_on_request(client, demo, viewer):
    child = Session.objects.get(kind="subagent")
    body = page(client, reverse("session-list"), _sort="title", _sort_desc="0")
    shown = [title[:40] for title in titles(body)]
    assert shown.index(child.display_title[:40]) == shown.index(child.parent.display_title[:40]) + 1
    assert '<tr class="nested">' in body and "list them flat" in body
    flat = page(client, reverse("session-list"), _flat="1")
    assert '<tr class="nested">' not in flat and child.display_title in titles(flat)
    listed = client.get(reverse("api-session-list")).json()
    parent = next(row for row in listed["sessions"] if row["id"] == child.parent_id)
    assert [row["id"] for row in parent["subagents"]] == [child.id] and listed["nested"] is True
    assert child.id not in [row["id"] for row in listed["sessions"]]


def test_a_subagent_whose_parent_is_filtered_out_keeps_its_own_row(client, demo, viewer):
    child = Session.objects.get(kind="subagent")
    body = page(client, reverse("session-list"), kind="subagent")
    assert titles(body) == [child.display_title]


def test_the_raw_file_link_shows_only_where_there_is_a_file(client, demo, viewer, tmp_path):
    session = Session.objects.filter(kind="main").first()
    assert "Raw file</a>" in page(client, session.get_absolute_url())
    Session.objects.filter(id=session.id).update(path=str(tmp_path / "gone.jsonl"))
    assert "Raw file</a>" not in page(client, session.get_absolute_url())


# The list at 1280 px: what the server sends for it


def header_labels(body: str) -> list[str]:
    head = body[body.index('<table class="sessions">') : body.index("</thead>")]
    return [re.sub(r"<[^>]+>", "", cell) for cell in re.findall(r"<th[^>]*>(.*?)</th>", head)]


def test_header_labels_may_wrap_only_once_after_their_first_separator(client, demo, viewer):
    labels = header_labels(page(client, reverse("session-list")))
    assert "Agent\u00a0· channel\u00a0·\u00a0peer" in labels
    assert [label for label in labels if label.count(" ") > 1] == []


def test_a_long_project_path_is_cut_from_the_left_whole_on_hover_and_wraps_only_after_a_separator(
    client, demo, viewer
):
    long = "/srv/build/agents/workspaces/team-alpha/projects/webshop"  # outside any home: not folded
    Session.objects.filter(project="~/projects/webshop").update(project=long)
    body = page(client, reverse("session-list"))
    assert f'<span class="path" title="{long}">…/<wbr>' in body
    assert "projects/<wbr>webshop</span>" in body


def test_a_jid_wraps_only_after_its_at_or_before_a_dot(client, demo, viewer):
    body = page(client, reverse("session-list"), format="fluux_xmpp")
    assert "dev@<wbr>conference<wbr>.example<wbr>.com" in body


def test_each_model_name_is_kept_whole(client, demo, viewer):
    body = page(client, reverse("session-list"), _flat="1")
    assert '<span class="model">claude-sonnet-4-5-20250929</span>' in body
    assert re.search(
        r'<span class="model">qwen3\.5:9b</span>, <span class="model">gpt-5\.4</span>', body
    ) or ('<span class="model">claude-sonnet-4-5</span>, <span class="model">claude-opus-4-6</span>' in body)


def test_a_date_outside_the_current_year_shows_its_year(client, demo, viewer):
    old = Session.objects.exclude(updated_at=None).order_by("updated_at").first()
    assert old.updated_at.year < 2026
    body = page(client, reverse("session-list"), _flat="1")
    day = old.updated_at.astimezone(timezone.get_current_timezone())
    assert f">{day.day} {day:%b} {day.year}</time>" in body


def test_every_column_of_the_list_sorts_by_a_key_the_form_accepts():
    assert {key for _, key in filters.columns(machines=True)} <= set(SORTS)
    assert filters.columns(machines=True)[-1] == filters.MACHINE_COLUMN  # last: the CSS places it there
    assert filters.MACHINE_COLUMN not in filters.columns(machines=False)


# The row template the list used before its rows were built in Python (display.session_row),
# kept as main had it: the rows must come out the same, byte for byte.
ROW_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "session_row_before_python.html"
HOSTILE = '<script>alert("x")</script> & \u202e\x07'
KEY = "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB"  # as tests/secret_inputs.py writes one


def as_template(session, nested: bool, machines: bool) -> str:
    template = engines["django"].from_string(ROW_TEMPLATE.read_text())
    return template.render({"session": session, "nested_row": nested, "machines": machines})


def as_tag(session, nested: bool, machines: bool) -> str:
    template = engines["django"].from_string("{% load display %}{% session_row session nested=nested_row %}")
    return template.render({"session": session, "nested_row": nested, "machines": machines})


def row_sessions() -> list[Session]:
    """Sessions taking every branch of a row, hostile values where a session file puts text."""
    now = timezone.now()
    plain = {
        "format": "claude_code",
        "kind": "main",
        "status": "active",
        "key": "k",
        "project": "/home/me/app",
    }
    variants = [
        {},
        {"title": HOSTILE, "agent": HOSTILE, "channel": HOSTILE, "peer_kind": HOSTILE, "project": HOSTILE},
        {"summary_title": "word " * 40, "kind": "subagent", "status": "idle"},
        {"first_prompt": f"ANTHROPIC_API_KEY={KEY} deploy it", "format": "someday<agent>"},
        {"key": "only-a-key", "project": "", "jid": "dev@conference.example.com", "format": "fluux_xmpp"},
        {"project": "", "jid": HOSTILE, "channel": "telegram", "peer_kind": "group"},
        {"agent": "main", "peer_kind": "direct", "kind": HOSTILE, "status": HOSTILE},
        {"project": "/home/me/src/spotter-worktrees/spotter-4te", "extra": {"unknown_entries": {"a": 1}}},
        {"project": "C:\\Users\\me\\src\\far\\away", "extra": {"unknown_entries": {"a": 2, "b": "x"}}},
        {"index_error": HOSTILE * 20, "possible_secrets": 1},
        {"possible_secrets": 3, "models_used": [HOSTILE, "claude-sonnet-4-5"], "input_tokens": 12_345},
        {"models_used": None, "output_tokens": 7, "cost": 0.5, "unpriced_tokens": 0},
        {"input_tokens": 2_000_000, "cost": None, "unpriced_tokens": 2_000_000},
        {"input_tokens": 10, "cost": 0.00001, "unpriced_tokens": 5, "cache_read_tokens": 3},
        {"cost": 0, "input_tokens": 1, "cache_write_tokens": 1_500_000_000, "message_count": 1_234_567},
        {"started_at": now - timedelta(hours=3, minutes=30), "updated_at": now - timedelta(days=3, hours=1)},
        {"started_at": datetime(2024, 2, 29, 23, 59, 59, 999_999, tzinfo=UTC), "updated_at": None},
    ]
    sessions = []
    for number, variant in enumerate(variants, start=1):
        session = Session(id=number, source=Source(machine=HOSTILE if number % 2 else "laptop"))
        for name, value in {**plain, **variant}.items():
            setattr(session, name, value)
        sessions.append(session)
    return sessions


@pytest.mark.parametrize("machines", [False, True])
@pytest.mark.parametrize("nested", [False, True])
@pytest.mark.parametrize("session", row_sessions(), ids=lambda s: f"session-{s.id}")
def test_a_row_is_what_the_row_template_made(session, nested, machines):
    assert as_tag(session, nested, machines) == as_template(session, nested, machines)


def test_a_row_groups_its_counts_as_the_template_did_when_the_setting_says_so(settings):
    settings.USE_THOUSAND_SEPARATOR = True
    session = row_sessions()[14]  # 1,234,567 messages
    assert "1,234,567" in as_tag(session, nested=False, machines=False)
    assert as_tag(session, nested=False, machines=False) == as_template(session, nested=False, machines=False)


def test_a_row_escapes_what_the_session_file_wrote():
    row = as_tag(row_sessions()[1], nested=False, machines=True)
    assert "<script>" not in row
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; \\u202e\\u0007" in row


def test_a_row_masks_a_credential_in_its_title():
    row = as_tag(row_sessions()[3], nested=False, machines=False)
    assert KEY not in row and "deploy it" in row


def test_the_list_shows_each_session_as_the_row_template_did(client, demo, viewer):
    body = page(client, reverse("session-list"), _flat="1", _size="100")
    params = SessionListForm.read(QueryDict("_flat=1&_size=100"))
    shown = filters.session_page(filters.nested(filters.filter_sessions(params), params)).object_list
    assert len(shown) == Session.objects.count()
    for session in shown:
        assert as_template(session, nested=False, machines=False) in body


# The same for a facet's value: main's <li> and its _facet_label.html, inlined.
FACET_ITEM_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "facet_item_before_python.html"


def facet_values() -> list[tuple[dict, dict]]:
    """(facet, value) pairs taking every branch of a facet's item, hostile labels among them."""
    long = "a-very-long-branch-name-" * 4
    pairs = [
        ("format", {"value": "claude_code", "label": "claude_code"}),
        ("format", {"value": HOSTILE, "label": HOSTILE}),
        (
            "root",
            {
                "value": "3",
                "label": f"{HOSTILE}: /home/me/.claude",
                "machine": HOSTILE,
                "path": "/home/me/.claude",
            },
        ),
        ("root", {"value": "4", "label": "/home/me/src/very/deep/sessions", "machine": "", "path": "/x"}),
        ("project", {"value": HOSTILE, "label": HOSTILE}),
        (
            "project",
            {
                "value": "/home/me/src/spotter-worktrees/spotter-4te",
                "label": "/home/me/src/spotter-worktrees/spotter-4te",
            },
        ),
        ("agent", {"value": long, "label": long}),
        ("channel", {"value": HOSTILE * 3, "label": HOSTILE * 3}),
        ("updated", {"value": "2026-03-01", "label": "2026-03"}),
    ]
    return [
        ({"name": name}, {**value, "count": count, "selected": selected, "link": f"?{name}=a&b=<c>"})
        for name, value in pairs
        for count, selected in ((1, False), (1_234_567, True))
    ]


# The filters' sections as the list's template looped over them before facet_sections.
FACET_LOOP = """{% load display %}{% for facet in facets %}
    <section class="facet" data-facet="{{ facet.name }}">
      <h2>{{ facet.label }}</h2>
      <ul>
      {% for v in facet.values %}
        {% facet_item facet v %}
      {% endfor %}
      </ul>
    </section>
    {% endfor %}"""


def test_the_filters_sections_are_what_the_template_loop_made():
    pairs = facet_values()
    facets = [
        {"name": HOSTILE, "label": f"Label {HOSTILE}", "values": [value for facet, value in pairs[:6]]},
        {"name": "updated", "label": "Updated", "values": [value for facet, value in pairs[6:]]},
        {"name": "empty", "label": "Nothing", "values": []},
    ]
    context = {"facets": facets}
    looped = engines["django"].from_string(FACET_LOOP).render(context)
    made = engines["django"].from_string("{% load display %}{% facet_sections facets %}").render(context)
    assert " ".join(made.split()) == " ".join(looped.split())
    assert HOSTILE not in made and made.count("<li") == len(pairs)


@pytest.mark.parametrize(("facet", "value"), facet_values())
def test_a_facet_value_is_what_its_template_made(facet, value):
    context = {"facet": facet, "v": value}
    expected = engines["django"].from_string(FACET_ITEM_TEMPLATE.read_text()).render(context)
    assert (
        engines["django"].from_string("{% load display %}{% facet_item facet v %}").render(context)
        == expected
    )
