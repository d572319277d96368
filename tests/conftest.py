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
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
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
