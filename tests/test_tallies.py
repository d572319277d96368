"""The tally the index keeps as it writes on PostgreSQL (tallies.py, migration 0032's trigger):
after every kind of write it equals the sessions counted afresh, and the pages it answers
show what counting the sessions shows. SQLite, one machine's index, keeps none: its pages
count the sessions."""

from __future__ import annotations

import shutil
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from importlib import import_module
from io import StringIO
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import Count, Sum
from django.http import QueryDict
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessionviewer import activity, filters, projects, tallies
from sessionviewer.forms import SessionListForm
from sessionviewer.index import passes, statements
from sessionviewer.index.tally import fold_pending
from sessionviewer.models import Session, SessionTally, SessionTallyTotal, Source
from sessionviewer.row_codec import db_text
from tests.claude_files import write_sessions
from tests.demo_index import DEMO
from tests.indexers import index_at_once

pytestmark = pytest.mark.django_db

# The tally is PostgreSQL's (migration 0032): SQLite counts the sessions.
kept_on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite keeps no tally: its pages count the sessions"
)

# The facets a project's rows hold (migration 0032's IN_PROJECT, and 0036's model_cost).
IN_PROJECT = ("", "kind", "jid", "agent", "channel", "peer_kind", "updated", "model", "under", "model_cost")
FIGURES = ("sessions", "tokens", "messages", "cost", "priced", "unpriced_tokens", "undated")


def counted_afresh() -> dict[tuple, tuple]:
    """What the tally should hold, counted here from every session's row: per (source,
    format, project, facet, value), the figures of FIGURES. Project "" is the whole index;
    a session with a project adds the list's facets to its project's rows too."""
    found: dict[tuple, list] = defaultdict(lambda: [0] * len(FIGURES))
    parents = {row[0]: row[1:] for row in Session.objects.values_list("id", "source_id", "format", "project")}
    for s in Session.objects.all():

        def add(facet, value, *figures, s=s):
            projects = ("", s.project) if s.project and facet in IN_PROJECT else ("",)
            for project in projects:
                if facet == "under" and project and parents[s.parent_id][2] != project:
                    continue  # in a project's rows, a parent in the same project only
                row = found[s.source_id, s.format, project, facet, value]
                for n, figure in enumerate((1, *figures)):
                    row[n] += figure

        tokens = s.input_tokens + s.output_tokens + s.cache_read_tokens + s.cache_write_tokens
        money = (tokens, 0, s.cost or 0.0, int(s.cost is not None))
        add("", "", *money[:1], s.message_count, *money[2:], s.unpriced_tokens, int(s.started_at is None))
        add("kind", s.kind)
        for name in ("project", "jid", "agent", "channel", "peer_kind"):
            if getattr(s, name):
                add(name, getattr(s, name))
        if s.updated_at:
            add("updated", f"{s.updated_at.astimezone(UTC):%Y-%m}")
        for model in s.models_used:
            add("model", as_text(model))
        if s.started_at:
            add("day", f"{s.started_at.astimezone(UTC):%Y-%m-%d}", *money)
        add("place", "\x1f".join((s.project, s.jid, s.agent)), *money)
        for model, figures in s.model_costs.items():
            priced = figures["cost"] is not None
            add("model_cost", as_text(model), figures["tokens"], 0, figures["cost"] or 0.0, int(priced),
                0 if priced else figures["tokens"])  # fmt: skip
        if s.kind == "subagent" and s.parent_id:
            add("under", "{} {}".format(*parents[s.parent_id][:2]))
    return {key: tuple(_cents(row)) for key, row in found.items()}


def as_text(name: str) -> str:
    """A name as the tally keeps it: a NUL as its escape (rows.db_text), on both engines."""
    return db_text(name)


def kept() -> dict[tuple, tuple]:
    """What the tally holds, each value's rows summed (pending ones too: index/tally.py),
    the values down to nothing left out (a cost added and taken away again may leave a
    float's last bit)."""
    key = ("source_id", "format", "project", "facet", "value")
    rows = SessionTally.objects.values_list(*key).annotate(*(Sum(name) for name in FIGURES)).order_by()
    return {tuple(row[:5]): tuple(_cents(row[5:])) for row in rows if any(_cents(row[5:]))}


