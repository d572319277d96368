"""`field__among=ids`: `field__in=ids` with the ids sent as one array on PostgreSQL.

A search's matching sessions (up to search.HIT_CAP of them) filter each of the list's
statements: its facets, its count, its page. Written as `IN (%s, %s, ...)`, every statement
sends a placeholder per id, which psycopg's client-side binding splits and quotes one by one
(about 0.5 ms per statement for 1,000 ids, a third of a search page's Python). As
`= ANY(%s)` the same ids are one parameter. SQLite, which binds natively, keeps `IN`.

A search sends its matching ids with each of 15 to 20 statements, and psycopg dumped the list
into an array literal again for each (12 ms of a search page's Python, bench/README.md, "The
web's CPU per page"). Given as Ids, they are written out once and sent as text, cast.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property

from django.db.models import Field
from django.db.models.lookups import In


class Ids(Sequence):
    """Ids for `field__among` that many statements send: written as PostgreSQL's array
    literal once, however many statements carry it. Not a tuple: a filter copies a tuple or a
    list it is given (Query.resolve_lookup_value), and each copy would write it again."""

    def __init__(self, ids: Iterable[int] = ()):
        self._ids = tuple(ids)

    def __getitem__(self, index):
        return self._ids[index]

    def __len__(self) -> int:
        return len(self._ids)

    def __repr__(self) -> str:
        return f"Ids({list(self._ids)!r})"

    @cached_property
    def array_literal(self) -> str:
        return "{" + ",".join(str(int(i)) for i in self._ids) + "}"


def among_sql(column: str, ids: list[int], vendor: str) -> tuple[str, list]:
    """`column` among ids in a statement of our own, as `__among` writes it: one array on
    PostgreSQL, a placeholder per id elsewhere."""
    if vendor == "postgresql":
        return f"{column} = ANY(%s)", [list(ids)]
    return f"{column} IN ({', '.join(['%s'] * len(ids))})", list(ids)


@Field.register_lookup
class Among(In):
    lookup_name = "among"

    def get_prep_lookup(self):
        if hasattr(self.rhs, "resolve_expression"):  # a subquery: as `in` does
            return super().get_prep_lookup()
        if isinstance(self.rhs, Ids):
            return self.rhs
        # Ids read from the database already: nothing to prepare, one by one.
        return [value for value in self.rhs if value is not None]

    def as_postgresql(self, compiler, connection):
        if hasattr(self.rhs, "resolve_expression"):
            return self.as_sql(compiler, connection)
        lhs, lhs_params = self.process_lhs(compiler, connection)
        if isinstance(self.rhs, Ids):
            array_type = self.lhs.output_field.cast_db_type(connection)
            return f"{lhs} = ANY(%s::{array_type}[])", (*lhs_params, self.rhs.array_literal)
        return f"{lhs} = ANY(%s)", (*lhs_params, list(self.rhs))
