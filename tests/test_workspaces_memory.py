"""The memory audit: /status counts, the knowledge store, and the memory search."""

from sessionviewer import workspaces as ws
from sessionviewer.workspaces import (
    jid_status,
    read_knowledge,
    search_memory,
)

from .workspace_files import (
    UUID,
    make_tree,
)

# /status


def test_status_of_sample_alice_matches_the_agents_counts(sample):
    status = jid_status(sample, "alice@example.com")
    assert (status.messages, status.archived_sessions, status.files, status.knowledge_entries) == (6, 1, 0, 0)
    assert status.profile and status.memory
    assert (status.instructions, status.identity, status.personality) == (True, True, True)
    assert not status.is_room and not status.errors


def test_status_of_sample_room_skips_the_invalid_line(sample):
    status = jid_status(sample, "room@conference.example.com")
    assert status.is_room
    assert status.messages == 4  # the attachment-only and reaction-only messages count
    assert status.profile and not status.memory


def test_status_of_sample_bob_counts_context_md_as_profile(sample):
    status = jid_status(sample, "bob@example.com")
    assert (status.messages, status.profile, status.memory) == (2, True, False)


def test_status_counts_only_messages_the_agent_would_load(tmp_path):
    lines = [
        '{"type":"session","version":1,"created":"x","jid":"a@b.c"}',
        '{"type":"message","role":"user","content":"one"}',
        '{"type":"message","role":"user","content":""}',
        '{"type":"message","role":"user","content":null}',
        '{"type":"message","role":"user","content":"x","ts":5}',
        '{"type":"message","role":"user","content":"","attachments":[]}',
        '{"type":"message","role":"user","content":"","attachments":[{"filename":"a"}]}',
        '{"type":"note","role":"user","content":"x"}',
        '{"type":"message","role":"user","content":"x","extra":NaN}',
        '  {"type":"message","role":"assistant","content":"two","future_field":1}  ',
        "",
    ]
    make_tree(tmp_path, {"a@b.c/history.jsonl": "\n".join(lines)})
    assert jid_status(tmp_path, "a@b.c").messages == 2


def test_status_counts_archives_files_and_knowledge(tmp_path):
    make_tree(
        tmp_path,
        {
            "a@b.c/sessions/20250101-000000.jsonl": "",
            "a@b.c/sessions/20250102-000000.md": "",
            "a@b.c/sessions/notes.txt": "",
            f"a@b.c/files/{UUID}_a.png": b"x",
            "a@b.c/files/sub/": "",
            "a@b.c/knowledge.jsonl": '{"key":"a","content":"1","ts":"t"}\n{"key":"a","content":"2","ts":"t"}\nbad\n',
        },
    )
    status = jid_status(tmp_path, "a@b.c")
    assert (status.archived_sessions, status.files, status.knowledge_entries) == (2, 1, 2)


def test_status_reports_workspace_files_after_overrides(tmp_path):
    make_tree(tmp_path, {"identity.md": "  ", "a@b.c/identity.md": "Mine", "a@b.c/personality.md": "\n"})
    status = jid_status(tmp_path, "a@b.c")
    assert (status.instructions, status.identity, status.personality) == (False, True, False)


def test_status_reports_a_history_that_is_not_utf8(tmp_path):
    make_tree(tmp_path, {"a@b.c/history.jsonl": b'{"type":"message","role":"user","content":"\xff"}\n'})
    status = jid_status(tmp_path, "a@b.c")
    assert status.messages == 0
    assert "UTF-8" in status.errors[0]


# Knowledge


def test_read_knowledge_keeps_the_latest_line_of_a_repeated_key(tmp_path):
    path = (
        make_tree(
            tmp_path,
            {
                "knowledge.jsonl": '{"key":"lang","content":"French","ts":"1"}\n\n'
                '{"key":"city","content":"Paris","ts":"2"}\n'
                '{"key":"lang","content":"Rust","ts":"3"}\n'
            },
        )
        / "knowledge.jsonl"
    )
    knowledge = read_knowledge(path)
    assert [(e.key, e.content, e.line) for e in knowledge.entries] == [
        ("lang", "Rust", 4),
        ("city", "Paris", 3),
    ]
    assert knowledge.valid_lines == 3
    assert [p.line for p in knowledge.problems] == [4]
    assert "first" in knowledge.problems[0].message


