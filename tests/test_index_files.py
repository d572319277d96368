"""What the index reads of a root: regular files only, and links only while they resolve
inside the root. A FIFO, or a link out of the root, is a file that could not be indexed:
named by `manage.py index`, "not indexed" on the list, and it never stops the pass."""

import os
import resource
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from sessionviewer.index import index_roots, worker
from sessionviewer.index.fold import SessionState
from sessionviewer.models import Entry, Problem, Session
from sessionviewer.readers import claude_code
from sessionviewer.readers.files import NotRegularFile
from sessionviewer.readers.openclaw_store import DATABASE_NAME
from sessionviewer.roots import RootSpec
from tests.claude_files import write_tool_turn
from tests.openclaw_store_files import one_session_store

from .conftest import within_seconds

pytestmark = pytest.mark.django_db

OUTSIDE = "a link that leads outside its root: not read"
FIFO = "not a regular file (a FIFO)"
SECRET = "kept outside the root"
FLUUX_LINE = (
    f'{{"type":"message","role":"user","content":"{SECRET}","msg_id":"m1","ts":"2025-02-08T19:00:00Z"}}\n'
)


def claude_session(path: Path, prompt: str = "Fix the upload test") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_tool_turn(path, prompt, [{"type": "text", "text": "Done."}])


