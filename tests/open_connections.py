"""The connections to the test database that are not this thread's, for conftest.py's check
that no test module leaves one open (PostgreSQL only).

A connection left open (a thread that used the ORM and never closed its connection, a raw
psycopg connection a test or the code under test opened, one Django stopped seeing) keeps
PostgreSQL's test database in use: at the end of the run Django cannot drop it, and says so
only in a warning. SQLite has no such list, and deleting its file is never refused.
"""

from __future__ import annotations

import threading
import time

from django.db import connection

# Who holds each other connection: its process, when it started, its state, its last statement.
OTHER_CLIENTS = """
    SELECT pid, backend_start, state, left(query, 200) FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
"""


def left_open(grace: float = 2.0) -> list[tuple]:
    """The other clients of this database (OTHER_CLIENTS' rows) still there after grace
    seconds: a connection closed a moment ago takes its server process a few ms to leave."""
    deadline = time.monotonic() + grace
    while True:
        with connection.cursor() as cursor:
            # The server keeps what a transaction first read of pg_stat_activity to its end:
            # a test's transaction would see no connection leave.
            cursor.execute("SELECT pg_stat_clear_snapshot()")
            cursor.execute(OTHER_CLIENTS)
            rows = cursor.fetchall()
        if not rows or time.monotonic() >= deadline:
            return rows
        time.sleep(0.05)


def describe(rows: list[tuple]) -> str:
    """The connections and this process's threads, for the failure's message."""
    lines = [
        f"pid {pid}, connected at {start:%H:%M:%S}, {state}, last: {' '.join(query.split())}"
        for pid, start, state, query in rows
    ]
    alive = ", ".join(thread.name for thread in threading.enumerate())
    return "\n".join([*lines, f"threads alive: {alive}"])
