"""The thread snapshot: a transcript read back from it matches one built from the entries."""

import io
import re
import sys
from pathlib import Path

import orjson
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessionviewer import row_codec, threads, transcripts
from sessionviewer.index import index_roots, rows
from sessionviewer.models import Entry, Session, Source, ThreadSnapshot
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts import snapshots, store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import generate  # noqa: E402 (bench/ is not a package)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True, params=[snapshots.PIECE, 3], ids=["pieces", "small-pieces"])
def piece_size(request, monkeypatch) -> int:
    """Each test with pieces of the real size, and of 3 items: then every fixture's thread
    spans pieces, and calls and their results fall in different ones."""
    monkeypatch.setattr(snapshots, "PIECE", request.param)
    return request.param


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


def shape(t: transcripts.Transcript, session: Session) -> dict:
    """What a page may ask of a transcript, asked item by item: a snapshot's answers come
    from its pieces and the index, a built one's from its dicts."""
    ids = set(Entry.objects.filter(session=session).values_list("entry_id", flat=True))
    blocks = [(i, b) for i, item in enumerate(t.items) for b in range(len(item.entry.blocks))]
    return {
        "items": [
            (i.entry.line, i.entry.id, i.compacted, i.summary, tuple(i.alternatives), i.current)
            for i in t.items
        ],
        "leaf": t.thread.leaf_id,
        "leaves": list(t.thread.leaves),
        "branch_points": {k: [tuple(p) for p in v] for k, v in t.thread.branch_points.items()},
        "compactions": [i.entry.line for i in t.thread.compactions],
        "positions": {x: t.positions.get(x) for x in ids},
        "results": {at: t.results.get(at) for at in blocks if t.results.get(at) is not None},
        "absorbed": {at for at in blocks if at in t.absorbed},
        "owner": {i: t.owner.get(i) for i in range(len(t.items)) if t.owner.get(i) is not None},
        "noise": ({i for i in range(len(t.items)) if i in t.noise}, len(t.noise)),
        "compaction_items": t.compactions,
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
        assert shape(restored, session) == shape(built, session), session.key
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


def test_the_index_command_prepares_the_long_sessions_it_did_not_touch_left_unprepared(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    ids = list(Session.objects.values_list("id", flat=True))
    transcripts.prepare_snapshots(ids)
    assert transcripts.unprepared_sessions() == []
    older, missing = ids[:2]
    old = ThreadSnapshot.objects.get(session_id=older, leaf="")
    old.data = {**old.data, "layout": snapshots.LAYOUT - 1}  # as an upgrade would find it
    old.save()
    ThreadSnapshot.objects.filter(session_id=missing).delete()  # a pass cut off before preparing it
    assert sorted(transcripts.unprepared_sessions()) == sorted([older, missing])

    call_command("index", verbosity=0, stdout=io.StringIO())  # every file unchanged: nothing touched

    assert transcripts.unprepared_sessions() == []
    assert ThreadSnapshot.objects.get(session_id=older, leaf="").data["layout"] == snapshots.LAYOUT
    assert ThreadSnapshot.objects.filter(session_id=missing, leaf="").exists()


def test_another_branch_of_a_long_session_reads_back_from_its_snapshot(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    for session in Session.objects.filter(format="claude_code"):
        leaves = transcripts.transcript(session).thread.leaves
        for leaf in leaves:
            built = transcripts.transcript(session, leaf)
            transcripts.clear_cache()
            restored = transcripts.transcript(session, leaf)
            assert isinstance(restored.items[0], transcripts.LazyItem)
            assert shape(restored, session) == shape(built, session), (session.key, leaf)


def whole(snapshot: ThreadSnapshot) -> dict:
    """A snapshot's data with its pieces'."""
    return {**snapshot.data, "pieces": [p.data for p in snapshot.pieces.order_by("number")]}


def snapshot_data() -> dict:
    return {(s.session_id, s.leaf): whole(s) for s in ThreadSnapshot.objects.all()}


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
    assert any(
        data["compactions"] and any(p["summaries"] for p in data["pieces"]) for data in prepared.values()
    )
    assert any(data["noise_count"] for data in prepared.values())


def test_prepare_snapshots_loads_no_entry_text_but_compaction_summaries(demo, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    loaded = []

    def recording(batch, rules):
        for row in batch:
            loaded.append((row[rows_index("extra")], row[-1]))
        return light_entries_from_rows(batch, rules)

    light_entries_from_rows = rows.light_entries_from_rows
    monkeypatch.setattr(rows, "light_entries_from_rows", recording)
    transcripts.prepare_snapshots(list(Session.objects.values_list("id", flat=True)))
    assert len(loaded) == Entry.objects.count()
    texts = [text for extra, text in loaded if text]
    assert texts  # the demo's compaction summary, which its banner shows
    assert all('"is_compact_summary":true' in extra for extra, text in loaded if text)


def rows_index(column: str) -> int:
    return row_codec.LIGHT_COLUMNS.index(column)


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
    """Each snapshot as a page reads it: another branch's with the active leaf renamed to the
    one the active thread has grown to since it was built."""
    found = {}
    for s in ThreadSnapshot.objects.filter(session=session):
        data = whole(s)
        if s.leaf:
            store._rename_leaf(data, *store._active_leaf_renamed(s))
        data.pop("branches_leaf", None)
        found[s.leaf] = (s.version, data)
    return found


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
    rebuilt = snapshots_of(session)
    # Each split is a root of its own: the ones before it would share every reply with
    # it, and each pass would settle copies over all of them.
    Source.objects.all().delete()
    return extended, rebuilt


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


# Files where some appended lines make extend_thread give up (a second compaction, a clock
# stepped back): their snapshots are built again, and must come out the same.
GIVE_UP = ("two_compactions.jsonl", "clock_stepped_back_with_summary.jsonl")
# The other files go in groups of about as many lines, one test each, so that xdist spreads
# them over its workers: every split of every file is two passes and three snapshot builds,
# and as one test it took 143 s of a CI run's PostgreSQL half, alone at its end.
FILE_GROUPS = 4


def _file_groups() -> list[list[Path]]:
    groups: list[list[Path]] = [[] for _ in range(FILE_GROUPS)]
    lines = [0] * FILE_GROUPS
    files = [
        (path.read_bytes().count(b"\n"), path) for path in appended_sessions() if path.name not in GIVE_UP
    ]
    for count, path in sorted(files, key=lambda file: (-file[0], file[1].name)):
        smallest = lines.index(min(lines))
        groups[smallest].append(path)
        lines[smallest] += count
    return groups


def _every_split_extends_as_it_builds(tmp_path, files: list[Path]) -> None:
    for n, path in enumerate(files):
        lines = path.read_bytes().splitlines(keepends=True)
        for split in range(1, len(lines)):
            extended, rebuilt = extended_and_rebuilt(tmp_path / f"{n}-{split}", lines, split)
            assert extended == rebuilt, (path.name, split)


@pytest.mark.parametrize("group", range(FILE_GROUPS))
def test_a_snapshot_extended_by_appended_lines_equals_one_built_again(tmp_path, extensions, group):
    _every_split_extends_as_it_builds(tmp_path, _file_groups()[group])
    assert sum(extensions) > 10  # these files' splits extend


def test_a_snapshot_built_again_when_extending_gives_up_equals_one_built_anew(tmp_path, extensions):
    files = [path for path in appended_sessions() if path.name in GIVE_UP]
    assert len(files) == len(GIVE_UP)
    _every_split_extends_as_it_builds(tmp_path, files)
    assert any(extensions) and not all(extensions)  # some splits extend, the others are built again


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

    def recording(batch, rules):
        loaded.extend(row[rows_index("line")] for row in batch)
        return real(batch, rules)

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


def test_an_append_leaves_other_branches_snapshots_as_they_are_and_the_page_renames_the_leaf(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    lines = long_session(12)
    for n in range(3):  # three abandoned branches off u3, u4, u5, written before u6
        rewind = {**orjson.loads(lines[n + 4]), "uuid": f"b{n}", "parentUuid": f"u{n + 3}"}
        lines.insert(6 + n, orjson.dumps(rewind) + b"\n")
    more = long_session(14)[12:]  # u12 and u13 go on from u11, the active leaf
    session = index_file(tmp_path, lines)
    transcripts.prepare_snapshots([session.id])
    branches = dict(
        ThreadSnapshot.objects.filter(session=session).exclude(leaf="").values_list("leaf", "data")
    )
    assert sorted(branches) == ["b0", "b1", "b2"]
    assert all("u11" in data["leaves"] for data in branches.values())

    session = index_file(tmp_path, [*lines, *more])
    assert transcripts.prepare_snapshots([session.id]) == 1  # extended
    after = ThreadSnapshot.objects.filter(session=session).exclude(leaf="")
    assert dict(after.values_list("leaf", "data")) == branches  # not read, not written
    assert set(after.values_list("version", flat=True)) == {transcripts.version_text(session)}
    transcripts.clear_cache()
    for leaf in branches:
        t = transcripts.transcript(session, leaf)
        assert isinstance(t.items[0], transcripts.LazyItem)  # from its snapshot
        assert "u13" in t.thread.leaves and "u11" not in t.thread.leaves
        assert t.thread.leaves[-1] == "u13"


def test_a_thread_read_from_its_snapshot_makes_no_item_for_its_compactions_until_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    made = generate.generate_large(tmp_path / "gen", 0.6, seed=3)
    lines = Path(made["path"]).read_bytes().splitlines(keepends=True)
    session = index_file(tmp_path / "s", lines)
    transcripts.prepare_snapshots([session.id])
    built = [(i.entry.line, i.summary) for i in transcripts.transcript(session).thread.compactions]
    transcripts.clear_cache()
    t = transcripts.transcript(session)
    assert isinstance(t.items, store.LazyItems) and built
    assert t.items.made == {}  # a long session's thousands of compactions: none made yet
    assert [(i.entry.line, i.summary) for i in t.thread.compactions] == built
    assert t.thread.compactions[-1] is t.items[t.compactions[-1]]


def test_a_rewritten_file_loses_its_snapshots(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)
    session = index_file(tmp_path, long_session(10))
    transcripts.prepare_snapshots([session.id])
    session = index_file(tmp_path, long_session(4))
    assert not ThreadSnapshot.objects.filter(session=session).exists()


def test_the_live_update_from_a_snapshot_is_the_one_built_from_the_entries(demo, client):
    client.force_login(User.objects.create_superuser("root", password="pw"))
    for session in Session.objects.filter(kind="main", format="claude_code"):
        lines = Entry.objects.filter(session=session).order_by("line").values_list("line", flat=True)
        calls = [b.call_id for e in transcripts.load_entries(session) for b in e.blocks if b.call_id]
        pending = "".join(f"&_pending={c}" for c in calls)
        for after in list(lines)[::5]:
            url = reverse("session-detail", args=[session.id]) + f"?_after={after}{pending}"
            built = without_csrf(client.get(url, HTTP_HX_REQUEST="true").content)
            transcripts.clear_cache()
            restored = without_csrf(client.get(url, HTTP_HX_REQUEST="true").content)
            assert restored == built, (session.key, after)


@pytest.fixture
def pieces_read(monkeypatch) -> list:
    """The numbers of the snapshot pieces read, in order."""
    read = []
    real = store._raw_pieces

    def recording(snapshot_id, numbers):
        read.extend(sorted(numbers))
        return real(snapshot_id, numbers)

    monkeypatch.setattr(store, "_raw_pieces", recording)
    return read


def test_a_first_screen_reads_only_the_pieces_it_shows(tmp_path, client, pieces_read, piece_size):
    session = index_file(tmp_path, long_session(5000))
    transcripts.prepare_snapshots([session.id])
    pieces = ThreadSnapshot.objects.get(session=session, leaf="").pieces.count()
    transcripts.clear_cache()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    response = client.get(reverse("session-detail", args=[session.id]))
    assert b'id="entry-u0"' in response.content
    assert pieces_read and max(pieces_read) <= 2 * transcripts.CHUNK // piece_size < pieces - 1


def test_a_permalink_and_a_live_update_read_only_the_pieces_around_them(
    tmp_path, client, pieces_read, piece_size
):
    session = index_file(tmp_path, long_session(5000))
    transcripts.prepare_snapshots([session.id])
    transcripts.clear_cache()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    url = reverse("session-detail", args=[session.id])
    response = client.get(url + "?entry=u4000")
    assert b'id="entry-u4000"' in response.content
    assert min(pieces_read) >= (4000 - 2 * transcripts.CHUNK) // piece_size  # and "earlier"
    pieces_read.clear()
    transcripts.clear_cache()
    response = client.get(url + "?_after=4990", HTTP_HX_REQUEST="true")
    assert b'id="entry-u4999"' in response.content and b'id="entry-u4989"' not in response.content
    assert min(pieces_read) >= (4990 - 200) // piece_size  # entries load 200 items at a time


def test_a_snapshot_built_again_while_a_worker_reads_it_is_read_anew(tmp_path, client):
    """Another process rebuilt the snapshot this one had begun reading (its pieces are gone):
    the page drops the thread it built and answers from the new snapshot, not an error."""
    session = index_file(tmp_path, long_session(2500))
    transcripts.prepare_snapshots([session.id])
    transcripts.clear_cache()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    url = reverse("session-detail", args=[session.id])
    assert client.get(url).status_code == 200  # the first screen's pieces, read and kept
    ThreadSnapshot.objects.filter(session=session).delete()
    transcripts.prepare_snapshots([session.id])  # as another worker would, meanwhile
    response = client.get(url + "?entry=u2400")
    assert b'id="entry-u2400"' in response.content
    assert client.get(reverse("api-session-detail", args=[session.id]), {"_offset": 2300}).status_code == 200


def written_to_snapshots(queries) -> int:
    """Characters of SQL that wrote snapshots and their pieces."""
    writes = [q["sql"] for q in queries if q["sql"].startswith(("INSERT", "UPDATE"))]
    return sum(len(sql) for sql in writes if "threadsnapshot" in sql or "threadpiece" in sql)


def test_an_append_writes_what_the_new_line_adds_whatever_the_length_of_the_session(tmp_path, piece_size):
    written = []
    for count in (3000, 6000):
        lines = long_session(count + 1)
        session = index_file(tmp_path / str(count), lines[:count])
        transcripts.prepare_snapshots([session.id])
        session = index_file(tmp_path / str(count), lines)
        with CaptureQueriesContext(connection) as queries:
            assert transcripts.prepare_snapshots([session.id]) == 1
        written.append(written_to_snapshots(queries.captured_queries))
    # The snapshot keeps the first line of each piece, a number per PIECE lines; else what
    # the new line adds, as long as the session is.
    assert 0 < written[1] < written[0] + 100 + 8 * (6000 - 3000) // piece_size


def test_a_long_session_without_a_snapshot_loads_only_the_rows_its_first_screen_shows(
    tmp_path, client, monkeypatch
):
    session = index_file(tmp_path, long_session(3000))
    ThreadSnapshot.objects.filter(session=session).delete()
    transcripts.clear_cache()
    whole = []
    real = row_codec.entries_from_rows

    def recording(batch):
        found = real(batch)
        whole.extend(e.line for e in found)
        return found

    monkeypatch.setattr(row_codec, "entries_from_rows", recording)
    client.force_login(User.objects.create_superuser("root", password="pw"))
    response = client.get(reverse("session-detail", args=[session.id]))
    assert b'id="entry-u0"' in response.content
    assert 0 < len(whole) <= 2 * transcripts.CHUNK + 200  # the rows shown, a block at a time
    assert ThreadSnapshot.objects.filter(session=session, leaf="").exists()
