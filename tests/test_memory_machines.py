"""Many machines, one memory path: two machines' Fluux trees at the same path are two
histories. Each indexer records its own tree's changes, each web host its editor's saves
(revisions) and audit events, and the timeline, as-of views, revisions, findings, purge,
audit log, search and the read-only workspace pages read one machine's history."""

from __future__ import annotations

import datetime as dt
import importlib

import orjson
import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.memory_index import known_roots
from sessionviewer.models import AuditEvent, MemorySnapshot, Revision, Session, Source

from .memory_turns import ALICE, at, index, write

pytestmark = pytest.mark.django_db

KEY = "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"


def index_as(settings, machine: str, tree) -> None:
    settings.SESSIONVIEWER_MACHINE = machine
    index(tree)


def history(machine: str, filename: str = "memory.md") -> list[tuple[str, bytes]]:
    states = MemorySnapshot.objects.filter(machine=machine, jid=ALICE, filename=filename).order_by("id")
    return [(s.who, bytes(s.content)) for s in states]


@pytest.fixture
def two_trees(tree, settings):
    """The tree fixture's root (indexed once by the test's machine, "vm" or whatever the host
    is called) indexed as laptop's tree, and the same path as ci-runner's."""
    MemorySnapshot.objects.all().delete()
    index_as(settings, "ci-runner", tree)
    index_as(settings, "laptop", tree)
    return tree


def test_two_machines_indexing_one_memory_path_keep_two_timelines(two_trees, settings):
    write(two_trees / ALICE / "memory.md", "Likes coffee.\n", at(10, 0))
    index_as(settings, "ci-runner", two_trees)
    index_as(settings, "laptop", two_trees)
    first, coffee = ("first", b"Likes tea.\n"), ("outside", b"Likes coffee.\n")
    assert history("ci-runner") == [first, coffee]
    assert history("laptop") == [first, coffee]  # it had recorded none: ci-runner's was current


def test_each_machine_records_only_its_own_trees_changes(two_trees, settings):
    write(two_trees / ALICE / "memory.md", "Likes coffee.\n", at(10, 0))
    index_as(settings, "ci-runner", two_trees)
    assert history("laptop") == [("first", b"Likes tea.\n")]
    assert MemorySnapshot.objects.filter(machine="laptop", current=True, filename="memory.md").count() == 1


def test_a_history_from_before_machines_is_claimed_by_the_first_indexer_of_its_path(tree, settings):
    MemorySnapshot.objects.update(machine="")
    recorded = MemorySnapshot.objects.count()
    index_as(settings, "laptop", tree)
    assert set(MemorySnapshot.objects.values_list("machine", flat=True)) == {"laptop"}
    assert MemorySnapshot.objects.count() == recorded  # claimed, not recorded again as first seen
    index_as(settings, "ci-runner", tree)
    assert MemorySnapshot.objects.filter(machine="laptop").count() == recorded


def migrate_names() -> None:
    migration = importlib.import_module("sessionviewer.migrations.0026_memory_snapshot_machine")
    migration.name_machines(apps, None)


def test_the_migration_gives_a_history_the_machine_of_the_source_at_its_path(tree):
    Source.objects.filter(path=str(tree)).update(machine="fluux-host")
    MemorySnapshot.objects.update(machine="")
    migrate_names()
    assert set(MemorySnapshot.objects.values_list("machine", flat=True)) == {"fluux-host"}


def test_the_migration_leaves_a_history_two_machines_wrote_unclaimed(tree):
    source = Source.objects.get(path=str(tree))
    Source.objects.create(machine="ci-runner", path=source.path, format=source.format)
    MemorySnapshot.objects.update(machine="")
    migrate_names()
    assert set(MemorySnapshot.objects.values_list("machine", flat=True)) == {""}


