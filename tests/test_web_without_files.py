"""A web host with none of the files: every page answers from the index alone.

The demo sessions of every format and the Fluux memory tree (with a history: an agent's
write, an editor's save) are indexed, every page reachable from the list, Activity and the
workspaces is requested by following its links (href and hx-get, so every tool view, fold
and chunk), then the folders are renamed away and every one of them is requested again, as
a web host that has only the database would.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from html import unescape
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest
from django.conf import settings
from django.test import Client
from django.urls import Resolver404, resolve, reverse

from sessionviewer import transcripts
from sessionviewer import workspaces as ws
from sessionviewer.index import index_roots
from sessionviewer.models import MemorySnapshot, Revision, Session, Source
from sessionviewer.roots import RootSpec
from sessionviewer.workspaces import secrets

from .claude_files import write_tool_turn
from .conftest import FIXTURES

pytestmark = pytest.mark.django_db

DEMO = Path(settings.BASE_DIR) / "demo"
FORMATS = {
    "claude/projects": "claude_code",
    "go-agent/sessions": "go_agent",
    "openclaw/agents": "openclaw",
    "myclaw/sessions": "openclaw",
    "pi/sessions": "pi",
    "fluux/memory": "fluux_xmpp",
    "codex/sessions": "codex",
    "opencode": "opencode",
    "gemini/tmp": "gemini_cli",
}
ALICE = "alice@example.com"
LEAK = "- Shop API key: sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv\n"
LINK = re.compile(r'(?:href|hx-get)="(/[^"]*)"')
# Pages not to follow: leaving, the admin, and what a link only offers to download.
SKIP = ("/accounts/logout/", "/admin/", "/static/", "/favicon.ico")
# One request per kind of URL: the same route with the same parameters, whatever the line
# or block it names; a session's page of each format, and each session's transcript and exports.
SAME_KIND = ("line", "block", "revision_id")
EACH_SESSION = ("session-detail", "session-export-html", "session-export-md", "api-session-raw")
# Without the files: what the index does not keep the bytes of (a session's file, a JID's
# downloads, kept by name, size and hash) is a 404 naming the machine; a write's confirmation
# a 409 saying the same. A transcript's source lines send to its transcript.
WITHOUT_FILES = {
    "api-session-raw": 404,
    "workspace-file": 404,
    "workspace-new": 409,
    "workspace-forget": 409,
    "workspace-remove": 409,
    "api-workspace-new": 409,
    "api-workspace-forget": 409,
    "api-workspace-remove": 409,
}


def kind_of(url: str) -> tuple | None:
    parts = urlsplit(url)
    try:
        match = resolve(parts.path)
    except Resolver404:
        return None
    kwargs = dict(match.kwargs)
    if "session_id" in kwargs and (match.url_name not in EACH_SESSION or parts.query):
        kwargs["session_id"] = FORMAT_OF.get(kwargs["session_id"])
    kwargs = tuple(sorted((k, v) for k, v in kwargs.items() if k not in SAME_KIND))
    return match.url_name, kwargs, tuple(sorted(k for k, _ in parse_qsl(parts.query)))


FORMAT_OF: dict[int, str] = {}  # session id -> format, filled once the index is


def crawl(client: Client, starts: list[str], seen_kinds: set, limit: int = 1500) -> dict[str, int]:
    """Every page reachable from starts, one of each kind not seen yet: url -> status (the
    status it ends on, redirects followed)."""
    statuses: dict[str, int] = {}
    queue = list(starts)
    while queue and len(statuses) < limit:
        url = queue.pop(0)
        kind = kind_of(url)
        if kind is None or kind in seen_kinds or url.startswith(SKIP):
            continue
        seen_kinds.add(kind)
        response = client.get(url, follow=True)
        statuses[url] = response.status_code
        if response.status_code == 200 and response["Content-Type"].startswith("text/html"):
            body = b"".join(response.streaming_content) if response.streaming else response.content
            queue += [unescape(link) for link in LINK.findall(body.decode())]
    return statuses


@pytest.fixture
def host(tmp_path, settings, admin_user):
    """The demo tree indexed with a memory history, and an admin's client."""
    demo = shutil.copytree(DEMO, tmp_path / "demo")
    # Every tool view, and a text long enough to load its rest in parts.
    shutil.copy(
        FIXTURES / "claude_code/tool_views.jsonl",
        demo / "claude/projects/-home-demo-projects-webshop/tool_views.jsonl",
    )
    shutil.copy(FIXTURES / "go_agent/tool_views.jsonl", demo / "go-agent/sessions/tool_views.jsonl")
    long_text = [{"type": "text", "text": "A long answer. " * 20_000}]
    write_tool_turn(
        demo / "claude/projects/-home-demo-projects-webshop/long.jsonl", "Write it all out", long_text
    )
    for path in [demo, *demo.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    specs = [RootSpec(demo / folder, fmt) for folder, fmt in FORMATS.items()]
    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in specs]
    settings.SESSIONVIEWER_MEMORY_ROOTS = []
    memory = demo / "fluux/memory"
    index_roots(specs, memory=[memory])
    later = time.time() + 60
    for path in (memory / ALICE / "memory.md", memory / "instructions.md"):
        path.write_text(path.read_text() + LEAK)
        os.utime(path, (later, later))
    index_roots(specs, memory=[memory])
    client = Client()
    client.force_login(admin_user)
    path = memory / ALICE / "user.md"
    saved = client.post(
        reverse("workspace-save", args=[0, ALICE, "user.md"]),
        {"text": "Alice likes tea.\n", "version": ws.file_version(path)},
    )
    assert saved.status_code == 302
    transcripts.clear_cache()
    FORMAT_OF.update(Session.objects.values_list("id", "format"))
    return demo, client


