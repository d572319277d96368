"""Django's SQLite engine, except that a missing database file is created readable by its owner only.

SQLite creates a missing file with the process's umask, often 0644: every user of the machine
could then read the transcripts in the index. It gives the -wal and -shm files the mode of the
database file, so creating that file 0600 before SQLite opens it keeps all three private. An
existing file keeps its mode.
"""

import contextlib
import os

from django.db.backends.sqlite3 import base


def create_private(path: str) -> None:
    # If it exists, or cannot be made, SQLite opens it, or says why it cannot.
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        name = str(conn_params["database"])
        if not self.is_in_memory_db() and not name.startswith("file:"):
            create_private(name)
        return super().get_new_connection(conn_params)
