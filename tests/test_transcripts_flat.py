"""A long session's snapshots built over columns (transcripts.flat) hold what the snapshots
of threads built from entries hold, piece by piece."""

import shutil
import sys
from array import array
from pathlib import Path

import orjson
import pytest

from sessionviewer import threads, transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session, ThreadPiece, ThreadSnapshot
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import flat, snapshots, store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import generate  # noqa: E402 (bench/ is not a package)

pytestmark = pytest.mark.django_db

FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(autouse=True, params=[snapshots.PIECE, 3], ids=["pieces", "small-pieces"])
def piece_size(request, monkeypatch) -> int:
    monkeypatch.setattr(snapshots, "PIECE", request.param)
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


def built_both_ways(monkeypatch, build) -> tuple[dict, dict, list]:
    """build()'s snapshots over columns, then with flat refusing every session (built from
    entries), and the (session, leaf) of each build over columns that succeeded."""
    over_columns = []
    real = flat.build_snapshots

    def recording(session, leaves, leaf=None):
        built = real(session, leaves, leaf)
        over_columns.append((session.id, leaf))
        return built

    def refuse(session, leaves, leaf=None):
        raise flat.Fallback("built from entries")

    monkeypatch.setattr(flat, "build_snapshots", recording)
    columns = build()
    monkeypatch.setattr(flat, "build_snapshots", refuse)
    return columns, build(), over_columns


@pytest.mark.parametrize(
    "near, recent, summaries",
    [(flat.NEAR, flat.RECENT, flat.SUMMARIES_KEPT), (2, 1, 1)],
    ids=["columns", "far-steps"],
)
def test_snapshots_over_columns_hold_what_snapshots_of_built_threads_hold(
    sessions, monkeypatch, near, recent, summaries
):
    # far-steps: every step back past 1 kept in the columns' dicts, every reply's parent's
    # message id read again from the index, every summary's text read again for each thread.
    monkeypatch.setattr(flat, "NEAR", near)
    monkeypatch.setattr(flat, "RECENT", recent)
    monkeypatch.setattr(flat, "SUMMARIES_KEPT", summaries)
    columns, entries, built_flat = built_both_ways(monkeypatch, lambda: prepared(sessions))
    assert columns.keys() == entries.keys()
    for key, data in entries.items():
        assert columns[key] == data, key
    # Two have broken parents: odd_shapes, and secrets_appended (the lines appended to
    # secrets_in_every_block, alone: its first line's parent is in the other file).
    assert len({session for session, _ in built_flat}) == len(sessions) - 2 > 30
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


def reply(uuid: str, parent: str, message_id: str, n: int) -> bytes:
    message = {
        "id": message_id,
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "hi"}],
    }
    return orjson.dumps(
        {
            "type": "assistant",
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": "s",
            "timestamp": f"2026-01-01T00:00:0{n}Z",
            "message": message,
        }
    )


