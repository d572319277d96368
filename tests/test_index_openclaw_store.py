"""OpenClaw's agent database in the index: read without disturbing the agent, read on from
the last seq, kept as it was while locked, read again after a rewrite, windows linked."""

import os
import resource
import shutil
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import orjson
import pytest
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import Entry, Session
from sessionviewer.readers import agent_database, openclaw_store
from sessionviewer.roots import RootSpec
from tests.openclaw_store_files import AgentStore, frame, header, one_session_store, said, zeros_frame

pytestmark = pytest.mark.django_db


@pytest.fixture
def store(tmp_path: Path) -> AgentStore:
    return one_session_store(tmp_path)


@pytest.fixture
def reads(monkeypatch) -> list[tuple[str, int, int]]:
    """Each read of a database session: (session id, the seq it read from, events it read)."""
    seen = []
    read = openclaw_store.read

    def noting(path, start_offset, *args):
        items = read(path, start_offset, *args)
        count = 0
        while True:
            try:
                item = next(items)
            except StopIteration as end:
                seen.append((str(path).rsplit("#", 1)[1], start_offset, count))
                return end.value  # where the read ended
            count += 1
            yield item

    monkeypatch.setattr(openclaw_store, "read", noting)
    return seen


def run(root: Path):
    return index_roots([RootSpec(root / "agents", "openclaw")])


def texts(session_key_end: str) -> list[str]:
    session = Session.objects.get(key__endswith=session_key_end)
    return list(session.entries.order_by("line").values_list("text", flat=True))


def test_a_database_session_is_indexed_with_its_entries(store, tmp_path):
    summary = run(tmp_path)
    assert summary.errors == []
    session = Session.objects.get()
    assert (session.key, session.path) == ("main/agent/openclaw-agent.sqlite#s1", f"{store.path}#s1")
    assert (session.first_prompt, session.message_count, session.project) == (
        "Fix the upload test",
        2,
        "~/project",  # /home/alice/project, the home folded
    )
    assert (session.read_offset, session.read_line) == (3, 3)


def test_a_pass_leaves_the_database_bytes_and_mtime_as_they_were(store, tmp_path):
    before = (store.path.read_bytes(), os.stat(store.path).st_mtime_ns, sorted(os.listdir(store.path.parent)))
    run(tmp_path)
    after = (store.path.read_bytes(), os.stat(store.path).st_mtime_ns, sorted(os.listdir(store.path.parent)))
    assert after == before


def test_a_wal_database_no_one_has_open_gets_no_wal_file_from_a_pass(tmp_path):
    store = AgentStore(tmp_path, wal=True)
    store.window("s1")
    store.events("s1", header("s1"))
    assert os.listdir(store.path.parent) == ["openclaw-agent.sqlite"]
    run(tmp_path)
    assert os.listdir(store.path.parent) == ["openclaw-agent.sqlite"]
    assert Session.objects.get().entry_count == 1


def test_the_next_pass_reads_only_the_new_events(store, tmp_path, reads):
    run(tmp_path)
    store.events("s1", said("m3", "user", "and the docs", "m2"))
    summary = run(tmp_path)
    assert reads == [("s1", 0, 3), ("s1", 3, 1)]
    assert summary.entries == 1
    assert texts("#s1")[-1] == "and the docs"


def test_a_session_numbered_from_0_is_indexed_from_its_first_event(store, tmp_path, reads):
    run(tmp_path)
    session = Session.objects.get()
    assert list(session.entries.order_by("line").values_list("line", "kind"))[0] == (1, "session")
    assert session.project == "~/project"  # the header, seq 0, says so (the home folded)
    assert (session.read_offset, session.read_line) == (3, 3)
    store.events("s1", said("m3", "user", "and the docs", "m2"))
    run(tmp_path)
    assert reads == [("s1", 0, 3), ("s1", 3, 1)]
    assert texts("#s1") == ["", "Fix the upload test", "Done.", "and the docs"]


def test_migration_0019_has_the_next_pass_read_database_sessions_again_whole(store, tmp_path, reads):
    import importlib

    from django.apps import apps

    migration = importlib.import_module("sessionviewer.migrations.0019_read_database_sessions_from_seq_0")
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir()
    (sessions / "legacy.jsonl").write_text('{"type":"session","version":3,"id":"legacy"}\n')
    run(tmp_path)
    ids = list(Session.objects.order_by("id").values_list("id", flat=True))
    # What an earlier pass left: event 0 never read, offsets one short.
    Session.objects.filter(key__endswith="#s1").update(read_offset=2, read_line=2, file_size=2)
    Entry.objects.filter(session__key__endswith="#s1", line=1).delete()
    migration.read_database_sessions_again(apps, None)
    run(tmp_path)
    assert reads[-1] == ("s1", 0, 3)  # read again from its start; the JSONL file is not
    assert texts("#s1") == ["", "Fix the upload test", "Done."]
    assert list(Session.objects.order_by("id").values_list("id", flat=True)) == ids


