"""Reading files into rows in a worker process gives exactly what reading in-process gives.

The indexer reads in a second process when a pass has many megabytes to read
(passes.PARALLEL_BYTES); these tests force that path on small files and compare.
"""

import contextlib
import copy
import hashlib
import itertools
import json
import os
import pickle
import select
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from django.db import DataError, transaction

from sessionviewer import readers, row_codec, transcripts
from sessionviewer.index import fold, index_roots, passes, worker
from sessionviewer.models import Entry, Problem, Session
from sessionviewer.roots import RootSpec
from sessionviewer.search import matching_entries

from .demo_index import DEMO_SPECS
from .fixture_files import FIXTURES, FORMAT_OF_FOLDER
from .hostile import (
    AFTER,
    HOSTILE_FIELDS,
    HOSTILE_KINDS,
    NUMBERED_BY_PLACE,
    SAMPLES,
    claude_file,
    deep_tool_call,
    write_hostile,
    write_hostile_root,
)


def fixture_jobs(batch_size: int = 3, for_sqlite: bool = True) -> list[worker.Job]:
    """One job per fixture transcript, bad lines and cut-off writes included."""
    return [
        worker.Job(
            path, fmt, 0, 0, fold.SessionState(format=fmt), batch_size=batch_size, for_sqlite=for_sqlite
        )
        for folder, fmt in FORMAT_OF_FOLDER.items()
        for path in sorted((FIXTURES / folder).glob("*.jsonl"))
    ]


def read_all(jobs: list[worker.Job], parallel: bool) -> list[tuple]:
    seen = []
    with worker.Reading.of(jobs, parallel) as reading:
        for number in range(len(jobs)):
            for batch in reading.batches(number):
                seen.append(
                    (
                        number,
                        batch.rows,
                        [p.to_dict() for p in batch.problems],
                        batch.summaries,
                        copy.deepcopy(batch.state),  # in-process, the one state object runs on
                        (batch.last, batch.end_offset, batch.end_line, batch.pending_tail),
                    )
                )
    return seen


def copied_demo_specs(tmp_path: Path) -> list[RootSpec]:
    """The demo roots, copied: indexing them must not touch the tracked files."""
    specs = []
    for spec in DEMO_SPECS:
        copy = tmp_path / spec.path.relative_to(spec.path.parents[1])
        shutil.copytree(spec.path, copy)
        specs.append(RootSpec(copy, spec.format))
    return specs


@pytest.mark.parametrize("for_sqlite", [True, False])
def test_the_worker_gives_the_same_batches_as_reading_in_process(for_sqlite):
    # for_sqlite=False: rows for PostgreSQL, with booleans, bytes and timestamps as ints.
    in_process = read_all(fixture_jobs(for_sqlite=for_sqlite), parallel=False)
    in_worker = read_all(fixture_jobs(for_sqlite=for_sqlite), parallel=True)
    assert len(in_process) > len(fixture_jobs())  # several files span more than one batch
    assert any(problems for _n, _r, problems, *_ in in_process)  # bad lines are in there
    assert in_worker == in_process


@pytest.mark.parametrize("for_sqlite", [True, False])
def test_every_batchs_rows_go_through_the_pipe_marshalled(for_sqlite):
    # Not pickled with the batch: marshal takes about half the time, each way. A value it
    # refuses in a row (a datetime, once) would fail here, not in a pass.
    jobs = fixture_jobs(for_sqlite=for_sqlite)
    sent = 0
    for number, job in enumerate(jobs):
        for batch in worker.read_job(job, number):
            rows = copy.deepcopy(batch.rows)
            parts = worker._for_the_pipe(batch)
            assert len(parts) == 2 and type(batch.rows) is int, job.path
            assert worker._from_the_pipe(parts).rows == rows
            sent += len(rows)
    assert sent > 100


