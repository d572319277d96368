"""What a query matches: every word, and words with punctuation or quoted phrases as written.

The FTS5 index keeps no positions (migration 0007), so phrases are matched by a
substring test on the rows that hold all of their tokens; these tests pin that down.
"""

import html
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import F
from django.template import engines
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from sessionviewer.filters import (
    PROBE_LINES,
    ROW_FIELDS,
    filter_sessions,
    matching_session_ids,
    nested,
    session_page,
)
from sessionviewer.index import index_roots
from sessionviewer.index.rows import FACTS_BLOCKS_KNOWN
from sessionviewer.models import Entry, SecretDismissal, Session
from sessionviewer.readers import argument_strings
from sessionviewer.roots import RootSpec
from sessionviewer.search import (
    SNIPPETS,
    WHAT,
    Snippet,
    first_matches,
    highlight,
    index_order_matches,
    masked_texts,
    matching_entries,
    parse_query,
    query_tokens,
    search_hits,
)
from sessionviewer.workspaces.secrets import credentials_in, fingerprint

from .claude_files import write_tool_turn
from .fixture_files import CLAUDE_PROJECT, index_fixture
from .users import make_admin

HEADER = '{"type":"session","version":1,"created":"2025-02-08T19:00:00Z","jid":"alice@example.com"}\n'
TEXTS = [
    "I edited src/app.py and ran the tests",
    "the app crashed; py files were fine",
    "Error_Code 42 came back from the server",
    "the error code was logged twice",
    "Le café était fermé, hélas",
    "quick brown fox jumps",
    "brown quick fox sleeps",
    "cats or dogs, asked the vet",
    "cats only",
    "dogs only",
]


def test_words_become_quoted_tokens_so_no_operator_reaches_fts5():
    parsed = parse_query("NEAR(x y) text:foo OR bar*")
    assert parsed.fts == '"NEAR" "x" "y" "text" "foo" "OR" "bar"*'


def test_each_token_is_one_quoted_folded_tsquery_lexeme_so_no_operator_reaches_postgresql():
    parsed = parse_query('Cats or -dogs !x a|b it\'s jump* "quick brown" CAFÉ*')
    assert parsed.tsquery == (
        "'cats' & 'or' & 'dogs' & 'x' & 'a' & 'b' & 'it' & 's' & 'jump':* & 'quick' & 'brown' & 'cafe':*"
    )


def test_a_word_too_long_for_a_postgresql_lexeme_leaves_no_tsquery():
    assert parse_query("x" * 2047).tsquery == "'" + "x" * 2047 + "'"
    assert parse_query("x" * 2048).tsquery == ""


def test_a_word_with_punctuation_is_matched_as_written():
    parsed = parse_query("src/app.py")
    assert parsed.fts == '"src" "app" "py"'
    assert parsed.literals == ("src/app.py",)


def test_surrounding_punctuation_is_not_part_of_the_literal():
    assert parse_query("(app.py),").literals == ("app.py",)
    assert parse_query("app.py!").literals == ("app.py",)


def test_a_quoted_phrase_is_one_literal_with_its_white_space_collapsed():
    parsed = parse_query('"quick   brown" fox')
    assert parsed.fts == '"quick" "brown" "fox"'
    assert parsed.literals == ("quick brown",)


def test_an_unclosed_quote_runs_to_the_end_and_an_empty_one_is_ignored():
    assert parse_query('"quick brown').literals == ("quick brown",)
    assert parse_query('"" fox') == parse_query("fox")


def test_a_prefix_star_stays_on_the_last_token():
    parsed = parse_query("app.p*")
    assert parsed.fts == '"app" "p"*'
    assert parsed.literals == ("app.p",)


def test_a_query_of_punctuation_only_matches_nothing(db):
    assert parse_query("... -- !!").fts == ""
    assert list(matching_entries("... -- !!")) == []


@pytest.fixture
def indexed(db, tmp_path: Path):
    folder = tmp_path / "memory" / "alice@example.com"
    folder.mkdir(parents=True)
    lines = [HEADER]
    for n, text in enumerate(TEXTS, start=1):
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "role": "user",
                    "content": text,
                    "msg_id": f"m{n}",
                    "sender": "alice@example.com",
                    "ts": f"2025-02-08T19:00:{n:02d}Z",
                }
            )
            + "\n"
        )
    (folder / "history.jsonl").write_text("".join(lines))
    index_roots([RootSpec(tmp_path / "memory", "fluux_xmpp")])


def found(query: str) -> list[str]:
    return sorted(matching_entries(query).values_list("text", flat=True))


def test_every_word_must_match_in_any_order(indexed):
    assert found("fox quick") == sorted([TEXTS[5], TEXTS[6]])
    assert found("fox jumps") == [TEXTS[5]]


def test_a_path_matches_only_where_it_is_written_whole(indexed):
    # "the app crashed; py files were fine" holds the tokens app and py, but not "app.py".
    assert found("src/app.py") == [TEXTS[0]]
    assert found("app.py") == [TEXTS[0]]


def test_an_underscored_word_matches_as_written_and_ignores_case(indexed):
    assert found("error_code") == [TEXTS[2]]
    assert found("error code") == sorted([TEXTS[2], TEXTS[3]])


