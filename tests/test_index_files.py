"""What the index reads of a root: regular files only, and links only while they resolve
inside the root. A FIFO, or a link out of the root, is a file that could not be indexed:
named by `manage.py index`, "not indexed" on the list, and it never stops the pass."""

from io import StringIO
from pathlib import Path

import pytest
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
