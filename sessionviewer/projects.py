"""A project's page (/projects/<key>/) and a Fluux JID's usage panel: their sessions, with
subagents and forks nested under their parents, tokens and cost over time, the most used
tools and the git branches seen.

A project is Session.project, the working directory the agent ran in (Claude Code, the Go
agent, OpenClaw, Codex) with the user's home folded to "~" (index/fold.py): /home/dev/shop on
one machine and /Users/dev/shop on another are one project, its sessions per machine. Its URL key is the path tilde-encoded as datasette encodes table names:
letters, digits, "_" and "-" as written, a space as "+", every other byte of its UTF-8 as
~XX. The key holds no "/", "." or "%", so no proxy or browser rewrites it ("..", "//",
"%2F"), and it is only ever compared with the database's values, never opened as a file.
"""

from __future__ import annotations

import re
from datetime import date

import orjson
from django.core.paginator import Paginator
from django.db import connection
from django.db.models import Count, F, Max, Q, QuerySet, Sum
from django.utils import timezone

from sessionviewer import activity, readers, tallies
from sessionviewer.filters import (
    SESSION_ROW_FIELDS,
    filter_sessions,
    range_start,
    started_in_range,
    tally_scope,
)
from sessionviewer.index.fold import fold_home
from sessionviewer.models import Session

PROJECT_MAX = 1024  # Session.project's max_length
PAGE_SIZE = 50  # sessions at the top level of a page, each with its subagents
TOOL_LIMIT = 15
BRANCH_LIMIT = 20
NEST_DEPTH = 8  # forks of forks: levels of children gathered under a session, at most
# The newest sessions whose tool calls the page counts: each call is found by reading its
# entry's blocks as JSON, and a project of 30,000 sessions took 3.4 s to count them all.
TOOL_SESSIONS = 200

_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_KEY = re.compile(r"(?:[A-Za-z0-9_+-]|~[0-9A-F]{2})+")


def encode_key(project: str) -> str:
    """The URL key of a project path: "/home/me/my app" -> "~2Fhome~2Fme~2Fmy+app"."""
    return "".join(
        chr(byte) if byte in _SAFE else "+" if byte == 0x20 else f"~{byte:02X}"
        for byte in project.encode("utf-8")
    )


def decode_key(key: str) -> str:
    """The project path of a URL key; ValueError unless key is one encode_key makes."""
    if not key or len(key) > PROJECT_MAX * 12 or not _KEY.fullmatch(key):
        raise ValueError("not a project key")
    data = bytearray()
    i = 0
    while i < len(key):
        if key[i] == "~":
            data.append(int(key[i + 1 : i + 3], 16))
            i += 3
        else:
            data.append(0x20 if key[i] == "+" else ord(key[i]))
            i += 1
    project = data.decode("utf-8")  # strict: a UnicodeDecodeError is a ValueError
    # One key per path (no "~41" for "A"), no NUL (PostgreSQL refuses it in a query), a path
    # the index can hold.
    if encode_key(project) != key or "\x00" in project or len(project) > PROJECT_MAX:
        raise ValueError("not a project key")
    return project


class ProjectConverter:
    """<project:project> in a URL: the path as its key; a malformed key matches nothing (404)."""

    regex = r"[A-Za-z0-9_+~-]+"

    def to_python(self, value: str) -> str:
        return decode_key(value)

    def to_url(self, value: str) -> str:
        return encode_key(value)


def project_sessions(project: str) -> QuerySet[Session]:
    """A project's sessions on every machine. A key made before projects were folded
    (/home/me/app, not ~/app) still finds them."""
    return Session.objects.filter(project=fold_home(project))


# --- The report ------------------------------------------------------------------------------------------


def _nest(top: list[Session], qs: QuerySet[Session]) -> list[dict]:
    """Rows of a table: each top-level session, then its children (subagents, forks) of qs,
    depth first, each with its depth."""
    children: dict[int, list[Session]] = {}
    parents = [s.id for s in top]
    for _ in range(NEST_DEPTH):
        if not parents:
            break
        found = list(qs.filter(parent_id__in=parents).order_by("started_at", "id"))
        for child in found:
            children.setdefault(child.parent_id, []).append(child)
        parents = [c.id for c in found]
    rows: list[dict] = []

    def add(session: Session, depth: int) -> None:
        rows.append({"session": session, "depth": depth})
        for child in children.get(session.id, ()):
            add(child, depth + 1)

    for session in top:
        add(session, 0)
    return rows


