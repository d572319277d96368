"""The readers' rule for files (readers/files.py): a path that is not a regular file is
refused without waiting on it, and a link is read only while it resolves inside its root."""

import shutil
from pathlib import Path

import pytest

from sessionviewer import readers
from sessionviewer.readers import files
from sessionviewer.readers.files import NotRegularFile, OutsideRoot

from .conftest import within_seconds

FIXTURES = Path(__file__).parent / "fixtures"
SESSION = FIXTURES / "claude_code" / "interrupted_turn.jsonl"


@pytest.mark.parametrize(("fmt", "name"), [("claude_code", "x.jsonl"), ("codex", "rollout-x.jsonl")])
def test_reading_a_file_swapped_for_a_fifo_refuses_it_without_waiting(tmp_path, fifo, fmt, name):
    path = fifo(tmp_path / name)
    with pytest.raises(NotRegularFile, match=r"not a regular file \(a FIFO\)"):
        within_seconds(lambda: readers.read_session(path, fmt))
    assert fifo.opened == []


def test_reading_a_markdown_history_swapped_for_a_fifo_says_so_without_waiting(tmp_path, fifo):
    path = fifo(tmp_path / "20250101-000000.md")
    with pytest.raises(NotRegularFile, match=r"a FIFO"):
        within_seconds(lambda: readers.read_session(path, "fluux_xmpp"))
    assert fifo.opened == []


def test_reading_a_link_out_of_its_root_refuses_it_and_names_only_the_link(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"secret": "kept outside"}\n')
    root = tmp_path / "root"
    root.mkdir()
    (root / "x.jsonl").symlink_to(outside)
    with pytest.raises(OutsideRoot) as refused:
        readers.read_session(root / "x.jsonl", "claude_code", root=root)
    assert str(refused.value) == "a link that leads outside its root: not read"
    assert refused.value.filename == str(root / "x.jsonl")


def test_reading_a_link_inside_its_root_follows_it(tmp_path):
    root = tmp_path / "root"
    (root / "kept").mkdir(parents=True)
    shutil.copy(SESSION, root / "kept" / "real.jsonl")
    (root / "x.jsonl").symlink_to(root / "kept" / "real.jsonl")
    assert readers.read_session(root / "x.jsonl", "claude_code", root=root).entries


def test_a_root_given_through_a_link_is_still_its_own_root(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    shutil.copy(SESSION, real / "x.jsonl")
    (tmp_path / "link").symlink_to(real)
    assert readers.read_session(tmp_path / "link" / "x.jsonl", "claude_code", root=tmp_path / "link").entries


def test_a_folder_beside_the_root_whose_name_starts_alike_is_outside_it(tmp_path):
    (tmp_path / "root").mkdir()
    (tmp_path / "root-other").mkdir()
    (tmp_path / "root-other" / "x.jsonl").write_text("{}\n")
    (tmp_path / "root" / "x.jsonl").symlink_to(tmp_path / "root-other" / "x.jsonl")
    with pytest.raises(OutsideRoot):
        files.check_inside(tmp_path / "root" / "x.jsonl", tmp_path / "root")


def test_first_object_of_a_fifo_is_none_without_waiting(tmp_path, fifo):
    path = fifo(tmp_path / "x.jsonl")
    assert within_seconds(lambda: readers.first_object(path)) is None
    assert fifo.opened == []


def test_listing_names_a_fifo_among_the_files_so_that_its_read_can_say_why_not(tmp_path, fifo):
    (tmp_path / "a.jsonl").write_text("{}\n")
    fifo(tmp_path / "b.jsonl")
    (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere")
    assert readers.listing(tmp_path) == (["a.jsonl", "b.jsonl"], [])
