"""The tally's pending rows folded into their values' rows (models.SessionTally).

On PostgreSQL the session table's trigger (migration 0032) adds each change as a row of its
own, marked pending, so that no writer waits for another's lock on a shared row. They are
read as they are (a value's figures are the sum of its rows); folding them keeps a value
at one row. Indexers take turns at it, so two never fold the same rows. SQLite keeps no
tally (migration 0032): its pages count the sessions.
"""

from __future__ import annotations

import functools
from importlib import import_module

from django.db import connection, transaction

from sessionviewer.index.locks import take_turn
from sessionviewer.models import SessionTally, SessionTallyTotal, TallyFolds

# The trigger's own SQL (migrations 0032, 0036): a statement that tallies its rows itself
# adds exactly what the trigger would.
_shares_sql = import_module("sessionviewer.migrations.0032_session_tally")
_IN_PROJECT = import_module("sessionviewer.migrations.0036_tally_model_cost_per_project").IN_PROJECT
# The session columns a row's shares read (0032's WATCHED): an update that changes none of
# them changes no count.
COUNTED = _shares_sql.WATCHED
# Set for its transaction by a statement that tallies its rows itself: the row trigger
# leaves them alone (migration 0038).
BY_STATEMENT = "SELECT set_config('sessionviewer.tally', %s, true)"

_TABLE = SessionTally._meta.db_table
_TOTAL = SessionTallyTotal._meta.db_table
_KEY = ("facet", "project", "source_id", "format", "value")
_TOTAL_KEY = ("facet", "project", "value")  # models.SessionTallyTotal's unique constraint
_FIGURES = ("sessions", "tokens", "messages", "cost", "priced", "unpriced_tokens", "undated")


_FOLDS = TallyFolds._meta.db_table  # the folds that took away a session count (tallies.counts_version)


def _fold() -> str:
    key, figures = ", ".join(_KEY), ", ".join(_FIGURES)
    joined = " AND ".join(f"t.{name} = k.{name}" for name in _KEY)
    sums = ", ".join(f"SUM({name})" for name in _FIGURES)
    changed = " OR ".join(f"SUM({name}) <> 0" for name in _FIGURES)
    total_key = ", ".join(_TOTAL_KEY)
    added = ", ".join(f"{name} = {_TOTAL}.{name} + EXCLUDED.{name}" for name in _FIGURES)
    # Every row of each value with a pending one goes, and the value's sum comes back as
    # its one row (none when nothing is left). The rows a writer adds meanwhile are not
    # seen, and stay pending for the next turn. The pending rows folded are added to the
    # total over every source and format (models.SessionTallyTotal) in the same statement,
    # so that a reader sees each change once: pending, or in the total. A fold that takes
    # away pending rows counting a session is counted (models.TallyFolds), in the same
    # statement: one that folds only tokens and costs (a turn appended) changes no count
    # a web process keeps.
    return (
        f"WITH pending AS (SELECT DISTINCT {key} FROM {_TABLE} WHERE pending), "  # noqa: S608 - constants
        f"folded AS (DELETE FROM {_TABLE} t USING pending k WHERE {joined} RETURNING t.*), "
        f"counted AS (INSERT INTO {_FOLDS} (id, folds) SELECT 1, 1 "
        f"WHERE EXISTS (SELECT 1 FROM folded WHERE pending AND sessions <> 0) "
        f"ON CONFLICT (id) DO UPDATE SET folds = {_FOLDS}.folds + 1), "
        f"totalled AS (INSERT INTO {_TOTAL} ({total_key}, {figures}) "
        f"SELECT {total_key}, {sums} FROM folded WHERE pending GROUP BY {total_key} HAVING {changed} "
        f"ON CONFLICT ({total_key}) DO UPDATE SET {added}) "
        f"INSERT INTO {_TABLE} ({key}, {figures}, pending) "
        f"SELECT {key}, {sums}, FALSE FROM folded GROUP BY {key} HAVING {changed}"
    )


FOLD = _fold()


def fold_pending() -> None:
    """Fold the pending rows into their values' rows (PostgreSQL; nothing on SQLite)."""
    if connection.vendor != "postgresql" or not SessionTally.objects.filter(pending=True).exists():
        return
    with transaction.atomic():
        take_turn("tally")
        with connection.cursor() as cursor:
            cursor.execute(FOLD)


@functools.cache
def changed_rows(old: str, new: str) -> str:
    """An INSERT adding the shares of updated sessions to the tally, as the row trigger
    would: the old rows' shares taken away and the new rows' added, summed by value, those
    that change nothing left out. old, new: tables of the rows before and after (COUNTED). PostgreSQL."""
    taken = _shares_sql._shares("r.", "-1", f"{old} r", in_project=_IN_PROJECT)
    added = _shares_sql._shares("r.", "1", f"{new} r", in_project=_IN_PROJECT)
    return _shares_sql._added(f"{taken}\nUNION ALL {added}")
