import contextlib
import fcntl
import hashlib
import multiprocessing
import os
import shutil
import stat
import threading
import time
from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from sessionviewer import workspaces as ws
from sessionviewer.workspaces import (
    Conflict,
    UnsafePath,
    archive_session,
    atomic_write,
    default_prompt,
    effective_prompt,
    file_version,
    forget_user,
    format_current_date,
    global_file_info,
    is_blank,
    iter_tree_findings,
    jid_entry,
    jid_status,
    list_files,
    list_sessions,
    list_workspace,
    listing,
    read_knowledge,
    remove_file,
    remove_override,
    resolve_jid_dir,
    resolve_member,
    rust_trim,
    scan_secrets,
    scan_tree,
    search_memory,
    secrets,
    writes,
)

SAMPLES = Path("/work/shared/samples/fluux/memory")
FIXTURES = Path(__file__).parent / "fixtures" / "fluux_memory"
OVERRIDES = FIXTURES / "overrides"
MONDAY = date(2025, 6, 2)
DATE_LINE = "Current date: Monday, June 2, 2025"
UUID = "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10"


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Files by path relative to root; a trailing "/" makes an empty folder."""
    root.mkdir(parents=True, exist_ok=True)
    for relative, content in files.items():
        path = root / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def prompt_text(root: Path, jid: str, agent_name: str = "Fluux Agent") -> str:
    prompt = effective_prompt(root, jid, agent_name, MONDAY)
    assert prompt.ok, prompt.errors
    return prompt.text


@pytest.fixture
def sample(tmp_path):
    if not SAMPLES.is_dir():
        pytest.skip("sample memory tree not available")
    root = tmp_path / "memory"
    shutil.copytree(SAMPLES, root)
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root


def sample_file(name: str) -> str:
    return (SAMPLES / name).read_text().strip()


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


# Whitespace as Rust's str::trim sees it


def test_rust_trim_strips_unicode_white_space():
    assert rust_trim("\u3000\u00a0\u2003 text \u2029\u0085\n") == "text"


def test_rust_trim_keeps_information_separators_that_python_strips():
    assert "\x1c\x1d\x1e\x1f".strip() == ""
    assert rust_trim("\x1c\x1d\x1e\x1f") == "\x1c\x1d\x1e\x1f"
    assert not is_blank("\x1f\n")


def test_rust_trim_keeps_a_byte_order_mark():
    assert rust_trim("\ufeff\n") == "\ufeff"


# Effective prompt: the sample tree


def test_sample_alice_prompt_has_global_persona_profile_memory_and_date(sample):
    expected = (
        f"{sample_file('identity.md')}\n\n{sample_file('personality.md')}\n\n{sample_file('instructions.md')}"
        f"\n\n## About this user\n{sample_file('alice@example.com/user.md')}"
        f"\n\n## Notes and memory\n{sample_file('alice@example.com/memory.md')}"
        f"\n\n{DATE_LINE}"
    )
    assert prompt_text(sample, "alice@example.com") == expected


def test_sample_alice_prompt_sections_name_their_sources(sample):
    prompt = effective_prompt(sample, "alice@example.com", "Fluux Agent", MONDAY)
    assert [(s.kind, s.source) for s in prompt.sections] == [
        ("identity", "identity.md"),
        ("personality", "personality.md"),
        ("instructions", "instructions.md"),
        ("profile", "alice@example.com/user.md"),
        ("memory", "alice@example.com/memory.md"),
        ("date", "runtime"),
    ]
    assert prompt.sections[-1].text == "Monday, June 2, 2025"


def test_sample_bob_prompt_reads_the_legacy_context_md(sample):
    assert prompt_text(sample, "bob@example.com").endswith(
        f"## About this user\n{sample_file('bob@example.com/context.md')}\n\n{DATE_LINE}"
    )


def test_sample_room_overrides_instructions_but_keeps_global_personality_over_blank_override(sample):
    prompt = effective_prompt(sample, "room@conference.example.com", "Fluux Agent", MONDAY)
    assert [s.source for s in prompt.sections[:3]] == [
        "identity.md",
        "personality.md",
        "room@conference.example.com/instructions.md",
    ]
    assert prompt.text == (
        f"{sample_file('identity.md')}\n\n{sample_file('personality.md')}\n\n"
        f"{sample_file('room@conference.example.com/instructions.md')}"
        f"\n\n## About this user\n{sample_file('room@conference.example.com/user.md')}\n\n{DATE_LINE}"
    )


def test_history_sessions_knowledge_and_files_never_enter_the_prompt(sample):
    alice = sample / "alice@example.com"
    make_tree(alice, {"knowledge.jsonl": '{"key":"k","content":"KNOWLEDGE-X","ts":"t"}\n'})
    make_tree(alice, {f"files/{UUID}_notes.txt": "FILE-X", "history.md": "### user\nHISTORY-X\n"})
    text = prompt_text(sample, "alice@example.com")
    for marker in ("KNOWLEDGE-X", "FILE-X", "HISTORY-X", "Hello, how are you?", "weather"):
        assert marker not in text


# Effective prompt: own fixtures


def test_whitespace_only_override_falls_back_to_the_global_file():
    prompt = effective_prompt(OVERRIDES, "blank_override@example.com", "Fluux Agent", MONDAY)
    assert prompt.sections[0].source == "identity.md"
    assert prompt.text.startswith("You are Fluux Agent, the test assistant.\n\nRules:")


def test_missing_global_file_is_simply_left_out():
    text = prompt_text(OVERRIDES, "legacy@example.com")
    assert text.startswith("You are Fluux Agent, the test assistant.\n\nRules:\n- Be brief\n\n## About")


def test_override_counts_even_when_no_global_file_exists():
    prompt = effective_prompt(OVERRIDES, "own_personality@example.com", "Fluux Agent", MONDAY)
    assert [s.source for s in prompt.sections[:3]] == [
        "identity.md",
        "own_personality@example.com/personality.md",
        "instructions.md",
    ]
    assert prompt.text.startswith("You are Fluux Agent, the test assistant.\n\nCheerful and terse.\n\nRules:")


def test_context_md_is_the_profile_when_there_is_no_user_md():
    assert "## About this user\n- Name: Carol (legacy profile)" in prompt_text(
        OVERRIDES, "legacy@example.com"
    )


def test_blank_user_md_means_no_profile_and_context_md_is_not_read():
    text = prompt_text(OVERRIDES, "blank_profile@example.com")
    assert "About this user" not in text
    assert "Stale legacy profile" not in text


def test_blank_memory_md_leaves_out_the_notes_heading():
    text = prompt_text(OVERRIDES, "blank_profile@example.com")
    assert text == f"You are Fluux Agent, the test assistant.\n\nRules:\n- Be brief\n\n{DATE_LINE}"


def test_default_prompt_names_the_agent_when_no_persona_file_exists(tmp_path):
    make_tree(tmp_path, {"alice@example.com/": ""})
    assert prompt_text(tmp_path, "alice@example.com", "Test Agent") == (
        "You are Test Agent, a personal AI assistant accessible via XMPP.\n"
        "You are direct, helpful, and concise. You respond in the user's language.\n\n"
        "Rules:\n"
        "- Respond concisely, no excessive markdown formatting\n"
        "- If asked to execute an action (send an email, modify a file...), describe what you would do "
        "but clarify that you cannot yet execute actions (skills are coming in v0.2)\n"
        "- You have memory of previous conversations with this user"
        f"\n\n{DATE_LINE}"
    )


def test_default_prompt_is_decided_per_jid(tmp_path):
    make_tree(
        tmp_path, {"dev@conference.example.com/identity.md": "You are DevBot.", "alice@example.com/": ""}
    )
    assert effective_prompt(tmp_path, "alice@example.com", "Fluux Agent", MONDAY).uses_default
    room = effective_prompt(tmp_path, "dev@conference.example.com", "Fluux Agent", MONDAY)
    assert not room.uses_default
    assert room.text == f"You are DevBot.\n\n\n\n{DATE_LINE}"


def test_blank_global_files_still_give_the_default_prompt(tmp_path):
    make_tree(tmp_path, {"identity.md": " \n", "personality.md": "", "alice@example.com/": ""})
    text = prompt_text(tmp_path, "alice@example.com", "Bot")
    assert text.startswith(default_prompt("Bot"))


def test_default_prompt_is_followed_by_profile_and_memory(tmp_path):
    make_tree(
        tmp_path, {"alice@example.com/user.md": "  Likes Rust \n", "alice@example.com/memory.md": "\nnote\n"}
    )
    assert prompt_text(tmp_path, "alice@example.com", "Bot") == (
        f"{default_prompt('Bot')}\n\n## About this user\nLikes Rust\n\n## Notes and memory\nnote\n\n{DATE_LINE}"
    )


def test_identity_only_keeps_the_agents_trailing_blank_line_before_the_profile(tmp_path):
    make_tree(tmp_path, {"identity.md": "I am X.\n", "alice@example.com/user.md": "Alice"})
    assert prompt_text(tmp_path, "alice@example.com") == (
        f"I am X.\n\n\n\n## About this user\nAlice\n\n{DATE_LINE}"
    )


def test_override_of_only_information_separators_is_not_blank_for_rust(tmp_path):
    make_tree(tmp_path, {"identity.md": "Global identity", "alice@example.com/identity.md": "\x1f\n"})
    prompt = effective_prompt(tmp_path, "alice@example.com", "Fluux Agent", MONDAY)
    assert prompt.sections[0].source == "alice@example.com/identity.md"
    assert prompt.text.startswith("\x1f\n\n")


def test_override_of_unicode_spaces_only_is_blank(tmp_path):
    make_tree(
        tmp_path, {"identity.md": "Global identity", "alice@example.com/identity.md": "\u3000\u2003\u00a0\n"}
    )
    assert prompt_text(tmp_path, "alice@example.com").startswith("Global identity")


def test_override_that_is_not_utf8_gives_an_error_section_and_no_text(tmp_path):
    make_tree(tmp_path, {"identity.md": "Global", "alice@example.com/identity.md": b"caf\xe9\n"})
    prompt = effective_prompt(tmp_path, "alice@example.com", "Fluux Agent", MONDAY)
    assert not prompt.ok
    assert prompt.text == ""
    error = prompt.sections[0]
    assert (error.kind, error.source, error.text) == ("identity", "alice@example.com/identity.md", "")
    assert "UTF-8" in error.error
    assert prompt.errors == (f"alice@example.com/identity.md: {error.error}",)


def test_global_file_that_is_not_utf8_is_not_read_when_an_override_wins(tmp_path):
    make_tree(tmp_path, {"identity.md": b"\xff\xfe", "alice@example.com/identity.md": "Mine"})
    assert prompt_text(tmp_path, "alice@example.com").startswith("Mine\n\n")


def test_memory_md_that_is_not_utf8_gives_an_error_section(tmp_path):
    make_tree(tmp_path, {"alice@example.com/memory.md": b"\x80oops"})
    prompt = effective_prompt(tmp_path, "alice@example.com", "Bot", MONDAY)
    assert [s.kind for s in prompt.sections if s.error] == ["memory"]
    assert prompt.text == ""


def test_symlinked_profile_pointing_outside_is_reported_not_read(tmp_path):
    make_tree(tmp_path, {"outside.md": "SECRET", "root/alice@example.com/": ""})
    (tmp_path / "root" / "alice@example.com" / "user.md").symlink_to(tmp_path / "outside.md")
    prompt = effective_prompt(tmp_path / "root", "alice@example.com", "Bot", MONDAY)
    assert prompt.sections[1].kind == "profile"
    assert prompt.sections[1].error
    assert "SECRET" not in prompt.text


def test_effective_prompt_refuses_an_unsafe_jid(tmp_path):
    with pytest.raises(UnsafePath):
        effective_prompt(tmp_path, "../etc", "Bot", MONDAY)


@pytest.mark.parametrize(
    ("day", "expected"),
    [
        (date(2025, 6, 2), "Monday, June 2, 2025"),
        (date(2024, 12, 25), "Wednesday, December 25, 2024"),
        (date(2026, 1, 10), "Saturday, January 10, 2026"),
    ],
)
def test_current_date_uses_chrono_weekday_month_unpadded_day_year(day, expected):
    assert format_current_date(day) == expected


def test_current_date_defaults_to_today(tmp_path):
    make_tree(tmp_path, {"alice@example.com/": ""})
    prompt = effective_prompt(tmp_path, "alice@example.com", "Bot")
    assert prompt.text.endswith("Current date: " + format_current_date(date.today()))


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


# Secrets


@pytest.mark.parametrize(
    ("text", "kind", "secret"),
    [
        ("mail me at jane.doe+x@mail.example.org please", "email", "jane.doe+x@mail.example.org"),
        ("call +33 6 12 34 56 78 now", "phone", "+33 6 12 34 56 78"),
        ("call +1 (415) 555-2671", "phone", "+1 (415) 555-2671"),
        ("call (415) 555-2671", "phone", "(415) 555-2671"),
        ("call 415-555-2671", "phone", "415-555-2671"),
        ("appelle le 06 12 34 56 78", "phone", "06 12 34 56 78"),
        ("ring 020 7183 8750", "phone", "020 7183 8750"),
        ("key sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB", "openai_key", "sk-proj-4fT9xQ2mZ8vL1rN6kP3sW7yB"),
        ("key sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB", "anthropic_key", "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB"),
        ("ghp_" + "a1B2" * 9, "github_token", "ghp_" + "a1B2" * 9),
        ("gho_" + "Z9y8" * 9, "github_token", "gho_" + "Z9y8" * 9),
        ("github_pat_11ABCDEFG0abcdefghij_klmnopqrstuvwxyz0123456789", "github_token", None),
        ("xoxb-123456789012-abcdefABCDEF", "slack_token", "xoxb-123456789012-abcdefABCDEF"),
        ("xoxp-123456789012-abcdef", "slack_token", "xoxp-123456789012-abcdef"),
        ("aws AKIAIOSFODNN7EXAMPLE", "aws_access_key", "AKIAIOSFODNN7EXAMPLE"),
        ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "google_api_key", None),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc123", "bearer_token", "eyJhbGciOiJIUzI1NiJ9.abc123"),
        ('api_key = "Zx8vQ2mN7pL4rT9wK3sB"', "secret_assignment", "Zx8vQ2mN7pL4rT9wK3sB"),
        ('{"password": "h7Fq2LmX9pRt4VwZ"}', "secret_assignment", "h7Fq2LmX9pRt4VwZ"),
        ("-----BEGIN RSA PRIVATE KEY-----", "private_key", None),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", "private_key", None),
        ("-----BEGIN PRIVATE KEY-----", "private_key", None),
    ],
)
def test_scan_secrets_flags_and_masks(text, kind, secret):
    findings = scan_secrets(text)
    assert [f.kind for f in findings] == [kind]
    if secret:
        assert findings[0].column == text.index(secret) + 1
        assert secret not in findings[0].masked
        assert len(findings[0].masked) == len(secret)


@pytest.mark.parametrize(
    "text",
    [
        "Released version 1.2.3 on 2025-06-01 at 14:30:22",
        "created 2025-02-08T19:00:00.123456789+00:00",
        "archive 20250601-143022.jsonl",
        "msg a1b2c3d4-e5f6-7890-abcd-ef1234567890",
        "host 192.168.100.200 port 5222",
        "version 10.0.19045.3803",
        "sender alice@muc said hi",
        "a risk-assessment-framework-document-name",
        "token = placeholder_value_here",
        "Bearer of good news arrived yesterday",
        "order 123456789012345 shipped",
        "price 1 234 567 890",
    ],
)
def test_scan_secrets_ignores_common_look_alikes(text):
    assert scan_secrets(text) == []


def test_scan_secrets_reports_line_and_column():
    findings = scan_secrets("hello\r\n  write to bob@example.org\n")
    assert [(f.kind, f.line, f.column, f.masked) for f in findings] == [("email", 2, 12, "b**@example.org")]


def test_scan_secrets_reports_an_anthropic_key_once():
    findings = scan_secrets("ANTHROPIC_API_KEY=sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sB")
    assert [f.kind for f in findings] == ["anthropic_key"]


def test_scan_secrets_masks_all_but_the_last_two_phone_digits():
    assert scan_secrets("+33 6 12 34 56 78")[0].masked == "+** * ** ** ** 78"


def test_scan_secrets_skips_ignored_addresses_in_any_case():
    assert scan_secrets("from Alice@Example.com", ignore=("alice@example.com",)) == []


def test_scan_tree_finds_nothing_in_the_sample_but_its_own_addresses_are_not_reported(sample):
    assert scan_tree(sample) == []


def test_scan_tree_reports_file_and_line_in_memory_and_transcripts(sample):
    alice = sample / "alice@example.com"
    with (alice / "memory.md").open("a") as handle:
        handle.write("- 2025-06-04: gave her key AKIAIOSFODNN7EXAMPLE\n")
    with (alice / "sessions" / "20250601-143022.md").open("a") as handle:
        handle.write("\n### user\nmy number is +33 6 12 34 56 78\n")
    findings = {(f.file, f.line, f.kind) for f in scan_tree(sample)}
    assert findings == {
        ("alice@example.com/memory.md", 3, "aws_access_key"),
        ("alice@example.com/sessions/20250601-143022.md", 14, "phone"),
    }


def test_scan_tree_of_one_jid_reads_only_that_folder(sample):
    (sample / "memory.md").write_text("- root@shop.example\n")
    (sample / "bob@example.com" / "context.md").write_text("- bob's friend erin@shop.example\n")
    with (sample / "alice@example.com" / "memory.md").open("a") as handle:
        handle.write("- frank@shop.example\n")
    assert {f.file for f in scan_tree(sample, "bob@example.com")} == {"bob@example.com/context.md"}


def test_iter_tree_findings_is_lazy(sample):
    for jid in ("alice@example.com", "bob@example.com"):
        (sample / jid / "memory.md").write_text("- a@shop.example\n- b@shop.example\n")
    findings = iter_tree_findings(sample)
    first = next(findings)
    assert first.file == "alice@example.com/memory.md" and first.line == 1
    findings.close()


def _counting_scans(monkeypatch) -> list[str]:
    scanned = []
    real = secrets.scan_file

    def counting(path, ignore):
        scanned.append(path.name if path.parent.name != "sessions" else f"sessions/{path.name}")
        return real(path, ignore)

    monkeypatch.setattr(secrets, "scan_file", counting)
    return scanned


def test_a_second_scan_reads_only_the_files_that_changed(sample, monkeypatch):
    (sample / "alice@example.com" / "memory.md").write_text("- a@shop.example\n")
    (sample / "bob@example.com" / "memory.md").write_text("- b@shop.example\n")
    first = scan_tree(sample)
    scanned = _counting_scans(monkeypatch)
    assert scan_tree(sample) == first and scanned == []
    with (sample / "bob@example.com" / "memory.md").open("a") as handle:
        handle.write("- c@shop.example\n")
    third = scan_tree(sample)
    assert scanned == ["memory.md"]  # bob's, alone
    secrets.FINDINGS.clear()
    assert third == scan_tree(sample)  # what a scan without the cache finds
    assert len(third) == len(first) + 1


def test_a_scan_stopped_inside_a_file_keeps_nothing_of_that_file(sample, monkeypatch):
    (sample / "alice@example.com" / "memory.md").write_text("- a@shop.example\n- b@shop.example\n")
    findings = iter_tree_findings(sample, "alice@example.com")
    assert next(findings).line == 1
    findings.close()
    assert [f.line for f in scan_tree(sample, "alice@example.com") if f.file.endswith("memory.md")] == [1, 2]


def test_the_findings_cache_keeps_one_version_per_file_and_what_fits_its_limit():
    cache = secrets.FindingsCache(limit=5)
    finding = ws.SecretFinding("email", 1, 1, "a*@x")
    a, b, c = Path("a.md"), Path("b.md"), Path("c.md")
    cache.put(a, (1,), [finding] * 2)  # 3 with its entry
    cache.put(b, (1,), [finding])  # 2: full
    assert cache.get(a, (1,)) is not None and cache.get(a, (2,)) is None  # another version of a
    cache.put(c, (1,), [])  # over the limit: c is read again next time, a and b stay
    assert cache.get(c, (1,)) is None and cache.get(b, (1,)) is not None
    cache.put(a, (2,), [])  # a changed: its new findings replace the old, which frees room
    assert cache.get(a, (1,)) is None and cache.get(a, (2,)) == []
    cache.put(c, (1,), [finding])
    assert cache.get(c, (1,)) == [finding] and cache.size == 5


def test_scan_tree_keeps_line_numbers_with_crlf_and_bad_bytes(tmp_path):
    make_tree(tmp_path, {"a@example.com/memory.md": b"caf\xe9\r\n\r\n- +33 6 12 34 56 78\r\n"})
    (finding,) = scan_tree(tmp_path)
    assert (finding.line, finding.column, finding.kind) == (3, 3, "phone")


# Atomic writes


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_file_version_is_the_sha256_of_the_bytes_or_absent(tmp_path):
    path = tmp_path / "user.md"
    assert file_version(path) == "absent"
    path.write_bytes(b"hello")
    assert file_version(path) == sha(b"hello")


def test_atomic_write_replaces_the_file_and_returns_the_new_version(tmp_path):
    path = make_tree(tmp_path, {"user.md": "old\n"}) / "user.md"
    version = atomic_write(path, "new\n", file_version(path))
    assert path.read_text() == "new\n"
    assert version == file_version(path) == sha(b"new\n")


def test_atomic_write_creates_a_file_expected_absent(tmp_path):
    path = tmp_path / "identity.md"
    atomic_write(path, "hi", "absent")
    assert path.read_text() == "hi"
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~writes.current_umask()


def test_atomic_write_refuses_a_stale_version_and_writes_nothing(tmp_path):
    path = make_tree(tmp_path, {"user.md": "edited elsewhere\n"}) / "user.md"
    with pytest.raises(Conflict) as caught:
        atomic_write(path, "mine\n", sha(b"what I loaded\n"))
    assert caught.value.current_text == "edited elsewhere\n"
    assert caught.value.current_version == sha(b"edited elsewhere\n")
    assert path.read_text() == "edited elsewhere\n"
    assert os.listdir(tmp_path) == ["user.md"]


def test_atomic_write_refuses_to_create_over_a_file_that_appeared(tmp_path):
    path = make_tree(tmp_path, {"identity.md": "someone else's\n"}) / "identity.md"
    with pytest.raises(Conflict):
        atomic_write(path, "mine", "absent")
    assert path.read_text() == "someone else's\n"


def test_atomic_write_refuses_when_the_file_was_deleted(tmp_path):
    with pytest.raises(Conflict) as caught:
        atomic_write(tmp_path / "user.md", "mine", sha(b"old"))
    assert caught.value.current_text is None
    assert caught.value.current_version == "absent"


def test_crash_between_write_and_rename_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = make_tree(tmp_path, {"memory.md": "precious\n"}) / "memory.md"

    def crash(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(writes.os, "replace", crash)
    with pytest.raises(OSError, match="power cut"):
        atomic_write(path, "half-done\n", file_version(path))
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_atomic_write_keeps_the_file_mode(tmp_path):
    path = make_tree(tmp_path, {"user.md": "old"}) / "user.md"
    path.chmod(0o640)
    atomic_write(path, "new", file_version(path))
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_atomic_write_keeps_crlf_line_endings(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"a\r\nb\r\n"}) / "user.md"
    atomic_write(path, "x\ny\r\nz\n", file_version(path))
    assert path.read_bytes() == b"x\r\ny\r\nz\r\n"


def test_atomic_write_keeps_lf_line_endings_when_the_browser_sends_crlf(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"a\nb\n"}) / "user.md"
    atomic_write(path, "x\r\ny\r\n", file_version(path))
    assert path.read_bytes() == b"x\ny\n"


def test_remove_override_deletes_the_jids_file_when_the_version_matches(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"identity.md": "mine"})
    remove_override(jid_dir, "identity.md", sha(b"mine"))
    assert not (jid_dir / "identity.md").exists()


def test_remove_override_refuses_a_stale_version(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"identity.md": "changed"})
    with pytest.raises(Conflict):
        remove_override(jid_dir, "identity.md", sha(b"mine"))
    assert (jid_dir / "identity.md").read_text() == "changed"


def test_remove_override_refuses_files_that_are_not_persona_files(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"memory.md": "x"})
    with pytest.raises(UnsafePath):
        remove_override(jid_dir, "memory.md", sha(b"x"))


def test_remove_file_of_an_absent_file_expected_absent_does_nothing(tmp_path):
    remove_file(tmp_path / "identity.md", "absent")
    assert os.listdir(tmp_path) == []


# One unit: the lock, and the record around the rename


class Recorder:
    """A record hook that notes what it saw, standing for the views' database transaction."""

    def __init__(self, fail_on_enter=False, fail_on_exit=False):
        self.fail_on_enter, self.fail_on_exit = fail_on_enter, fail_on_exit
        self.seen, self.outcome = None, None

    @contextlib.contextmanager
    def __call__(self, before, after):
        self.seen = (before, after)
        if self.fail_on_enter:
            raise RuntimeError("database is locked")
        try:
            yield
        except BaseException:
            self.outcome = "rolled back"
            raise
        if self.fail_on_exit:
            self.outcome = "commit failed"
            raise RuntimeError("commit failed")
        self.outcome = "committed"


