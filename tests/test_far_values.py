"""Values at the ends of what a parameter holds (issue 26, "small ones"): a date at the end
or the start of time in a query string works or is a 400 naming it, and a number in a path
past what a column holds is a 404; never a 500."""

from __future__ import annotations

import re

import orjson
import pytest
from django.urls import URLPattern, URLResolver, converters, get_resolver, resolve, reverse
from django.urls.exceptions import Resolver404
from django.urls.resolvers import RoutePattern

from sessionviewer.forms import MAX_WHOLE
from sessionviewer.models import MemorySnapshot, Session

from .memory_turns import ALICE

pytestmark = pytest.mark.django_db

# Every page that reads a date from its query string, with its /api/ twin: (name, args).
SESSION_LISTS = [
    "session-list",
    "api-session-list",
    "api-session-facets",
    "api-search",
    "activity",
    "api-activity",
]
TIMELINES = [
    ("workspace-memory-timeline", [0, ALICE]),
    ("api-workspace-memory-timeline", [0, ALICE]),
    ("workspace-memory-changes", []),
    ("api-workspace-memory-changes", []),
]
AS_OF = [("workspace-memory-as-of", [0, ALICE]), ("api-workspace-memory-as-of", [0, ALICE])]
# As far east and west of UTC as zones go: a page that shows a moment in local time may
# cross an end of time there, and whatever overflows in UTC overflows in one of them too.
ZONES = ["Pacific/Kiritimati", "Pacific/Pago_Pago"]
END_OF_TIME = ["9999-12-31", "9999-12-31T23:59:59.999999"]
START_OF_TIME = ["0001-01-01", "0001-01-01T00:00:00"]


def get(client, name: str, args: list, **params):
    client.raise_request_exception = False  # a 500 is an answer to assert on, not an exception
    if name == "api-search":
        params.setdefault("q", "question")
    return client.get(reverse(name, args=args), params)


def count(response) -> int | None:
    """How many sessions or changes a JSON answer counts, where it does."""
    if response["Content-Type"] != "application/json":
        return None
    body = orjson.loads(response.content)
    return len(body["sessions"]) if "sessions" in body else body.get("count")


@pytest.fixture
def everyone(admin_client, settings, request):
    settings.TIME_ZONE = request.param
    return admin_client


def ends(until: str, since: str) -> list[tuple[str, str]]:
    """(parameter, value): the end parameter at the end of time, the start one at its start."""
    return [(until, value) for value in END_OF_TIME] + [(since, value) for value in START_OF_TIME]


@pytest.mark.parametrize("everyone", ZONES, indirect=True)
@pytest.mark.parametrize(("parameter", "value"), ends("updated_until", "updated_since"))
@pytest.mark.parametrize("name", SESSION_LISTS)
def test_a_list_to_or_from_either_end_of_time_is_every_session(everyone, tree, name, parameter, value):
    response = get(everyone, name, [], **{parameter: value, "_flat": "1"})
    assert response.status_code == 200, response.content[:500]
    if name == "api-session-list":
        assert count(response) == Session.objects.count() > 0


@pytest.mark.parametrize("everyone", ZONES, indirect=True)
@pytest.mark.parametrize(("parameter", "value"), ends("until", "since"))
@pytest.mark.parametrize(("name", "args"), TIMELINES)
def test_a_timeline_to_or_from_either_end_of_time_is_every_change(
    everyone, tree, name, args, parameter, value
):
    response = get(everyone, name, args, **{parameter: value})
    assert response.status_code == 200, response.content[:500]
    if name.startswith("api-"):
        assert count(response) == count(get(everyone, name, args)) > 0


@pytest.mark.parametrize("everyone", ZONES, indirect=True)
@pytest.mark.parametrize("value", END_OF_TIME + START_OF_TIME)
@pytest.mark.parametrize(("name", "args"), AS_OF)
def test_the_memory_as_of_either_end_of_time_is_shown(everyone, tree, name, args, value):
    response = get(everyone, name, args, at=value)
    assert response.status_code == 200, response.content[:500]


def test_the_memory_as_of_the_end_of_time_is_the_memory_now(admin_client, tree):
    assert MemorySnapshot.objects.filter(jid=ALICE, filename="memory.md").exists()
    now, last = (
        orjson.loads(get(admin_client, "api-workspace-memory-as-of", [0, ALICE], **at).content)
        for at in ({}, {"at": "9999-12-31"})
    )
    assert last["at"].startswith("9999-12-30T23:59:59")  # a day inside the end, as the page shows it
    assert [(f["jid"], f["file"], f["status"], f["sha256"]) for f in last["files"]] == [
        (f["jid"], f["file"], f["status"], f["sha256"]) for f in now["files"]
    ]


