"""The transcript's entries render to the same HTML as the templates did before they were made
cheaper (bench/README.md, "A transcript's entries"): every entry of the demo's sessions, the
hostile fixtures and the Claude Code, Go agent and OpenClaw fixture files, each page with and
without its noise, compared with HTML saved once from those templates.

A deliberate change to what an entry shows changes the saved HTML too: write it anew with
UPDATE_ENTRY_HTML=1, and read the diff before committing it."""

from __future__ import annotations

import gzip
import html
import os
import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.conf import settings

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec
from sessionviewer.templatetags.entries import date_text, permalink_query

from .demo_index import DEMO_SPECS
from .fixture_files import CLAUDE_PROJECT, FIXTURES
from .pages import detail_url, page, whole_page

pytestmark = pytest.mark.django_db

SAVED = FIXTURES / "entry_html" / "entries.html.gz"


def _copy_fixture_files(tmp_path: Path) -> list[RootSpec]:
    """The fixture files of three formats, each in the folder layout its format's discovery
    expects, and the hostile fixtures as they are."""
    claude = tmp_path / "claude" / CLAUDE_PROJECT
    claude.mkdir(parents=True)
    for n, path in enumerate(sorted((FIXTURES / "claude_code").glob("*.jsonl"))):
        shutil.copy(path, claude / f"00000000-0000-4000-8000-{n:012d}.jsonl")
    go = tmp_path / "go" / "sessions"
    go.mkdir(parents=True)
    for path in sorted((FIXTURES / "go_agent").glob("*.jsonl")):
        shutil.copy(path, go / path.name)
    openclaw = tmp_path / "openclaw" / "agents" / "main" / "sessions"
    openclaw.mkdir(parents=True)
    for path in sorted((FIXTURES / "openclaw").glob("*.jsonl")):
        shutil.copy(path, openclaw / path.name)
    shutil.copytree(FIXTURES / "hostile", tmp_path / "hostile")
    return [
        RootSpec(tmp_path / "claude" / "projects", "claude_code"),
        RootSpec(tmp_path / "go" / "sessions", "go_agent"),
        RootSpec(tmp_path / "openclaw" / "agents", "openclaw"),
        RootSpec(tmp_path / "hostile" / "go", "go_agent"),
        RootSpec(tmp_path / "hostile" / "fluux", "fluux_xmpp"),
        RootSpec(tmp_path / "hostile" / "claude", "claude_code"),
    ]


def _entries(client, session: Session, **params) -> str:
    """The session's entry list, every chunk loaded, with what differs from run to run (the
    session ids in links, the temporary folder) put in words."""
    url = detail_url(session)
    body = whole_page(client, url, page(client, url, **params))
    entries = body[body.index('<ol id="entry-list"') :]
    entries = entries.replace(str(settings.BASE_DIR), "BASE_DIR")
    return _without_ids(entries)


def _without_ids(html: str) -> str:
    """html with the database's row ids put in words: a session's in links, a finding's in its
    mark. They follow the sequences, which other tests in the same database advance (on
    PostgreSQL a test's rollback does not take a sequence back)."""
    html = re.sub(r"/sessions/\d+/", "/sessions/N/", html)
    html = re.sub(r'data-finding="\d+"', 'data-finding="N"', html)
    return re.sub(r"/findings/\d+/", "/findings/N/", html)


def _label(session: Session, tmp_path: Path) -> str:
    return f"{session.format} {session.path.replace(str(tmp_path), '').replace(str(settings.BASE_DIR), '')}"


def test_entries_render_as_they_did(client, viewer, tmp_path, settings):
    specs = DEMO_SPECS + _copy_fixture_files(tmp_path)
    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in specs]
    transcripts.clear_cache()
    index_roots(specs)
    sessions = sorted(Session.objects.all(), key=lambda s: _label(s, tmp_path))
    assert len(sessions) > 60
    rendered = "".join(
        f"\n===== {_label(session, tmp_path)} {shown}\n{_entries(client, session, **params)}"
        for session in sessions
        for shown, params in (("default", {}), ("all", {"_all": "1"}))
    )
    if os.environ.get("UPDATE_ENTRY_HTML"):
        SAVED.parent.mkdir(exist_ok=True)
        SAVED.write_bytes(gzip.compress(rendered.encode(), mtime=0))
    saved = _without_ids(gzip.decompress(SAVED.read_bytes()).decode())
    rendered = _without_ids(rendered)  # the labels' paths too, as on the saved side
    if rendered != saved:  # the first session that differs, and where, rather than megabytes
        for now, before in zip(rendered.split("\n===== "), saved.split("\n===== "), strict=False):
            if now != before:
                at = next(i for i, (a, b) in enumerate(zip(now, before, strict=False)) if a != b)
                assert now[max(0, at - 300) : at + 300] == before[max(0, at - 300) : at + 300]
        assert rendered == saved


@pytest.mark.parametrize(
    "query",
    [
        "",
        "_all=1",
        "entry=old&_offset=50",
        "q=caf%C3%A9&entry=x&_all=1&q=%3Cb%3E&_before=3&_read=9",
        "_offset=0&_after=12&leaf=a%20b&entry=",
    ],
)
def test_the_permalink_keeps_the_query_string_as_querystring_did(rf, query):
    """entries.permalink_query against Django's {% querystring %}, which the template used."""
    from django.template import engines

    request = rf.get("/sessions/1/?" + query)
    tag = engines["django"].from_string(
        "{% querystring entry=entry_id _offset=None _before=None _after=None _read=None %}"
    )
    for entry_id in ("a-1", "line:7", "x&y=<z>", "ü"):
        expected = html.unescape(tag.render({"entry_id": entry_id}, request))
        assert permalink_query(request.GET, entry_id) == expected


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/St_Johns"])
def test_the_entry_time_reads_as_the_date_filter_wrote_it(zone):
    """The head's <time> in the page's time zone, as {{ e.timestamp|date:... }} made it."""
    from django.template import engines
    from django.test import override_settings
    from django.utils.timezone import template_localtime

    with override_settings(TIME_ZONE=zone):
        tag = engines["django"].from_string("{{ t|date:'c' }} {{ t|date:'Y-m-d H:i:s' }}")
        for moment in (datetime(2025, 3, 30, 1, 30, 5, 123456, tzinfo=UTC), datetime(999, 1, 2, 3, 4, 5)):
            local = template_localtime(moment)
            assert f"{date_text(local, 'c')} {date_text(local, 'Y-m-d H:i:s')}" == tag.render({"t": moment})
