import contextlib
import os
import shutil
import threading
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# The shared sample files sit beside the repository (../shared/samples) on our machines and in CI.
SAMPLES = Path(
    os.environ.get("SESSIONVIEWER_SAMPLES", Path(__file__).resolve().parents[2] / "shared" / "samples")
)


@pytest.fixture(autouse=True)
def _no_findings_from_another_test():
    """The secrets report's per-file cache lives as long as the process: each test starts
    without it, as a server does, so that no test sees findings another one left."""
    from sessionviewer.workspaces import secrets

    secrets.FINDINGS.clear()


@pytest.fixture(autouse=True)
def _no_tally_counts_from_another_test():
    """A web process keeps the tally's session counts while its version stays (tallies.py):
    a version is never seen twice in one database's life, but each test's database is emptied
    under the process, so each test starts without them."""
    from sessionviewer import tallies

    tallies.forget_kept_counts()


@pytest.fixture
def sample(tmp_path):
    """A writable copy of the shared sample memory tree (workspace_files.SAMPLES)."""
    from .workspace_files import SAMPLES as FLUUX_SAMPLES

    if not FLUUX_SAMPLES.is_dir():
        pytest.skip("sample memory tree not available")
    root = tmp_path / "memory"
    shutil.copytree(FLUUX_SAMPLES, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


# The demo memory tree the persona editor and the commands work on, copied for each test.
DEMO_MEMORY = Path(__file__).resolve().parents[1] / "demo" / "fluux" / "memory"


def copy_tree(source: Path, target: Path) -> Path:
    # The shared samples are read-only: the copy must be writable.
    shutil.copytree(source, target)
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


@pytest.fixture
def memory(tmp_path: Path, settings) -> Path:
    """A writable copy of the demo memory tree, configured as the only memory root
    (the live server of the browser tests runs in this process: it sees it too)."""
    root = copy_tree(DEMO_MEMORY, tmp_path / "memory")
    settings.SESSIONVIEWER_MEMORY_ROOTS = [str(root)]
    return root


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def samples_dir() -> Path:
    if not SAMPLES.is_dir():
        pytest.skip("../shared/samples is not present")
    return SAMPLES


# Browser tests: Playwright driving Debian's chromium (installed by .ci/run), never a
# browser Playwright downloads itself.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parent.parent / "test-output" / "screenshots"


@pytest.fixture(scope="session")
def chromium():
    # Playwright's sync API runs an event loop in this thread; Django's ORM calls made
    # by the test itself (not the live server's threads) are still synchronous.
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from django.db import connections
    from playwright.sync_api import sync_playwright

    # While that loop runs, Django keeps this thread's connections apart from the ones it had
    # before (asgiref's Local holds them per context once a loop runs): each side's are closed
    # before the other takes over, or the first side's stays open to the end of the run and
    # PostgreSQL refuses to drop the test database.
    connections.close_all()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        connections.close_all()
        browser.close()


# The people of tests/users.py, logged in on the test client (imported late: Django is set up
# after this module loads).


@pytest.fixture
def viewer(client, db):
    """vera, in the viewers group: may read sessions and workspaces, not edit."""
    from .users import VIEWER, make_user

    user = make_user(VIEWER, "viewers")
    client.force_login(user)
    return user


@pytest.fixture
def editor(client, db):
    """edith, in the editors group: may read everything and edit the workspaces."""
    from .users import EDITOR, make_user

    user = make_user(EDITOR, "editors")
    client.force_login(user)
    return user


@pytest.fixture
def tree(tmp_path, settings, db) -> Path:
    """A Fluux memory root, indexed once (tests/memory_turns.py): alice's memory.md and
    history, and a room's. test_index_memory and test_workspace_permissions make their own."""
    from .memory_turns import memory_tree

    return memory_tree(tmp_path, settings)


@pytest.fixture
def admin_user(db):
    from .users import make_admin

    return make_admin()


@pytest.fixture
def browser_page(chromium, live_server, admin_user, request):
    """A logged-in page on the live server; a screenshot is saved when the test ends."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("input[name=username]", "admin")
    page.fill("input[name=password]", "admin-password")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    page.live_server_url = live_server.url
    yield page
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True, timeout=60_000)
    context.close()


# --- Indexed sessions the page and browser tests share ---------------------------------------------
# (imported late too: the helper modules need Django's settings.)


@pytest.fixture
def fresh_cache():
    """No transcript cached from another test, before the test or after it. A module that
    wants it for every test names it in its pytestmark (usefixtures)."""
    from sessionviewer import transcripts

    transcripts.clear_cache()
    yield
    transcripts.clear_cache()


@pytest.fixture
def demo(settings):
    """The demo's sessions (tests/demo_index.py) indexed and configured as the roots, with no
    transcript cached from before (ids come back after a rollback or a flush)."""
    from sessionviewer import transcripts
    from sessionviewer.index import index_roots

    from .demo_index import DEMO_SPECS

    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in DEMO_SPECS]
    transcripts.clear_cache()
    index_roots(DEMO_SPECS)


@pytest.fixture
def site(settings, memory, admin_user):
    """For the browser tests: the demo index and memory tree, a revision of alice's memory.md
    saved by admin, so that every page type has something to show. The ids of the biggest
    session and of the revision. (test_headers has a site of its own, on the test client.)"""
    from django.test import Client
    from django.urls import reverse

    from sessionviewer import transcripts
    from sessionviewer import workspaces as ws
    from sessionviewer.index import index_roots
    from sessionviewer.models import Revision, Session

    from .browser import ALICE
    from .demo_index import DEMO_SPECS

    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in DEMO_SPECS]
    transcripts.clear_cache()
    index_roots(DEMO_SPECS)
    client = Client()
    client.force_login(admin_user)
    path = memory / ALICE / "memory.md"
    saved = client.post(
        reverse("workspace-save", args=[0, ALICE, "memory.md"]),
        {"text": "Alice likes tea.", "version": ws.file_version(path)},
    )
    assert saved.status_code == 302
    return {
        "revision": Revision.objects.get().id,
        "session": Session.objects.order_by("-entry_count").first().id,
    }


@pytest.fixture
def unknown(tmp_path):
    """A Claude Code session with a line of a type no reader knows between a prompt and its reply."""
    from .fixture_files import CLAUDE_PROJECT, index_fixture

    return index_fixture(tmp_path, "claude_code", "unknown_entry_in_conversation.jsonl", CLAUDE_PROJECT, "s1")


@pytest.fixture
def fork(tmp_path):
    """A Go agent session and its fork, which copies its last three messages."""
    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec

    from .fixture_files import FORK_FAMILY, FORK_FILE

    shutil.copytree(FORK_FAMILY, tmp_path / "sessions")
    index_roots([RootSpec(tmp_path / "sessions", "go_agent")])
    return Session.objects.get(path__endswith=FORK_FILE)


@pytest.fixture
def family(tmp_path, settings):
    """The demo's Claude Code session with a subagent (started by a Task call), each file ending
    in a line that cannot be read, under a home directory: the subagent, indexed."""
    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec

    name = "dac5371b-4027-41bb-ae97-46bef1dafaf2"
    demo = Path(settings.BASE_DIR) / "demo" / "claude" / "projects" / "-home-demo-projects-webshop"
    root = tmp_path / "home" / "alice" / ".claude" / "projects"
    project = root / "-home-demo-projects-webshop"
    project.mkdir(parents=True)
    shutil.copy(demo / f"{name}.jsonl", project)
    shutil.copytree(demo / name, project / name)
    for path in project.rglob("*.jsonl"):
        with path.open("a", encoding="utf-8") as file:
            file.write('{"type": "user", "truncated\n')
    index_roots([RootSpec(root, "claude_code")])
    return Session.objects.get(kind="subagent")


@pytest.fixture
def compacted_by_command(tmp_path):
    """A /compact typed by the person: Claude Code writes the boundary (c-1), its summary
    (s-1), a caveat (m-1), then the command (cmd-1) and its output (out-1)."""
    from .fixture_files import CLAUDE_PROJECT, index_fixture

    return index_fixture(
        tmp_path,
        "claude_code",
        "compact_command_after_boundary.jsonl",
        CLAUDE_PROJECT,
        "44444444-4444-4444-8444-444444444444",
    )


@pytest.fixture
def compacted_twice(tmp_path):
    """Two compaction boundaries (c-1, c-2), each followed by its summary line."""
    from .fixture_files import CLAUDE_PROJECT, index_fixture

    return index_fixture(
        tmp_path,
        "claude_code",
        "two_compactions.jsonl",
        CLAUDE_PROJECT,
        "33333333-3333-4333-8333-333333333333",
    )


@pytest.fixture
def long_session(tmp_path):
    """A Claude Code session whose tool result is a pasted log of several MB on one line
    (tests/pasted_log.py). test_pages and test_transcripts_store have long sessions of their own."""
    from sessionviewer import transcripts
    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec

    from .pasted_log import write_pasted_log_session

    root = tmp_path / "projects"
    write_pasted_log_session(root)
    index_roots([RootSpec(root, "claude_code")])
    transcripts.clear_cache()
    yield Session.objects.get(kind="main")
    transcripts.clear_cache()


def within_seconds(call, seconds: float = 10):
    """What call() returns or raises, from a thread given seconds: a reader that blocks
    fails the test instead of hanging the suite (the fifo fixture releases it after)."""
    outcome: dict = {}

    def run():
        try:
            outcome["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture
def fifo():
    """make(path) puts a FIFO at path. Should code under test open one for reading (the bug
    these tests guard against), a helper thread opens and closes its other end, so the reader
    sees an empty file and the test fails on its assertions instead of hanging. make.opened
    lists the FIFOs a reader was found waiting on."""
    made: list[Path] = []
    stop = threading.Event()

    def release():
        while not stop.wait(0.05):
            for path in made:
                # OSError: no reader waiting (ENXIO), or the FIFO is gone.
                with contextlib.suppress(OSError):
                    os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
                    make.opened.append(path)

    thread = threading.Thread(target=release, daemon=True)
    thread.start()

    def make(path: Path) -> Path:
        if path.is_symlink() or path.is_file():
            path.unlink()
        os.mkfifo(path)
        made.append(path)
        return path

    make.opened = []
    yield make
    stop.set()
    thread.join()


# --- No connection left open (PostgreSQL) --------------------------------------------------------

# Whether this process's test database is set up: the checks below never create it, nor read
# the development database it is named after.
_test_database = {"ready": False}


def _fail_if_left_open(what: str, django_db_blocker) -> None:
    """Fail when a connection to the test database other than this thread's is open
    (tests/open_connections.py): PostgreSQL would refuse to drop the database at the end of
    the run, with only a warning to show for it. One query, and only on PostgreSQL."""
    from django.db import connection

    if not _test_database["ready"] or connection.vendor != "postgresql":
        return
    from .open_connections import describe, left_open

    with django_db_blocker.unblock():
        rows = left_open()
    if rows:
        pytest.fail(f"{what} left connections to the test database open:\n{describe(rows)}")


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's (the test database, created once per process and dropped at the end),
    checked for connections left open by the session's fixtures before the drop."""
    _test_database["ready"] = True
    yield
    try:
        _fail_if_left_open("the session's fixtures", django_db_blocker)
    finally:
        _test_database["ready"] = False


@pytest.fixture(autouse=True, scope="module")
def _no_connection_left_open(request, django_db_blocker):
    """Each test module, checked when its tests are done: the failure names the module."""
    yield
    _fail_if_left_open(request.module.__name__, django_db_blocker)


# --- Which tests run on PostgreSQL -----------------------------------------------------------------

# A test that asks for none of these touches no database: it reads files, parses, renders or
# checks settings, and passes or fails the same on either engine.
DATABASE_FIXTURES = {
    "db",
    "transactional_db",
    "django_db_setup",
    "django_db_reset_sequences",
    "django_db_serialized_rollback",
    "live_server",
    "client",
    "async_client",
    "admin_client",
    "admin_user",
    "django_user_model",
}


def uses_the_database(item: pytest.Item) -> bool:
    return item.get_closest_marker("django_db") is not None or bool(
        DATABASE_FIXTURES & set(item.fixturenames)
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On PostgreSQL, run only the tests that touch the database.

    CI runs the suite on SQLite and on PostgreSQL at once (.ci/run): the three quarters of
    it that touch no database (readers, threads, rendering, the worker, settings) ran twice
    for nothing. They run on SQLite; SESSIONVIEWER_TEST_ALL=1 runs them on PostgreSQL too.
    """
    from django.db import connections

    if connections["default"].vendor != "postgresql" or os.environ.get("SESSIONVIEWER_TEST_ALL") == "1":
        return
    kept, left = [], []
    for item in items:
        (kept if uses_the_database(item) else left).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept


def pytest_report_header(config: pytest.Config) -> str | None:
    from django.db import connections

    if connections["default"].vendor == "postgresql" and os.environ.get("SESSIONVIEWER_TEST_ALL") != "1":
        return "PostgreSQL: only the tests that touch the database (SESSIONVIEWER_TEST_ALL=1 runs all)"
    return None