def test_a_quoted_phrase_matches_the_words_in_that_order_only(indexed):
    assert found('"quick brown"') == [TEXTS[5]]
    assert found('"brown quick"') == [TEXTS[6]]


def test_accents_and_case_are_folded_for_plain_words(indexed):
    assert found("CAFE") == [TEXTS[4]]
    assert found("helas") == [TEXTS[4]]


def test_a_prefix_matches_the_start_of_a_word(indexed):
    assert found("jump*") == [TEXTS[5]]
    assert found("jump") == []


def test_or_and_a_leading_minus_are_plain_words_on_both_engines(indexed):
    # websearch_to_tsquery read these as "or" and "not" on PostgreSQL only.
    assert found("cats or dogs") == [TEXTS[7]]
    assert found("cats -dogs") == [TEXTS[7]]
    assert found("-cats OR dogs") == [TEXTS[7]]


def test_quotes_backslashes_and_tsquery_operators_in_a_query_are_searched_not_parsed(indexed):
    assert found("it's a\\b !cats dogs|") == []
    assert found("(cats) & !dogs <-> vet:*") == [TEXTS[7]]


def test_the_index_keeps_no_positions_and_stays_consistent(indexed):
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 table is SQLite's")
    with connection.cursor() as cursor:
        cursor.execute("SELECT sql FROM sqlite_master WHERE name = 'entry_fts'")
        assert "detail=none" in cursor.fetchone()[0]
        cursor.execute("INSERT INTO entry_fts(entry_fts, rank) VALUES ('integrity-check', 1)")
        # Segments merge 16 at a time (migration 0009): a cold index spent a tenth of its time merging 4.
        cursor.execute("SELECT v FROM entry_fts_config WHERE k = 'automerge'")
        assert cursor.fetchone()[0] == 16
    assert Entry.objects.count() == len(TEXTS) + 1


@pytest.fixture
def tool_calls(db, tmp_path: Path):
    """A Claude Code session whose commands and edits are only in tool calls' arguments."""
    calls = [
        {
            "type": "tool_use",
            "id": "t1",
            "name": "Bash",
            "input": {"command": "rm -rf build/cache", "timeout": 9000},
        },
        {
            "type": "tool_use",
            "id": "t2",
            "name": "MultiEdit",
            "input": {
                "file_path": "/home/me/app/loader.py",
                "edits": [{"old_string": "a", "new_string": "eval(zebra)"}],
            },
        },
    ]
    write_tool_turn(tmp_path / "projects" / "-home-me-app" / "s1.jsonl", "tidy up", calls, {"t1": "done"})
    index_roots([RootSpec(tmp_path / "projects", "claude_code")])


def test_commands_paths_and_edits_in_tool_calls_are_searched(tool_calls):
    # The tool result says only "done": the command and the edit are in the call's arguments.
    assert list(matching_entries('"rm -rf"').values_list("entry_id", flat=True)) == ["a1"]
    assert list(matching_entries("/home/me/app/loader.py").values_list("entry_id", flat=True)) == ["a1"]
    assert list(matching_entries("loader.py").values_list("entry_id", flat=True)) == ["a1"]
    assert list(matching_entries("zebra").values_list("entry_id", flat=True)) == ["a1"]
    assert list(matching_entries("multiedit").values_list("entry_id", flat=True)) == ["a1"]


def test_argument_keys_and_numbers_are_not_searched(tool_calls):
    assert list(matching_entries("old_string")) == []
    assert list(matching_entries("9000")) == []


def test_the_full_text_index_agrees_with_the_text_of_tool_calls(tool_calls):
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 table is SQLite's")
    with connection.cursor() as cursor:
        cursor.execute("INSERT INTO entry_fts(entry_fts, rank) VALUES ('integrity-check', 1)")


def test_argument_strings_are_the_string_values_in_the_order_written():
    arguments = {
        "file_path": "a.py",
        "edits": [{"old_string": "x", "new_string": "y"}],
        "replace_all": True,
        "n": 3,
    }
    assert argument_strings(arguments) == ["a.py", "x", "y"]
    assert argument_strings(["one", ["two", {"k": "three"}], "", "  "]) == ["one", "two", "three"]
    assert argument_strings(None) == [] and argument_strings(42) == []


def test_arguments_written_as_a_json_string_are_read_as_json():
    # As written, "ls\\nmake" would index as "ls" and "nmake".
    assert argument_strings('{"command": "ls\\nmake"}') == ["ls\nmake"]
    assert argument_strings("{not json") == ["{not json"]
    assert argument_strings("plain words") == ["plain words"]


# --- Highlighting -----------------------------------------------------------------------------------------


def test_a_word_is_marked_only_where_it_stands_alone_not_inside_another_word():
    # FTS matched the token "ex" of tmux.ex: the "Ex" that starts "Explore" is another word.
    snippet = highlight("Explore the code in lib/spotter/services/tmux.ex", "lib/spotter/services/tmux.ex")
    assert "<mark>Ex</mark>plore" not in snippet
    assert "Explore" in snippet
    assert "<mark>tmux</mark>.<mark>ex</mark>" in snippet


