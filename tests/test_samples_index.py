"""Every real sample file indexes, and its thread loses no conversational line."""

import pytest

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Problem, Session
from sessionviewer.roots import RootSpec

pytestmark = pytest.mark.django_db

ROOTS = [
    ("claude-code/projects", "claude_code"),
    ("claude-code/claudeless", "claude_code"),
    ("claude-code/fasthooks", "claude_code"),
    ("claude-code/handmade", "claude_code"),
    ("go-agent/sessions", "go_agent"),
    ("openclaw/myclaw/sessions", "openclaw"),
    ("openclaw/pi", "openclaw"),
    ("openclaw/openclaw-excerpt", "openclaw"),
    ("fluux/memory", "fluux_xmpp"),
]


@pytest.fixture
def indexed(samples_dir):
    summary = index_roots([RootSpec(samples_dir / path, fmt) for path, fmt in ROOTS])
    assert summary.errors == []
    return summary


def test_every_sample_root_indexes_without_an_error(indexed):
    assert indexed.sessions == Session.objects.count() >= 20
    assert not Problem.objects.filter(message__startswith="reader error").exists()


def test_only_the_known_bad_sample_lines_are_recorded(indexed):
    problems = {(p.session.key, p.line) for p in Problem.objects.select_related("session")}
    # The room's last line is not JSON; edge_cases.jsonl has a string, a number and an array line.
    assert problems == {
        ("room@conference.example.com/history.jsonl", 6),
        ("edge_cases.jsonl", 13),
        ("edge_cases.jsonl", 15),
        ("edge_cases.jsonl", 16),
    }


def test_a_last_line_without_newline_is_read_when_whole(indexed):
    # edge_cases.jsonl ends with a summary line and no newline.
    session = Session.objects.get(key="edge_cases.jsonl")
    assert session.entries.filter(kind="summary", leaf_id="edge_011").exists()


def test_no_conversational_line_is_lost_from_the_threads(indexed):
    for session in Session.objects.all():
        entries = transcripts.load_entries(session)
        thread = transcripts.transcript(session).thread
        seen = {id(item.entry) for item in thread.items}
        shown_lines = {item.entry.line for item in thread.items}
        for leaf in thread.leaves:
            shown_lines |= {item.entry.line for item in transcripts.transcript(session, leaf).items}
        lost = [
            e.line
            for e in entries
            if e.is_conversational and not e.is_sidechain and e.line not in shown_lines
        ]
        assert lost == [], (session.key, lost)
        assert seen  # the thread is not empty


def test_handmade_files_thread_in_file_order(indexed):
    for session in Session.objects.filter(source__path__endswith="handmade"):
        lines = [
            item.entry.line for item in transcripts.transcript(session).items if item.entry.is_conversational
        ]
        assert lines == sorted(lines), session.key


def test_the_spotter_subagent_call_links_to_its_task_tool_call(indexed):
    main = Session.objects.get(key__endswith="spotter/subagent.jsonl")
    assert main.extra["subagent_links"] == {"afb92ff": "toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"}


def test_claudeless_subagents_are_linked_to_their_parent_session(indexed):
    subagents = Session.objects.filter(kind="subagent", source__path__endswith="claudeless")
    assert subagents.exists()
    assert all(s.parent is not None for s in subagents)


def test_the_go_fork_is_linked_to_the_session_it_forked_from(indexed):
    fork = Session.objects.get(format="go_agent", kind="fork")
    assert fork.parent is not None
    assert fork.parent.key == "20260226-143012-a3f7c901"
    assert fork.fork_entry_id


def test_claude_sessions_take_their_project_from_cwd(indexed):
    session = Session.objects.get(key__endswith="spotter/short.jsonl")
    assert session.project == "~/projects/spotter"  # the home folded: the same project on every machine
    assert session.cwd == "/home/marco/projects/spotter"


def test_a_subagent_session_counts_its_own_messages(indexed):
    subagent = Session.objects.filter(kind="subagent").exclude(message_count=0)
    assert subagent.exists()
