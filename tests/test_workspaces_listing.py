"""What a memory root holds: global files, JID folders, rooms, attachments, sessions."""

from datetime import UTC
from pathlib import Path

import pytest

from sessionviewer import workspaces as ws
from sessionviewer.workspaces import (
    UnsafePath,
    global_file_info,
    jid_entry,
    list_files,
    list_sessions,
    list_workspace,
    listing,
)

from .workspace_files import (
    OVERRIDES,
    SAMPLES,
    UUID,
    make_tree,
)

# Workspace listing


def test_list_workspace_reports_global_files_of_the_sample(sample):
    workspace = list_workspace(sample)
    assert [f.name for f in workspace.global_files] == ["identity.md", "personality.md", "instructions.md"]
    identity = workspace.global_file("identity.md")
    assert identity.present and identity.in_effect
    assert identity.size == (SAMPLES / "identity.md").stat().st_size
    assert identity.mtime.tzinfo is UTC


def test_list_workspace_lists_users_and_rooms_of_the_sample(sample):
    jids = {j.jid: j for j in list_workspace(sample).jids}
    assert sorted(jids) == ["alice@example.com", "bob@example.com", "room@conference.example.com"]
    assert [j for j, entry in jids.items() if entry.is_room] == ["room@conference.example.com"]
    assert sorted(jids["alice@example.com"].files) == ["history.jsonl", "memory.md", "user.md"]
    assert jids["alice@example.com"].dirs == ("sessions",)
    assert jids["bob@example.com"].has("context.md")


def test_whitespace_only_override_does_not_count_in_the_listing(sample):
    room = next(j for j in list_workspace(sample).jids if j.is_room)
    assert room.files["personality.md"].blank
    assert room.overrides == ("instructions.md",)


def test_jid_entry_matches_the_listing_of_that_jid(sample):
    listed = next(j for j in list_workspace(sample).jids if j.jid == "room@conference.example.com")
    entry = jid_entry(sample, "room@conference.example.com")
    assert (entry.files, entry.dirs, entry.other, entry.overrides, entry.is_room) == (
        listed.files,
        listed.dirs,
        listed.other,
        listed.overrides,
        listed.is_room,
    )


def test_jid_entry_does_not_look_at_other_jids(sample, monkeypatch):
    seen = []
    real = listing.describe_jid_dir
    monkeypatch.setattr(listing, "describe_jid_dir", lambda jid, path: seen.append(jid) or real(jid, path))
    jid_entry(sample, "bob@example.com")
    assert seen == ["bob@example.com"]


@pytest.mark.parametrize("jid", ["..", "nobody@example.com", "a/b"])
def test_jid_entry_refuses_what_resolve_jid_dir_refuses(sample, jid):
    with pytest.raises(UnsafePath):
        jid_entry(sample, jid)


def test_global_file_info_matches_the_listing(sample):
    assert global_file_info(sample, "identity.md") == list_workspace(sample).global_file("identity.md")
    with pytest.raises(UnsafePath):
        global_file_info(sample, "user.md")


def test_list_workspace_reports_a_missing_global_file():
    workspace = list_workspace(OVERRIDES)
    assert not workspace.global_file("personality.md").present
    own = next(j for j in workspace.jids if j.jid == "own_personality@example.com")
    assert own.overrides == ("personality.md",)


def test_list_workspace_detects_a_room_by_muc_senders(tmp_path):
    make_tree(
        tmp_path,
        {
            "lobby@example.org/history.jsonl": '{"type":"session","version":1,"created":"x","jid":"lobby@example.org"}\n'
            '{"type":"message","role":"user","content":"hi","sender":"ann@muc"}\n',
            "bob@example.org/history.jsonl": '{"type":"message","role":"user","content":"hi","sender":"bob@example.org"}\n',
        },
    )
    rooms = {j.jid: j.is_room for j in list_workspace(tmp_path).jids}
    assert rooms == {"bob@example.org": False, "lobby@example.org": True}


