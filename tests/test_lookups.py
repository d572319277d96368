"""`field__among` (sessionviewer/lookups.py): `in` with the ids as one array on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from sessionviewer.lookups import Ids
from sessionviewer.models import Session, Source

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions():
    source = Source.objects.create(path="/tmp/among", format="claude_code")
    return [
        Session.objects.create(source=source, format="claude_code", key=f"s{n}", path=f"/tmp/among/{n}.jsonl")
        for n in range(5)
    ]


@pytest.mark.parametrize("pick", [[0, 2, 4], [1], [], [0, None, 3]])
def test_among_selects_what_in_selects(sessions, pick):
    ids = [sessions[n].id if n is not None else None for n in pick]
    among = set(Session.objects.filter(id__among=ids).values_list("id", flat=True))
    assert among == set(Session.objects.filter(id__in=ids).values_list("id", flat=True))
    assert among == {sessions[n].id for n in pick if n is not None}
    assert Session.objects.exclude(id__among=ids).count() == 5 - len(among)


def test_among_sends_the_ids_as_one_parameter_on_postgresql(sessions):
    ids = [s.id for s in sessions]
    with CaptureQueriesContext(connection) as queries:
        assert Session.objects.filter(id__among=ids).count() == 5
    sql = queries[-1]["sql"]
    if connection.vendor == "postgresql":
        assert "= ANY(" in sql and " IN (" not in sql
    else:
        assert " IN (" in sql


def test_among_takes_a_subquery_as_in_does(sessions):
    inner = Session.objects.filter(key__in=["s1", "s3"]).values("id")
    assert set(Session.objects.filter(id__among=inner).values_list("key", flat=True)) == {"s1", "s3"}


@pytest.mark.parametrize("pick", [[0, 2, 4], [1], []])
def test_ids_select_what_a_list_selects(sessions, pick):
    ids = Ids(sessions[n].id for n in pick)
    among = set(Session.objects.filter(id__among=ids).values_list("id", flat=True))
    assert among == {sessions[n].id for n in pick}
    assert Session.objects.exclude(id__among=ids).count() == 5 - len(among)
    assert list(Source.objects.filter(id__among=Ids([sessions[0].source_id]))) == [sessions[0].source]


def test_ids_are_written_out_once_for_every_statement_that_sends_them(sessions, monkeypatch):
    ids = Ids(s.id for s in sessions[:3])
    written = []
    literal = Ids.array_literal.func
    monkeypatch.setattr(Ids.array_literal, "func", lambda self: written.append(1) or literal(self))
    with CaptureQueriesContext(connection) as queries:
        for _ in range(3):  # a filter each time, as the list's facets each filter by a search's ids
            assert Session.objects.filter(id__among=ids).count() == 3
        assert Session.objects.filter(id__among=ids).values_list("id", flat=True)[:2].count() == 2
    if connection.vendor == "postgresql":
        assert len(written) == 1
        assert all("= ANY(" in q["sql"] for q in queries)
    else:  # SQLite binds each id itself
        assert written == []