def test_the_index_inflates_events_up_to_the_setting(store, tmp_path, settings):
    settings.SESSIONVIEWER_MAX_EVENT_BYTES = 1024
    store.events("s1", said("m3", "user", "x" * 2000, "m2"), compress=True)
    store.events("s1", said("m4", "user", "after it", "m3"), compress=True)
    summary = run(tmp_path)
    assert summary.bad_lines == [f"{store.path}#s1:4: event 3 inflates past 1,024 bytes"]
    assert texts("#s1")[-1] == "after it"


def test_a_pass_over_an_unchanged_database_opens_nothing(store, tmp_path, reads, monkeypatch):
    run(tmp_path)
    opened = []
    connect = openclaw_store.connect
    monkeypatch.setattr(openclaw_store, "connect", lambda path: opened.append(path) or connect(path))
    summary = run(tmp_path)
    assert (summary.opened, opened, reads[1:]) == (0, [], [])


def test_a_locked_database_is_left_for_the_next_pass_and_reported_nowhere(store, tmp_path, monkeypatch):
    monkeypatch.setattr(agent_database, "BUSY_TIMEOUT", 0.05)
    run(tmp_path)
    store.events("s1", said("m3", "user", "while locked", "m2"))
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        summary = run(tmp_path)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (summary.errors, summary.removed, len(summary.busy)) == ([], 0, 1)
    session = Session.objects.get()
    assert (session.index_error, session.problem_count, session.entry_count) == ("", 0, 3)
    run(tmp_path)
    assert texts("#s1")[-1] == "while locked"


def test_a_rewritten_session_is_read_again_from_its_start(store, tmp_path, reads):
    run(tmp_path)
    store.rewrite("s1", "2", header("s1"), said("r1", "user", "rewritten"))
    run(tmp_path)
    assert reads[-1] == ("s1", 0, 2)
    assert texts("#s1") == ["", "rewritten"]


def test_a_window_links_to_the_window_before_it(store, tmp_path):
    store.window("s2", previous="s1", reason="reset")
    store.events("s2", header("s2"), said("n1", "user", "new start"))
    run(tmp_path)
    first, second = Session.objects.get(key__endswith="#s1"), Session.objects.get(key__endswith="#s2")
    assert (second.parent_id, second.kind, second.extra["window_reason"]) == (
        first.id,
        "continuation",
        "reset",
    )


def test_a_session_in_both_jsonl_and_the_database_is_indexed_once_from_the_database(store, tmp_path):
    sessions = tmp_path / "agents" / "main" / "sessions"
    sessions.mkdir()
    (sessions / "s1.jsonl").write_text('{"type":"session","version":3,"id":"s1"}\n')
    run(tmp_path)
    assert list(Session.objects.values_list("key", flat=True)) == ["main/agent/openclaw-agent.sqlite#s1"]


def test_a_database_lacking_transcript_events_shows_its_error_on_the_list(tmp_path, client, viewer):
    path = tmp_path / "agents" / "main" / "agent" / openclaw_store.DATABASE_NAME
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE session_windows (session_id TEXT)")
    summary = run(tmp_path)
    session = Session.objects.get()
    assert "no transcript_events table" in session.index_error
    assert summary.errors and "no transcript_events table" in summary.errors[0]
    assert "no transcript_events table" in client.get(reverse("session-list")).content.decode()


def test_a_database_session_page_opens_without_a_raw_file_link(store, tmp_path, client, viewer):
    run(tmp_path)
    session = Session.objects.get()
    page = client.get(session.get_absolute_url()).content.decode()
    assert "Fix the upload test" in page
    assert reverse("api-session-raw", args=[session.id]) not in page
    assert Entry.objects.filter(session=session, entry_id="m2").exists()


def test_a_root_may_be_the_database_file_itself(store):
    summary = index_roots([RootSpec(store.path, "openclaw")])
    assert summary.errors == []
    assert list(Session.objects.values_list("key", "entry_count")) == [("openclaw-agent.sqlite#s1", 3)]


def test_a_database_session_without_a_label_is_titled_by_its_first_prompt(tmp_path):
    store = AgentStore(tmp_path / "openclaw")
    store.window("w9")
    store.events("w9", header("w9"), said("p9", "user", "Any orders overnight?"))
    index_roots([RootSpec(tmp_path / "openclaw" / "agents", "openclaw")])
    assert Session.objects.get().display_title == "Any orders overnight?"


# zstd bombs (issue 26): `manage.py index` in a process of its own, under an address-space
# limit and a timeout, over the bomb's database and an ordinary Claude Code root. Before,
# a 64 KB frame that declares 2 GiB killed the pass (SIGSEGV under a 3 GB limit).

