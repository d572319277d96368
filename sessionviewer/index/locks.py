"""One indexer per machine and root on a shared PostgreSQL index.

Two indexers of one machine over one root would read the same files and write the same
sessions: at best the work is done twice, at worst one pass's rows meet the other's. On
PostgreSQL, where several machines share one index, each indexer takes an advisory lock
per (machine, root) when it starts and holds it for the life of the pass or the watcher;
a second indexer for a root already held is refused at start, naming the machine and the
root. Indexers of other machines, or of other roots, never wait for these locks.

The locks live on a connection of their own, opened for them: the database lets them go
when it closes, whether the indexer ends, is killed or loses its network. Django's own
connection is closed and opened again between a watcher's passes, which would drop them.

SQLite is one machine's database, and one writer at a time is its rule already (a pass
waits for the other's transaction, index/busy.py): no lock is taken there.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from django.db import connection, transaction


class RootTaken(Exception):
    """Another indexer holds this machine's root."""

    def __init__(self, machine: str, root: str):
        self.machine, self.root = machine, root
        super().__init__(
            f"another indexer of machine {machine!r} is indexing {root} on this database: "
            "one indexer per machine and root (stop the other, or give this one another "
            "SESSIONVIEWER_MACHINE if it runs on another machine)"
        )


def lock_key(machine: str, root: str) -> int:
    """The advisory lock's key: 64 bits of a hash of the machine and the root, signed as
    PostgreSQL's bigint is. Another application's keys could meet ours only by chance,
    one in 2^64."""
    digest = hashlib.blake2b(f"sessionviewer-index\0{machine}\0{root}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def roots_held(machine: str, roots: Iterable[str]) -> Iterator[None]:
    """Hold (machine, root) for each root while the block runs; RootTaken at once if another
    indexer holds one of them. Nothing is held on SQLite."""
    roots = sorted(set(roots))
    if connection.vendor != "postgresql" or not roots:
        yield
        return
    held = connection.get_new_connection(connection.get_connection_params())
    try:
        held.autocommit = True
        with held.cursor() as cursor:
            for root in roots:
                cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_key(machine, root)])
                if not cursor.fetchone()[0]:
                    raise RootTaken(machine, root)
        yield
    finally:
        held.close()  # the database lets every lock of the connection go


def take_turn(*name: object) -> None:
    """Wait until no other indexer's transaction holds `name`, then hold it until this
    transaction ends: for the work every indexer of a shared index does over sessions
    that are not only its own (which session counts a copied reply, copies.py). Take it
    first in its transaction, before any row is written, so that two indexers never wait
    for each other's rows and turn at once. Nothing is taken on SQLite, where one writer
    at a time is the rule already."""
    if connection.vendor != "postgresql":
        return
    if not connection.in_atomic_block:
        raise RuntimeError("take_turn() holds its lock until the transaction ends: call it inside one")
    key = lock_key("turn", "\0".join(str(part) for part in name))
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


@contextmanager
def in_turn(*name: object) -> Iterator[None]:
    """A transaction that takes its turn (take_turn) before anything else."""
    with transaction.atomic():
        take_turn(*name)
        yield
