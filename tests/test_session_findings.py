"""Possible secrets in indexed sessions (issue 31): the findings' table and its permissions,
the dismissals and their audit, and the scan the indexer runs as it reads each entry."""

from __future__ import annotations

import shutil
from importlib import import_module
from io import StringIO
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessionviewer import readers
from sessionviewer.index import index_roots
from sessionviewer.index.findings import CREDENTIAL_RULES, block_secrets, may_hold_secret
from sessionviewer.models import AuditEvent, SecretDismissal, Session, SessionFinding, Source
from sessionviewer.roots import RootSpec
from sessionviewer.workspaces.secrets import fingerprint, secret_values

from .fixture_files import CLAUDE_PROJECT, FIXTURES, index_fixture
from .opencode_files import fixture as opencode_fixture
from .opencode_files import write_storage
from .secret_inputs import (
    ADVERSARIAL,
    ANTHROPIC,
    ANTHROPIC_PI,
    AWS_ID,
    GHS,
    HF,
    NPM,
    PAT,
    RULE_CASES,
    SLACK,
    STRIPE,
)
from .users import ADMIN, VIEWER, make_admin, make_user

pytestmark = pytest.mark.django_db

FP = "ab" * 32


def test_admins_may_reveal_and_dismiss_and_viewers_may_not():
    admin, viewer = make_admin(), make_user(VIEWER, "viewers")
    assert admin.username == ADMIN
    for permission in ("sessionviewer.reveal_secret", "sessionviewer.dismiss_secret"):
        assert admin.has_perm(permission)
        assert not viewer.has_perm(permission)


def test_createuser_grant_gives_the_secret_permissions_beyond_the_role():
    out = StringIO()
    call_command(
        "createuser", "sam", "--role", "viewer", "--grant", "reveal_secret", "--password", "quiet orchard lantern",
        stdout=out,
    )  # fmt: skip
    sam = User.objects.get(username="sam")
    assert sam.has_perm("sessionviewer.reveal_secret")
    assert not sam.has_perm("sessionviewer.dismiss_secret")
    assert "reveal_secret" in out.getvalue()


def test_dismissing_a_fingerprint_is_audited_once():
    admin = make_admin()
    SecretDismissal.dismiss(admin, FP, "openai_key")
    SecretDismissal.dismiss(admin, FP, "openai_key")  # already dismissed: nothing new
    assert SecretDismissal.objects.get().by == admin
    events = list(AuditEvent.objects.filter(action="dismiss_secret"))
    assert [(e.user, e.detail) for e in events] == [(admin, {"fingerprint": FP, "kind": "openai_key"})]


def test_undoing_a_dismissal_deletes_it_and_is_audited():
    admin = make_admin()
    SecretDismissal.dismiss(admin, FP, "openai_key")
    assert SecretDismissal.undo(admin, FP) is True
    assert not SecretDismissal.objects.exists()
    assert AuditEvent.objects.get(action="undismiss_secret").detail == {
        "fingerprint": FP,
        "kind": "openai_key",
    }
    assert SecretDismissal.undo(admin, FP) is False
    assert AuditEvent.objects.filter(action="undismiss_secret").count() == 1


def test_findings_go_with_their_session(tmp_path):
    session = index_fixture(tmp_path, "claude_code", "thinking_block.jsonl", CLAUDE_PROJECT, "s1")
    SessionFinding.objects.create(
        session=session,
        source_id=session.source_id,
        line=1,
        entry_id="e1",
        block=0,
        kind="openai_key",
        masked="sk-p****ab",
        fingerprint=FP,
    )
    Session.objects.all().delete()
    assert not SessionFinding.objects.exists()


# The scan at index time


def findings_of(session: Session) -> list[tuple]:
    rows = session.findings.order_by("line", "block", "id")
    return list(rows.values_list("line", "entry_id", "block", "kind", "masked"))


def test_claude_code_secrets_are_found_in_every_kind_of_block(tmp_path):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    assert findings_of(session) == [
        (1, "u-1", 0, "anthropic_key", "sk-a*******************************Hd"),  # a message
        (2, "a-1", 0, "github_token", "ghp_********************************12"),  # thinking
        (2, "a-1", 2, "aws_access_key", "AKIA**************KD"),  # a tool call's input
        (3, "u-2", 0, "npm_token", "npm_**********************************R8"),  # a tool's output
    ]  # and not line 4's placeholder


