"""Links with a query string or an entry's anchor, from templates: each tag is links.py's
builder of the same name, so a page's links and its API twin's are made the same way.

{% load link_tags %}, then {% entry_url session.id entry_id q %} (a permalink),
{% session_url session.id q=q %}, {% list_url "project" key _range=range %}.
"""

from __future__ import annotations

from django import template

from sessionviewer import links

register = template.Library()


@register.simple_tag
def session_url(session_id: int, **params) -> str:
    return links.session(session_id, **params)


@register.simple_tag
def entry_url(session_id: int, entry_id: str, q: str = "") -> str:
    return links.entry(session_id, entry_id, q)


@register.simple_tag
def entry_text_url(session_id: int, line: int, block: int, start: int | None = None) -> str:
    return links.entry_text(session_id, line, block, start)


@register.simple_tag
def export_url(session_id: int, extension: str, show_all: bool = False) -> str:
    return links.export(session_id, extension, show_all)


@register.simple_tag
def list_url(name: str = "", value: str = "", **filters) -> str:
    """The list filtered by name=value (a filter the page names: project or jid) and filters."""
    return links.session_list(**({name: value} if name else {}), **filters)
