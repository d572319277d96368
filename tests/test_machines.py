"""Many machines, one index: each indexer names its machine, a root's identity is
(machine, path), and no machine overwrites, claims or drops another's sessions."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.apps import apps
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessionviewer import tallies
from sessionviewer.models import KeyCheck, Session, Source
from sessionviewer.roots import container_id_warning

BASE_DIR = Path(__file__).resolve().parent.parent


def claude_session(folder: Path, name: str, cwd: str, text: str = "hello") -> Path:
    """A one-line Claude Code session file in a project folder of a root."""
    line = {
        "sessionId": name,
        "cwd": cwd,
        "type": "user",
        "uuid": f"u-{name}",
        "parentUuid": None,
        "timestamp": "2026-02-10T10:00:00.000Z",
        "message": {"role": "user", "content": text},
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    path.write_text(json.dumps(line) + "\n")
    return path


def index_as(settings, machine: str, root: Path) -> str:
    settings.SESSIONVIEWER_MACHINE = machine
    out = StringIO()
    call_command("index", f"claude_code={root}", stdout=out, stderr=StringIO())
    return out.getvalue()


def sessions_by_machine() -> list[tuple[str, str]]:
    return sorted(
        (machine, Path(key).stem) for machine, key in Session.objects.values_list("source__machine", "key")
    )


@pytest.mark.django_db
def test_two_machines_with_the_same_root_path_keep_both_sets_of_sessions(settings, tmp_path):
    root = tmp_path / "projects"
    claude_session(root / "-home-dev-shop", "a1", "/home/dev/shop")
    index_as(settings, "laptop", root)
    (root / "-home-dev-shop" / "a1.jsonl").unlink()
    claude_session(root / "-home-dev-shop", "b1", "/home/dev/shop")
    index_as(settings, "ci-runner", root)
    assert sessions_by_machine() == [("ci-runner", "b1"), ("laptop", "a1")]
    assert sorted(Source.objects.values_list("machine", "path")) == [
        ("ci-runner", str(root)),
        ("laptop", str(root)),
    ]


@pytest.mark.django_db
def test_a_vanished_file_drops_only_its_machines_session(settings, tmp_path):
    root = tmp_path / "projects"
    claude_session(root / "-home-dev-shop", "same", "/home/dev/shop")
    index_as(settings, "laptop", root)
    index_as(settings, "ci-runner", root)
    assert sessions_by_machine() == [("ci-runner", "same"), ("laptop", "same")]
    (root / "-home-dev-shop" / "same.jsonl").unlink()
    assert "1 removed" in index_as(settings, "laptop", root)
    assert sessions_by_machine() == [("ci-runner", "same")]


@pytest.mark.django_db
def test_a_root_indexed_before_machines_is_claimed_with_its_sessions_by_the_first_indexer(settings, tmp_path):
    root = tmp_path / "projects"
    claude_session(root / "-home-dev-shop", "old", "/home/dev/shop")
    index_as(settings, "laptop", root)
    Source.objects.update(machine="")  # as the migration leaves a root indexed before it
    before = Session.objects.get().id
    index_as(settings, "desktop", root)
    assert Source.objects.get().machine == "desktop"
    assert Session.objects.get().id == before  # claimed, not read again as another's
    index_as(settings, "laptop", root)  # a second machine makes its own
    assert sessions_by_machine() == [("desktop", "old"), ("laptop", "old")]


@pytest.mark.parametrize("vendor", ["postgresql", "sqlite"])
def test_a_container_id_as_machine_name_is_warned_of_on_postgresql_only(vendor):
    for machine in ("3f4e5d6c7b8a", "3f4e5d6c7b8a" * 5 + "0123"):
        warned = container_id_warning(machine, vendor)
        assert bool(warned) == (vendor == "postgresql")
    assert container_id_warning("laptop", vendor) == ""
    assert container_id_warning("3f4e5d6c7b8", vendor) == ""  # 11: not an id


@pytest.mark.django_db
def test_the_index_command_warns_of_a_container_id_on_the_shared_engine(settings, tmp_path):
    settings.SESSIONVIEWER_MACHINE = "0123456789ab"
    err = StringIO()
    call_command("index", f"claude_code={tmp_path}", stdout=StringIO(), stderr=err)
    warned = "looks like a container id" in err.getvalue()
    assert warned == (connection.vendor == "postgresql")


def _database_url() -> str:
    """The test database, for a `manage.py` of its own (transaction=True: what the test
    writes is committed, and what the process writes is seen)."""
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


def manage_index(machine: str, root: Path) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": "test-only-secret",
        "DATABASE_URL": _database_url(),
        "SESSIONVIEWER_MACHINE": machine,
        "SESSIONVIEWER_ROOTS": f"claude_code={root}",
    }
    command = [sys.executable, "manage.py", "index"]
    return subprocess.run(command, cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=120)


def mount(root: Path, tree: Path) -> None:
    """root shows tree, as a bind mount would on that machine: the same path, other files."""
    if root.is_symlink():
        root.unlink()
    root.symlink_to(tree, target_is_directory=True)


@pytest.mark.django_db(transaction=True)
def test_two_index_processes_with_different_machines_over_one_path_keep_both(tmp_path):
    root = tmp_path / "projects"
    for host in ("a", "b"):
        claude_session(tmp_path / host / "-home-dev-shop", "shared", "/home/dev/shop")
        claude_session(tmp_path / host / "-home-dev-shop", f"only-{host}", "/home/dev/shop")
    for host in ("a", "b"):
        mount(root, tmp_path / host)
        done = manage_index(f"host-{host}", root)
        assert done.returncode == 0, done.stderr
    both = [("host-a", "only-a"), ("host-a", "shared"), ("host-b", "only-b"), ("host-b", "shared")]
    assert sessions_by_machine() == both
    (tmp_path / "a" / "-home-dev-shop" / "shared.jsonl").unlink()
    mount(root, tmp_path / "a")
    again = manage_index("host-a", root)
    assert again.returncode == 0, again.stderr
    assert "1 removed" in again.stdout
    assert sessions_by_machine() == [("host-a", "only-a"), ("host-b", "only-b"), ("host-b", "shared")]


@pytest.mark.django_db
def test_the_first_process_records_its_secret_key_check_and_the_same_key_passes(settings):
    assert KeyCheck.mismatch() == ""
    assert KeyCheck.mismatch() == ""
    assert KeyCheck.objects.count() == 1
    assert settings.SECRET_KEY not in KeyCheck.objects.get().digest


@pytest.mark.django_db
def test_an_indexer_with_another_secret_key_is_refused_and_says_why(settings, tmp_path):
    index_as(settings, "laptop", tmp_path)
    settings.SECRET_KEY = "another-key"
    with pytest.raises(
        CommandError, match="every indexer and web host of one index needs the same SECRET_KEY"
    ):
        index_as(settings, "laptop", tmp_path)


# Where the machine shows: the list's facet, column and filter, the JSON, the header


@pytest.fixture
def two_machines(settings, tmp_path) -> Path:
    """One root path on two machines: laptop has sessions a and both, desk both and d."""
    root = tmp_path / "projects"
    for host, names in (("laptop", ("a", "both")), ("desk", ("both", "d"))):
        for name in names:
            claude_session(tmp_path / host / "-home-dev-shop", name, "/home/dev/shop", f"{name} on {host}")
        mount(root, tmp_path / host)
        index_as(settings, host, root)
    return root


def machine_facet(client, **params) -> dict:
    facets = client.get(reverse("api-session-facets"), params).json()["facets"]
    return {v["value"]: v["count"] for f in facets if f["name"] == "machine" for v in f["values"]}


@pytest.mark.django_db
def test_the_machine_facet_counts_each_machines_sessions(viewer, client, two_machines):
    assert machine_facet(client) == {"laptop": 2, "desk": 2}
    assert machine_facet(client, machine="desk") == {"laptop": 2, "desk": 2}  # its own filter aside
    assert machine_facet(client, q="d") == {"desk": 1}


@pytest.mark.django_db
def test_the_root_facet_names_the_machine_of_each_root_once_there_are_two(viewer, client, two_machines):
    facets = client.get(reverse("api-session-facets")).json()["facets"]
    [roots] = [f for f in facets if f["name"] == "root"]
    assert sorted(v["label"] for v in roots["values"]) == [f"desk: {two_machines}", f"laptop: {two_machines}"]


@pytest.mark.parametrize("prefix", ["", "api-"])
@pytest.mark.django_db
def test_machine_filters_the_list_and_its_api(viewer, client, two_machines, prefix):
    response = client.get(reverse(f"{prefix}session-list"), {"machine": "desk"})
    assert response.status_code == 200
    if prefix:
        sessions = response.json()["sessions"]
        assert sorted((s["machine"], s["title"]) for s in sessions) == [
            ("desk", "both on desk"),
            ("desk", "d on desk"),
        ]
    else:
        page = response.content.decode()
        assert "d on desk" in page and "both on desk" in page and "on laptop" not in page


@pytest.mark.django_db
def test_the_list_shows_a_machine_column_only_once_there_are_two(viewer, client, settings, tmp_path):
    claude_session(tmp_path / "p" / "-home-dev-shop", "one", "/home/dev/shop")
    index_as(settings, "laptop", tmp_path / "p")
    page = client.get(reverse("session-list")).content.decode()
    assert 'data-label="Machine"' not in page and ">Machine</a></th>" not in page
    index_as(settings, "desk", tmp_path / "p")
    page = client.get(reverse("session-list")).content.decode()
    assert page.count('<td data-label="Machine" class="machine" title="laptop">laptop</td>') == 1
    assert page.count('<td data-label="Machine" class="machine" title="desk">desk</td>') == 1
    assert ">Machine</a></th>" in page


@pytest.mark.django_db
def test_the_list_with_two_machines_reads_each_rows_machine_in_the_same_query(
    viewer, client, two_machines, settings
):
    client.get(reverse("session-list"))  # the session, the permissions: read once
    # Both pages read the tally's counts (kept between requests while no count changes).
    tallies.forget_kept_counts()
    with CaptureQueriesContext(connection) as one_page:
        client.get(reverse("session-list"))
    for name in "efgh":
        claude_session(two_machines / "-home-dev-shop", name, "/home/dev/shop")
    index_as(settings, "desk", two_machines)
    tallies.forget_kept_counts()
    with CaptureQueriesContext(connection) as more_rows:
        client.get(reverse("session-list"))
    assert len(more_rows) == len(one_page), [q["sql"] for q in more_rows.captured_queries]


@pytest.mark.django_db
def test_every_sessions_json_carries_its_machine(viewer, client, two_machines):
    session = Session.objects.get(source__machine="laptop", key__endswith="a.jsonl")
    detail = client.get(reverse("api-session-detail", args=[session.id])).json()
    assert detail["session"]["machine"] == "laptop"
    listed = client.get(reverse("api-session-list"), {"_flat": "1"}).json()["sessions"]
    assert sorted(s["machine"] for s in listed) == ["desk", "desk", "laptop", "laptop"]


@pytest.mark.django_db
def test_the_transcript_header_names_the_machine(viewer, client, two_machines):
    session = Session.objects.get(source__machine="desk", key__endswith="d.jsonl")
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "<dt>Machine</dt><dd>desk</dd>" in page


# A project is the same project on every machine


@pytest.fixture
def shop_on_two_machines(settings, tmp_path) -> str:
    """~/work/shop: two sessions on a Linux laptop, one on a Mac."""
    for host, home, names in (("laptop", "/home/dev", ("l1", "l2")), ("mac", "/Users/dev", ("m1",))):
        for name in names:
            claude_session(tmp_path / host / "-shop", name, f"{home}/work/shop", f"{name} on {host}")
        index_as(settings, host, tmp_path / host)
    return "~/work/shop"


@pytest.mark.django_db
def test_one_project_on_two_machines_is_one_page_with_its_sessions_per_machine(
    viewer, client, shop_on_two_machines
):
    assert set(Session.objects.values_list("project", flat=True)) == {"~/work/shop"}
    data = client.get(reverse("api-project-detail", args=[shop_on_two_machines])).json()
    assert [(m["machine"], m["sessions"]) for m in data["machines"]] == [("laptop", 2), ("mac", 1)]
    assert sorted((s["machine"], s["title"]) for s in data["sessions"]) == [
        ("laptop", "l1 on laptop"),
        ("laptop", "l2 on laptop"),
        ("mac", "m1 on mac"),
    ]
    page = client.get(reverse("project-detail", args=[shop_on_two_machines])).content.decode()
    assert '<h2 id="machines-title">Machines</h2>' in page
    assert page.count('<td data-label="Machine">laptop</td>') == 2


@pytest.mark.django_db
def test_a_project_key_from_before_the_fold_leads_to_the_folded_project(viewer, client, shop_on_two_machines):
    response = client.get(reverse("project-detail", args=["/home/dev/work/shop"]), {"_range": "30"})
    assert response.status_code == 301
    assert response["Location"] == reverse("project-detail", args=["~/work/shop"]) + "?_range=30"
    listed = client.get(reverse("api-session-list"), {"project": "/Users/dev/work/shop"}).json()
    assert listed["count"] == 3


@pytest.mark.django_db
def test_the_migration_folds_the_projects_already_indexed(shop_on_two_machines):
    Session.objects.filter(source__machine="mac").update(project="/Users/dev/work/shop")
    Session.objects.filter(source__machine="laptop").update(project="/srv/app")
    migration = importlib.import_module("sessionviewer.migrations.0022_projects_fold_home")
    migration.fold_projects(apps, None)
    assert sorted(Session.objects.values_list("project", flat=True)) == [
        "/srv/app",
        "/srv/app",
        "~/work/shop",
    ]


# Activity, by machine


@pytest.mark.django_db
def test_activity_filters_by_machine(viewer, client, two_machines):
    everything = client.get(reverse("api-activity")).json()["totals"]["sessions"]
    desk = client.get(reverse("api-activity"), {"machine": "desk"}).json()["totals"]["sessions"]
    nowhere = client.get(reverse("api-activity"), {"machine": "nowhere"}).json()["totals"]["sessions"]
    assert (everything, desk, nowhere) == (4, 2, 0)


@pytest.mark.django_db
def test_the_activity_page_has_a_machine_facet_that_toggles_the_filter(viewer, client, two_machines):
    page = client.get(reverse("activity"), {"machine": "desk"}).content.decode()
    assert '<section class="facet" data-facet="machine">' in page
    assert 'class="selected"><a href="?" hx-get="?">✕ desk</a>' in page
    assert '<a href="?machine=laptop" hx-get="?machine=laptop">laptop</a>' in page


# Deployment: every indexer names its machine


def compose_services() -> dict[str, str]:
    """compose.yaml's services, each as its block of text (no YAML library here)."""
    text = (BASE_DIR / "compose.yaml").read_text().split("\nservices:\n", 1)[1].split("\nvolumes:", 1)[0]
    blocks = re.split(r"^  (?=[\w-]+:$)", text, flags=re.MULTILINE)
    return {block.split(":", 1)[0]: block for block in blocks if block.strip()}


def test_every_indexer_in_compose_yaml_names_its_machine():
    services = compose_services()
    indexers = {name: block for name, block in services.items() if "manage.py index" in block}
    assert indexers and "web" in services
    for name, block in indexers.items():
        assert re.search(r"SESSIONVIEWER_MACHINE: [\w-]+\n", block), name


def test_the_image_names_its_machine_rather_than_by_its_container_id():
    dockerfile = (BASE_DIR / "Dockerfile").read_text()
    assert re.search(r"SESSIONVIEWER_MACHINE=sessionviewer\n", dockerfile)


@pytest.mark.django_db
def test_the_root_facet_on_the_page_names_each_roots_machine_beside_its_short_path(
    viewer, client, two_machines
):
    page = client.get(reverse("session-list")).content.decode()
    assert f"desk: {two_machines}" in page or f'desk: <span class="path" title="{two_machines}">' in page