def test_a_prefix_marks_the_whole_word_it_starts_and_nothing_inside_other_words():
    snippet = highlight("jumps and jumped, but not overjump or jump_start", "jump*")
    assert "<mark>jumps</mark> and <mark>jumped</mark>" in snippet
    assert "overjump" in snippet and "<mark>" not in snippet.split("overjump")[0][-10:]
    assert "<mark>jump</mark>_start" in snippet  # FTS5 splits at "_": "jump" is a token there


def test_only_the_last_word_of_a_starred_word_is_a_prefix_as_the_index_reads_it():
    assert query_tokens('"quick brown" fox app.p*') == [
        ("quick", False),
        ("brown", False),
        ("fox", False),
        ("app", False),
        ("p", True),
    ]


# --- Hits grouped by session ------------------------------------------------------------------------------


def claude_line(number: int, role: str, content, stamp: str, **fields) -> dict:
    kind = "assistant" if role == "assistant" else "user"
    message = {"role": role, "content": content}
    if role == "assistant":
        message |= {"id": f"msg{number}", "model": "m"}
    return {
        "type": kind,
        "uuid": f"e{number}",
        "parentUuid": f"e{number - 1}" if number > 1 else None,
        "sessionId": "s",
        "cwd": "/home/me/app",
        "timestamp": stamp,
        "message": message,
        **fields,
    }


def write_claude_session(path: Path, contents: list[tuple[str, object]], day: int) -> Path:
    """A Claude Code session of one line for each (role, content), all on 2025-02-<day>."""
    lines = [
        claude_line(n, role, content, f"2025-02-{day:02d}T10:{n:02d}:00Z")
        for n, (role, content) in enumerate(contents, start=1)
    ]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def tool_result(call_id: str, output: str) -> list[dict]:
    return [{"type": "tool_result", "tool_use_id": call_id, "content": output}]


@pytest.fixture
def grouped(db, tmp_path: Path):
    """Two sessions matching "zebra": an older one with 10 hits, 7 of them the same tool output,
    and a newer one with 2 hits; and a third that does not match."""
    root = tmp_path / "projects"
    call = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "grep -n zebra notes"}}]
    write_claude_session(
        root / "-home-me-app" / "many.jsonl",
        [
            ("user", "Where is the zebra file?"),
            (
                "assistant",
                [{"type": "thinking", "thinking": "The zebra file is probably here", "signature": "x"}],
            ),
            ("assistant", call),
            *[("user", tool_result("t1", "zebra stripes: black and white")) for _ in range(7)],
        ],
        day=8,
    )
    write_claude_session(
        root / "-home-me-app" / "few.jsonl",
        [("user", "Draw a zebra"), ("assistant", "Here is a zebra, drawn in ASCII")],
        day=9,
    )
    write_claude_session(root / "-home-me-app" / "none.jsonl", [("user", "Draw a horse")], day=10)
    index_roots([RootSpec(root, "claude_code")])


def titles(results) -> list[str]:
    return [group.session.key.rsplit("/", 1)[-1] for group in results.page.object_list]


def test_hits_are_grouped_one_row_per_session_with_its_hit_count(grouped):
    results = search_hits("zebra", Session.objects.all())
    assert results.count == 12
    assert results.page.paginator.count == 2
    assert [group.count for group in results.page.object_list] == [10, 2]


def test_identical_texts_in_a_session_collapse_into_one_with_their_count(grouped):
    many = search_hits("zebra", Session.objects.all()).page.object_list[0]
    assert many.texts == 4
    assert len(many.snippets) == SNIPPETS
    outputs = [s for s in many.snippets if s.what == ["tool_output"]]
    assert [s.count for s in outputs] == [7]


def test_hits_come_by_most_hits_by_default_or_newest_first(grouped):
    most = search_hits("zebra", Session.objects.all())
    newest = search_hits("zebra", Session.objects.all(), sort="newest")
    assert [g.count for g in most.page.object_list] == [10, 2]
    assert [g.count for g in newest.page.object_list] == [2, 10]
    assert most.sort == "hits" and newest.sort == "newest"


def facet_counts(results) -> dict[str, dict[str, int]]:
    return {f["name"]: {v["value"]: v["count"] for v in f["values"]} for f in results.facets}


def test_facets_count_what_a_hit_is_and_who_said_it(grouped):
    counts = facet_counts(search_hits("zebra", Session.objects.all()))
    assert counts["what"] == {"message": 3, "thinking": 1, "tool_call": 1, "tool_output": 7}
    assert counts["who"] == {"user": 2, "assistant": 3, "tool": 7}


def test_a_what_filter_keeps_its_hits_and_counts_who_among_them(grouped):
    results = search_hits("zebra", Session.objects.all(), what="message")
    assert results.count == 3
    assert [g.count for g in results.page.object_list] == [2, 1]
    assert facet_counts(results)["who"] == {"user": 2, "assistant": 1}
    # Its own facet still counts every kind, so that another can be chosen.
    assert facet_counts(results)["what"]["tool_output"] == 7


def test_a_who_filter_keeps_the_hits_of_that_speaker(grouped):
    results = search_hits("zebra", Session.objects.all(), who="assistant", what="thinking")
    assert results.count == 1
    snippet = results.page.object_list[0].snippets[0]
    assert (snippet.who, snippet.what) == ("assistant", ["thinking"])
    assert "<mark>zebra</mark>" in snippet.html