def test_the_migration_gives_a_root_no_source_has_to_the_indexs_one_machine(tree):
    Source.objects.update(path="/elsewhere", machine="laptop")
    MemorySnapshot.objects.update(machine="")
    migrate_names()
    assert set(MemorySnapshot.objects.values_list("machine", flat=True)) == {"laptop"}


# The pages: this host is laptop, with the tree mounted; ci-runner's tree at the same path
# is read from the index.


@pytest.fixture
def on_laptop(two_trees, settings):
    write(two_trees / ALICE / "memory.md", "Likes coffee.\n", at(10, 0))
    index_as(settings, "ci-runner", two_trees)
    settings.SESSIONVIEWER_MACHINE = "laptop"
    return two_trees


def roots_listed(client) -> list[dict]:
    return orjson.loads(client.get(reverse("api-workspace-list")).content)["roots"]


def test_the_workspace_list_shows_the_same_path_once_per_machine(viewer, client, on_laptop):
    roots = roots_listed(client)
    assert [(r["path"], r["machine"]) for r in roots] == [
        (str(on_laptop), "laptop"),
        (str(on_laptop), "ci-runner"),
    ]
    assert roots[1]["read_only_held_by"] == "ci-runner" and "read_only_held_by" not in roots[0]
    page = client.get(reverse("workspace-list")).content.decode()
    assert (
        '<span class="machine">on laptop</span>' in page
        and '<span class="machine">on ci-runner</span>' in page
    )


def timeline(client, root: int) -> dict:
    url = reverse("api-workspace-memory-timeline", args=[root, ALICE])
    return client.get(url, {"file": "memory.md"}).json()


def test_each_machines_timeline_shows_its_own_changes(viewer, client, on_laptop):
    laptop, ci = timeline(client, 0), timeline(client, 1)
    assert [c["who"] for c in laptop["changes"]] == ["first"]
    assert [c["who"] for c in ci["changes"]] == ["outside", "first"]
    assert (laptop["machine"], ci["machine"]) == ("laptop", "ci-runner")


def test_the_timeline_page_names_its_machine_where_two_hold_the_path(viewer, client, on_laptop):
    page = client.get(reverse("workspace-memory-timeline", args=[1, ALICE])).content.decode()
    assert '<span class="machine">on ci-runner</span>' in page


def test_the_as_of_view_reads_its_machines_history(viewer, client, on_laptop):
    def memory_then(root: int) -> str:
        url = reverse("api-workspace-memory-as-of", args=[root, ALICE])
        files = client.get(url, {"at": "2025-06-02T11:00:00+00:00"}).json()["files"]
        return next(f for f in files if f["file"] == "memory.md")["text"]

    assert (memory_then(0), memory_then(1)) == ("Likes tea.\n", "Likes coffee.\n")


def test_another_machines_tree_at_a_mounted_path_is_read_only_from_the_index(editor, client, on_laptop):
    (on_laptop / ALICE / "memory.md").write_text("Likes water.\n")  # laptop's tree, not ci-runner's
    page = client.get(reverse("workspace-edit", args=[1, ALICE, "memory.md"])).content.decode()
    assert "<fieldset disabled>" in page and "Likes coffee." in page and "ci-runner" in page
    refused = client.post(
        reverse("workspace-save", args=[1, ALICE, "memory.md"]), {"text": "x", "version": "0"}
    )
    assert refused.status_code == 409 and "ci-runner" in refused.content.decode()
    assert (on_laptop / ALICE / "memory.md").read_text() == "Likes water.\n"


def test_memory_search_finds_each_machines_text_in_its_root(viewer, client, on_laptop):
    (on_laptop / ALICE / "memory.md").write_text("Likes water.\n")  # laptop's tree, read from disk
    hits = client.get(reverse("api-workspace-search"), {"q": "coffee"}).json()["hits"]
    assert [hit["root"] for hit in hits] == [1]


