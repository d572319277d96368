"""sessionviewer/links.py: every link with a query string, built and escaped in one place."""

from datetime import UTC, datetime
from urllib.parse import parse_qs, urlsplit

from django.http import QueryDict
from django.urls import resolve

from sessionviewer import links

HOSTILE = 'a b&c=d#e/f?g+h"<i>é'


def _query(url: str) -> dict[str, list[str]]:
    return parse_qs(urlsplit(url).query, keep_blank_values=True)


def test_session_link_carries_the_search():
    assert links.session(7, q="red fox") == "/sessions/7/?q=red+fox"


def test_session_link_without_a_search_has_no_query_string():
    assert links.session(7) == "/sessions/7/"


def test_session_paths_are_the_reversed_ones_for_every_id():
    path = links.session_paths()
    for session_id in (1, 7, 987654321, 10**12):
        assert path(session_id) == links.session(session_id)


def test_project_paths_are_the_reversed_ones_for_every_project():
    path = links.project_paths()
    for project in ("~/app", "/home/me/my app", HOSTILE, "C:\\Users\\me"):
        assert path(project) == links.project(project)
        assert resolve(path(project)).kwargs == {"project": project}


def test_session_link_asks_for_a_subagents_chunk():
    assert links.session(7, _offset=0, _inline=1) == "/sessions/7/?_offset=0&_inline=1"


def test_export_link_asks_for_every_entry_only_when_the_page_shows_them():
    assert links.export(7, "html") == "/sessions/7/export.html"
    assert links.export(7, "md", show_all=True) == "/sessions/7/export.md?_all=1"


def test_entry_permalink_opens_at_the_entry_and_scrolls_to_it():
    assert links.entry(7, "abc-1") == "/sessions/7/?entry=abc-1#entry-abc-1"


def test_entry_permalink_keeps_the_search_after_the_entry():
    assert links.entry(7, "abc-1", "fox") == "/sessions/7/?entry=abc-1&q=fox#entry-abc-1"


def test_entry_permalink_escapes_a_hostile_entry_id_and_query():
    url = links.entry(7, HOSTILE, HOSTILE)
    path, _, fragment = url.partition("#")
    assert _query(path) == {"entry": [HOSTILE], "q": [HOSTILE]}
    assert "#" not in path.partition("?")[2] and '"' not in url and "<" not in url and " " not in url
    assert fragment.startswith("entry-") and fragment.replace("_", "").replace("-", "").isalnum()


def test_entry_text_link_names_the_block_and_where_the_rest_starts():
    assert links.entry_text(7, 12, 3) == "/sessions/7/lines/12/blocks/3/text"
    assert links.entry_text(7, 12, 3, 100000) == "/sessions/7/lines/12/blocks/3/text?_from=100000"


def test_session_list_link_leaves_empty_filters_out():
    assert (
        links.session_list(project="/home/me/a b", _range=None, machine="") == "/?project=%2Fhome%2Fme%2Fa+b"
    )


def test_filtered_link_sets_a_value_and_goes_back_to_the_first_page():
    query = QueryDict("format=pi&_page=3&_hits_page=2&q=x+y")
    assert links.filtered(query, agent="main") == "?format=pi&q=x+y&agent=main"


def test_filtered_link_takes_out_a_value_set_to_none():
    query = QueryDict("format=pi&agent=main")
    assert links.filtered(query, agent=None) == "?format=pi"


def test_filtered_link_escapes_a_hostile_value():
    assert _query(links.filtered(QueryDict(""), project=HOSTILE)) == {"project": [HOSTILE]}


def test_filtered_link_leaves_the_page_query_alone():
    query = QueryDict("format=pi")
    links.filtered(query, format="codex")
    assert query.urlencode() == "format=pi"


def test_project_link_gives_back_the_key():
    assert resolve(links.project("/home/me/a b?c#d")).kwargs == {"project": "/home/me/a b?c#d"}


def test_project_link_carries_a_query_string_over_with_every_value():
    assert links.project("a", QueryDict("x=1&x=2&y=")).endswith("/?x=1&x=2&y=")


def test_memory_as_of_link_gives_the_moment():
    at = datetime(2025, 3, 1, 12, 0, tzinfo=UTC).isoformat()
    url = links.memory_as_of(0, "me@example.org", at)
    assert url.startswith("/workspaces/0/me@example.org/as-of/?at=")
    assert _query(url) == {"at": [at]}