PROJECT = Path(__file__).resolve().parents[1]
ADDRESS_SPACE = 3 * 1024**3
GIB = 1024**3


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """An empty, migrated app database, copied by each test."""
    database = tmp_path_factory.mktemp("indexed") / "template.sqlite3"
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "-v0"],
        cwd=PROJECT,
        env=app_env(database),
        check=True,
        timeout=120,
    )
    return database


@pytest.fixture(scope="module")
def bombs() -> dict[str, bytes]:
    """64 KB that inflate to 2 GiB with the size in the frame's header; 16 KB to 512 MiB without
    (twice the limit: an archive's lines are all hashed, and that takes the test's time)."""
    return {"declared": zeros_frame(2 * GIB), "undeclared": zeros_frame(GIB // 2, declared=False)}


def app_env(database: Path, roots: str = "") -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "DATABASE_URL": f"sqlite:///{database}",
        "SECRET_KEY": "test-only",
        "SESSIONVIEWER_ROOTS": roots,
        "SESSIONVIEWER_DEMO": "0",
    }


def limit_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


def index_limited(database: Path, *roots: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", "index", *roots],
        cwd=PROJECT,
        env=app_env(database, ",".join(roots)),
        preexec_fn=limit_address_space,  # noqa: PLW1509 - only setrlimit, before exec
        capture_output=True,
        text=True,
        timeout=60,
    )


def claude_root(tmp_path: Path, fixtures_dir: Path) -> str:
    project = tmp_path / "claude" / "projects" / "-home-alice-project"
    project.mkdir(parents=True)
    shutil.copy(fixtures_dir / "claude_code" / "summary_line.jsonl", project / "one.jsonl")
    return f"claude_code={tmp_path / 'claude' / 'projects'}"


def rows(database: Path, sql: str, *params) -> list:
    with closing(sqlite3.connect(database)) as connection:
        return connection.execute(sql, params).fetchall()


def test_a_plain_index_fits_under_the_address_space_limit(migrated, tmp_path, fixtures_dir):
    database = Path(shutil.copy(migrated, tmp_path / "app.sqlite3"))
    one_session_store(tmp_path / "openclaw")
    done = index_limited(
        database, f"openclaw={tmp_path / 'openclaw' / 'agents'}", claude_root(tmp_path, fixtures_dir)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert rows(database, "SELECT format, count(*) FROM sessionviewer_session GROUP BY format") == [
        ("claude_code", 1),
        ("openclaw", 1),
    ]


@pytest.mark.parametrize(
    ("shape", "claim"),
    [("declared", 2 * GIB), ("declared", 1000), ("undeclared", None), ("archive", None)],
    ids=["size-in-header", "size-in-header-small-claim", "no-size-no-claim", "archive-blob"],
)
def test_a_zstd_bomb_is_a_problem_on_its_session_and_the_pass_goes_on(
    shape, claim, bombs, migrated, tmp_path, fixtures_dir
):
    database = Path(shutil.copy(migrated, tmp_path / "app.sqlite3"))
    store = one_session_store(tmp_path / "openclaw")
    if shape == "archive":  # a transcript whose second line is 512 MiB of zeros
        before = orjson.dumps(header("old")) + b"\n"
        after = b"\n" + orjson.dumps(said("a2", "user", "after the bomb")) + b"\n"
        store.archive("old", "g1", "reset", blob=frame(before) + bombs["undeclared"] + frame(after))
        bombed, message = "#old#g1", "line 2 inflates past 256 MB"
    else:
        store.packed("s1", bombs[shape], claim)
        store.events("s1", said("m4", "user", "after the bomb", "m2"))
        bombed, message = "#s1", "event 3 inflates past 256 MB"
    done = index_limited(
        database, f"openclaw={tmp_path / 'openclaw' / 'agents'}", claude_root(tmp_path, fixtures_dir)
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert rows(database, "SELECT count(*) FROM sessionviewer_session WHERE format = 'claude_code'") == [(1,)]
    assert (
        rows(
            database,
            "SELECT count(*) FROM sessionviewer_entry e JOIN sessionviewer_session s "
            "ON s.id = e.session_id WHERE s.format = 'claude_code'",
        )[0][0]
        > 0
    )
    ((session, error),) = rows(
        database, "SELECT id, index_error FROM sessionviewer_session WHERE key LIKE ?", f"%{bombed}"
    )
    texts = rows(database, "SELECT text FROM sessionviewer_entry WHERE session_id = ? ORDER BY line", session)
    assert (error, texts[-1]) == ("", ("after the bomb",))
    assert (message,) in rows(
        database, "SELECT message FROM sessionviewer_problem WHERE session_id = ?", session
    )