@pytest.mark.parametrize(
    ("name", "args", "parameter"),
    [(name, [], "updated_until") for name in SESSION_LISTS]
    + [(name, args, "until") for name, args in TIMELINES]
    + [(name, args, "at") for name, args in AS_OF],
)
@pytest.mark.parametrize("value", ["10000-01-01", "9999-12-31T23:00-05:00", "9999-12-31T24:00"])
def test_an_end_past_the_end_of_time_is_a_400_naming_it(admin_client, tree, name, args, parameter, value):
    response = get(admin_client, name, args, **{parameter: value})
    assert response.status_code == 400, response.content[:500]
    if response["Content-Type"] == "application/json":
        assert orjson.loads(response.content)["error"].startswith(f"{parameter}: ")
    else:
        assert f"{parameter}: ".encode() in response.content


# --- Numbers in paths ---------------------------------------------------------------------------


def routes(patterns=None, prefix: str = ""):
    """(name, whole route, converters) of every URL pattern given by a route, the resolver
    walked through its includes: a pattern added later is covered too."""
    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if not isinstance(entry.pattern, RoutePattern):
            continue  # a regular expression (the admin's): no converter
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from routes(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            yield entry.name, route, entry.pattern.converters


NUMBERED = [(name, route) for name, route, found in routes() if re.search(r"<(?:int|whole):", route)]


def path_of(route: str, number: int) -> str:
    """The route with number for each of its numbers, and a plain word for each other part."""
    path = re.sub(r"<(?:int|whole):\w+>", str(number), route)
    return "/" + re.sub(r"<\w+:\w+>", "x", path)


def test_every_number_in_a_path_is_a_bounded_one():
    unbounded = [
        route for _, route, found in routes() for c in found.values() if type(c) is converters.IntConverter
    ]
    assert unbounded == []
    assert len(NUMBERED) > 30  # the sessions', the workspaces' and the revisions' routes


@pytest.mark.parametrize("number", [2**31, 10**20])
@pytest.mark.parametrize(("name", "route"), NUMBERED)
def test_a_number_past_what_a_column_holds_is_a_404(client, name, route, number):
    with pytest.raises(Resolver404):
        resolve(path_of(route, number))
    client.raise_request_exception = False
    assert client.get(path_of(route, number)).status_code == 404


@pytest.mark.parametrize(("name", "route"), NUMBERED)
def test_the_largest_number_a_column_holds_still_resolves(name, route):
    assert resolve(path_of(route, MAX_WHOLE)).url_name == name
    assert resolve(path_of(route, 0)).url_name == name


def test_a_text_at_the_largest_line_and_block_is_a_404(admin_client, tree):
    session = Session.objects.first()
    url = reverse("session-entry-text", args=[session.id, MAX_WHOLE, MAX_WHOLE])
    assert admin_client.get(url).status_code == 404


@pytest.mark.parametrize(
    "stamp", ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", 253402300799, -62135596800]
)
@pytest.mark.parametrize("zone", ZONES)
def test_a_session_whose_lines_are_stamped_at_an_end_of_time_is_shown_everywhere(
    admin_client, tmp_path, settings, stamp, zone
):
    from sessionviewer.index import index_roots
    from sessionviewer.roots import RootSpec

    settings.TIME_ZONE = zone
    folder = tmp_path / "projects" / "-w"
    folder.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "u", "parentUuid": None, "timestamp": stamp, "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "uuid": "a", "parentUuid": "u", "timestamp": stamp,
         "message": {"role": "assistant", "model": "claude-sonnet-4-5", "content": "hello",
                     "usage": {"input_tokens": 3, "output_tokens": 4}}},
    ]  # fmt: skip
    (folder / "s.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])
    session = Session.objects.get()
    for name, args in [(n, []) for n in SESSION_LISTS] + [
        ("session-detail", [session.id]),
        ("api-session-detail", [session.id]),
        ("session-export-html", [session.id]),
        ("session-export-md", [session.id]),
        ("session-cost", [session.id]),
    ]:
        assert get(admin_client, name, args).status_code == 200, name


@pytest.mark.parametrize("everyone", ZONES, indirect=True)
def test_a_memory_file_touched_to_the_end_of_time_is_shown_changed_now(everyone, tree):
    import os

    from sessionviewer.index import index_roots
    from sessionviewer.roots import RootSpec

    memory = tree / ALICE / "memory.md"
    memory.write_text("Likes coffee now.\n")
    os.utime(memory, (253402300799, 253402300799))  # 9999-12-31T23:59:59Z
    index_roots([RootSpec(tree, "fluux_xmpp")], memory=[tree])
    latest = MemorySnapshot.objects.filter(jid=ALICE, filename="memory.md", current=True).get()
    assert latest.changed_at.year < 9999
    for name, args in TIMELINES + AS_OF:
        assert get(everyone, name, args).status_code == 200, name
