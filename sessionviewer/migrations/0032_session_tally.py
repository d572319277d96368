"""The list's facets and count, and Activity's totals, kept as the index writes (issue 28).

With 400,000 sessions one list page counted them eleven times over (a GROUP BY per facet,
every session's models_used read), 2.3 s; Activity's totals 1.5 s. sessionviewer_sessiontally
holds, per source and format, each facet value's sessions (and for Activity their tokens,
messages and cost): a trigger on the session table adds a row's share when it is written
and takes it away when it changes or goes, in the writer's own transaction, whatever wrote
it (the indexer's plain statements, the ORM, a purge, a cascade). Its upserts add deltas
(ON CONFLICT DO UPDATE), so indexers writing at once lose no count; each indexer writes its
own sources' rows, keyed by source, so two never wait for each other's. tallies.py reads it.

The shares of one session (facet, value): ("", "") the totals; "kind"; "project", "jid",
"agent", "channel", "peer_kind" when not blank; "updated" the UTC month of updated_at;
"model" each of models_used; "day" the UTC day it started; "place" its project, JID and
agent; "model_cost" each model of model_costs with its tokens and cost; "under" a subagent's
parent's source and format, for the nested count.

Also indexes in the order the list sorts by (nulls last, as the ORM asks), and one on the
tokens Activity's busiest sessions are picked by.
"""

from django.db import migrations, models

TABLE = "sessionviewer_sessiontally"
COLUMNS = "source_id, format, project, facet, value, sessions, tokens, messages, cost, priced, unpriced_tokens, undated"
TYPES = (
    "BIGINT",
    "TEXT",
    "TEXT",
    "TEXT",
    "TEXT",
    "BIGINT",
    "BIGINT",
    "BIGINT",
    "DOUBLE PRECISION",
    "BIGINT",
    "BIGINT",
    "BIGINT",
)
KEY = "facet, project, source_id, format, value"
FACETS = ("project", "jid", "agent", "channel", "peer_kind")
# The facets kept per project too, for a list filtered by one: the whole index's rows have
# project "", a project's its key (a session without a project is in the whole index's only).
IN_PROJECT = ("", "kind", "jid", "agent", "channel", "peer_kind", "updated", "model", "under")


def _without_nul(column: str) -> str:
    """A JSON column whose strings, read as text, hold no NUL, which PostgreSQL's text
    cannot; a file may put one in a model's name. Its escape becomes the six characters the
    index keeps for it elsewhere (rows.db_text), an escaped backslash and "u0000": each
    escaped backslash is set aside first, so that the one before a "u0000" is told apart."""
    mark = "chr(1)"  # orjson escapes every control character
    aside = rf"replace({column}, '\\', {mark})"
    text = rf"replace(replace({aside}, '\u0000', '\\u0000'), {mark}, '\\')"
    return f"{text}::json"


