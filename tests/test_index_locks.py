"""One indexer per machine and root on a shared PostgreSQL (index/locks.py); SQLite takes none."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from contextlib import nullcontext
from io import StringIO
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, Sum
from django.test import override_settings

from sessionviewer.index import passes
from sessionviewer.index.locks import RootTaken, lock_key, roots_held, take_turn
from sessionviewer.models import CopiedUsage, Session, Source, ThreadSnapshot
from sessionviewer.roots import parse_root
from sessionviewer.transcripts.store import PREPARE_FROM
from tests.claude_files import write_sessions, write_tool_turn
from tests.indexers import command_env, index_at_once, index_view

pytestmark = pytest.mark.django_db

ON_POSTGRESQL = connection.vendor == "postgresql"


def test_the_key_names_the_machine_and_the_root_and_fits_a_bigint():
    keys = {
        lock_key("laptop", "/home/dev/.claude/projects"),
        lock_key("ci-runner", "/home/dev/.claude/projects"),
        lock_key("laptop", "/home/dev/.codex/sessions"),
    }
    assert len(keys) == 3
    assert lock_key("laptop", "/r") == lock_key("laptop", "/r")
    assert all(-(2**63) <= key < 2**63 for key in keys)


def test_a_second_indexer_of_the_same_machine_and_root_is_refused_on_postgresql():
    with roots_held("laptop", ["/home/dev/.claude/projects", "/srv/fluux/memory"]):
        if ON_POSTGRESQL:
            with pytest.raises(RootTaken) as refused, roots_held("laptop", ["/home/dev/.claude/projects"]):
                pass
            assert refused.value.machine == "laptop"
            assert refused.value.root == "/home/dev/.claude/projects"
        else:  # one machine's database: a second pass waits for the first's transaction instead
            with roots_held("laptop", ["/home/dev/.claude/projects"]):
                pass
        # Another machine with the same path, and the same machine's other roots, go ahead.
        with (
            roots_held("ci-runner", ["/home/dev/.claude/projects"]),
            roots_held("laptop", ["/home/dev/.codex"]),
        ):
            pass
    with roots_held("laptop", ["/home/dev/.claude/projects"]):  # let go when the first ended
        pass


def test_a_refused_root_lets_go_of_the_roots_it_had_taken():
    with roots_held("laptop", ["/b"]):
        with pytest.raises(RootTaken) if ON_POSTGRESQL else nullcontext(), roots_held("laptop", ["/a", "/b"]):
            pass
        with roots_held("laptop", ["/a"]):  # "/a" was taken before "/b" was refused, and let go
            pass


def test_manage_py_index_refuses_a_root_another_indexer_of_its_machine_holds(tmp_path, settings):
    settings.SESSIONVIEWER_MACHINE = "laptop-a"
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    write_tool_turn(root / "p" / "a.jsonl", "Fix the upload test", [{"type": "text", "text": "Done."}])
    out, err = StringIO(), StringIO()
    with roots_held("laptop-a", [str(root)]):
        if ON_POSTGRESQL:
            with pytest.raises(CommandError) as refused:
                call_command("index", f"claude_code={root}", stdout=out, stderr=err)
            assert "'laptop-a'" in str(refused.value) and str(root) in str(refused.value)
            assert refused.value.returncode != 0
            assert not Session.objects.exists()
        else:
            call_command("index", f"claude_code={root}", stdout=out, stderr=err)
            assert Session.objects.count() == 1
    settings.SESSIONVIEWER_MACHINE = "laptop-b"  # the same path on another machine: its own sessions
    with roots_held("laptop-a", [str(root)]):
        call_command("index", f"claude_code={root}", stdout=out, stderr=err)
    machines = Session.objects.values_list("source__machine", flat=True)
    assert sorted(machines) == (["laptop-b"] if ON_POSTGRESQL else ["laptop-a", "laptop-b"])


def test_take_turn_makes_another_transaction_wait_on_postgresql_and_is_nothing_on_sqlite():
    with transaction.atomic():
        take_turn("copies")
        if not ON_POSTGRESQL:
            return
        other = connection.get_new_connection(connection.get_connection_params())
        try:
            with other.cursor() as cursor:  # another indexer's transaction
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock_key("turn", "copies")])
                assert cursor.fetchone()[0] is False
                cursor.execute("SELECT pg_try_advisory_xact_lock(%s)", [lock_key("turn", "snapshot\x001")])
                assert cursor.fetchone()[0] is True  # another turn is free
        finally:
            other.close()


@pytest.mark.django_db(transaction=True)
def test_take_turn_outside_a_transaction_is_a_mistake_on_postgresql():
    with pytest.raises(RuntimeError) if ON_POSTGRESQL else nullcontext():
        take_turn("copies")


SESSIONS, REPLIES = 60, 5


@pytest.mark.skipif(not ON_POSTGRESQL, reason="SQLite is one machine's database: one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_two_indexers_at_once_count_each_copied_reply_once(tmp_path):
    """Two indexers, each with a root of its own, write at once; every reply is held in both
    roots, so both settle the same replies (copies.count_once) at about the same time."""
    roots = [tmp_path / "a" / "projects", tmp_path / "b" / "projects"]
    for root in roots:
        write_sessions(root, SESSIONS, REPLIES)
    for err in index_at_once({f"machine-{n}": root for n, root in enumerate(roots)}):
        assert "not indexed" not in err and "failed" not in err, err
    assert Session.objects.count() == 2 * SESSIONS
    # Each reply counted by one session, its copy in the other root kept off the totals.
    held = CopiedUsage.objects.values("message_id").annotate(rows=Count("id"))
    assert {row["message_id"]: row["rows"] for row in held} == {
        f"msg_{number}_{reply}": 1 for number in range(SESSIONS) for reply in range(REPLIES)
    }
    totals = Session.objects.aggregate(output=Sum("output_tokens"), input=Sum("input_tokens"))
    assert totals == {"output": SESSIONS * REPLIES * 10, "input": SESSIONS * REPLIES * 100}


def test_a_file_the_database_refuses_is_recorded_on_its_session_and_the_command_exits_1(
    tmp_path, monkeypatch
):
    """As when another indexer wrote a row first: the file is named, kept for the next pass,
    and the pass says it failed rather than exiting 0."""
    root = tmp_path / "projects"
    for name in ("a", "b"):
        write_tool_turn(root / "p" / f"{name}.jsonl", f"Prompt {name}", [{"type": "text", "text": "Done."}])
    real_write_files = passes.write_files

    def refusing_b(files):
        real_write_files(files)
        if any(session.key.endswith("b.jsonl") for session, *_ in files):
            raise IntegrityError('duplicate key value violates unique constraint "session_source_key"')

    monkeypatch.setattr(passes, "write_files", refusing_b)
    err = StringIO()
    with pytest.raises(CommandError) as failed:
        call_command("index", f"claude_code={root}", stdout=StringIO(), stderr=err)
    assert failed.value.returncode == 1
    assert "refused 1 of this pass's writes" in str(failed.value)
    assert "not indexed: " in err.getvalue() and "b.jsonl" in err.getvalue()
    refused = Session.objects.get(key__endswith="b.jsonl")
    assert "session_source_key" in refused.index_error
    monkeypatch.setattr(passes, "write_files", real_write_files)
    call_command("index", f"claude_code={root}", stdout=StringIO(), stderr=StringIO())  # exits 0
    assert Session.objects.get(key__endswith="b.jsonl").index_error == ""


@pytest.mark.django_db(transaction=True)
def test_an_indexer_killed_mid_pass_loses_nothing(tmp_path):
    root = tmp_path / "projects"
    write_sessions(root, 3 * passes.GROUP_FILES, REPLIES)  # three groups, each one transaction
    command = [sys.executable, "manage.py", "index", f"claude_code={root}"]
    indexer = subprocess.Popen(command, cwd=settings.BASE_DIR, env=command_env(), stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not Session.objects.exists():  # the first group is committed: kill it past there
        assert indexer.poll() is None and time.monotonic() < deadline, indexer.stderr.read()
        time.sleep(0.02)
    indexer.send_signal(signal.SIGKILL)
    assert indexer.wait(60) == -signal.SIGKILL
    assert Session.objects.count() < 3 * passes.GROUP_FILES  # it was stopped halfway
    again = subprocess.run(command, cwd=settings.BASE_DIR, env=command_env(), capture_output=True, text=True)
    assert again.returncode == 0, again.stderr  # not refused: the killed one's lock went with it
    resumed = index_view()
    Session.objects.all().delete()
    Source.objects.all().delete()
    fresh = subprocess.run(command, cwd=settings.BASE_DIR, env=command_env(), capture_output=True, text=True)
    assert fresh.returncode == 0, fresh.stderr
    assert resumed == index_view()
    assert resumed["machines"]["laptop"]["entries"] == 3 * passes.GROUP_FILES * 2 * REPLIES


def _write_long_session(path: Path, turns: int) -> None:
    """A Claude Code session of 2 * turns entries: long enough for a prepared thread snapshot."""
    base = {"sessionId": path.stem, "cwd": "/home/me/app", "timestamp": "2026-02-08T19:00:00Z"}
    lines, parent = [], None
    for turn in range(turns):
        lines.append({**base, "type": "user", "uuid": f"u{turn}", "parentUuid": parent,
                      "message": {"role": "user", "content": f"Step {turn}"}})  # fmt: skip
        lines.append({**base, "type": "assistant", "uuid": f"a{turn}", "parentUuid": f"u{turn}",
                      "message": {"id": f"m{turn}", "role": "assistant", "model": "m",
                                  "content": [{"type": "text", "text": "Done."}]}})  # fmt: skip
        parent = f"a{turn}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


@pytest.mark.skipif(not ON_POSTGRESQL, reason="SQLite is one machine's database: one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_two_indexers_at_once_prepare_each_long_thread_once(tmp_path):
    """Each indexer prepares the long sessions it wrote and every other one not prepared yet
    (unprepared_sessions): the other indexer's too, at about the same time."""
    roots = [tmp_path / name / "projects" for name in ("a", "b", "c")]
    for number, root in enumerate(roots):
        for session in range(2):
            _write_long_session(root / "-home-me-app" / f"{number}-{session}.jsonl", PREPARE_FROM // 2 + 1)
    index_at_once({f"machine-{n}": root for n, root in enumerate(roots)})
    assert Session.objects.filter(entry_count__gte=PREPARE_FROM).count() == 6
    snapshots = ThreadSnapshot.objects.values_list("session_id", "leaf")
    assert sorted(snapshots) == sorted((s.id, "") for s in Session.objects.all())


def _replies_file(path: Path, started: str, replies: list[tuple[str, str]]) -> None:
    """A Claude Code session: a prompt at `started`, then (message id, time) replies of
    100 input and 10 output tokens each, after a prompt each."""
    base = {"sessionId": path.stem, "cwd": "/home/me/app"}
    lines, parent = [], None
    for number, (message_id, at) in enumerate(replies):
        lines.append({**base, "type": "user", "uuid": f"{path.stem}-u{number}", "parentUuid": parent,
                      "timestamp": started if number == 0 else at,
                      "message": {"role": "user", "content": f"Step {number}"}})  # fmt: skip
        message = {"id": message_id, "role": "assistant", "model": "claude-sonnet-4-5",
                   "content": [{"type": "text", "text": "Done."}],
                   "usage": {"input_tokens": 100, "output_tokens": 10}}  # fmt: skip
        lines.append({**base, "type": "assistant", "uuid": f"{path.stem}-a{number}",
                      "parentUuid": f"{path.stem}-u{number}", "timestamp": at, "message": message})  # fmt: skip
        parent = f"{path.stem}-a{number}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


def test_an_append_keeps_what_another_machines_copies_took_off_since_it_was_planned(tmp_path, monkeypatch):
    """Machine a plans an append to its session. Before it writes, machine b indexes a file
    holding a copy of one of that session's replies, which b's session counts (its first
    line is older), and takes it off a's totals. a's write adds its new lines to the totals
    as they are now, not to those it read when it planned."""
    ours = tmp_path / "a" / "projects" / "-home-me-app" / "ours.jsonl"
    theirs = tmp_path / "b" / "projects" / "-home-me-app" / "theirs.jsonl"
    replies = [("msg_1", "2026-03-01T10:10:00Z"), ("msg_2", "2026-03-01T10:11:00Z")]
    _replies_file(ours, "2026-03-01T10:05:00Z", replies)
    quiet = {"stdout": StringIO(), "stderr": StringIO()}
    with override_settings(SESSIONVIEWER_MACHINE="a"):
        call_command("index", f"claude_code={ours.parents[1]}", **quiet)
    assert Session.objects.get().output_tokens == 20
    _replies_file(ours, "2026-03-01T10:05:00Z", [*replies, ("msg_3", "2026-03-01T10:12:00Z")])  # grown
    _replies_file(theirs, "2026-03-01T10:00:00Z", replies[:1])  # older: it counts msg_1
    real_write_changes, b_indexed = passes._write_changes, []

    def b_indexes_first(*args, **kwargs):  # a has planned its append; b writes and settles now
        if not b_indexed:
            b_indexed.append(True)
            with override_settings(SESSIONVIEWER_MACHINE="b"):
                call_command("index", f"claude_code={theirs.parents[1]}", **quiet)
        return real_write_changes(*args, **kwargs)

    monkeypatch.setattr(passes, "_write_changes", b_indexes_first)
    with override_settings(SESSIONVIEWER_MACHINE="a"):
        call_command("index", f"claude_code={ours.parents[1]}", **quiet)
    assert b_indexed
    ours_session = Session.objects.get(key__endswith="ours.jsonl")
    assert list(ours_session.copied_usage.values_list("message_id", flat=True)) == ["msg_1"]
    assert (ours_session.output_tokens, ours_session.input_tokens) == (20, 200)  # msg_2 and msg_3
    assert sum(line["turns"] for line in ours_session.usage_lines.values()) == 2
    # Each of the three replies counted once across both machines.
    assert Session.objects.aggregate(output=Sum("output_tokens")) == {"output": 30}


@pytest.mark.skipif(not ON_POSTGRESQL, reason="SQLite is one machine's database: one writer at a time")
@pytest.mark.django_db(transaction=True)
def test_settling_copies_waits_for_an_append_another_indexer_is_writing(tmp_path):
    """Another indexer has written an append to a session and not committed yet. Settling a
    reply that session holds a copy of waits for it, and keeps what the append added: it
    read the totals before, and wrote them back over the append."""
    import threading

    import psycopg

    from sessionviewer.index import copies

    ours = tmp_path / "a" / "projects" / "-home-me-app" / "ours.jsonl"
    theirs = tmp_path / "b" / "projects" / "-home-me-app" / "theirs.jsonl"
    replies = [("msg_1", "2026-03-01T10:10:00Z"), ("msg_2", "2026-03-01T10:11:00Z")]
    _replies_file(ours, "2026-03-01T10:05:00Z", replies)
    _replies_file(theirs, "2026-03-01T10:00:00Z", replies[:1])
    quiet = {"stdout": StringIO(), "stderr": StringIO()}
    for machine, path in (("a", ours), ("b", theirs)):
        with override_settings(SESSIONVIEWER_MACHINE=machine):
            call_command("index", f"claude_code={path.parents[1]}", **quiet)
    session = Session.objects.get(key__endswith="ours.jsonl")
    assert session.output_tokens == 10  # msg_2: msg_1 is counted by theirs
    db = connection.settings_dict
    other = psycopg.connect(
        dbname=db["NAME"], user=db["USER"], host=db["HOST"], port=db["PORT"], password=db["PASSWORD"] or None
    )
    try:
        other.execute(
            "UPDATE sessionviewer_session SET output_tokens = output_tokens + 10 WHERE id = %s", [session.id]
        )  # the append, written, not committed
        settled = threading.Event()

        def settle() -> None:
            try:
                with transaction.atomic():
                    copies.settle(["msg_1"])
            finally:
                connection.close()
                settled.set()

        thread = threading.Thread(target=settle)
        thread.start()
        assert not settled.wait(1.0)  # it waits for the append's row
        other.commit()
        assert settled.wait(30)
        thread.join()
    finally:
        other.close()
    session.refresh_from_db()
    assert session.output_tokens == 20  # msg_2, and the append's reply
    assert list(session.copied_usage.values_list("message_id", flat=True)) == ["msg_1"]


def test_settling_copies_stopped_to_end_a_deadlock_is_tried_again(tmp_path, monkeypatch):
    """PostgreSQL ends a deadlock between an append and a settling by stopping one of them.
    No later pass reads these files again to settle their copies: the pass tries again."""
    from django.db import OperationalError

    from sessionviewer.index import copies

    class Deadlock(Exception):
        sqlstate = "40P01"

    real_count_once, calls = copies.count_once, []

    def deadlocked_once(read_whole):
        calls.append(len(read_whole))
        if len(calls) == 1:
            try:
                raise Deadlock("deadlock detected")
            except Deadlock as cause:
                raise OperationalError("deadlock detected") from cause
        real_count_once(read_whole)

    monkeypatch.setattr(copies, "count_once", deadlocked_once)
    ours = tmp_path / "projects" / "-home-me-app" / "ours.jsonl"
    _replies_file(ours, "2026-03-01T10:05:00Z", [("msg_1", "2026-03-01T10:10:00Z")])
    _replies_file(ours.with_name("theirs.jsonl"), "2026-03-01T10:00:00Z", [("msg_1", "2026-03-01T10:10:00Z")])
    summary = passes.index_roots([parse_root(f"claude_code={ours.parents[1]}")])
    assert summary.errors == [] and summary.refused == 0
    assert calls == [2, 2]
    assert CopiedUsage.objects.count() == 1  # settled on the second try