def slow_rename(monkeypatch):
    """Renames that take a moment, as on a busy disk: a window for a racing writer."""
    rename = os.replace

    def slow(src, dst):
        time.sleep(0.005)
        rename(src, dst)

    monkeypatch.setattr(writes.os, "replace", slow)


def race(calls: list) -> list:
    """Run the calls at once, one thread each; each result or the exception it raised."""
    barrier = threading.Barrier(len(calls))
    results = [None] * len(calls)

    def run(n):
        barrier.wait()
        try:
            results[n] = calls[n]()
        except Exception as error:  # noqa: BLE001 - the outcome is what the test looks at
            results[n] = error

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_concurrent_writes_from_one_version_have_exactly_one_winner(tmp_path, monkeypatch):
    slow_rename(monkeypatch)
    path = make_tree(tmp_path, {"memory.md": "start\n"}) / "memory.md"
    for round_ in range(20):
        version = file_version(path)
        texts = [f"round {round_} writer {n}\n" for n in range(3)]
        results = race([lambda t=t, v=version: atomic_write(path, t, v) for t in texts])
        winners = [text for text, result in zip(texts, results, strict=True) if isinstance(result, str)]
        assert len(winners) == 1, results
        assert all(isinstance(r, Conflict) for r in results if not isinstance(r, str))
        assert path.read_text() == winners[0]