@pytest.mark.parametrize(
    "jid", ["x@conference.a.org", "x@muc.a.org", "x@rooms.a.org", "x@chat.a.org", "x@MUC.A.ORG"]
)
def test_room_domains_are_recognised(jid):
    assert ws.is_room(jid)


def test_list_workspace_lists_other_files_and_folders(tmp_path):
    make_tree(tmp_path, {"README.md": "x", "alice@example.com/notes.txt": "x", "alice@example.com/tmp/": ""})
    workspace = list_workspace(tmp_path)
    assert workspace.other == ("README.md",)
    assert workspace.jids[0].other == ("notes.txt", "tmp/")


def test_list_workspace_skips_a_jid_symlink_pointing_outside(tmp_path):
    make_tree(tmp_path, {"outside/": "", "root/alice@example.com/": ""})
    (tmp_path / "root" / "evil@example.com").symlink_to(tmp_path / "outside")
    workspace = list_workspace(tmp_path / "root")
    assert [j.jid for j in workspace.jids] == ["alice@example.com"]
    assert workspace.skipped == ("evil@example.com",)


def test_list_workspace_reports_a_persona_file_that_is_not_utf8(tmp_path):
    make_tree(tmp_path, {"identity.md": b"\xff"})
    identity = list_workspace(tmp_path).global_file("identity.md")
    assert identity.present and not identity.in_effect
    assert "UTF-8" in identity.error


# Files and sessions


def test_list_files_strips_the_uuid_prefix_and_guesses_the_type(tmp_path):
    jid_dir = make_tree(
        tmp_path / "a@b.c",
        {
            f"files/{UUID}_photo.png": b"\x89PNG",
            f"files/{UUID.upper()}_notes.txt": "hello",
            f"files/{UUID}_report.pdf": b"%PDF",
            "files/plain-name.bin": b"\x00",
            f"files/{UUID}_logo.svg": "<svg/>",
        },
    )
    found = {f.original_name: f for f in list_files(jid_dir)}
    assert sorted(found) == ["logo.svg", "notes.txt", "photo.png", "plain-name.bin", "report.pdf"]
    assert (found["photo.png"].mime_type, found["photo.png"].previewable, found["photo.png"].size) == (
        "image/png",
        True,
        4,
    )
    assert found["notes.txt"].previewable
    assert found["notes.txt"].name == f"{UUID.upper()}_notes.txt"
    assert not found["report.pdf"].previewable
    assert found["plain-name.bin"].mime_type == "application/octet-stream"
    assert not found["logo.svg"].previewable


def test_list_files_without_a_files_folder_is_empty(tmp_path):
    assert list_files(tmp_path) == []


def test_list_files_lists_a_link_leaving_the_root_with_its_error_and_nothing_of_its_target(tmp_path):
    make_tree(tmp_path, {"secret.txt": "x", "a@b.c/files/": ""})
    (tmp_path / "a@b.c" / "files" / f"{UUID}_x.txt").symlink_to(tmp_path / "secret.txt")
    [found] = list_files(tmp_path / "a@b.c")
    assert (found.original_name, found.path, found.size, found.mtime, found.previewable) == (
        "x.txt",
        None,
        None,
        None,
        False,
    )
    assert "leads outside its folder" in found.error


def bad_entry(folder: Path, kind: str, name: str, make_fifo) -> None:
    """Puts at folder/name a dangling link, a link loop, a folder or a FIFO."""
    folder.mkdir(parents=True, exist_ok=True)
    if kind == "dangling":
        (folder / name).symlink_to(folder / "gone")
    elif kind == "loop":
        (folder / name).symlink_to(folder / name)
    elif kind == "folder":
        (folder / name).mkdir()
    else:
        make_fifo(folder / name)


BAD_ENTRIES = [
    ("dangling", "a broken link"),
    ("loop", "loop of links"),
    ("folder", "not a regular file (a folder)"),
    ("fifo", "not a regular file (a FIFO)"),
]