def test_what_read_in_python_agrees_with_the_filter_in_sql(grouped):
    for name in WHAT:
        found = search_hits("zebra", Session.objects.all(), what=name)
        for group in found.page.object_list:
            assert all(name in snippet.what for snippet in group.snippets)


def test_what_a_hit_is_comes_from_the_block_types_the_index_kept(grouped):
    # A pasted log's blocks column is its whole text: what a hit is must not read it.
    Entry.objects.update(blocks=[])
    counts = facet_counts(search_hits("zebra", Session.objects.all()))
    assert counts["what"] == {"message": 3, "thinking": 1, "tool_call": 1, "tool_output": 7}
    outputs = search_hits("zebra", Session.objects.all(), what="tool_output").page.object_list[0]
    assert [s.what for s in outputs.snippets] == [["tool_output"]]


def test_rows_indexed_before_block_types_were_kept_are_read_from_their_blocks(grouped):
    kept = [s.what for s in search_hits("zebra", Session.objects.all()).page.object_list[0].snippets]
    Entry.objects.update(text_facts=F("text_facts").bitand(FACTS_BLOCKS_KNOWN - 1))
    assert not Entry.objects.filter(text_facts__gte=FACTS_BLOCKS_KNOWN).exists()
    results = search_hits("zebra", Session.objects.all())
    assert facet_counts(results)["what"] == {"message": 3, "thinking": 1, "tool_call": 1, "tool_output": 7}
    assert search_hits("zebra", Session.objects.all(), what="other").count == 0
    many = results.page.object_list[0]
    assert [s.what for s in many.snippets] == kept


def test_the_best_snippets_are_the_shortest_texts_shown_in_transcript_order(grouped):
    many = search_hits("zebra", Session.objects.all()).page.object_list[0]
    assert [s.entry.line for s in many.snippets] == sorted(s.entry.line for s in many.snippets)
    assert "probably" not in " ".join(s.html for s in many.snippets)  # the longest of the four texts


# --- The list page and /api/search ------------------------------------------------------------------------

SEARCH_URLS = {"": "session-list", "/api": "api-search"}


@pytest.mark.parametrize("prefix", SEARCH_URLS)
@pytest.mark.parametrize(
    ("parameter", "value"), [("_hits_sort", "relevance"), ("_hits_what", "image"), ("_hits_who", "system")]
)
def test_a_bad_hits_sort_or_filter_is_a_400_naming_it(client, viewer, grouped, prefix, parameter, value):
    response = client.get(reverse(SEARCH_URLS[prefix]), {"q": "zebra", parameter: value})
    assert response.status_code == 400
    message = orjson.loads(response.content)["error"] if prefix else response.content.decode()
    assert message.startswith(f"{parameter}: ") and repr(value) in message


def test_the_list_shows_one_row_per_session_with_its_count_and_collapsed_snippets(client, viewer, grouped):
    body = client.get(reverse("session-list"), {"q": "zebra"}).content.decode()
    assert "12 hits in 2 sessions" in body
    rows = re.findall(r'<li class="hit-session">(.*?)</ol>\s*</li>', body, re.S)
    assert len(rows) == 2
    assert '<span class="hit-count">10 hits</span>' in rows[0]
    assert "×7 identical" in rows[0]
    assert rows[0].count('<li class="hit">') == SNIPPETS


def test_a_hit_links_to_its_entry_with_the_query(client, viewer, grouped):
    body = client.get(reverse("session-list"), {"q": "zebra", "_hits_sort": "newest"}).content.decode()
    link = html.unescape(re.search(r'class="hit-link" href="([^"]+)"', body).group(1))
    path, _, fragment = link.partition("#")
    assert "q=zebra" in path and "entry=e1" in path
    assert f'id="{fragment}"' in client.get(path).content.decode()


def test_the_facets_link_to_their_filter_and_the_selected_one_back(client, viewer, grouped):
    body = client.get(reverse("session-list"), {"q": "zebra", "_hits_who": "tool"}).content.decode()
    assert "7 hits in 1 session" in body
    facet = re.search(r'<p class="hit-facet" data-facet="who">(.*?)</p>', body, re.S).group(1)
    assert "_hits_who=user" in html.unescape(facet)
    selected = re.search(r'<a class="chip selected"[^>]*href="([^"]*)"[^>]*>✕ Tool', facet).group(1)
    assert "_hits_who" not in html.unescape(selected)


def test_the_api_groups_hits_like_the_page(client, viewer, grouped):
    body = orjson.loads(client.get(reverse("api-search"), {"q": "zebra"}).content)
    assert (body["count"], body["session_count"], body["sort"]) == (12, 2, "hits")
    assert [s["hits"] for s in body["sessions"]] == [10, 2]
    assert [s["count"] for s in body["sessions"][0]["snippets"]].count(7) == 1
    assert body["hits"] == [h for s in body["sessions"] for h in s["snippets"]]
    who = next(f for f in body["facets"] if f["name"] == "who")
    assert {v["value"]: v["count"] for v in who["values"]} == {"user": 2, "assistant": 3, "tool": 7}


# --- A very common word: at most HIT_CAP hits are read --------------------------------------------------