def test_an_editor_save_is_recorded_in_this_machines_history(editor, client, on_laptop):
    path = on_laptop / ALICE / "memory.md"
    saved = client.post(
        reverse("workspace-save", args=[0, ALICE, "memory.md"]),
        {"text": "Likes juice.\n", "version": ws.file_version(path)},
    )
    assert saved.status_code == 302
    assert [c["who"] for c in timeline(client, 0)["changes"]] == ["editor", "first"]
    assert [c["who"] for c in timeline(client, 1)["changes"]] == ["outside", "first"]


def leak_on_both(tree, settings) -> str:
    write(tree / ALICE / "memory.md", f"key {KEY}\n", at(11, 0))
    index_as(settings, "ci-runner", tree)
    index_as(settings, "laptop", tree)
    [fp] = {
        f["fp"] for s in MemorySnapshot.objects.filter(current=True, filename="memory.md") for f in s.findings
    }
    return fp


def test_a_purge_rewrites_one_machines_history_and_leaves_the_others(editor, client, on_laptop, settings):
    fp = leak_on_both(on_laptop, settings)
    assert client.post(reverse("workspace-purge-run", args=[1, ALICE, fp])).status_code == 302
    ci = MemorySnapshot.objects.get(machine="ci-runner", current=True, filename="memory.md")
    laptop = MemorySnapshot.objects.get(machine="laptop", current=True, filename="memory.md")
    assert bytes(ci.content) == b"key [purged]\n" and bytes(laptop.content) == f"key {KEY}\n".encode()
    assert AuditEvent.objects.get(action="purge").machine == "ci-runner"

    def purged(root: int) -> list:
        url = reverse("api-workspace-memory-findings")
        return [f["purged"] is not None for f in client.get(url, {"root": root}).json()["findings"]]

    assert (purged(0), purged(1)) == ([False], [True])


def test_a_configured_root_this_host_lacks_is_listed_once_as_the_machine_holding_it(
    viewer, client, tree, settings, tmp_path
):
    MemorySnapshot.objects.all().delete()
    index_as(settings, "fluux-host", tree)
    tree.rename(tmp_path / "away")
    settings.SESSIONVIEWER_MACHINE = "web-1"  # configured with the same roots, no tree mounted
    roots = roots_listed(client)
    assert [(r["path"], r["machine"], r["read_only_held_by"]) for r in roots] == [
        (str(tree), "fluux-host", "fluux-host")
    ]


# Looking a root up: known_roots() is a DISTINCT over the current snapshots, so a page asks it
# once, and passes the root (path, machine, whether to name it) on.


def known_roots_sql() -> str:
    with CaptureQueriesContext(connection) as lookup:
        known_roots()
    [query] = lookup.captured_queries
    return query["sql"]


def lookups(captured: CaptureQueriesContext, lookup: str) -> int:
    return sum(query["sql"] == lookup for query in captured.captured_queries)


@pytest.mark.parametrize(
    ("name", "args", "query"),
    [
        # Root 1 is ci-runner's tree, read from the index and named; root 0 is laptop's, mounted.
        pytest.param("workspace-memory-timeline", [1, ALICE], {"file": "memory.md"}, id="timeline"),
        pytest.param("api-workspace-memory-timeline", [1, ALICE], {"file": "memory.md"}, id="timeline-api"),
        pytest.param("workspace-memory-timeline", [0, ALICE], {}, id="timeline-mounted"),
        pytest.param("workspace-memory-as-of", [0, ALICE], {}, id="as-of-mounted"),
        pytest.param("api-workspace-memory-as-of", [1, ALICE], {}, id="as-of-api"),
        pytest.param("workspace-memory-changes", [], {"root": 1}, id="changes"),
        pytest.param("api-workspace-memory-changes", [], {"root": 1}, id="changes-api"),
        pytest.param("workspace-memory-findings", [], {"root": 1}, id="findings"),
        pytest.param("api-workspace-memory-findings", [], {"root": 1}, id="findings-api"),
        pytest.param("workspace-jid", [0, ALICE], {}, id="jid"),
        pytest.param("api-workspace-jid", [0, ALICE], {}, id="jid-api"),
        pytest.param("api-workspace-prompt", [1, ALICE], {}, id="prompt-api"),
    ],
)
def test_a_memory_page_looks_its_root_up_once(viewer, client, on_laptop, name, args, query):
    lookup = known_roots_sql()
    with CaptureQueriesContext(connection) as page:
        response = client.get(reverse(name, args=args), query)
    assert response.status_code == 200
    assert lookups(page, lookup) == 1