def test_codex_secrets_are_found_in_arguments_written_as_json_text(tmp_path):
    session = index_fixture(
        tmp_path, "codex", "secrets_in_arguments_and_output.jsonl", "sessions/2025/11/03", "rollout-s1"
    )
    assert [(line, block, kind) for line, _, block, kind, _ in findings_of(session)] == [
        (2, 0, "github_token"),
        (3, 0, "github_token"),
        (4, 0, "aws_access_key"),
    ]


def test_a_finding_keeps_the_memory_findings_fingerprint_and_never_the_value(tmp_path):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    first = session.findings.get(line=1)
    assert first.fingerprint == fingerprint("anthropic_key", ANTHROPIC, settings.SECRET_KEY)
    assert all(ANTHROPIC not in value for value in first.to_dict().values() if isinstance(value, str))


# Every format's blocks: tests/fixtures/<format>/secrets_in_every_block.*, each credential
# planted where that agent leaks it, and near misses (placeholders, providers' documented
# examples) on lines of their own, which must give nothing.


# (line, entry id, block, kind, value) of every finding, in file order.
GO_FINDINGS = [
    (2, "s0000001", 0, "stripe_key", STRIPE),  # a prompt
    (3, "s0000002", 0, "slack_token", SLACK),  # thinking
    (3, "s0000002", 2, "bearer_token", "7hQ2mZ9vK4pL8rT3wX6nB1cD"),  # a bash call's command
    (4, "s0000003", 0, "openai_key", "sk-proj-Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS"),  # printenv's output
    (4, "s0000003", 0, "url_password", "S3cr3tPassw0rd"),
    (7, "s0000006", 0, "github_token", GHS),  # a write call's content
    (11, "s0000010", 0, "npm_token", NPM),  # cat ~/.npmrc
    (12, "s0000011", 0, "stripe_key", STRIPE),
]  # not lines 5 and 9: placeholders and documented examples
OPENCLAW_FINDINGS = [
    (2, "o0000001", 0, "github_token", PAT),  # a prompt
    (3, "o0000002", 0, "huggingface_token", HF),  # thinking
    (3, "o0000002", 1, "npm_token", NPM),  # an exec call's command
    (4, "o0000003", 0, "google_api_key", "AIzaSyQ7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS2a"),  # its output
    (5, "o0000004", 1, "gitlab_token", "glpat-Q7mZ2vK9pL4rT8wX3nB6"),  # a "!" command's output
]  # not lines 6 and 7
PI_FINDINGS = [
    (2, "q0000001", 0, "twilio_key", "SK0123456789abcdef0123456789abcdef"),  # a prompt
    (
        3,
        "q0000002",
        0,
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJ1c2VyIjoiYWxpY2UiLCJyb2xlIjoiYWRtaW4ifQ.Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS",
    ),
    (4, "q0000003", 0, "private_key", "-----BEGIN OPENSSH PRIVATE KEY-----"),  # a read of a key file
    (5, "q0000004", 0, "anthropic_key", ANTHROPIC_PI),  # an edit's newText
]  # not lines 7 and 8
GEMINI_CALL = "g0000002-0000-4000-8000-000000000002"
GEMINI_FINDINGS = [
    # Entries, not file lines: the header, then the messages as Gemini CLI loads them.
    (
        2,
        "g0000001-0000-4000-8000-000000000001",
        0,
        "pypi_token",
        "pypi-AgEIcHlwaS5vcmcCJGQ3ZTg5YjE0LWE3ZjItNDc3Ny1hMmQ2LTc4ZTZlNmQ5YzFhMA",
    ),  # a prompt
    (
        3,
        GEMINI_CALL,
        0,
        "slack_token",
        "hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/Xy9Zq8Wv7Ut6Sr5Qp4On3Ml2",
    ),  # a thought
    (3, GEMINI_CALL, 2, "aws_access_key", AWS_ID),  # run_shell_command's command
    (3, GEMINI_CALL, 2, "aws_secret_key", "Q7mZ2vK9pL4rT8wX3nB6cD1fG5hJ0kS2aE4yU6iO"),
    (4, f"{GEMINI_CALL}/run_shell_command-1772619602000-0", 0, "github_token", GHS),  # its result
]  # not entries 5 and 6
OPENCODE_FINDINGS = [
    # Entries: the header, then each part (a tool part its call, then its result).
    (2, "prt_01secrets01a", 0, "anthropic_key", ANTHROPIC_PI),  # a prompt
    (4, "prt_01secrets02b", 0, "stripe_key", STRIPE),  # reasoning
    (6, "prt_01secrets02d", 0, "aws_access_key", AWS_ID),  # a bash call's command
    (7, "prt_01secrets02d:result", 0, "github_token", PAT),  # its output
    (7, "prt_01secrets02d:result", 0, "huggingface_token", HF),
]  # fmt: skip


