"""The incremental index: unchanged files are not opened, appends read only new bytes,
rewrites and deletions are noticed, and a failed write leaves the index as it was."""

import gc
import os
import shutil
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path

import pytest
from django.db import OperationalError, connection

from sessionviewer import readers
from sessionviewer.index import index_roots, passes, watch_roots, worker
from sessionviewer.index.busy import database_busy
from sessionviewer.models import Entry, Problem, Session
from sessionviewer.roots import RootSpec

from .fluux_history import HEADER, message, run

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path) -> Path:
    jid = tmp_path / "memory" / "alice@example.com"
    jid.mkdir(parents=True)
    (jid / "history.jsonl").write_text(HEADER + message(1) + message(2, "assistant"))
    return tmp_path / "memory"


def history(root: Path) -> Path:
    return root / "alice@example.com" / "history.jsonl"


def snapshot() -> list[tuple]:
    return list(
        Entry.objects.order_by("session__key", "line").values_list("session__key", "line", "entry_id", "text")
    )


def test_index_reads_a_new_file_into_a_session_with_entries(root):
    summary = run(root)
    assert (summary.files, summary.opened, summary.entries) == (1, 1, 3)
    session = Session.objects.get()
    assert session.jid == "alice@example.com"
    assert session.message_count == 2
    assert session.first_prompt == "message number 1"


def test_a_pass_keeps_the_collector_off_older_objects_and_gives_them_back(root, monkeypatch):
    frozen_while_writing, thresholds_while_writing = [], []
    write_files = passes.write_files  # a first index writes its small files together

    def noting(*args):
        frozen_while_writing.append(gc.get_freeze_count())
        thresholds_while_writing.append(gc.get_threshold())
        return write_files(*args)

    monkeypatch.setattr(passes, "write_files", noting)
    before, thresholds = gc.get_freeze_count(), gc.get_threshold()
    assert thresholds[0] < passes.WRITER_GC_THRESHOLD
    run(root)
    assert frozen_while_writing and all(count > 0 for count in frozen_while_writing)
    # The youngest generation is collected less often while the pass writes.
    assert set(thresholds_while_writing) == {(passes.WRITER_GC_THRESHOLD, *thresholds[1:])}
    assert gc.get_freeze_count() == before
    assert gc.get_threshold() == thresholds


def test_indexing_twice_changes_nothing(root):
    run(root)
    before = snapshot()
    summary = run(root)
    assert summary.opened == 0
    assert snapshot() == before


def test_migration_0010_has_the_next_pass_read_every_file_again_whole_in_place(root, monkeypatch):
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "sessionviewer.migrations.0010_read_every_file_again_for_tool_call_search"
    )
    run(root)
    before, session_ids = snapshot(), list(Session.objects.values_list("id", flat=True))
    migration.read_every_file_again(apps, None)
    calls = []

    class Spy(readers.SessionReader):
        def __init__(self, path, fmt, start_offset=0, start_line=0, **options):
            calls.append(start_offset)
            super().__init__(path, fmt, start_offset, start_line, **options)

    monkeypatch.setattr(passes.readers, "SessionReader", Spy)
    summary = run(root)
    assert (summary.opened, calls) == (1, [0])  # the unchanged file, from its first byte
    assert snapshot() == before  # its rows again, none twice
    assert list(Session.objects.values_list("id", flat=True)) == session_ids
    assert run(root).opened == 0  # and then it is current


def test_appended_lines_are_read_from_the_last_indexed_offset(root, monkeypatch):
    run(root)
    size = history(root).stat().st_size
    calls = []

    class Spy(readers.SessionReader):
        def __init__(self, path, fmt, start_offset=0, start_line=0, **options):
            calls.append((start_offset, start_line))
            super().__init__(path, fmt, start_offset, start_line, **options)

    monkeypatch.setattr(passes.readers, "SessionReader", Spy)
    with history(root).open("a") as handle:
        handle.write(message(3))
    summary = run(root)
    assert calls == [(size, 3)]
    assert summary.entries == 1
    assert [e.line for e in Entry.objects.order_by("line")] == [1, 2, 3, 4]
    assert Session.objects.get().message_count == 3