def tool_counts(session_ids: list[int], limit: int = TOOL_LIMIT) -> list[dict]:
    """The tools called most in these sessions: calls by tool name, largest first.

    Counted in SQL over the tool-call blocks of the sessions' entries, read by the
    database's JSON functions. The entries are first narrowed as search.py narrows them:
    orjson writes each block with "type" first, so a text match finds the entries holding
    a call without parsing the rest. A call repeated in another file (a session continued
    in the next one copies its lines) is counted once, by its call id."""
    if not session_ids:  # a JID none of whose files is indexed yet
        return []
    # The ids as values: given as a query on the sessions, PostgreSQL scanned a whole index of
    # them for the few ids rather than look each up.
    sessions_sql, params = ", ".join(["%s"] * len(session_ids)), list(session_ids)
    # An escaped NUL read out of JSON is an error on PostgreSQL and ends the text on SQLite:
    # made U+FFFD first, on both (a text match; "\\u0000", an escaped backslash, changes too,
    # which only a name holding those six characters would show).
    blocks = r"replace(e.blocks, '\u0000', '\ufffd')"
    if connection.vendor == "postgresql":
        block, name, call = (
            f"json_array_elements({blocks}::json) WITH ORDINALITY AS b(value, n)",
            "(b.value -> 'name')::text",  # as JSON: a name that is a number stays one
            "b.value ->> 'call_id'",
        )
        is_call = "b.value ->> 'type' = 'tool_call'"
        key = "e.id::text || ':' || b.n::text"
    else:
        block, name, call = (
            f"json_each({blocks}) AS b",
            "json_quote(json_extract(b.value, '$.name'))",
            ("json_extract(b.value, '$.call_id')"),
        )
        is_call = "json_extract(b.value, '$.type') = 'tool_call'"
        key = "e.id || ':' || b.key"
    # A tool a format renamed counts under its new name (Claude Code's Task is now Agent).
    renamed_tools = {
        old: new for key in readers.FORMATS for old, new in readers.format_of(key).renamed_tools.items()
    }
    renamed = " ".join("WHEN %s THEN %s" for _ in renamed_tools)
    name = f"CASE {name} {renamed} ELSE {name} END" if renamed_tools else name
    aliases = [orjson.dumps(n).decode() for pair in renamed_tools.items() for n in pair]
    # The pieces are ours; every value goes as a parameter.
    sql = f"""
        SELECT {name} AS tool, COUNT(DISTINCT COALESCE(NULLIF({call}, ''), {key})) AS calls
        FROM sessionviewer_entry e CROSS JOIN {block}
        WHERE e.session_id IN ({sessions_sql})
          AND (e.blocks LIKE %s OR e.blocks LIKE %s)
          AND {is_call}
        GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT %s
    """  # noqa: S608
    start = '{"type":"tool_call"'
    with connection.cursor() as cursor:
        cursor.execute(sql, [*aliases, *params, "[" + start + "%", "%}," + start + "%", limit])
        rows = cursor.fetchall()
    return [{"name": _json_name(tool), "calls": calls} for tool, calls in rows]


def _json_name(text: str | None) -> str:
    if not text or text == "null":
        return "(no name)"
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text
    return str(value) or "(no name)"


def branches(qs: QuerySet[Session], limit: int = BRANCH_LIMIT) -> list[dict]:
    """The git branches the sessions' lines named, with how many sessions were on each and
    the last time one of them wrote, the latest first. A session indexed before the index
    kept every branch counts the one it last wrote on."""
    found: dict[str, dict] = {}
    # Summed by the database per last branch and branches seen, a few rows: reading 30,000
    # sessions' JSON into Python was half a crowded project's page.
    named = qs.order_by().exclude(git_branch="").values("git_branch", "git_branches")
    for group in named.annotate(n=Count("id"), updated=Max("updated_at")):
        for branch in {group["git_branch"], *group["git_branches"]}:
            row = found.setdefault(branch, {"branch": branch, "sessions": 0, "last": None})
            row["sessions"] += group["n"]
            if (updated := group["updated"]) is not None and (row["last"] is None or updated > row["last"]):
                row["last"] = updated
    latest_first = sorted(found.values(), key=lambda r: r["branch"])
    latest_first.sort(key=lambda r: r["last"].timestamp() if r["last"] else float("-inf"), reverse=True)
    return latest_first[:limit]


def sessions_per_machine(qs: QuerySet[Session]) -> list[dict]:
    """The sessions of qs per machine, the most first: sessions, tokens, cost and when one last
    wrote ("" is a root indexed before machines were named, not claimed yet)."""
    rows = (
        qs.order_by()
        .values("source__machine")
        .annotate(
            sessions=Count("id"),
            tokens=Sum(
                F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")
            ),
            cost=Sum("cost"),
            last=Max("updated_at"),
        )
    )
    found = [
        {
            "machine": r["source__machine"],
            "sessions": r["sessions"],
            "tokens": r["tokens"] or 0,
            "cost": r["cost"],
            "last": r["last"],
        }
        for r in rows
    ]
    return sorted(found, key=lambda r: (-r["sessions"], r["machine"]))


def usage_by_model(qs: QuerySet[Session], project: str, range_name: str) -> list[dict]:
    """activity.usage_by_model of qs, the sessions of the project started in the range. All
    time, on PostgreSQL, from the project's rows of the tally (migration 0036), a few per
    machine and format: summing every session's model_costs took most of a page of 30,000."""
    scope = tally_scope({"project": project, "_range": range_name}) if project else None
    if scope is None:
        return activity.usage_by_model(qs)
    return activity.models_first(tallies.model_usage(scope))