def findings_with_values(expected: list[tuple]) -> list[tuple]:
    """The expected findings as findings_fingerprinted gives them: each value by its fingerprint."""
    return [
        (line, entry_id, block, kind, fingerprint(kind, value, settings.SECRET_KEY))
        for line, entry_id, block, kind, value in expected
    ]


def findings_fingerprinted(session: Session) -> list[tuple]:
    rows = session.findings.order_by("line", "block", "id")
    return list(rows.values_list("line", "entry_id", "block", "kind", "fingerprint"))


def test_go_agent_secrets_are_found_in_every_kind_of_block(tmp_path):
    session = index_fixture(
        tmp_path, "go_agent", "secrets_in_every_block.jsonl", "sessions", "20260226-143000-7c1e0a42"
    )
    assert findings_fingerprinted(session) == findings_with_values(GO_FINDINGS)


def test_openclaw_secrets_are_found_in_every_kind_of_block(tmp_path):
    session = index_fixture(
        tmp_path, "openclaw", "secrets_in_every_block.jsonl", "agents/main/sessions", "6e6e6e6e"
    )
    assert findings_fingerprinted(session) == findings_with_values(OPENCLAW_FINDINGS)


def test_pi_secrets_are_found_in_every_kind_of_block(tmp_path):
    session = index_fixture(
        tmp_path,
        "pi",
        "secrets_in_every_block.jsonl",
        "sessions/--home-user-api--",
        "2026-01-05T09-00-00-000Z_3f3f3f3f-1111-4222-8333-000000000031",
    )
    assert session.format == "pi"
    assert findings_fingerprinted(session) == findings_with_values(PI_FINDINGS)


def test_gemini_cli_secrets_are_found_in_every_kind_of_block(tmp_path):
    session = index_fixture(
        tmp_path,
        "gemini_cli",
        "session-2026-03-04T10-20-9a8b7c6d.jsonl",
        "gemini/c0ffee00/chats",
        "session-2026-03-04T10-20-9a8b7c6d",
    )
    assert findings_fingerprinted(session) == findings_with_values(GEMINI_FINDINGS)


def test_opencode_secrets_are_found_in_every_kind_of_block(tmp_path):
    write_storage(tmp_path, opencode_fixture("secrets_in_every_block.json"))
    index_roots([RootSpec(tmp_path, "opencode")])
    session = Session.objects.get()
    assert findings_fingerprinted(session) == findings_with_values(OPENCODE_FINDINGS)


@pytest.mark.parametrize(
    ("fmt", "folder", "stem", "first_lines", "expected"),
    [
        ("go_agent", "sessions", "20260226-143000-7c1e0a42", 7, GO_FINDINGS),
        ("openclaw", "agents/main/sessions", "6e6e6e6e", 4, OPENCLAW_FINDINGS),
    ],
)
def test_an_append_scans_only_its_new_lines_and_keeps_the_earlier_findings(
    tmp_path, fmt, folder, stem, first_lines, expected
):
    lines = (FIXTURES / fmt / "secrets_in_every_block.jsonl").read_bytes().splitlines(keepends=True)
    path = tmp_path / folder / f"{stem}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines[:first_lines]))
    spec = RootSpec(tmp_path / folder.split("/")[0], fmt)
    index_roots([spec])
    session = Session.objects.get()
    before = {row[0]: row[1:] for row in session.findings.values_list("id", "line", "kind")}
    assert sorted(before.values()) == sorted((f[0], f[3]) for f in expected if f[0] <= first_lines)
    with open(path, "ab") as handle:
        handle.write(b"".join(lines[first_lines:]))
    index_roots([spec])
    session.refresh_from_db()
    assert session.read_line == len(lines)
    kept = {
        row[0]: row[1:] for row in session.findings.filter(id__in=before).values_list("id", "line", "kind")
    }
    assert kept == before  # the same rows: not scanned and written again
    assert findings_fingerprinted(session) == findings_with_values(expected)


def index_claude(tmp_path, *names: str) -> Session:
    """The fixtures named, one after the other, as one growing session file, indexed."""
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "s1.jsonl", "ab") as handle:
        for name in names:
            handle.write((FIXTURES / "claude_code" / name).read_bytes())
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    return Session.objects.get()