def starts() -> list[str]:
    return [
        reverse("session-list"),
        reverse("session-list") + "?q=the",
        reverse("activity"),
        reverse("workspace-list"),
        reverse("workspace-search") + "?q=tea",
        reverse("workspace-secrets"),
        reverse("workspace-memory-changes"),
        reverse("workspace-memory-findings"),
        reverse("workspace-audit-log"),
        reverse("workspace-memory-as-of", args=[0, ALICE]) + "?at=2000-01-01",
        *(reverse("session-export-md", args=[s.id]) for s in Session.objects.all()),
        *(reverse("session-export-md", args=[s.id]) + "?_all=1" for s in Session.objects.all()),
        *(reverse("session-detail", args=[s.id]) for s in Session.objects.all()),
    ]


def found(report: dict) -> list[tuple]:
    return sorted((f["file"], f["line"], f["kind"], f["masked"], f["url"]) for f in report["findings"])


def move_away(demo: Path) -> None:
    """The files are gone, and so is what this process kept of them: a fresh web host."""
    demo.rename(demo.with_name("demo-elsewhere"))
    transcripts.clear_cache()
    secrets.FINDINGS.clear()


def test_every_page_answers_from_the_index_alone(host):
    demo, client = host
    kinds: set = set()
    before = crawl(client, starts(), kinds)
    pages = {kind_of(url)[0] for url in before}
    # The crawl reached every page type, every format's transcript and its fragments.
    for name in (
        "session-list", "session-detail", "session-cost", "session-entry-text", "session-export-html",
        "session-export-md", "api-session-raw", "activity", "project-detail", "workspace-jid",
        "workspace-memory-timeline", "workspace-memory-as-of", "workspace-secrets", "workspace-search",
        "workspace-edit", "workspace-source", "workspace-prompt", "workspace-memory-findings",
    ):  # fmt: skip
        assert name in pages, name
    assert any("_offset=" in url for url in before), "no chunk was loaded"
    assert {s.format for s in Session.objects.all()} == set(FORMATS.values())
    assert not [url for url, status in before.items() if status >= 500]

    move_away(demo)
    after = {url: client.get(url, follow=True).status_code for url in before}
    after |= crawl(client, starts(), kinds)  # what only a host without the files links to
    wrong = {
        url: (before.get(url), status)
        for url, status in after.items()
        if status != WITHOUT_FILES.get(kind_of(url)[0], 200) and before.get(url, 200) == 200
    }
    assert not wrong


