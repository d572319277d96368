"""The incremental index: unchanged files are not opened, appends read only new bytes,
rewrites and deletions are noticed, and a failed write leaves the index as it was."""

import gc
import os
import shutil
import sqlite3
import threading
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import orjson
import pytest
from django.db import connection

from sessionviewer import readers
from sessionviewer.index import index_roots, links, passes, rows, sqlite, statements, watch_roots, worker
from sessionviewer.models import Entry, Problem, Session
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db

HEADER = '{"type":"session","version":1,"created":"2025-02-08T19:00:00Z","jid":"alice@example.com"}\n'


def message(n: int, role: str = "user") -> str:
    sender = ',"sender":"alice@example.com"' if role == "user" else ""
    return (
        f'{{"type":"message","role":"{role}","content":"message number {n}","msg_id":"m{n}"{sender},'
        f'"ts":"2025-02-08T19:{n // 60:02d}:{n % 60:02d}Z"}}\n'
    )


@pytest.fixture
def root(tmp_path: Path) -> Path:
    jid = tmp_path / "memory" / "alice@example.com"
    jid.mkdir(parents=True)
    (jid / "history.jsonl").write_text(HEADER + message(1) + message(2, "assistant"))
    return tmp_path / "memory"


def history(root: Path) -> Path:
    return root / "alice@example.com" / "history.jsonl"


def run(root: Path):
    return index_roots([RootSpec(root, "fluux_xmpp")])


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
    frozen_while_writing = []
    write_rows = passes.write_rows

    def noting(*args):
        frozen_while_writing.append(gc.get_freeze_count())
        return write_rows(*args)

    monkeypatch.setattr(passes, "write_rows", noting)
    before = gc.get_freeze_count()
    run(root)
    assert frozen_while_writing and all(count > 0 for count in frozen_while_writing)
    assert gc.get_freeze_count() == before


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

    monkeypatch.setattr(passes, "write_rows", crash)
    with pytest.raises(Killed):
        run(root)
    assert snapshot() == before
    assert Session.objects.get().read_offset == offset
    monkeypatch.undo()
    run(root)
    assert len(snapshot()) == len(before) + 1


@pytest.mark.django_db(transaction=True)
def test_the_watcher_indexes_a_line_appended_while_it_runs(root):
    run(root)
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
    assert Entry.objects.filter(text="message number 3").exists()
    assert any(p.opened == 1 for p in summaries)


@pytest.mark.django_db(transaction=True)
def test_the_watcher_goes_on_after_a_pass_that_fails(root, monkeypatch):
    run(root)
    real = passes.index_roots
    calls = []

    def failing_once(specs, progress=None):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("database is locked")
        return real(specs, progress)

    monkeypatch.setattr(passes, "index_roots", failing_once)
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
            connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        with history(root).open("a") as handle:
            handle.write(message(3))
        for _ in range(40):
            if stop.wait(0.5):
                break
            os.utime(history(root))
    finally:
        stop.set()
        watcher.join()
    assert summaries[0].errors == ["the pass stopped: RuntimeError('database is locked')"]
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


def _claude_line(uuid: str, parent: str | None, role: str, text: str, session: str) -> str:
    return orjson.dumps(
        {
            "type": role,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": session,
            "cwd": "/work/project",
            "timestamp": "2025-02-08T19:00:00Z",
            "message": {"role": role, "content": text},
        }
    ).decode()


def _summary_line(title: str, leaf: str) -> str:
    return orjson.dumps({"type": "summary", "summary": title, "leafUuid": leaf}).decode()