def _shares(
    r: str, sign: str, table: str = "", in_project: tuple[str, ...] = IN_PROJECT, whole_index: bool = True
) -> str:
    """The rows of one session's shares (COLUMNS, each figure times sign): r, the prefix of
    its columns ("new.", or "r." reading every session from table for the backfill). A later
    migration keeps more facets per project (in_project), and backfills only those
    (whole_index False: no row of project "")."""
    tokens = f"({r}input_tokens + {r}output_tokens + {r}cache_read_tokens + {r}cache_write_tokens)"
    cost = f"COALESCE({r}cost, 0)"
    priced = f"(CASE WHEN {r}cost IS NULL THEN 0 ELSE 1 END)"
    # The parent's source and format, for a subagent: the nested count takes it out where
    # the list shows its parent (tallies.sessions). In a project's rows, a parent of it only.
    parent = (
        "(SELECT p.source_id::text || ' ' || p.format FROM sessionviewer_session p "  # noqa: S608 - constants only
        f"WHERE p.id = {r}parent_id{{same}})"
    )
    used, costs = _without_nul(f"{r}models_used"), _without_nul(f"{r}model_costs")
    month = f"to_char({r}updated_at AT TIME ZONE 'UTC', 'YYYY-MM')"
    day = f"to_char({r}started_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    models_from = (
        f"json_array_elements_text(CASE WHEN json_typeof({used}) = 'array' "
        f"THEN {used} ELSE '[]'::json END) AS m(value)"
    )
    models_where = "m.value IS NOT NULL"
    costs_from = (
        f"json_each(CASE WHEN json_typeof({costs}) = 'object' "
        f"THEN {costs} ELSE '{{}}'::json END) AS c(key, value)"
    )
    costs_where = ""
    m_tokens, m_cost = "COALESCE((c.value->>'tokens')::bigint, 0)", "(c.value->>'cost')::float8"
    separator = "chr(31)"
    s = sign
    counted = f"{s}, 0, 0, 0, 0, 0, 0"  # sessions only
    money = f"{s}, {s} * {tokens}, 0, {s} * {cost}, {s} * {priced}, 0, 0"
    # (facet, value and figures, joined, where)
    parts = [
        (
            "",
            f"'', {s}, {s} * {tokens}, {s} * {r}message_count, {s} * {cost}, {s} * {priced}, "
            f"{s} * {r}unpriced_tokens, {s} * (CASE WHEN {r}started_at IS NULL THEN 1 ELSE 0 END)",
            "",
            "",
        ),
        ("kind", f"{r}kind, {counted}", "", ""),
        *((name, f"{r}{name}, {counted}", "", f"{r}{name} <> ''") for name in FACETS),
        ("updated", f"{month}, {counted}", "", f"{r}updated_at IS NOT NULL"),
        ("model", f"m.value, {counted}", models_from, models_where),
        ("day", f"{day}, {money}", "", f"{r}started_at IS NOT NULL"),
        ("place", f"{r}project || {separator} || {r}jid || {separator} || {r}agent, {money}", "", ""),
        (
            "model_cost",
            f"c.key, {s}, {s} * {m_tokens}, 0, {s} * COALESCE({m_cost}, 0), "
            f"{s} * (CASE WHEN {m_cost} IS NULL THEN 0 ELSE 1 END), "
            f"{s} * (CASE WHEN {m_cost} IS NULL THEN {m_tokens} ELSE 0 END), 0",
            costs_from,
            costs_where,
        ),
        ("under", f"{parent}, {counted}", "", f"{r}kind = 'subagent' AND {parent} IS NOT NULL"),
    ]
    # A first SELECT of no row names the columns and their types.
    names = ", ".join(
        f"CAST(NULL AS {t}) AS {name}" for t, name in zip(TYPES, COLUMNS.split(", "), strict=True)
    )
    selects = [f"SELECT {names} WHERE 1 = 0"]
    projects = (("''", ""), (f"{r}project", f" AND p.project = {r}project"))
    for project, same in projects if whole_index else projects[1:]:
        for facet, figures, joined, where in parts:
            if project != "''":
                if facet not in in_project:
                    continue
                where = " AND ".join(filter(None, (where, f"{r}project <> ''")))
            sources = ", ".join(filter(None, (table, joined)))
            sql = f"SELECT {r}source_id, {r}format, {project}, '{facet}', {figures.format(same=same)}"
            if sources:
                sql += f" FROM {sources}"
            if where:
                sql += f" WHERE {where.format(same=same)}"
            selects.append(sql)
    return "\nUNION ALL ".join(selects)


FIGURES = ("sessions", "tokens", "messages", "cost", "priced", "unpriced_tokens", "undated")