@pytest.fixture
def crowded(db, tmp_path: Path, monkeypatch):
    """A session of 60 distinct texts holding "zebra", one with 2, and a cap of 20 hits read."""
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", 20)
    root = tmp_path / "projects"
    write_claude_session(
        root / "-home-me-app" / "crowded.jsonl",
        [("user" if n % 2 else "assistant", f"zebra number {n}") for n in range(60)],
        day=8,
    )
    write_claude_session(
        root / "-home-me-app" / "few.jsonl", [("user", "Draw a zebra"), ("assistant", "A zebra")], day=9
    )
    index_roots([RootSpec(root, "claude_code")])


def entry_queries(queries) -> list[str]:
    return [q["sql"] for q in queries if "sessionviewer_entry" in q["sql"]]


def test_a_common_word_reads_no_more_hits_than_the_cap(crowded):
    with CaptureQueriesContext(connection) as queries:
        results = search_hits("zebra", Session.objects.all())
    assert (results.count, results.capped) == (20, True)
    # Each query on entries stops at the cap, or reads listed ones: hits the first read, by id,
    # or the few snippets shown, by line.
    for sql in entry_queries(queries):
        listed = re.search(r'"sessionviewer_entry"\."(id|line)" IN \(([^()]*)\)', sql) or re.search(
            r"\"sessionviewer_entry\"\.\"(id|line)\" = ANY\('\{([^}]*)\}'",
            sql,  # PostgreSQL: id__among
        )
        assert "LIMIT 21" in sql or (listed is not None and len(listed.group(2).split(",")) <= 20), sql


def test_the_counts_of_a_capped_search_are_those_of_the_first_hits_read(crowded):
    results = search_hits("zebra", Session.objects.all())
    assert sum(group.count for group in results.page.object_list) == 20
    who = next(f for f in results.facets if f["name"] == "who")
    assert who["capped"] and sum(v["count"] for v in who["values"]) == 20


def test_the_page_says_there_are_more_hits_than_it_counted(client, viewer, crowded):
    body = client.get(reverse("session-list"), {"q": "zebra"}).content.decode()
    assert "more than 20 hits" in body
    assert re.search(r'<span class="hit-count">\d+\+ hits?</span>', body)
    assert re.search(r'<span class="n">\d+\+</span>', body)


def test_the_api_says_its_count_stops_at_the_cap(client, viewer, crowded):
    body = orjson.loads(client.get(reverse("api-search"), {"q": "zebra"}).content)
    assert (body["count"], body["capped"], body["cap"]) == (20, True, 20)
    assert all(f["capped"] for f in body["facets"])


def test_hits_up_to_the_cap_are_counted_exactly(client, viewer, grouped, monkeypatch):
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", 12)
    body = orjson.loads(client.get(reverse("api-search"), {"q": "zebra"}).content)
    assert (body["count"], body["capped"], body["session_count"]) == (12, False, 2)
    assert [s["hits"] for s in body["sessions"]] == [10, 2]
    assert "12 hits in 2 sessions" in client.get(reverse("session-list"), {"q": "zebra"}).content.decode()


def test_the_sessions_a_query_matches_are_read_starting_from_the_fts_table(crowded):
    if connection.vendor != "sqlite":
        pytest.skip("the FTS5 table is SQLite's")
    with CaptureQueriesContext(connection) as queries:
        matched = matching_session_ids("zebra")
    assert sorted(matched) == sorted(Session.objects.values_list("id", flat=True))
    # A join, so each match is looked up once; not a list of every match built first and
    # tested against each row.
    (sql,) = entry_queries(queries)
    assert '"entry_fts"' in sql and "IN (SELECT rowid" not in sql


@pytest.mark.parametrize(
    "query", ["fox quick", "src/app.py", "error_code", '"quick brown"', "caf*", "cats or"]
)
def test_the_hits_read_in_index_order_are_the_matching_entries(indexed, query):
    expected = sorted(matching_entries(query).values_list("id", flat=True))
    assert expected
    assert sorted(index_order_matches(query).values_list("id", flat=True)) == expected
    assert search_hits(query, Session.objects.all()).count == len(expected)


# --- The newest hits first, whatever the engine ---------------------------------------------------------


@pytest.mark.parametrize("query", ["fox quick", "src/app.py", '"quick brown"', "caf*", "cats"])
@pytest.mark.parametrize("cap", [1, 1000])
def test_the_hits_read_are_the_newest_matches(indexed, monkeypatch, query, cap):
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", cap)
    newest = sorted(matching_entries(query).values_list("id", flat=True), reverse=True)
    assert newest
    assert [hit.id for hit in first_matches(query).hits] == newest[: cap + 1]


def test_a_phrase_is_looked_for_in_the_newest_entries_holding_its_words_only(indexed, monkeypatch):
    # "brown quick fox sleeps" is the newest entry with both words, and not the phrase.
    monkeypatch.setattr("sessionviewer.search.LITERAL_WINDOW", 1)
    first = first_matches(parse_query('"quick brown"'))
    assert (first.hits, first.window_full, first.capped) == ([], True, True)
    monkeypatch.setattr("sessionviewer.search.LITERAL_WINDOW", 2)
    (hit,) = first_matches(parse_query('"quick brown"')).hits
    assert Entry.objects.get(id=hit.id).text == "quick brown fox jumps"