def lock_and_report(folder: str, reports, answers) -> None:
    with ws.locked(Path(folder)):
        reports.put("locked")
        answers.get()  # hold the lock until the parent has tried to take it


def test_the_write_lock_holds_across_processes(tmp_path):
    context = multiprocessing.get_context("fork")
    reports, answers = context.Queue(), context.Queue()
    child = context.Process(target=lock_and_report, args=(str(tmp_path), reports, answers))
    child.start()
    assert reports.get(timeout=30) == "locked"
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        with pytest.raises(BlockingIOError):
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        answers.put("done")
        child.join(30)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once the child is done
    finally:
        os.close(fd)
    assert child.exitcode == 0


def test_the_record_sees_the_bytes_replaced_and_commits_after_the_rename(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"caf\xe9\r\n"}) / "user.md"
    record = Recorder()
    atomic_write(path, "new\n", file_version(path), record)
    assert record.seen == (b"caf\xe9\r\n", b"new\r\n")
    assert record.outcome == "committed"


def test_a_record_that_cannot_start_leaves_the_file_untouched(tmp_path):
    path = make_tree(tmp_path, {"memory.md": "precious\n"}) / "memory.md"
    with pytest.raises(RuntimeError, match="database is locked"):
        atomic_write(path, "mine\n", file_version(path), Recorder(fail_on_enter=True))
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_a_failed_rename_rolls_the_record_back(tmp_path, monkeypatch):
    path = make_tree(tmp_path, {"memory.md": "precious\n"}) / "memory.md"

    def crash(src, dst):
        raise OSError("power cut")

    monkeypatch.setattr(writes.os, "replace", crash)
    record = Recorder()
    with pytest.raises(OSError, match="power cut"):
        atomic_write(path, "half-done\n", file_version(path), record)
    assert record.outcome == "rolled back"
    assert path.read_text() == "precious\n"
    assert os.listdir(tmp_path) == ["memory.md"]


