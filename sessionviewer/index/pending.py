"""The work a pass owes the sessions it wrote (models.PendingWork): their copies settled,
their root's links made. A pass marks each session in the transaction that writes it and
unmarks it in the one that does the work, so a pass cut off between the two leaves the mark
for the next.

Plain statements on the driver's cursor for the marks a first index writes by the thousand
(one statement per group of files); the ORM's delete for the unmarking, a statement per
CHUNK sessions.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from django.db import connection

from sessionviewer.index.statements import driver_cursor
from sessionviewer.models import PendingWork

COPIES, LINKS = PendingWork.COPIES, PendingWork.LINKS
CHUNK = 2000  # ids a statement, as index/copies.py asks them: under SQLite's limit on parameters

_TABLE = PendingWork._meta.db_table
# Each (session, work) once: a mark an earlier pass left stays as it is.
_MARK_SQLITE = f'INSERT OR IGNORE INTO "{_TABLE}" ("session_id", "work") VALUES (?, ?)'  # noqa: S608 - our table
_MARK_POSTGRESQL = (
    f'INSERT INTO "{_TABLE}" ("session_id", "work")'  # noqa: S608 - our table; every session id times every work
    " SELECT session_id, work FROM unnest(%s::bigint[]) AS session_id, unnest(%s::varchar[]) AS work"
    " ON CONFLICT DO NOTHING"
)


def mark(session_ids: Collection[int], works: Iterable[str]) -> None:
    """Mark these saved sessions with each of works, in the caller's transaction."""
    works = list(works)
    if not session_ids or not works:
        return
    with driver_cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_MARK_POSTGRESQL, [list(session_ids), works])
        else:
            cursor.executemany(
                _MARK_SQLITE, [(session_id, work) for session_id in session_ids for work in works]
            )


def unmark(session_ids: Iterable[int], work: str) -> None:
    """The work is done for these sessions: their marks of it go."""
    ids = sorted(set(session_ids))
    for start in range(0, len(ids), CHUNK):
        PendingWork.objects.filter(work=work, session_id__in=ids[start : start + CHUNK]).delete()


def marked(work: str) -> set[int]:
    """The sessions marked with this work, on every root and machine."""
    return set(PendingWork.objects.filter(work=work).values_list("session_id", flat=True))