def test_a_half_written_last_line_is_picked_up_once_complete(root):
    run(root)
    line = message(3)
    with history(root).open("a") as handle:
        handle.write(line[:25])
    run(root)
    assert Entry.objects.count() == 3
    assert Problem.objects.count() == 0
    with history(root).open("a") as handle:
        handle.write(line[25:])
    run(root)
    assert Entry.objects.count() == 4
    assert Entry.objects.get(line=4).text == "message number 3"


def test_a_truncated_file_is_indexed_again_whole(root):
    run(root)
    history(root).write_text(HEADER + message(7))
    run(root)
    assert [e.text for e in Entry.objects.order_by("line") if e.text] == ["message number 7"]
    assert Session.objects.get().message_count == 1


def test_a_replaced_file_is_indexed_again_whole(root):
    run(root)
    replacement = history(root).with_suffix(".tmp")
    replacement.write_text(HEADER + message(1) + message(2, "assistant") + message(9))
    os.replace(replacement, history(root))
    run(root)
    assert [e.text for e in Entry.objects.order_by("line") if e.text] == [
        "message number 1",
        "message number 2",
        "message number 9",
    ]


def test_a_rewritten_file_of_greater_size_is_indexed_again_whole(root):
    run(root)
    # Same inode, longer, but different first bytes: not an append.
    history(root).write_text(HEADER.replace("19:00:00", "20:00:00") + message(5) + message(6) + message(8))
    run(root)
    assert [e.text for e in Entry.objects.order_by("line") if e.text] == [
        "message number 5",
        "message number 6",
        "message number 8",
    ]


def test_a_deleted_file_leaves_the_index(root):
    run(root)
    history(root).unlink()
    summary = run(root)
    assert summary.removed == 1
    assert Session.objects.count() == 0
    assert Entry.objects.count() == 0


def test_fluux_new_moves_history_into_an_archive_and_both_are_indexed(root):
    run(root)
    archive = root / "alice@example.com" / "sessions"
    archive.mkdir()
    shutil.move(history(root), archive / "20250208-190500.jsonl")
    history(root).write_text(HEADER + message(20))
    run(root)
    by_key = {s.key: s for s in Session.objects.all()}
    assert by_key["alice@example.com/history.jsonl"].message_count == 1
    archived = next(s for k, s in by_key.items() if "sessions/" in k)
    assert archived.status == "archived"
    assert archived.message_count == 2


def test_a_bad_line_is_recorded_and_the_rest_of_the_file_indexes(root):
    history(root).write_bytes(
        HEADER.encode() + b"{not json\n" + b'"a string"\n' + b"\xff\xfe\n" + message(4).encode()
    )
    summary = run(root)
    assert summary.problems == 3
    assert sorted(Problem.objects.values_list("line", flat=True)) == [2, 3, 4]
    assert Entry.objects.filter(text="message number 4").exists()
    assert Session.objects.get().problem_count == 3


def test_a_failed_write_leaves_the_index_as_the_last_commit_left_it(root, monkeypatch):
    run(root)
    before = snapshot()
    offset = Session.objects.get().read_offset
    with history(root).open("a") as handle:
        handle.write(message(3))

    class Killed(BaseException):
        """As a signal would stop it: not an error of the file's, which the pass records and passes over."""

    def crash(*args, **kwargs):
        raise Killed

    monkeypatch.setattr(passes, "write_files", crash)
    with pytest.raises(Killed):
        run(root)
    assert snapshot() == before
    assert Session.objects.get().read_offset == offset
    monkeypatch.undo()
    run(root)
    assert len(snapshot()) == len(before) + 1


def watch_until_appended_line_indexed(root: Path) -> list:
    """Run the watcher in a thread, append message 3, and stop once it is indexed (or after
    20 s); the summaries of the passes it ran."""
    summaries = []
    stop = threading.Event()

    def on_pass(summary):
        summaries.append(summary)
        if Entry.objects.filter(text="message number 3").exists():
            stop.set()

    def watch():
        try:
            watch_roots([RootSpec(root, "fluux_xmpp")], on_pass, stop)
        finally:
            connection.close()  # the thread's own: left open, it keeps PostgreSQL's test database in use

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with history(root).open("a") as handle:
            handle.write(message(3))
        # The watcher may start after the write: touch the file until a pass has run.
        for _ in range(40):
            if stop.wait(0.5):
                break
            os.utime(history(root))
    finally:
        stop.set()
        watcher.join()
    return summaries


