"""Which user lines a harness wrote is each format's own rule (readers.Format.harness_line):
Claude Code's commands and caveats, and nothing in the formats whose harness writes none. A
prompt in another format that looks like one of Claude Code's is what a person typed: it
titles its session, the index keeps no harness kind for it, and the page shows it as typed.
Migration 0030 reads again the sessions the old rule, Claude Code's for every format, marked."""

from __future__ import annotations

import importlib

import orjson
import pytest
from django.apps import apps
from django.db.models import F

from sessionviewer.index import index_roots, rows
from sessionviewer.models import Entry, Session
from sessionviewer.roots import RootSpec

from .go_agent_files import go_line
from .pages import page

COMMAND = "<command-name>/clear</command-name>\n<command-message>clear</command-message>"
read_again = importlib.import_module("sessionviewer.migrations.0030_harness_lines_by_format").read_again


def _go_session(folder):
    folder.mkdir(parents=True)
    header = b'{"type":"session","id":"g","version":1,"timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp/g"}\n'
    body = go_line(1, "", "user", COMMAND) + go_line(2, "m00001", "assistant", "Cleared, as you asked.")
    (folder / "20260101-000000-0000abcd.jsonl").write_bytes(header + body)


def _claude_session(folder):
    folder.mkdir(parents=True)
    line = {"type": "user", "uuid": "u1", "parentUuid": None, "sessionId": "s", "cwd": "/tmp/c"}
    line |= {"timestamp": "2026-01-01T00:00:00Z", "message": {"role": "user", "content": COMMAND}}
    (folder / "s.jsonl").write_bytes(orjson.dumps(line) + b"\n")


@pytest.fixture
def both(tmp_path):
    _go_session(tmp_path / "go")
    _claude_session(tmp_path / "claude" / "-tmp-c")
    specs = [RootSpec(tmp_path / "go", "go_agent"), RootSpec(tmp_path / "claude", "claude_code")]
    assert index_roots(specs).errors == []
    return specs


def _harness_kinds(fmt: str) -> list[str | None]:
    facts = Entry.objects.filter(session__format=fmt, role="user").values_list("text_facts", flat=True)
    return [rows.harness_kind(f) for f in facts]


@pytest.mark.django_db
def test_a_line_like_claude_codes_command_is_a_command_only_in_claude_code(both):
    assert _harness_kinds("claude_code") == ["command"]
    assert _harness_kinds("go_agent") == [None]
    assert Session.objects.get(format="claude_code").first_prompt == ""
    assert Session.objects.get(format="go_agent").first_prompt.startswith("<command-name>/clear")


@pytest.mark.django_db
def test_the_page_shows_it_as_typed_in_the_go_agent_and_as_a_command_in_claude_code(client, both, viewer):
    go = page(client, Session.objects.get(format="go_agent").get_absolute_url())
    claude = page(client, Session.objects.get(format="claude_code").get_absolute_url())
    assert "harness command" not in go and "/clear" in go
    assert "harness command" in claude


@pytest.mark.django_db
def test_migration_0030_reads_again_the_other_formats_sessions_the_old_rule_marked(both):
    go, claude = Session.objects.get(format="go_agent"), Session.objects.get(format="claude_code")
    # What the old rule left in the Go agent's session: its prompt kept as a command, no title.
    command = 1 << 2  # index/rows.py: the first of readers.HARNESS_KINDS, in its place
    Entry.objects.filter(session=go, role="user").update(text_facts=F("text_facts").bitor(command))
    Session.objects.filter(id=go.id).update(first_prompt="")
    read_again(apps, None)
    go.refresh_from_db()
    claude.refresh_from_db()
    assert (go.read_offset, go.file_size) == (0, -1)  # read again whole at the next pass
    assert claude.read_offset > 0  # Claude Code's commands were right all along
    index_roots(both)
    assert Session.objects.get(id=go.id).first_prompt.startswith("<command-name>/clear")
    assert _harness_kinds("go_agent") == [None]


@pytest.mark.django_db
def test_migration_0030_leaves_meta_rows_the_old_rule_took_for_harness_text(both):
    # Codex's <environment_context> lines are meta: hidden and titling nothing either way.
    go = Session.objects.get(format="go_agent")
    command = 1 << 2
    Entry.objects.filter(session=go, role="user").update(
        is_meta=True, text_facts=F("text_facts").bitor(command)
    )
    read_again(apps, None)
    go.refresh_from_db()
    assert go.read_offset > 0


@pytest.mark.django_db
def test_migration_0030_reads_again_a_reminder_the_old_rule_hid(both):
    go = Session.objects.get(format="go_agent")
    all_hidden = 2
    reply = Entry.objects.filter(session=go, role="assistant")
    reply.update(text="<system-reminder>hush</system-reminder>", text_facts=F("text_facts").bitor(all_hidden))
    read_again(apps, None)
    go.refresh_from_db()
    assert go.read_offset == 0
