"""`manage.py` and gunicorn as processes of their own, on the test's database."""

from __future__ import annotations

import os

from django.db import connection


def command_env() -> dict:
    """A `manage.py` of its own on the test's database (a file on SQLite)."""
    db = connection.settings_dict
    url = (
        f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        if connection.vendor == "postgresql"
        else f"sqlite:///{db['NAME']}"
    )
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": "test-only-secret",
        "DATABASE_URL": url,
        "SESSIONVIEWER_ROOTS": "",
        "SESSIONVIEWER_MEMORY_ROOTS": "",
        "SESSIONVIEWER_MACHINE": "laptop",
    }