def test_the_state_runs_on_across_batches_and_ends_with_the_file():
    job = worker.Job(
        FIXTURES / "claude_code/tool_call_and_result.jsonl",
        "claude_code",
        0,
        0,
        fold.SessionState(format="claude_code"),
        batch_size=1,
    )
    seen = [(b.last, b.state.entry_count, b.end_offset) for b in worker.read_job(job)]
    size = job.path.stat().st_size
    assert seen == [(False, n, 0) for n in range(1, len(seen))] + [(True, len(seen), size)]


@pytest.mark.parametrize("start_offset", [0, "second line"])
def test_the_head_hash_from_the_bytes_the_reader_kept_is_the_files_own(tmp_path, start_offset):
    # The reader keeps the first bytes it reads, so that the head is not read twice;
    # the hash must be the one a later pass computes by opening the file.
    lines = [
        json.dumps({"type": "user", "uuid": f"u{n}", "message": {"content": "x" * 900}}) for n in range(9)
    ]
    path = tmp_path / "long.jsonl"
    path.write_text("\n".join(lines) + "\n" + '{"type": "user", "uu')  # and a last line being written
    start = 0 if start_offset == 0 else len(lines[0]) + 1
    job = worker.Job(path, "claude_code", start, 1 if start else 0, fold.SessionState(format="claude_code"))
    last = list(worker.read_job(job))[-1]
    assert last.pending_tail and last.end_offset > worker.HEAD_BYTES
    assert last.head_hash == hashlib.sha256(path.read_bytes()[: worker.HEAD_BYTES]).hexdigest()
    short = tmp_path / "short.jsonl"
    short.write_text(lines[0] + "\n" + '{"type": "user", "uu')
    job = worker.Job(short, "claude_code", 0, 0, fold.SessionState(format="claude_code"))
    last = list(worker.read_job(job))[-1]
    assert last.head_hash == hashlib.sha256(short.read_bytes()[: last.end_offset]).hexdigest()


def test_a_file_the_worker_cannot_read_fails_alone(tmp_path):
    jobs = fixture_jobs()[:2]
    missing = worker.Job(
        tmp_path / "gone.jsonl", "claude_code", 0, 0, fold.SessionState(format="claude_code")
    )
    with worker.Reading.of([jobs[0], missing, jobs[1]], parallel=True) as reading:
        assert list(reading.batches(0))[-1].last
        with pytest.raises(worker.ReadFailed, match="gone.jsonl"):
            list(reading.batches(1))
        assert list(reading.batches(2))[-1].last


def test_what_is_left_of_an_abandoned_job_is_skipped():
    jobs = fixture_jobs(batch_size=1)[:3]
    with worker.Reading.of(jobs, parallel=True) as reading:
        first = next(iter(reading.batches(0)))  # the writer gave up after one batch
        assert not first.last
        rest = list(reading.batches(1))
    assert {b.job for b in rest} == {1}
    assert rest[-1].last


def test_a_worker_that_dies_is_an_error_not_a_hang():
    with worker.Reading.of(fixture_jobs(batch_size=1), parallel=True) as reading:
        reading.worker.kill()
        reading.worker.wait()
        with pytest.raises(RuntimeError, match="reading process ended early"):
            for number in range(len(reading.jobs)):
                list(reading.batches(number))


def test_stopping_early_ends_the_worker():
    reading = worker.Reading.of(fixture_jobs(batch_size=1), parallel=True)
    process = reading.worker
    next(iter(reading.batches(0)))
    reading.close()
    assert process.returncode is not None


def test_the_worker_starts_once_the_jobs_hold_enough_to_read_and_takes_the_earlier_and_later_ones():
    jobs = fixture_jobs()
    expected = read_all(fixture_jobs(), parallel=False)
    seen = []
    with worker.Reading(parallel_from=300) as reading:
        assert reading.add(jobs[0]) == 0
        reading.expect(200)
        assert reading.worker is None  # 200 bytes to read: not worth a process yet
        reading.add(jobs[1])
        reading.expect(400)
        assert reading.worker is not None
        for job in jobs[2:]:
            reading.add(job)
        reading.close_jobs()
        with pytest.raises(RuntimeError, match="after close_jobs"):
            reading.add(jobs[0])
        for number in range(len(jobs)):
            seen += [(b.job, b.rows, b.last) for b in reading.batches(number)]
    assert seen == [(number, rows, last) for number, rows, *_, (last, *_) in expected]