def test_the_page_says_a_phrase_was_looked_for_in_the_newest_entries_only(
    client, viewer, indexed, monkeypatch
):
    monkeypatch.setattr("sessionviewer.search.LITERAL_WINDOW", 2)
    body = client.get(reverse("session-list"), {"q": '"quick brown"'}).content.decode()
    assert "1 hit among the newest 2 entries holding these words" in body
    api = orjson.loads(client.get(reverse("api-search"), {"q": '"quick brown"'}).content)
    assert (api["count"], api["capped"], api["window"]) == (1, True, 2)


def test_a_phrase_with_fewer_entries_than_the_window_is_searched_whole(client, viewer, indexed):
    api = orjson.loads(client.get(reverse("api-search"), {"q": '"quick brown"'}).content)
    assert (api["count"], api["capped"], api["window"]) == (1, False, 0)


def test_on_postgresql_the_search_runs_without_parallel_workers(indexed):
    if connection.vendor != "postgresql":
        pytest.skip("parallel workers are PostgreSQL's")
    with CaptureQueriesContext(connection) as queries:
        first_matches(parse_query('"quick brown"'))
    sql = [q["sql"] for q in queries]
    serial = sql.index("SET LOCAL max_parallel_workers_per_gather = 0")
    searches = [n for n, text in enumerate(sql) if " @@ " in text or '"id" IN (' in text]
    assert searches and all(n > serial for n in searches)


@pytest.fixture
def written_in_turn(db, tmp_path: Path):
    """Five sessions holding "zebra", indexed one pass each: each pass's entries are newer."""
    root = tmp_path / "projects" / "-home-me-app"
    for n in range(5):
        write_claude_session(
            root / f"s{n}.jsonl", [("user", f"zebra {n}"), ("assistant", f"zebra again {n}")], 1 + n
        )
        index_roots([RootSpec(root.parent, "claude_code")])
    return {Session.objects.get(key__endswith=f"s{n}.jsonl").id: n for n in range(5)}


def test_past_the_cap_the_list_shows_the_sessions_of_the_newest_hits(written_in_turn, monkeypatch):
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", 4)  # the two newest sessions' hits
    query = parse_query("zebra")
    listed = filter_sessions({"q": query}, first=first_matches(query)).queryset.values_list("id", flat=True)
    assert sorted(written_in_turn[i] for i in listed) == [3, 4]


def test_past_the_cap_a_narrowed_list_still_shows_every_session_it_matches(written_in_turn, monkeypatch):
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", 4)
    query = parse_query("zebra")
    params = {"q": query, "format": "claude_code"}
    listed = filter_sessions(params, first=first_matches(query)).queryset.values_list("id", flat=True)
    assert sorted(written_in_turn[i] for i in listed) == [0, 1, 2, 3, 4]


def test_a_searchs_pages_of_sessions_are_cut_from_one_read_of_their_ids(written_in_turn):
    """A search matches at most the sessions of its newest HIT_CAP hits: the list reads their
    ids once, in its order, and counts and pages them itself (filters.session_page)."""
    query = parse_query("zebra")
    everything = list(filter_sessions({"q": query}).queryset.values_list("id", flat=True))
    shown = []
    for number in (1, 2, 3):
        params = {"q": query, "_page": number, "_size": 2}
        listed = nested(filter_sessions(params, first=first_matches(query)), params)
        with CaptureQueriesContext(connection) as queries:
            page = session_page(listed, ROW_FIELDS)
        assert (page.paginator.count, page.paginator.num_pages) == (5, 3)
        assert not [q for q in queries if '"__count"' in q["sql"]]
        shown += [session.id for session in page.object_list]
    assert shown == everything and len(everything) == 5


@pytest.mark.parametrize("sort", ["hits", "newest"])
def test_pages_of_hits_lose_no_session_and_repeat_none(written_in_turn, sort):
    shown = []
    for number in (1, 2, 3):
        results = search_hits("zebra", Session.objects.all(), number, sort=sort, size=2)
        shown += [group.session.id for group in results.page.object_list]
    assert sorted(shown) == sorted(written_in_turn)
    if sort == "newest":
        assert [written_in_turn[i] for i in shown] == [4, 3, 2, 1, 0]


# --- The sessions a very common word matches, on PostgreSQL ------------------------------------------------


