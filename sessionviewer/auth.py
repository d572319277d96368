"""A user's permissions read in one statement, before Django's ModelBackend reads them in two;
and the session of a request read in a plain statement (SessionStore, settings.SESSION_ENGINE).

Every page checks the viewer's permission (sessionviewer.view_session) before anything else,
and Django's backend reads the user's own permissions and their groups' in two statements.
With the session's and the user's, that was four statements of a request's overhead; the
check took 2.4 ms of the web's CPU, and takes 0.25 ms in one statement (bench/README.md). The
permissions are the same set: tests/test_auth.py compares them with Django's own backend.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

from django.contrib.auth import backends
from django.contrib.auth.models import Group, Permission, User
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.backends import db as sessions_db
from django.db import connection, connections, router
from django.utils import timezone


@functools.cache  # the same statement for every request: made once
def _all_permissions_sql() -> str:
    quote = connection.ops.quote_name
    permission, content_type = quote(Permission._meta.db_table), quote(ContentType._meta.db_table)
    own = quote(User.user_permissions.through._meta.db_table)
    grants = quote(Group.permissions.through._meta.db_table)
    members = quote(User.groups.through._meta.db_table)
    return (
        f"SELECT c.app_label, p.codename FROM {permission} p "  # noqa: S608 - table names from the models
        f"JOIN {content_type} c ON c.id = p.content_type_id "
        f"WHERE p.id IN (SELECT permission_id FROM {own} WHERE user_id = %s "
        f"UNION SELECT g.permission_id FROM {grants} g JOIN {members} m ON m.group_id = g.group_id "
        "WHERE m.user_id = %s)"
    )


class PermissionsInOneStatement(backends.ModelBackend):
    """Django's ModelBackend for permissions, in one statement, and for a session's user
    (get_user, as a test's force_login picks it). It logs no one in: authenticate answers
    None, so Django's own backend, after it in AUTHENTICATION_BACKENDS, checks the password
    once, and the sessions made under it stay valid."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        return None

    def get_all_permissions(self, user_obj, obj=None):
        # None for an object's, as Django's: it keeps no permissions per object. A superuser's
        # check never comes here (User.has_perm answers it); their every permission is
        # Django's backend's to give.
        if not user_obj.is_active or user_obj.is_anonymous or obj is not None or user_obj.is_superuser:
            return set()
        # Kept under the name Django's backend keeps the same set under: one refused here
        # falls through to it, and it then reads nothing again.
        if not hasattr(user_obj, "_perm_cache"):
            with connection.cursor() as cursor:
                cursor.execute(_all_permissions_sql(), [user_obj.pk, user_obj.pk])
                user_obj._perm_cache = {
                    f"{app_label}.{codename}" for app_label, codename in cursor.fetchall()
                }
        return user_obj._perm_cache


class SessionStore(sessions_db.SessionStore):
    """Django's database sessions, read in a statement of our own: every request reads its
    session, and the ORM's get() built and compiled its statement each time, about 0.6 ms of
    CPU of a request's overhead against 0.2 ms (bench/README.md). Written, cleared and
    expired as Django's own, in the same table."""

    def _get_session_from_db(self):
        model = self.model
        database = connections[router.db_for_read(model)]
        table = database.ops.quote_name(model._meta.db_table)
        with database.cursor() as cursor:
            cursor.execute(
                f"SELECT session_data FROM {table} WHERE session_key = %s AND expire_date > %s",  # noqa: S608 - the model's table
                [self.session_key, timezone.now()],
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None  # as Django's: a key not found (or expired) is dropped
            return None
        return SimpleNamespace(session_data=row[0])