def test_a_failed_commit_puts_the_old_bytes_and_mode_back(tmp_path):
    path = make_tree(tmp_path, {"memory.md": b"caf\xe9\n"}) / "memory.md"
    path.chmod(0o640)
    with pytest.raises(RuntimeError, match="commit failed"):
        atomic_write(path, "mine\n", file_version(path), Recorder(fail_on_exit=True))
    assert path.read_bytes() == b"caf\xe9\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["memory.md"]


def test_a_failed_commit_of_a_new_file_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError):
        atomic_write(tmp_path / "identity.md", "mine\n", "absent", Recorder(fail_on_exit=True))
    assert os.listdir(tmp_path) == []


def test_a_failed_commit_of_a_remove_puts_the_file_back(tmp_path):
    path = make_tree(tmp_path, {"identity.md": "mine\n"}) / "identity.md"
    record = Recorder(fail_on_exit=True)
    with pytest.raises(RuntimeError):
        remove_file(path, file_version(path), record)
    assert record.seen == (b"mine\n", None)
    assert path.read_text() == "mine\n"


def test_atomic_write_of_bytes_writes_them_as_they_are(tmp_path):
    path = make_tree(tmp_path, {"user.md": b"a\r\nb\r\n"}) / "user.md"
    atomic_write(path, b"caf\xe9\nx\n", file_version(path))
    assert path.read_bytes() == b"caf\xe9\nx\n"


