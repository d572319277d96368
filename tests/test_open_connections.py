"""conftest.py's check that no test module leaves a connection to the test database open
(tests/open_connections.py): it finds a connection a test or a thread left open, and no
longer finds it once closed, inside a test's transaction too. PostgreSQL only: SQLite has
no list of its connections, and deleting its file is never refused."""

import threading

import pytest
from django.db import connection

from .open_connections import left_open

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's list of connections")


def pids(rows: list[tuple]) -> set[int]:
    return {row[0] for row in rows}


@pytest.mark.django_db
def test_a_connection_left_open_is_found_and_no_longer_once_closed_within_one_transaction():
    other = connection.get_new_connection(connection.get_connection_params())
    pid = other.info.backend_pid
    try:
        assert pid in pids(left_open(grace=0))
    finally:
        other.close()
    assert pid not in pids(left_open())


@pytest.mark.django_db(transaction=True)
def test_a_thread_s_connection_is_found_until_the_thread_closes_it():
    used, release, pid = threading.Event(), threading.Event(), []

    def run():
        try:
            with connection.cursor() as cursor:  # the thread's own connection
                cursor.execute("SELECT pg_backend_pid()")
                pid.append(cursor.fetchone()[0])
            used.set()
            release.wait(30)
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert used.wait(30)
        assert pid[0] in pids(left_open(grace=0))
    finally:
        release.set()
        thread.join()
    assert pid[0] not in pids(left_open())
