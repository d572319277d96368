"""The effective system prompt, section by section, as the agent builds it."""

from datetime import date

import pytest

from sessionviewer.workspaces import (
    UnsafePath,
    default_prompt,
    effective_prompt,
    format_current_date,
    is_blank,
    rust_trim,
)

from .workspace_files import (
    DATE_LINE,
    MONDAY,
    OVERRIDES,
    UUID,
    make_tree,
    prompt_text,
    sample_file,
)

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


def test_a_fifo_profile_is_an_error_section_and_no_prompt(tmp_path, fifo):
    root = make_tree(tmp_path / "memory", {"alice@example.com/memory.md": "notes"})
    fifo(root / "alice@example.com" / "user.md")
    prompt = effective_prompt(root, "alice@example.com", "Fluux Agent")
    assert prompt.errors == ("alice@example.com/user.md: not a regular file (a FIFO)",)
    assert prompt.text == ""


def test_a_prompt_gives_its_text_state_and_sections_as_json(tmp_path):
    make_tree(tmp_path, {"identity.md": "I am Fluux.", "a@example.com/": ""})
    data = effective_prompt(tmp_path, "a@example.com", "Fluux Agent", MONDAY).to_dict()
    assert (data["ok"], data["errors"], data["uses_default"]) == (True, [], False)
    assert data["sections"][0] == {
        "kind": "identity",
        "title": "Identity",
        "source": "identity.md",
        "text": "I am Fluux.",
        "error": None,
    }
    assert data["text"].startswith("I am Fluux.")