# /new


HISTORY = '{"type":"session","version":1,"created":"x","jid":"a@b.c"}\n{"type":"message","role":"user","content":"hi"}\n'


def test_archive_session_moves_history_to_a_timestamped_archive(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    archived = archive_session(jid_dir, datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC))
    assert archived == jid_dir.resolve() / "sessions" / "20250601-143022.jsonl"
    assert archived.read_text() == HISTORY
    assert not (jid_dir / "history.jsonl").exists()


def test_archive_session_never_overwrites_an_archive_from_the_same_second(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    now = datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC)
    first = archive_session(jid_dir, now)
    (jid_dir / "history.jsonl").write_text(HISTORY.replace("hi", "second"))
    second = archive_session(jid_dir, now)
    (jid_dir / "history.jsonl").write_text(HISTORY.replace("hi", "third"))
    third = archive_session(jid_dir, now)
    assert [p.name for p in (first, second, third)] == [
        "20250601-143022.jsonl",
        "20250601-143022-1.jsonl",
        "20250601-143022-2.jsonl",
    ]
    assert first.read_text() == HISTORY
    assert "second" in second.read_text()
    assert jid_status(tmp_path, "a@b.c").archived_sessions == 3


def test_archive_session_names_the_archive_in_utc(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    paris = timezone(timedelta(hours=2))
    assert (
        archive_session(jid_dir, datetime(2025, 6, 1, 16, 30, 22, tzinfo=paris)).name
        == "20250601-143022.jsonl"
    )


def test_archive_session_without_history_returns_none(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"user.md": "x"})
    assert archive_session(jid_dir, datetime.now(UTC)) is None
    assert not (jid_dir / "sessions").exists()