def test_a_pass_expected_to_read_enough_starts_the_worker_before_any_job_is_added():
    with worker.Reading(parallel_from=1000) as reading:
        reading.expect(0)
        reading.expect(999)
        assert reading.worker is None
        reading.expect(1000)
        assert reading.worker is not None
        reading.add(fixture_jobs()[0])
        reading.close_jobs()
        assert list(reading.batches(0))[-1].last
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(0)  # nothing to read: no process, whatever the threshold
        assert reading.worker is None


@pytest.mark.django_db
def test_a_big_pass_starts_its_worker_before_it_plans_the_files(tmp_path, monkeypatch):
    specs = copied_demo_specs(tmp_path)
    monkeypatch.setattr(passes, "PARALLEL_BYTES", 1)
    monkeypatch.setattr(passes, "CPUS", 2)
    order = []
    real_start, real_plan = worker.Reading.start_worker, passes.plan_file
    monkeypatch.setattr(worker.Reading, "start_worker", lambda r: (order.append("start"), real_start(r))[1])
    monkeypatch.setattr(passes, "plan_file", lambda *a: (order.append("plan"), real_plan(*a))[1])
    summary = index_roots(specs)
    assert not summary.errors and summary.opened > 3
    assert order[0] == "start" and order.count("start") == 1 and order.count("plan") == summary.opened


def test_jobs_handed_over_before_any_batch_is_taken_do_not_block_either_process():
    # Far more than a pipe holds in either direction: the worker takes jobs in a
    # thread of its own, so adding them cannot wait on the batches nobody reads yet.
    jobs = fixture_jobs() * 60
    with worker.Reading(parallel_from=0) as reading:
        adding = threading.Thread(target=lambda: [reading.add(job) for job in jobs], daemon=True)
        adding.start()
        adding.join(timeout=60)
        assert not adding.is_alive(), "adding jobs blocked"
        reading.close_jobs()
        last = [list(reading.batches(number))[-1] for number in range(len(jobs))]
    assert all(batch.last for batch in last)
    assert [batch.job for batch in last] == list(range(len(jobs)))


def test_jobs_asked_for_while_the_worker_starts_are_read_here_and_skipped_there():
    jobs = fixture_jobs()
    expected = read_all(fixture_jobs(), parallel=False)
    seen = []
    with worker.Reading(parallel_from=0, read_while_starting=True) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)  # a worker still starting: nothing in the pipe
        try:
            for job in jobs:
                reading.add(job)
            reading.close_jobs()
            assert reading.ready(0), "the next job is read here: no wait"
            for number in range(2):
                seen += [(b.job, b.rows, b.last) for b in reading.batches(number)]
            assert reading.read_here == 2
        finally:
            os.kill(reading.worker.pid, signal.SIGCONT)
        # The worker may have begun job 0 before its skips came (they follow the jobs in
        # the pipe): what it hands over of the jobs read here is dropped, and a job may
        # still be read here meanwhile. Once a batch of a job still wanted comes from
        # the worker, every later job comes from it.
        select.select([reading.worker.stdout], [], [], 30)
        from_worker = None
        for number in range(2, len(jobs)):
            before = reading.read_here
            seen += [(b.job, b.rows, b.last) for b in reading.batches(number)]
            if from_worker is not None:
                assert reading.read_here == before, f"job {number} was read here after the worker took over"
            elif reading.read_here == before:
                from_worker = number
        assert from_worker is not None, "the worker never handed over a batch"
    assert seen == [(number, rows, last) for number, rows, *_, (last, *_) in expected]