def index(root: Path, fmt: str = "claude_code") -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("index", f"{fmt}={root}", stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_a_fifo_in_a_project_folder_is_named_and_the_pass_goes_on(tmp_path, fifo):
    root = tmp_path / "projects"
    claude_session(root / "p" / "a.jsonl")
    path = fifo(root / "p" / "x.jsonl")
    out, err = index(root)
    assert fifo.opened == []
    assert err == f"not indexed: {path}: {FIFO}\n"
    assert "1 error" in out
    assert dict(Session.objects.values_list("key", "index_error")) == {"p/a.jsonl": "", "p/x.jsonl": FIFO}
    assert Session.objects.get(key="p/a.jsonl").first_prompt == "Fix the upload test"


def test_discovery_opens_no_fifo_it_reads_for_a_sessions_facts(tmp_path, fifo):
    project = tmp_path / "projects" / "p"
    claude_session(project / "s" / "subagents" / "agent-y.jsonl")
    paths = [
        fifo(project / "agent-x.jsonl"),  # an old subagent: its first lines name its session
        fifo(project / "sessions-index.json"),
        fifo(project / "s" / "subagents" / "agent-y.meta.json"),
    ]
    found = within_seconds(lambda: list(claude_code.discover(tmp_path / "projects")))
    assert fifo.opened == []
    assert [f.key for f in found] == ["p/agent-x.jsonl", "p/s/subagents/agent-y.jsonl"]
    assert paths[0] == found[0].path


def test_an_openclaw_database_that_is_a_fifo_is_named_without_waiting(tmp_path, fifo):
    database = tmp_path / "openclaw" / "agents" / "main" / "agent" / DATABASE_NAME
    database.parent.mkdir(parents=True)
    fifo(database)
    summary = index_roots([RootSpec(tmp_path / "openclaw", "openclaw")])
    assert fifo.opened == []
    assert Session.objects.get().index_error == FIFO
    assert summary.errors == [f"{database}: {FIFO}"]


def test_an_indexed_file_swapped_for_a_fifo_keeps_what_was_indexed_and_says_why(tmp_path, fifo):
    root = tmp_path / "projects"
    path = claude_session(root / "p" / "x.jsonl")
    index(root)
    fifo(path)
    _out, err = index(root)
    assert fifo.opened == []
    assert err == f"not indexed: {path}: {FIFO}\n"
    session = Session.objects.get()
    assert (session.index_error, session.first_prompt) == (FIFO, "Fix the upload test")


def test_reading_a_job_on_a_fifo_refuses_it_without_waiting(tmp_path, fifo):
    path = fifo(tmp_path / "x.jsonl")
    job = worker.Job(path, "claude_code", 0, 0, SessionState("claude_code"))
    with pytest.raises(NotRegularFile):
        list(worker.read_job(job))
    with pytest.raises(NotRegularFile):
        worker.head_hash(path, 10)
    assert fifo.opened == []


def test_a_jsonl_linked_out_of_the_root_is_not_read(tmp_path):
    outside = tmp_path / "elsewhere" / "secret.jsonl"
    outside.parent.mkdir()
    outside.write_text(f'{{"note": "{SECRET}"}}\nnot json: {SECRET}\n')
    root = tmp_path / "projects"
    claude_session(root / "p" / "a.jsonl")
    (root / "p" / "x.jsonl").symlink_to(outside)
    _out, err = index(root)
    assert err == f"not indexed: {root / 'p' / 'x.jsonl'}: {OUTSIDE}\n"
    assert Session.objects.get(key="p/x.jsonl").index_error == OUTSIDE
    assert not Problem.objects.exists()
    assert not Entry.objects.filter(text__contains=SECRET).exists()
    assert not Entry.objects.filter(session__key="p/x.jsonl").exists()


def test_a_folder_linked_out_of_the_root_is_not_read(tmp_path):
    outside = tmp_path / "elsewhere" / "bob@example.com"
    outside.mkdir(parents=True)
    (outside / "history.jsonl").write_text(FLUUX_LINE)
    root = tmp_path / "memory"
    root.mkdir()
    (root / "bob@example.com").symlink_to(outside)
    summary = index_roots([RootSpec(root, "fluux_xmpp")])
    assert summary.errors == [f"{root / 'bob@example.com' / 'history.jsonl'}: {OUTSIDE}"]
    assert not Entry.objects.filter(text__contains=SECRET).exists()


def test_a_link_inside_the_root_is_followed(tmp_path):
    root = tmp_path / "projects"
    claude_session(root / "kept" / "real.jsonl", "Read through a link")
    (root / "p").mkdir()
    (root / "p" / "x.jsonl").symlink_to(root / "kept" / "real.jsonl")
    _out, err = index(root)
    assert err == ""
    assert Session.objects.get(key="p/x.jsonl").first_prompt == "Read through a link"


def test_an_openclaw_database_linked_out_of_the_root_is_not_read(tmp_path):
    outside = one_session_store(tmp_path / "elsewhere")
    root = tmp_path / "openclaw"
    database = root / "agents" / "main" / "agent" / outside.path.name
    database.parent.mkdir(parents=True)
    database.symlink_to(outside.path)
    summary = index_roots([RootSpec(root, "openclaw")])
    assert not Entry.objects.exists()
    session = Session.objects.get()
    assert session.key == "agents/main/agent/openclaw-agent.sqlite"
    assert OUTSIDE in session.index_error
    assert any(error.startswith(f"{database}: ") and OUTSIDE in error for error in summary.errors)


def test_an_openclaw_database_linked_inside_the_root_is_read(tmp_path):
    root = tmp_path / "openclaw"
    kept = one_session_store(root / "kept")
    database = root / "agents" / "main" / "agent" / kept.path.name
    database.parent.mkdir(parents=True)
    database.symlink_to(kept.path)
    summary = index_roots([RootSpec(root, "openclaw")])
    assert summary.errors == []
    assert Session.objects.get(key="agents/main/agent/openclaw-agent.sqlite#s1").first_prompt == (
        "Fix the upload test"
    )


def test_a_fluux_history_linked_out_of_the_root_is_not_read(tmp_path):
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text(FLUUX_LINE)
    folder = tmp_path / "memory" / "alice@example.com"
    folder.mkdir(parents=True)
    (folder / "history.jsonl").symlink_to(outside)
    summary = index_roots([RootSpec(tmp_path / "memory", "fluux_xmpp")])
    assert summary.errors == [f"{folder / 'history.jsonl'}: {OUTSIDE}"]
    assert not Entry.objects.filter(text__contains=SECRET).exists()


# `manage.py index` in a process of its own, as an operator runs it, under an address-space
# limit and a timeout: a FIFO among the files must neither block it nor stop the other root.

ADDRESS_SPACE = 3 * 1024**3
TIMEOUT = 120


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


@pytest.fixture
def command_env(tmp_path: Path) -> dict:
    """The environment of a `manage.py` of its own, on a migrated SQLite database in tmp_path."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": "test-only-secret",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'index.sqlite3'}",
        "SESSIONVIEWER_ROOTS": "",
        "SESSIONVIEWER_MEMORY_ROOTS": "",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=settings.BASE_DIR,
        env=env,
        check=True,
        capture_output=True,
        timeout=TIMEOUT,
    )
    return env


@pytest.fixture
def two_roots(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A Claude Code root whose project holds a FIFO, and an ordinary root beside it."""
    hostile = tmp_path / "hostile" / "projects"
    claude_session(hostile / "p" / "a.jsonl")
    path = hostile / "p" / "x.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)  # no writer ever comes: a reader that opens it waits for good
    ordinary = tmp_path / "ordinary" / "projects"
    claude_session(ordinary / "q" / "b.jsonl", "The other root")
    return hostile, ordinary, path


def test_manage_py_index_under_a_memory_limit_names_the_fifo_and_indexes_the_other_root(
    command_env, two_roots
):
    hostile, ordinary, path = two_roots
    done = subprocess.run(
        [sys.executable, "manage.py", "index", f"claude_code={hostile}", f"claude_code={ordinary}"],
        cwd=settings.BASE_DIR,
        env=command_env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        preexec_fn=_limited,  # setrlimit only: safe between fork and exec
    )
    assert done.returncode == 0, done.stderr
    assert f"not indexed: {path}: {FIFO}" in done.stderr
    assert done.stdout.startswith("Indexed 3 files (3 read), 3 sessions")


def test_manage_py_index_watch_under_a_memory_limit_goes_on_indexing_past_a_fifo(command_env, two_roots):
    hostile, ordinary, path = two_roots
    watcher = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "index",
            "--watch",
            f"claude_code={hostile}",
            f"claude_code={ordinary}",
        ],
        cwd=settings.BASE_DIR,
        env={**command_env, "PYTHONUNBUFFERED": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=_limited,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(watcher.stdout), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not any(line.startswith("Watching") for line in lines):
            assert watcher.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
        # A new session in the ordinary root: the watcher's next pass must index it.
        claude_session(ordinary / "q" / "c.jsonl", "Written while watched")
        while sum(line.startswith("Indexed") for line in lines) < 2:
            assert watcher.poll() is None and time.monotonic() < deadline, "".join(lines)
            time.sleep(0.1)
            os.utime(ordinary / "q" / "c.jsonl")  # the watcher may have started after the write
    finally:
        watcher.kill()
        watcher.wait(TIMEOUT)
        reader.join(TIMEOUT)
    second = [line for line in lines if line.startswith("Indexed")][1]
    assert second.startswith("Indexed 4 files (2 read), 4 sessions, 2 new entries"), "".join(lines)
    assert f"not indexed: {path}: {FIFO}\n" in lines
