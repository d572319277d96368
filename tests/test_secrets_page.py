"""The Secrets page across sessions (/secrets/) and its twin (/api/secrets): one group per
fingerprint, where it appears, how to rotate it, filters, and dismissals shown."""

from __future__ import annotations

import shutil

import pytest
from django.urls import reverse

from sessionviewer.index import index_roots
from sessionviewer.models import SecretDismissal, Session
from sessionviewer.roots import RootSpec

from .fixture_files import CLAUDE_PROJECT, FIXTURES
from .users import VIEWER, make_admin, make_user

pytestmark = pytest.mark.django_db

OTHER_PROJECT = "projects/-home-user-other"


@pytest.fixture
def two_sessions(tmp_path):
    """The same Anthropic key in two sessions (of one project: both ran in /home/user/project);
    the other credentials in one."""
    for folder, name in (
        (CLAUDE_PROJECT, "secrets_in_every_block.jsonl"),
        (OTHER_PROJECT, "secrets_appended.jsonl"),
    ):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(FIXTURES / "claude_code" / name, tmp_path / folder / "s.jsonl")
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    return tmp_path


def groups(client, **params) -> list[dict]:
    return client.get(reverse("api-session-secrets"), params).json()["groups"]


def test_a_value_in_two_sessions_is_one_group_the_most_widespread_first(client, two_sessions):
    client.force_login(make_user(VIEWER, "viewers"))
    found = groups(client)
    assert [(g["kind"], g["sessions"]) for g in found][0] == ("anthropic_key", 2)
    assert sorted(g["kind"] for g in found) == [
        "anthropic_key",
        "aws_access_key",
        "github_token",
        "npm_token",
    ]
    first = found[0]
    assert {p["line"] for p in first["places"]} == {1}  # line 1 of each file
    assert first["rotate"].startswith("Delete the key in the Claude Console")
    assert first["masked"] == "sk-a*******************************Hd"


@pytest.mark.parametrize(
    ("params", "kinds"),
    [
        ({"kind": "npm_token"}, ["npm_token"]),
        ({"project": "no-such-project"}, []),
        ({"machine": "no-such-machine"}, []),
        ({"since": "2100-01-01"}, []),
    ],
)
def test_the_groups_filter_by_kind_project_machine_and_date(client, two_sessions, params, kinds):
    client.force_login(make_user(VIEWER, "viewers"))
    assert sorted(g["kind"] for g in groups(client, **params)) == kinds


def test_the_project_filter_keeps_that_projects_sessions(client, two_sessions):
    client.force_login(make_user(VIEWER, "viewers"))
    project = Session.objects.values_list("project", flat=True).first()
    assert len(groups(client, project=project)) == 4


def test_a_bad_date_is_a_400_naming_it(client, two_sessions):
    client.force_login(make_user(VIEWER, "viewers"))
    for url in (reverse("session-secrets"), reverse("api-session-secrets")):
        response = client.get(url, {"since": "2025-02-30"})
        assert response.status_code == 400
        assert b"since" in response.content


def test_the_page_says_where_a_value_appears_and_links_to_each_place(client, two_sessions):
    client.force_login(make_user(VIEWER, "viewers"))
    page = client.get(reverse("session-secrets")).content.decode()
    assert "Appears in 2 sessions in 1 project," in page
    for session in Session.objects.all():
        assert reverse("session-detail", args=[session.id]) in page
    assert reverse("workspace-secrets") in page


def test_a_dismissed_value_is_marked_on_the_page(client, two_sessions):
    admin = make_admin()
    fp = groups_for(admin, client)[0]["fingerprint"]
    SecretDismissal.dismiss(admin, fp, "anthropic_key")
    assert "marked not a secret" in client.get(reverse("session-secrets")).content.decode()


def groups_for(user, client) -> list[dict]:
    client.force_login(user)
    return groups(client)


def test_someone_without_view_session_gets_403(client, two_sessions):
    from .users import NOBODY

    client.force_login(make_user(NOBODY))
    assert client.get(reverse("session-secrets")).status_code == 403
    assert client.get(reverse("api-session-secrets")).status_code == 403


def test_the_memory_report_links_to_the_sessions_page(client, memory):
    client.force_login(make_admin())
    assert reverse("session-secrets") in client.get(reverse("workspace-secrets")).content.decode()


def test_a_title_holding_a_credential_shows_it_masked_on_the_page_and_its_twin(client, two_sessions):
    # secrets_in_every_block's first prompt, its title, holds the Anthropic key the findings mask.
    client.force_login(make_user(VIEWER, "viewers"))
    key = "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sBq7Hd"
    assert any(key in s.display_title for s in Session.objects.all())
    page = client.get(reverse("session-secrets")).content.decode()
    twin = client.get(reverse("api-session-secrets")).content.decode()
    for shown in (page, twin):
        assert "sk-a" in shown
        assert key not in shown and key[:20] not in shown