def test_a_write_looks_its_root_up_once(editor, client, on_laptop):
    path = on_laptop / ALICE / "memory.md"
    lookup = known_roots_sql()
    with CaptureQueriesContext(connection) as write:
        saved = client.post(
            reverse("workspace-save", args=[0, ALICE, "memory.md"]),
            {"text": "Likes juice.\n", "version": ws.file_version(path)},
        )
    assert saved.status_code == 302 and path.read_text() == "Likes juice.\n"
    assert lookups(write, lookup) == 1  # tree_required's, passed on to the view


# A JID's transcripts: its folder's paths are also another machine's paths.


def test_a_jid_page_links_its_own_machines_transcripts_where_two_share_the_path(
    viewer, client, on_laptop, settings
):
    settings.SESSIONVIEWER_MACHINE = "ci-runner"  # indexed before laptop: its sessions are not the last
    history_path = on_laptop / ALICE / "history.jsonl"
    by_machine = dict(Session.objects.filter(path=str(history_path)).values_list("source__machine", "id"))
    assert {"ci-runner", "laptop"} <= by_machine.keys()
    listed = client.get(reverse("api-workspace-jid", args=[0, ALICE])).json()
    assert listed["root"] == 0 and listed.get("read_only_held_by") is None
    [row] = [s for s in listed["sessions"] if s["name"] == "history.jsonl"]
    assert row["session_id"] == by_machine["ci-runner"]
    page = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()

    def linked(id_: int) -> bool:
        return f'<a class="transcript" href="{reverse("session-detail", args=[id_])}">' in page

    assert [machine for machine, id_ in by_machine.items() if linked(id_)] == ["ci-runner"]


# Editor revisions and audit events: the web host that saves is the one with the tree mounted,
# so a save is its machine's. On the laptop host, root 0 is laptop's tree and root 1 ci-runner's.


def save_as(client, settings, machine: str, tree, text: str) -> Revision:
    """An editor save on machine's web host, where its tree (root 0 there) is mounted."""
    settings.SESSIONVIEWER_MACHINE = machine
    path = tree / ALICE / "memory.md"
    url = reverse("workspace-save", args=[0, ALICE, "memory.md"])
    assert client.post(url, {"text": text, "version": ws.file_version(path)}).status_code == 302
    settings.SESSIONVIEWER_MACHINE = "laptop"
    return Revision.objects.latest("id")


def revisions_listed(client, root: int) -> list[tuple[str, int]]:
    url = reverse("api-workspace-edit", args=[root, ALICE, "memory.md"])
    return [(r["machine"], r["id"]) for r in client.get(url).json()["revisions"]]


def test_two_machines_saving_one_path_keep_two_revision_histories(editor, client, on_laptop, settings):
    laptop = save_as(client, settings, "laptop", on_laptop, "Likes juice.\n")
    ci = save_as(client, settings, "ci-runner", on_laptop, "Likes milk.\n")
    assert revisions_listed(client, 0) == [("laptop", laptop.id)]
    assert revisions_listed(client, 1) == [("ci-runner", ci.id)]
    assert [c["revision"] for c in timeline(client, 0)["changes"]] == [laptop.id, None]
    assert [c["revision"] for c in timeline(client, 1)["changes"]] == [ci.id, None, None]


