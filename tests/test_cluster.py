"""The local cluster (bench/cluster.py, `make cluster`) and compose.yaml: one shape, the same
commands; and the shape run whole on a real PostgreSQL (issue 28, "Done when")."""

from __future__ import annotations

import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection

from sessionviewer.index import copies, passes
from sessionviewer.models import Session, Source
from tests.claude_files import write_sessions
from tests.indexers import command_env, index_at_once, index_view

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import cluster  # noqa: E402 (bench/ is not a package)

ON_POSTGRESQL = connection.vendor == "postgresql"


def read_compose(text: str) -> dict:
    """compose.yaml, which keeps to block mappings and lists, quoted or plain scalars and
    JSON lists, as a dict (what PyYAML's safe_load makes of it): no YAML library is a
    dependency of ours. A line indented where
    none is expected is refused, as YAML would."""
    lines = [
        (len(line) - len(line.lstrip()), line.strip())
        for line in text.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]

    def scalar(value: str):
        if value.startswith(('"', "[")):
            return json.loads(value)
        value = value.split(" #")[0].strip()
        return int(value) if value.isdigit() else value

    def block(at: int, indent: int):
        if lines[at][1].startswith("- "):
            items = []
            while at < len(lines) and lines[at][0] == indent and lines[at][1].startswith("- "):
                items.append(scalar(lines[at][1][2:]))
                at += 1
            return items, at
        mapping = {}
        while at < len(lines) and lines[at][0] == indent:
            key, colon, value = lines[at][1].partition(":")
            assert colon, f"not a key: {lines[at][1]!r}"
            at += 1
            if value.strip():
                mapping[key] = scalar(value.strip())
            elif at < len(lines) and lines[at][0] > indent:
                mapping[key], at = block(at, lines[at][0])
            else:
                mapping[key] = None
        assert at == len(lines) or lines[at][0] < indent, f"misplaced: {lines[at][1]!r}"
        return mapping, at

    return block(0, 0)[0]


COMPOSE = read_compose((settings.BASE_DIR / "compose.yaml").read_text())
INDEXERS = {name: service for name, service in COMPOSE["services"].items() if name.startswith("indexer-")}


def test_the_compose_reader_refuses_a_misplaced_line():
    with pytest.raises(AssertionError, match="misplaced"):
        read_compose("services:\n  web:\n    image: x\n      build: .\n")


def test_compose_serves_and_indexes_with_the_local_cluster_s_commands():
    web = f"{shlex.join(cluster.MIGRATE)} && exec {shlex.join(cluster.web_command('0.0.0.0:8000'))}"
    assert COMPOSE["services"]["web"]["command"] == ["sh", "-c", web]
    assert INDEXERS
    assert all(shlex.split(service["command"]) == cluster.INDEXER for service in INDEXERS.values())


def test_the_web_command_keeps_an_idle_connection_open_past_a_proxy_s_idle_timeout():
    """gunicorn.conf.py, read from the folder every web command starts in: gunicorn's 2 s
    default closed connections as people paused 1-3 s between pages (bench/load.py's resets)."""
    argv = [*cluster.resolved(cluster.web_command("127.0.0.1:0")), "--print-config"]
    root = Path(__file__).resolve().parent.parent
    printed = subprocess.run(argv, cwd=root, capture_output=True, text=True, check=True, timeout=60).stdout
    resolved = dict(
        tuple(part.strip() for part in line.split("=", 1)) for line in printed.splitlines() if "=" in line
    )
    assert resolved["config"] == "./gunicorn.conf.py"
    assert int(resolved["keepalive"]) > 60
    # The application (and its warm-up, sessionviewer/wsgi.py) loaded once, before the fork.
    assert resolved["preload_app"] == "True"


def test_compose_s_web_has_no_session_files_and_each_indexer_names_its_machine():
    services = COMPOSE["services"]
    assert set(services) == {"db", "web", *INDEXERS}
    assert "volumes" not in services["web"]
    assert "SESSIONVIEWER_ROOTS" not in services["web"]["environment"]
    for service in INDEXERS.values():
        assert service["environment"]["SESSIONVIEWER_MACHINE"]  # never the container's id
        assert service["environment"]["SESSIONVIEWER_ROOTS"].startswith("claude_code=/sessions/")
        assert service["volumes"] and all(volume.endswith(":ro") for volume in service["volumes"])
    # One index, one key: every service of it has the same database and SECRET_KEY.
    apps = [services["web"], *INDEXERS.values()]
    for name in ("DATABASE_URL", "SECRET_KEY"):
        assert len({app["environment"][name] for app in apps}) == 1, name
    assert "@db:5432/" in services["web"]["environment"]["DATABASE_URL"]
    assert services["db"]["environment"]["POSTGRES_DB"] == "sessionviewer"


