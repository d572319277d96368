"""The people in the tests and what each may do, defined once (as healthchecks' hc/test.py
does). conftest.py's fixtures create them and log them in; a test that needs someone else
asks make_user here.

- vera (VIEWER), in the viewers group: reads transcripts, workspaces and memory, edits nothing.
- edith (EDITOR), in the editors group: reads everything and edits the workspaces.
- rita (READER): may view workspaces (view_workspace) and nothing else, no group.
- nobody (NOBODY): logged in, in no group, with no permission: a 403 everywhere.
- admin (ADMIN): a superuser.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, Permission, User

VIEWER = "vera"
EDITOR = "edith"
READER = "rita"
NOBODY = "nobody"
ADMIN = "admin"
PASSWORD = "pw"

# The groups migration 0004 makes, with their permissions.
ROLES = {
    "viewers": ("view_session", "view_workspace"),
    "editors": ("view_session", "view_workspace", "edit_workspace"),
}


def role(name: str) -> Group:
    """One of the two groups migration 0004 makes; a transactional test that ran before may have
    flushed it, leaving only the permissions that Django makes again: then it is made again."""
    group, created = Group.objects.get_or_create(name=name)
    if created:
        group.permissions.set(
            Permission.objects.filter(content_type__app_label="sessionviewer", codename__in=ROLES[name])
        )
    return group


def editors() -> Group:
    return role("editors")


def make_user(name: str, group: str | None = None, permissions: tuple[str, ...] = ()) -> User:
    """A user in group (a key of ROLES, or None), with these permissions of their own."""
    user = User.objects.create_user(name, password=PASSWORD)
    if group:
        user.groups.add(role(group))
    if permissions:
        user.user_permissions.add(*Permission.objects.filter(codename__in=permissions))
    return user


def make_admin() -> User:
    return User.objects.create_superuser(ADMIN, password="admin-password")
