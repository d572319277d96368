"""What a transcript's entry shows around its blocks, made once per entry in Python.

{% load entries %}, then {% entry_shown row as shown %} in _entry.html: its classes, its
head (who, model, provider, usage and cost, time, permalink), which body it shows and the
notes under it. A transcript's first screen renders a few dozen entries in one request,
and in the template this was some fifty nodes an entry, each an `{% if %}`, a lookup that
misses a dict key (an exception to Django) or a filter: most of the page's CPU.

Escaping is format_html's, as autoescape's was: every value from the session file goes in
as an argument, never as part of the format string.
"""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlencode

from django import template
from django.http import QueryDict
from django.template.defaultfilters import date as format_date
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe
from django.utils.timezone import template_localtime

from sessionviewer import links
from sessionviewer.templatetags.display import turn_cost, usd
from sessionviewer.templatetags.transcript import compact, harness, neutral, spaced, summary_in_banner
from sessionviewer.transcripts import layout

register = template.Library()

# The labels in the head of the roles that are not a speaker (a harness line's: layout.harness_who).
_LABELLED_ROLES = {"compaction": "compaction", "compact-summary": "compaction summary"}
# The harness lines with a body of their own; any other shows its text folded ("harness").
_HARNESS_BODIES = frozenset({"command", "interrupt", "output"})
# The permalink drops these from the page's query string, as {% querystring %} did.
_PERMALINK_DROPS = ("_offset", "_before", "_after", "_read")
_PERMALINK_BASE = object()  # the render context's key for the page's query string, split


@register.simple_tag(takes_context=True)
def entry_shown(context, row) -> dict:
    """What _entry.html shows of a row, besides its blocks: a dict, as Django's lookups find
    a dict's keys first (an attribute costs them a TypeError)."""
    entry = row.entry
    extra = entry.extra
    session = context.get("session")
    h = harness(entry, session.format if session is not None else "")
    kind = (h.get("kind", "") if h else "") or ""
    role = row.role_class
    if role in ("compaction", "compact-summary", "unknown"):
        body = role
    elif h:
        body = kind if kind in _HARNESS_BODIES else "harness"
    else:
        body = "meta" if role == "meta" else "pieces"
    in_banner = summary_in_banner(entry, context.get("thread"))
    return {
        "harness": h,
        "in_banner": in_banner,
        "classes": _classes(row, h, kind, in_banner),
        "anchors": _anchors(row),
        "head": _head(context, row, h, kind),
        "body": body,
        "sender_chip": bool(extra.get("sender") or extra.get("reply_to")),
        "cut_at_depth": extra.get("cut_at_depth"),
        "searchable_chars": extra.get("searchable_chars"),
    }


def _classes(row, h: dict | None, kind: str, in_banner: bool) -> str:
    if h:
        classes = ["entry", "user" if kind == "command" else "meta", "harness", _text(h.get("kind", ""))]
    else:
        classes = ["entry", row.role_class]
    if row.entry.is_meta:
        classes.append("is-meta")
    if in_banner:
        classes.append("in-banner")
    if row.error_message:
        classes.append("has-error")
    if row.noise:
        classes.append("noise")
    return " ".join(classes)


def _anchors(row) -> SafeString:
    """The other lines this row shows, and a compaction jump's, as empty elements to scroll to."""
    ids = [*row.anchors, row.jump_anchor] if row.jump_anchor else row.anchors
    return mark_safe(  # noqa: S308 - each id escaped by format_html
        "".join(format_html('<span id="{}" class="line-anchor"></span>', other) for other in ids)
    )