def test_the_secrets_report_and_memory_search_read_the_index_without_the_tree(host):
    demo, client = host
    secrets_before = client.get(reverse("api-workspace-secrets")).json()
    search_before = client.get(reverse("api-workspace-search"), {"q": "tea"}).json()
    assert secrets_before["findings"] and search_before["hits"]

    move_away(demo)
    secrets_after = client.get(reverse("api-workspace-secrets")).json()
    assert found(secrets_after) == found(secrets_before)
    # In the memory files, exactly as the tree's scan placed them (a transcript's column
    # counts in its entry's text, which the index keeps, not in the JSON line).
    memory_files = [
        f for f in secrets_before["findings"] if "/sessions/" not in f["file"] and "history" not in f["file"]
    ]
    assert memory_files and all(f in secrets_after["findings"] for f in memory_files)
    assert client.get(reverse("api-workspace-search"), {"q": "tea"}).json() == search_before
    page = client.get(reverse("workspace-secrets")).content.decode()
    assert "sk-a" in page and "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv" not in page


def test_the_raw_download_of_a_file_elsewhere_names_its_machine_and_path(host):
    demo, client = host
    session = Session.objects.filter(format="claude_code").first()
    Source.objects.update(machine="laptop-7")
    url = reverse("api-session-raw", args=[session.id])
    assert client.get(url).status_code == 200

    move_away(demo)
    page = client.get(url, HTTP_ACCEPT="text/html")
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")
    text = page.content.decode()
    assert "laptop-7" in text and session.path in unescape(text)
    answer = client.get(url)
    assert answer.status_code == 404
    assert answer.json()["machine"] == "laptop-7" and answer.json()["path"] == session.path


def test_the_editor_of_a_tree_elsewhere_is_read_only_and_refuses_every_write(host):
    demo, client = host
    Source.objects.update(machine="fluux-host")
    MemorySnapshot.objects.update(machine="fluux-host")  # the tree's indexer is that machine's
    Revision.objects.update(machine="fluux-host")  # and its editor's saves were made there
    memory = demo / "fluux/memory"
    before = (memory / ALICE / "memory.md").read_bytes()
    move_away(demo)
    page = client.get(reverse("workspace-edit", args=[0, ALICE, "memory.md"]))
    assert page.status_code == 200
    text = page.content.decode()
    assert "fluux-host" in text and "<fieldset disabled>" in text and ">Save</button>" not in text
    assert "sk-ant-api03" in text  # the text as the index holds it
    jid = client.get(reverse("workspace-jid", args=[0, ALICE])).content.decode()
    assert "fluux-host" in jid and "memory.md" in jid
    writes = [
        reverse("workspace-save", args=[0, ALICE, "memory.md"]),
        reverse("workspace-global-save", args=[0, "identity.md"]),
        reverse("workspace-remove-run", args=[0, ALICE, "identity.md"]),
        reverse("workspace-new-run", args=[0, ALICE]),
        reverse("workspace-forget-run", args=[0, ALICE]),
        reverse("workspace-revision-restore", args=[Revision.objects.get().id]),
        reverse("workspace-revision-restore-before", args=[Revision.objects.get().id]),
    ]
    for url in writes:
        refused = client.post(url, {"text": "x", "version": "0"})
        assert refused.status_code == 409, url
        assert "fluux-host" in refused.content.decode(), url
    for name in ("api-workspace-new", "api-workspace-forget"):
        refused = client.get(reverse(name, args=[0, ALICE]))
        assert refused.status_code == 409 and "fluux-host" in refused.json()["error"]
    demo.with_name("demo-elsewhere").rename(demo)
    assert (memory / ALICE / "memory.md").read_bytes() == before


def test_the_editor_works_where_the_tree_is_mounted(host):
    demo, client = host
    path = demo / "fluux/memory" / ALICE / "memory.md"
    page = client.get(reverse("workspace-edit", args=[0, ALICE, "memory.md"])).content.decode()
    assert "held-elsewhere" not in page and ">Save</button>" in page
    saved = client.post(
        reverse("workspace-save", args=[0, ALICE, "memory.md"]),
        {"text": "Alice likes coffee.\n", "version": ws.file_version(path)},
    )
    assert saved.status_code == 302 and path.read_text() == "Alice likes coffee.\n"