def test_the_cluster_plans_three_machines_two_over_the_same_roots_and_two_web_processes(tmp_path):
    for tree in ("shared", "server"):
        (tmp_path / tree / "claude-code" / "projects").mkdir(parents=True)
    pieces = cluster.plan("postgres://db/x", tmp_path / "key", tmp_path / "logs", tmp_path)
    roots = {
        name: piece["env"]["SESSIONVIEWER_ROOTS"]
        for name, piece in pieces.items()
        if name.startswith("index")
    }
    assert roots == {
        "indexer-laptop": f"claude_code={tmp_path / 'shared/claude-code/projects'}",
        "indexer-ci-runner": f"claude_code={tmp_path / 'shared/claude-code/projects'}",
        "indexer-server": f"claude_code={tmp_path / 'server/claude-code/projects'}",
    }
    assert [pieces[name]["env"]["SESSIONVIEWER_MACHINE"] for name in roots] == [
        "laptop",
        "ci-runner",
        "server",
    ]
    assert [piece["url"] for piece in pieces.values() if "url" in piece] == [
        "http://127.0.0.1:8001/",
        "http://127.0.0.1:8002/",
    ]
    assert {piece["env"]["SECRET_KEY_FILE"] for piece in pieces.values()} == {str(tmp_path / "key")}
    assert all(piece["log"].startswith(str(tmp_path / "logs")) for piece in pieces.values())