# The order of a project's sessions, and of those whose tools are counted.
NEWEST_FIRST = (F("updated_at").desc(nulls_last=True), "-id")
# The columns a row of a project's sessions reads (display.usage_row) and its JSON twin
# (_session_to_dict): a table's, its branch and its source's machine. Not the usage lines, the
# costs per model and the other JSON a session keeps, which every row fetched for nothing.
USAGE_ROW_FIELDS = (*SESSION_ROW_FIELDS, "git_branch", "source", "source__machine")


def usage_report(
    base: QuerySet[Session], params: dict, today: date | None = None, *, project: str = ""
) -> dict:
    """The sessions of base started in the range (params["_range"]), a page of them
    (params["_page"]) nested, their totals, usage over time and by model, tools and branches.
    Every figure covers the same sessions, but for the tools past TOOL_SESSIONS sessions (then
    the newest TOOL_SESSIONS, and the chart says so); subagents count as sessions of their own,
    never inside their parent's, as on Activity.

    project: base is that project's every session (project_sessions), so that its usage by
    model may come from the tally (usage_by_model)."""
    today = today or timezone.localdate()
    range_name = params.get("_range") or activity.DEFAULT_RANGE
    since = range_start(range_name, today)
    qs = started_in_range(filter_sessions({}, base=base).queryset.order_by(), range_name, today)
    today = activity.range_end(qs, since, today)
    days, bucket = activity.sessions_by_day(qs, since, today)
    models = usage_by_model(qs, project, range_name)
    # Top level: sessions whose parent is not among them (no parent, or one elsewhere).
    top = qs.filter(Q(parent=None) | ~Q(parent__in=qs.values("id")))
    top = top.order_by(*NEWEST_FIRST).select_related("source").only(*USAGE_ROW_FIELDS)
    page = Paginator(top, PAGE_SIZE).get_page(params.get("_page") or 1)
    newest = list(qs.order_by(*NEWEST_FIRST).values_list("id", flat=True)[: TOOL_SESSIONS + 1])
    tools_sessions = min(len(newest), TOOL_SESSIONS)
    tools = tool_counts(newest[:TOOL_SESSIONS])
    tools_title = "Most used tools"
    if len(newest) > TOOL_SESSIONS:
        tools_title += f" in the newest {TOOL_SESSIONS} sessions"
    machines = sessions_per_machine(qs)
    return {
        "range": {
            "name": range_name,
            "label": activity.RANGE_LABELS[range_name],
            "since": since,
            "until": today,
            "bucket": bucket,
        },
        "ranges": list(activity.RANGE_LABELS.items()),
        "totals": activity.totals_of(qs),
        "days": days,
        "models": models,
        "tools": tools,
        "tools_sessions": tools_sessions,  # the newest sessions tools counts the calls of
        "branches": branches(qs),
        "machines": machines,
        "page": page,
        "rows": _nest(list(page.object_list), qs.select_related("source").only(*USAGE_ROW_FIELDS)),
        "charts": {
            **activity.time_charts(days, bucket),
            "tokens_per_model": activity.bar_chart(
                "Tokens by the model of each turn", [(r["model"], r["tokens"]) for r in models], "tokens"
            ),
            "cost_per_model": activity.bar_chart(
                "Cost by the model of each turn",
                [(r["model"], r["cost"]) for r in models if r["cost"] is not None],
                "USD",
            ),
            "tools": activity.bar_chart(tools_title, [(t["name"], t["calls"]) for t in tools], "calls"),
        },
    }


def _session_to_dict(session: Session, depth: int) -> dict:
    return {
        "id": session.id,
        "machine": session.source.machine,
        "url": session.get_absolute_url(),
        "title": session.display_title,
        "format": session.format,
        "kind": session.kind,
        "parent": session.parent_id,
        "depth": depth,
        "git_branch": session.git_branch,
        "started_at": session.started_at,
        "updated_at": session.updated_at,
        "messages": session.message_count,
        "models": session.models_used,
        "tokens": session.token_total,
        # USD; None: no token of it has a price. unpriced_tokens: tokens no price covers.
        "cost": {"usd": session.cost, "unpriced_tokens": session.unpriced_tokens},
    }


def usage_to_dict(data: dict) -> dict:
    """The report for a JSON twin: the numbers, without the drawing."""
    page = data["page"]
    return {
        "range": data["range"],
        "totals": data["totals"],
        "days": data["days"],
        "models": data["models"],
        "tools": data["tools"],
        "tools_sessions": data["tools_sessions"],  # the tools are those of the newest this many
        "branches": data["branches"],
        "machines": data["machines"],  # sessions per machine
        # The page's sessions, parents first, each followed by its subagents (depth > 0).
        "sessions": [_session_to_dict(r["session"], r["depth"]) for r in data["rows"]],
        "page": {"number": page.number, "pages": page.paginator.num_pages, "top_level": page.paginator.count},
    }