def test_an_append_adds_only_its_new_lines_findings(tmp_path):
    index_claude(tmp_path, "secrets_in_every_block.jsonl")
    before = set(SessionFinding.objects.values_list("id", flat=True))
    session = index_claude(tmp_path, "secrets_appended.jsonl")
    assert (
        set(session.findings.filter(line__lt=5).values_list("id", flat=True)) == before
    )  # kept, not rewritten
    added = session.findings.exclude(id__in=before)
    assert list(added.values_list("line", "kind")) == [(5, "anthropic_key")]
    # The same key as line 1's: one fingerprint, two places.
    assert session.findings.filter(fingerprint=added.get().fingerprint).count() == 2


def test_a_file_read_again_whole_replaces_its_findings(tmp_path):
    index_claude(tmp_path, "secrets_in_every_block.jsonl")
    path = tmp_path / CLAUDE_PROJECT / "s1.jsonl"
    shutil.copy(FIXTURES / "claude_code" / "secrets_appended.jsonl", path)  # rewritten: a new head
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    assert [(line, kind) for line, _, _, kind, _ in findings_of(Session.objects.get())] == [
        (1, "anthropic_key")
    ]


def test_a_deleted_file_takes_its_findings_with_it(tmp_path):
    index_claude(tmp_path, "secrets_in_every_block.jsonl")
    (tmp_path / CLAUDE_PROJECT / "s1.jsonl").unlink()
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    assert not Session.objects.exists()
    assert not SessionFinding.objects.exists()


@pytest.mark.parametrize(
    "text",
    [
        ANTHROPIC,
        "password: 9fK2mQ7xL4pZ8rT3vB6n",
        'AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ4RT2MPL9"',
        "//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
        "postgres://app:Str0ngPassw0rd@db.internal/app",
        "Authorization: Bearer abc123DEF456ghi789JKL",
        *(start + repeated * 50 for start, repeated in ADVERSARIAL.values()),
    ],
)
def test_the_prefilter_never_skips_a_text_the_credential_rules_find_something_in(text):
    if list(secret_values(text, rules=CREDENTIAL_RULES)):
        assert may_hold_secret(text)


CREDENTIAL_KINDS = {rule.kind for rule in CREDENTIAL_RULES}
CREDENTIAL_CASES = [case for case in RULE_CASES if case[0] in CREDENTIAL_KINDS]
PROSE = "\n".join(
    f"line {n}: the build ran, 12 tests passed in 0.4 s, see https://ci.example/{n}" for n in range(40)
)


@pytest.mark.parametrize(
    ("kind", "text", "value", "near_miss"), CREDENTIAL_CASES, ids=[c[0] for c in CREDENTIAL_CASES]
)
@pytest.mark.parametrize("where", ["alone", "in a long output", "at its end"])
def test_the_index_scan_finds_each_credential_where_it_sits_and_not_its_near_miss(
    kind, text, value, near_miss, where
):
    """The prefilter and the choice of lines to scan, over short and long texts: each rule's
    find is found whole under its kind, and its near miss not at all."""
    placed = {"alone": "{}", "in a long output": PROSE + "\n{}\n" + PROSE, "at its end": PROSE + " {}"}[where]
    found = [
        (k, v) for k, _, v in block_secrets(readers.Block(type=readers.TOOL_RESULT, text=placed.format(text)))
    ]
    assert (kind, value) in found
    missed = [
        (k, v)
        for k, _, v in block_secrets(readers.Block(type=readers.TOOL_RESULT, text=placed.format(near_miss)))
    ]
    assert kind not in {k for k, _ in missed}


TITLE_CASES = [text for _, text, _, _ in CREDENTIAL_CASES] + [near for *_, near in CREDENTIAL_CASES]


@pytest.mark.parametrize(
    "text", [*TITLE_CASES, "Fix the login form's tab order", "", "İstanbul sk-ant-api03-x"]
)
def test_a_titles_mask_is_the_whole_scans_where_the_prefilter_skips_the_scan(text):
    """The list's and a project's rows mask each title (templatetags credentials_masked), and
    skip the scan where the prefilter says no credential can start: the same title either way."""
    from sessionviewer.templatetags.transcript import credentials_masked as title_masked
    from sessionviewer.transcripts.masks import without_placeholders
    from sessionviewer.workspaces.secrets import credentials_in, with_masks

    scanned = with_masks(text, credentials_in(text))  # every rule over the whole title
    assert title_masked(text) == without_placeholders(scanned)