def _added(shares: str, pending: bool = True) -> str:
    """Add the shares to the tally, summed by key first, the ones that change nothing left
    out, as rows of their own marked pending, which wait for no
    other writer's lock: an upsert would, and an indexer settling copies (copies.py) changes
    other machines' sessions, so two indexers could each wait for the other's tally rows.
    index/tally.py folds the pending rows into their value's row after each pass. pending
    False: rows folded already (the backfill's)."""
    sums = ", ".join(f"SUM({name})" for name in FIGURES)
    changed = " OR ".join(f"SUM({name}) <> 0" for name in FIGURES)
    return (
        f"INSERT INTO {TABLE} ({COLUMNS}, pending) "  # noqa: S608 - made of this module's constants only
        f"SELECT source_id, format, project, facet, value, {sums}, {'TRUE' if pending else 'FALSE'} "
        f"FROM ({shares}) AS shares WHERE TRUE GROUP BY {KEY} HAVING {changed}"
    )


# A row changed in these is counted again; any other change (read_offset, file_size...) is not.
WATCHED = (
    "source_id", "format", "kind", "project", "jid", "agent", "channel", "peer_kind", "updated_at",
    "started_at", "models_used", "model_costs", "input_tokens", "output_tokens", "cache_read_tokens",
    "cache_write_tokens", "message_count", "cost", "unpriced_tokens", "parent_id",
)  # fmt: skip


def _statements(in_project: tuple[str, ...] = IN_PROJECT) -> list[str]:
    insert = _added(_shares("NEW.", "1", in_project=in_project))
    delete = _added(_shares("OLD.", "-1", in_project=in_project))
    update = _added(
        _shares("OLD.", "-1", in_project=in_project) + "\nUNION ALL " + _shares("NEW.", "1", in_project=in_project)
    )
    # The sessions already indexed, each value in one row.
    backfill = _added(_shares("r.", "1", "sessionviewer_session r"), pending=False)
    distinct = " OR ".join(f"OLD.{c} IS DISTINCT FROM NEW.{c}" for c in WATCHED)
    return [
        backfill,
        "CREATE FUNCTION sessionviewer_session_tally() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"BEGIN\n IF TG_OP = 'INSERT' THEN\n{insert};\n ELSIF TG_OP = 'DELETE' THEN\n{delete};\n"
        f" ELSE\n{update};\n END IF;\n RETURN NULL;\nEND $$",
        "CREATE TRIGGER session_tally_insert_delete AFTER INSERT OR DELETE ON sessionviewer_session "
        "FOR EACH ROW EXECUTE FUNCTION sessionviewer_session_tally()",
        "CREATE TRIGGER session_tally_update AFTER UPDATE ON sessionviewer_session "
        f"FOR EACH ROW WHEN ({distinct}) EXECUTE FUNCTION sessionviewer_session_tally()",
    ]


DROP = [
    "DROP TRIGGER IF EXISTS session_tally_insert_delete ON sessionviewer_session",
    "DROP TRIGGER IF EXISTS session_tally_update ON sessionviewer_session",
    "DROP FUNCTION IF EXISTS sessionviewer_session_tally()",
]


def _ordered(*fields: str) -> models.Index:
    return models.Index(
        *(models.F(field) for field in fields[:-2]),
        models.OrderBy(models.F(fields[-2]), descending=True, nulls_last=True),
        models.OrderBy(models.F("id"), descending=True),
        name=fields[-1],
    )


# The list's orders as the ORM writes them, DESC NULLS LAST: PostgreSQL reads a page from an
# index only in that order, and SQLite refuses NULLS LAST in an index, where DESC already
# puts nulls last. So the index is made by hand, per engine. The default order's also holds
# what the list filters and nests by, so a page's ids come from it alone (filters.session_page):
# a machine's 50th page skips 25,000 other machines' sessions without reading their rows.
LIST_ORDERS = [
    (
        _ordered("updated_at", "session_updated_id"),
        ("updated_at",),
        ("source_id", "format", "kind", "parent_id"),
    ),
    (_ordered("format", "updated_at", "session_format_updated_id"), ("format", "updated_at"), ()),
    (_ordered("started_at", "session_started_id"), ("started_at",), ()),
]


