"""A transcript masks each possible secret's value (issue 31): on the first screen and in every
fragment that renders entries, with a mark per finding and a reveal button for those allowed;
a fingerprint marked not a secret shows in full; titles hold their credentials masked."""

from __future__ import annotations

import html
import json

import pytest
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import AuditEvent, SecretDismissal, Session
from sessionviewer.roots import RootSpec
from sessionviewer.transcripts.findings import transcript_masks
from sessionviewer.transcripts.masks import BASE, FILLER, Mask, Masks

from .fixture_files import CLAUDE_PROJECT, FIXTURES, index_fixture
from .opencode_files import fixture as opencode_fixture
from .opencode_files import write_storage
from .secret_inputs import (
    ANTHROPIC,
    ANTHROPIC_PI,
    AWS_ID,
    AWS_KEY,
    GHP,
    GHS,
    HF,
    NPM,
    NPM_CLAUDE,
    PAT,
    SLACK,
    STRIPE,
)
from .users import VIEWER, make_admin, make_user

# --- The masks themselves: no database ------------------------------------------------------------


def masks_of(*values: str) -> Masks:
    return Masks(
        [Mask(v, f'<mark id="m{n}">M{n}</mark>', f"<mark>M{n}</mark>", f"M{n}") for n, v in enumerate(values)]
    )


def test_a_placeholder_has_its_values_length_and_keeps_its_line_breaks():
    masks = masks_of("sk-secret-value", "a\nb")
    text = masks.text("x sk-secret-value y a\nb")
    assert len(text) == len("x sk-secret-value y a\nb")
    assert "sk-secret" not in text and text.count("\n") == 1
    assert text[2] == chr(BASE) and text[3:17] == FILLER * 14


def test_nothing_is_copied_where_no_value_is():
    masks = masks_of("sk-secret-value")
    data = {"a": ["plain", ("t", 1)], "b": None}
    assert masks.apply(data) is data
    masked = masks.apply({"a": ["plain", "with sk-secret-value"], "b": None})
    assert masked["a"][1] == "with " + chr(BASE) + FILLER * 14


def test_a_value_in_a_key_is_masked_too():
    assert masks_of("sk-secret-value").apply({"sk-secret-value": 1}) == {chr(BASE) + FILLER * 14: 1}


def test_the_swap_puts_the_mark_in_text_and_the_masked_text_in_a_tag():
    masks = masks_of("sk-secret-value")
    placeholder = masks.text("sk-secret-value")
    rendered = f'<p title="{placeholder}">{placeholder}</p>'
    assert masks.swap(rendered) == '<p title="M0"><mark id="m0">M0</mark></p>'


def test_a_run_split_between_elements_gives_one_mark():
    masks = masks_of("sk-secret-value")
    placeholder = masks.text("sk-secret-value")
    rendered = f'<span class="err">{placeholder[:3]}</span><span class="err">{placeholder[3:]}</span>'
    assert masks.swap(rendered) == '<span class="err"><mark id="m0">M0</mark></span><span class="err"></span>'


def test_inside_a_link_or_a_summary_the_mark_has_no_control():
    masks = masks_of("sk-secret-value")
    placeholder = masks.text("sk-secret-value")
    assert masks.swap(f'<a href="/x">{placeholder}</a> {placeholder}') == (
        '<a href="/x"><mark>M0</mark></a> <mark id="m0">M0</mark>'
    )
    assert masks.swap(f"<summary>{placeholder}</summary>") == "<summary><mark>M0</mark></summary>"


def test_the_files_own_private_use_characters_do_not_pass_for_placeholders():
    masks = masks_of("sk-secret-value")
    planted = chr(BASE) + FILLER * 3
    assert masks.swap(masks.text(planted)) == "\ufffd" * 4


def test_a_value_holding_another_is_masked_whole():
    masks = masks_of("sk-abc", "sk-abcdef")
    assert masks.swap(masks.text("sk-abcdef")) == '<mark id="m1">M1</mark>'


# --- The pages ----------------------------------------------------------------------------------------