def test_a_big_pass_of_jobs_goes_into_the_pipe_while_the_worker_is_still_starting(tmp_path):
    # The writer reads the first jobs itself while the worker starts (above): sending
    # the rest must not wait for the worker to begin reading its pipe.
    jobs = [
        worker.Job(
            tmp_path / f"session-{n:04d}.jsonl", "fluux_xmpp", 0, 0, fold.SessionState(format="fluux_xmpp")
        )
        for n in range(2500)
    ]
    # Four times the 64 KB of a pipe by default, and less than the pipe Reading asks for.
    assert 256 * 1024 < len(pickle.dumps(jobs)) < worker.JOBS_PIPE_BYTES
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)
        sent = threading.Thread(target=lambda: [reading.add(job) for job in jobs] and reading.close_jobs())
        try:
            sent.start()
            sent.join(timeout=10)
            assert not sent.is_alive(), "adding the jobs waited for the stopped worker"
        finally:
            os.kill(reading.worker.pid, signal.SIGCONT)
            sent.join()


def test_the_last_jobs_read_here_while_waiting_give_what_the_worker_gives(monkeypatch):
    monkeypatch.setattr(worker, "END_MARGIN", 2)
    jobs = fixture_jobs() * 3
    expected = read_all(fixture_jobs() * 3, parallel=False)
    seen = []
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)  # a worker behind: nothing in the pipe
        try:
            for job in jobs:
                reading.add(job)
            reading.close_jobs()
            assert not reading.ready(0)
            taken = 0
            while reading.read_from_the_end(0):
                taken += 1
            assert taken == len(jobs) - 3, "read from the end up to END_MARGIN jobs after the one waited for"
            assert reading.stop_at == 3
            assert reading.ready(len(jobs) - 1), "a job read here is ready"
        finally:
            os.kill(reading.worker.pid, signal.SIGCONT)
        for number in range(len(jobs)):
            seen += [(b.job, b.rows, b.last) for b in reading.batches(number)]
    assert seen == [(number, rows, last) for number, rows, *_, (last, *_) in expected]


def test_a_worker_told_to_stop_at_a_job_hands_over_none_from_it_on():
    jobs = fixture_jobs()
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)  # the stop is in before it reads anything
        for job in jobs:
            reading.add(job)
        reading._send(worker.StopAt(3))
        reading.close_jobs()
        os.kill(reading.worker.pid, signal.SIGCONT)
        handed_over = []
        while (item := reading._take()) is not None:  # None: the worker ended after the last job
            handed_over.append(item.job)
    assert set(handed_over) == set(range(3))


def test_jobs_read_from_the_end_hold_at_most_end_bytes(monkeypatch):
    monkeypatch.setattr(worker, "END_MARGIN", 0)
    monkeypatch.setattr(worker, "END_BYTES", 100)
    jobs = [replace(job, size=60) for job in fixture_jobs()]
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)
        try:
            for job in jobs:
                reading.add(job)
            reading.close_jobs()
            assert reading.read_from_the_end(0)
            assert not reading.read_from_the_end(0), "a second job would hold 120 bytes"
            assert reading.stop_at == len(jobs) - 1
        finally:
            os.kill(reading.worker.pid, signal.SIGCONT)


def test_a_job_read_from_the_end_that_fails_raises_when_its_batches_are_asked_for(tmp_path, monkeypatch):
    monkeypatch.setattr(worker, "END_MARGIN", 0)
    jobs = [
        *fixture_jobs(),
        worker.Job(tmp_path / "gone.jsonl", "claude_code", 0, 0, fold.SessionState("claude_code")),
    ]
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)
        try:
            for job in jobs:
                reading.add(job)
            reading.close_jobs()
            assert reading.read_from_the_end(0)
        finally:
            os.kill(reading.worker.pid, signal.SIGCONT)
        for number in range(len(jobs) - 1):
            assert list(reading.batches(number))[-1].last
        with pytest.raises(FileNotFoundError):
            list(reading.batches(len(jobs) - 1))


