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


@register.simple_tag(takes_context=True)
def json_twin_url(context) -> str:
    """The JSON twin of the page being rendered, with its query string."""
    request = context["request"]
    match = request.resolver_match
    return links.json_twin(match.url_name, match.kwargs, request.GET)


# Workspace memory: {% secrets_url jid=entry.jid %}, {% memory_source_url root_index jid name line %}


@register.simple_tag
def secrets_url(**query) -> str:
    return links.secrets_report(query)


@register.simple_tag
def audit_log_url(**filters) -> str:
    return links.audit_log(filters)


@register.simple_tag
def memory_findings_url(**query) -> str:
    """root: the root's index, left out for the first (pass None: root=root_index|default:None)."""
    return links.memory_findings(query)


@register.simple_tag
def workspace_root_url(root_index: int) -> str:
    return links.workspace_root(root_index)


@register.simple_tag
def memory_source_url(root_index: int, jid: str, relative: str, line: int | None = None) -> str | None:
    return links.memory_source(root_index, jid, relative, line)
