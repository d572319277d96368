"""The thread snapshot: a transcript read back from it matches one built from the entries."""

import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from sessionviewer import transcripts
from sessionviewer.index import index_roots, rows
from sessionviewer.models import Entry, Session, ThreadSnapshot
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import store

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(settings):
    roots = [
        RootSpec(settings.BASE_DIR / "demo" / "claude" / "projects", "claude_code"),
        RootSpec(settings.BASE_DIR / "demo" / "go-agent" / "sessions", "go_agent"),
        RootSpec(settings.BASE_DIR / "demo" / "fluux" / "memory", "fluux_xmpp"),
    ]
    settings.SESSIONVIEWER_ROOTS = [f"{r.format}={r.path}" for r in roots]
    index_roots(roots)
    transcripts.clear_cache()
    yield
    transcripts.clear_cache()


def shape(t: transcripts.Transcript) -> dict:
    return {
        "items": [
            (i.entry.line, i.entry.id, i.compacted, i.summary, tuple(i.alternatives), i.current)
            for i in t.items
        ],
        "leaf": t.thread.leaf_id,
        "leaves": list(t.thread.leaves),
        "branch_points": {k: [tuple(p) for p in v] for k, v in t.thread.branch_points.items()},
        "compactions": [i.entry.line for i in t.thread.compactions],
        "positions": t.positions,
        "results": t.results,
        "absorbed": t.absorbed,
        "owner": t.owner,
    }


def test_building_the_active_thread_saves_a_snapshot_of_it(demo):
    session = Session.objects.filter(format="claude_code", kind="main").first()
    transcripts.transcript(session)
    assert ThreadSnapshot.objects.get(session=session, leaf="").version == transcripts.version_text(session)


def test_a_transcript_read_from_its_snapshot_matches_the_built_one(demo):
    for session in Session.objects.all():
        built = transcripts.transcript(session)
        transcripts.clear_cache()
        restored = transcripts.transcript(session)
        assert isinstance(restored.items[0], transcripts.LazyItem) if restored.items else True
        assert shape(restored) == shape(built), session.key
        transcripts.clear_cache()


def test_a_stale_snapshot_is_not_used(demo):
    session = Session.objects.filter(format="go_agent").first()
    transcripts.transcript(session)
    ThreadSnapshot.objects.filter(session=session).update(version="an older file")
    transcripts.clear_cache()
    t = transcripts.transcript(session)
    assert not isinstance(t.items[0], transcripts.LazyItem)
    assert ThreadSnapshot.objects.get(session=session, leaf="").version == transcripts.version_text(session)


def without_csrf(html: bytes) -> bytes:
    # The CSRF token is masked anew on every response.
    return re.sub(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+', rb"\1", html)


def test_the_page_from_a_snapshot_is_the_page_built_from_the_entries(demo, client):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    for session in Session.objects.filter(kind="main"):
        url = reverse("session-detail", args=[session.id])
        built = without_csrf(client.get(url).content)
        transcripts.clear_cache()
        restored = without_csrf(client.get(url).content)
        assert restored == built, session.key


def test_prepare_snapshots_builds_the_thread_of_long_touched_sessions(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    ids = list(Session.objects.values_list("id", flat=True))
    built = transcripts.prepare_snapshots(ids)
    assert ThreadSnapshot.objects.filter(leaf="").count() == len(ids)
    assert built == ThreadSnapshot.objects.count() > len(ids)  # the demo has a branch: its other leaf too
    assert transcripts.prepare_snapshots(ids) == 0  # up to date already


def test_another_branch_of_a_long_session_reads_back_from_its_snapshot(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    for session in Session.objects.filter(format="claude_code"):
        leaves = transcripts.transcript(session).thread.leaves
        for leaf in leaves:
            built = transcripts.transcript(session, leaf)
            transcripts.clear_cache()
            restored = transcripts.transcript(session, leaf)
            assert isinstance(restored.items[0], transcripts.LazyItem)
            assert shape(restored) == shape(built), (session.key, leaf)


def snapshot_data() -> dict:
    return {(s.session_id, s.leaf): s.data for s in ThreadSnapshot.objects.all()}


def test_prepared_snapshots_hold_what_snapshots_built_from_whole_entries_hold(demo, monkeypatch):
    # prepare_snapshots loads entries without their text; the page builds from whole ones.
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    ids = list(Session.objects.values_list("id", flat=True))
    for session in Session.objects.all():
        t = transcripts.transcript(session)
        for leaf in t.thread.leaves:
            transcripts.transcript(session, leaf)
    built = snapshot_data()
    ThreadSnapshot.objects.all().delete()
    transcripts.prepare_snapshots(ids)
    prepared = snapshot_data()
    assert prepared.keys() <= built.keys()
    assert {key: built[key] for key in prepared} == prepared
    assert any(data["compactions"] and data["summaries"] for data in prepared.values())
    assert any(data["noise"] for data in prepared.values())


def test_prepare_snapshots_loads_no_entry_text_but_compaction_summaries(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    loaded = []

    def recording(batch):
        for row in batch:
            loaded.append((row[rows_index("extra")], row[-1]))
        return light_entries_from_rows(batch)

    light_entries_from_rows = rows.light_entries_from_rows
    monkeypatch.setattr(rows, "light_entries_from_rows", recording)
    transcripts.prepare_snapshots(list(Session.objects.values_list("id", flat=True)))
    assert len(loaded) == Entry.objects.count()
    texts = [text for extra, text in loaded if text]
    assert texts  # the demo's compaction summary, which its banner shows
    assert all('"is_compact_summary":true' in extra for extra, text in loaded if text)


def rows_index(column: str) -> int:
    return rows.LIGHT_COLUMNS.index(column)


def test_prepare_snapshots_reads_the_text_of_rows_indexed_before_text_facts_were_kept(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    ids = list(Session.objects.values_list("id", flat=True))
    transcripts.prepare_snapshots(ids)
    prepared = snapshot_data()
    ThreadSnapshot.objects.all().delete()
    Entry.objects.update(text_facts=0)
    transcripts.prepare_snapshots(ids)
    assert snapshot_data() == prepared