def test_a_reply_continued_after_another_reply_is_read_again_for_its_message_id(tmp_path, monkeypatch):
    # a2 goes on with a1's reply m1 after b's m2 was written: with one message id kept, the
    # tree reads m1 again to see a2 is a1's region; a3 then branches off that region.
    path = tmp_path / "-home-dev-projects-x" / "s.jsonl"
    path.parent.mkdir()
    lines = [
        line("u", None, "user", 1),
        reply("a1", "u", "m1", 2),
        reply("b", "u", "m2", 3),
        reply("a2", "a1", "m1", 4),
        reply("a3", "a1", "m3", 5),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    index_roots([RootSpec(tmp_path, "claude_code")])
    session = Session.objects.get()
    monkeypatch.setattr(flat, "RECENT", 1)
    columns = prepared([session.id])
    monkeypatch.setattr(
        flat, "build_snapshots", lambda session, leaves: (_ for _ in ()).throw(flat.Fallback())
    )
    entries = prepared([session.id])
    assert columns == entries
    assert entries[(session.id, "")]["branch_points"] == {"u": [["a1", "a3"], ["b", "b"]]}


def size_of(value) -> int:
    """Bytes held by a tree's columns and the containers inside them."""
    if isinstance(value, array | bytearray):
        return sys.getsizeof(value)
    if isinstance(value, dict):
        return sys.getsizeof(value) + sum(size_of(k) + size_of(v) for k, v in value.items())
    if isinstance(value, list | tuple | set):
        return sys.getsizeof(value) + sum(size_of(v) for v in value)
    if hasattr(value, "__slots__"):
        return sum(size_of(getattr(value, name)) for name in value.__slots__)
    return sys.getsizeof(value)


def test_a_long_session_s_tree_keeps_a_few_bytes_a_line(tmp_path):
    # Ints by line (4 or 8 bytes each: parent, region, clock, reply) made a 2 GB file's
    # tree about 50 MB; steps back of a byte each keep it a few.
    made = generate.generate_large(tmp_path / "gen", 4, seed=5)
    index_roots([RootSpec(Path(made["roots"][0][1]), "claude_code")])
    session = Session.objects.get()
    tree = flat.Tree(session.id)
    tree.name_lines(session.id)
    by_branch = {"ids", "branch_points", "branches", "children", "leaves"}  # a few per branch point
    held = sum(size_of(value) for name, value in vars(tree).items() if name not in by_branch)
    assert tree.count == made["lines"] > 2000
    assert held / tree.count < 8


def test_a_long_session_s_summaries_are_not_all_held_while_its_threads_are_written(tmp_path, monkeypatch):
    made = generate.generate_large(tmp_path / "gen", 4, seed=3)
    index_roots([RootSpec(Path(made["roots"][0][1]), "claude_code")])
    session = Session.objects.get(path=made["path"])
    held = []
    real = flat.Tree.summary_text

    def recording(tree, source):
        text = real(tree, source)
        held.append(len(tree.summaries))
        return text

    monkeypatch.setattr(flat.Tree, "summary_text", recording)
    monkeypatch.setattr(flat, "SUMMARIES_KEPT", 2)
    assert flat.build_snapshots(session, 3) >= 1
    assert len(held) > 2 and max(held) <= 2  # more summaries read than were ever held
    pieces = ThreadPiece.objects.filter(snapshot__session=session, snapshot__leaf="")
    assert sum(len(p.data["summaries"]) for p in pieces) > 2


def snapshots_a_page_builds(sessions: list[int]) -> dict:
    """Each session's active thread and every branch, as pages opening them build them
    (no pass prepared them)."""
    ThreadSnapshot.objects.all().delete()
    transcripts.clear_cache()
    for session in Session.objects.filter(id__in=sessions):
        for leaf in [None, *transcripts.transcript(session).thread.leaves]:
            transcripts.transcript(session, leaf)
    return {
        (s.session_id, s.leaf): {**s.data, "pieces": [p.data for p in s.pieces.order_by("number")]}
        for s in ThreadSnapshot.objects.all()
    }


def test_a_page_builds_a_thread_no_pass_prepared_over_columns_as_it_was_built_from_entries(
    sessions, monkeypatch
):
    columns, entries, over_columns = built_both_ways(monkeypatch, lambda: snapshots_a_page_builds(sessions))
    assert columns.keys() == entries.keys()
    for key, data in entries.items():
        assert columns[key] == data, key
    assert len({s for s, _ in over_columns}) > 30  # all but those with broken parents
    assert any(leaf is not None for _, leaf in over_columns)  # branches, not only active threads


def test_a_long_session_opened_before_its_snapshot_exists_holds_no_entry_per_line(sessions, monkeypatch):
    def refuse(entries, leaf=None):
        raise AssertionError("a thread built from one object per line")

    generated = Session.objects.get(path__contains="/gen/")
    ThreadSnapshot.objects.filter(session=generated).delete()
    transcripts.clear_cache()
    monkeypatch.setattr(threads, "build_thread", refuse)
    t = transcripts.transcript(generated)
    assert ThreadSnapshot.objects.filter(session=generated, leaf="").exists()
    assert len(t.items) > 300
    for leaf in t.thread.leaves[:3]:
        assert transcripts.transcript(generated, leaf).thread.leaf_id == leaf


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 300])
def test_flags_spread_a_byte_each_read_as_the_bits_do(size):
    bits = flat.Bits(size)
    for index in range(0, size, 3):
        bits.set(index)
    assert list(bits.spread()) == [bits[index] for index in range(size)]