def test_a_worker_told_to_skip_jobs_reads_only_the_others():
    jobs = fixture_jobs()
    with worker.Reading(parallel_from=0) as reading:
        reading.expect(1)
        os.kill(reading.worker.pid, signal.SIGSTOP)  # the skip is in before it reads anything
        for job in jobs:
            reading.add(job)
        reading._send(worker.SkipTo(3))
        reading.close_jobs()
        os.kill(reading.worker.pid, signal.SIGCONT)
        handed_over = []
        while (item := reading._take()) is not None:  # None: the worker ended after the last job
            handed_over.append(item.job)
    assert set(handed_over) == set(range(3, len(jobs)))


def test_the_read_ahead_holds_at_most_its_bytes_but_always_one_batch():
    ahead = worker.ReadAhead(limit=10)
    ahead.put(b"x" * 25)  # larger than the limit, and alone: taken
    blocked = threading.Thread(target=ahead.put, args=(b"y" * 5,), daemon=True)
    blocked.start()
    blocked.join(timeout=0.2)
    assert blocked.is_alive()  # 25 + 5 bytes would be over the limit
    assert ahead.get() == b"x" * 25
    blocked.join(timeout=5)
    assert not blocked.is_alive()
    ahead.put(b"z" * 5)  # 5 + 5 fit
    assert [ahead.get(), ahead.get()] == [b"y" * 5, b"z" * 5]


def test_a_worker_stopped_and_continued_still_hands_over_every_batch_whole(tmp_path):
    # Stopping a process (Ctrl-Z, a profiler) cuts its large pipe writes short: a
    # buffered file was seen to drop the rest, and the parent then read garbage.
    history = tmp_path / "bob@example.com" / "history.jsonl"
    history.parent.mkdir()
    words = " ".join(f"word{n}" for n in range(400))
    lines = [
        {"type": "message", "role": "user", "content": f"{n} {words}", "ts": "2025-02-08T19:00:01Z"}
        for n in range(1500)
    ]
    history.write_text("".join(json.dumps(line) + "\n" for line in lines))
    jobs = [worker.Job(history, "fluux_xmpp", 0, 0, fold.SessionState(format="fluux_xmpp"), batch_size=200)]
    expected = [batch.rows for batch in worker.Reading.of(copy.deepcopy(jobs), parallel=False).batches(0)]
    done = threading.Event()
    with worker.Reading.of(jobs, parallel=True) as reading:
        pid = reading.worker.pid

        def stop_and_continue() -> None:
            try:
                while not done.is_set():
                    os.kill(pid, signal.SIGSTOP)
                    time.sleep(0.002)
                    os.kill(pid, signal.SIGCONT)
                    time.sleep(0.003)
            except ProcessLookupError:
                pass
            finally:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGCONT)

        pesterer = threading.Thread(target=stop_and_continue, daemon=True)
        pesterer.start()
        try:
            seen = [batch.rows for batch in reading.batches(0)]
        finally:
            done.set()
            pesterer.join()
    assert len(expected) == 8
    assert seen == expected


def index_snapshot() -> list[tuple]:
    sessions = list(
        Session.objects.order_by("source__path", "key").values_list(
            "source__path",
            "key",
            "entry_count",
            "message_count",
            "problem_count",
            "started_at",
            "updated_at",
            "models_used",
            "input_tokens",
            "output_tokens",
            "first_prompt",
            "summary_title",
            "project",
            "jid",
            "kind",
            "parent__key",
            "parent_tool_id",
            "read_offset",
            "extra",
        )
    )
    entries = list(
        Entry.objects.order_by("session__source__path", "session__key", "line").values_list(
            "session__key", "line", "entry_id", "parent_id", "kind", "timestamp", "text", "blocks", "extra"
        )
    )
    problems = list(
        Problem.objects.order_by("session__key", "line").values_list("session__key", "line", "message")
    )
    return [sessions, entries, problems]