def test_archive_session_leaves_a_session_without_messages_alone(tmp_path):
    header_only = '{"type":"session","version":1,"created":"x","jid":"a@b.c"}\n'
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": header_only})
    assert archive_session(jid_dir, datetime.now(UTC)) is None
    assert (jid_dir / "history.jsonl").read_text() == header_only


def test_concurrent_new_from_one_version_archives_once(tmp_path, monkeypatch):
    slow_rename(monkeypatch)
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})
    now = datetime(2025, 6, 1, 14, 30, 22, tzinfo=UTC)
    for _ in range(10):
        version = file_version(jid_dir / "history.jsonl")
        results = race([lambda v=version: archive_session(jid_dir, now, v) for _ in range(3)])
        assert sum(isinstance(r, Path) for r in results) == 1, results
        assert sum(isinstance(r, Conflict) for r in results) == 2
        (jid_dir / "history.jsonl").write_text(HISTORY)
    assert len(list((jid_dir / "sessions").iterdir())) == 10


def test_a_failed_commit_of_new_moves_the_history_back(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"history.jsonl": HISTORY})

    @contextlib.contextmanager
    def record(archive):
        yield
        raise RuntimeError("commit failed")

    with pytest.raises(RuntimeError):
        archive_session(jid_dir, datetime.now(UTC), file_version(jid_dir / "history.jsonl"), record)
    assert (jid_dir / "history.jsonl").read_text() == HISTORY
    assert list((jid_dir / "sessions").iterdir()) == []