# Each fixture: how to index it, and the values planted in it.
SESSIONS = {
    "claude_code": (
        ("claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1"),
        [ANTHROPIC, GHP, AWS_KEY, NPM_CLAUDE],
    ),
    "codex": (
        ("codex", "secrets_in_arguments_and_output.jsonl", "sessions/2025/11/03", "rollout-s1"),
        [GHP, AWS_KEY],
    ),
    "go_agent": (
        ("go_agent", "secrets_in_every_block.jsonl", "sessions", "20260226-143000-7c1e0a42"),
        [STRIPE, SLACK, "7hQ2mZ9vK4pL8rT3wX6nB1cD", "sk-proj-Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS", "S3cr3tPassw0rd", GHS, NPM],
    ),
    "openclaw": (
        ("openclaw", "secrets_in_every_block.jsonl", "agents/main/sessions", "6e6e6e6e"),
        [PAT, HF, NPM, "AIzaSyQ7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS2a", "glpat-Q7mZ2vK9pL4rT8wX3nB6"],
    ),
    "pi": (
        (
            "pi",
            "secrets_in_every_block.jsonl",
            "sessions/--home-user-api--",
            "2026-01-05T09-00-00-000Z_3f3f3f3f-1111-4222-8333-000000000031",
        ),
        [
            "SK0123456789abcdef0123456789abcdef",
            "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UiLCJyb2xlIjoiYWRtaW4ifQ.Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS",
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",  # the private key's body, after its BEGIN line
            ANTHROPIC_PI,
        ],
    ),
    "gemini_cli": (
        ("gemini_cli", "session-2026-03-04T10-20-9a8b7c6d.jsonl", "gemini/c0ffee00/chats", "session-2026-03-04T10-20-9a8b7c6d"),
        [
            "pypi-AgEIcHlwaS5vcmcCJGQ3ZTg5YjE0LWE3ZjItNDc3Ny1hMmQ2LTc4ZTZlNmQ5YzFhMA",
            "hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/Xy9Zq8Wv7Ut6Sr5Qp4On3Ml2",
            AWS_ID,
            "Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS2aE4yU6iO",
            GHS,
        ],
    ),
    "opencode": (None, [ANTHROPIC_PI, STRIPE, AWS_ID, PAT, HF]),
}  # fmt: skip


def index_session(tmp_path, name: str) -> Session:
    where, _ = SESSIONS[name]
    if where is None:
        write_storage(tmp_path, opencode_fixture("secrets_in_every_block.json"))
        index_roots([RootSpec(tmp_path, "opencode")])
        return Session.objects.get()
    return index_fixture(tmp_path, *where)


def leaks(body: str, values: list[str]) -> list[str]:
    """The values the body shows: as written, HTML-escaped or JSON-escaped."""
    return [v for v in values if v in body or html.escape(v) in body or json.dumps(v)[1:-1] in body]


def detail(session: Session) -> str:
    return reverse("session-detail", args=[session.id])


def entries_part(body: str) -> str:
    """The page from its entry list on: the header's list of findings left out."""
    return body[body.index('id="entry-list"') :]


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SESSIONS))
def test_the_first_screen_shows_no_planted_value_and_a_mark_per_finding(tmp_path, client, name):
    session = index_session(tmp_path, name)
    client.force_login(make_admin())
    body = client.get(detail(session)).content.decode()
    assert leaks(body, SESSIONS[name][1]) == []
    entries = entries_part(body)
    for finding in session.findings.all():
        assert (
            f'data-finding="{finding.id}"' in entries
            or f'data-fingerprint="{finding.fingerprint}"' in entries
        )
    assert 'class="secret" data-finding="' in entries
    assert chr(BASE) not in body and FILLER not in body


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SESSIONS))
def test_every_fragment_that_renders_entries_masks_too(tmp_path, client, name):
    session = index_session(tmp_path, name)
    client.force_login(make_admin())
    url, values = detail(session), SESSIONS[name][1]
    total = session.entries.count()
    fragments = {
        "chunk": {"_offset": "0"},
        "earlier": {"_offset": "0", "_stop": str(total), "_before": "1"},
        "poller": {"_after": "0", "_read": "0"},
    }
    for label, params in fragments.items():
        response = client.get(url, params, HTTP_HX_REQUEST="true")
        body = response.content.decode()
        assert response.status_code == 200, label
        assert "<html" not in body, label
        assert leaks(body, values) == [], label
        assert 'class="secret"' in body, label


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(SESSIONS))
def test_show_the_rest_of_a_block_masks_its_values(tmp_path, client, name):
    session = index_session(tmp_path, name)
    client.force_login(make_admin())
    values = SESSIONS[name][1]
    for finding in session.findings.all():
        url = reverse("session-entry-text", args=[session.id, finding.line, finding.block])
        response = client.get(url, {"_from": "0"}, HTTP_HX_REQUEST="true")
        if response.status_code == 404:
            continue  # a tool call's block: its arguments have no text to show the rest of
        body = response.content.decode()
        assert leaks(body, values) == [], (finding.line, finding.block)
        if finding.kind != "private_key" and session.entries.get(line=finding.line).text:
            assert 'class="secret"' in body or "terminal" not in body