@pytest.mark.django_db(transaction=True)
def test_the_watcher_indexes_a_line_appended_while_it_runs(root):
    run(root)
    summaries = watch_until_appended_line_indexed(root)
    assert Entry.objects.filter(text="message number 3").exists()
    assert any(p.opened == 1 for p in summaries)


@pytest.mark.django_db(transaction=True)
def test_the_watcher_goes_on_after_a_pass_that_fails(root, monkeypatch):
    run(root)
    real = passes.index_roots
    calls = []

    def failing_once(specs, progress=None, memory=()):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database is locked")
        return real(specs, progress, memory)

    monkeypatch.setattr(passes, "index_roots", failing_once)
    summaries = watch_until_appended_line_indexed(root)
    assert summaries[0].errors == ["the pass stopped: RuntimeError('database is locked')"]
    assert Entry.objects.filter(text="message number 3").exists()


@contextmanager
def database_held(monkeypatch, table: str = "sessionviewer_source"):
    """The database held by another connection until the block ends, and the connections
    opened meanwhile waiting 0.2 s for it: SQLite's BEGIN EXCLUSIVE past its busy timeout,
    PostgreSQL's ACCESS EXCLUSIVE lock on table past its lock_timeout."""
    options = connection.settings_dict["OPTIONS"]
    connection.close()  # this thread's connection too opens again with the short wait
    if connection.vendor == "sqlite":
        monkeypatch.setitem(options, "timeout", 0.2)
        holder = sqlite3.connect(connection.settings_dict["NAME"], isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
    else:
        import psycopg

        monkeypatch.setitem(options, "options", "-c lock_timeout=200")
        holder = psycopg.connect(**connection.get_connection_params())
        holder.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
    try:
        yield
    finally:
        holder.close()  # its transaction rolled back


@pytest.mark.django_db(transaction=True)
def test_a_busy_database_stops_the_pass_and_records_no_file_as_failed(root, monkeypatch):
    run(root)
    with history(root).open("a") as handle:
        handle.write(message(3))
    with database_held(monkeypatch, table="sessionviewer_entry"), pytest.raises(OperationalError) as caught:
        run(root)  # on PostgreSQL the lock is met inside the file's savepoint
    assert database_busy(caught.value)
    assert Session.objects.get().index_error == ""
    assert run(root).entries == 1
    assert Entry.objects.filter(text="message number 3").exists()


@pytest.mark.django_db(transaction=True)
def test_the_watcher_waits_for_a_locked_database_and_then_indexes_what_changed(root, monkeypatch, caplog):
    run(root)
    monkeypatch.setattr(passes, "BUSY_RETRY_SECONDS", 0.1)
    summaries, stop = [], threading.Event()

    def on_pass(summary):
        summaries.append(summary)
        stop.set()

    def watch():
        try:
            watch_roots([RootSpec(root, "fluux_xmpp")], on_pass, stop)
        finally:
            connection.close()

    watcher = threading.Thread(target=watch)
    with database_held(monkeypatch):
        watcher.start()
        with history(root).open("a") as handle:
            handle.write(message(3))
        for _ in range(100):  # until the watcher found the database busy (it may start after the write)
            if any("busy" in r.getMessage() for r in caplog.records) or stop.wait(0.2):
                break
            os.utime(history(root))
        busy = [r for r in caplog.records if "busy" in r.getMessage()]
    try:
        stop.wait(20)
    finally:
        stop.set()
        watcher.join()
    assert busy[0].getMessage().startswith("the database is busy (")
    assert busy[0].levelname == "WARNING" and busy[0].exc_info is None  # a line, no traceback
    assert summaries[0].errors == [] and summaries[0].opened == 1
    assert Entry.objects.filter(text="message number 3").exists()


def test_a_cut_off_last_line_is_recorded_once_the_file_settles_and_cleared_once_completed(root):
    line = message(3)
    with history(root).open("a") as handle:
        handle.write(line[:25])
    run(root)
    assert Problem.objects.count() == 0  # still being written, perhaps
    long_ago = history(root).stat().st_mtime - 3600
    os.utime(history(root), (long_ago, long_ago))
    run(root)
    (problem,) = Problem.objects.all()
    assert (problem.line, problem.message[:7]) == (4, "cut off")
    with history(root).open("a") as handle:
        handle.write(line[25:])
    run(root)
    assert Problem.objects.count() == 0
    assert Session.objects.get().problem_count == 0
    assert Entry.objects.filter(line=4, text="message number 3").exists()


def test_a_file_larger_than_a_batch_is_written_in_batches_with_the_same_result(root, monkeypatch):
    monkeypatch.setattr(passes, "BATCH", 2)
    history(root).write_text(
        HEADER + "".join(message(n, "user" if n % 2 else "assistant") for n in range(1, 8))
    )
    run(root)
    session = Session.objects.get()
    assert [e.line for e in Entry.objects.order_by("line")] == list(range(1, 9))
    assert (session.entry_count, session.message_count) == (8, 7)
    assert session.first_prompt == "message number 1"


def test_a_jid_on_a_plain_domain_with_muc_senders_is_indexed_as_a_room(tmp_path):
    folder = tmp_path / "memory" / "team@example.org"
    folder.mkdir(parents=True)
    (folder / "history.jsonl").write_text(
        HEADER.replace("alice@example.com", "team@example.org")
        + '{"type":"message","role":"user","content":"hi all","sender":"ann@muc","ts":"2025-02-08T19:00:01Z"}\n'
    )
    run(tmp_path / "memory")
    run(tmp_path / "memory")
    with (folder / "history.jsonl").open("a") as handle:
        handle.write(message(5, "assistant"))
    run(tmp_path / "memory")  # discovery again says "direct": the senders still win
    session = Session.objects.get()
    assert (session.peer_kind, session.extra["room"]) == ("group", True)


def search(word: str) -> list[str]:
    from sessionviewer.search import matching_entries

    return sorted(matching_entries(word).values_list("text", flat=True))


def test_full_text_search_follows_appends_rewrites_and_deletions(root):
    run(root)
    with history(root).open("a") as handle:
        handle.write(message(3).replace("message number 3", "lighthouse keeper"))
    run(root)
    assert search("lighthouse") == ["lighthouse keeper"]
    history(root).write_text(HEADER + message(9).replace("message number 9", "harbour master"))
    run(root)
    assert search("lighthouse") == []
    assert search("harbour") == ["harbour master"]
    history(root).unlink()
    run(root)
    assert search("harbour") == []


def test_the_full_text_index_matches_the_entries_after_every_kind_of_change(root):
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 integrity check is SQLite's; PostgreSQL's GIN index is kept by the database")
    run(root)
    with history(root).open("a") as handle:
        handle.write(message(3))
    run(root)
    history(root).write_text(HEADER + message(7))
    run(root)
    with connection.cursor() as cursor:
        # Raises when the FTS5 table and the entries it indexes disagree.
        cursor.execute("INSERT INTO entry_fts(entry_fts, rank) VALUES ('integrity-check', 1)")
        cursor.execute("SELECT count(*) FROM entry_fts")
        assert cursor.fetchone()[0] == Entry.objects.count()


def test_text_indexed_between_files_while_the_worker_reads_is_indexed_once(root, monkeypatch):
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 table is SQLite's; PostgreSQL's GIN index is kept by the database")
    for name in ("bob", "carol", "dave"):
        folder = root / f"{name}@example.com"
        folder.mkdir()
        (folder / "history.jsonl").write_text(
            HEADER.replace("alice", name) + message(1).replace("message number 1", f"{name} writes")
        )
    monkeypatch.setattr(passes, "PARALLEL_BYTES", 0)
    monkeypatch.setattr(passes, "CPUS", 2)
    monkeypatch.setattr(worker.Reading, "ready", lambda reading, number: False)  # index between files
    run(root)
    history(root).write_text(
        HEADER + message(5).replace("message number 5", "alice again")
    )  # read again whole
    with (root / "bob@example.com" / "history.jsonl").open("a") as handle:
        handle.write(message(6).replace("message number 6", "bob appends"))
    run(root)
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO entry_fts(entry_fts, rank) VALUES ('integrity-check', 1)")
        cursor.execute("SELECT count(*) FROM entry_fts")
        assert cursor.fetchone()[0] == Entry.objects.count()
    assert search("writes") == ["bob writes", "carol writes", "dave writes"]
    assert search("again") == ["alice again"]
    assert search("appends") == ["bob appends"]


def test_entry_ids_are_never_reused(root):
    # The full-text index takes a group's new rows as those above the largest id at
    # its start (sqlite.NewRows): that holds because SQLite's AUTOINCREMENT never
    # hands out an id again, even after the rows with the largest ids are deleted.
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL keeps its GIN index itself; its sequences never go back either")
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = %s", [Entry._meta.db_table])
        assert "AUTOINCREMENT" in cursor.fetchone()[0]
    run(root)
    largest = Entry.objects.order_by("-id").first().id
    history(root).write_text(HEADER + message(3))
    run(root)  # the old rows, the largest ids among them, are gone
    assert Entry.objects.order_by("id").first().id > largest


def test_no_index_repeats_the_start_of_another():
    # Every index costs each inserted row its upkeep: one on the session alone would
    # only repeat what (session, line) already serves.
    with connection.cursor() as cursor:
        for table in (Entry._meta.db_table, "sessionviewer_problem"):
            constraints = connection.introspection.get_constraints(cursor, table)
            indexes = [  # an expression index (PostgreSQL's full-text one) names no column
                c["columns"]
                for c in constraints.values()
                if c["index"] and c["columns"] and not c["primary_key"]
            ]
            for columns in indexes:
                longer = [other for other in indexes if other != columns and other[: len(columns)] == columns]
                assert not longer, f"{table}: the index on {columns} repeats the start of {longer}"


def test_a_new_sqlite_database_gets_large_pages():
    # settings set the page size before WAL, which fixes it: the other order leaves 4 KB.
    if connection.vendor != "sqlite":
        pytest.skip("a page size is SQLite's own setting")
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA page_size")
        assert cursor.fetchone()[0] == 16384
        cursor.execute("PRAGMA journal_mode")
        assert cursor.fetchone()[0] == "wal"


def test_a_file_whose_read_fails_halfway_leaves_no_rows_and_the_others_index(root, monkeypatch):
    other = root / "bob@example.com"
    other.mkdir()
    (other / "history.jsonl").write_text(HEADER.replace("alice", "bob") + message(1))
    monkeypatch.setattr(passes, "BATCH", 1)
    real = readers.SessionReader.__iter__

    def failing(self):
        for number, item in enumerate(real(self)):
            if "alice" in str(self.path) and number == 2:
                raise OSError("input/output error")
            yield item

    monkeypatch.setattr(readers.SessionReader, "__iter__", failing)
    summary = run(root)
    assert summary.errors and "input/output error" in summary.errors[0]
    # The failed file is listed with its error, and nothing of it was kept.
    assert dict(Session.objects.values_list("jid", "index_error")) == {
        "alice@example.com": "input/output error",
        "bob@example.com": "",
    }
    assert not Entry.objects.filter(session__jid="alice@example.com").exists()
    monkeypatch.undo()
    run(root)
    alice = Session.objects.get(jid="alice@example.com")
    assert (alice.entry_count, alice.index_error) == (3, "")
    assert Entry.objects.filter(session__jid="alice@example.com").count() == 3


def test_a_pass_over_several_roots_looks_for_copied_replies_once(tmp_path, monkeypatch):
    from sessionviewer.index import copies

    roots = []
    for name in ("a", "b", "c"):
        jid = tmp_path / name / "alice@example.com"
        jid.mkdir(parents=True)
        (jid / "history.jsonl").write_text(HEADER + message(1) + message(2, "assistant"))
        roots.append(RootSpec(tmp_path / name, "fluux_xmpp"))
    asked = []
    real = copies.count_once
    monkeypatch.setattr(copies, "count_once", lambda sessions: asked.append(len(sessions)) or real(sessions))
    index_roots(roots)
    assert asked == [3]  # every root's sessions at once: the whole reply index was scanned per root