def _create_index(index: models.Index, ordered: tuple[str, ...], covered: tuple[str, ...]):
    def create(apps, schema_editor):
        postgresql = schema_editor.connection.vendor == "postgresql"
        keys = [f'"{name}"' for name in ordered]
        keys[-1] += " DESC NULLS LAST" if postgresql else " DESC"
        keys.append('"id" DESC')
        extra = ", ".join(f'"{name}"' for name in covered)
        if extra and postgresql:
            columns = f"{', '.join(keys)}) INCLUDE ({extra}"
        else:
            columns = ", ".join([*keys, extra] if extra else keys)
        schema_editor.execute(
            f'CREATE INDEX "{index.name}" ON "sessionviewer_session" ({columns})', params=None
        )

    return create


def _drop_index(index: models.Index):
    def drop(apps, schema_editor):
        schema_editor.execute(f'DROP INDEX "{index.name}"', params=None)

    return drop


def add_triggers(apps, schema_editor):
    # PostgreSQL only: the index of many machines, where counting the sessions took seconds.
    # On SQLite, one machine's index, the trigger cost a cold index 7.5% (1.07-1.17x over 5
    # pairs, bench/README.md) and its pages count the sessions as fast as the tally answers.
    if schema_editor.connection.vendor != "postgresql":
        return
    # The tally's indexes wait in the SQL Django runs at the migration's end: the upserts
    # need the unique one now.
    while schema_editor.deferred_sql:
        schema_editor.execute(schema_editor.deferred_sql.pop(0))
    for statement in _statements():
        schema_editor.execute(statement, params=None)


def drop_triggers(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    for statement in DROP:
        schema_editor.execute(statement, params=None)


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0031_project_sessions_newest_first")]

    operations = [
        migrations.CreateModel(
            name="SessionTally",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("source_id", models.BigIntegerField()),
                ("format", models.CharField(max_length=32)),
                ("project", models.CharField(blank=True, default="", max_length=1024)),
                ("facet", models.CharField(max_length=16)),
                ("value", models.TextField()),
                ("sessions", models.BigIntegerField(default=0)),
                ("tokens", models.BigIntegerField(default=0)),
                ("messages", models.BigIntegerField(default=0)),
                ("cost", models.FloatField(default=0)),
                ("priced", models.BigIntegerField(default=0)),
                ("unpriced_tokens", models.BigIntegerField(default=0)),
                ("undated", models.BigIntegerField(default=0)),
                ("pending", models.BooleanField(default=False)),
            ],
            options={
                "constraints": [
                    models.UniqueConstraint(
                        condition=models.Q(("pending", False)),
                        fields=("facet", "project", "source_id", "format", "value"),
                        name="tally_facet_source_value",
                    )
                ],
                "indexes": [
                    models.Index(
                        fields=["facet", "project", "source_id", "format", "value"], name="tally_rows"
                    ),
                    models.Index(condition=models.Q(("pending", True)), fields=["id"], name="tally_pending"),
                ],
            },
        ),
        migrations.RunPython(add_triggers, drop_triggers),
        migrations.RemoveIndex(model_name="session", name="session_updated"),
        migrations.RemoveIndex(model_name="session", name="session_format_updated"),
        *(
            migrations.SeparateDatabaseAndState(
                state_operations=[migrations.AddIndex(model_name="session", index=index)],
                database_operations=[
                    migrations.RunPython(_create_index(index, *columns), _drop_index(index))
                ],
            )
            for index, *columns in LIST_ORDERS
        ),
        migrations.AddIndex(
            model_name="session",
            index=models.Index(
                models.OrderBy(
                    models.F("input_tokens")
                    + models.F("output_tokens")
                    + models.F("cache_read_tokens")
                    + models.F("cache_write_tokens"),
                    descending=True,
                ),
                models.OrderBy(models.F("id"), descending=True),
                name="session_tokens_id",
            ),
        ),
    ]
