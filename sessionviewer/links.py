"""Every link that carries a query string or an entry's anchor, built in one place.

Domain modules return data (a session and an entry id, a filter's values); views and
templates (templatetags/link_tags.py) make URLs from it here, with reverse() and urlencode(),
so each parameter is named and escaped once, as datasette's url_builder does. An empty
value (None or "") leaves its parameter out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from functools import cache
from urllib.parse import urlencode

from django.http import QueryDict
from django.urls import reverse

from sessionviewer.transcripts import anchor
from sessionviewer.workspaces import SESSIONS_DIR


def _url(path: str, query: Mapping | None = None, fragment: str = "") -> str:
    if isinstance(query, QueryDict):  # a request's own query string: every value, as sent
        encoded = query.urlencode()
    else:
        encoded = urlencode({k: v for k, v in (query or {}).items() if v not in (None, "")}, doseq=True)
    url = f"{path}?{encoded}" if encoded else path
    return f"{url}#{fragment}" if fragment else url


# --- Sessions --------------------------------------------------------------------------------------


def session(session_id: int, **params) -> str:
    """A transcript, with forms.TranscriptForm's params: q, the search it was opened from
    (the page marks its words); _offset and _inline, a subagent's chunk in its parent's page."""
    return _url(reverse("session-detail", args=[session_id]), params)


# An id no session has: session_paths() reverses it once, then puts each id in its place.
_MARKER_ID = 987654321


def session_paths() -> Callable[[int], str]:
    """session() without a query string, for every row of a page: the path is reversed once,
    and each id put where the marker id was (reverse() took 20 µs a call, and a list page
    called it for each of its 50 to 100 rows). An id is digits, which need no quoting."""
    head, marker, tail = reverse("session-detail", args=[_MARKER_ID]).rpartition(str(_MARKER_ID))
    if not marker:
        raise ValueError("session-detail's path does not hold its id as written")
    return lambda session_id: f"{head}{int(session_id)}{tail}"


def project_paths() -> Callable[[str], str]:
    """project() without a query string, each project reversed once: the rows of a list
    page share a few projects. Use one per page (the URLs may change between requests)."""
    return cache(lambda key: reverse("project-detail", args=[key]))


def entry(
    session_id: int, entry_id: str, q: str = "", session_path: Callable[[int], str] | None = None
) -> str:
    """An entry's permalink: the transcript opened at the entry, scrolled to it. session_path:
    session_paths()'s, for a page of many entries' links."""
    path = session_path(session_id) if session_path else reverse("session-detail", args=[session_id])
    return _url(path, {"entry": entry_id, "q": q}, anchor(entry_id))


def entry_text(session_id: int, line: int, block: int, start: int | None = None) -> str:
    """The whole text of a block the page cut, or its next part from start."""
    return _url(reverse("session-entry-text", args=[session_id, line, block]), {"_from": start})


def export(session_id: int, extension: str, show_all: bool = False) -> str:
    """A session's export (extension "html" or "md"), with every entry when show_all."""
    return _url(reverse(f"session-export-{extension}", args=[session_id]), {"_all": 1 if show_all else None})


def redact(session_id: int) -> str:
    """A session's redaction review: its values to take out, its exports and share links."""
    return reverse("session-redact", args=[session_id])


def session_list(**filters) -> str:
    """The session list with these filters, as forms.SessionListForm reads them."""
    return _url(reverse("session-list"), filters)


def filtered(query: QueryDict, **values: str | None) -> str:
    """The page's own query string with values set (None: taken out), from its first page:
    a facet's link, relative to the page it is on."""
    return _filtered(_pairs(query), values)


def _pairs(query: QueryDict) -> list[tuple[str, str]]:
    return [(name, value) for name, sent in query.lists() for value in sent]


def _filtered(pairs: list[tuple[str, str]], values: Mapping[str, str | None]) -> str:
    """filtered() from the query string's pairs: as QueryDict's copy, pop, set and urlencode
    would make it, without copying the QueryDict (a deep copy) for each of a page's 100 links."""
    dropped = {"_page", "_hits_page", *values}
    kept = [pair for pair in pairs if pair[0] not in dropped]
    kept += [(name, value) for name, value in values.items() if value is not None]
    return "?" + urlencode(kept)