def test_memory_timeline_link_gives_until_and_the_change():
    url = links.memory_timeline(0, "me@example.org", "2025-03-01T12:00:00+00:00", "change-s4")
    assert url.endswith("?until=2025-03-01T12%3A00%3A00%2B00%3A00#change-s4")


def test_memory_timeline_link_without_until_is_the_whole_timeline():
    assert "?" not in links.memory_timeline(0, "me@example.org")


def test_memory_changes_link_keeps_the_filters_and_the_change():
    url = links.memory_changes({"root": 1, "scope": "global", "until": "x"}, "change-s2")
    assert url == "/workspaces/memory-changes/?root=1&scope=global&until=x#change-s2"


def test_memory_findings_and_secrets_links_leave_empty_filters_out():
    assert (
        links.memory_findings({"root": None, "jid": "me@example.org"})
        == "/workspaces/memory-findings/?jid=me%40example.org"
    )
    assert links.secrets_report({"jid": "", "kind": "key"}).endswith("?kind=key")


def test_memory_file_at_line_opens_a_jids_file_or_a_global_one():
    assert links.memory_file_at_line(0, "me@example.org", "memory.md", 4).endswith("/memory.md/edit/?line=4")
    assert "me@example.org" not in links.memory_file_at_line(0, "", "persona.md", 4)


def test_secrets_report_link_has_a_json_twin_with_the_same_filters():
    query = {"jid": "me@example.org", "kind": "key", "_page": 2}
    assert (
        links.secrets_report(query, api=True)
        == "/api/workspaces/secrets?jid=me%40example.org&kind=key&_page=2"
    )


def test_audit_log_link_keeps_the_filters_before_the_page():
    url = links.audit_log({"jid": "me@example.org", "action": "new"}, 2)
    assert url == "/workspaces/audit-log/?jid=me%40example.org&action=new&_page=2"
    assert links.audit_log({}, api=True) == "/api/workspaces/audit-log"


def test_workspace_root_link_is_the_roots_place_on_the_page_of_roots():
    assert links.workspace_root(1) == "/workspaces/#root-1"


def test_memory_source_link_opens_a_global_a_jids_or_an_archived_file_at_its_line():
    assert links.memory_source(0, "", "identity.md") == "/workspaces/0/-/identity.md/"
    assert (
        links.memory_source(0, "me@example.org", "memory.md", 3)
        == "/workspaces/0/me@example.org/memory.md/#L3"
    )
    archived = links.memory_source(0, "me@example.org", "sessions/20250601-143022.jsonl", 1)
    assert archived == "/workspaces/0/me@example.org/sessions/20250601-143022.jsonl/#L1"


def test_memory_source_link_is_none_for_a_file_no_page_shows():
    assert links.memory_source(0, "me@example.org", "files/photo.png") is None
    assert links.memory_source(0, "", "sessions/20250601-143022.jsonl") is None


def test_json_twin_link_carries_the_pages_query_string_as_sent():
    query = QueryDict("who=editor&since=2025-03-01&who=outside")
    url = links.json_twin("workspace-memory-timeline", {"root": 0, "jid": "me@example.org"}, query)
    assert url == "/api/workspaces/0/me@example.org/timeline?who=editor&who=outside&since=2025-03-01"


def test_json_twin_link_of_a_page_without_a_query_string_has_none():
    assert links.json_twin("workspace-memory-changes", {}, QueryDict("")) == "/api/workspaces/memory-changes"


def test_filtered_link_keeps_every_value_of_a_repeated_parameter_and_replaces_a_set_one():
    query = QueryDict("model=a&model=b&format=pi&q=caf%C3%A9&_page=2")
    assert links.filtered(query, format="codex") == "?model=a&model=b&q=caf%C3%A9&format=codex"
    assert links.filtered(query, model="c") == "?format=pi&q=caf%C3%A9&model=c"


def test_facet_links_are_the_filtered_links_of_their_toggles():
    query = QueryDict("format=pi&model=a&model=b&_page=4")
    toggles = [{"format": "codex"}, {"format": None}, {"agent": "main", "model": None}]
    facets = [{"values": [{"toggle": dict(toggle)} for toggle in toggles]}]
    made = [value["link"] for value in links.with_facet_links(facets, query)[0]["values"]]
    assert made == [links.filtered(query, **toggle) for toggle in toggles]
    assert made[2] == "?format=pi&agent=main"
