"""Who may read and write workspaces, and which JIDs and file names a request may name."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.urls import reverse

from sessionviewer import workspaces as ws
from sessionviewer.models import AuditEvent, Revision

pytestmark = pytest.mark.django_db

DEMO = Path(__file__).resolve().parents[1] / "demo" / "fluux" / "memory"
ALICE = "alice@example.com"
PLACEHOLDER = "JID-PLACEHOLDER"

# name, URL arguments with PLACEHOLDER for the JID, and the POST data (versions filled in later)
WRITE_URLS = [
    ("workspace-global-save", [0, "identity.md"], {"text": "Pwned.\n"}),
    ("workspace-save", [0, PLACEHOLDER, "identity.md"], {"text": "Pwned.\n"}),
    ("workspace-save", [0, PLACEHOLDER, "memory.md"], {"text": "Pwned.\n"}),
    ("workspace-remove-run", [0, PLACEHOLDER, "instructions.md"], {}),
    ("workspace-new-run", [0, PLACEHOLDER], {}),
    ("workspace-forget-run", [0, PLACEHOLDER], {}),
    ("workspace-revision-restore", ["REVISION"], {}),
    ("workspace-revision-restore-before", ["REVISION"], {}),
    ("workspace-preview", [], {"text": "x"}),
]
JID_WRITE_URLS = [item for item in WRITE_URLS if PLACEHOLDER in item[1]]
# Pages that only an editor may open: the forms and confirmations.
EDIT_PAGES = [
    ("workspace-global-edit", [0, "identity.md"]),
    ("workspace-edit", [0, ALICE, "memory.md"]),
    ("workspace-remove", [0, ALICE, "instructions.md"]),
    ("workspace-new", [0, ALICE]),
    ("workspace-forget", [0, ALICE]),
    ("api-workspace-global-edit", [0, "identity.md"]),
    ("api-workspace-edit", [0, ALICE, "memory.md"]),
    ("api-workspace-remove", [0, ALICE, "instructions.md"]),
    ("api-workspace-new", [0, ALICE]),
    ("api-workspace-forget", [0, ALICE]),
]
CRAFTED_JIDS = [
    "..",
    "..%2F..%2Foutside",
    "..%252Foutside",
    "%2Ftmp",
    "%252Ftmp",
    "%2e%2e",
    "alice@example.com%2F..%2F..%2Foutside",
    "alice@example.com%5C..",
    "outside%00",
    "link-outside",
]
READ_PAGES = [
    ("workspace-list", []),
    ("workspace-jid", [0, ALICE]),
    ("workspace-prompt", [0, ALICE]),
    ("workspace-source", [0, ALICE, "memory.md"]),
    ("workspace-global-source", [0, "identity.md"]),
    ("workspace-search", []),
    ("workspace-secrets", []),
    ("workspace-audit-log", []),
    ("workspace-revision", ["REVISION"]),
    ("workspace-memory-timeline", [0, ALICE]),
    ("workspace-memory-changes", []),
    ("api-workspace-list", []),
    ("api-workspace-jid", [0, ALICE]),
    ("api-workspace-prompt", [0, ALICE]),
    ("api-workspace-secrets", []),
    ("api-workspace-audit-log", []),
    ("api-workspace-revision", ["REVISION"]),
    ("api-workspace-memory-timeline", [0, ALICE]),
    ("api-workspace-memory-changes", []),
    ("api-workspace-source", [0, ALICE, "memory.md"]),
    ("api-workspace-global-source", [0, "identity.md"]),
    ("api-workspace-session-source", [0, ALICE, "20250601-143022.jsonl"]),
]


@pytest.fixture
def tree(tmp_path: Path, settings) -> Path:
    """The demo memory root, plus a folder outside it that a symlinked JID points to."""
    root = tmp_path / "memory"
    shutil.copytree(DEMO, root)
    (root / ALICE / "instructions.md").write_text("Alice's own rules.\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in ("identity.md", "memory.md", "instructions.md"):
        (outside / name).write_text("outside\n")
    shutil.copy(root / ALICE / "history.jsonl", outside / "history.jsonl")
    (root / "link-outside").symlink_to(outside, target_is_directory=True)
    settings.SESSIONVIEWER_MEMORY_ROOTS = [str(root)]
    return tmp_path


@pytest.fixture
def revision(tree: Path) -> Revision:
    return Revision.objects.create(
        root=str((tree / "memory").resolve()),
        jid="",
        filename="identity.md",
        before="old\n",
        after="Pwned.\n",
    )


def snapshot(folder: Path) -> dict[str, bytes | None]:
    return {
        str(path.relative_to(folder)): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def make_user(name: str, group: str | None) -> User:
    user = User.objects.create_user(name, password="pw")
    if group:
        user.groups.add(Group.objects.get(name=group))
    return user


def url_for(name: str, args: list, jid: str, revision: Revision) -> str:
    args = [revision.id if a == "REVISION" else a for a in args]
    # reverse() would quote a crafted JID; put it in raw, as an attacker would send it.
    return reverse(name, args=[PLACEHOLDER if a == PLACEHOLDER else a for a in args]).replace(
        PLACEHOLDER, jid
    )


def post_data(data: dict, tree: Path) -> dict:
    # A valid version for every file involved, so only the permission or path check can refuse.
    return {**data, "version": ws.file_version(tree / "memory" / "identity.md")}


@pytest.mark.parametrize(("name", "args", "data"), WRITE_URLS)
def test_anonymous_users_cannot_write(client, tree, revision, name, args, data):
    before = snapshot(tree)
    response = client.post(url_for(name, args, ALICE, revision), post_data(data, tree))
    assert response.status_code in (302, 401, 403)
    if response.status_code == 302:
        assert response["Location"].startswith(reverse("login"))
    assert snapshot(tree) == before
    assert not AuditEvent.objects.exists() and Revision.objects.count() == 1


@pytest.mark.parametrize(("name", "args", "data"), WRITE_URLS)
def test_viewers_cannot_write(client, tree, revision, name, args, data):
    client.force_login(make_user("vera", "viewers"))
    before = snapshot(tree)
    response = client.post(url_for(name, args, ALICE, revision), post_data(data, tree))
    assert response.status_code == 403
    assert snapshot(tree) == before
    assert not AuditEvent.objects.exists() and Revision.objects.count() == 1


@pytest.mark.parametrize(("name", "args", "data"), WRITE_URLS)
def test_users_without_a_role_cannot_write(client, tree, revision, name, args, data):
    client.force_login(make_user("nobody", None))
    before = snapshot(tree)
    assert client.post(url_for(name, args, ALICE, revision), post_data(data, tree)).status_code == 403
    assert snapshot(tree) == before


@pytest.mark.parametrize(("name", "args", "data"), WRITE_URLS)
def test_write_urls_refuse_get(client, tree, revision, name, args, data):
    client.force_login(make_user("edith", "editors"))
    before = snapshot(tree)
    assert client.get(url_for(name, args, ALICE, revision)).status_code == 405
    assert snapshot(tree) == before


@pytest.mark.parametrize("jid", CRAFTED_JIDS)
@pytest.mark.parametrize(("name", "args", "data"), JID_WRITE_URLS)
def test_crafted_jids_are_refused_and_nothing_is_written(client, tree, revision, name, args, data, jid):
    client.force_login(make_user("edith", "editors"))
    before = snapshot(tree)
    response = client.post(url_for(name, args, jid, revision), post_data(data, tree))
    assert response.status_code in (400, 404)
    assert snapshot(tree) == before
    assert not AuditEvent.objects.exists() and Revision.objects.count() == 1


@pytest.mark.parametrize("jid", CRAFTED_JIDS)
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("workspace-jid", [0, PLACEHOLDER]),
        ("workspace-prompt", [0, PLACEHOLDER]),
        ("workspace-memory-timeline", [0, PLACEHOLDER]),
        ("api-workspace-memory-timeline", [0, PLACEHOLDER]),
        ("api-workspace-jid", [0, PLACEHOLDER]),
        ("api-workspace-prompt", [0, PLACEHOLDER]),
        ("api-workspace-source", [0, PLACEHOLDER, "memory.md"]),
        ("api-workspace-session-source", [0, PLACEHOLDER, "20250601-143022.jsonl"]),
        ("api-workspace-edit", [0, PLACEHOLDER, "memory.md"]),
        ("api-workspace-remove", [0, PLACEHOLDER, "instructions.md"]),
        ("api-workspace-new", [0, PLACEHOLDER]),
        ("api-workspace-forget", [0, PLACEHOLDER]),
    ],
)
def test_crafted_jids_are_not_found_when_reading(client, tree, revision, name, args, jid):
    client.force_login(make_user("edith", "editors"))
    assert client.get(url_for(name, args, jid, revision)).status_code in (400, 404)


@pytest.mark.parametrize(("name", "args"), [item for item in EDIT_PAGES if item[0].startswith("api-")])
def test_anonymous_requests_for_the_edit_twins_get_401(client, tree, name, args):
    assert client.get(reverse(name, args=args)).status_code == 401


@pytest.mark.parametrize(
    "filename", ["..", "..%2Fidentity.md", "history.jsonl", "knowledge.jsonl", "%2Fetc%2Fpasswd"]
)
def test_file_names_outside_the_allow_list_cannot_be_saved(client, tree, revision, filename):
    client.force_login(make_user("edith", "editors"))
    before = snapshot(tree)
    url = reverse("workspace-save", args=[0, ALICE, "FILE"]).replace("FILE", filename)
    response = client.post(url, {"text": "Pwned.\n", "version": "absent"})
    assert response.status_code in (400, 404)
    assert snapshot(tree) == before


def test_a_revision_naming_a_crafted_jid_cannot_be_restored(client, tree):
    client.force_login(make_user("edith", "editors"))
    crafted = Revision.objects.create(
        root=str((tree / "memory").resolve()),
        jid="link-outside",
        filename="identity.md",
        before=None,
        after="x\n",
    )
    before = snapshot(tree)
    response = client.post(reverse("workspace-revision-restore", args=[crafted.id]), {"version": "absent"})
    assert response.status_code == 404
    assert snapshot(tree) == before


def test_a_root_index_out_of_range_is_not_found(client, tree, revision):
    client.force_login(make_user("edith", "editors"))
    before = snapshot(tree)
    response = client.post(reverse("workspace-forget-run", args=[1, ALICE]))
    assert response.status_code == 404
    assert snapshot(tree) == before


def test_a_symlink_in_files_leading_outside_is_not_served(client, tree, revision):
    client.force_login(make_user("vera", "viewers"))
    (tree / "memory" / ALICE / "files" / "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_x.txt").symlink_to(
        tree / "outside" / "memory.md"
    )
    response = client.get(
        reverse("workspace-file", args=[0, ALICE, "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10_x.txt"])
    )
    assert response.status_code == 404


@pytest.mark.parametrize(("name", "args"), EDIT_PAGES)
def test_viewers_cannot_open_the_edit_forms_and_confirmations(client, tree, name, args):
    client.force_login(make_user("vera", "viewers"))
    assert client.get(reverse(name, args=args)).status_code == 403


@pytest.mark.parametrize(("name", "args"), EDIT_PAGES)
def test_editors_can_open_the_edit_forms_and_confirmations(client, tree, name, args):
    client.force_login(make_user("edith", "editors"))
    assert client.get(reverse(name, args=args)).status_code == 200


@pytest.mark.parametrize(("name", "args"), READ_PAGES)
def test_viewers_can_read(client, tree, revision, name, args):
    client.force_login(make_user("vera", "viewers"))
    response = client.get(url_for(name, args, ALICE, revision))
    assert response.status_code == 200
    if name.startswith("workspace-"):
        assert b"Create override" not in response.content and b"Restore this revision" not in response.content


@pytest.mark.parametrize(("name", "args"), [item for item in READ_PAGES if item[0].startswith("api-")])
def test_anonymous_api_requests_get_401(client, tree, revision, name, args):
    assert client.get(url_for(name, args, ALICE, revision)).status_code == 401


@pytest.mark.parametrize(("name", "args"), [item for item in READ_PAGES if item[0].startswith("workspace-")])
def test_anonymous_page_requests_go_to_the_login_page(client, tree, revision, name, args):
    response = client.get(url_for(name, args, ALICE, revision))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