def test_a_revision_opens_its_own_machines_file(editor, client, on_laptop, settings):
    ci = save_as(client, settings, "ci-runner", on_laptop, "Likes milk.\n")
    (on_laptop / ALICE / "memory.md").write_text("Likes water.\n")  # laptop's tree, not ci-runner's
    page = client.get(reverse("workspace-revision", args=[ci.id])).content.decode()
    assert reverse("workspace-edit", args=[1, ALICE, "memory.md"]) in page and "Likes water." not in page
    version = ws.file_version(on_laptop / ALICE / "memory.md")
    refused = client.post(reverse("workspace-revision-restore", args=[ci.id]), {"version": version})
    assert refused.status_code == 409 and "ci-runner" in refused.content.decode()
    assert (on_laptop / ALICE / "memory.md").read_text() == "Likes water.\n"


def older_save(machine: str, tree, text: str, day: int) -> Revision:
    """A save recorded as the app did before it kept snapshots: a revision alone."""
    fields = {"machine": machine, "root": str(tree), "jid": ALICE, "filename": "memory.md", "user": None}
    revision = Revision.of_bytes(None, text.encode(), **fields)
    revision.save()
    Revision.objects.filter(id=revision.id).update(created_at=dt.datetime(2025, 5, day, 12, tzinfo=dt.UTC))
    return revision


def test_revisions_older_than_the_snapshots_show_on_their_own_machines_timeline(viewer, client, on_laptop):
    laptop = older_save("laptop", on_laptop, "Likes juice.\n", 20)
    ci = older_save("ci-runner", on_laptop, "Likes milk.\n", 21)
    assert [c["id"] for c in timeline(client, 0)["changes"]][-1:] == [f"r{laptop.id}"]
    assert [c["id"] for c in timeline(client, 1)["changes"]][-1:] == [f"r{ci.id}"]
    assert f"r{ci.id}" not in str(timeline(client, 0)) and f"r{laptop.id}" not in str(timeline(client, 1))

    def memory_then(root: int) -> str:
        url = reverse("api-workspace-memory-as-of", args=[root, ALICE])
        files = client.get(url, {"at": "2025-05-25"}).json()["files"]
        return next(f for f in files if f["file"] == "memory.md")["text"]

    assert (memory_then(0), memory_then(1)) == ("Likes juice.\n", "Likes milk.\n")


def test_a_purge_of_one_machines_history_leaves_the_others_revisions_and_events(
    editor, client, on_laptop, settings
):
    laptop = save_as(client, settings, "laptop", on_laptop, f"key {KEY}\n")
    ci = save_as(client, settings, "ci-runner", on_laptop, f"key {KEY}\nLikes milk.\n")
    [fp] = {f["fp"] for f in MemorySnapshot.objects.get(revision=ci).findings}
    assert client.post(reverse("workspace-purge-run", args=[1, ALICE, fp])).status_code == 302
    laptop.refresh_from_db()
    ci.refresh_from_db()
    assert ci.after == "key [purged]\nLikes milk.\n" and laptop.after == f"key {KEY}\n"
    events = AuditEvent.objects.order_by("id").values_list("machine", "action")
    assert list(events) == [("laptop", "edit"), ("ci-runner", "edit"), ("ci-runner", "purge")]
    url = reverse("api-workspace-memory-findings")
    [laptops] = client.get(url, {"root": 0}).json()["findings"]
    assert laptops["purged"] is None and laptops["still_present"]


# The audit log, by machine


def audit(client, **query) -> dict:
    return client.get(reverse("api-workspace-audit-log"), query).json()