@pytest.mark.django_db
def test_a_compaction_summary_loaded_as_its_fold_opens_is_masked(tmp_path, client):
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    text = (FIXTURES / "claude_code" / "two_compactions.jsonl").read_text()
    assert "Summary one" in text
    (folder / "s1.jsonl").write_text(
        text.replace("Summary one", f"Summary one with ANTHROPIC_API_KEY={ANTHROPIC}")
    )
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    assert session.findings.exists()
    client.force_login(make_user(VIEWER, "viewers"))
    response = client.get(detail(session), {"_summary": "4"}, HTTP_HX_REQUEST="true")
    body = response.content.decode()
    assert "Summary one with" in body
    assert leaks(body, [ANTHROPIC]) == []
    assert 'class="secret"' in body


@pytest.mark.django_db
def test_a_viewer_sees_marks_without_reveal_buttons(tmp_path, client):
    session = index_session(tmp_path, "claude_code")
    client.force_login(make_user(VIEWER, "viewers"))
    body = client.get(detail(session)).content.decode()
    assert leaks(body, SESSIONS["claude_code"][1]) == []
    assert 'class="secret"' in body
    assert 'class="reveal"' not in body


@pytest.mark.django_db
def test_an_admin_gets_a_reveal_button_on_each_mark(tmp_path, client):
    session = index_session(tmp_path, "claude_code")
    client.force_login(make_admin())
    entries = entries_part(client.get(detail(session)).content.decode())
    for finding in session.findings.all():
        url = reverse("api-finding-reveal", args=[session.id, finding.id])
        assert f'hx-post="{url}"' in entries


@pytest.mark.django_db
def test_a_dismissed_fingerprint_is_shown_in_full(tmp_path, client):
    session = index_session(tmp_path, "claude_code")
    admin = make_admin()
    finding = session.findings.get(line=1)
    SecretDismissal.dismiss(admin, finding.fingerprint, finding.kind)
    client.force_login(admin)
    body = client.get(detail(session)).content.decode()
    assert ANTHROPIC in entries_part(body)
    assert f'data-fingerprint="{finding.fingerprint}"' not in entries_part(body)
    assert leaks(body, [GHP, AWS_KEY, NPM_CLAUDE]) == []


@pytest.mark.django_db
def test_a_mark_reveals_its_value_only_with_the_permission_and_audited(tmp_path, client):
    session = index_session(tmp_path, "claude_code")
    finding = session.findings.get(line=1)
    url = reverse("api-finding-reveal", args=[session.id, finding.id])
    client.force_login(make_user(VIEWER, "viewers"))
    assert client.post(url).status_code == 403
    assert not AuditEvent.objects.filter(action="reveal_secret").exists()
    client.force_login(make_admin())
    assert client.post(url).json()["value"] == ANTHROPIC
    assert AuditEvent.objects.get(action="reveal_secret").detail["fingerprint"] == finding.fingerprint


@pytest.mark.django_db
def test_a_private_key_reveals_whole(tmp_path, client):
    session = index_session(tmp_path, "pi")
    finding = session.findings.get(kind="private_key")
    client.force_login(make_admin())
    value = client.post(reverse("api-finding-reveal", args=[session.id, finding.id])).json()["value"]
    assert value.startswith("-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn")
    assert value.endswith("-----END OPENSSH PRIVATE KEY-----")


@pytest.mark.django_db
def test_an_appended_line_holding_a_value_is_masked_as_the_poller_brings_it(tmp_path, client):
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    path = folder / "s1.jsonl"
    path.write_bytes((FIXTURES / "claude_code" / "secrets_in_every_block.jsonl").read_bytes())
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    last_line, read = session.entries.count(), session.read_offset
    with open(path, "ab") as handle:
        handle.write((FIXTURES / "claude_code" / "secrets_appended.jsonl").read_bytes())
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    client.force_login(make_admin())
    params = {"_after": str(last_line), "_read": str(read)}
    body = client.get(detail(session), params, HTTP_HX_REQUEST="true").content.decode()
    assert 'class="secret"' in body
    assert leaks(body, [ANTHROPIC]) == []


# --- Titles ------------------------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "page",
    ["session-list", "search", "activity", "project", "detail", "cost", "changes"],
)
def test_a_title_holding_a_credential_shows_masked(tmp_path, client, page):
    session = index_session(tmp_path, "claude_code")
    assert ANTHROPIC in session.display_title
    client.force_login(make_user(VIEWER, "viewers"))
    url = {
        "session-list": reverse("session-list"),
        "search": reverse("session-list") + "?q=deploy",
        "activity": reverse("activity"),
        "project": reverse("project-detail", args=[session.project]),
        "detail": detail(session),
        "cost": reverse("session-cost", args=[session.id]),
        "changes": reverse("session-changes", args=[session.id]),
    }[page]
    response = client.get(url)
    assert response.status_code == 200
    body = response.content.decode()
    assert leaks(body, [ANTHROPIC]) == []
    assert "sk-a*******************************Hd" in body