@pytest.mark.parametrize(("kind", "error"), BAD_ENTRIES)
def test_list_files_lists_a_bad_entry_with_its_error_beside_the_good_ones(tmp_path, fifo, kind, error):
    jid_dir = make_tree(tmp_path / "a@b.c", {f"files/{UUID}_good.txt": "fine"})
    bad_entry(jid_dir / "files", kind, f"{UUID}_bad.txt", fifo)
    bad, good = list_files(jid_dir)
    assert (bad.original_name, bad.path, bad.previewable) == ("bad.txt", None, False)
    assert error in bad.error
    assert (good.original_name, good.size, good.error) == ("good.txt", 4, None)
    assert fifo.opened == []


def test_list_files_of_a_files_folder_leaving_the_root_is_one_error_listing_nothing_outside(tmp_path):
    make_tree(tmp_path, {"elsewhere/secret.txt": "x", "a@b.c/": ""})
    (tmp_path / "a@b.c" / "files").symlink_to(tmp_path / "elsewhere")
    [found] = list_files(tmp_path / "a@b.c")
    assert (found.name, found.path) == ("files/", None)
    assert "leads outside its JID folder" in found.error


def test_list_sessions_puts_the_active_session_first_then_archives_newest_first(tmp_path):
    jid_dir = make_tree(
        tmp_path / "a@b.c",
        {
            "history.jsonl": "{}\n",
            "sessions/20250601-143022.md": "### user\nhi\n",
            "sessions/20250601-143022-1.jsonl": "{}\n",
            "sessions/20250701-090000.jsonl": "{}\n",
            "sessions/readme.txt": "",
        },
    )
    sessions = list_sessions(jid_dir)
    assert [(s.name, s.active, s.format) for s in sessions] == [
        ("history.jsonl", True, "jsonl"),
        ("sessions/20250701-090000.jsonl", False, "jsonl"),
        ("sessions/20250601-143022-1.jsonl", False, "jsonl"),
        ("sessions/20250601-143022.md", False, "md"),
    ]


@pytest.mark.parametrize(("kind", "error"), BAD_ENTRIES)
def test_list_sessions_lists_a_bad_history_and_archive_with_their_errors(tmp_path, fifo, kind, error):
    jid_dir = make_tree(tmp_path / "a@b.c", {"sessions/20250601-143022.jsonl": "{}\n"})
    bad_entry(jid_dir, kind, "history.jsonl", fifo)
    bad_entry(jid_dir / "sessions", kind, "20250701-090000.jsonl", fifo)
    sessions = list_sessions(jid_dir)
    assert [(s.name, s.active, s.path is None) for s in sessions] == [
        ("history.jsonl", True, True),
        ("sessions/20250701-090000.jsonl", False, True),
        ("sessions/20250601-143022.jsonl", False, False),
    ]
    assert error in sessions[0].error and error in sessions[1].error
    assert sessions[2].error is None
    assert fifo.opened == []


def test_list_sessions_lists_an_archive_leaving_the_root_with_its_error(tmp_path):
    make_tree(tmp_path, {"secret.jsonl": "{}\n", "a@b.c/sessions/": ""})
    (tmp_path / "a@b.c" / "sessions" / "20250101-000000.jsonl").symlink_to(tmp_path / "secret.jsonl")
    [found] = list_sessions(tmp_path / "a@b.c")
    assert (found.name, found.path, found.size) == ("sessions/20250101-000000.jsonl", None, None)
    assert "leads outside its folder" in found.error


def test_list_sessions_of_sample_alice_includes_the_legacy_markdown_archive(sample):
    names = [s.name for s in list_sessions(sample / "alice@example.com")]
    assert names == ["history.jsonl", "sessions/20250601-143022.md"]


def test_a_history_link_leaving_the_root_is_not_read_to_tell_a_room(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"type":"message","role":"user","content":"hi","sender":"nick@muc"}\n')
    root = make_tree(tmp_path / "memory", {"alice@example.com/memory.md": "notes"})
    (root / "alice@example.com" / "history.jsonl").symlink_to(outside)
    assert ws.is_room("alice@example.com", root / "alice@example.com") is False
