"""PostgreSQL's full-text index during a first index (index/postgres.py): left out while the
rows go in, built after them, and built again by the next pass when a pass did not end."""

from pathlib import Path

import pytest
from django.db import connection

from sessionviewer.index import index_roots, postgres
from sessionviewer.roots import RootSpec
from sessionviewer.search import matching_entries

pytestmark = [
    pytest.mark.django_db(transaction=True),  # each group of files commits, as it does for a user
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the GIN index is PostgreSQL's"),
]

FIXTURES = Path(__file__).parent / "fixtures"
ROOTS = [RootSpec(FIXTURES / "search", "claude_code"), RootSpec(FIXTURES / "go_agent", "go_agent")]


def text_index() -> str | None:
    """The full-text index's definition, None if it is not there."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [postgres.NAME])
        row = cursor.fetchone()
    return row[0] if row else None


def index_watching(monkeypatch) -> list[str | None]:
    """Index ROOTS as a big pass would, and the index's definition as each file was written."""
    monkeypatch.setattr(postgres, "AFTER_BYTES", 0)
    seen = []
    summary = index_roots(ROOTS, progress=lambda *_: seen.append(text_index()))
    assert summary.errors == []
    return seen


def test_a_first_big_pass_builds_the_full_text_index_after_its_rows(monkeypatch):
    migrated = text_index()
    assert "COALESCE(search_words" in migrated
    seen = index_watching(monkeypatch)
    assert seen and set(seen) == {None}
    assert text_index() == migrated
    assert matching_entries("src/app.py").exists()


def test_a_pass_over_entries_already_there_keeps_the_full_text_index(monkeypatch):
    index_roots(ROOTS[:1])
    migrated = text_index()
    seen = index_watching(monkeypatch)
    assert seen and set(seen) == {migrated}


def test_a_small_first_pass_keeps_the_full_text_index():
    migrated = text_index()
    seen = []
    index_roots(ROOTS, progress=lambda *_: seen.append(text_index()))
    assert seen and set(seen) == {migrated}


def test_a_pass_after_one_that_did_not_end_builds_the_missing_index():
    migrated = text_index()
    index_roots(ROOTS)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP INDEX {postgres.NAME}")  # as a pass killed before its end leaves it
    index_roots(ROOTS)
    assert text_index() == migrated