def with_facet_links(facets: list[dict], query: QueryDict) -> list[dict]:
    """activity.facets with each value's "toggle" (the parameters clicking it sets) made its
    link on the page the query string is from."""
    pairs = _pairs(query)
    for facet in facets:
        for value in facet["values"]:
            value["link"] = _filtered(pairs, value.pop("toggle"))
    return facets


def project(key: str, query: QueryDict | None = None) -> str:
    """A project's page; query: a request's query string, carried over."""
    return _url(reverse("project-detail", args=[key]), query)


def json_twin(url_name: str, kwargs: Mapping, query: QueryDict) -> str:
    """A page's JSON twin (its URL name with "api-" before it), with the page's own query
    string, every value as sent: the same request, answered as JSON."""
    return _url(reverse(f"api-{url_name}", kwargs=kwargs), query)


# --- Workspace memory ------------------------------------------------------------------------------


def memory_as_of(root_index: int, owner: str, at: datetime | str) -> str:
    """A JID's memory (or the global files') as it was at a moment."""
    return _url(reverse("workspace-memory-as-of", args=[root_index, owner]), {"at": at})


def memory_timeline(
    root_index: int, jid: str, until: datetime | str | None = None, fragment: str = ""
) -> str:
    """A JID's memory timeline, up to until (inclusive), at fragment (a change's id)."""
    return _url(reverse("workspace-memory-timeline", args=[root_index, jid]), {"until": until}, fragment)


def memory_changes(query: Mapping | None = None, fragment: str = "") -> str:
    """Every JID's memory changes, filtered by query (forms.MemoryTimelineForm's parameters)."""
    return _url(reverse("workspace-memory-changes"), query, fragment)


def memory_findings(query: Mapping | None = None) -> str:
    """The findings in the memory's history (forms.MemoryFindingsForm's parameters)."""
    return _url(reverse("workspace-memory-findings"), query)


def secrets_report(query: Mapping | None = None, api: bool = False) -> str:
    """The secrets report on the files as they are now (jid, kind, _page), or its JSON twin."""
    return _url(reverse("api-workspace-secrets" if api else "workspace-secrets"), query)


def audit_log(filters: Mapping | None = None, page: int | None = None, api: bool = False) -> str:
    """The audit log with filters (root, jid, action, machine) at page, or its JSON twin."""
    return _url(
        reverse("api-workspace-audit-log" if api else "workspace-audit-log"),
        {**(filters or {}), "_page": page},
    )


def workspace_root(root_index: int) -> str:
    """A memory root on the page of every root."""
    return _url(reverse("workspace-list"), fragment=f"root-{root_index}")


def memory_source(root_index: int, jid: str, relative: str, line: int | None = None) -> str | None:
    """The page showing a file of the memory tree with numbered lines, at line's anchor: a
    global persona file (jid ""), a JID's own file, or a transcript in its sessions/;
    relative to the JID's folder (or the root), as the listings give it. None for a file
    no page shows."""
    parts = relative.split("/")
    if not jid and len(parts) == 1:
        path = reverse("workspace-global-source", args=[root_index, parts[0]])
    elif jid and len(parts) == 1:
        path = reverse("workspace-source", args=[root_index, jid, parts[0]])
    elif jid and len(parts) == 2 and parts[0] == SESSIONS_DIR:
        path = reverse("workspace-session-source", args=[root_index, jid, parts[1]])
    else:
        return None
    return _url(path, fragment="" if line is None else f"L{line}")


def memory_file_at_line(root_index: int, jid: str, name: str, line: int | None = None) -> str:
    """A memory file in the editor, a line marked: a JID's own, or a global one (jid "")."""
    if jid:
        return _url(reverse("workspace-edit", args=[root_index, jid, name]), {"line": line})
    return _url(reverse("workspace-global-edit", args=[root_index, name]), {"line": line})