def test_personal_data_is_not_looked_for_at_index_time():
    block = readers.Block(type=readers.TEXT, text="mail ann@corp.test or call +44 20 7946 0958")
    assert list(block_secrets(block)) == []


# Reveal


def reveal_url(finding: SessionFinding) -> str:
    return reverse("api-finding-reveal", args=[finding.session_id, finding.id])


def test_an_admin_reveals_a_value_and_the_reveal_is_audited(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    admin = make_admin()
    client.force_login(admin)
    finding = session.findings.get(line=1)
    response = client.post(reveal_url(finding))
    assert response.status_code == 200
    assert response.json()["value"] == ANTHROPIC
    event = AuditEvent.objects.get(action="reveal_secret")
    assert event.user == admin
    assert event.detail["session"] == session.id and event.detail["fingerprint"] == finding.fingerprint
    assert ANTHROPIC not in str(event.detail)


def test_a_value_in_a_tool_input_is_revealed_from_its_block(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_admin())
    finding = session.findings.get(kind="aws_access_key")
    assert client.post(reveal_url(finding)).json()["value"] == "AKIAZ7Q4RT2MPL9WX3KD"


def test_a_viewer_may_not_reveal_and_nothing_is_audited(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_user(VIEWER, "viewers"))
    assert client.post(reveal_url(session.findings.first())).status_code == 403
    client.logout()
    assert client.post(reveal_url(session.findings.first())).status_code == 401
    assert not AuditEvent.objects.filter(action="reveal_secret").exists()


def test_reveal_takes_only_a_post(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_admin())
    assert client.get(reveal_url(session.findings.first())).status_code == 405


def test_a_finding_of_another_session_is_not_found(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_admin())
    finding = session.findings.first()
    url = reverse("api-finding-reveal", args=[session.id + 1, finding.id])
    assert client.post(url).status_code == 404


# The transcript's header and its API twin


def test_the_transcript_header_counts_the_possible_secrets_masked(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_user(VIEWER, "viewers"))
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert "4 possible secrets" in page
    assert "sk-a*******************************Hd" in page
    assert 'class="reveal"' not in page  # a viewer may not reveal
    header = page[page.index('id="findings"') : page.index("</section>", page.index('id="findings"'))]
    assert ANTHROPIC not in header


def test_the_reveal_button_is_there_for_someone_allowed_to_reveal(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_admin())
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    finding = session.findings.get(line=1)
    assert f'hx-post="{reveal_url(finding)}"' in page


def test_a_dismissed_fingerprint_is_marked_in_every_session_holding_it(tmp_path, client):
    session = index_claude(tmp_path, "secrets_in_every_block.jsonl", "secrets_appended.jsonl")
    SecretDismissal.dismiss(make_admin(), session.findings.get(line=1).fingerprint, "anthropic_key")
    client.force_login(make_user(VIEWER, "viewers"))
    page = client.get(reverse("session-detail", args=[session.id])).content.decode()
    assert page.count("marked not a secret") == 2  # lines 1 and 5: one fingerprint


def test_the_api_twin_lists_the_findings_masked(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_user(VIEWER, "viewers"))
    data = client.get(reverse("api-session-detail", args=[session.id])).json()
    assert [(f["line"], f["kind"], f["dismissed"]) for f in data["findings"]] == [
        (1, "anthropic_key", False),
        (2, "github_token", False),
        (2, "aws_access_key", False),
        (3, "npm_token", False),
    ]
    assert ANTHROPIC not in str(data["findings"])


# The list's count on each row


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_the_list_counts_each_sessions_possible_secrets(tmp_path, client, prefix):
    index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_user(VIEWER, "viewers"))
    response = client.get(reverse("api-session-list" if prefix else "session-list"))
    if prefix:
        assert [row["possible_secrets"] for row in response.json()["sessions"]] == [4]
    else:
        assert "4 possible secrets" in response.content.decode()


