"""The SQLite engine (sessionviewer/sqlite): the index, its -wal and -shm files, and the secret key
are created readable by their owner only."""

from __future__ import annotations

import os
import secrets
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from django.db.utils import ConnectionHandler

BASE_DIR = Path(__file__).resolve().parent.parent


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask():
    """The usual umask, which lets every user of the machine read a new file."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def sqlite(path: Path):
    """A connection through our engine, in WAL mode as settings.py asks, whatever the suite's database."""
    options = {"init_command": "PRAGMA journal_mode=WAL;"}
    databases = {"default": {"ENGINE": "sessionviewer.sqlite", "NAME": str(path), "OPTIONS": options}}
    return ConnectionHandler(databases)["default"]


@pytest.mark.django_db
def test_a_new_database_its_wal_and_its_shm_are_owner_only(tmp_path, open_umask):
    path = tmp_path / "index.sqlite3"
    wrapper = sqlite(path)
    try:
        with wrapper.cursor() as cursor:
            cursor.execute("CREATE TABLE t (x)")
            cursor.execute("INSERT INTO t VALUES (1)")
        assert wrapper.connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        files = [path, Path(f"{path}-wal"), Path(f"{path}-shm")]
        assert {f.name: mode(f) for f in files} == {f.name: 0o600 for f in files}
    finally:
        wrapper.close()


@pytest.mark.django_db
def test_an_existing_database_keeps_its_mode(tmp_path, open_umask):
    path = tmp_path / "shared.sqlite3"
    path.touch(mode=0o640)
    wrapper = sqlite(path)
    try:
        wrapper.ensure_connection()
        assert mode(path) == 0o640
    finally:
        wrapper.close()


def test_manage_py_migrate_creates_an_owner_only_database(tmp_path, open_umask):
    path = tmp_path / "data" / "sessionviewer.sqlite3"
    path.parent.mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": f"sqlite:///{path}",
    }
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"],
        cwd=BASE_DIR,
        env=env,
        check=True,
        capture_output=True,
    )
    assert mode(path) == 0o600


def test_make_creates_an_owner_only_secret_key(tmp_path, open_umask):
    data = tmp_path / "data"
    subprocess.run(["make", "--silent", f"DATA={data}", f"{data}/secret_key"], cwd=BASE_DIR, check=True)
    assert mode(data / "secret_key") == 0o600
    assert len((data / "secret_key").read_text().strip()) >= 50
