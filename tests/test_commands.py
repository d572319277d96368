"""The commands: `manage.py createuser NAME --role viewer|editor`, `ensureadmin` and `index`."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from contextlib import contextmanager
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.index.busy import BUSY_STATUS
from sessionviewer.models import Problem, Session

from .demo_index import DEMO
from .hostile import HOSTILE_KINDS, SAMPLES, claude_file, deep_tool_call, write_hostile_root

pytestmark = pytest.mark.django_db

ALICE = "alice@example.com"


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def printed_password(output: str) -> str:
    match = re.search(r"password: (\S+)", output)
    assert match, output
    return match.group(1)


def save_memory(client, memory: Path, text: str):
    path = memory / ALICE / "memory.md"
    url = reverse("workspace-save", args=[0, ALICE, "memory.md"])
    return client.post(url, {"text": text, "version": ws.file_version(path)})


# createuser


def test_createuser_viewer_can_read_but_not_write(client, memory):
    run("createuser", "vera", "--role", "viewer", "--password", "quiet orchard lantern")
    assert client.login(username="vera", password="quiet orchard lantern")
    assert client.get(reverse("workspace-jid", args=[0, ALICE])).status_code == 200
    assert client.get(reverse("session-list")).status_code == 200
    before = (memory / ALICE / "memory.md").read_bytes()
    assert save_memory(client, memory, "- changed\n").status_code == 403
    assert (memory / ALICE / "memory.md").read_bytes() == before


def test_createuser_editor_can_write(client, memory):
    run("createuser", "edith", "--role", "editor", "--password", "copper meadow violin")
    assert client.login(username="edith", password="copper meadow violin")
    assert save_memory(client, memory, "- changed\n").status_code == 302
    assert (memory / ALICE / "memory.md").read_text() == "- changed\n"


def test_createuser_prints_a_generated_password_that_logs_in(client):
    output = run("createuser", "gus", "--role", "viewer")
    assert "shown only this once" in output
    assert client.login(username="gus", password=printed_password(output))


def test_createuser_with_a_given_password_does_not_print_it():
    assert "silent harbor compass" not in run(
        "createuser", "hal", "--role", "editor", "--password", "silent harbor compass"
    )


@pytest.mark.parametrize(
    ("password", "reason"),
    [("pw", "too short"), ("password123", "too common"), ("veronica-smith", "too similar")],
)
def test_createuser_refuses_a_password_the_rules_refuse_and_creates_no_user(password, reason):
    with pytest.raises(CommandError, match=reason):
        run("createuser", "veronica-smith", "--role", "viewer", "--password", password)
    assert not User.objects.filter(username="veronica-smith").exists()


def test_createuser_makes_neither_staff_nor_superuser():
    run("createuser", "ivy", "--role", "editor", "--password", "amber tundra pilot")
    user = User.objects.get(username="ivy")
    assert not user.is_staff and not user.is_superuser
    assert [g.name for g in user.groups.all()] == ["editors"]


def test_createuser_refuses_an_existing_name():
    run("createuser", "vera", "--role", "viewer", "--password", "quiet orchard lantern")
    with pytest.raises(CommandError, match="exists already"):
        run("createuser", "vera", "--role", "editor", "--password", "quiet orchard lantern")
    assert [g.name for g in User.objects.get(username="vera").groups.all()] == ["viewers"]


def test_createuser_refuses_an_unknown_role():
    with pytest.raises(CommandError):
        run("createuser", "zed", "--role", "admin")
    assert not User.objects.filter(username="zed").exists()


# ensureadmin


def test_ensureadmin_creates_a_superuser_and_prints_its_password_once(client, memory):
    output = run("ensureadmin")
    admin = User.objects.get(username="admin")
    assert admin.is_superuser and admin.is_staff
    assert client.login(username="admin", password=printed_password(output))
    assert save_memory(client, memory, "- by the admin\n").status_code == 302

    again = run("ensureadmin")
    assert "exists already" in again and "password" not in again
    assert User.objects.filter(is_superuser=True).count() == 1


# index


def test_index_takes_the_hostile_corpus_whole_and_lists_every_bad_line(tmp_path, fixtures_dir):
    roots = []
    for folder, fmt in (("claude", "claude_code"), ("go", "go_agent"), ("fluux", "fluux_xmpp")):
        roots.append(f"{fmt}={fixtures_dir / 'hostile' / folder}")
    for fmt in SAMPLES:  # a file for every hostile value in every field of each format
        write_hostile_root(tmp_path / fmt, fmt, HOSTILE_KINDS)
        roots.append(f"{fmt}={tmp_path / fmt}")
    claude_file(tmp_path / "claude_code" / "-deep" / "s.jsonl", deep_tool_call(900))
    out, err = StringIO(), StringIO()
    call_command("index", *roots, stdout=out, stderr=err)  # returns: the command exits 0
    assert out.getvalue().startswith("Indexed ") and " error" not in out.getvalue()
    assert "not indexed" not in err.getvalue()
    assert not Session.objects.exclude(index_error="").exists()
    listed = err.getvalue().splitlines()
    problems = Problem.objects.select_related("session").order_by("session__path", "line")
    assert len(problems) > 100
    assert sorted(listed) == sorted(f"bad line {p.session.path}:{p.line}: {p.message}" for p in problems)


def test_index_lists_a_files_bad_lines_in_line_order(tmp_path):
    # The line cut for depth (2) is found after the reader's own bad line (3).
    path = claude_file(tmp_path / "-w" / "s.jsonl", deep_tool_call(900), b'{"not": json')
    err = StringIO()
    call_command("index", f"claude_code={tmp_path}", stdout=StringIO(), stderr=err)
    assert [re.sub(r": .*", "", line) for line in err.getvalue().splitlines()] == [
        f"bad line {path}:2",
        f"bad line {path}:3",
    ]


def test_index_names_a_file_it_could_not_index_and_goes_on(tmp_path, monkeypatch):
    from sessionviewer.index import worker

    for name in ("a", "b"):
        claude_file(tmp_path / "-w" / f"{name}.jsonl")
    real = worker.entry_rows

    def failing_on_a(entries, rules, for_sqlite, problems, path=""):
        if path.endswith("a.jsonl"):
            raise ValueError("a bug in the rows")
        return real(entries, rules, for_sqlite, problems, path)

    monkeypatch.setattr(worker, "entry_rows", failing_on_a)
    out, err = StringIO(), StringIO()
    call_command("index", f"claude_code={tmp_path}", stdout=out, stderr=err)
    assert err.getvalue() == f"not indexed: {tmp_path / '-w' / 'a.jsonl'}: ValueError: a bug in the rows\n"
    assert out.getvalue().startswith("Indexed 2 files (2 read), 2 sessions, 2 new entries, 0 bad lines")
    assert out.getvalue().rstrip().endswith("1 error")
    assert dict(Session.objects.values_list("key", "index_error")) == {
        "-w/a.jsonl": "ValueError: a bug in the rows",
        "-w/b.jsonl": "",
    }


# A locked database: the honest way is the command in a process of its own, on a database of
# its own, held by another connection past its busy timeout (1 s here, 30 s by default).

BASE_DIR = Path(__file__).resolve().parent.parent
HEADER = '{"type":"session","version":1,"created":"2025-02-08T19:00:00Z","jid":"alice@example.com"}\n'


def said(n: int) -> str:
    return (
        f'{{"type":"message","role":"user","content":"message number {n}","msg_id":"m{n}",'
        f'"sender":"alice@example.com","ts":"2025-02-08T19:00:0{n}Z"}}\n'
    )


def manage(db: Path, root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": "test-only-secret",
        "DATABASE_URL": f"sqlite:///{db}",
        "SQLITE_BUSY_TIMEOUT": "1",
        "SESSIONVIEWER_ROOTS": f"fluux_xmpp={root}",
    }
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(command, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120)


@contextmanager
def held(db: Path):
    """The database held EXCLUSIVE by another connection until the block ends."""
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def indexed(db: Path) -> list[str]:
    with sqlite3.connect(db) as reader:
        rows = reader.execute(
            "SELECT text FROM sessionviewer_entry WHERE text LIKE 'message number %' ORDER BY 1"
        )
        return [text for (text,) in rows]


def test_index_on_a_locked_database_says_so_in_a_line_and_the_next_pass_loses_nothing(tmp_path):
    db, root = tmp_path / "index.sqlite3", tmp_path / "memory"
    history = root / ALICE / "history.jsonl"
    history.parent.mkdir(parents=True)
    history.write_text(HEADER + said(1))
    assert manage(db, root, "migrate", "--noinput").returncode == 0

    def refused() -> None:
        with held(db):
            busy = manage(db, root, "index")
        assert busy.returncode == BUSY_STATUS, busy.stderr
        assert busy.stderr == (
            "CommandError: the database is busy (database is locked): nothing is lost, "
            "the next pass indexes the rest\n"
        )

    refused()  # a new root: its source is created
    assert manage(db, root, "index").returncode == 0
    refused()  # nothing changed: the pass's last save
    history.write_text(HEADER + said(1) + said(2))
    refused()  # a grown file: its group's transaction
    done = manage(db, root, "index")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert done.stdout.startswith("Indexed 1 files (1 read), 1 sessions, 1 new entries")
    assert indexed(db) == ["message number 1", "message number 2"]


def test_index_at_verbosity_2_prints_each_phase_of_the_pass_in_one_line(tmp_path):
    claude_file(tmp_path / "-w" / "a.jsonl")
    out = StringIO()
    call_command("index", f"claude_code={tmp_path}", verbosity=2, stdout=out, stderr=StringIO())
    line = out.getvalue().splitlines()[-1]
    phases = dict(re.findall(r"(\w+) (\d+\.\d{3}) s", line))
    assert line.startswith("Phases: ")
    assert {"scan", "read", "write", "prices", "links", "copies", "memory", "snapshots", "command"} <= set(
        phases
    )


def test_index_prints_no_phases_at_the_default_verbosity(tmp_path):
    claude_file(tmp_path / "-w" / "a.jsonl")
    out = StringIO()
    call_command("index", f"claude_code={tmp_path}", stdout=out, stderr=StringIO())
    assert "Phases" not in out.getvalue()


# manage.py demo


@pytest.fixture
def demo_copy(tmp_path, settings, django_user_model, client):
    settings.DEMO_DIR = tmp_path / "data" / "demo"
    memory = settings.DEMO_DIR / "fluux" / "memory"
    settings.SESSIONVIEWER_MEMORY_ROOTS = [str(memory)]
    client.force_login(django_user_model.objects.create_superuser("admin", password="pw"))
    call_command("demo", stdout=StringIO())
    return memory


def test_demo_copies_the_demo_data_once(demo_copy):
    memory_md = demo_copy / "alice@example.com" / "memory.md"
    assert memory_md.read_bytes() == (DEMO / "fluux/memory/alice@example.com/memory.md").read_bytes()
    memory_md.write_text("- changed in the editor\n")
    call_command("demo", stdout=StringIO())
    assert memory_md.read_text() == "- changed in the editor\n"


def test_the_demo_memory_has_a_diff_a_linked_turn_and_a_finding_on_its_timeline(demo_copy, client):
    timeline = client.get(reverse("api-workspace-memory-timeline", args=[0, "alice@example.com"])).json()
    changed = [c for c in timeline["changes"] if c["who"] == "outside"]
    assert {c["file"] for c in changed} == {"memory.md", "knowledge.jsonl"}
    assert all(c.get("diff") or c.get("added") for c in changed)
    turns = [c["link"]["turn"]["user_text"] for c in changed if c["link"]["turn"]]
    assert any(text.startswith("Here are my notes from the call with the printer") for text in turns)
    [flagged] = [c for c in changed if c["new_findings"]]
    assert flagged["new_findings"][0]["kind"] == "phone"
    page = client.get(reverse("workspace-memory-timeline", args=[0, "alice@example.com"])).content.decode()
    assert 'class="diff' in page and "Open this turn in the transcript" in page and "1 new finding" in page
    # As a watcher running then would have recorded it: the memory just after it can be rebuilt.
    after = client.get(flagged["as_of_url"]).content.decode()
    assert 'id="before-snapshots"' not in after and "cannot be rebuilt" not in after
    assert "their contact: Jan, +31 6 12345678" in after