@pytest.mark.django_db
def test_the_api_keeps_titles_and_text_unmasked(tmp_path, client):
    session = index_session(tmp_path, "claude_code")
    client.force_login(make_user(VIEWER, "viewers"))
    data = client.get(reverse("api-session-detail", args=[session.id])).content.decode()
    assert ANTHROPIC in data  # the README says so: masking is for the page, not the API


@pytest.mark.django_db
def test_a_session_without_findings_renders_as_before(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "thinking_block.jsonl", CLAUDE_PROJECT, "s1")
    assert not session.findings.exists()
    client.force_login(make_admin())
    body = client.get(detail(session)).content.decode()
    assert 'class="secret"' not in body


@pytest.mark.django_db
def test_the_changes_page_masks_an_edits_values(tmp_path, client):
    session = index_session(tmp_path, "pi")
    client.force_login(make_admin())
    body = client.get(reverse("session-changes", args=[session.id])).content.decode()
    assert "sk-a*" in body  # the edit's new text is there, masked
    assert leaks(body, SESSIONS["pi"][1]) == []
    assert 'class="secret"' in body


@pytest.mark.django_db
def test_masks_of_a_session_without_findings_cost_one_query_and_none_when_read_already(
    tmp_path, django_assert_num_queries
):
    session = index_fixture(tmp_path, "claude_code", "thinking_block.jsonl", CLAUDE_PROJECT, "s1")
    with django_assert_num_queries(1):
        assert transcript_masks(session, can_reveal=True) is None
    with django_assert_num_queries(0):
        assert transcript_masks(session, [], can_reveal=True) is None


@pytest.mark.django_db
def test_a_value_cut_by_show_the_rest_shows_no_part_of_itself(tmp_path, client):
    """A text longer than TEXT_LIMIT with a value across the cut and one after it: the page's
    part and "show the rest" each hold a mark or nothing, never a piece of the value."""
    from sessionviewer.transcripts import TEXT_LIMIT

    text = "a line of words\n" * (TEXT_LIMIT // 16)  # lines: the page cuts a line past 10,000 characters
    text = text[: TEXT_LIMIT - 10] + f" {ANTHROPIC}\n" + "more\n" * 2000 + f"again {ANTHROPIC} end"
    record = {"type": "user", "uuid": "u-1", "parentUuid": None, "sessionId": "s", "cwd": "/home/user/project",
              "timestamp": "2026-01-02T19:00:00.000Z", "message": {"role": "user", "content": text}}  # fmt: skip
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    (folder / "s1.jsonl").write_text(json.dumps(record) + "\n")
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    assert session.findings.count() == 2
    client.force_login(make_admin())
    pieces = [ANTHROPIC[:9], ANTHROPIC[9:18], ANTHROPIC[18:27], ANTHROPIC[27:]]
    first = client.get(detail(session)).content.decode()
    assert "Show the rest" in first
    assert (
        '<mark class="secret"' in first[first.index('class="output long-text"') :]
    )  # the value across the cut
    rest_url = reverse("session-entry-text", args=[session.id, 1, 0])
    rest = client.get(rest_url, {"_from": str(TEXT_LIMIT)}, HTTP_HX_REQUEST="true").content.decode()
    assert "again <mark" in rest
    for body in (first, rest):
        assert leaks(body, pieces) == []


@pytest.mark.django_db
def test_a_titles_own_private_use_characters_do_not_become_marks(tmp_path, client):
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    lines = (FIXTURES / "claude_code" / "secrets_in_every_block.jsonl").read_text().splitlines(keepends=True)
    first = json.loads(lines[0])
    first["message"]["content"] = f"planted {chr(BASE)}{FILLER} here, and {ANTHROPIC}"
    (folder / "s1.jsonl").write_text(json.dumps(first) + "\n" + "".join(lines[1:]))
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    client.force_login(make_admin())
    body = client.get(detail(session)).content.decode()
    head = body[: body.index('id="entry-list"')]
    assert "<mark" not in head.split('id="findings"')[0]  # the title and the header: no mark
    assert "planted \ufffd\ufffd here" in head
    assert "planted \ufffd\ufffd here" in entries_part(body)  # in the entry too, where masks.text did it
    assert leaks(body, [ANTHROPIC]) == []


@pytest.mark.django_db
def test_a_dismissal_after_the_page_was_seen_shows_the_value_next_time(tmp_path, client):
    session = index_session(tmp_path, "claude_code")
    admin = make_admin()
    client.force_login(admin)
    assert ANTHROPIC not in client.get(detail(session)).content.decode()  # its masks kept
    finding = session.findings.get(line=1)
    client.post(reverse("api-finding-dismiss", args=[session.id, finding.id]))
    assert ANTHROPIC in entries_part(client.get(detail(session)).content.decode())
    client.post(reverse("api-finding-dismiss", args=[session.id, finding.id]), {"undo": "1"})
    assert ANTHROPIC not in client.get(detail(session)).content.decode()
