"""Work the writer does while it waits for its reading worker (index/idle.py): the long
sessions' threads and the memory snapshots, done in the waits rather than after the pass,
and the same as when they are done after it. On PostgreSQL the same work runs in a thread
beside the writer (IdleWork.beside), each session's once its rows are committed."""

from __future__ import annotations

import logging
import os
import threading

import pytest
from django.db import connection, transaction

from sessionviewer.index import index_roots, passes, worker
from sessionviewer.index.idle import IdleWork
from sessionviewer.models import AuditEvent, Entry, MemorySnapshot, Session, Source, ThreadSnapshot
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import store
from sessionviewer.transcripts.store import prepare_snapshots, snapshots_to_prepare

from .claude_files import write_sessions
from .workspace_files import make_tree

pytestmark = pytest.mark.django_db

S0, S1, S2 = (f"-home-me-app/{number:04d}.jsonl" for number in range(3))  # session keys: root-relative

on_postgresql = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite's writer runs the pieces itself, while it waits"
)
# How long a test waits for the thread beside the writer: only a failing test waits it out.
PATIENCE = 60


@pytest.fixture
def waiting_writer(monkeypatch):
    """The writer finds every batch not ready yet, as when the worker is behind: its idle
    work runs at every file. (Small passes read in-process, where every batch is ready.)"""
    monkeypatch.setattr(worker.Reading, "ready", lambda self, number: False)


@pytest.fixture
def long_sessions(tmp_path, monkeypatch):
    """Three sessions of 600 lines (two batches each, written one by one) that count as long."""
    monkeypatch.setattr(store, "PREPARE_FROM", 100)
    root = tmp_path / "projects"
    write_sessions(root, sessions=3, replies=300)
    return root


def snapshot_data() -> dict[tuple[str, str], tuple[str, dict]]:
    return {
        (key, leaf): (version, data)
        for key, leaf, version, data in ThreadSnapshot.objects.values_list(
            "session__key", "leaf", "version", "data"
        )
    }


def test_work_runs_while_the_writer_would_wait_and_stops_when_it_would_not():
    done = []
    idle = IdleWork(lambda session: None)
    for number in range(5):
        idle.later(lambda number=number: done.append(number))
    answers = iter([True, True, False])
    idle.run_while(lambda: next(answers))
    assert done == [0, 1]
    assert len(idle.queued) == 3
    assert idle.done == 2


def test_a_piece_that_fails_is_rolled_back_alone_and_the_next_runs(caplog):
    def fails():
        AuditEvent.objects.create(action="failed piece", root="x")
        raise ValueError("no")

    idle = IdleWork(lambda session: None)
    idle.later(fails)
    idle.later(lambda: AuditEvent.objects.create(action="second piece", root="y"))
    with caplog.at_level(logging.WARNING):
        idle.run_while(lambda: True)
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["second piece"]
    assert idle.done == 1
    assert "done after the pass instead" in caplog.text


def test_threads_prepared_while_waiting_are_those_prepared_after_the_pass(long_sessions, waiting_writer):
    idle = IdleWork(snapshots_to_prepare)
    index_roots([RootSpec(long_sessions, "claude_code")], idle=idle)
    # Each session's thread is built at the next file's wait: the last one's is left for after.
    assert idle.done == 2
    assert len(idle.queued) == 1
    built_while_waiting = snapshot_data()
    assert {key for key, _ in built_while_waiting} == {S0, S1}
    ids = list(Session.objects.values_list("id", flat=True))
    assert prepare_snapshots(ids) == 1  # only s2's: the others are current
    ThreadSnapshot.objects.filter(session__key__in=[S0, S1]).delete()
    assert prepare_snapshots(ids) == 2
    after = snapshot_data()
    assert {k: v for k, v in after.items() if k[0] != S2} == built_while_waiting


def test_without_waits_nothing_runs_early_and_the_pass_is_the_same(long_sessions):
    idle = IdleWork(snapshots_to_prepare)
    index_roots([RootSpec(long_sessions, "claude_code")], idle=idle)
    assert idle.done == 0
    assert len(idle.queued) == 3
    assert not ThreadSnapshot.objects.exists()


def test_memory_snapshots_taken_while_waiting_are_taken_once(
    tmp_path, long_sessions, waiting_writer, settings
):
    memory = make_tree(
        tmp_path / "memory", {"identity.md": "You are Fluux.\n", "a@example.com/memory.md": "Tea.\n"}
    )
    idle = IdleWork(snapshots_to_prepare)
    summary = index_roots([RootSpec(long_sessions, "claude_code")], memory=[memory], idle=idle)
    assert summary.memory.changes == 2
    assert MemorySnapshot.objects.count() == 2
    # Before any session's thread: queued first, it ran at the first wait.
    assert idle.done == 3