def test_the_audit_log_shows_and_filters_the_machine_of_each_event(editor, client, on_laptop, settings):
    save_as(client, settings, "laptop", on_laptop, "Likes juice.\n")
    save_as(client, settings, "ci-runner", on_laptop, "Likes milk.\n")
    body = audit(client, machine="ci-runner")
    assert body["filters"] == {"machine": "ci-runner"}
    assert [(e["machine"], e["action"]) for e in body["events"]] == [("ci-runner", "edit")]
    assert [e["machine"] for e in audit(client)["events"]] == ["ci-runner", "laptop"]
    page = client.get(reverse("workspace-audit-log"), {"machine": "laptop"}).content.decode()
    assert "<th>Machine</th>" in page and '<td class="machine">laptop</td>' in page
    assert '<td class="machine">ci-runner</td>' not in page
    assert '<option value="laptop" selected>' in page and '<option value="ci-runner">' in page
    every = client.get(reverse("workspace-audit-log")).content.decode()
    assert "&amp;machine=laptop" in every and "&amp;machine=ci-runner" in every  # a JID's events there


def test_the_audit_log_has_no_machine_column_for_one_machine(editor, client, on_laptop, settings):
    save_as(client, settings, "laptop", on_laptop, "Likes juice.\n")
    page = client.get(reverse("workspace-audit-log")).content.decode()
    assert "<th>Machine</th>" not in page and 'name="machine"' not in page


# The migration: revisions and events from before machines


def migrate_revisions() -> None:
    migration = importlib.import_module("sessionviewer.migrations.0029_revision_and_audit_machine")
    migration.name_machines(apps, None)


def before_machines(tree) -> tuple[Revision, AuditEvent]:
    """A revision without a snapshot (saved before they were kept), and a /new, unnamed."""
    revision = older_save("", tree, "Likes juice.\n", 20)
    event = AuditEvent.objects.create(action="new", root=str(tree), jid=ALICE, detail={"archived": None})
    return revision, event


def machines_of(*rows) -> list[str]:
    return [type(row).objects.get(id=row.id).machine for row in rows]


def test_the_migration_gives_revisions_and_events_the_machine_of_the_source_at_their_path(tree):
    rows = before_machines(tree)
    Source.objects.filter(path=str(tree)).update(machine="fluux-host")
    migrate_revisions()
    assert machines_of(*rows) == ["fluux-host", "fluux-host"]


def test_the_migration_gives_a_path_no_source_has_to_the_indexs_one_machine(tree):
    rows = before_machines(tree)
    Source.objects.update(path="/elsewhere", machine="laptop")
    migrate_revisions()
    assert machines_of(*rows) == ["laptop", "laptop"]


def test_the_migration_leaves_what_two_machines_may_have_written_unclaimed(tree, settings):
    rows = before_machines(tree)
    source = Source.objects.get(path=str(tree))
    Source.objects.create(machine="ci-runner", path=source.path, format=source.format)
    migrate_revisions()
    assert machines_of(*rows) == ["", ""]
    index_as(settings, "laptop", tree)  # the first indexer of the path claims them, as its snapshots
    assert machines_of(*rows) == ["laptop", "laptop"]


def test_the_migration_names_a_save_by_its_snapshot_and_a_purge_by_its_detail(editor, client, tree):
    source = Source.objects.get(path=str(tree))
    Source.objects.create(machine="ci-runner", path=source.path, format=source.format)  # two: no telling
    path = tree / ALICE / "memory.md"
    url = reverse("workspace-save", args=[0, ALICE, "memory.md"])
    client.post(url, {"text": "Likes juice.\n", "version": ws.file_version(path)})
    purge = AuditEvent.objects.create(
        action="purge", root=str(tree), jid=ALICE, detail={"machine": "ci-runner"}
    )
    saved = Revision.objects.get()
    MemorySnapshot.objects.filter(revision=saved).update(machine="fluux-host")
    Revision.objects.update(machine="")
    AuditEvent.objects.update(machine="")
    migrate_revisions()
    edit = AuditEvent.objects.get(action="edit")
    assert machines_of(saved, edit, purge) == ["fluux-host", "fluux-host", "ci-runner"]
