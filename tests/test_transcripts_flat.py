"""A long session's snapshots built over columns (transcripts.flat) hold what the snapshots
of threads built from entries hold, piece by piece."""

import shutil
import sys
from pathlib import Path

import orjson
import pytest

from sessionviewer import threads, transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session, ThreadSnapshot
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import flat, store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import generate  # noqa: E402 (bench/ is not a package)

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True, params=[store.PIECE, 3], ids=["pieces", "small-pieces"])
def piece_size(request, monkeypatch) -> int:
    monkeypatch.setattr(store, "PIECE", request.param)
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    return request.param


@pytest.fixture
def sessions(tmp_path, settings) -> list[int]:
    """The Claude Code fixtures (compactions, branches, sidechains, tool results, summary
    lines, broken parents), the demo's sessions and a generated one."""
    projects = tmp_path / "claude"
    for n, path in enumerate(sorted((FIXTURES / "claude_code").glob("*.jsonl"))):
        folder = projects / f"-home-dev-projects-p{n}"
        folder.mkdir(parents=True)
        shutil.copy(path, folder / path.name)
    made = generate.generate_large(tmp_path / "gen", 0.6, seed=3)
    demo = settings.BASE_DIR / "demo"
    index_roots(
        [
            RootSpec(projects, "claude_code"),
            RootSpec(Path(made["roots"][0][1]), "claude_code"),
            RootSpec(demo / "claude" / "projects", "claude_code"),
            RootSpec(demo / "go-agent" / "sessions", "go_agent"),
            RootSpec(demo / "fluux" / "memory", "fluux_xmpp"),
        ]
    )
    transcripts.clear_cache()
    return list(Session.objects.values_list("id", flat=True))


def prepared(ids: list[int]) -> dict:
    ThreadSnapshot.objects.all().delete()
    transcripts.prepare_snapshots(ids)
    return {
        (s.session_id, s.leaf): {**s.data, "pieces": [p.data for p in s.pieces.order_by("number")]}
        for s in ThreadSnapshot.objects.all()
    }


def test_snapshots_over_columns_hold_what_snapshots_of_built_threads_hold(sessions, monkeypatch):
    built_flat = []
    real = flat.build_snapshots

    def recording(session, leaves):
        built_flat.append(session.id)
        return real(session, leaves)

    monkeypatch.setattr(flat, "build_snapshots", recording)
    columns = prepared(sessions)
    fallbacks = len(sessions) - len(set(built_flat))

    def refuse(session, leaves):
        raise flat.Fallback("built from entries")

    monkeypatch.setattr(flat, "build_snapshots", refuse)
    entries = prepared(sessions)
    assert columns.keys() == entries.keys()
    for key, data in entries.items():
        assert columns[key] == data, key
    assert len(set(built_flat)) == len(sessions) > 30 and not fallbacks
    kinds = list(columns.values())
    assert any(data["compactions"] and any(p["summaries"] for p in data["pieces"]) for data in kinds)
    assert any(data["branch_points"] for data in kinds)
    assert any(data["tail"] for data in kinds)
    assert any(p["results"] for data in kinds for p in data["pieces"])


def line(uuid: str, parent: str | None, role: str, n: int) -> bytes:
    message = {"role": role, "content": f"line {n}"}
    if role == "assistant":
        message = {"id": f"m{n}", "role": role, "model": "m", "content": [{"type": "text", "text": "hi"}]}
    return orjson.dumps(
        {
            "type": role,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s",
            "timestamp": f"2026-01-01T00:00:0{n}Z",
            "message": message,
        }
    )


def test_a_file_with_broken_parents_is_built_from_its_entries(tmp_path):
    # Line 2's parent is written later: the thread built from entries names that.
    path = tmp_path / "-home-dev-projects-x" / "s.jsonl"
    path.parent.mkdir()
    lines = [line("a", None, "user", 1), line("b", "c", "assistant", 2), line("c", "a", "user", 3)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    index_roots([RootSpec(tmp_path, "claude_code")])
    session = Session.objects.get()
    with pytest.raises(flat.Fallback):
        flat.build_snapshots(session, store.PREPARE_LEAVES)
    problems = prepared([session.id])[(session.id, "")]["problems"]
    assert problems == ["line 2: parent 'c' is written later, at line 3; following line 1"]


def test_a_long_session_is_prepared_without_a_thread_of_entry_objects(sessions, monkeypatch):
    def refuse(entries, leaf=None):
        raise AssertionError("a thread built from one object per line")

    monkeypatch.setattr(threads, "build_thread", refuse)
    generated = Session.objects.get(path__contains="/gen/")
    assert transcripts.prepare_snapshots([generated.id]) >= 1
    assert ThreadSnapshot.objects.filter(session=generated, leaf="").exists()