def test_archive_session_of_the_sample_keeps_the_legacy_archive(sample):
    alice = sample / "alice@example.com"
    archive_session(alice, datetime(2025, 6, 3, 8, 0, 0, tzinfo=UTC))
    assert sorted(p.name for p in (alice / "sessions").iterdir()) == [
        "20250601-143022.md",
        "20250603-080000.jsonl",
    ]


# /forget


def test_forget_user_erases_active_memory_and_keeps_archives_and_overrides(tmp_path):
    jid_dir = make_tree(
        tmp_path / "a@b.c",
        {
            "history.jsonl": HISTORY,
            "history.md": "### user\nold\n",
            "user.md": "profile",
            "context.md": "legacy",
            "memory.md": "notes",
            "knowledge.jsonl": '{"key":"k","content":"c","ts":"t"}\n',
            f"files/{UUID}_a.png": b"x",
            "sessions/20250101-000000.jsonl": HISTORY,
            "identity.md": "Room identity",
            "instructions.md": "Room rules",
        },
    )
    erased = forget_user(jid_dir)
    assert erased == [
        "history.jsonl",
        "history.md",
        "user.md",
        "context.md",
        "memory.md",
        "knowledge.jsonl",
        "files/",
    ]
    assert sorted(p.name for p in jid_dir.iterdir()) == ["identity.md", "instructions.md", "sessions"]
    assert (jid_dir / "sessions" / "20250101-000000.jsonl").read_text() == HISTORY


def forget_tree(tmp_path: Path) -> Path:
    return make_tree(
        tmp_path / "memory" / "a@b.c",
        {
            "history.jsonl": HISTORY,
            "user.md": "profile",
            "memory.md": "notes",
            f"files/{UUID}_a.png": b"png",
            "identity.md": "Room identity",
        },
    )


def test_forget_user_records_names_sizes_and_hashes_before_erasing(tmp_path):
    jid_dir = forget_tree(tmp_path)
    seen = []

    def before_erasing(plan):
        seen.append((plan, sorted(p.name for p in jid_dir.iterdir())))

    forget_user(jid_dir, None, before_erasing)
    plan, present = seen[0]
    assert present == ["files", "history.jsonl", "identity.md", "memory.md", "user.md"]
    assert plan.names == ("history.jsonl", "user.md", "memory.md", "files/")
    assert ws.ErasedFile("memory.md", 5, sha(b"notes")) in plan.files
    assert ws.ErasedFile(f"files/{UUID}_a.png", 3, sha(b"png")) in plan.files


def test_forget_user_erases_nothing_when_the_record_fails(tmp_path):
    jid_dir = forget_tree(tmp_path)

    def before_erasing(plan):
        raise RuntimeError("database is locked")

    with pytest.raises(RuntimeError):
        forget_user(jid_dir, None, before_erasing)
    assert sorted(p.name for p in jid_dir.iterdir()) == [
        "files",
        "history.jsonl",
        "identity.md",
        "memory.md",
        "user.md",
    ]


def test_forget_user_refuses_a_plan_that_changed_since_it_was_confirmed(tmp_path):
    jid_dir = forget_tree(tmp_path)
    version = ws.forget_plan(jid_dir).version
    (jid_dir / "memory.md").write_text("notes the agent wrote since")
    with pytest.raises(Conflict):
        forget_user(jid_dir, version)
    assert (jid_dir / "memory.md").exists() and (jid_dir / "history.jsonl").exists()


def link_outside(jid_dir: Path, name: str) -> None:
    outside = jid_dir.parents[1] / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_text("outside")
    (jid_dir / name).symlink_to(outside / "secret.md")


