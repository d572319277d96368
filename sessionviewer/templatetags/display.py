"""How the pages show a session's format, times and paths to a person.

{% load display %}, then {{ session.format|format_label }} (mark and name),
{{ session.updated_at|when }} ("3 hours ago", exact on hover) and
{{ session.project|short_path }} (…/spotter-worktrees/spotter-4te, whole on hover).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, tzinfo
from functools import lru_cache
from math import floor, log10

from django import template
from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.template import Context
from django.template.defaultfilters import date as format_date
from django.template.defaultfilters import join, stringformat, truncatechars
from django.templatetags.static import static
from django.utils import timezone
from django.utils.dates import MONTHS_3
from django.utils.formats import localize
from django.utils.html import conditional_escape, format_html
from django.utils.safestring import SafeString, mark_safe

from sessionviewer import links, prices, readers, render
from sessionviewer.index import fold
from sessionviewer.templatetags.transcript import (
    compact,
    credentials_masked,
    neutral,
    snippet_html,
    title_cut,
)

register = template.Library()

# Paths longer than this keep only their last PATH_PARTS parts, after an ellipsis.
PATH_CHARS = 20
PATH_PARTS = 2
NBSP = "\u00a0"


def _html(template: str, *values) -> SafeString:
    """format_html(template, *values), as fast as it can be: each value escaped unless safe,
    as conditional_escape does, and the result marked safe, without the wrappers for lazy
    strings of conditional_escape and mark_safe (half a list row's time)."""
    escaped = (v.__html__() if hasattr(v, "__html__") else html.escape(str(v)) for v in values)
    return SafeString(template.format(*escaped))  # every value escaped above


@register.filter
def format_name(key: str) -> str:
    return readers.format_name(key or "")


@register.filter
@lru_cache(maxsize=64)
def format_label(key: str) -> SafeString:
    """The format's mark and name; the mark is decoration (alt=""), the name is what is read.

    Kept per format: a list shows it on every row, and the mark's static URL is looked up in
    the storage (a manifest, when deployed) the same way each time. Forgotten when a setting
    that names static files changes (tests do that)."""
    if key not in readers.FORMATS:
        return format_html('<span class="format">{}</span>', key or "")
    known = readers.format_of(key)
    return format_html(
        '<span class="format"><img class="mark" src="{}" alt="" width="16" height="16">{}</span>',
        static(known.mark),
        known.name,
    )


@receiver(setting_changed)
def _forget_marks(setting: str, **kwargs) -> None:
    if setting.startswith("STATIC") or setting == "STORAGES":
        format_label.cache_clear()


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'} ago"


def relative(moment: datetime, now: datetime) -> str:
    """moment as a person says it, seen from now: "just now", "5 minutes ago",
    "3 hours ago", "yesterday", "4 days ago", then the date ("5 Mar", "5 Mar 2025")."""
    zone = timezone.get_current_timezone()
    return _relative(moment.astimezone(zone), now.astimezone(zone))


def _relative(local: datetime, now: datetime) -> str:
    """relative(), for a moment and a now already in the current zone. "j M" as Django's date
    filter writes it (the same translated month names), without parsing a format per call."""
    seconds = (now - local).total_seconds()
    if -60 < seconds < 60:
        return "just now"
    if seconds > 0 and seconds < 3600:
        return _plural(int(seconds // 60), "minute")
    if seconds > 0 and seconds < 24 * 3600:
        return _plural(int(seconds // 3600), "hour")
    today = now.date()
    days = (today - local.date()).days
    if days == 1:
        return "yesterday"
    if 1 < days < 7:
        return f"{days} days ago"
    day = f"{local.day} {MONTHS_3[local.month].title()}"
    return day if local.year == today.year else f"{day} {local.year:04d}"


def _exact(local: datetime) -> str:
    """ "Y-m-d H:i:s T" as Django's date filter writes it, for a moment in the current zone."""
    name = local.tzname()
    if name is None:  # as the filter's T does: the offset instead
        name = format_date(local, "O")
    return (
        f"{local.year:04d}-{local.month:02d}-{local.day:02d} "
        f"{local.hour:02d}:{local.minute:02d}:{local.second:02d} {name}"
    )


@register.filter
def when(moment: datetime | None) -> SafeString | str:
    """A <time> saying how long ago, with the exact time (in TIME_ZONE) on hover.

    A list shows two a row: the moment is put in the zone once, and nothing parses a date
    format per call (Django's date filter did, twice a call, a sixth of the list's time)."""
    if not moment:
        return ""
    zone = timezone.get_current_timezone()
    return _when(moment, zone, timezone.now().astimezone(zone))


def _when(moment: datetime, zone: tzinfo, now: datetime) -> SafeString:
    """when(), for a moment seen from now, which is already in zone."""
    local = moment.astimezone(zone)
    return _html(
        '<time datetime="{}" title="{}">{}</time>',
        moment.replace(microsecond=0).isoformat(),
        _exact(local),
        _relative(local, now),
    )


@register.filter
def shorten(path: str) -> str:
    """A long path cut from the left to its last parts: /home/me/src/spotter-worktrees/spotter-4te
    becomes …/spotter-worktrees/spotter-4te. The end of a path is what tells projects apart."""
    if len(path) <= PATH_CHARS:
        return path
    # A Windows path (OpenClaw records them as the agent's host wrote them) cuts at "\\".
    separator = "\\" if "\\" in path and "/" not in path else "/"
    parts = path.rstrip(separator).split(separator)
    if len(parts) <= PATH_PARTS + 1:
        return path
    return "…" + separator + separator.join(parts[-PATH_PARTS:])


@register.filter
def breakable_path(path: str) -> SafeString:
    """The whole path, allowed to wrap after each separator rather than inside a name."""
    return _breaks_after_separators(render.neutralise(str(path or "")))


@register.filter
def short_path(path: str) -> SafeString | str:
    """The path shortened from the left, the whole of it on hover; control characters shown."""
    text = render.neutralise(str(path or ""))
    short = shorten(text)
    if short == text:  # whole: it may still wrap, after a separator only
        return _breaks_after_separators(text)
    return format_html('<span class="path" title="{}">{}</span>', text, _breaks_after_separators(short))


def _breaks_after_separators(text: str) -> SafeString:
    """text escaped, allowed to wrap after each separator rather than inside a name."""
    escaped = conditional_escape(text)
    return mark_safe(escaped.replace("/", "/<wbr>").replace("\\", "\\<wbr>"))  # noqa: S308 - escaped above


@register.filter
def breakable_jid(jid: str) -> SafeString:
    """A JID allowed to wrap after its "@" and before each ".", never inside a name."""
    text = conditional_escape(render.neutralise(str(jid or "")))
    return mark_safe(text.replace("@", "@<wbr>").replace(".", "<wbr>."))  # noqa: S308 - escaped above


@register.filter
def header_label(label: str) -> str:
    """A column's label on two lines at most: it may wrap after its first " · ", nowhere else
    ("Agent ·" over "channel · peer"), so a narrow column never stacks it three high."""
    head, separator, rest = label.partition(" · ")
    if not separator:
        return head.replace(" ", NBSP)
    return head.replace(" ", NBSP) + NBSP + "· " + rest.replace(" ", NBSP)


@register.filter
def agent_parts(session) -> list[str]:
    """Agent, channel, peer kind and peer as far as the format records them, control
    characters shown: the header joins them, with no separator before a missing one."""
    parts = (session.agent, session.channel, session.peer_kind, session.peer_id)
    return [render.neutralise(part) for part in parts if part]


@register.filter
def token_parts(session) -> list[str]:
    """The kinds of tokens the session used ("3 in", "286 out", "4.3k cache write"): a kind
    at zero is one the format does not record or the session did not use."""
    kinds = (
        (session.input_tokens, "in"),
        (session.output_tokens, "out"),
        (session.cache_read_tokens, "cache read"),
        (session.cache_write_tokens, "cache write"),
    )
    return [f"{compact(n)} {label}" for n, label in kinds if n]


@register.filter
def usd(value) -> str:
    """Dollars as the pages show them: cents from a dollar up, up to three significant
    digits below ("$0.0123", "$0.06"), "no price" for None (never $0)."""
    if value is None:
        return "no price"
    value = float(value)
    if value == 0:
        return "$0"
    if abs(value) >= 1:
        return f"${value:,.2f}"
    if abs(value) < 0.0001:
        return "<$0.0001"
    text = f"{value:.{min(4, max(2, 2 - floor(log10(abs(value)))))}f}"
    whole, cents = text.split(".")
    return f"${whole}.{cents[:2]}{cents[2:].rstrip('0')}"


@register.filter
def cost_text(session) -> str:
    """A session's cost: dollars, "no price" when none of its tokens has one, "" when it
    used no tokens; the tokens without a price said after the dollars."""
    if not session.total_tokens and session.cost is None:
        return ""
    if session.cost is None:
        return "no price"
    text = usd(session.cost)
    if session.unpriced_tokens:
        text += f" + {compact(session.unpriced_tokens)} tokens without a price"
    return text


@register.filter
def subagents_cost(children) -> dict:
    """The subagents among a session's children, and what they cost together (None: none priced)."""
    subagents = [c for c in children if c.kind == "subagent"]
    priced = [c.cost for c in subagents if c.cost is not None]
    return {
        "count": len(subagents),
        "cost": sum(priced) if priced else None,
        "unpriced": sum(c.unpriced_tokens for c in subagents),
    }


@register.filter
def cost_rows(line: dict) -> list[tuple]:
    """A priced usage line (prices.price_lines) as rows: kind, tokens, rate, cost, assumed."""
    rates = line["rates"] or {}
    rows = []
    for kind in prices.KINDS:
        count = line["tokens"][kind]
        rate = rates.get(kind)
        if count or (rate is not None and kind in ("input", "output")):
            cost = count * rate / 1_000_000 if rate is not None else None
            rows.append((prices.KIND_LABELS[kind], count, rate, cost, kind in line["assumed"]))
    return rows


@register.filter
def same_rate_lines(lines: list[dict]) -> list[dict]:
    """A model's priced usage lines (prices.price_lines), those at the same rates made one:
    days and input sizes that paid the same provider the same rates from the same table are
    one table on the page, their tokens, turns and cost added up. "days" says which days."""
    merged: dict[tuple, dict] = {}
    for line in lines:
        key = (
            line["provider"],
            tuple(sorted((line["rates"] or {}).items())),
            tuple(line["assumed"]),
            line["source"],
        )
        if key not in merged:
            merged[key] = {
                **line,
                "tokens": dict(line["tokens"]),
                "days": [line["day"]],
                "contexts": {line["context"]},
            }
            continue
        into = merged[key]
        for kind, count in line["tokens"].items():
            into["tokens"][kind] = into["tokens"].get(kind, 0) + count
        into["turns"] += line["turns"]
        if line["cost"] is not None:
            into["cost"] = (into["cost"] or 0.0) + line["cost"]
        into["days"].append(line["day"])
        into["contexts"].add(line["context"])
    for line in merged.values():
        dated = sorted({day for day in line["days"] if day})
        text = (
            dated[0] if len(dated) == 1 else f"{dated[0]} to {dated[-1]}, {len(dated)} days" if dated else ""
        )
        undated = "" in line["days"] or None in line["days"]
        line["days"] = f"{text} and undated" if text and undated else text or "undated"
        # The input size only where it is one: the rates are the same whatever it was.
        line["context"] = line["context"] if len(line.pop("contexts")) == 1 else 0
    return list(merged.values())


@register.filter
def tokens_sum(tokens: dict) -> int:
    return prices.line_tokens(tokens)


@register.filter
def turn_cost(row) -> dict | None:
    """What one row's turn cost (its reply's last usage line, as the session counts it):
    {"usd": dollars or None for no price, "title": tokens x rates}; None without a model."""
    entry = row.usage_entry or row.entry
    if not entry.model or entry.model.startswith("<"):
        return None
    key, tokens = fold.turn_line(entry)
    try:
        rates = prices.rates_for(*prices.split_key(key))
    except prices.PricesFileError as error:
        return {"usd": None, "title": str(error)}
    if rates is None:
        return {"usd": None, "title": f"No price for {entry.model}"}
    parts = [
        f"{prices.KIND_LABELS[kind]} {tokens[kind]} x ${rates.per_mtok[kind]:f}/M"
        for kind in prices.KINDS
        if tokens[kind]
    ]
    return {"usd": rates.cost(tokens), "title": " + ".join(parts)}


@register.filter
def shorten_left(label: str, limit: int = 30) -> str:
    """A label cut from the left to limit characters ("…tmux.ex"): the end of a path or a
    model's name tells entries apart; the whole of it is in the chart's hover title."""
    text = str(label)
    return text if len(text) <= limit else "…" + text[-(limit - 1) :]


# --- The filters' values ---------------------------------------------------------------------------

_SELECTED = mark_safe(' class="selected"')


@register.simple_tag
def facet_item(facet: dict, value: dict) -> SafeString:
    """A value of a facet (activity.facets, with its link): an item linking to the list with
    it selected ("✕" before it when it is, the link then taking it off), and its count.

    A tag rather than an include: the list and Activity show 40 to 90 values a page."""
    selected = value.get("selected")
    return _html(
        '<li{0}><a href="{1}" hx-get="{1}">{2}{3}</a> <span class="n">{4}</span></li>',
        _SELECTED if selected else "",
        value.get("link", ""),
        "✕ " if selected else "",
        facet_label(facet.get("name"), value),
        localize(value.get("count", "")),
    )


_FACET_SECTION = '<section class="facet" data-facet="{}">\n      <h2>{}</h2>\n      <ul>\n{}      </ul>\n    </section>\n    '


@register.simple_tag
def facet_sections(facets: list[dict]) -> SafeString:
    """The filters' sections (activity.facets, with their links): each facet's heading and its
    values as facet_item makes them. One tag for a page's 13 facets and their 40 to 150 values:
    a template loop around facet_item cost the list a tenth of its rendering."""
    return mark_safe(  # noqa: S308 - each part made by _html
        "".join(
            _html(
                _FACET_SECTION,
                facet.get("name", ""),
                facet.get("label", ""),
                mark_safe("".join(f"        {facet_item(facet, value)}\n" for value in facet["values"])),  # noqa: S308 - each made by _html
            )
            for facet in facets
        )
    )


def facet_label(facet: str, value: dict) -> SafeString | str:
    """What a facet's value shows: a format's mark and name; a root's machine and its path
    shortened, or a project's or a root's path shortened; else its label, cut at 48."""
    if facet == "format":
        return format_label(value.get("value", ""))
    if value.get("machine"):
        return _html("{}: {}", neutral(value["machine"]), short_path(value.get("path", "")))
    if facet in ("project", "root"):
        return short_path(value.get("label", ""))
    return truncatechars(neutral(value.get("label", "")), 48)


# --- The session list's rows -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _RowPage:
    """What every row of one rendered template shares, made at its first row and kept in its
    render context (an include has its own): the zone, the moment "3 hours ago" is counted
    from, how a count is written, and the paths of its sessions and projects."""

    zone: tzinfo
    now: datetime
    session_path: Callable[[int], str]
    project_path: Callable[[str], str]
    # A count as {{ count }} writes it: digits, grouped only when USE_THOUSAND_SEPARATOR is on.
    count: Callable[[int], str]

    @classmethod
    def of(cls, context: Context) -> _RowPage:
        page = context.render_context.get(cls)
        if page is None:
            zone = timezone.get_current_timezone()
            now = timezone.now().astimezone(zone)
            count = localize if settings.USE_THOUSAND_SEPARATOR else str
            page = cls(zone, now, links.session_paths(), links.project_paths(), count)
            context.render_context[cls] = page
        return page


_ROW = (
    "<tr{}>\n"
    '        <td>{}<a href="{}">{}</a>{}</td>\n'
    '        <td data-label="Format">{}</td>\n'
    '        <td data-label="{}">{}</td>\n'
    '        <td data-label="Agent">{}</td>\n'
    '        <td data-label="Started">{}</td>\n'
    '        <td data-label="Updated">{}</td>\n'
    '        <td data-label="Messages" class="num">{}</td>\n'
    '        <td data-label="Models">{}</td>\n'
    '        <td data-label="Tokens" class="num" title="{}">{}</td>\n'
    '        <td data-label="Cost" class="num"{}>{}</td>\n'
    "        {}\n"
    "      </tr>\n"
)
_NEST = mark_safe('<span class="nest" aria-hidden="true">↳ </span>')
_UNKNOWN = (
    ' <span class="badge unknown" title="Lines of a type the reader does not know, shown as raw JSON">'
    "{} unknown entr{}</span>"
)
_SECRETS = (
    ' <a class="badge secrets" href="{}#findings" title="Possible secrets in this session, masked on its page">'
    "{} possible secret{}</a>"
)


@register.simple_tag(takes_context=True)
def session_row(context: Context, session, nested: bool = False) -> SafeString:
    """A row of the session list's table: its title and badges, format, project (or JID),
    agent, times, counts, cost, and its machine once the index has two ("machines").

    Built here rather than in a template: a page has 50 to 100 rows, and the template took
    about 230 µs of CPU a row, 60% of the page's rendering (bench/README.md, "The rows a
    page repeats, made in Python"). Everything from the session file goes through format_html's escaping,
    as the template's autoescape did; tests/test_list.py compares the two."""
    page = _RowPage.of(context)
    url = page.session_path(session.id)
    return _html(
        _ROW,
        mark_safe(' class="nested"') if nested else "",
        _NEST if nested else "",
        url,
        title_cut(neutral(credentials_masked(session.display_title)), 100),
        _title_badges(session, url, page.count),
        format_label(session.format),
        "Project" if session.project else "JID",
        _project_or_jid(session, page.project_path),
        " · ".join(
            part for part in (neutral(session.agent), neutral(session.channel), session.peer_kind) if part
        ),
        _when(session.started_at, page.zone, page.now) if session.started_at else "",
        _when(session.updated_at, page.zone, page.now) if session.updated_at else "",
        page.count(session.message_count),
        _models(session.models_used),
        page.count(session.total_tokens),
        compact(session.total_tokens) if session.total_tokens else "",
        _html(' title="{}"', cost_text(session)) if session.unpriced_tokens else "",
        _cost(session),
        _html(
            '<td data-label="Machine" class="machine" title="{0}">{0}</td>', neutral(session.source.machine)
        )
        if context.get("machines")
        else "",
    )


def _title_badges(session, url: str, count: Callable[[int], str]) -> SafeString:
    """What follows a row's title: its kind and status when not the usual, its unknown lines,
    its possible secrets (a link to them), and why it was not indexed."""
    badges = []
    if session.kind != "main":
        badges.append(_html(' <span class="badge">{}</span>', session.kind))
    if session.status != "active":
        badges.append(_html(' <span class="badge">{}</span>', session.status))
    if unknown := session.unknown_entry_count:
        badges.append(_html(_UNKNOWN, count(unknown), "y" if unknown == 1 else "ies"))
    if secrets := getattr(session, "possible_secrets", 0):  # filters.session_page counts them
        badges.append(_html(_SECRETS, url, count(secrets), "" if secrets == 1 else "s"))
    if session.index_error:
        badges.append(
            _html(
                '<p class="index-error"><span class="badge error">not indexed</span> {}</p>',
                truncatechars(neutral(session.index_error), 200),
            )
        )
    return mark_safe("".join(badges))  # noqa: S308 - each made by _html


def _models(models: list[str] | None) -> SafeString:
    return mark_safe(", ".join(_html('<span class="model">{}</span>', model) for model in models or ()))  # noqa: S308 - each escaped


def _project_or_jid(session, project_path: Callable[[str], str]) -> SafeString:
    if session.project:
        return _html('<a href="{}">{}</a>', project_path(session.project), short_path(session.project))
    return breakable_jid(session.jid)


def _cost(session) -> SafeString | str:
    """The cost cell: dollars (and "+ no price" for tokens without one), "no price" when none
    of its tokens has one, nothing without tokens."""
    if session.cost is not None:
        unpriced = mark_safe(' <span class="unpriced">+ no price</span>') if session.unpriced_tokens else ""
        return _html("{}{}", usd(session.cost), unpriced)
    return "no price" if session.total_tokens else ""


# --- The search's hits ------------------------------------------------------------------------------

_HIT = (
    '<li class="hit">\n'
    '          <a class="hit-link" href="{}">{}</a>\n'
    '          <span class="meta">line {}{}{}</span>\n'
    '          <p class="snippet">{}</p>\n'
    "        </li>"
)
_REPEAT = (
    ' · <span class="repeat" title="{0} hits of this session have exactly this text">×{0} identical</span>'
)


@register.simple_tag(takes_context=True)
def hit_item(context: Context, session_id: int, hit, q: str) -> SafeString:
    """A hit of a session on the search page (search.Snippet): a link to its entry, its line,
    when it was written, how many hits have the same text, and its snippet. In Python for
    the reason session_row is; tests/test_search.py compares it with the template it replaced."""
    page = _RowPage.of(context)
    entry = hit.entry
    return _html(
        _HIT,
        links.entry(session_id, entry.entry_id, q, page.session_path),
        hit.label,
        page.count(entry.line),
        _html(" · {}", _when(entry.timestamp, page.zone, page.now)) if entry.timestamp else "",
        _html(_REPEAT, page.count(hit.count)) if hit.count > 1 else "",
        snippet_html(hit.html),
    )


# --- A project's (or a JID's) sessions -------------------------------------------------------------

_USAGE_ROW = (
    '<tr class="depth-{}">\n'
    '        <td>{}<a href="{}">{}</a>{}</td>\n'
    '        <td data-label="Kind">{}</td>\n'
    '        <td data-label="Branch">{}</td>\n'
    '        <td data-label="Models">{}</td>\n'
    '        <td data-label="Started">{}</td>\n'
    '        <td data-label="Updated">{}</td>\n'
    '        <td data-label="Messages" class="num">{}</td>\n'
    '        <td data-label="Tokens" class="num" title="{}">{}</td>\n'
    '        <td data-label="Cost" class="num">{}</td>\n'
    "        {}\n"
    "      </tr>"
)


@register.simple_tag(takes_context=True)
def usage_row(context: Context, row: dict, machines: list) -> SafeString:
    """A row of a project's or a JID's sessions (projects._nest: a session and its depth
    under its parent): title, kind, branch, models, times, counts, cost, and its machine
    when the sessions are on two. In Python for the reason session_row is; tests/test_projects.py
    compares it with the template it replaced."""
    page = _RowPage.of(context)
    session, depth = row["session"], row["depth"]
    tokens = getattr(session, "token_total", "")  # annotated by the report's query
    return _html(
        _USAGE_ROW,
        min(depth, 3),
        _NEST if depth else "",
        page.session_path(session.id),
        title_cut(neutral(credentials_masked(session.display_title)), 100),
        _html(' <span class="badge">{}</span>', session.status) if session.status != "active" else "",
        session.kind,
        _html("<code>{}</code>", neutral(session.git_branch)) if session.git_branch else "",
        join(session.models_used, ", ", autoescape=True),
        _when(session.started_at, page.zone, page.now) if session.started_at else "",
        _when(session.updated_at, page.zone, page.now) if session.updated_at else "",
        page.count(session.message_count),
        page.count(tokens) if tokens != "" else "",
        compact(tokens) if tokens else "",
        cost_text(session),
        _html('<td data-label="Machine">{}</td>', neutral(session.source.machine))
        if len(machines) > 1
        else "",
    )


# --- Bar charts (activity.bar_chart) --------------------------------------------------------------

_BAR = (
    '<g>\n      <title>{}: {}{}</title>\n      {}<text x="{}" y="{}" text-anchor="end">{}</text>{}\n'
    '      <rect class="bar" x="{}" y="{}" width="{}" height="16" rx="2"></rect>\n'
    '      <text x="{}" dx="{}" y="{}">{}</text>\n    </g>'
)
_LINK_END = mark_safe("</a>")


@register.simple_tag
def chart_bars(chart: dict) -> SafeString:
    """A bar chart's bars: each a label (a link to its page when it has one), a bar and its
    value, the whole label and value on hover. Activity and a project's page draw ten such
    charts of up to FACET_LIMIT bars, each twice (chart_bar_rows below): the template's loop
    took a third of Activity's CPU over all time. tests/test_activity.py compares both."""
    unit = chart["unit"]
    suffix = "" if unit == "USD" else " " + unit
    label_x, bar_x = localize(chart["label_width"] - 6), localize(chart["bar_x"])
    value_x = localize(chart["bar_x"] + 6)
    parts = []
    for bar in chart["bars"]:
        label, url, value = neutral(bar["label"]), bar["url"], bar["value"]
        text_y, width = _one_decimal(bar["text_y"]), _one_decimal(bar["width"])
        parts.append(
            _html(
                _BAR,
                label,
                _amount(value, unit),
                suffix,
                _html('<a href="{}">', url) if url else "",
                label_x,
                text_y,
                shorten_left(label, 30),
                _LINK_END if url else "",
                bar_x,
                localize(bar["y"] + 3),
                width,
                value_x,
                width,
                text_y,
                usd(value) if unit == "USD" else compact(value),
            )
        )
    return SafeString("".join(parts))


@register.simple_tag
def chart_bar_rows(chart: dict) -> SafeString:
    """The numbers table's rows under a bar chart: its label (linked as on the chart) and value."""
    unit = chart["unit"]
    return SafeString(
        "".join(
            _html(
                '<tr><td>{}</td><td class="num">{}</td></tr>',
                _html('<a href="{}">{}</a>', bar["url"], neutral(bar["label"]))
                if bar["url"]
                else neutral(bar["label"]),
                _amount(bar["value"], unit),
            )
            for bar in chart["bars"]
        )
    )


# --- Charts over time (activity.column_chart) ------------------------------------------------------


def _amount(value, unit: str) -> SafeString | str:
    """A column's value as its title and the numbers table say it: dollars, else the number."""
    return usd(value) if unit == "USD" else localize(value)


@register.simple_tag
def chart_columns(chart: dict) -> SafeString:
    """The columns of a chart over time, each with its label and value on hover: a chart has
    60 to 90 of them, and the template's loop took about 1 ms a chart."""
    unit, bar = chart["unit"], localize(chart["bar"])
    suffix = "" if unit == "USD" else " " + unit
    return SafeString(
        "".join(
            _html(
                '<rect class="bar" x="{}" y="{}" width="{}" height="{}"><title>{}: {}{}</title></rect>',
                localize(c["x"]),
                _one_decimal(c["y"]),
                bar,
                _one_decimal(c["height"]),
                c["label"],
                _amount(c["value"], unit),
                suffix,
            )
            for c in chart["columns"]
        )
    )


@register.simple_tag
def chart_column_rows(chart: dict) -> SafeString:
    """The numbers table's rows under a chart over time: the columns with a value."""
    unit = chart["unit"]
    return SafeString(
        "".join(
            _html('<tr><td>{}</td><td class="num">{}</td></tr>', c["label"], _amount(c["value"], unit))
            for c in chart["columns"]
            if c["value"]
        )
    )


def _one_decimal(value) -> str:
    """stringformat:'.1f', as the chart's template wrote its coordinates."""
    return stringformat(value, ".1f")
