"""Every change on disk: atomic writes, the folder lock and record hook, /new, /forget."""

import contextlib
import fcntl
import hashlib
import multiprocessing
import os
import shutil
import stat
import threading
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from sessionviewer import workspaces as ws
from sessionviewer.workspaces import (
    Conflict,
    UnsafePath,
    archive_session,
    atomic_write,
    file_version,
    forget_user,
    jid_status,
    remove_file,
    remove_override,
    writes,
)

from .workspace_files import (
    UUID,
    make_tree,
    slow_rename,
)

# Atomic writes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_file_version_is_the_sha256_of_the_bytes_or_absent(tmp_path):
    path = tmp_path / "user.md"
    assert file_version(path) == "absent"
    path.write_bytes(b"hello")
    assert file_version(path) == sha(b"hello")


def test_atomic_write_replaces_the_file_and_returns_the_new_version(tmp_path):
    path = make_tree(tmp_path, {"user.md": "old\n"}) / "user.md"
    version = atomic_write(path, "new\n", file_version(path))
    assert path.read_text() == "new\n"
    assert version == file_version(path) == sha(b"new\n")


def test_atomic_write_creates_a_file_expected_absent(tmp_path):
    path = tmp_path / "identity.md"
    atomic_write(path, "hi", "absent")
    assert path.read_text() == "hi"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~writes.current_umask()


def test_atomic_write_refuses_a_stale_version_and_writes_nothing(tmp_path):
    path = make_tree(tmp_path, {"user.md": "edited elsewhere\n"}) / "user.md"
    with pytest.raises(Conflict) as caught:
        atomic_write(path, "mine\n", sha(b"what I loaded\n"))
    assert caught.value.current_text == "edited elsewhere\n"
    assert caught.value.current_version == sha(b"edited elsewhere\n")
    assert path.read_text() == "edited elsewhere\n"
    assert os.listdir(tmp_path) == ["user.md"]


def test_atomic_write_refuses_to_create_over_a_file_that_appeared(tmp_path):
    path = make_tree(tmp_path, {"identity.md": "someone else's\n"}) / "identity.md"
    with pytest.raises(Conflict):
        atomic_write(path, "mine", "absent")
    assert path.read_text() == "someone else's\n"


def test_atomic_write_refuses_when_the_file_was_deleted(tmp_path):
    with pytest.raises(Conflict) as caught:
        atomic_write(tmp_path / "user.md", "mine", sha(b"old"))
    assert caught.value.current_text is None
    assert caught.value.current_version == "absent"


def test_crash_between_write_and_rename_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = make_tree(tmp_path, {"memory.md": "precious\n"}) / "memory.md"

    def crash(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(writes.os, "replace", crash)
    with pytest.raises(OSError, match="power cut"):
        atomic_write(path, "half-done\n", file_version(path))
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_atomic_write_keeps_the_file_mode(tmp_path):
    path = make_tree(tmp_path, {"user.md": "old"}) / "user.md"
    path.chmod(0o640)
    atomic_write(path, "new", file_version(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_atomic_write_keeps_crlf_line_endings(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"a\r\nb\r\n"}) / "user.md"
    atomic_write(path, "x\ny\r\nz\n", file_version(path))
    assert path.read_bytes() == b"x\r\ny\r\nz\r\n"


def test_atomic_write_keeps_lf_line_endings_when_the_browser_sends_crlf(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"a\nb\n"}) / "user.md"
    atomic_write(path, "x\r\ny\r\n", file_version(path))
    assert path.read_bytes() == b"x\ny\n"


def test_remove_override_deletes_the_jids_file_when_the_version_matches(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"identity.md": "mine"})
    remove_override(jid_dir, "identity.md", sha(b"mine"))
    assert not (jid_dir / "identity.md").exists()


def test_remove_override_refuses_a_stale_version(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"identity.md": "changed"})
    with pytest.raises(Conflict):
        remove_override(jid_dir, "identity.md", sha(b"mine"))
    assert (jid_dir / "identity.md").read_text() == "changed"


