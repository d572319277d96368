"""How pages show formats, times and paths (templatetags/display.py), and the session header's
rows for what a format records."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.urls import reverse

from sessionviewer.models import Session
from sessionviewer.readers import FORMATS, format_name, format_of
from sessionviewer.templatetags import display
from sessionviewer.templatetags.display import format_label, relative, short_path, shorten, when

from .pages import page

STATIC = Path(__file__).resolve().parents[1] / "static"
NOW = datetime(2026, 3, 10, 15, 0, tzinfo=UTC)


def test_every_format_has_a_human_name_and_a_mark():
    assert {key: format_name(key) for key in FORMATS} == {
        "claude_code": "Claude Code",
        "go_agent": "Go agent",
        "openclaw": "OpenClaw",
        "pi": "pi",
        "fluux_xmpp": "Fluux",
        "codex": "Codex CLI",
        "opencode": "opencode",
        "gemini_cli": "Gemini CLI",
    }
    assert all((STATIC / format_of(key).mark).is_file() for key in FORMATS)


def test_an_unknown_format_keeps_its_key():
    assert format_name("someday_agent") == "someday_agent"
    assert str(format_label("someday_agent")) == '<span class="format">someday_agent</span>'


def test_format_label_hides_the_mark_from_screen_readers_and_names_the_format():
    label = str(format_label("claude_code"))
    assert label == (
        '<span class="format"><img class="mark" src="/static/marks/claude_code.svg" alt="" width="16" height="16">'
        "Claude Code</span>"
    )


@pytest.mark.parametrize(
    ("ago", "text"),
    [
        (timedelta(seconds=20), "just now"),
        (timedelta(minutes=1), "1 minute ago"),
        (timedelta(minutes=42), "42 minutes ago"),
        (timedelta(hours=3), "3 hours ago"),
        (timedelta(hours=23), "23 hours ago"),
        (timedelta(hours=26), "yesterday"),
        (timedelta(days=4), "4 days ago"),
        (timedelta(days=9), "1 Mar"),
        (timedelta(days=400), "3 Feb 2025"),
    ],
)
def test_relative_times_read_as_a_person_says_them(ago, text):
    assert relative(NOW - ago, NOW) == text


def test_a_time_in_the_future_shows_its_date_not_a_negative_age():
    assert relative(NOW + timedelta(days=2), NOW) == "12 Mar"


def test_when_gives_the_exact_time_on_hover():
    moment = datetime(2026, 3, 5, 8, 41, 12, tzinfo=UTC)
    assert str(when(moment)) == (
        '<time datetime="2026-03-05T08:41:12+00:00" title="2026-03-05 08:41:12 UTC">'
        f"{relative(moment, datetime.now(UTC))}</time>"
    )
    assert when(None) == ""


def test_long_paths_are_shortened_from_the_left_with_the_whole_path_on_hover():
    path = "/home/me/src/spotter-worktrees/spotter-4te"
    assert shorten(path) == "…/spotter-worktrees/spotter-4te"
    assert (
        str(short_path(path))
        == f'<span class="path" title="{path}">…/<wbr>spotter-worktrees/<wbr>spotter-4te</span>'
    )


def test_short_paths_and_names_stay_whole():
    assert shorten("/srv/webshop") == "/srv/webshop"
    assert shorten("a-very-long-project-name-without-slashes") == "a-very-long-project-name-without-slashes"
    # Whole, and escaped here: it may wrap after a separator, never inside a name.
    assert short_path("/srv/<b>") == "/<wbr>srv/<wbr>&lt;b&gt;"
    assert short_path("webshop") == "webshop"


def test_a_shortened_path_is_escaped():
    assert str(short_path("/home/me/src/projects/<script>/x")) == (
        '<span class="path" title="/home/me/src/projects/&lt;script&gt;/x">…/<wbr>&lt;script&gt;/<wbr>x</span>'
    )


# --- Pages ---------------------------------------------------------------------------------------------

pytestmark = pytest.mark.django_db


def header(client, session: Session) -> str:
    body = page(client, reverse("session-detail", args=[session.id]))
    return body[
        body.index('<header class="session-head">') : body.index("</header>", body.index("session-head"))
    ]


def meta(head: str, term: str) -> str | None:
    found = re.search(rf"<dt>{term}</dt><dd[^>]*>(.*?)</dd>", head, re.S)
    return found and found.group(1)


@pytest.mark.usefixtures("demo", "viewer")
def test_session_list_names_formats_and_shortens_projects(client):
    body = page(client, reverse("session-list"))
    assert ">fluux_xmpp<" not in body and ">claude_code<" not in body
    assert ">Claude Code</span>" in body and ">Fluux</span>" in body
    # /home/demo/.openclaw/workspace: the home folded, short enough to show whole
    assert ">~/<wbr>.openclaw/<wbr>workspace</a>" in body
    assert re.search(
        r"<time datetime=\"2026-03-05T08:41:[0-9:.+]*\" title=\"2026-03-05 08:41:[0-9]* UTC\">5 Mar( 2026)?</time>",
        body,
    )


@pytest.mark.usefixtures("demo", "viewer")
def test_activity_names_formats_in_its_charts_and_table(client):
    body = page(client, reverse("activity"))
    assert ">Claude Code</text>" in body
    assert ">Claude Code</span></td>" in body


@pytest.mark.usefixtures("demo", "viewer")
def test_header_of_a_fluux_chat_leaves_out_tokens_and_the_missing_agent(client):
    session = Session.objects.filter(format="fluux_xmpp", peer_kind="direct").first()
    head = header(client, session)
    assert meta(head, "Tokens") is None
    assert "0 total" not in head
    assert meta(head, "Agent") == "xmpp · direct · alice@example.com"
    assert ">Fluux</span>" in meta(head, "Format")


@pytest.mark.usefixtures("demo", "viewer")
def test_header_of_a_claude_code_session_lists_the_tokens_it_used(client):
    session = Session.objects.filter(format="claude_code").exclude(cache_write_tokens=0).first()
    head = header(client, session)
    tokens = meta(head, "Tokens")
    assert tokens.startswith(f"{session.total_tokens / 1000:.1f}k total: ")
    assert "cache write" in tokens
    assert meta(head, "Agent") is None  # Claude Code records no agent or channel


@pytest.mark.usefixtures("demo", "viewer")
def test_header_of_every_format_has_no_separator_before_a_missing_part(client):
    for fmt in FORMATS:
        for session in Session.objects.filter(format=fmt):
            head = header(client, session)
            assert not re.search(r"<dd>\s*·", head), (fmt, session.id)
            assert ": ·" not in head and "· ·" not in head, (fmt, session.id)


def test_favicon_ico_redirects_to_the_svg_icon(client):
    response = client.get("/favicon.ico")
    assert response.status_code == 301
    assert response["Location"] == "/static/favicon.svg"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (None, "no price"),
        (0, "$0"),
        (1234.5, "$1,234.50"),
        (0.108, "$0.108"),
        (0.06, "$0.06"),
        (0.00002, "<$0.0001"),
    ],
)
def test_dollars_show_cents_or_three_digits_and_no_price_is_never_zero(value, shown):
    assert display.usd(value) == shown


def test_a_windows_path_is_shortened_at_its_backslashes():
    assert (
        shorten("C:\\Users\\downl\\Desktop\\clawdbot-main3\\clawdbot-main")
        == "…\\clawdbot-main3\\clawdbot-main"
    )