@pytest.fixture
def claude_project(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-work-project"
    folder.mkdir(parents=True)
    lines = [
        _claude_line("a1", None, "user", "first question", "A"),
        _claude_line("a2", "a1", "assistant", "x", "A"),
    ]
    (folder / "A.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "projects"


def _titles() -> dict[str, str]:
    return {Path(key).stem: title for key, title in Session.objects.values_list("key", "summary_title")}


def test_a_summary_whose_leaf_is_in_another_file_titles_that_files_session(claude_project):
    # Claude Code writes the summary of one session at the top of the next one's file.
    folder = claude_project / "-work-project"
    lines = [_summary_line("Fixing the parser", "a2"), _claude_line("b1", None, "user", "next", "B")]
    (folder / "B.jsonl").write_text("\n".join(lines) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    titles = _titles()
    assert titles["A"] == "Fixing the parser"
    assert titles["B"] == ""


def test_of_several_summaries_naming_one_session_the_last_written_wins(claude_project):
    folder = claude_project / "-work-project"
    first = [_summary_line("Old title", "a2"), _claude_line("b1", None, "user", "next", "B")]
    (folder / "B.jsonl").write_text("\n".join(first) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Old title"
    # Two more: a new title, then the stored one again, which must win as the last.
    more = [_summary_line("Newer title", "a2"), _summary_line("Old title", "a2")]
    with open(folder / "B.jsonl", "a") as handle:
        handle.write("\n".join(more) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Old title"
    with open(folder / "B.jsonl", "a") as handle:
        handle.write(_summary_line("Newest title", "a2") + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Newest title"


def _index_claude_lines(tmp_path, lines: list[dict]) -> None:
    """Index one Claude Code session file holding these lines."""
    folder = tmp_path / "projects" / "-work-project"
    folder.mkdir(parents=True)
    (folder / "S.jsonl").write_text("".join(orjson.dumps(line).decode() + "\n" for line in lines))
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])


def test_a_summary_titles_its_own_files_session_before_another_holding_the_same_leaf(claude_project):
    # A fork copies the lines it continues, uuids and all: the leaf is in both files.
    folder = claude_project / "-work-project"
    lines = [
        _summary_line("The fork", "a2"),
        *(_claude_line(u, p, "user", "x", "F") for u, p in (("a1", None), ("a2", "a1"))),
    ]
    (folder / "F.jsonl").write_text("\n".join(lines) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles() == {"A": "", "F": "The fork"}


def test_a_summary_never_titles_a_session_of_another_project(claude_project):
    other = claude_project / "-work-other"
    other.mkdir()
    lines = [_summary_line("Not yours", "a2"), _claude_line("c1", None, "user", "hello", "C")]
    (other / "C.jsonl").write_text("\n".join(lines) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles() == {"A": "", "C": ""}


def test_many_summary_lines_are_linked_in_a_few_queries(
    claude_project, monkeypatch, django_assert_max_num_queries
):
    folder = claude_project / "-work-project"
    for n in range(30):  # thirty files, each opening with the summary of the one before
        before = "a2" if n == 0 else f"s{n - 1}"
        lines = [_summary_line(f"Title {n}", before), _claude_line(f"s{n}", None, "user", "go on", f"S{n}")]
        (folder / f"S{n}.jsonl").write_text("\n".join(lines) + "\n")
    real = links.link_summaries
    calls = []

    def counted(source, touched):
        with django_assert_max_num_queries(4):  # the leaves, the sessions, the update
            real(source, touched)
        calls.append(len(touched))

    monkeypatch.setattr(links, "link_summaries", counted)
    index_roots([RootSpec(claude_project, "claude_code")])
    assert calls == [31]
    titles = _titles()
    assert titles["A"] == "Title 0" and titles["S28"] == "Title 29" and titles["S29"] == ""


def test_missing_values_are_stored_as_null_and_text_that_looks_like_zero_as_text(tmp_path):
    # The SQLite insert binds a stand-in for NULL (rows.SQLITE_NULL): no text may be taken for it.
    lines = [
        {"type": "user", "uuid": "0", "parentUuid": None, "cwd": "/w", "message": {"role": "user", "content": "0"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "0", "timestamp": "2025-02-08T19:00:00Z",
         "message": {"role": "assistant", "content": "0"}},
        {"type": "a-kind-nobody-knows", "uuid": "b", "parentUuid": "a", "value": 0},
    ]  # fmt: skip
    _index_claude_lines(tmp_path, lines)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT entry_id, parent_id, timestamp IS NULL, raw IS NULL, text FROM {Entry._meta.db_table} ORDER BY line"  # noqa: S608
        )
        rows = cursor.fetchall()
    assert [row[:4] for row in rows] == [
        ("0", None, True, True),
        ("a", "0", False, True),
        ("b", "a", True, False),
    ]
    assert [row[4] for row in rows[:2]] == ["0", "0"]
    assert Entry.objects.get(entry_id="b").raw["value"] == 0


def test_mostly_empty_columns_read_back_empty_and_text_that_looks_like_zero_stays_text(tmp_path):
    # The SQLite insert binds a stand-in for the empty value of the mostly empty
    # columns (rows.SQLITE_EMPTY): empty must come back empty, and "0" as "0".
    lines = [
        {"type": "user", "uuid": "u", "parentUuid": None, "cwd": "/w", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "requestId": "r",
         "message": {"role": "assistant", "id": "0", "model": "0", "content": "0",
                     "usage": {"input_tokens": 3, "output_tokens": 0}}},
        {"type": "system", "uuid": "s", "parentUuid": "a", "subtype": "0", "content": "x", "logicalParentUuid": "0"},
        {"type": "summary", "summary": "0", "leafUuid": "0"},
    ]  # fmt: skip
    _index_claude_lines(tmp_path, lines)
    columns = [c for c in rows.EMPTY_BY_DEFAULT if c not in ("usage", "extra")]
    stored = {e.line: e for e in Entry.objects.order_by("line")}
    user, assistant, system, summary = (stored[n] for n in (1, 2, 3, 4))
    assert {c: getattr(user, c) for c in columns} == dict.fromkeys(columns, "")
    assert (user.usage, user.extra) == ({}, {})
    assert (assistant.model, assistant.message_id) == ("0", "0")
    assert assistant.usage["input"] == 3
    assert (system.subtype, system.logical_parent_id) == ("0", "0")
    assert (summary.summary, summary.leaf_id) == ("0", "0")
    if connection.vendor != "sqlite":
        return  # the rest is of SQLite's insert, which binds the stand-in
    with connection.cursor() as cursor:  # text, never an integer, in every one of them
        kinds = ", ".join(f"typeof({connection.ops.quote_name(c)})" for c in rows.EMPTY_BY_DEFAULT)
        cursor.execute(f"SELECT {kinds} FROM {Entry._meta.db_table}")  # noqa: S608
        assert {kind for row in cursor.fetchall() for kind in row} <= {"text"}


def _session_with_every_kind_of_value(source, key: str, parent=None) -> Session:
    return Session(
        source=source,
        key=key,
        format="claude_code",
        path=f"/sessions/{key}.jsonl",
        title="Réunion 📅 du matin",
        parent=parent,
        started_at=datetime(2025, 2, 8, 21, 0, 5, 250, tzinfo=timezone(timedelta(hours=2))),
        updated_at=datetime(2025, 2, 8, 19, 30, tzinfo=UTC),
        indexed_at=None,
        entry_count=12,
        input_tokens=2**40,
        models_used=["claude-sonnet-4", "gpt-5"],
        extra={"room": True, 7: "a key that is not a string", "when": date(2025, 2, 8)},
    )


def _stored_row(session_id: int) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {Session._meta.db_table} WHERE id = %s", [session_id])  # noqa: S608
        names = [column[0] for column in cursor.description]
        return dict(zip(names, cursor.fetchone(), strict=True))


def test_the_indexers_session_statement_stores_what_the_orm_would(root):
    # _save_session skips the ORM's save for speed: every field must still reach the
    # database as the ORM sends it, whatever its type (dates in any zone, JSON, keys).
    run(root)
    source = Session.objects.get().source
    parent = Session.objects.get()
    by_orm = _session_with_every_kind_of_value(source, "by-orm", parent)
    by_orm.save()
    by_indexer = _session_with_every_kind_of_value(source, "by-indexer", parent)
    statements.save_session(by_indexer)  # an insert
    orm_row, indexer_row = _stored_row(by_orm.id), _stored_row(by_indexer.id)
    for row in (orm_row, indexer_row):
        del row["id"], row["key"], row["path"]
    assert indexer_row == orm_row
    by_indexer.title, by_indexer.started_at = "Second title", None
    statements.save_session(by_indexer)  # an update
    by_indexer.refresh_from_db()
    assert by_indexer.title == "Second title"
    assert (by_indexer.started_at, by_indexer.parent_id) == (None, parent.id)
    assert by_indexer.extra == {"room": True, "7": "a key that is not a string", "when": "2025-02-08"}


def test_the_indexers_session_statement_escapes_nul_in_text_from_files(root):
    run(root)
    session = Session.objects.get()
    session.title = "a title with \x00 in it"
    statements.save_session(session)
    session.refresh_from_db()
    assert session.title == "a title with \\u0000 in it"


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


# --- Checkpoints in a thread of their own ----------------------------------------------------------------


def _wal_database(path):
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")  # as the indexer sets it for a big pass
    writer.execute("CREATE TABLE t(x)")
    writer.execute("BEGIN")
    writer.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 500)
    writer.execute("COMMIT")
    return writer


def _rows_in_the_database_file(path, tmp_path) -> int:
    """What the database file holds without its log: what checkpoints copied."""
    alone = tmp_path / "alone.sqlite3"
    shutil.copyfile(path, alone)
    try:
        return sqlite3.connect(alone).execute("SELECT count(*) FROM t").fetchone()[0]
    except sqlite3.OperationalError:  # no such table: not even the CREATE was copied
        return 0


def test_the_checkpointer_copies_committed_pages_into_the_database_file(tmp_path):
    path = tmp_path / "index.sqlite3"
    writer = _wal_database(path)
    assert _rows_in_the_database_file(path, tmp_path) == 0
    checkpointer = sqlite.WalCheckpointer(str(path), log_limit=10**9)
    checkpointer.request()
    checkpointer.requests.join()
    assert _rows_in_the_database_file(path, tmp_path) == 500
    writer.execute("INSERT INTO t VALUES ('last')")
    checkpointer.close()  # copies what the last commit left
    assert not checkpointer.thread.is_alive()
    assert _rows_in_the_database_file(path, tmp_path) == 501
    assert (tmp_path / "index.sqlite3-wal").stat().st_size == 0


def test_past_its_limit_the_log_is_copied_before_the_next_write(tmp_path):
    path = tmp_path / "index.sqlite3"
    writer = _wal_database(path)  # open, as the indexer's connection is: the log stays
    checkpointer = sqlite.WalCheckpointer(str(path), log_limit=100_000)
    checkpointer.keep_log_bounded()  # ~500 KB of log: waits for the copy
    assert _rows_in_the_database_file(path, tmp_path) == 500
    writer.execute("PRAGMA journal_size_limit=0")  # as _checkpointing sets it, smaller
    writer.execute("INSERT INTO t VALUES ('next')")  # starts the log over, and shrinks it
    assert (tmp_path / "index.sqlite3-wal").stat().st_size < 100_000
    checkpointer.close()
    writer.close()


def test_a_big_pass_checkpoints_in_a_thread_and_gives_sqlite_its_own_back_after():
    with sqlite.checkpointing(big=False) as checkpointer:
        assert checkpointer is None  # the watcher's small passes: SQLite's own checkpoints
    if connection.vendor != "sqlite":
        with sqlite.checkpointing(big=True) as checkpointer:
            assert checkpointer is None  # PostgreSQL has no such log to copy
        return

    def automatic() -> int:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA wal_autocheckpoint")
            return cursor.fetchone()[0]

    before = automatic()
    with sqlite.checkpointing(big=True) as checkpointer:
        assert isinstance(checkpointer, sqlite.WalCheckpointer)
        assert automatic() == 0
    assert not checkpointer.thread.is_alive()
    assert automatic() == before > 0
