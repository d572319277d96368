"""The names and safe paths of a memory root: JIDs and file names that must not lead out."""

from pathlib import Path

import pytest

from sessionviewer import workspaces as ws
from sessionviewer.workspaces import (
    UnsafePath,
    resolve_jid_dir,
    resolve_member,
)

from .workspace_files import (
    UUID,
    make_tree,
)

# Path safety


def test_resolve_jid_dir_returns_the_real_folder(tmp_path):
    make_tree(tmp_path, {"alice@example.com/": ""})
    assert resolve_jid_dir(tmp_path, "alice@example.com") == (tmp_path / "alice@example.com").resolve()


@pytest.mark.parametrize(
    "jid",
    [
        "../x",
        "/etc",
        "a/b",
        "a\\b",
        "..",
        ".",
        "",
        "%2e%2e",
        "%2E%2E",
        "a%2Fb",
        "a%2fb",
        "a%5Cb",
        "a\x00b",
        "a..b",
    ],
)
def test_resolve_jid_dir_rejects_path_attacks(tmp_path, jid):
    make_tree(tmp_path / "root", {"a/b/": "", "x/": ""})
    with pytest.raises(UnsafePath):
        resolve_jid_dir(tmp_path / "root", jid)


def test_resolve_jid_dir_rejects_a_missing_folder(tmp_path):
    with pytest.raises(UnsafePath):
        resolve_jid_dir(tmp_path, "nobody@example.com")


def test_resolve_jid_dir_rejects_a_plain_file(tmp_path):
    make_tree(tmp_path, {"identity.md": "x"})
    with pytest.raises(UnsafePath):
        resolve_jid_dir(tmp_path, "identity.md")


def test_resolve_jid_dir_rejects_a_symlink_pointing_outside(tmp_path):
    make_tree(tmp_path, {"outside/secret.md": "x", "root/": ""})
    (tmp_path / "root" / "evil@example.com").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafePath):
        resolve_jid_dir(tmp_path / "root", "evil@example.com")


def test_resolve_jid_dir_rejects_a_symlink_to_a_nested_folder_inside_the_root(tmp_path):
    make_tree(tmp_path, {"alice@example.com/files/": ""})
    (tmp_path / "alias@example.com").symlink_to(tmp_path / "alice@example.com" / "files")
    with pytest.raises(UnsafePath):
        resolve_jid_dir(tmp_path, "alias@example.com")


def test_resolve_member_allows_a_file_that_does_not_exist_yet(tmp_path):
    assert resolve_member(tmp_path, "identity.md") == tmp_path.resolve() / "identity.md"


@pytest.mark.parametrize("name", ["../x", "/etc/passwd", "a/b", "..", "%2e%2e", "a%2Fb", "a%5cb", "a\\b"])
def test_resolve_member_rejects_path_attacks(tmp_path, name):
    with pytest.raises(UnsafePath):
        resolve_member(tmp_path, name)


def test_resolve_member_rejects_a_symlink_pointing_outside(tmp_path):
    make_tree(tmp_path, {"outside.md": "secret", "alice@example.com/": ""})
    (tmp_path / "alice@example.com" / "user.md").symlink_to(tmp_path / "outside.md")
    with pytest.raises(UnsafePath):
        resolve_member(tmp_path / "alice@example.com", "user.md")


def test_resolve_member_finds_files_and_sessions_entries(tmp_path):
    jid_dir = make_tree(tmp_path / "alice@example.com", {f"files/{UUID}_a.png": b"x", "sessions/": ""})
    assert resolve_member(jid_dir, f"{UUID}_a.png", "files") == jid_dir.resolve() / "files" / f"{UUID}_a.png"
    assert resolve_member(jid_dir, "20250601-143022.jsonl", "sessions").parent.name == "sessions"


def test_resolve_member_rejects_a_symlinked_files_folder_pointing_outside(tmp_path):
    make_tree(tmp_path, {"outside/photo.png": b"x", "alice@example.com/": ""})
    (tmp_path / "alice@example.com" / "files").symlink_to(tmp_path / "outside")
    with pytest.raises(UnsafePath):
        resolve_member(tmp_path / "alice@example.com", "photo.png", "files")


def test_resolve_member_rejects_an_unknown_subfolder(tmp_path):
    with pytest.raises(UnsafePath):
        resolve_member(tmp_path, "x.md", "..")


def test_read_regular_refuses_a_fifo_without_waiting_for_a_writer(tmp_path, fifo):
    path = fifo(tmp_path / "user.md")
    with pytest.raises(ws.NotRegularFile, match=r"a FIFO"):
        ws.read_regular(path)


def test_read_regular_refuses_a_folder_and_reads_a_file(tmp_path):
    (tmp_path / "memory.md").mkdir()
    (tmp_path / "notes.md").write_bytes(b"notes")
    with pytest.raises(ws.NotRegularFile, match=r"a folder"):
        ws.read_regular(tmp_path / "memory.md")
    assert ws.read_regular(tmp_path / "notes.md") == b"notes"


def test_read_regular_refuses_a_device(tmp_path):
    with pytest.raises(ws.NotRegularFile, match=r"a character device"):
        ws.read_regular(Path("/dev/null"))


def test_a_name_over_255_bytes_is_refused_before_the_file_system_sees_it(tmp_path):
    with pytest.raises(UnsafePath, match="longer than 255 bytes"):
        resolve_jid_dir(tmp_path, "a" * 256)
    with pytest.raises(UnsafePath, match="longer than 255 bytes"):
        resolve_member(tmp_path, "é" * 128)
