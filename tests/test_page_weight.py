"""What the list, search and transcript pages pay per row: no query, date format or static lookup
a row (issue 27), and no column the page does not show. Counted, not timed: the same page for
N and 10N sessions does the same work where it must not grow."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from unittest import mock
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.template.defaultfilters import date as django_date
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from django.utils.dateformat import DateFormat

from sessionviewer.index import index_roots
from sessionviewer.models import Session, Source
from sessionviewer.roots import RootSpec
from sessionviewer.templatetags import display

from .go_agent_files import write_go_session

pytestmark = pytest.mark.django_db

START = datetime(2026, 1, 5, 9, 30, tzinfo=UTC)


def make_sessions(count: int, formats=("claude_code", "go_agent")) -> None:
    """count main sessions, each with a subagent (the list nests it), spread over formats."""
    source, _ = Source.objects.get_or_create(path="/nowhere")
    for n in range(count):
        moment = START + timedelta(hours=n)
        parent = Session.objects.create(
            source=source,
            format=formats[n % len(formats)],
            key=f"s{n}",
            path=f"/nowhere/s{n}.jsonl",
            title=f"Session {n}",
            project=f"/home/me/src/project-{n % 3}",
            started_at=moment,
            updated_at=moment,
            models_used=["model-a"],
            usage_lines={"turns": [n]},
            model_costs={"model-a": {"tokens": n, "cost": 0.0}},
            git_branches=["main"],
            input_tokens=n,
        )
        Session.objects.create(
            source=source,
            format=parent.format,
            key=f"s{n}/agent",
            path=f"/nowhere/s{n}/agent.jsonl",
            kind="subagent",
            parent=parent,
            title=f"Subagent {n}",
            started_at=moment,
            updated_at=moment,
        )


def list_page(client, **params):
    response = client.get(reverse("session-list"), {"_size": 500, **params})
    assert response.status_code == 200
    return response


# --- when: the list's two dates a row -------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns", "Pacific/Kiritimati"])
@pytest.mark.parametrize(
    "ago",
    [timedelta(seconds=5), timedelta(minutes=7), timedelta(hours=5), timedelta(hours=30), timedelta(days=3)]
    + [timedelta(days=40), timedelta(days=200), timedelta(days=800), timedelta(days=-3)],
)
def test_when_says_what_the_date_filter_said_in_every_zone(zone, ago):
    now = datetime(2026, 7, 1, 23, 30, 12, tzinfo=UTC)
    moment = now - ago
    with timezone.override(ZoneInfo(zone)), mock.patch.object(display.timezone, "now", return_value=now):
        local = timezone.localtime(moment)
        text = str(display.when(moment))
    exact = django_date(local, "Y-m-d H:i:s T")
    assert f'title="{exact}"' in text
    days = (now.astimezone(ZoneInfo(zone)).date() - local.date()).days
    if days >= 7 or days < 0:  # a date: as the filter wrote it
        shown = django_date(local, "j M" if local.year == now.astimezone(ZoneInfo(zone)).year else "j M Y")
        assert text.endswith(f">{shown}</time>")


def test_the_list_parses_no_date_format_per_row(client, viewer):
    def formats_for(count: int) -> int:
        Session.objects.all().delete()
        make_sessions(count)
        with mock.patch.object(DateFormat, "format", autospec=True, side_effect=DateFormat.format) as spy:
            list_page(client)
        return spy.call_count

    assert formats_for(3) == formats_for(30)


# --- format marks -------------------------------------------------------------------------------------


def test_the_list_looks_up_each_formats_mark_once_not_per_row(client, viewer):
    make_sessions(30)
    display.format_label.cache_clear()
    with mock.patch.object(display, "static", wraps=display.static) as spy:
        body = list_page(client).content.decode()
    assert body.count('src="/static/marks/claude_code.svg"') >= 30
    assert spy.call_count <= 2  # claude_code and go_agent


def test_a_changed_static_url_is_not_served_from_the_marks_memo(settings):
    display.format_label.cache_clear()
    assert 'src="/static/marks/go_agent.svg"' in display.format_label("go_agent")
    settings.STATIC_URL = "/assets/"
    assert 'src="/assets/marks/go_agent.svg"' in display.format_label("go_agent")


# --- queries --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("params", [{}, {"_flat": "1"}, {"_sort": "cost"}])
def test_the_list_sends_as_many_queries_for_30_sessions_as_for_3(client, viewer, params):
    def queries_for(count: int) -> int:
        Session.objects.all().delete()
        make_sessions(count)
        with CaptureQueriesContext(connection) as queries:
            list_page(client, **params)
        return len(queries)

    assert queries_for(3) == queries_for(30)


def session_selects(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].startswith('SELECT "sessionviewer_session"."id"')]


def test_the_list_does_not_read_the_columns_it_does_not_show(client, viewer):
    make_sessions(3)
    with CaptureQueriesContext(connection) as queries:
        list_page(client)
    rows = session_selects(queries.captured_queries)
    assert len(rows) == 3  # the page's ids (filters.session_page), their rows, their subagents
    for sql in rows:
        for column in ("usage_lines", "model_costs", "git_branches", "file_head", "parent_path"):
            assert f'"sessionviewer_session"."{column}"' not in sql.split(" FROM ")[0]


# --- search ---------------------------------------------------------------------------------------------


def index_go_sessions(folder, count: int) -> None:
    for n in range(count):
        write_go_session(folder / "go", 4, name=f"20260101-{n:06d}-0000abcd.jsonl")
    index_roots([RootSpec(folder / "go", "go_agent")])


@pytest.mark.parametrize("name", ["session-list", "api-search"])
def test_a_search_sends_as_many_queries_for_9_sessions_with_hits_as_for_3(client, viewer, tmp_path, name):
    def queries_for(count: int) -> int:
        Session.objects.all().delete()
        index_go_sessions(tmp_path / str(count), count)
        with CaptureQueriesContext(connection) as queries:
            response = client.get(reverse(name), {"q": "number"})
        assert response.status_code == 200
        assert f"in {count} session" in response.content.decode() or f'"session_count":{count}' in (
            response.content.decode()
        )
        return len(queries)

    assert queries_for(3) == queries_for(9)


def test_search_hits_read_only_the_session_columns_they_show(client, viewer, tmp_path):
    index_go_sessions(tmp_path, 3)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("api-search"), {"q": "number"})
    assert response.json()["session_count"] == 3
    selects = [sql for sql in session_selects(queries.captured_queries) if 'AS "updated_at"' not in sql]
    assert len(selects) == 1  # the groups' sessions, at once (the other reads their dates, to sort)
    for column in ("extra", "usage_lines", "model_costs", "git_branches", "path"):
        assert f'"sessionviewer_session"."{column}"' not in selects[0].split(" FROM ")[0]


# --- the transcript's first screen ----------------------------------------------------------------------


def test_the_first_screen_reads_a_sessions_children_once_whatever_their_number(client, viewer, tmp_path):
    index_go_sessions(tmp_path, 1)
    session = Session.objects.get()
    url = reverse("session-detail", args=[session.id])

    def children_queries(count: int) -> tuple[int, int]:
        Session.objects.filter(parent=session).delete()
        for n in range(count):
            Session.objects.create(
                source=session.source,
                format=session.format,
                key=f"child-{n}",
                path=f"/nowhere/child-{n}.jsonl",
                kind="subagent",
                parent=session,
                parent_tool_id=f"call-{n}",
                title=f"Child {n}",
                usage_lines={"turns": [n]},
            )
        client.get(url)  # the thread built and kept: what is counted is the page's own reads
        with CaptureQueriesContext(connection) as queries:
            body = client.get(url).content.decode()
        assert body.count('class="children"') == 1 and f"Child {count - 1}" in body
        reads = [q["sql"] for q in queries.captured_queries if f'"parent_id" = {session.id}' in q["sql"]]
        for sql in reads:
            assert '"sessionviewer_session"."usage_lines"' not in sql.split(" FROM ")[0]
        return len(queries), len(reads)

    assert children_queries(2) == children_queries(20)
    assert children_queries(2)[1] == 1


def test_the_hits_are_read_with_what_each_is_as_one_column(client, viewer, tmp_path):
    index_go_sessions(tmp_path, 2)
    with CaptureQueriesContext(connection) as queries:
        found = client.get(reverse("api-search"), {"q": "number"}).json()
    assert {v["value"] for facet in found["facets"] if facet["name"] == "what" for v in facet["values"]}
    reads = [q["sql"] for q in queries.captured_queries if 'FROM "sessionviewer_entry"' in q["sql"]]
    assert sum('AS "what_bits"' in sql for sql in reads) == 1
    assert not any('AS "is_' in sql for sql in reads)  # not a column per kind