@pytest.fixture
def common(db, tmp_path: Path, monkeypatch):
    """A session of 2,000 entries holding "zebra", five sessions that hold it on their first line
    only, one that does not hold it, and a cap of 20 hits read; the planner's statistics taken."""
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", 20)
    root = tmp_path / "projects" / "-home-me-app"
    lines = [
        claude_line(
            n, "user" if n % 2 else "assistant", f"the zebra number {n}", f"2025-02-08T10:00:{n % 60:02d}Z"
        )
        for n in range(1, 2001)
    ]
    (root / "big.jsonl").parent.mkdir(parents=True)
    (root / "big.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    for n in range(5):
        write_claude_session(
            root / f"small{n}.jsonl", [("user", "Draw the zebra"), *[("user", "a horse")] * 3], 9
        )
    write_claude_session(root / "none.jsonl", [("user", "Draw a horse")], day=10)
    index_roots([RootSpec(root.parent, "claude_code")])
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:  # as autovacuum does on a real database
            cursor.execute("ANALYZE sessionviewer_entry, sessionviewer_session")


FEW_ROWS = 200  # ten times the cap of 20 the fixture sets: far from its 2,005 matches


def entry_rows_read(sql: str) -> int:
    """How many rows of sessionviewer_entry (or entries of its indexes) the query read, by
    PostgreSQL's own count (EXPLAIN ANALYZE): rows returned and rows filtered out, every loop."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'sessionviewer_entry'")
        indexes = {name for (name,) in cursor.fetchall()}
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
        (plan,) = cursor.fetchone()[0]

    def read(node: dict) -> int:
        own = 0
        if node.get("Relation Name") == "sessionviewer_entry" or node.get("Index Name") in indexes:
            removed = node.get("Rows Removed by Filter", 0) + node.get("Rows Removed by Index Recheck", 0)
            own = (node["Actual Rows"] + removed) * node["Actual Loops"]
        return own + sum(read(child) for child in node.get("Plans", []))

    return read(plan["Plan"])


@pytest.mark.parametrize("query", ["zebra", "zeb*", '"the zebra"'])
def test_the_sessions_holding_a_common_word_are_found_without_reading_every_match(common, query):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite reads every match from its FTS table, 0.1 s a million (bench/bench_search.py)")
    expected = set(matching_entries(query).values_list("session_id", flat=True))
    with CaptureQueriesContext(connection) as queries:
        matched = matching_session_ids(query)
    assert set(matched) == expected and len(expected) == 6
    # Each session is asked for one match: a few rows each, not the 2,005 matches.
    assert sum(entry_rows_read(sql) for sql in entry_queries(queries)) <= FEW_ROWS


def test_the_list_page_reads_no_more_entries_than_the_cap_for_a_common_word(client, viewer, common):
    if connection.vendor != "postgresql":
        pytest.skip("SQLite reads every match from its FTS table, 0.1 s a million (bench/bench_search.py)")
    with CaptureQueriesContext(connection) as queries:
        body = client.get(reverse("session-list"), {"q": "zebra"}).content.decode()
    assert "more than 20 hits" in body
    for sql in entry_queries(queries):
        assert entry_rows_read(sql) <= FEW_ROWS, sql


def test_the_session_table_lists_every_session_holding_a_common_word_past_the_cap(client, viewer, common):
    body = orjson.loads(client.get(reverse("api-session-list"), {"q": "zebra", "_size": 50}).content)
    keys = sorted(s["key"].rsplit("/", 1)[-1] for s in body["sessions"])
    assert keys == ["big.jsonl", *(f"small{n}.jsonl" for n in range(5))]


def test_a_session_whose_first_hit_comes_past_the_probed_lines_is_still_found(
    client, viewer, tmp_path, monkeypatch
):
    monkeypatch.setattr("sessionviewer.search.HIT_CAP", 1)  # so that the first lines are probed
    root = tmp_path / "projects" / "-home-me-app"
    write_claude_session(
        root / "late.jsonl", [*[("user", "a horse")] * (PROBE_LINES + 10), ("user", "a zebra")], 8
    )
    write_claude_session(root / "early.jsonl", [("user", "a zebra"), *[("user", "a horse")] * PROBE_LINES], 9)
    write_claude_session(root / "none.jsonl", [("user", "a horse")] * (PROBE_LINES + 10), 10)
    index_roots([RootSpec(root.parent, "claude_code")])
    expected = set(Session.objects.exclude(key__endswith="none.jsonl").values_list("id", flat=True))
    assert len(expected) == 2
    assert set(matching_session_ids("zebra")) == expected
    body = orjson.loads(client.get(reverse("api-session-list"), {"q": "zebra"}).content)
    assert {s["id"] for s in body["sessions"]} == expected


# --- The list page's one full-text statement ----------------------------------------------------------


def full_text_statements(queries) -> int:
    """The statements that run the full-text match: FTS5's MATCH, or PostgreSQL's @@."""
    return sum(1 for q in queries if " MATCH " in q["sql"] or " @@ " in q["sql"])


@pytest.mark.parametrize(
    ("params", "shown"),
    [
        ({}, "12 hits in 2 sessions"),
        ({"format": "claude_code"}, "12 hits in 2 sessions"),
        ({"_hits_what": "tool_output"}, "7 hits in 1 session"),
        ({"_hits_who": "user", "_hits_sort": "newest"}, "2 hits in 2 sessions"),
    ],
)
def test_the_list_page_runs_the_full_text_match_once(client, viewer, grouped, params, shown):
    with CaptureQueriesContext(connection) as queries:
        body = client.get(reverse("session-list"), {"q": "zebra", **params}).content.decode()
    assert full_text_statements(queries) == 1
    assert shown in body


def test_the_search_api_runs_the_full_text_match_once(client, viewer, grouped):
    with CaptureQueriesContext(connection) as queries:
        body = client.get(reverse("api-search"), {"q": "zebra"}).json()
    assert full_text_statements(queries) == 1
    assert (body["count"], body["session_count"]) == (12, 2)


@pytest.mark.parametrize(
    ("what", "who"), [("", ""), ("tool_output", ""), ("", "user"), ("thinking", "assistant")]
)
def test_hits_taken_from_the_first_matches_are_those_the_index_gives(grouped, what, who):
    query = parse_query("zebra")
    sessions = Session.objects.exclude(key__endswith="few.jsonl")
    asked = search_hits(query, sessions, what=what, who=who)
    taken = search_hits(query, sessions, what=what, who=who, first=first_matches(query), narrowed=True)
    assert (taken.count, taken.facets, titles(taken)) == (asked.count, asked.facets, titles(asked))
    assert [s.entry.id for g in taken.page.object_list for s in g.snippets] == [
        s.entry.id for g in asked.page.object_list for s in g.snippets
    ]


def test_a_capped_first_read_is_not_taken_for_fewer_sessions(crowded):
    query = parse_query("zebra")
    few = Session.objects.filter(key__endswith="few.jsonl")
    results = search_hits(query, few, first=first_matches(query), narrowed=True)
    assert (results.count, results.capped, titles(results)) == (2, False, ["few.jsonl"])


# --- Snippets mask credentials as the transcript does: a value marked not a secret in full -------

ANTHROPIC = "sk-ant-api03-Zx8vQ2mN7pL4rT9wK3sBq7Hd"  # in secrets_in_every_block.jsonl's first line
ANTHROPIC_MASKED = "sk-a*******************************Hd"
GHP = "ghp_R4nd0mT0k3nV4lu3F0rT3st1ngAbCdEf12"


@pytest.fixture
def with_secret(tmp_path, db):
    return index_fixture(tmp_path, "claude_code", "secrets_in_every_block.jsonl", CLAUDE_PROJECT, "s1")


def snippets_for(client, prefix: str, q: str) -> str:
    """The search's snippets: the page's <p class="snippet"> elements, or the twin's snippet_html."""
    if prefix:
        return "".join(
            hit["snippet_html"] for hit in client.get(reverse("api-search"), {"q": q}).json()["hits"]
        )
    body = client.get(reverse("session-list"), {"q": q}).content.decode()
    return "".join(re.findall(r'<p class="snippet">(.*?)</p>', body, re.S))


@pytest.mark.parametrize("prefix", ["", "/api"])
def test_a_snippet_shows_a_value_marked_not_a_secret_in_full_and_masks_it_again_on_undo(
    client, with_secret, prefix
):
    client.force_login(make_admin())
    finding = with_secret.findings.get(line=1)
    dismiss = reverse("api-finding-dismiss", args=[with_secret.id, finding.id])
    masked = snippets_for(client, prefix, "deploy")
    assert ANTHROPIC_MASKED in masked and ANTHROPIC not in masked
    assert client.post(dismiss).json()["dismissed"] is True
    shown = snippets_for(client, prefix, "deploy")
    assert ANTHROPIC in shown and ANTHROPIC_MASKED not in shown
    assert client.post(dismiss, {"undo": "1"}).json()["dismissed"] is False
    assert snippets_for(client, prefix, "deploy") == masked


def test_a_dismissal_shows_only_its_own_value_in_full(db):
    text = f"deploy with ANTHROPIC_API_KEY={ANTHROPIC} and {GHP}"
    [(anthropic, value), _] = credentials_in(text)
    SecretDismissal.dismiss(None, fingerprint(anthropic.kind, value, settings.SECRET_KEY), anthropic.kind)
    [masked] = masked_texts([text])
    assert ANTHROPIC in masked and GHP not in masked and "ghp_" in masked


def test_texts_without_a_credential_are_masked_without_a_query():
    # No database here: a query would raise.
    assert masked_texts(["deploy the app", "no key here"]) == ["deploy the app", "no key here"]


# A hit on the search page as _hits.html made it before display.hit_item, kept as main had
# it: a hit must come out the same, byte for byte.
HIT_ITEM_TEMPLATE = Path(__file__).parent / "fixtures" / "templates" / "hit_item_before_python.html"


def hits() -> list[Snippet]:
    """Hits taking every branch of hit_item; a snippet's html is render_snippet's, escaped."""
    now = timezone.now()
    entries = [
        Entry(entry_id="e-1", line=1, timestamp=None),
        Entry(entry_id='<b>"x"</b> & é#?', line=12_345, timestamp=now - timedelta(minutes=5)),
        Entry(entry_id="e-3", line=7, timestamp=datetime(2024, 2, 29, 23, 59, tzinfo=UTC)),
    ]
    return [
        Snippet(entry=entry, html=highlight(HOSTILE_HIT, "alert"), count=count, what=what, who=who)
        for entry in entries
        for count, what, who in (
            (1, ["message"], "user"),
            (3, ["thinking", "tool_call"], "assistant"),
            (2, [], "other"),
        )
    ]


HOSTILE_HIT = '<script>alert("x")</script> & \u202e'


@pytest.mark.parametrize("q", ["", 'alert & "<b>"'])
@pytest.mark.parametrize("hit", hits())
def test_a_hit_is_what_its_template_made(hit, q):
    context = {"group": {"session": {"id": 42}}, "hit": hit, "query": {"q": q}}
    expected = engines["django"].from_string(HIT_ITEM_TEMPLATE.read_text()).render(context)
    tag = engines["django"].from_string("{% load display %}{% hit_item group.session.id hit query.q %}")
    assert tag.render(context) == expected
    assert "<script>" not in expected