@pytest.mark.parametrize(
    ("spoil", "reason"),
    [
        (lambda d: (d / "memory.md").unlink() or (d / "memory.md").mkdir(), "memory.md is a folder"),
        (lambda d: (d / "knowledge.jsonl").mkdir(), "knowledge.jsonl is a folder"),
        (lambda d: os.mkfifo(d / "context.md"), "context.md is not a regular file"),
        (lambda d: link_outside(d, "history.md"), "history.md is a link leading outside"),
        (lambda d: link_outside(d, f"files/{UUID}_b.txt"), f"files/{UUID}_b.txt is a link leading"),
        (lambda d: (d / "user.md").unlink() or (d / "user.md").symlink_to(d / "gone"), "user.md: cannot"),
    ],
)
def test_forget_user_checks_every_path_and_erases_nothing_when_one_is_wrong(tmp_path, spoil, reason):
    jid_dir = forget_tree(tmp_path)
    spoil(jid_dir)
    before = sorted(str(p.relative_to(jid_dir)) for p in jid_dir.rglob("*"))
    with pytest.raises(UnsafePath, match=reason):
        forget_user(jid_dir)
    assert sorted(str(p.relative_to(jid_dir)) for p in jid_dir.rglob("*")) == before


def test_forget_user_refuses_a_files_folder_linked_outside_the_root(tmp_path):
    jid_dir = forget_tree(tmp_path)
    shutil.rmtree(jid_dir / "files")
    outside = make_tree(tmp_path / "outside", {f"{UUID}_a.png": b"png"})
    (jid_dir / "files").symlink_to(outside, target_is_directory=True)
    with pytest.raises(UnsafePath, match="files/ is a link leading outside"):
        forget_user(jid_dir)
    assert (jid_dir / "memory.md").exists() and (outside / f"{UUID}_a.png").exists()


def test_forget_user_keeps_an_empty_files_folder_like_the_agent(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"files/": "", "memory.md": "x"})
    assert forget_user(jid_dir) == ["memory.md"]
    assert (jid_dir / "files").is_dir()


def test_forget_user_with_nothing_to_erase_returns_an_empty_list(tmp_path):
    jid_dir = make_tree(tmp_path / "a@b.c", {"sessions/20250101-000000.md": "x"})
    assert forget_user(jid_dir) == []


def test_forget_user_on_the_sample_leaves_only_the_archive(sample):
    alice = sample / "alice@example.com"
    assert forget_user(alice) == ["history.jsonl", "user.md", "memory.md"]
    status = jid_status(sample, "alice@example.com")
    assert (status.messages, status.profile, status.memory, status.archived_sessions) == (0, False, False, 1)


# Odd files: refused without being opened, each where it is read


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


def test_a_fifo_profile_is_an_error_section_and_no_prompt(tmp_path, fifo):
    root = make_tree(tmp_path / "memory", {"alice@example.com/memory.md": "notes"})
    fifo(root / "alice@example.com" / "user.md")
    prompt = effective_prompt(root, "alice@example.com", "Fluux Agent")
    assert prompt.errors == ("alice@example.com/user.md: not a regular file (a FIFO)",)
    assert prompt.text == ""


def test_a_fifo_history_counts_nothing_and_is_reported_by_the_status(tmp_path, fifo):
    root = make_tree(tmp_path / "memory", {"alice@example.com/memory.md": "notes"})
    fifo(root / "alice@example.com" / "history.jsonl")
    status = jid_status(root, "alice@example.com")
    assert status.messages == 0 and status.is_room is False
    assert status.errors == ("alice@example.com/history.jsonl: not a regular file (a FIFO)",)


def test_a_fifo_knowledge_store_is_a_problem_of_the_whole_file(tmp_path, fifo):
    path = fifo(tmp_path / "knowledge.jsonl")
    assert read_knowledge(path).problems == [ws.LineProblem(0, "not a regular file (a FIFO)")]


def test_search_and_the_secrets_scan_pass_over_a_fifo(tmp_path, fifo):
    root = make_tree(
        tmp_path / "memory",
        {"alice@example.com/user.md": "mail bob@example.org", "alice@example.com/sessions/": ""},
    )
    fifo(root / "alice@example.com" / "memory.md")
    fifo(root / "alice@example.com" / "sessions" / "20250101-000000.jsonl")
    assert [hit.file for hit in search_memory(root, "mail")] == ["user.md"]
    assert [f.file for f in scan_tree(root)] == ["alice@example.com/user.md"]
    assert fifo.opened == []


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


def test_a_history_link_leaving_the_root_is_not_read_to_tell_a_room(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text('{"type":"message","role":"user","content":"hi","sender":"nick@muc"}\n')
    root = make_tree(tmp_path / "memory", {"alice@example.com/memory.md": "notes"})
    (root / "alice@example.com" / "history.jsonl").symlink_to(outside)
    assert ws.is_room("alice@example.com", root / "alice@example.com") is False


def test_a_name_over_255_bytes_is_refused_before_the_file_system_sees_it(tmp_path):
    with pytest.raises(UnsafePath, match="longer than 255 bytes"):
        resolve_jid_dir(tmp_path, "a" * 256)
    with pytest.raises(UnsafePath, match="longer than 255 bytes"):
        resolve_member(tmp_path, "é" * 128)