@pytest.mark.django_db
def test_indexing_through_the_worker_gives_the_same_index(tmp_path, monkeypatch):
    specs = copied_demo_specs(tmp_path)
    index_roots(specs)
    in_process = index_snapshot()
    Session.objects.all().delete()
    monkeypatch.setattr(passes, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(passes, "CPUS", 2)
    spawned = []
    monkeypatch.setattr(subprocess, "Popen", _recording(spawned))
    summary = index_roots(specs)
    assert len(spawned) == 1  # one worker for the whole pass, every root
    assert summary.opened == len(in_process[0]) and not summary.errors
    assert index_snapshot() == in_process


@pytest.mark.django_db
def test_a_file_gone_before_the_worker_reads_it_is_an_error_and_the_rest_index(tmp_path, monkeypatch):
    folder = tmp_path / "memory"
    for jid in ("alice@example.com", "bob@example.com"):
        (folder / jid).mkdir(parents=True)
        header = {"type": "session", "version": 1, "created": "2025-02-08T19:00:00Z", "jid": jid}
        hello = {"type": "message", "role": "user", "content": "hello", "ts": "2025-02-08T19:00:01Z"}
        (folder / jid / "history.jsonl").write_text(f"{json.dumps(header)}\n{json.dumps(hello)}\n")
    monkeypatch.setattr(passes, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(passes, "CPUS", 2)
    real_start = worker.Reading.start_worker

    def start_after_a_removal(reading):
        (folder / "alice@example.com" / "history.jsonl").unlink()  # planned, not read yet
        real_start(reading)

    monkeypatch.setattr(worker.Reading, "start_worker", start_after_a_removal)
    summary = index_roots([RootSpec(folder, "fluux_xmpp")])
    assert len(summary.errors) == 1 and "alice@example.com" in summary.errors[0]
    assert list(Session.objects.values_list("jid", "entry_count")) == [("bob@example.com", 2)]


def _recording(spawned: list):
    real = subprocess.Popen

    def popen(*args, **kwargs):
        spawned.append(args)
        return real(*args, **kwargs)

    return popen


@pytest.mark.django_db
@pytest.mark.parametrize("inside_orm_call", [False, True])
def test_a_value_the_database_refuses_fails_its_file_alone(tmp_path, monkeypatch, inside_orm_call):
    # inside_orm_call: the error comes out of an ORM call that runs in the group's
    # transaction without a savepoint of its own, as bulk_create and delete do, which
    # marks the whole group for rollback; the file's savepoint must undo that mark.
    folder = tmp_path / "memory"
    for jid in ("alice@example.com", "bob@example.com"):
        (folder / jid).mkdir(parents=True)
        hello = {
            "type": "message",
            "role": "user",
            "content": f"hello from {jid}",
            "ts": "2025-02-08T19:00:01Z",
        }
        (folder / jid / "history.jsonl").write_text(json.dumps(hello) + "\n")
    real_write_files = passes.write_files

    def refusing_alice(files):
        # A first index writes both files together; refused, each is written again alone.
        real_write_files(files)
        if any(session.jid == "alice@example.com" for session, *_ in files):
            if inside_orm_call:
                with transaction.atomic(savepoint=False):
                    raise DataError("value too long")
            raise DataError("value too long")

    monkeypatch.setattr(passes, "write_files", refusing_alice)
    summary = index_roots([RootSpec(folder, "fluux_xmpp")])
    assert len(summary.errors) == 1 and "alice@example.com" in summary.errors[0]
    assert dict(Session.objects.values_list("jid", "index_error")) == {
        "alice@example.com": "value too long",
        "bob@example.com": "",
    }
    assert list(Entry.objects.values_list("text", flat=True)) == ["hello from bob@example.com"]
    # Nothing of alice's file was kept, so the next pass tries it again whole.
    monkeypatch.setattr(passes, "write_files", real_write_files)
    index_roots([RootSpec(folder, "fluux_xmpp")])
    assert Session.objects.count() == 2


def test_listing_names_files_and_folders_in_order_and_follows_symlinks(tmp_path):
    (tmp_path / "b.jsonl").write_text("{}\n")
    (tmp_path / "a.jsonl").write_text("{}\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a.jsonl")
    (tmp_path / "dir-link").symlink_to(tmp_path / "sub")
    (tmp_path / "broken").symlink_to(tmp_path / "nowhere")  # neither, as Path.is_file() says
    assert readers.listing(tmp_path) == (["a.jsonl", "b.jsonl", "link.jsonl"], ["dir-link", "sub"])
    assert readers.listing(tmp_path / "missing") == ([], [])
    assert readers.listing(tmp_path / "a.jsonl") == ([], [])  # a file is no folder


# --- Hostile lines: no value can stop a file -------------------------------------------------------------
# (The hostile lines and roots are written by tests/hostile.py.)


HOSTILE_FILE_NUMBERS = itertools.count()


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("hostile")


@pytest.mark.parametrize(
    ("fmt", "line", "field", "kind"),
    [
        pytest.param(
            fmt, line, field, kind, id=f"{fmt}-{line.get('type')}-{'.'.join(map(str, field))}-{kind}"
        )
        for fmt, fields in HOSTILE_FIELDS.items()
        for line, field in fields
        for kind in HOSTILE_KINDS
    ],
)
def test_a_hostile_value_in_any_field_leaves_the_line_after_it_readable(hostile_dir, fmt, line, field, kind):
    path = hostile_dir / f"{fmt}-{next(HOSTILE_FILE_NUMBERS)}.jsonl"
    write_hostile(path, fmt, line, field, kind)
    job = worker.Job(path, fmt, 0, 0, fold.SessionState(format=fmt))
    batches = list(worker.read_job(job))
    rows = [row for batch in batches for row in batch.rows]
    problems = [p.line for batch in batches for p in batch.problems]
    text = ENTRY_COLUMNS.index("text")
    after = rows[-1][1] if fmt in NUMBERED_BY_PLACE else 2  # there, the last entry
    assert [row[1] for row in rows if AFTER in row[text]] == [after]
    if kind in ("nul", "surrogate"):  # legal JSON: the line is an entry, and not a bad one
        assert problems == [] and rows[0][1] == 1
    else:
        assert 1 in problems or rows[0][1] == 1
    for row in rows:  # what the JSON columns hold reads back
        for column in ("blocks", "usage", "extra", "raw"):
            if isinstance(value := row[ENTRY_COLUMNS.index(column)], str):
                orjson.loads(value)


ENTRY_COLUMNS = row_codec.ENTRY_COLUMNS


@pytest.mark.django_db
@pytest.mark.parametrize("kind", HOSTILE_KINDS)
@pytest.mark.parametrize("fmt", SAMPLES)
def test_a_root_with_a_hostile_value_in_every_field_indexes_in_one_pass(tmp_path, fmt, kind):
    files = write_hostile_root(tmp_path / fmt, fmt, (kind,))
    summary = index_roots([RootSpec(tmp_path / fmt, fmt)])
    assert summary.errors == []
    assert Session.objects.filter(index_error="").count() == files
    # Every line after a hostile one is in, and found by search on this database.
    assert matching_entries("surfaced").count() == files


@pytest.mark.django_db
def test_a_tool_input_nested_900_deep_is_a_bad_line_kept_cut_and_searchable_to_that_depth(tmp_path):
    claude_file(tmp_path / "-w" / "s.jsonl", deep_tool_call(900))
    summary = index_roots([RootSpec(tmp_path, "claude_code")])
    assert summary.errors == []
    problem = Problem.objects.get()
    assert problem.line == 2 and "nested deeper than the 200 levels" in problem.message
    assert summary.bad_lines == [f"{tmp_path / '-w' / 's.jsonl'}:2: {problem.message}"]
    session = Session.objects.get()
    assert (session.entry_count, session.problem_count) == (3, 1)
    for word in ("level10word", "level150word", "surfaced"):
        assert matching_entries(word).count() == 1, word
    entry = next(e for e in transcripts.load_entries(session) if e.id == "a1")
    assert entry.extra[row_codec.DEPTH_CUT] == 200
    arguments, objects = entry.blocks[0].arguments, 0
    while isinstance(arguments, dict):
        arguments, objects = arguments["deeper"], objects + 1
    assert (arguments, objects) == (readers.DEEPER, 200 - 2)  # under the blocks' list and the block


@pytest.mark.django_db
def test_a_60_mb_line_indexes_with_its_first_searchable_chars_searchable(tmp_path):
    # Claude Code users report single lines this long (a tool result with a whole log in it).
    # Its first megabytes are distinct words: PostgreSQL's tsvector of all of them would
    # not fit its 1 MB ("string is too long for tsvector").
    distinct = " ".join(f"w{n:x}" for n in range(400_000))
    output = distinct + " " + "filler " * ((60 * 2**20 - len(distinct)) // 7) + "lastword"
    result = {
        "type": "user",
        "uuid": "r1",
        "parentUuid": "u1",
        "sessionId": "s",
        "timestamp": "2026-02-01T10:00:01Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": output}],
        },
    }
    path = claude_file(tmp_path / "-w" / "s.jsonl", result)
    assert path.stat().st_size > 60 * 2**20
    summary = index_roots([RootSpec(tmp_path, "claude_code")])
    assert summary.errors == [] and summary.problems == 0
    stored = Entry.objects.get(entry_id="r1")
    assert len(stored.text) == row_codec.SEARCHABLE_CHARS
    assert stored.extra[row_codec.SEARCH_CUT] == row_codec.SEARCHABLE_CHARS
    assert [matching_entries(word).count() for word in ("w0", "lastword", "surfaced")] == [1, 0, 1]
    # The whole output is kept, for the page.
    entry = next(e for e in transcripts.load_entries(Session.objects.get()) if e.id == "r1")
    assert entry.blocks[0].text == output


