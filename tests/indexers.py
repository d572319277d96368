"""`manage.py index` in processes of their own on the test's database, for the tests of
indexers side by side (test_index_locks, test_cluster), and the index as a view that does
not depend on the order the passes ran in, to compare a raced index with a fresh one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.db.models import Count, Sum

from sessionviewer.models import CopiedUsage, Entry, Session


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
        "SECRET_KEY": settings.SECRET_KEY,
        "DATABASE_URL": url,
        "SESSIONVIEWER_ROOTS": "",
        "SESSIONVIEWER_MEMORY_ROOTS": "",
        "SESSIONVIEWER_MACHINE": "laptop",
    }


def index_at_once(roots: dict[str, Path]) -> list[str]:
    """`manage.py index` of each machine's root (machine -> root), all at once; their stderr.
    Each must exit 0."""
    indexers = [
        subprocess.Popen(
            [sys.executable, "manage.py", "index", f"claude_code={root}"],
            cwd=settings.BASE_DIR,
            env={**command_env(), "SESSIONVIEWER_MACHINE": machine},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for machine, root in roots.items()
    ]
    errors = []
    for indexer in indexers:
        _, err = indexer.communicate(timeout=300)
        assert indexer.returncode == 0, err
        errors.append(err)
    return errors


def index_view() -> dict:
    """What the index holds: per machine, its sessions (root, key, entries, size, the byte
    read up to, the title a summary line gave it, its parent's key) and its entries; over
    the whole index, the tokens counted and how many copies of each reply are kept off the
    totals. Which of the sessions holding a reply counts it depends on which was indexed
    first (index/copies.py), so tokens are compared over the index, not per session."""
    machines: dict[str, dict] = {}
    fields = (
        "source__machine",
        "source__path",
        "key",
        "entry_count",
        "file_size",
        "read_offset",
        "summary_title",
        "parent__key",
    )
    for machine, *session in Session.objects.values_list(*fields).order_by(*fields[:3]):
        machines.setdefault(machine, {"sessions": [], "entries": 0})["sessions"].append(tuple(session))
    for row in Entry.objects.values("session__source__machine").annotate(entries=Count("id")):
        machines[row["session__source__machine"]]["entries"] = row["entries"]
    copies = CopiedUsage.objects.values_list("message_id").annotate(rows=Count("id")).order_by("message_id")
    return {
        "machines": machines,
        "tokens": Session.objects.aggregate(input=Sum("input_tokens"), output=Sum("output_tokens")),
        "copies": dict(copies),
    }
