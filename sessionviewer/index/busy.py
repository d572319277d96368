"""A pass the database refused: another connection held it past the wait allowed.

A pass writes each group of files in one transaction, and a transaction the database
refused kept nothing: what the pass had not committed, the next pass reads again. So a
busy database is no file's fault and no error of the pass: `manage.py index` says so in a
line and exits with BUSY_STATUS, and `--watch` starts the pass again a little later.
"""

from __future__ import annotations

from django.db import OperationalError

# sysexits.h's EX_TEMPFAIL: a temporary failure, worth trying again.
BUSY_STATUS = 75

# SQLite's "database is locked" past its busy timeout; PostgreSQL's lock_not_available and
# query_canceled, what its lock_timeout and statement_timeout raise, and deadlock_detected:
# two indexers each waiting for a row the other locked (an append and a settling of copies,
# copies.on_totals_now), of which PostgreSQL stops one.
_BUSY = ("SQLITE_BUSY", "SQLITE_LOCKED", "55P03", "57014", "40P01")


def database_busy(error: BaseException) -> bool:
    """Whether error is the database refusing a query while another connection holds it."""
    cause = error.__cause__
    code = getattr(cause, "sqlite_errorname", None) or getattr(cause, "sqlstate", None) or ""
    return isinstance(error, OperationalError) and code.startswith(_BUSY)
