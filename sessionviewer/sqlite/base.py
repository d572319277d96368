"""Django's SQLite engine, except that a missing database file is created readable by its owner
only, and that a flush empties the session tally last.

SQLite creates a missing file with the process's umask, often 0644: every user of the machine
could then read the transcripts in the index. It gives the -wal and -shm files the mode of the
database file, so creating that file 0600 before SQLite opens it keeps all three private. An
existing file keeps its mode.

Deleting a session writes to the tally (migration 0032's trigger), and Django's flush deletes
the tables in any order: the sessions deleted after the tally left it their shares taken away.
"""

import contextlib
import os

from django.db.backends.sqlite3 import base, operations

TALLY = "sessionviewer_sessiontally"


def create_private(path: str) -> None:
    # If it exists, or cannot be made, SQLite opens it, or says why it cannot.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class DatabaseOperations(operations.DatabaseOperations):
    def sql_flush(self, style, tables, *, reset_sequences=False, allow_cascade=False):
        statements = super().sql_flush(
            style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
        tally = [s for s in statements if s.startswith("DELETE") and self.quote_name(TALLY) in s]
        deletes = [s for s in statements if s.startswith("DELETE") and s not in tally]
        return deletes + tally + [s for s in statements if not s.startswith("DELETE")]


class DatabaseWrapper(base.DatabaseWrapper):
    ops_class = DatabaseOperations

    def get_new_connection(self, conn_params):
        name = str(conn_params["database"])
        if not self.is_in_memory_db() and not name.startswith("file:"):
            create_private(name)
        return super().get_new_connection(conn_params)
