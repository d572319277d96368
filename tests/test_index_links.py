"""Links across files (index/links.py): the summary lines that title another file's session."""

from pathlib import Path

import orjson
import pytest

from sessionviewer.index import index_roots, links, passes
from sessionviewer.models import PendingWork, Session, Source
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db


def _claude_line(uuid: str, parent: str | None, role: str, text: str, session: str) -> str:
    return orjson.dumps(
        {
            "type": role,
            "uuid": uuid,
            "parentUuid": parent,
            "sessionId": session,
            "cwd": "/work/project",
            "timestamp": "2025-02-08T19:00:00Z",
            "message": {"role": role, "content": text},
        }
    ).decode()


def _summary_line(title: str, leaf: str) -> str:
    return orjson.dumps({"type": "summary", "summary": title, "leafUuid": leaf}).decode()


@pytest.fixture
def claude_project(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-work-project"
    folder.mkdir(parents=True)
    lines = [
        _claude_line("a1", None, "user", "first question", "A"),
        _claude_line("a2", "a1", "assistant", "x", "A"),
    ]
    (folder / "A.jsonl").write_text("\n".join(lines) + "\n")
    return tmp_path / "projects"


def _titles() -> dict[str, str]:
    return {Path(key).stem: title for key, title in Session.objects.values_list("key", "summary_title")}


def test_a_summary_whose_leaf_is_in_another_file_titles_that_files_session(claude_project):
    # Claude Code writes the summary of one session at the top of the next one's file.
    folder = claude_project / "-work-project"
    lines = [_summary_line("Fixing the parser", "a2"), _claude_line("b1", None, "user", "next", "B")]
    (folder / "B.jsonl").write_text("\n".join(lines) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    titles = _titles()
    assert titles["A"] == "Fixing the parser"
    assert titles["B"] == ""


def test_of_several_summaries_naming_one_session_the_last_written_wins(claude_project):
    folder = claude_project / "-work-project"
    first = [_summary_line("Old title", "a2"), _claude_line("b1", None, "user", "next", "B")]
    (folder / "B.jsonl").write_text("\n".join(first) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Old title"
    # Two more: a new title, then the stored one again, which must win as the last.
    more = [_summary_line("Newer title", "a2"), _summary_line("Old title", "a2")]
    with open(folder / "B.jsonl", "a") as handle:
        handle.write("\n".join(more) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Old title"
    with open(folder / "B.jsonl", "a") as handle:
        handle.write(_summary_line("Newest title", "a2") + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Newest title"


def test_a_summary_titles_its_own_files_session_before_another_holding_the_same_leaf(claude_project):
    # A fork copies the lines it continues, uuids and all: the leaf is in both files.
    folder = claude_project / "-work-project"
    lines = [
        _summary_line("The fork", "a2"),
        *(_claude_line(u, p, "user", "x", "F") for u, p in (("a1", None), ("a2", "a1"))),
    ]
    (folder / "F.jsonl").write_text("\n".join(lines) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles() == {"A": "", "F": "The fork"}


def test_a_summary_never_titles_a_session_of_another_project(claude_project):
    other = claude_project / "-work-other"
    other.mkdir()
    lines = [_summary_line("Not yours", "a2"), _claude_line("c1", None, "user", "hello", "C")]
    (other / "C.jsonl").write_text("\n".join(lines) + "\n")
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles() == {"A": "", "C": ""}


def test_many_summary_lines_are_linked_in_a_few_queries(
    claude_project, monkeypatch, django_assert_max_num_queries
):
    folder = claude_project / "-work-project"
    for n in range(30):  # thirty files, each opening with the summary of the one before
        before = "a2" if n == 0 else f"s{n - 1}"
        lines = [_summary_line(f"Title {n}", before), _claude_line(f"s{n}", None, "user", "go on", f"S{n}")]
        (folder / f"S{n}.jsonl").write_text("\n".join(lines) + "\n")
    real = links.link_summaries
    calls = []

    def counted(source, touched):
        with django_assert_max_num_queries(4):  # the leaves, the sessions, the update
            real(source, touched)
        calls.append(len(touched))

    monkeypatch.setattr(links, "link_summaries", counted)
    index_roots([RootSpec(claude_project, "claude_code")])
    assert calls == [31]
    titles = _titles()
    assert titles["A"] == "Title 0" and titles["S28"] == "Title 29" and titles["S29"] == ""


# A pass cut off between its groups and its links


class Killed(BaseException):
    """The process ends here, as under SIGKILL: nothing after it runs."""


def _subagent(claude_project: Path) -> None:
    """A subagent of A, in A's folder, and B, whose summary line titles A."""
    folder = claude_project / "-work-project"
    agent = folder / "A" / "subagents" / "agent-x1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_text(_claude_line("s1", None, "user", "look it up", "A") + "\n")
    lines = [_summary_line("Fixing the parser", "a2"), _claude_line("b1", None, "user", "next", "B")]
    (folder / "B.jsonl").write_text("\n".join(lines) + "\n")


def _killed_before_its_links(claude_project: Path, monkeypatch) -> None:
    """A pass whose groups are committed, one file each, and that ends before its links."""

    def killed(source, touched):
        raise Killed

    monkeypatch.setattr(passes, "GROUP_FILES", 1)
    monkeypatch.setattr(passes, "link_sessions", killed)
    with pytest.raises(Killed):
        index_roots([RootSpec(claude_project, "claude_code")])
    monkeypatch.undo()


def _marks() -> set[tuple[bool, bool]]:
    """Each session's marks (models.PendingWork), as (links, copies)."""
    marked = set(PendingWork.objects.values_list("session_id", "work"))
    return {
        ((i, "links") in marked, (i, "copies") in marked)
        for i in Session.objects.values_list("id", flat=True)
    }


def _parents() -> dict[str, str | None]:
    sessions = Session.objects.select_related("parent")
    return {Path(s.key).stem: s.parent and Path(s.parent.key).stem for s in sessions}


def test_a_pass_killed_before_its_links_leaves_its_sessions_marked(claude_project, monkeypatch):
    _subagent(claude_project)
    _killed_before_its_links(claude_project, monkeypatch)
    assert {links for links, _ in _marks()} == {True}
    assert _parents()["agent-x1"] is None and _titles()["A"] == ""


def test_the_next_pass_links_what_a_killed_pass_left(claude_project, monkeypatch):
    _subagent(claude_project)
    _killed_before_its_links(claude_project, monkeypatch)
    summary = index_roots([RootSpec(claude_project, "claude_code")])
    assert summary.opened == 0  # nothing to read again: the links come from the index
    assert _parents()["agent-x1"] == "A"
    assert _titles()["A"] == "Fixing the parser"
    assert not PendingWork.objects.filter(work="links").exists()


def test_a_pass_that_links_its_sessions_leaves_no_mark(claude_project):
    _subagent(claude_project)
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _parents()["agent-x1"] == "A" and _titles()["A"] == "Fixing the parser"
    assert not PendingWork.objects.filter(work="links").exists()


def test_a_pass_killed_after_its_links_before_its_copies_is_linked_alike_by_the_next(
    claude_project, monkeypatch
):
    """A links' mark goes with the copies' (copies.count_once_pending, in one transaction):
    a pass killed between its links and its copies leaves its sessions marked, linked; the
    next pass links them again to what one pass gives, and leaves no mark."""
    _subagent(claude_project)

    def killed(read_whole, linked=()):
        raise Killed

    monkeypatch.setattr(passes.copies, "count_once_pending", killed)
    with pytest.raises(Killed):
        index_roots([RootSpec(claude_project, "claude_code")])
    monkeypatch.undo()
    assert _marks() == {(True, True)}
    assert _parents()["agent-x1"] == "A" and _titles()["A"] == "Fixing the parser"
    summary = index_roots([RootSpec(claude_project, "claude_code")])
    assert summary.opened == 0
    assert _parents()["agent-x1"] == "A" and _titles()["A"] == "Fixing the parser"
    assert _marks() == {(False, False)}


def test_links_are_unmarked_when_settling_the_copies_fails(claude_project, monkeypatch):
    _subagent(claude_project)

    def failing(sessions):
        raise RuntimeError("settling failed")

    monkeypatch.setattr(passes.copies, "count_once", failing)
    summary = index_roots([RootSpec(claude_project, "claude_code")])
    assert any("copied" in error for error in summary.errors)
    assert _marks() == {(False, True)}
    assert _parents()["agent-x1"] == "A" and _titles()["A"] == "Fixing the parser"


def test_a_later_summary_of_a_killed_pass_still_wins(claude_project, monkeypatch):
    _subagent(claude_project)
    index_roots([RootSpec(claude_project, "claude_code")])
    with open(claude_project / "-work-project" / "B.jsonl", "a") as handle:
        handle.write(_summary_line("Parser fixed", "a2") + "\n")
    _killed_before_its_links(claude_project, monkeypatch)
    index_roots([RootSpec(claude_project, "claude_code")])
    assert _titles()["A"] == "Parser fixed"


def test_a_pass_killed_between_its_groups_is_linked_by_the_next(claude_project, monkeypatch):
    _subagent(claude_project)
    fold = passes._fold_new_file

    def killed_at_b(plan, batch, summary):
        if plan.work.found.key.endswith("B.jsonl"):
            raise Killed  # A and its subagent are committed, each in its own group
        return fold(plan, batch, summary)

    monkeypatch.setattr(passes, "GROUP_FILES", 1)
    monkeypatch.setattr(passes, "_fold_new_file", killed_at_b)
    with pytest.raises(Killed):
        index_roots([RootSpec(claude_project, "claude_code")])
    monkeypatch.undo()
    assert sorted(Path(key).stem for key in Session.objects.values_list("key", flat=True)) == [
        "A",
        "agent-x1",
    ]
    index_roots([RootSpec(claude_project, "claude_code")])  # reads B alone
    assert _parents() == {"A": None, "agent-x1": "A", "B": None}
    assert _titles()["A"] == "Fixing the parser"


# Summary lines of two files naming one session: a pass cut off, then resumed, titles it as
# a fresh index of the same files does.


def _index() -> None:
    index_roots([RootSpec(_ROOT[0], "claude_code")])


_ROOT: list[Path] = []


@pytest.fixture
def two_titles(claude_project: Path) -> Path:
    """A, then B and C, each opening with a summary line that titles A (its leaf a2)."""
    folder = claude_project / "-work-project"
    for name, title in (("B", "Title from B"), ("C", "Title from C")):
        lines = [_summary_line(title, "a2"), _claude_line(f"{name}1", None, "user", "go on", name)]
        (folder / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
    _ROOT[:] = [claude_project]
    return folder


def _fresh_index() -> tuple[dict, dict]:
    """The titles and parents of an index made afresh from the same files."""
    Session.objects.all().delete()
    Source.objects.all().delete()
    _index()
    return _titles(), _parents()


def _killed_at(name: str, monkeypatch) -> None:
    """A pass, one file a group, killed as it comes to write the file `name`: the groups
    before it are committed, their links not made."""
    fold, write = passes._fold_new_file, passes._index_file

    def killed_at(plan, batch, summary):
        if Path(plan.work.found.key).stem == name:
            raise Killed
        return (fold if plan.session.id is None else write)(plan, batch, summary)

    monkeypatch.setattr(passes, "GROUP_FILES", 1)
    monkeypatch.setattr(passes, "_fold_new_file", killed_at)
    monkeypatch.setattr(passes, "_index_file", killed_at)
    with pytest.raises(Killed):
        _index()
    monkeypatch.undo()


def test_a_pass_killed_between_the_files_of_two_titles_is_resumed_as_a_fresh_index(two_titles, monkeypatch):
    _killed_at("C", monkeypatch)  # A and B are in, B's title not given; C waits
    _index()
    resumed = _titles(), _parents()
    assert resumed[0]["A"] == "Title from C"  # the later file's, as one whole pass gives it
    assert _fresh_index() == resumed


def test_a_killed_pass_over_an_appended_file_does_not_give_its_old_title_again(two_titles, monkeypatch):
    _index()
    assert _titles()["A"] == "Title from C"
    with open(two_titles / "B.jsonl", "a") as handle:  # B goes on, with no new summary
        handle.write(_claude_line("B2", "B1", "assistant", "done", "B") + "\n")
    _killed_before_its_links(_ROOT[0], monkeypatch)
    _index()  # B's title was given by the first pass, and C's since: C's stays
    resumed = _titles(), _parents()
    assert resumed[0]["A"] == "Title from C"
    assert _fresh_index() == resumed


def test_a_title_a_killed_pass_wrote_is_given_when_its_file_is_read_on_before_the_next(
    claude_project, monkeypatch
):
    folder = claude_project / "-work-project"
    lines = [_summary_line("Title from B", "a2"), _claude_line("B1", None, "user", "go on", "B")]
    (folder / "B.jsonl").write_text("\n".join(lines) + "\n")
    _ROOT[:] = [claude_project]
    _index()
    with open(folder / "B.jsonl", "a") as handle:
        handle.write(_summary_line("Newer title from B", "a2") + "\n")
    _killed_before_its_links(claude_project, monkeypatch)
    with open(folder / "B.jsonl", "a") as handle:  # and B goes on before the next pass
        handle.write(_claude_line("B2", "B1", "assistant", "done", "B") + "\n")
    _index()  # reads B's last line only: the killed pass's summary line is in the index
    resumed = _titles(), _parents()
    assert resumed[0]["A"] == "Newer title from B"
    assert _fresh_index() == resumed
