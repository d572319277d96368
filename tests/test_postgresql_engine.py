"""Our PostgreSQL engine (sessionviewer/postgresql) reads timestamps with psycopg's C loader
rather than Django's Python one: the values must be the same, in UTC, as Django's loader gives."""

from __future__ import annotations

import datetime

import pytest
from django.db import connection
from django.db.backends.postgresql.psycopg_any import register_tzloader
from django.utils import timezone
from psycopg.adapt import Transformer
from psycopg.pq import Format

from sessionviewer.models import Session, Source

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's engine"),
]

VALUES = (
    "2026-12-07 02:58:45.031684+00",
    "1969-07-20 20:17:40.123456+00",  # before the epoch
    "0044-03-15 12:00:00+01",  # a year of two digits, another zone
    "2026-01-01 00:00:00+05:30",  # a zone of half an hour: the day before, in UTC
    "9999-12-31 23:59:59.999999+00",
)
SELECT = "SELECT " + ", ".join(f"'{value}'::timestamptz" for value in VALUES)


def test_the_cursor_reads_timestamps_by_the_c_loader():
    with connection.cursor() as cursor:
        loader = Transformer(cursor.cursor).get_loader(1184, Format.TEXT)  # as a result's rows use it
    # The load of psycopg's C loader (psycopg_binary), not of Django's loader, which is Python.
    assert type(loader.load.__self__).__module__.startswith("psycopg_binary")


def test_timestamps_are_those_djangos_loader_reads():
    with connection.cursor() as cursor:
        cursor.execute(SELECT)
        ours = cursor.fetchone()
        register_tzloader(datetime.UTC, cursor.cursor)  # Django's, on this cursor
        cursor.execute(SELECT)
        djangos = cursor.fetchone()
    assert ours == djangos
    assert [value.tzinfo for value in ours] == [datetime.UTC] * len(VALUES)
    assert [value.utcoffset() for value in djangos] == [datetime.timedelta(0)] * len(VALUES)
    assert ours[3] == datetime.datetime(2025, 12, 31, 18, 30, tzinfo=datetime.UTC)
    assert ours[1].microsecond == 123456


def test_a_model_reads_back_the_time_it_saved():
    source = Source.objects.create(path="/r", format="claude_code", machine="laptop")
    started = datetime.datetime(2026, 3, 1, 9, 30, 15, 250000, tzinfo=datetime.UTC)
    Session.objects.create(source=source, key="a", format="claude_code", started_at=started)
    read = Session.objects.get(key="a").started_at
    assert read == started
    assert read.tzinfo is datetime.UTC
    assert timezone.localtime(read, datetime.timezone(datetime.timedelta(hours=2))).hour == 11
