"""Several web processes, one index: what an indexer writes shows on every web process at its
next request, whichever machine's indexer wrote it. Two gunicorn processes on two ports serve
the test's database; indexers run as `manage.py index` of their own, named as other machines.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.test import Client

from sessionviewer.models import Session
from tests.claude_files import write_tool_turn
from tests.indexers import command_env

pytestmark = pytest.mark.django_db(transaction=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Web:
    """One gunicorn process of the deployment's kind (gthread), on a port of its own."""

    def __init__(self, cookie: str):
        self.port = free_port()
        self.cookie = cookie
        # The suite's settings: static files served from their folder, no collectstatic needed.
        env = {**command_env(), "SESSIONVIEWER_MACHINE": "web", "DJANGO_SETTINGS_MODULE": "tests.settings"}
        command = [sys.executable, "-m", "gunicorn", "sessionviewer.wsgi", "--bind", f"127.0.0.1:{self.port}"]
        command += ["--workers", "1", "--worker-class", "gthread", "--threads", "2"]
        self.process = subprocess.Popen(command, cwd=settings.BASE_DIR, env=env, stderr=subprocess.PIPE)

    def get(self, path: str) -> bytes:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", headers={"Cookie": self.cookie}
        )
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 - our own server
            return response.read()

    def wait_until_up(self) -> None:
        deadline = time.monotonic() + 120
        while True:
            assert self.process.poll() is None, self.process.stderr.read().decode()
            try:
                self.get("/accounts/login/")
                return
            except urllib.error.HTTPError:
                raise
            except OSError:
                assert time.monotonic() < deadline, "the web process did not start"
                time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(60)


def index_as(machine: str, root: Path) -> None:
    env = {**command_env(), "SESSIONVIEWER_MACHINE": machine}
    done = subprocess.run(
        [sys.executable, "manage.py", "index", f"claude_code={root}"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def append_turn(path: Path, number: int, text: str) -> None:
    base = {"sessionId": path.stem, "cwd": "/home/me/app", "timestamp": "2025-02-08T19:05:00Z"}
    lines = [
        {**base, "type": "user", "uuid": f"u{number}", "parentUuid": f"a{number - 1}" if number > 1 else "a1",
         "message": {"role": "user", "content": f"Question {number}"}},
        {**base, "type": "assistant", "uuid": f"a{number}", "parentUuid": f"u{number}",
         "message": {"id": f"msg{number}", "role": "assistant", "model": "m", "content": [{"type": "text", "text": text}]}},
    ]  # fmt: skip
    with path.open("ab") as handle:
        handle.write(b"".join(orjson.dumps(line) + b"\n" for line in lines))


@pytest.fixture
def webs(admin_user):
    client = Client()
    client.force_login(admin_user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    both = [Web(cookie), Web(cookie)]
    try:
        for web in both:
            web.wait_until_up()
        yield both
    finally:
        for web in both:
            web.stop()


def test_what_any_indexer_writes_shows_on_every_web_process_at_its_next_request(tmp_path, webs):
    root = tmp_path / "projects"
    first = write_tool_turn(
        root / "-home-me-app" / "a.jsonl", "Fix the upload test", [{"type": "text", "text": "On it."}]
    )
    index_as("other", root)  # the web processes' machine ("web") has none of these files
    session = Session.objects.get()
    page = f"/sessions/{session.id}/"
    for web in webs:  # each process builds the thread and keeps it
        assert b"On it." in web.get(page)
        assert b"Done with the turnstile" not in web.get(page)

    # The agent on the other machine goes on, and that machine's indexer reads the append.
    append_turn(first, 2, "Done with the turnstile.")
    index_as("other", root)
    for web in webs:
        assert b"Done with the turnstile." in web.get(page)
        detail = orjson.loads(web.get(f"/api/sessions/{session.id}"))
        assert detail["session"]["machine"] == "other"

    # A new session, indexed by another machine, is on both lists at their next request.
    write_tool_turn(
        tmp_path / "b" / "-home-me-app" / "b.jsonl", "Rename the cart", [{"type": "text", "text": "Ok."}]
    )
    index_as("ci-runner", tmp_path / "b")
    for web in webs:
        assert b"Rename the cart" in web.get("/")
        sessions = orjson.loads(web.get("/api/sessions"))["sessions"]
        assert {s["machine"] for s in sessions} == {"other", "ci-runner"}
