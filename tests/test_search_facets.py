"""A search's facets when the search is all that filters the list: counted in one statement of
our own (activity._searched_counts), which must give what each facet's own query gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext

from sessionviewer import activity
from sessionviewer.forms import SessionListForm
from sessionviewer.models import Session, Source

pytestmark = pytest.mark.django_db

FORMATS = ("claude_code", "go_agent", "openclaw", "fluux_xmpp", "codex")
MODELS = ("claude-opus-4", "gpt-5", "gemini-3-pro", "o3")


@pytest.fixture
def varied() -> list[Session]:
    """Sessions on two machines whose every facet has values: more projects than a facet
    shows (FACET_LIMIT), ties, empty values, subagents and forks, models named twice or
    not at all, and more months than a facet shows, with a session never updated."""
    sources = [
        Source.objects.create(machine="alpha", path="/home/dev/.claude/projects", format="claude_code"),
        Source.objects.create(machine="beta", path="/home/dev/.claude/projects", format="claude_code"),
        Source.objects.create(machine="beta", path="/srv/agent/sessions", format="go_agent"),
    ]
    sessions = []
    for n in range(40):
        models = [MODELS[n % 4]] * (1 + n % 2) + ([MODELS[(n + 1) % 4]] if n % 3 == 0 else [])
        sessions.append(
            Session.objects.create(
                source=sources[n % 3],
                key=f"s{n}",
                path=f"/tmp/facets/{n}.jsonl",
                format=FORMATS[n % 5],
                kind=("main", "subagent", "fork")[n % 3 if n % 7 else 0],
                project="" if n % 6 == 0 else f"/home/dev/work/p{n % 15:02d}",
                jid=f"user{n % 4}@example.org" if n % 5 == 3 else "",
                agent=("main", "ops", "")[n % 3],
                channel=("telegram", "", "slack", "")[n % 4],
                peer_kind=("direct", "group", "")[n % 3],
                models_used=[] if n % 8 == 5 else models,
                updated_at=None
                if n == 7
                else datetime(2025 - n // 20, 1 + n % 12, 1 + n % 27, 12, tzinfo=UTC),
            )
        )
    return sessions


def facets(matched: list[int], **filters) -> list[dict]:
    query = QueryDict(mutable=True)
    query.update({"q": "anything", **filters})
    return activity.facets(query, SessionListForm.read(query), matched)


@pytest.mark.parametrize("pick", ["all", "odd", "first", "none"])
def test_a_searchs_facets_in_one_statement_count_as_each_facets_own(varied, monkeypatch, pick):
    ids = [s.id for s in varied]
    matched = {"all": ids, "odd": ids[1::2], "first": ids[:1], "none": []}[pick]
    with CaptureQueriesContext(connection) as queries:
        fast = facets(matched)
    statements = len(queries)
    monkeypatch.setattr(activity, "_searched_counts", lambda matched: None)  # each facet's own query
    with CaptureQueriesContext(connection) as queries:
        each = facets(matched)
    assert fast == each
    if matched:
        # Counts, the sources' names and the possible secrets, against a statement a facet.
        assert statements == 3 < len(queries)
    if pick == "all":  # the comparison covers what could go wrong: limits, ties, months, models
        shown = {facet["name"]: facet["values"] for facet in fast}
        assert len(shown["project"]) == activity.FACET_LIMIT
        assert len(shown["updated"]) == activity.FACET_LIMIT
        assert shown["updated"][0]["value"] > shown["updated"][-1]["value"]
        assert {v["value"] for v in shown["model"]} == set(MODELS)
        assert {v["value"] for v in shown["machine"]} == {"alpha", "beta"}
        assert {"jid", "agent", "channel", "peer_kind", "kind", "format", "root"} <= set(shown)


def test_a_search_with_another_filter_counts_each_facet_with_its_own_query(varied, monkeypatch):
    def not_asked(matched):
        raise AssertionError("a filter besides the search: the facets do not all count the same sessions")

    monkeypatch.setattr(activity, "_searched_counts", not_asked)
    shown = {facet["name"]: facet["values"] for facet in facets([s.id for s in varied], format="codex")}
    assert [v["count"] for v in shown["format"] if v["value"] == "codex"] == [8]


def test_a_models_value_that_is_not_a_list_names_no_model(varied):
    """Only the indexer writes models_used, always a list; a row holding anything else leaves
    the model facet without it instead of failing the search's page."""
    Session.objects.filter(id=varied[0].id).update(models_used={"not": "a list"})
    shown = {facet["name"]: facet["values"] for facet in facets([varied[0].id, varied[1].id])}
    assert {v["value"]: v["count"] for v in shown["model"]} == {"gpt-5": 2}  # named twice by the second
