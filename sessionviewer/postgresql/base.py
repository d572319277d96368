"""Django's PostgreSQL engine, except that a timestamp is read by psycopg's C loader.

Django reads every timestamptz with a loader of its own (psycopg_any.BaseTzLoader), which
subclasses psycopg's pure-Python one to set the value's time zone: about 10 us a value
against 1 us for the C loader (bench/README.md). Every page reads timestamps (a session's
start and end, an entry's time), and a cold index reads the long sessions' entries back to
prepare their thread snapshots.

Django sets the connection's time zone to UTC (USE_TZ, no TIME_ZONE of the database's own),
and the C loader then gives each value in UTC already, as datetime.timezone.utc: the same
value, of the same zone, that Django's loader gives. With any other time zone Django's own
loader stays.
"""

import datetime

from django.db.backends.postgresql import base
from psycopg import adapters
from psycopg.adapt import Loader
from psycopg.pq import Format

TIMESTAMPTZ = adapters.types["timestamptz"].oid
# The C implementation when psycopg has one (psycopg[binary], as requirements.txt installs):
# the adapters' own loader for the type, before Django registers its own on a connection.
_FAST = adapters.get_loader(TIMESTAMPTZ, Format.TEXT)


class UtcTimestampLoader(Loader):
    """A timestamptz in UTC, by the C loader. `timezone` is what Django's create_cursor asks
    a timestamptz loader for: being UTC, it registers none of its own on the cursor."""

    timezone = datetime.UTC

    def __init__(self, oid, context=None):
        super().__init__(oid, context)
        # An instance attribute, before the method below: psycopg calls the C loader's own.
        self.load = _FAST(oid, context).load

    def load(self, data):  # the abstract method, never called: the instance's is
        return self.load(data)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        connection = super().get_new_connection(conn_params)
        if self.timezone == datetime.UTC:
            connection.adapters.register_loader(TIMESTAMPTZ, UtcTimestampLoader)
        return connection