def test_memory_snapshots_with_no_wait_are_taken_after_the_pass(tmp_path, long_sessions):
    memory = make_tree(tmp_path / "memory", {"identity.md": "You are Fluux.\n"})
    summary = index_roots(
        [RootSpec(long_sessions, "claude_code")], memory=[memory], idle=IdleWork(lambda s: None)
    )
    assert summary.memory.changes == 1
    assert MemorySnapshot.objects.count() == 1


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_beside_the_writer_a_piece_runs_in_a_thread_of_its_own_once_its_rows_are_committed():
    ran = threading.Event()
    seen = []

    def piece_for(session):
        def piece():
            # On the thread's own connection: only a committed row is there to be seen.
            seen.append(
                (
                    threading.current_thread() is threading.main_thread(),
                    Session.objects.filter(id=session.id).exists(),
                )
            )
            ran.set()

        return piece

    idle = IdleWork(piece_for)
    source = Source.objects.create(path="/beside", format="claude_code")
    with idle.beside():
        with transaction.atomic():
            session = Session.objects.create(source=source, key="a", format="claude_code")
            idle.written(session)
            assert not idle.queued  # not before the commit
        assert ran.wait(PATIENCE)
    assert seen == [(False, True)]
    assert idle.done == 1


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_beside_the_writer_a_rolled_back_session_s_piece_never_runs():
    idle = IdleWork(lambda session: lambda: pytest.fail("ran for a session rolled back"))
    source = Source.objects.create(path="/beside", format="claude_code")
    with idle.beside(), pytest.raises(ValueError), transaction.atomic():
        idle.written(Session.objects.create(source=source, key="a", format="claude_code"))
        raise ValueError("the group failed")
    assert idle.done == 0
    assert not idle.queued


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_beside_the_writer_a_piece_that_fails_is_logged_and_the_next_runs(caplog):
    def fails():
        AuditEvent.objects.create(action="failed piece", root="x")
        raise ValueError("no")

    second = threading.Event()
    idle = IdleWork(lambda session: None)
    with caplog.at_level(logging.WARNING), idle.beside():
        idle.later(fails)
        idle.later(lambda: (AuditEvent.objects.create(action="second piece", root="y"), second.set()))
        assert len(idle.queued) == 2  # the thread starts at the pass's first commit
        idle.committed()
        assert second.wait(PATIENCE)
    assert list(AuditEvent.objects.values_list("action", flat=True)) == ["second piece"]
    assert idle.done == 1
    assert "done after the pass instead" in caplog.text


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_threads_prepared_beside_the_writer_are_those_prepared_after_the_pass(long_sessions, monkeypatch):
    threads_of = []

    def on_written(session):
        piece = snapshots_to_prepare(session)
        return lambda: (threads_of.append(threading.current_thread().name), piece())

    idle = IdleWork(on_written)
    # The copies wait until the thread has prepared every session: as on a slow writer.
    count_copies_once = passes._count_copies_once

    def after_the_thread(*args):
        for _ in range(PATIENCE * 10):
            if idle.done == 3:
                break
            threading.Event().wait(0.1)
        count_copies_once(*args)

    monkeypatch.setattr(passes, "_count_copies_once", after_the_thread)
    index_roots([RootSpec(long_sessions, "claude_code")], idle=idle)
    assert idle.done == 3
    assert threads_of == ["sessionviewer-beside"] * 3
    built_beside = snapshot_data()
    assert {key for key, _ in built_beside} == {S0, S1, S2}
    ids = list(Session.objects.values_list("id", flat=True))
    assert prepare_snapshots(ids) == 0  # all current
    ThreadSnapshot.objects.all().delete()
    assert prepare_snapshots(ids) == 3
    assert snapshot_data() == built_beside
    assert Entry.objects.count() == 3 * 600


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_memory_snapshots_taken_beside_the_writer_are_taken_once(tmp_path, long_sessions):
    memory = make_tree(
        tmp_path / "memory", {"identity.md": "You are Fluux.\n", "a@example.com/memory.md": "Tea.\n"}
    )
    summary = index_roots(
        [RootSpec(long_sessions, "claude_code")], memory=[memory], idle=IdleWork(snapshots_to_prepare)
    )
    # Beside the writer, or after the pass if the thread had not begun it: once either way.
    assert summary.memory.changes == 2
    assert MemorySnapshot.objects.count() == 2


def test_the_read_ahead_writes_into_the_pipe_itself_and_hands_the_rest_over_in_order():
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    ahead = worker.ReadAhead(limit=1 << 20, fd=write_end)
    small = b"a" * 100
    ahead.put(small)  # the pipe has room: written here, nothing waits
    assert not ahead.waiting
    assert os.read(read_end, 1000) == small
    big = bytes(range(256)) * 4096  # 1 MB: more than the pipe takes at once
    ahead.put(big)
    assert ahead.waiting  # the rest waits for the thread
    ahead.put(b"tail")  # behind it, never before it
    received = bytearray()

    def drain():
        while len(received) < len(big) + 4:
            received.extend(os.read(read_end, 1 << 16))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    while (data := ahead.get()) is not None:
        worker.write_all(write_end, data)
        ahead.written()
        if not ahead.waiting:
            break
    reader.join(timeout=10)
    assert bytes(received) == big + b"tail"
    os.close(read_end)
    os.close(write_end)