def _cents(value):
    """value with every float rounded to a millionth of a cent, in lists and dicts too."""
    if isinstance(value, float):
        return round(value, 8)
    if isinstance(value, dict):
        return {k: _cents(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cents(v) for v in value]
    return value


def totalled() -> dict[tuple, tuple]:
    """What pages over every source read (tallies._sums): the total's rows
    (models.SessionTallyTotal) and the tally's pending ones, summed by (project, facet, value)."""
    found: dict[tuple, list] = defaultdict(lambda: [0] * len(FIGURES))
    key = ("project", "facet", "value")
    for rows in (SessionTallyTotal.objects.all(), SessionTally.objects.filter(pending=True)):
        for row in rows.values_list(*key, *FIGURES):
            for n, figure in enumerate(row[3:]):
                found[row[:3]][n] += figure
    return {k: tuple(_cents(row)) for k, row in found.items() if any(_cents(row))}


def over_every_source(per_source: dict[tuple, tuple]) -> dict[tuple, tuple]:
    """A tally's values keyed (source, format, project, facet, value), summed by (project, facet, value)."""
    found: dict[tuple, list] = defaultdict(lambda: [0] * len(FIGURES))
    for (_source, _format, *key), figures in per_source.items():
        for n, figure in enumerate(figures):
            found[tuple(key)][n] += figure
    return {k: tuple(_cents(row)) for k, row in found.items() if any(_cents(row))}


def assert_kept_right() -> None:
    afresh = counted_afresh()
    assert kept() == afresh
    assert totalled() == over_every_source(afresh)


def index(settings, machine: str, *roots: str) -> None:
    settings.SESSIONVIEWER_MACHINE = machine
    call_command("index", *roots, stdout=StringIO(), stderr=StringIO())


@pytest.fixture
def two_machines(settings, tmp_path):
    """The demo's Claude Code and OpenClaw roots indexed by two machines: a laptop and a CI runner
    with a copy of them (subagents, parents, models, priced and unpriced turns)."""
    laptop = [f"claude_code={DEMO / 'claude/projects'}", f"openclaw={DEMO / 'openclaw/agents'}"]
    index(settings, "laptop", *laptop, f"fluux_xmpp={DEMO / 'fluux/memory'}")
    shutil.copytree(DEMO / "claude", tmp_path / "claude")
    shutil.copytree(DEMO / "codex", tmp_path / "codex")
    index(
        settings,
        "ci-runner",
        f"claude_code={tmp_path / 'claude/projects'}",
        f"codex={tmp_path / 'codex/sessions'}",
    )
    return tmp_path


@kept_on_postgresql
def test_an_index_of_two_machines_is_tallied_as_counted(two_machines):
    assert Session.objects.filter(kind="subagent", parent__isnull=False).exists()  # "under" is tested
    assert Session.objects.filter(cost__isnull=False).exists()
    assert_kept_right()


@kept_on_postgresql
def test_the_tally_follows_every_counted_field_a_write_changes(two_machines):
    session = Session.objects.filter(kind="main").exclude(models_used=[]).first()
    session.models_used = ["model-a", "model-a", "model-b", "a\x00b", "c\\u0000"]  # a NUL, an escape's text
    session.model_costs = {"model-a": {"tokens": 7, "cost": None}, "b\x00": {"tokens": 5, "cost": 0.25}}
    session.input_tokens += 1000
    session.cost = None
    session.project = "/elsewhere"  # its subagents' parent is in another project now
    session.updated_at = datetime(2020, 1, 31, 23, 30, tzinfo=UTC)
    session.started_at = None
    session.save()
    assert_kept_right()
    # A plain UPDATE of many rows, as the indexer and `manage.py reprice` write.
    Session.objects.filter(format="claude_code").update(cost=1.5, message_count=3, agent="helper")
    assert_kept_right()
    Session.objects.filter(id=session.id).update(
        started_at=datetime(2021, 5, 1, tzinfo=UTC) - timedelta(seconds=1)
    )
    assert_kept_right()


@kept_on_postgresql
def test_changes_are_folded_into_one_row_per_value_after_a_pass(two_machines):
    """A write adds rows of its own (pending), which wait for no other writer's lock; the
    pass folds them."""
    Session.objects.update(message_count=7)
    assert SessionTally.objects.filter(pending=True).exists()
    assert_kept_right()
    fold_pending()
    assert not SessionTally.objects.filter(pending=True).exists()
    per_value = SessionTally.objects.values("facet", "project", "source_id", "format", "value")
    assert not per_value.annotate(rows=Count("id")).filter(rows__gt=1).exists()
    assert_kept_right()


@kept_on_postgresql
def test_the_indexers_batched_updates_tally_their_rows_as_the_trigger_would(two_machines, monkeypatch):
    """update_sessions tallies the rows it changes in its own statement (migration 0038), the
    row trigger told to leave them: counted afresh, the tally must be what the trigger gives,
    for parents set, taken away and moved, totals, costs and models, a row written twice."""
    monkeypatch.setattr(statements, "UPDATE_PARAMETERS", 3 * 8)  # a few rows a statement
    subagents = list(Session.objects.filter(kind="subagent").exclude(parent=None).order_by("id"))
    mains = list(Session.objects.filter(kind="main").order_by("id"))
    assert len(subagents) >= 2 and len(mains) >= 3
    before = kept()
    for n, session in enumerate(subagents):
        session.parent_id = None if n % 2 else mains[n % len(mains)].id  # taken away, or moved
        session.parent_tool_id = f"toolu_{n}"
    statements.update_sessions(subagents, ("parent_id", "parent_tool_id"))
    assert_kept_right()
    for n, session in enumerate(mains):
        session.input_tokens += 1000 * n
        session.cost = None if n % 3 == 0 else 0.5 * n
        session.unpriced_tokens = n
        session.model_costs = {f"model-{n}": {"tokens": n, "cost": None if n % 2 else 0.25}}
    statements.update_sessions([mains[0], *mains], ("input_tokens", "cost", "unpriced_tokens", "model_costs"))
    assert_kept_right()
    assert kept() != before
    # A write the statement does not tally (a session's project) is the trigger's, as before.
    mains[1].project = "/elsewhere"
    statements.update_sessions([mains[1]], ("project",))
    assert_kept_right()
    with connection.cursor() as cursor:  # and the trigger is not left switched off
        cursor.execute("SELECT current_setting('sessionviewer.tally', true)")
        assert cursor.fetchone()[0] in (None, "")
    Session.objects.filter(id=mains[2].id).update(message_count=99)
    assert_kept_right()


@kept_on_postgresql
def test_a_file_read_again_after_it_grew_is_tallied_once(settings, tmp_path):
    root = tmp_path / "projects"
    write_sessions(root, 3, 2)
    index(settings, "laptop", f"claude_code={root}")
    assert_kept_right()
    write_sessions(root, 3, 4)  # each file rewritten longer: more replies, more tokens
    index(settings, "laptop", f"claude_code={root}")
    assert_kept_right()
    totals = SessionTally.objects.filter(facet="", project="", format="claude_code").aggregate(Sum("tokens"))
    assert totals["tokens__sum"] == 3 * 4 * 110


@kept_on_postgresql
def test_a_big_pass_folds_every_few_groups_and_at_its_end(settings, tmp_path, monkeypatch):
    """A fold writes every value it touches again: a first index folds every FOLD_GROUPS
    groups, not after each, and leaves nothing pending."""
    monkeypatch.setattr(passes, "GROUP_FILES", 1)  # each file a group: 7 of them
    monkeypatch.setattr(passes, "FOLD_GROUPS", 3)
    root = tmp_path / "projects"
    write_sessions(root, 7, 2)
    with CaptureQueriesContext(connection) as captured:
        index(settings, "laptop", f"claude_code={root}")
    folds = [q for q in captured.captured_queries if q["sql"].startswith("WITH pending AS")]
    assert len(folds) == 3  # after the third and the sixth group, and at the pass's end
    assert not SessionTally.objects.filter(pending=True).exists()
    assert_kept_right()


@kept_on_postgresql
def test_deletes_take_their_sessions_out(two_machines):
    Session.objects.filter(id=Session.objects.filter(kind="main").first().id).delete()
    assert_kept_right()
    parent = Session.objects.filter(children__kind="subagent").first()
    parent.delete()  # its subagents stay, without a parent (SET_NULL): no longer "under"
    assert_kept_right()
    Source.objects.get(machine="ci-runner", format="claude_code").delete()  # a purge of a root
    assert_kept_right()
    Session.objects.all().delete()
    assert kept() == {}


@kept_on_postgresql
def test_a_file_gone_takes_its_session_out(settings, tmp_path):
    root = tmp_path / "projects"
    write_sessions(root, 3, 2)
    index(settings, "laptop", f"claude_code={root}")
    (root / "-home-me-app" / "0001.jsonl").unlink()
    index(settings, "laptop", f"claude_code={root}")
    assert Session.objects.count() == 2
    assert_kept_right()


@kept_on_postgresql
def test_a_claimed_root_keeps_its_tally_and_shows_under_its_machine(settings, tmp_path, client, viewer):
    root = tmp_path / "projects"
    write_sessions(root, 2, 1)
    index(settings, "", f"claude_code={root}")  # indexed before machines were named
    index(settings, "laptop", f"claude_code={root}")  # claims it, sessions and all
    assert_kept_right()
    facets = client.get(reverse("api-session-facets")).json()["facets"]
    machine = next(f for f in facets if f["name"] == "machine")
    assert [(v["value"], v["count"]) for v in machine["values"]] == [("laptop", 2)]


@kept_on_postgresql
@pytest.mark.django_db(transaction=True)
def test_indexers_writing_at_once_lose_no_count(tmp_path):
    roots = {}
    for n in range(3):
        roots[f"machine-{n}"] = tmp_path / f"m{n}" / "projects"
        write_sessions(roots[f"machine-{n}"], 6, 3, ids=f"m{n}")
    for err in index_at_once(roots):
        assert "failed" not in err, err
    assert Session.objects.count() == 18
    assert_kept_right()


# --- The pages it answers show what counting the sessions shows --------------------------------------


def _counted_live(monkeypatch) -> None:
    """Count the sessions themselves, as for any filter the tally does not answer."""
    monkeypatch.setattr(filters, "tally_scope", lambda *args, **kwargs: None)
    monkeypatch.setattr(activity, "tally_scope", lambda *args, **kwargs: None)


def _pages(params: dict) -> tuple:
    query = QueryDict(urlencode(params))
    cleaned = SessionListForm.read(query)
    page = filters.session_page(filters.nested(filters.filter_sessions(cleaned), cleaned))
    listed = [(s.id, [c.id for c in s.nested_subagents]) for s in page.object_list]
    report = activity.report_to_dict(activity.report(cleaned))
    return activity.facets(query, cleaned), page.paginator.count, listed, report


@kept_on_postgresql
@pytest.mark.parametrize(
    "params",
    [
        {},
        {"_flat": "1"},
        {"machine": "ci-runner"},
        {"machine": "laptop", "format": "claude_code"},
        {"format": "claude_code", "_page": "2", "_size": "2"},
        {"root": "ROOT"},
        {"machine": "nobody"},
        {"project": "~/projects/webshop"},
        {"project": "/home/demo/projects/webshop", "machine": "ci-runner", "_flat": "1"},
        {"project": "/nowhere"},
        {"_range": "all"},  # all time, as Activity's range links ask for it
        {"_range": "all", "machine": "laptop"},
    ],
)
def test_a_page_from_the_tally_is_the_page_counted(two_machines, monkeypatch, params):
    if params.get("root"):
        params["root"] = str(Source.objects.get(machine="laptop", format="claude_code").id)
    assert filters.tally_scope(SessionListForm.read(QueryDict(urlencode(params)))) is not None
    facets, count, listed, report = _pages(params)
    assert count or params.get("machine") == "nobody" or params.get("project") == "/nowhere"
    _counted_live(monkeypatch)
    live_facets, live_count, live_listed, live_report = _pages(params)
    assert (count, listed) == (live_count, live_listed)
    for facet, live_facet in zip(facets, live_facets, strict=True):
        assert facet == live_facet
    for part, figures in report.items():  # costs summed in another order: equal to a float's last bits
        assert _cents(figures) == _cents(live_report[part]), part


@kept_on_postgresql
@pytest.mark.parametrize("limit", [1, 2])
def test_the_first_values_of_a_facet_from_the_total_are_those_counted(two_machines, monkeypatch, limit):
    """The total gives each facet's first values only (tallies._first_values): the same
    ones, in the same order, as counting the sessions keeps, the months the latest first."""
    monkeypatch.setattr(activity, "FACET_LIMIT", limit)
    facets = _pages({})[0]
    cut = [f["name"] for f in facets if len(f["values"]) == limit]
    assert {"project", "updated"} <= set(cut), cut  # the limit cuts these, or the test shows nothing
    _counted_live(monkeypatch)
    assert facets == _pages({})[0]


def test_every_session_is_listed_once_over_the_pages(two_machines, client, viewer):
    for params in ({}, {"_flat": "1"}, {"machine": "laptop"}):
        seen, pages = [], None
        for number in range(1, 100):
            body = client.get(reverse("api-session-list"), {**params, "_size": 2, "_page": number}).json()
            pages = body["pages"]
            for row in body["sessions"]:
                seen += [row["id"], *(child["id"] for child in row.get("subagents", []))]
            if number >= pages:
                break
        expected = Session.objects.all()
        if params.get("machine"):
            expected = expected.filter(source__machine=params["machine"])
        assert sorted(seen) == sorted(expected.values_list("id", flat=True)), params


@pytest.mark.skipif(connection.vendor != "sqlite", reason="the tally is kept on PostgreSQL")
def test_sqlite_keeps_no_tally_and_its_pages_count_the_sessions(two_machines, client, viewer):
    assert Session.objects.exists() and not SessionTally.objects.exists()
    assert filters.tally_scope(SessionListForm.read(QueryDict(""))) is None
    body = client.get(reverse("api-session-list"), {"_flat": "1"}).json()
    assert body["count"] == Session.objects.count()


# --- A project's page: its usage by model (migration 0036) ---------------------------------------


def _projects() -> list[str]:
    return sorted(set(Session.objects.exclude(project="").values_list("project", flat=True)))


def test_a_project_pages_usage_by_model_is_the_one_counted(two_machines, client, viewer):
    assert len(_projects()) > 1
    for project in _projects():
        counted = _cents(activity.usage_by_model(projects.project_sessions(project)))
        assert counted, project
        body = client.get(reverse("api-project-detail", args=[project])).json()
        assert _cents(body["models"]) == counted, project
        page = client.get(reverse("project-detail", args=[project]))
        assert page.status_code == 200 and page.context["report"]["models"] == body["models"]


@kept_on_postgresql
def test_a_project_pages_usage_by_model_reads_no_session(two_machines):
    project = Session.objects.exclude(project="").values_list("project", flat=True).first()
    qs = projects.project_sessions(project)
    with CaptureQueriesContext(connection) as queries:
        models = projects.usage_by_model(qs, project, "all")
    assert models and "model_costs" not in " ".join(q["sql"] for q in queries.captured_queries)
    # Over a range, the tally's days are not split by model: the sessions are counted.
    with CaptureQueriesContext(connection) as queries:
        projects.usage_by_model(qs, project, "30")
    assert "model_costs" in " ".join(q["sql"] for q in queries.captured_queries)


@kept_on_postgresql
def test_migration_0036_adds_the_project_rows_of_the_sessions_indexed_before_it(two_machines):
    migration = import_module("sessionviewer.migrations.0036_tally_model_cost_per_project")
    by_statement = import_module("sessionviewer.migrations.0037_tally_by_statement")
    by_update = import_module("sessionviewer.migrations.0038_tally_by_update_statement")
    with connection.schema_editor() as editor:
        by_update.backwards(None, editor)  # back to 0037's trigger, 0036's, then to 0035's
        by_statement.backwards(None, editor)
        migration.backwards(None, editor)
    assert not SessionTally.objects.filter(facet="model_cost").exclude(project="").exists()
    Session.objects.filter(kind="main").update(message_count=9)  # the trigger as it was: no such row
    assert not SessionTally.objects.filter(facet="model_cost").exclude(project="").exists()
    with connection.schema_editor() as editor:
        migration.forwards(None, editor)
    assert_kept_right()
    Session.objects.filter(kind="main").update(input_tokens=5)  # and the trigger keeps them
    assert_kept_right()
    with connection.schema_editor() as editor:
        by_statement.forwards(None, editor)
        by_update.forwards(None, editor)
    assert_kept_right()
    sessions = list(Session.objects.filter(kind="main"))
    for session in sessions:
        session.input_tokens += 3
    statements.update_sessions(sessions, ("input_tokens",))  # tallied by the statement, once
    assert_kept_right()


@kept_on_postgresql
def test_the_tally_kept_per_statement_counts_as_the_trigger_per_row_did(two_machines):
    """0037 against 0036: the same writes under each trigger leave the same tally, and
    an update of no watched column adds no row."""
    by_statement = import_module("sessionviewer.migrations.0037_tally_by_statement")

    def writes() -> dict[tuple, tuple]:
        Session.objects.filter(kind="main").update(message_count=7, input_tokens=11)
        Session.objects.filter(kind="subagent").update(model_costs={"m-1": {"tokens": 3, "cost": 0.5}})
        Session.objects.filter(kind="main").update(read_offset=1)  # watched by neither
        Session.objects.filter(kind="subagent").delete()
        assert_kept_right()
        return kept()

    with transaction.atomic():
        per_statement = writes()
        transaction.set_rollback(True)
    by_update = import_module("sessionviewer.migrations.0038_tally_by_update_statement")
    with connection.schema_editor() as editor:
        by_update.backwards(None, editor)
        by_statement.backwards(None, editor)
    try:
        with transaction.atomic():
            per_row = writes()
            transaction.set_rollback(True)
    finally:
        with connection.schema_editor() as editor:
            by_statement.forwards(None, editor)
            by_update.forwards(None, editor)
    assert per_statement == per_row and per_statement
    pending = SessionTally.objects.filter(pending=True).count()
    Session.objects.update(read_offset=2)
    assert SessionTally.objects.filter(pending=True).count() == pending
    assert_kept_right()


@kept_on_postgresql
def test_migration_0040_sums_the_folded_rows_and_pages_over_every_source_read_them(two_machines):
    migration = import_module("sessionviewer.migrations.0040_tally_total")
    Session.objects.filter(kind="main").update(message_count=7)  # pending rows, not folded
    assert SessionTally.objects.filter(pending=True).exists()
    SessionTallyTotal.objects.all().delete()
    with connection.schema_editor() as editor:
        migration.forwards(None, editor)  # the folded rows only: the pending ones are read apart
    assert_kept_right()
    fold_pending()
    assert not SessionTally.objects.filter(pending=True).exists()
    assert_kept_right()
    # The list and Activity over every source read the facets' values from the total, not
    # from the tally's rows per source (34,000 of them for the list's facets at 400,000
    # sessions on 40 roots); only the totals per format and per source read those rows.
    for params in ({}, {"_range": "all"}):
        with CaptureQueriesContext(connection) as queries:
            _pages(params)
        tallied = [q["sql"] for q in queries if "sessionviewer_sessiontally" in q["sql"]]
        per_source = [sql for sql in tallied if "sessionviewer_sessiontallytotal" not in sql]
        assert len(tallied) > len(per_source) > 0
        assert all("\"facet\" = ''" in sql for sql in per_source), per_source


# --- Session counts kept between requests (tallies.counts_version) ------------------------------------


def _listed_and_facets(client, params: dict) -> tuple[int, list]:
    """What a web process answers for the list's count and facets, in two requests."""
    count = client.get(reverse("api-session-list"), params).json()["count"]
    return count, client.get(reverse("api-session-facets"), params).json()["facets"]


def _tally_statements(client, params: dict) -> list[str]:
    """The statements the two requests send that read the tally or its total."""
    with CaptureQueriesContext(connection) as sent:
        _listed_and_facets(client, params)
    return [q["sql"] for q in sent.captured_queries if "sessiontally" in q["sql"]]


def _assert_kept_is_fresh(client, params: dict) -> None:
    """What the process kept answers as reading the tally again does."""
    kept_answer = _listed_and_facets(client, params)
    tallies.forget_kept_counts()
    assert kept_answer == _listed_and_facets(client, params), params


@kept_on_postgresql
@pytest.mark.parametrize("params", [{}, {"machine": "laptop"}, {"format": "claude_code", "_flat": "1"}])
def test_kept_counts_are_read_once_and_show_every_session_added_or_gone(two_machines, client, viewer, params):
    _listed_and_facets(client, params)
    # Read once: the next requests send only the version's statement each.
    assert len(_tally_statements(client, params)) == 2
    _assert_kept_is_fresh(client, params)
    session = Session.objects.filter(kind="main", source__machine="laptop", format="claude_code").first()
    version = tallies.counts_version()
    # A turn appended (tokens, messages, cost, the time): no session count changes, and none is read again.
    Session.objects.filter(id=session.id).update(
        input_tokens=session.input_tokens + 500, message_count=session.message_count + 2, cost=9.5,
        updated_at=session.updated_at + timedelta(seconds=1),
    )  # fmt: skip
    assert tallies.counts_version() == version
    fold_pending()  # it folds tokens and costs only: still no count to read again
    assert not SessionTally.objects.filter(pending=True).exists()
    assert tallies.counts_version() == version
    assert len(_tally_statements(client, params)) == 2
    _assert_kept_is_fresh(client, params)
    # A session added, with a model no other has: the next request shows it.
    count, facets = _listed_and_facets(client, params)
    added = Session.objects.get(id=session.id)
    added.pk, added.key, added.models_used = None, "added-by-the-test", ["model-only-here"]
    added.save()
    assert tallies.counts_version() != version
    after_add = _listed_and_facets(client, params)
    assert after_add[0] == count + 1
    models = next(f for f in after_add[1] if f["name"] == "model")["values"]
    assert "model-only-here" in [v["value"] for v in models]
    _assert_kept_is_fresh(client, params)
    # Folded: the same counts, read under the fold's version.
    fold_pending()
    assert _listed_and_facets(client, params) == after_add
    _assert_kept_is_fresh(client, params)
    # Gone, and the same session written again (a file read again): every step shows.
    added.delete()
    assert _listed_and_facets(client, params)[0] == count
    _assert_kept_is_fresh(client, params)
    fold_pending()
    added.pk = None
    added.save()
    assert _listed_and_facets(client, params) == after_add
    fold_pending()
    assert _listed_and_facets(client, params) == after_add
    _assert_kept_is_fresh(client, params)


@kept_on_postgresql
def test_a_version_never_comes_back(two_machines):
    """Each write that moves a session count, and each fold, even one whose rows cancel out
    (a session deleted and written again), gives a version not seen before."""
    seen = [tallies.counts_version()]
    session = Session.objects.filter(kind="main").first()
    for step in range(3):
        session.delete()
        seen.append(tallies.counts_version())
        session.pk = None
        session.save()
        seen.append(tallies.counts_version())
        fold_pending()  # the two cancel out: nothing is folded back, yet the fold is counted
        assert not SessionTally.objects.filter(pending=True).exists(), step
        seen.append(tallies.counts_version())
    assert len(set(seen)) == len(seen), seen


@kept_on_postgresql
def test_out_of_a_request_the_counts_are_read_each_time(two_machines):
    """The indexer and commands read the tally as it is: nothing is kept out of a request."""
    scope = tallies.Scope(None, "")
    with CaptureQueriesContext(connection) as sent:
        first = tallies.facet_values(["model", "project"], scope, 5)
        assert tallies.facet_values(["model", "project"], scope, 5) == first
    assert len(sent.captured_queries) == 2
