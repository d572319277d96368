"""The thread snapshot: a transcript read back from it matches one built from the entries."""

import re
import sys
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from sessionviewer import threads, transcripts
from sessionviewer.index import index_roots, rows
from sessionviewer.models import Entry, Session, ThreadSnapshot
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import generate  # noqa: E402 (bench/ is not a package)

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


# --- Snapshots extended by appended lines ---------------------------------------------------------

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "claude_code"


def appended_sessions() -> list:
    """Claude Code files with compactions, branches, tool results, sidechains and odd lines."""
    demo = FIXTURES.parent.parent.parent / "demo" / "claude" / "projects" / "-home-demo-projects-webshop"
    return sorted(FIXTURES.glob("*.jsonl")) + sorted(demo.glob("*.jsonl"))


def index_file(root, lines: list[bytes]) -> Session:
    path = root / "-home-dev-projects-x" / "s.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    index_roots([RootSpec(root, "claude_code")])
    return Session.objects.get(path=str(path))


def snapshots_of(session: Session) -> dict:
    return {s.leaf: (s.version, s.data) for s in ThreadSnapshot.objects.filter(session=session)}


def extended_and_rebuilt(root, lines: list[bytes], split: int, end: int | None = None) -> tuple[dict, dict]:
    """The snapshots of lines[:end] after lines[:split] was indexed, and built anew."""
    lines = lines[:end]
    session = index_file(root, lines[:split])
    transcripts.prepare_snapshots([session.id])
    session = index_file(root, lines)
    transcripts.prepare_snapshots([session.id])
    extended = snapshots_of(session)
    ThreadSnapshot.objects.filter(session=session).delete()
    transcripts.prepare_snapshots([session.id])
    return extended, snapshots_of(session)


@pytest.fixture
def extensions(monkeypatch) -> list:
    """How each extend_thread call went: True when it extended, False when it gave up."""
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    calls = []
    real = threads.extend_thread

    def recording(tail, entries):
        found = real(tail, entries)
        calls.append(found is not None)
        return found

    monkeypatch.setattr(threads, "extend_thread", recording)
    return calls


def test_a_snapshot_extended_by_appended_lines_equals_one_built_again(tmp_path, extensions):
    for n, path in enumerate(appended_sessions()):
        lines = path.read_bytes().splitlines(keepends=True)
        for split in range(1, len(lines)):
            root = tmp_path / f"{n}-{split}"
            extended, rebuilt = extended_and_rebuilt(root, lines, split)
            assert extended == rebuilt, (path.name, split)
    assert sum(extensions) > 50 and not all(extensions)  # most splits extend, the rest are built again


def test_a_generated_session_extended_by_appended_lines_equals_one_built_again(tmp_path, extensions):
    made = generate.generate_large(tmp_path / "gen", 0.6, seed=3)
    lines = Path(made["path"]).read_bytes().splitlines(keepends=True)
    assert any(b"compact_boundary" in line for line in lines)
    for split in range(len(lines) // 3, len(lines), 7):
        extended, rebuilt = extended_and_rebuilt(tmp_path / str(split), lines, split, split + 3)
        assert extended == rebuilt, split
    assert sum(extensions) > len(extensions) // 2


def long_session(count: int) -> list[bytes]:
    lines, parent = [], None
    for n in range(count):
        role = "user" if n % 2 == 0 else "assistant"
        message = {"role": role, "content": f"line {n}"}
        if role == "assistant":
            message = {
                **message,
                "id": f"m{n}",
                "model": "m",
                "content": [{"type": "text", "text": f"line {n}"}],
            }
        line = {
            "type": role,
            "uuid": f"u{n}",
            "parentUuid": parent,
            "sessionId": "s",
            "timestamp": f"2026-01-01T{n // 3600 % 24:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
            "message": message,
        }
        lines.append(orjson.dumps(line) + b"\n")
        parent = f"u{n}"
    return lines


def test_an_append_to_a_long_session_reads_only_the_new_rows(tmp_path, monkeypatch):
    lines = long_session(3000)
    session = index_file(tmp_path, lines[:2999])
    assert transcripts.prepare_snapshots([session.id]) == 1
    session = index_file(tmp_path, lines)
    loaded = []
    real = rows.light_entries_from_rows

    def recording(batch):
        loaded.extend(row[rows_index("line")] for row in batch)
        return real(batch)

    monkeypatch.setattr(rows, "light_entries_from_rows", recording)
    assert transcripts.prepare_snapshots([session.id]) == 1
    assert loaded == [3000]
    t = transcripts.transcript(session)
    assert isinstance(t.items[0], transcripts.LazyItem)  # read from the extended snapshot
    assert t.thread.leaf_id == "u2999"
    assert len(t.items) == 3000


def test_a_branch_in_the_appended_lines_builds_the_thread_again(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    lines = long_session(10)
    rewind = orjson.loads(lines[9])
    rewind.update(uuid="r9", parentUuid="u7", timestamp="2026-01-01T01:00:00Z")
    rewind["message"]["id"] = "r9"
    extended, rebuilt = extended_and_rebuilt(tmp_path, [*lines, orjson.dumps(rewind) + b"\n"], 10)
    assert extended == rebuilt
    assert rebuilt[""][1]["leaf_id"] == "r9"
    assert len(rebuilt) == 2  # the old leaf is another branch now


def test_a_rewritten_file_loses_its_snapshots(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    session = index_file(tmp_path, long_session(10))
    transcripts.prepare_snapshots([session.id])
    session = index_file(tmp_path, long_session(4))
    assert not ThreadSnapshot.objects.filter(session=session).exists()