def test_read_knowledge_records_bad_lines_with_their_numbers(tmp_path):
    content = (
        '{"key":"ok","content":"c","ts":"t"}\n'
        "not json\n"
        '{"key":"k","content":"c"}\n'
        '{"key":1,"content":"c","ts":"t"}\n'
        "[1, 2]\n"
    )
    path = (
        make_tree(tmp_path, {"knowledge.jsonl": content.encode() + b'{"key":"\xff"}\n'}) / "knowledge.jsonl"
    )
    knowledge = read_knowledge(path)
    assert [e.key for e in knowledge.entries] == ["ok"]
    assert [p.line for p in knowledge.problems] == [0, 2, 3, 4, 5, 6]


def test_read_knowledge_of_a_missing_file_is_empty(tmp_path):
    knowledge = read_knowledge(tmp_path / "knowledge.jsonl")
    assert (knowledge.entries, knowledge.problems, knowledge.valid_lines) == ([], [], 0)


# Search


def test_search_memory_is_case_insensitive_and_gives_line_numbers(sample):
    hits = search_memory(sample, "FRENCH")
    assert [(h.jid, h.file, h.line, h.text) for h in hits] == [
        ("alice@example.com", "user.md", 2, "- Language: French"),
    ]


def test_search_memory_covers_knowledge_but_not_transcripts(sample):
    make_tree(
        sample / "bob@example.com", {"knowledge.jsonl": '{"key":"k","content":"pong table","ts":"t"}\n'}
    )
    hits = search_memory(sample, "pong")
    assert [(h.jid, h.file, h.line) for h in hits] == [("bob@example.com", "knowledge.jsonl", 1)]


def test_search_memory_with_a_blank_query_finds_nothing(sample):
    assert search_memory(sample, "  ") == []


def test_a_fifo_history_counts_nothing_and_is_reported_by_the_status(tmp_path, fifo):
    root = make_tree(tmp_path / "memory", {"alice@example.com/memory.md": "notes"})
    fifo(root / "alice@example.com" / "history.jsonl")
    status = jid_status(root, "alice@example.com")
    assert status.messages == 0 and status.is_room is False
    assert status.errors == ("alice@example.com/history.jsonl: not a regular file (a FIFO)",)


def test_a_fifo_knowledge_store_is_a_problem_of_the_whole_file(tmp_path, fifo):
    path = fifo(tmp_path / "knowledge.jsonl")
    assert read_knowledge(path).problems == [ws.LineProblem(0, "not a regular file (a FIFO)")]


def test_a_knowledge_line_nested_too_deep_is_a_problem_of_that_line(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    good = '{"key": "k", "content": "c", "ts": "2025-01-01T00:00:00Z"}'
    path = tmp_path / "knowledge.jsonl"
    path.write_text(f"{deep}\n{good}\n")
    knowledge = read_knowledge(path)
    assert knowledge.problems == [ws.LineProblem(1, "invalid JSON: nested too deep")]
    assert [entry.key for entry in knowledge.entries] == ["k"]


def test_a_history_line_nested_too_deep_is_not_a_message(tmp_path):
    message = '{"type":"message","role":"user","content":"hi","sender":"alice@example.com"}'
    root = make_tree(
        tmp_path / "memory", {"alice@example.com/history.jsonl": "[" * 100_000 + "\n" + message + "\n"}
    )
    assert jid_status(root, "alice@example.com").messages == 1


def test_knowledge_of_a_store_linked_outside_its_folder_is_a_problem_of_the_whole_file(tmp_path):
    make_tree(tmp_path, {"outside.jsonl": '{"key":"k","content":"v","ts":"t"}\n', "a@example.com/": ""})
    (tmp_path / "a@example.com" / "knowledge.jsonl").symlink_to(tmp_path / "outside.jsonl")
    knowledge = ws.knowledge(tmp_path / "a@example.com")
    assert knowledge.entries == [] and [p.line for p in knowledge.problems] == [0]


def test_knowledge_gives_its_entries_and_problems_as_json(tmp_path):
    make_tree(tmp_path, {"a@example.com/knowledge.jsonl": '{"key":"k","content":"v","ts":"t"}\nnope\n'})
    assert ws.knowledge(tmp_path / "a@example.com").to_dict() == {
        "entries": [{"key": "k", "content": "v", "ts": "t", "line": 1}],
        "problems": [{"line": 2, "message": "invalid JSON: Expecting value: line 1 column 1 (char 0)"}],
    }