def _head(context, row, h: dict | None, kind: str) -> SafeString:
    entry = row.entry
    export = context.get("export")
    model = format_html('<span class="model">{}</span>', neutral(entry.model)) if entry.model else ""
    provider = row.provider
    if provider:
        provider = format_html('<span class="provider" title="Provider">{}</span>', neutral(provider))
    usage = ""
    if row.show_usage:
        usage = format_html(
            '<span class="usage" title="{}">{} tokens</span>', row.usage_title, compact(row.usage_total)
        )
        if cost := turn_cost(row):
            usage += format_html(
                '<span class="usage cost" title="{}">{}</span>', cost["title"], usd(cost["usd"])
            )
    time = ""
    if entry.timestamp:
        local = template_localtime(entry.timestamp, context.use_tz)
        time = format_html(
            '<time datetime="{}">{}</time>', date_text(local, "c"), date_text(local, "Y-m-d H:i:s")
        )
    copied = ""
    copies_until = context.get("fork_copies_until")
    if copies_until and entry.line <= copies_until and entry.kind == "message" and not export:
        copied = format_html(
            '<a class="copied-from" href="{}" title="A fork copies its parent\'s last messages">'
            "copied from the parent</a>",
            links.entry(context["session"].parent_id, entry.id),
        )
    link = "" if export else _permalink_query(context, entry.id)
    return format_html(
        '<div class="entry-head">\n    <span class="who">{}</span>\n    {}{}\n    {}\n    {}\n    {}\n'
        '    <a class="permalink" href="{}#{}">line {}</a>\n  </div>',
        _who(row, h, kind),
        model,
        provider,
        usage,
        time,
        copied,
        link,
        row.anchor,
        entry.line,
    )


def _who(row, h: dict | None, kind: str) -> str:
    entry = row.entry
    if entry.sender:
        return neutral(entry.sender)
    if h:
        return layout.harness_who(kind)
    role = row.role_class
    if role in _LABELLED_ROLES:
        return _LABELLED_ROLES[role]
    if role == "unknown":
        return "unknown entry" + (f" · {neutral(entry.subtype)}" if entry.subtype else "")
    if role == "meta":
        return spaced(neutral(entry.kind)) + (f" · {spaced(neutral(entry.subtype))}" if entry.subtype else "")
    return role


def date_text(value, fmt: str) -> str:
    """The date filter's output for a datetime in the page's time zone, without its lookups."""
    if not isinstance(value, datetime):
        return format_date(value, fmt)
    if fmt == "c":
        return value.isoformat()
    return (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d} "
        f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )


def _text(value) -> str:
    """A value as a template prints it: None as "None"."""
    return value if isinstance(value, str) else str(value)


def permalink_query(query: QueryDict, entry_id: str) -> str:
    """What {% querystring entry=entry_id _offset=None _before=None _after=None _read=None %}
    makes of query: the page's own query string pointing at one entry."""
    before, after = _split_query(query)
    return _join_query(before, entry_id, after)


def _permalink_query(context, entry_id: str) -> str:
    """permalink_query on the request's query string, split once per page rather than copied
    and encoded whole for each entry."""
    base = context.render_context.dicts[0]
    split = base.get(_PERMALINK_BASE)
    if split is None:
        request = context.get("request")
        split = base[_PERMALINK_BASE] = _split_query(request.GET if request is not None else QueryDict())
    before, after = split
    return _join_query(before, entry_id, after)


def _split_query(query: QueryDict) -> tuple[str, str]:
    """The query string without the dropped keys, encoded as QueryDict does: the part before
    where "entry" goes (where it is, or at the end) and the part after."""
    kept = query.copy()
    for key in _PERMALINK_DROPS:
        kept.pop(key, None)
    keys = list(kept)
    at = keys.index("entry") if "entry" in kept else len(keys)

    def encoded(names: list[str]) -> str:
        part = QueryDict(mutable=True)
        for name in names:
            part.setlist(name, kept.getlist(name))
        return part.urlencode()

    return encoded(keys[:at]), encoded(keys[at + 1 :])


def _join_query(before: str, entry_id: str, after: str) -> str:
    # urlencode quotes a str as QueryDict.urlencode quotes its UTF-8 bytes.
    return "?" + "&".join(part for part in (before, urlencode({"entry": entry_id}), after) if part)