@pytest.mark.django_db
def test_lone_surrogate_escapes_show_as_replacement_characters(tmp_path):
    # OpenClaw cuts replies with String.slice, which can split an emoji's two halves.
    line = (
        b'{"type":"user","uuid":"c1","parentUuid":"u1","sessionId":"s","timestamp":"2026-02-01T10:00:01Z",'
        b'"message":{"role":"user","content":"cut \\ud83c here, \\udc00 there, whole \\ud83c\\udf89"}}'
    )
    claude_file(tmp_path / "-w" / "s.jsonl", line, b'{"raw": "\xed\xa0\xbc bytes"}')
    summary = index_roots([RootSpec(tmp_path, "claude_code")])
    assert summary.errors == []
    assert Entry.objects.get(entry_id="c1").text == "cut \ufffd here, \ufffd there, whole \U0001f389"
    # Written raw, a surrogate is not UTF-8: a bad line, as any other byte that is not.
    assert list(Problem.objects.values_list("line", "message")) == [(3, "not valid UTF-8 at byte 9")]
    assert matching_entries("surfaced").count() == 1


def test_a_worker_still_starting_when_the_last_job_is_read_here_is_stopped():
    # It has nothing left to read that is wanted, and would hold a copy of that job.
    jobs = fixture_jobs()
    with worker.Reading(parallel_from=0, read_while_starting=True) as reading:
        reading.expect(1)
        process = reading.worker
        os.kill(process.pid, signal.SIGSTOP)  # still starting: every job is read here
        try:
            for job in jobs:
                reading.add(job)
            reading.close_jobs()
            for number in range(len(jobs) - 1):
                list(reading.batches(number))
            assert process.poll() is None
            last = list(reading.batches(len(jobs) - 1))
            assert process.poll() is not None
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)
        assert reading.read_here == len(jobs)
        assert last[-1].last