# The whole shape on a real PostgreSQL: the cluster script's three indexers and two web
# processes on the test's database. laptop's root is two groups of files (two transactions):
# its indexer is killed between them. ci-runner and server index one root path, a small one,
# whose replies each holds a copy of. laptop's replies are its own: a pass killed before its
# copies phase leaves the copies it wrote counted twice (the last test below).
# Three groups on laptop: the test kills its indexer once the first is committed, and the two
# left take it long enough (about a second) that it cannot finish between two looks. With one
# group of 50 after the first, a fast machine finished the pass before the kill.
LAPTOP, SHARED, REPLIES = 3 * passes.GROUP_FILES, 20, 2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_cluster(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {
        **command_env(),
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "SECRET_KEY_FILE": str(folder / "key"),
    }
    return subprocess.run(
        [sys.executable, "bench/cluster.py", "--dir", str(folder), *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _pieces(folder: Path) -> dict:
    return json.loads((folder / "cluster.json").read_text())["pieces"]


def _wait(condition, what: str, seconds: float = 240) -> None:
    """Until condition() holds; a guard against a hang, not a timed assertion."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        time.sleep(0.02)


def _watching(folder: Path, name: str) -> bool:
    """The indexer's last start has finished its first pass and watches."""
    log = Path(_pieces(folder)[name]["log"]).read_text()
    return "Watching" in log.rsplit("--- ", 1)[-1]


def _get(port: str, path: str, cookie: str) -> str:
    web = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
    web.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
    response = web.getresponse()
    body = response.read().decode()
    web.close()
    assert response.status == 200, (port, path, response.status)
    return body


@pytest.mark.skipif(
    not ON_POSTGRESQL, reason="many machines share one PostgreSQL index; SQLite is one machine's"
)
@pytest.mark.django_db(transaction=True)
def test_three_machines_index_at_once_and_the_web_serves_without_the_files(
    tmp_path, client, django_user_model
):
    trees, folder = tmp_path / "sessions", tmp_path / "cluster"
    laptop_root, shared = trees / "laptop/claude-code/projects", trees / "shared/claude-code/projects"
    write_sessions(laptop_root, LAPTOP, REPLIES)  # the same reply ids as the shared root: copies
    write_sessions(shared, SHARED, REPLIES)
    folder.mkdir()
    (folder / "key").write_text(settings.SECRET_KEY)
    webs = [str(_free_port()), str(_free_port())]
    machines = ["--machine", "laptop=laptop", "--machine", "ci-runner=shared", "--machine", "server=shared"]
    ports = ["--web-port", webs[0], "--web-port", webs[1]]
    started = _run_cluster(folder, "start", "--trees", str(trees), "--workers", "1", *machines, *ports)
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        # laptop's indexer, SIGKILLed once its first group is committed, before its second.
        laptop = _pieces(folder)["indexer-laptop"]["pid"]
        _wait(lambda: Session.objects.filter(source__machine="laptop").exists(), "laptop's first group")
        os.kill(laptop, signal.SIGKILL)
        assert 0 < Session.objects.filter(source__machine="laptop").count() < LAPTOP

        # A second indexer of ci-runner over its root is refused while ci-runner's watches.
        _wait(lambda: _watching(folder, "indexer-ci-runner"), "ci-runner's first pass")
        second = subprocess.run(
            [sys.executable, "manage.py", "index", f"claude_code={shared}"],
            cwd=settings.BASE_DIR,
            env={**command_env(), "SESSIONVIEWER_MACHINE": "ci-runner"},
            capture_output=True,
            text=True,
        )
        assert second.returncode != 0
        assert "'ci-runner'" in second.stderr and str(shared) in second.stderr, second.stderr

        # `start` again starts laptop's indexer, and only it; its pass finishes the work.
        again = _run_cluster(folder, "start")
        assert again.returncode == 0, again.stdout + again.stderr
        assert _pieces(folder)["indexer-laptop"]["pid"] != laptop
        for name in ("indexer-laptop", "indexer-ci-runner", "indexer-server"):
            _wait(lambda name=name: _watching(folder, name), f"{name}'s pass")
        resumed = index_view()
        assert sorted(resumed["machines"]) == ["ci-runner", "laptop", "server"]
        sessions = [len(resumed["machines"][m]["sessions"]) for m in ("laptop", "ci-runner", "server")]
        assert sessions == [LAPTOP, SHARED, SHARED]

        # The indexers stopped and the files moved away: the web processes serve from the index.
        stopped = _run_cluster(folder, "stop", "indexer-laptop", "indexer-ci-runner", "indexer-server")
        assert stopped.returncode == 0, stopped.stderr
        trees.rename(tmp_path / "away")
        client.force_login(django_user_model.objects.create_user("vera", password="pw", is_superuser=True))
        cookie = client.cookies["sessionid"].value
        session = Session.objects.get(source__machine="laptop", key__endswith="0007.jsonl")
        for port in webs:
            page = _get(port, "/", cookie)
            assert all(machine in page for machine in ("laptop", "ci-runner", "server"))
            assert "Step 1 of 7" in _get(port, f"/sessions/{session.id}/", cookie)
            hits = _get(port, "/?q=%22Step+0+of+7%22", cookie)
            assert "Step 0 of 7" in hits and f"/sessions/{session.id}/" in hits
    finally:
        _run_cluster(folder, "stop")
    assert not (folder / "cluster.json").exists()

    # The index equals a fresh one of the same files, however its passes ran.
    (tmp_path / "away").rename(trees)
    Session.objects.all().delete()
    Source.objects.all().delete()
    index_at_once({"laptop": laptop_root, "ci-runner": shared, "server": shared})
    assert index_view() == resumed


class Killed(BaseException):
    """The process ends here, as under SIGKILL: nothing after it runs."""


def _index(*roots: Path) -> None:
    call_command("index", *(f"claude_code={root}" for root in roots), stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
def test_a_pass_killed_before_its_copies_phase_leaves_no_reply_counted_twice(tmp_path, monkeypatch):
    """What the multi-machine run found, on one engine and in one process: a pass killed
    after its groups are committed and before copies.count_once."""
    first, second = tmp_path / "a", tmp_path / "b"
    write_sessions(first, 3, REPLIES)
    write_sessions(second, 3, REPLIES)  # a copy of each reply of the first
    _index(first)

    def killed(read_whole):
        raise Killed

    monkeypatch.setattr(copies, "count_once", killed)
    with pytest.raises(Killed):
        _index(first, second)
    monkeypatch.undo()
    _index(first, second)
    resumed = index_view()
    Session.objects.all().delete()
    Source.objects.all().delete()
    _index(first, second)
    assert index_view() == resumed