def test_remove_override_refuses_files_that_are_not_persona_files(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"memory.md": "x"})
    with pytest.raises(UnsafePath):
        remove_override(jid_dir, "memory.md", sha(b"x"))


def test_remove_file_of_an_absent_file_expected_absent_does_nothing(tmp_path):
    remove_file(tmp_path / "identity.md", "absent")
    assert os.listdir(tmp_path) == []


# One unit: the lock, and the record around the rename


class Recorder:
    """A record hook that notes what it saw, standing for the views' database transaction."""

    def __init__(self, fail_on_enter=False, fail_on_exit=False):
        self.fail_on_enter, self.fail_on_exit = fail_on_enter, fail_on_exit
        self.seen, self.outcome = None, None

    @contextlib.contextmanager
    def __call__(self, before, after):
        self.seen = (before, after)
        if self.fail_on_enter:
            raise RuntimeError("database is locked")
        try:
            yield
        except BaseException:
            self.outcome = "rolled back"
            raise
        if self.fail_on_exit:
            self.outcome = "commit failed"
            raise RuntimeError("commit failed")
        self.outcome = "committed"


def race(calls: list) -> list:
    """Run the calls at once, one thread each; each result or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(n):
        barrier.wait()
        try:
            results[n] = calls[n]()
        except Exception as error:  # noqa: BLE001 - the outcome is what the test looks at
            results[n] = error

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_writes_from_one_version_have_exactly_one_winner(tmp_path, monkeypatch):
    slow_rename(monkeypatch)
    path = make_tree(tmp_path, {"memory.md": "start\n"}) / "memory.md"
    for round_ in range(20):
        version = file_version(path)
        texts = [f"round {round_} writer {n}\n" for n in range(3)]
        results = race([lambda t=t, v=version: atomic_write(path, t, v) for t in texts])
        winners = [text for text, result in zip(texts, results, strict=True) if isinstance(result, str)]
        assert len(winners) == 1, results
        assert all(isinstance(r, Conflict) for r in results if not isinstance(r, str))
        assert path.read_text() == winners[0]


def lock_and_report(folder: str, reports, answers) -> None:
    with ws.locked(Path(folder)):
        reports.put("locked")
        answers.get()  # hold the lock until the parent has tried to take it


def test_the_write_lock_holds_across_processes(tmp_path):
    context = multiprocessing.get_context("fork")
    reports, answers = context.Queue(), context.Queue()
    child = context.Process(target=lock_and_report, args=(str(tmp_path), reports, answers))
    child.start()
    assert reports.get(timeout=30) == "locked"
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        answers.put("done")
        child.join(30)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once the child is done
    finally:
        os.close(fd)
    assert child.exitcode == 0


def test_the_record_sees_the_bytes_replaced_and_commits_after_the_rename(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"caf\xe9\r\n"}) / "user.md"
    record = Recorder()
    atomic_write(path, "new\n", file_version(path), record)
    assert record.seen == (b"caf\xe9\r\n", b"new\r\n")
    assert record.outcome == "committed"


def test_a_record_that_cannot_start_leaves_the_file_untouched(tmp_path):
    path = make_tree(tmp_path, {"memory.md": "precious\n"}) / "memory.md"
    with pytest.raises(RuntimeError, match="database is locked"):
        atomic_write(path, "mine\n", file_version(path), Recorder(fail_on_enter=True))
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_a_failed_rename_rolls_the_record_back(tmp_path, monkeypatch):
    path = make_tree(tmp_path, {"memory.md": "precious\n"}) / "memory.md"

    def crash(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(writes.os, "replace", crash)
    record = Recorder()
    with pytest.raises(OSError, match="power cut"):
        atomic_write(path, "half-done\n", file_version(path), record)
    assert record.outcome == "rolled back"
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_a_failed_commit_puts_the_old_bytes_and_mode_back(tmp_path):
    path = make_tree(tmp_path, {"memory.md": b"caf\xe9\n"}) / "memory.md"
    path.chmod(0o640)
    with pytest.raises(RuntimeError, match="commit failed"):
        atomic_write(path, "mine\n", file_version(path), Recorder(fail_on_exit=True))
    assert path.read_bytes() == b"caf\xe9\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["memory.md"]


def test_a_failed_commit_of_a_new_file_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError):
        atomic_write(tmp_path / "identity.md", "mine\n", "absent", Recorder(fail_on_exit=True))
    assert os.listdir(tmp_path) == []


def test_a_failed_commit_of_a_remove_puts_the_file_back(tmp_path):
    path = make_tree(tmp_path, {"identity.md": "mine\n"}) / "identity.md"
    record = Recorder(fail_on_exit=True)
    with pytest.raises(RuntimeError):
        remove_file(path, file_version(path), record)
    assert record.seen == (b"mine\n", None)
    assert path.read_text() == "mine\n"


def test_atomic_write_of_bytes_writes_them_as_they_are(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"a\r\nb\r\n"}) / "user.md"
    atomic_write(path, b"caf\xe9\nx\n", file_version(path))
    assert path.read_bytes() == b"caf\xe9\nx\n"


# /new


HISTORY = '{"type":"session","version":1,"created":"x","jid":"a@b.c"}\n{"type":"message","role":"user","content":"hi"}\n'


def test_archive_session_moves_history_to_a_timestamped_archive(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    archived = archive_session(jid_dir, datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC))
    assert archived == jid_dir.resolve() / "sessions" / "20250601-143022.jsonl"
    assert archived.read_text() == HISTORY
    assert not (jid_dir / "history.jsonl").exists()


def test_archive_session_never_overwrites_an_archive_from_the_same_second(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    now = datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC)
    first = archive_session(jid_dir, now)
    (jid_dir / "history.jsonl").write_text(HISTORY.replace("hi", "second"))
    second = archive_session(jid_dir, now)
    (jid_dir / "history.jsonl").write_text(HISTORY.replace("hi", "third"))
    third = archive_session(jid_dir, now)
    assert [p.name for p in (first, second, third)] == [
        "20250601-143022.jsonl",
        "20250601-143022-1.jsonl",
        "20250601-143022-2.jsonl",
    ]
    assert first.read_text() == HISTORY
    assert "second" in second.read_text()
    assert jid_status(tmp_path, "a@b.c").archived_sessions == 3


def test_archive_session_names_the_archive_in_utc(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    paris = timezone(timedelta(hours=2))
    assert (
        archive_session(jid_dir, datetime(2025, 6, 1, 16, 30, 22, tzinfo=paris)).name
        == "20250601-143022.jsonl"
    )


def test_archive_session_without_history_returns_none(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"user.md": "x"})
    assert archive_session(jid_dir, datetime.now(UTC)) is None
    assert not (jid_dir / "sessions").exists()


def test_archive_session_leaves_a_session_without_messages_alone(tmp_path):
    header_only = '{"type":"session","version":1,"created":"x","jid":"a@b.c"}\n'
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": header_only})
    assert archive_session(jid_dir, datetime.now(UTC)) is None
    assert (jid_dir / "history.jsonl").read_text() == header_only


def test_concurrent_new_from_one_version_archives_once(tmp_path, monkeypatch):
    slow_rename(monkeypatch)
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    now = datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC)
    for _ in range(10):
        version = file_version(jid_dir / "history.jsonl")
        results = race([lambda v=version: archive_session(jid_dir, now, v) for _ in range(3)])
        assert sum(isinstance(r, Path) for r in results) == 1, results
        assert sum(isinstance(r, Conflict) for r in results) == 2
        (jid_dir / "history.jsonl").write_text(HISTORY)
    assert len(list((jid_dir / "sessions").iterdir())) == 10


def test_a_failed_commit_of_new_moves_the_history_back(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})

    @contextlib.contextmanager
    def record(archive):
        yield
        raise RuntimeError("commit failed")

    with pytest.raises(RuntimeError):
        archive_session(jid_dir, datetime.now(UTC), file_version(jid_dir / "history.jsonl"), record)
    assert (jid_dir / "history.jsonl").read_text() == HISTORY
    assert list((jid_dir / "sessions").iterdir()) == []


def test_archive_session_of_the_sample_keeps_the_legacy_archive(sample):
    alice = sample / "alice@example.com"
    archive_session(alice, datetime(2025, 6, 3, 8, 0, 0, tzinfo=UTC))
    assert sorted(p.name for p in (alice / "sessions").iterdir()) == [
        "20250601-143022.md",
        "20250603-080000.jsonl",
    ]


# /forget


def test_forget_user_erases_active_memory_and_keeps_archives_and_overrides(tmp_path):
    jid_dir = make_tree(
        tmp_path / "a@b.c",
        {
            "history.jsonl": HISTORY,
            "history.md": "### user\nold\n",
            "user.md": "profile",
            "context.md": "legacy",
            "memory.md": "notes",
            "knowledge.jsonl": '{"key":"k","content":"c","ts":"t"}\n',
            f"files/{UUID}_a.png": b"x",
            "sessions/20250101-000000.jsonl": HISTORY,
            "identity.md": "Room identity",
            "instructions.md": "Room rules",
        },
    )
    erased = forget_user(jid_dir)
    assert erased == [
        "history.jsonl",
        "history.md",
        "user.md",
        "context.md",
        "memory.md",
        "knowledge.jsonl",
        "files/",
    ]
    assert sorted(p.name for p in jid_dir.iterdir()) == ["identity.md", "instructions.md", "sessions"]
    assert (jid_dir / "sessions" / "20250101-000000.jsonl").read_text() == HISTORY


def forget_tree(tmp_path: Path) -> Path:
    return make_tree(
        tmp_path / "memory" / "a@b.c",
        {
            "history.jsonl": HISTORY,
            "user.md": "profile",
            "memory.md": "notes",
            f"files/{UUID}_a.png": b"png",
            "identity.md": "Room identity",
        },
    )


def test_forget_user_records_names_sizes_and_hashes_before_erasing(tmp_path):
    jid_dir = forget_tree(tmp_path)
    seen = []

    def before_erasing(plan):
        seen.append((plan, sorted(p.name for p in jid_dir.iterdir())))

    forget_user(jid_dir, None, before_erasing)
    plan, present = seen[0]
    assert present == ["files", "history.jsonl", "identity.md", "memory.md", "user.md"]
    assert plan.names == ("history.jsonl", "user.md", "memory.md", "files/")
    assert ws.ErasedFile("memory.md", 5, sha(b"notes")) in plan.files
    assert ws.ErasedFile(f"files/{UUID}_a.png", 3, sha(b"png")) in plan.files


def test_forget_user_erases_nothing_when_the_record_fails(tmp_path):
    jid_dir = forget_tree(tmp_path)

    def before_erasing(plan):
        raise RuntimeError("database is locked")

    with pytest.raises(RuntimeError):
        forget_user(jid_dir, None, before_erasing)
    assert sorted(p.name for p in jid_dir.iterdir()) == [
        "files",
        "history.jsonl",
        "identity.md",
        "memory.md",
        "user.md",
    ]


def test_forget_user_refuses_a_plan_that_changed_since_it_was_confirmed(tmp_path):
    jid_dir = forget_tree(tmp_path)
    version = ws.forget_plan(jid_dir).version
    (jid_dir / "memory.md").write_text("notes the agent wrote since")
    with pytest.raises(Conflict):
        forget_user(jid_dir, version)
    assert (jid_dir / "memory.md").exists() and (jid_dir / "history.jsonl").exists()


def link_outside(jid_dir: Path, name: str) -> None:
    outside = jid_dir.parents[1] / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text("outside")
    (jid_dir / name).symlink_to(outside / "secret.md")


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda d: (d / "memory.md").unlink() or (d / "memory.md").mkdir(), "memory.md is a folder"),
        (lambda d: (d / "knowledge.jsonl").mkdir(), "knowledge.jsonl is a folder"),
        (lambda d: os.mkfifo(d / "context.md"), "context.md is not a regular file"),
        (lambda d: link_outside(d, "history.md"), "history.md is a link leading outside"),
        (lambda d: link_outside(d, f"files/{UUID}_b.txt"), f"files/{UUID}_b.txt is a link leading"),
        (lambda d: (d / "user.md").unlink() or (d / "user.md").symlink_to(d / "gone"), "user.md: cannot"),
    ],
)
def test_forget_user_checks_every_path_and_erases_nothing_when_one_is_wrong(tmp_path, spoil, reason):
    jid_dir = forget_tree(tmp_path)
    spoil(jid_dir)
    before = sorted(str(p.relative_to(jid_dir)) for p in jid_dir.rglob("*"))
    with pytest.raises(UnsafePath, match=reason):
        forget_user(jid_dir)
    assert sorted(str(p.relative_to(jid_dir)) for p in jid_dir.rglob("*")) == before


def test_forget_user_refuses_a_files_folder_linked_outside_the_root(tmp_path):
    jid_dir = forget_tree(tmp_path)
    shutil.rmtree(jid_dir / "files")
    outside = make_tree(tmp_path / "outside", {f"{UUID}_a.png": b"png"})
    (jid_dir / "files").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="files/ is a link leading outside"):
        forget_user(jid_dir)
    assert (jid_dir / "memory.md").exists() and (outside / f"{UUID}_a.png").exists()


def test_forget_user_keeps_an_empty_files_folder_like_the_agent(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"files/": "", "memory.md": "x"})
    assert forget_user(jid_dir) == ["memory.md"]
    assert (jid_dir / "files").is_dir()


def test_forget_user_with_nothing_to_erase_returns_an_empty_list(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"sessions/20250101-000000.md": "x"})
    assert forget_user(jid_dir) == []


def test_forget_user_on_the_sample_leaves_only_the_archive(sample):
    alice = sample / "alice@example.com"
    assert forget_user(alice) == ["history.jsonl", "user.md", "memory.md"]
    status = jid_status(sample, "alice@example.com")
    assert (status.messages, status.profile, status.memory, status.archived_sessions) == (0, False, False, 1)


# What the editor loads: the text, and the version a save from it must send


def test_load_file_gives_the_text_and_the_version_a_save_must_send(tmp_path):
    path = tmp_path / "memory.md"
    path.write_bytes(b"notes\n")
    assert ws.load_file(path) == ws.LoadedFile("notes\n", sha(b"notes\n"))


def test_load_file_of_a_missing_file_is_absent_and_writable(tmp_path):
    assert ws.load_file(tmp_path / "memory.md") == ws.LoadedFile(None, "absent")


def test_load_file_of_a_fifo_has_no_version_so_nothing_is_saved_from_it(tmp_path, fifo):
    fifo(tmp_path / "memory.md")
    loaded = ws.load_file(tmp_path / "memory.md")
    assert (loaded.text, loaded.version, loaded.readable) == (None, "", False)


def test_load_part_of_a_link_leaving_the_folder_is_that_parts_error(tmp_path):
    make_tree(tmp_path, {"outside.md": "secret", "a@example.com/": ""})
    (tmp_path / "a@example.com" / "memory.md").symlink_to(tmp_path / "outside.md")
    loaded = ws.load_part(tmp_path / "a@example.com", "memory.md")
    assert loaded.text is None and "leads outside" in loaded.error


def test_an_erased_file_gives_its_name_size_and_hash():
    erased = ws.ErasedFile("memory.md", 5, sha(b"notes"))
    assert erased.to_dict() == {"name": "memory.md", "size": 5, "sha256": sha(b"notes")}
