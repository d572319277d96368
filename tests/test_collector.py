"""Python's cycle collector around a manage.py command's start (sessionviewer/collector.py)."""

from __future__ import annotations

import gc
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from sessionviewer import collector

BASE_DIR = Path(__file__).resolve().parent.parent


@pytest.fixture
def collector_as_it_was():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()
    collector._paused = False


def test_the_collector_is_off_until_the_apps_are_ready_then_on_with_their_objects_frozen(collector_as_it_was):
    gc.enable()
    frozen = gc.get_freeze_count()
    collector.pause_until_ready()
    assert not gc.isenabled()
    made_while_setting_up = [[n] for n in range(100)]
    collector.resume_when_ready()
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen + len(made_while_setting_up)
    collector.resume_when_ready()  # once only
    assert gc.isenabled()


def test_the_apps_being_ready_leaves_a_collector_turned_off_by_someone_else_off(collector_as_it_was):
    gc.disable()
    collector.pause_until_ready()  # off already: not ours to turn on
    collector.resume_when_ready()
    assert not gc.isenabled()


def test_a_manage_py_command_runs_with_the_collector_on_and_its_start_up_frozen(tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'index.sqlite3'}",
    }
    code = "import gc; print(gc.isenabled(), gc.get_freeze_count() > 1000)"
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-v", "0", "-c", code],
        cwd=BASE_DIR,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    assert done.stdout.split()[-2:] == ["True", "True"]
