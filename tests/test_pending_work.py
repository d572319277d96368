"""The work a pass owes the sessions it wrote, kept in models.PendingWork (migration 0044):
marked once however often, unmarked by work, and moved from the old flags and back."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from sessionviewer.index import pending
from sessionviewer.models import PendingWork, Session, Source

BEFORE = [("sessionviewer", "0043_lz4_for_long_values")]
AFTER = [("sessionviewer", "0044_pending_work_of_its_own")]


def _sessions(n: int) -> list[int]:
    source = Source.objects.create(path="/tmp/root", format="claude_code")
    return [
        Session.objects.create(source=source, key=f"s{i}", path=f"/tmp/root/s{i}.jsonl").id for i in range(n)
    ]


def _rows() -> set[tuple[int, str]]:
    return set(PendingWork.objects.values_list("session_id", "work"))


@pytest.mark.django_db
def test_marked_once_however_often_and_unmarked_by_work():
    a, b, c = _sessions(3)
    pending.mark([a, b], (pending.COPIES, pending.LINKS))
    pending.mark([b, c], (pending.LINKS,))  # b's links mark is there already: it stays one row
    assert _rows() == {(a, "copies"), (a, "links"), (b, "copies"), (b, "links"), (c, "links")}
    assert pending.marked(pending.COPIES) == {a, b}
    pending.unmark([a, b, c], pending.LINKS)
    assert _rows() == {(a, "copies"), (b, "copies")}
    pending.mark([], (pending.COPIES,))  # nothing to mark: no statement that fails
    pending.unmark([], pending.COPIES)
    assert pending.marked(pending.LINKS) == set()


@pytest.mark.django_db
def test_a_sessions_marks_go_with_it():
    a, b = _sessions(2)
    pending.mark([a, b], (pending.COPIES,))
    Session.objects.filter(id=a).delete()
    assert _rows() == {(b, "copies")}


@pytest.mark.django_db
def test_many_marks_in_chunks(monkeypatch):
    ids = _sessions(7)
    monkeypatch.setattr(pending, "CHUNK", 3)
    pending.mark(ids, (pending.COPIES,))
    pending.unmark(ids[:5], pending.COPIES)
    assert pending.marked(pending.COPIES) == set(ids[5:])


@pytest.mark.django_db(transaction=True)
def test_the_migration_moves_the_flags_into_rows_and_back():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    OldSource, OldSession = (
        old.get_model("sessionviewer", "Source"),
        old.get_model("sessionviewer", "Session"),
    )
    source = OldSource.objects.create(path="/tmp/root", format="claude_code")
    flags = {"both": (True, True), "copies": (True, False), "links": (False, True), "none": (False, False)}
    ids = {}
    for key, (copies, links) in flags.items():
        ids[key] = OldSession.objects.create(
            source=source, key=key, path=f"/tmp/root/{key}", copies_pending=copies, links_pending=links
        ).id
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        assert _rows() == {
            (ids["both"], "copies"),
            (ids["both"], "links"),
            (ids["copies"], "copies"),
            (ids["links"], "links"),
        }
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        old = executor.loader.project_state(BEFORE).apps.get_model("sessionviewer", "Session")
        assert {s.key: (s.copies_pending, s.links_pending) for s in old.objects.all()} == flags
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(executor.loader.graph.leaf_nodes("sessionviewer"))
