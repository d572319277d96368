"""A user's permissions in one statement (sessionviewer.auth): the same permissions as Django's
ModelBackend finds, in one statement where Django's takes two, and logins and sessions still
Django's backend's."""

from __future__ import annotations

import pytest
from django.contrib.auth import backends
from django.contrib.auth.models import Group, Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessionviewer.auth import PermissionsInOneStatement, SessionStore

pytestmark = pytest.mark.django_db


def _permission(codename: str) -> Permission:
    return Permission.objects.get(content_type__app_label="sessionviewer", codename=codename)


@pytest.fixture
def viewer() -> User:
    """A user with one permission of their own and two through groups (one of them twice)."""
    user = User.objects.create_user("viewer", password="a long enough password")  # noqa: S106
    user.user_permissions.add(_permission("change_session"))
    readers, auditors = Group.objects.create(name="readers"), Group.objects.create(name="auditors")
    readers.permissions.add(_permission("view_session"), _permission("view_source"))
    auditors.permissions.add(_permission("view_session"))
    user.groups.add(readers, auditors)
    Group.objects.create(name="others").permissions.add(_permission("delete_session"))
    return User.objects.get(pk=user.pk)  # no caches


def test_the_same_permissions_as_djangos_backend(viewer):
    ours = PermissionsInOneStatement().get_all_permissions(viewer)
    djangos = backends.ModelBackend().get_all_permissions(User.objects.get(pk=viewer.pk))
    assert (
        ours
        == djangos
        == {
            "sessionviewer.change_session",
            "sessionviewer.view_session",
            "sessionviewer.view_source",
        }
    )


def test_a_permission_check_takes_one_statement(viewer):
    with CaptureQueriesContext(connection) as statements:
        assert viewer.has_perm("sessionviewer.view_session")
        assert viewer.has_perm("sessionviewer.change_session")
    assert len(statements) == 1


def test_a_permission_not_held_is_refused_without_reading_again(viewer):
    with CaptureQueriesContext(connection) as statements:
        assert not viewer.has_perm("sessionviewer.delete_session")
        assert viewer.has_perm("sessionviewer.view_session")
    assert len(statements) == 1


@pytest.mark.parametrize("change", ["inactive", "no groups", "another group's"])
def test_what_is_not_granted_is_not_found(viewer, change):
    if change == "inactive":
        viewer.is_active = False
        viewer.save()
        assert not viewer.has_perm("sessionviewer.change_session")
        assert PermissionsInOneStatement().get_all_permissions(viewer) == set()
    elif change == "no groups":
        viewer.groups.clear()
        viewer = User.objects.get(pk=viewer.pk)
        assert not viewer.has_perm("sessionviewer.view_session")
        assert viewer.has_perm("sessionviewer.change_session")
    else:
        assert not viewer.has_perm("sessionviewer.delete_session")


def test_a_superuser_has_every_permission_from_djangos_backend():
    admin = User.objects.create_superuser("admin", password="a long enough password")  # noqa: S106
    assert PermissionsInOneStatement().get_all_permissions(admin) == set()
    assert admin.has_perm("sessionviewer.delete_session")
    assert User.objects.get(pk=admin.pk).get_all_permissions() == {
        f"{p.content_type.app_label}.{p.codename}" for p in Permission.objects.select_related("content_type")
    }


def test_login_and_pages_still_go_through_djangos_backend(client, viewer):
    response = client.post(
        reverse("login"), {"username": "viewer", "password": "a long enough password"}, REMOTE_ADDR="10.0.0.9"
    )
    assert response.status_code == 302
    assert client.session["_auth_user_backend"] == "django.contrib.auth.backends.ModelBackend"
    assert client.get(reverse("session-list")).status_code == 200
    viewer.groups.clear()
    assert client.get(reverse("session-list")).status_code == 403


# A request's session, read by sessionviewer.auth.SessionStore (settings.SESSION_ENGINE)


def test_a_saved_session_reads_back_whole_in_one_statement():
    store = SessionStore()
    store["person"], store["folded"] = "vera", True
    store.save()
    with CaptureQueriesContext(connection) as statements:
        again = SessionStore(store.session_key)
        assert again["person"] == "vera"
        assert again["folded"] is True
    assert len(statements) == 1
    assert again.session_key == store.session_key


def test_an_expired_or_unknown_session_reads_empty_and_drops_its_key():
    store = SessionStore()
    store["person"] = "vera"
    store.set_expiry(-60)  # expired a minute ago
    store.save()
    expired = SessionStore(store.session_key)
    assert dict(expired.items()) == {}
    assert expired.session_key is None
    unknown = SessionStore("x" * 32)
    assert dict(unknown.items()) == {}
    assert unknown.session_key is None


def test_a_logged_in_person_keeps_their_session_across_pages(client, viewer):
    assert client.login(username="viewer", password="a long enough password")  # noqa: S106
    assert client.session.__class__ is SessionStore  # the engine the settings name
    assert client.get(reverse("session-list")).status_code == 200
    assert client.get(reverse("activity")).status_code == 200
    client.logout()
    assert client.get(reverse("session-list")).status_code == 302  # to the login page
