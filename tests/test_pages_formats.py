"""Every format reads clean: OpenClaw's gateway turns and pi's own sessions on the pages."""

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.urls import reverse

from sessionviewer import transcripts
from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec, parse_root
from sessionviewer.transcripts import store

pytestmark = pytest.mark.django_db

DEMO = Path(settings.BASE_DIR) / "demo"
FIXTURES = Path(__file__).parent / "fixtures"
SPECS = [
    RootSpec(DEMO / "openclaw/agents", "openclaw"),
    RootSpec(DEMO / "pi/sessions", "pi"),
    RootSpec(FIXTURES / "openclaw/gateway_turns.jsonl", None),
]


@pytest.fixture
def indexed(settings, tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "gateway_turns.jsonl").write_bytes((FIXTURES / "openclaw/gateway_turns.jsonl").read_bytes())
    specs = [*SPECS[:2], RootSpec(loose, "openclaw")]
    settings.SESSIONVIEWER_ROOTS = [f"{spec.format}={spec.path}" for spec in specs]
    index_roots(specs)


def body_of(client, url: str, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200, response.content[:2000]
    return response.content.decode()


def telegram() -> Session:
    return Session.objects.get(channel="telegram", status="active", format="openclaw")


def test_a_gateway_turn_shows_its_sender_as_a_chip_with_the_json_one_click_away(client, indexed, viewer):
    body = body_of(client, telegram().get_absolute_url())
    chip = re.search(r'<details class="sender-chip">.*?</details>', body, re.S)
    assert chip, "no sender chip"
    assert '<span class="chip sender">Dana (424242001) · telegram</span></summary>' in chip[0]
    shown = re.sub(r"<[^>]+>", "", chip[0])  # the JSON, highlighted, in the details
    assert '"sender_id": "424242001"' in shown
    # The message itself is what Dana wrote, without the gateway's blocks.
    message = body[chip.end() : body.index("</li>", chip.end())]
    assert "Morning! Did any orders fail overnight?" in message
    assert "untrusted metadata" not in message


def test_a_gateway_envelope_opens_as_its_json_without_the_fences_the_model_reads(client, tmp_path, viewer):
    loose = tmp_path / "loose"
    loose.mkdir()
    fixture = FIXTURES / "openclaw/gateway_client_envelope.jsonl"
    (loose / fixture.name).write_bytes(fixture.read_bytes())
    index_roots([RootSpec(loose, "openclaw")])
    body = body_of(client, Session.objects.get(key="gateway_client_envelope").get_absolute_url())
    chip = re.search(r'<details class="sender-chip">.*?</details>', body, re.S)
    assert chip, "no sender chip"
    assert "```" not in body
    assert '<p class="envelope-kind">Sender</p><pre class="highlight"><code>' in chip[0]
    assert '"label": "openclaw-tui (gateway-client)"' in re.sub(r"<[^>]+>", "", chip[0])
    assert '<p class="envelope-line">Sent: Sun 2026-03-08 22:03 GMT+9</p>' in chip[0]
    message = body[chip.end() : body.index("</li>", chip.end())]
    assert "<p>こんにちは</p>" in message
    assert "GMT+9" not in message


def test_a_reply_with_a_directive_says_what_it_answered_and_hides_the_directive(client, indexed, viewer):
    body = body_of(client, telegram().get_absolute_url())
    assert "[[reply_to_current]]" not in body
    assert '<p class="reply-to">↩ Replied to the message it answers</p>' in body


def test_an_agent_failure_before_any_reply_is_shown_not_hidden(client, indexed, viewer):
    session = Session.objects.get(key="gateway_turns")
    body = body_of(client, session.get_absolute_url())
    assert "Agent failed before reply: No API key found" in body
    failed = body[: body.index("Agent failed before reply")]
    assert " noise" not in failed[failed.rindex("<li ") :]


def test_a_failed_tool_result_gets_the_error_badge(client, indexed, viewer):
    body = body_of(client, Session.objects.get(key="gateway_turns").get_absolute_url())
    results = re.findall(r'<div class="tool-result error.*?</div>', body, re.S)
    assert len(results) == 2  # status "error" in the JSON, and a bare ENOENT
    assert all('<span class="badge error">error</span>' in r for r in results)


def test_a_heartbeat_does_not_title_the_session(client, indexed, viewer):
    session = Session.objects.get(key="gateway_turns")
    assert session.display_title == "Can you read the notes and tell me what is left for the launch?"


def test_a_pi_session_is_pi_on_the_list_in_the_facet_and_the_api(client, indexed, viewer):
    session = Session.objects.get(format="pi")
    assert session.source.format == "pi"
    listed = body_of(client, reverse("session-list"), format="pi")
    assert session.get_absolute_url() in listed
    assert 'src="/static/marks/pi.svg"' in listed
    assert reverse("session-detail", args=[telegram().id]) not in listed
    api = client.get(reverse("api-session-list"), {"format": "pi"}).json()
    assert [s["format"] for s in api["sessions"]] == ["pi"]
    facets = client.get(reverse("api-session-facets")).json()["facets"]
    formats = next(f for f in facets if f["name"] == "format")
    assert {v["value"]: v["count"] for v in formats["values"]}["pi"] == 1


def test_pis_models_are_those_that_answered_and_a_switch_shows_where(client, indexed, viewer):
    session = Session.objects.get(format="pi")
    assert session.models_used == ["claude-sonnet-4-5", "gpt-5.1-codex"]
    body = body_of(client, session.get_absolute_url())
    switch = body.index("model: openai/gpt-5.1-codex")
    assert (
        body.index("sharp at twice the shown size")
        < switch
        < body.index("Do the old 160 px files need to go?")
    )


def test_a_model_switch_shows_in_a_long_sessions_prepared_thread_too(client, indexed, viewer, monkeypatch):
    monkeypatch.setattr(store, "PREPARE_FROM", 1)  # built from light entries, as a long session's is
    session = Session.objects.get(format="pi")
    assert transcripts.prepare_snapshots([session.id]) == 1
    transcripts.clear_cache()
    body = body_of(client, session.get_absolute_url())
    assert "model: openai/gpt-5.1-codex" in body


def test_a_root_can_be_tagged_pi():
    assert parse_root("pi=~/.pi/agent/sessions").format == "pi"


def test_migration_0020_reads_openclaw_sessions_again_and_recuts_long_titles(indexed, settings):
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "sessionviewer.migrations.0024_read_openclaw_again_and_cut_titles_on_words"
    )
    ids = sorted(Session.objects.values_list("id", flat=True))
    # What an older index left: pi listed as OpenClaw, a heartbeat for a title.
    Session.objects.filter(format="pi").update(format="openclaw")
    Session.objects.filter(key="gateway_turns").update(first_prompt="Read HEARTBEAT.md if it exists")
    migration.read_openclaw_again_and_cut_titles(apps, None)
    index_roots([RootSpec(spec.path, spec.format) for spec in map(parse_root, settings.SESSIONVIEWER_ROOTS)])
    assert sorted(Session.objects.values_list("id", flat=True)) == ids
    assert Session.objects.get(key="gateway_turns").first_prompt.startswith("Can you read the notes")
    assert Session.objects.filter(format="pi").count() == 1


def test_migration_0020_recuts_another_formats_200_character_title_in_place(indexed):
    import importlib

    from django.apps import apps

    migration = importlib.import_module(
        "sessionviewer.migrations.0024_read_openclaw_again_and_cut_titles_on_words"
    )
    session = Session.objects.get(format="pi")
    Session.objects.filter(id=session.id).update(format="go_agent", first_prompt="word " * 39 + "wordy")
    migration.read_openclaw_again_and_cut_titles(apps, None)
    assert Session.objects.get(id=session.id).first_prompt == ("word " * 39).rstrip() + "…"


def test_the_list_cuts_a_long_title_after_a_whole_word(client, indexed, viewer):
    Session.objects.filter(key="gateway_turns").update(first_prompt="Refactor the checkout " + "flow " * 30)
    body = body_of(client, reverse("session-list"), _flat="1")
    shown = re.search(r'<a href="/sessions/\d+/">(Refactor the checkout [^<]*)</a>', body)[1]
    assert len(shown) <= 100 and shown.endswith("flow…")