def test_the_lists_count_leaves_out_dismissed_fingerprints(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    SecretDismissal.dismiss(make_admin(), session.findings.get(line=1).fingerprint, "anthropic_key")
    client.force_login(make_user(VIEWER, "viewers"))
    assert [
        row["possible_secrets"] for row in client.get(reverse("api-session-list")).json()["sessions"]
    ] == [3]


# The list's "possible secrets" facet and filter


def _leaky_and_clean_files(tmp_path) -> None:
    """Two Claude Code sessions under tmp_path/projects (one with four possible secrets, one
    with none) and a Codex session with three under tmp_path/sessions."""
    folder = tmp_path / CLAUDE_PROJECT
    folder.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude_code" / "secrets_in_every_block.jsonl", folder / "leaky.jsonl")
    shutil.copy(FIXTURES / "claude_code" / "thinking_block.jsonl", folder / "clean.jsonl")
    codex = tmp_path / "sessions" / "2025" / "11" / "03"
    codex.mkdir(parents=True)
    shutil.copy(FIXTURES / "codex" / "secrets_in_arguments_and_output.jsonl", codex / "rollout-s1.jsonl")


@pytest.fixture
def three_sessions(tmp_path) -> dict[str, Session]:
    """Two Claude Code sessions, one holding four possible secrets and one none, and a Codex
    session holding three, indexed as two roots."""
    _leaky_and_clean_files(tmp_path)
    index_roots([RootSpec(tmp_path / "projects", "claude_code"), RootSpec(tmp_path / "sessions", "codex")])
    return {
        "leaky": Session.objects.get(path__endswith="leaky.jsonl"),
        "clean": Session.objects.get(path__endswith="clean.jsonl"),
        "codex": Session.objects.get(format="codex"),
    }


def facet_of(client, name: str, **params) -> dict[str, int]:
    facets = client.get(reverse("api-session-facets"), params).json()["facets"]
    return {v["value"]: v["count"] for f in facets if f["name"] == name for v in f["values"]}


def listed(client, **params) -> set[int]:
    rows = client.get(reverse("api-session-list"), {"_flat": "1", **params}).json()["sessions"]
    return {row["id"] for row in rows}


def test_the_facet_counts_the_sessions_with_a_possible_secret(client, viewer, three_sessions):
    assert facet_of(client, "possible_secrets") == {"1": 2}
    assert facet_of(client, "possible_secrets", format="codex") == {"1": 1}
    assert facet_of(client, "possible_secrets", format="claude_code") == {"1": 1}


def test_the_filter_lists_only_the_sessions_with_a_possible_secret(client, viewer, three_sessions):
    assert listed(client, possible_secrets="1") == {three_sessions["leaky"].id, three_sessions["codex"].id}
    assert listed(client, possible_secrets="1", format="claude_code") == {three_sessions["leaky"].id}
    assert client.get(reverse("api-session-list"), {"possible_secrets": "1"}).json()["count"] == 2


def test_the_other_facets_count_among_the_sessions_with_a_possible_secret(client, viewer, three_sessions):
    assert facet_of(client, "format") == {"claude_code": 2, "codex": 1}
    assert facet_of(client, "format", possible_secrets="1") == {"claude_code": 1, "codex": 1}


def test_a_session_whose_every_finding_is_dismissed_is_not_counted(client, viewer, three_sessions):
    admin = make_admin()
    for finding in three_sessions["codex"].findings.all():
        SecretDismissal.dismiss(admin, finding.fingerprint, finding.kind)
    assert facet_of(client, "possible_secrets") == {"1": 1}
    assert listed(client, possible_secrets="1") == {three_sessions["leaky"].id}


def test_a_session_with_one_finding_left_undismissed_still_counts(client, viewer, three_sessions):
    # The Codex session's GitHub token is dismissed (in both its lines); its AWS key is not.
    token = three_sessions["codex"].findings.filter(kind="github_token").first()
    SecretDismissal.dismiss(make_admin(), token.fingerprint, token.kind)
    assert facet_of(client, "possible_secrets", format="codex") == {"1": 1}
    assert three_sessions["codex"].id in listed(client, possible_secrets="1")


@pytest.mark.parametrize("q", ["deploy", "four", "use", "project", "deploy four use"])
def test_a_searchs_facet_counts_the_matching_sessions_with_a_possible_secret(
    client, viewer, three_sessions, q
):
    """With the search alone filtering, the findings of the matching sessions are counted
    (filters.count_with_possible_secrets): the same number as session by session."""
    admin = make_admin()
    token = three_sessions["codex"].findings.filter(kind="github_token").first()
    SecretDismissal.dismiss(admin, token.fingerprint, token.kind)
    for finding in three_sessions["leaky"].findings.filter(line__gt=1):
        SecretDismissal.dismiss(admin, finding.fingerprint, finding.kind)
    dismissed = set(SecretDismissal.objects.values_list("fingerprint", flat=True))

    def expected(**params) -> dict[str, int]:
        found = sum(
            any(f.fingerprint not in dismissed for f in session.findings.all())
            for session in Session.objects.filter(id__in=listed(client, q=q, **params))
        )
        return {"1": found} if found else {}

    assert facet_of(client, "possible_secrets", q=q) == expected()
    assert facet_of(client, "possible_secrets", q=q, format="codex") == expected(format="codex")


def test_the_facet_is_left_out_when_no_session_has_a_possible_secret(client, viewer, three_sessions):
    assert facet_of(client, "possible_secrets", project="/nowhere") == {}


@pytest.fixture
def two_machines(settings, tmp_path) -> dict[str, Session]:
    """The same Claude Code root (a session with four possible secrets, one with none) indexed
    by a laptop and by a CI runner, and a Codex root (three possible secrets) by the laptop only."""
    _leaky_and_clean_files(tmp_path)
    settings.SESSIONVIEWER_MACHINE = "laptop"
    index_roots([RootSpec(tmp_path / "projects", "claude_code"), RootSpec(tmp_path / "sessions", "codex")])
    settings.SESSIONVIEWER_MACHINE = "ci-runner"
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    return {"projects": str(tmp_path / "projects")}


def counted_one_by_one(**params) -> int:
    """The sessions with a finding not dismissed among those the machine or root selects,
    session by session in Python."""
    sessions = Session.objects.all()
    if machine := params.get("machine"):
        sessions = sessions.filter(source__machine=machine)
    if root := params.get("root"):
        sessions = sessions.filter(source_id=root) if root.isdigit() else sessions.filter(source__path=root)
    dismissed = set(SecretDismissal.objects.values_list("fingerprint", flat=True))
    return sum(
        any(fp not in dismissed for fp in session.findings.values_list("fingerprint", flat=True))
        for session in sessions
    )


def test_each_finding_keeps_its_sessions_source(two_machines):
    findings = SessionFinding.objects.select_related("session")
    assert {f.session.source.machine for f in findings} == {"laptop", "ci-runner"}
    assert all(f.source_id == f.session.source_id for f in findings)


def test_the_facet_by_machine_or_root_counts_as_each_session_does(client, viewer, two_machines):
    # The Codex session's GitHub token is dismissed; its AWS key is not: it still counts.
    admin = make_admin()
    token = Session.objects.get(format="codex").findings.filter(kind="github_token").first()
    SecretDismissal.dismiss(admin, token.fingerprint, token.kind)
    laptop = Source.objects.get(machine="laptop", path=two_machines["projects"])
    path = two_machines["projects"]
    cases = [  # the filter, and the sessions it counts: the leaky one per machine, the Codex one
        ({"machine": "laptop"}, 2),
        ({"machine": "ci-runner"}, 1),
        ({"root": str(laptop.id)}, 1),
        ({"root": path}, 2),  # its path: on both machines
        ({"machine": "ci-runner", "root": path}, 1),
        ({"machine": "nowhere"}, 0),
    ]
    for params, expected in cases:
        assert counted_one_by_one(**params) == expected, params
        assert facet_of(client, "possible_secrets", **params) == ({"1": expected} if expected else {}), params
    # The AWS key dismissed too: the Codex session holds nothing else; the leaky ones still do.
    aws = Session.objects.get(format="codex").findings.get(kind="aws_access_key")
    SecretDismissal.dismiss(admin, aws.fingerprint, aws.kind)
    for params, _ in cases:
        counted = counted_one_by_one(**params)
        assert facet_of(client, "possible_secrets", **params) == ({"1": counted} if counted else {}), params
    assert facet_of(client, "possible_secrets", machine="laptop") == {"1": 1}
    assert facet_of(client, "possible_secrets", root=path) == {"1": 2}


def test_the_facet_by_machine_is_counted_from_the_findings_alone(client, viewer, two_machines):
    with CaptureQueriesContext(connection) as queries:
        assert facet_of(client, "possible_secrets", machine="laptop") == {"1": 2}
    reading = [q["sql"] for q in queries.captured_queries if "sessionviewer_sessionfinding" in q["sql"]]
    assert len(reading) == 1 and 'sessionviewer_session"' not in reading[0].replace("sessionfinding", "")
    assert "f.source_id IN (" in reading[0] or "f.source_id = ANY(" in reading[0]  # the findings' own source
    with CaptureQueriesContext(connection) as queries:  # another filter: an EXISTS per session
        assert facet_of(client, "possible_secrets", machine="laptop", format="codex") == {"1": 1}
    reading = [q["sql"] for q in queries.captured_queries if "sessionviewer_sessionfinding" in q["sql"]]
    assert len(reading) == 1 and "EXISTS" in reading[0] and 'sessionviewer_session"' in reading[0]


def test_migration_0039_gives_the_findings_indexed_before_it_their_sessions_source(two_machines):
    migration = import_module("sessionviewer.migrations.0039_finding_source")
    SessionFinding.objects.update(source_id=0)  # NOT NULL: 0 for "none", no source has it
    migration.forwards(None, SimpleNamespace(connection=connection))  # it runs on the connection only
    findings = SessionFinding.objects.select_related("session")
    assert len(findings) == 4 + 4 + 3  # the leaky session on each machine, the Codex session
    assert all(f.source_id == f.session.source_id for f in findings)
    assert len({f.source_id for f in findings}) == 3


def test_the_page_shows_the_facet_and_its_link_toggles_the_filter(client, viewer, three_sessions):
    body = client.get(reverse("session-list")).content.decode()
    facet = body[body.index('data-facet="possible_secrets"') :]
    facet = facet[: facet.index("</section>")]
    assert "<h2>Possible secrets</h2>" in facet
    assert 'href="?possible_secrets=1"' in facet and '<span class="n">2</span>' in facet
    chosen = client.get(reverse("session-list"), {"possible_secrets": "1"}).content.decode()
    assert "2 sessions" in chosen and 'class="selected"' in chosen
    assert three_sessions["clean"].get_absolute_url() not in chosen


def test_the_filter_narrows_activity_too(client, viewer, three_sessions):
    report = client.get(reverse("api-activity"), {"possible_secrets": "1"}).json()
    assert report["totals"]["sessions"] == 2


@pytest.mark.parametrize("prefix", ["", "/api"])
@pytest.mark.parametrize("value", ["0", "yes", "11"])
def test_a_bad_possible_secrets_value_is_a_400_naming_it(client, viewer, prefix, value):
    response = client.get(
        reverse("api-session-list" if prefix else "session-list"), {"possible_secrets": value}
    )
    assert response.status_code == 400
    message = response.json()["error"] if prefix else response.content.decode()
    assert message == f"possible_secrets: expected 1, not {value!r}"


# Dismiss


def dismiss_url(finding: SessionFinding) -> str:
    return reverse("api-finding-dismiss", args=[finding.session_id, finding.id])


def test_dismissing_a_finding_marks_its_fingerprint_in_every_session(tmp_path, client):
    session = index_claude(tmp_path, "secrets_in_every_block.jsonl", "secrets_appended.jsonl")
    client.force_login(make_admin())
    first = session.findings.get(line=1)
    assert client.post(dismiss_url(first)).json() == {"fingerprint": first.fingerprint, "dismissed": True}
    assert SecretDismissal.objects.get().fingerprint == first.fingerprint
    data = client.get(reverse("api-session-detail", args=[session.id])).json()
    assert [f["line"] for f in data["findings"] if f["dismissed"]] == [1, 5]


def test_undoing_a_dismissal_through_the_api_is_audited(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_admin())
    finding = session.findings.get(line=1)
    client.post(dismiss_url(finding))
    assert client.post(dismiss_url(finding), {"undo": "1"}).json()["dismissed"] is False
    assert not SecretDismissal.objects.exists()
    assert list(AuditEvent.objects.order_by("id").values_list("action", flat=True)) == [
        "dismiss_secret",
        "undismiss_secret",
    ]


def test_a_viewer_may_not_dismiss(tmp_path, client):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    client.force_login(make_user(VIEWER, "viewers"))
    assert client.post(dismiss_url(session.findings.first())).status_code == 403
    assert not SecretDismissal.objects.exists()


# The backfill of sessions indexed before the scan


def test_scanfindings_finds_what_the_index_would_have_in_a_session_indexed_before(tmp_path):
    session = index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")
    expected = findings_of(session)
    fingerprints = sorted(session.findings.values_list("fingerprint", flat=True))
    SessionFinding.objects.all().delete()  # as if indexed before this change
    out = StringIO()
    call_command("scanfindings", stdout=out)
    assert findings_of(session) == expected
    assert sorted(session.findings.values_list("fingerprint", flat=True)) == fingerprints
    assert "Scanned 1 sessions" in out.getvalue() and "4 possible secrets" in out.getvalue()
    call_command("scanfindings", stdout=StringIO())  # again: replaced, not added twice
    assert len(findings_of(session)) == 4
    assert set(session.findings.values_list("source_id", flat=True)) == {session.source_id}
