"""What a query matches: every word, and words with punctuation or quoted phrases as written.

The FTS5 index keeps no positions (migration 0007), so phrases are matched by a
substring test on the rows that hold all of their tokens; these tests pin that down.
"""

import json
from pathlib import Path

import pytest
from django.db import connection

from sessionviewer.index import index_roots
from sessionviewer.models import Entry
from sessionviewer.readers import argument_strings
from sessionviewer.roots import RootSpec
from sessionviewer.search import matching_entries, parse_query

from .claude_files import write_tool_turn

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


def test_each_term_is_one_quoted_tsquery_term_so_no_operator_reaches_postgresql():
    parsed = parse_query('cats or -dogs !x a|b it\'s a\\b jump* "quick brown"')
    assert parsed.tsquery == (
        "'cats' & 'or' & '-dogs' & '!x' & 'a|b' & 'it''s' & 'a\\\\b' & 'jump':* & 'quick brown'"
    )


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
    if connection.vendor == "sqlite":
        # PostgreSQL's parser keeps "src/app.py" as one token, so there a part of a path finds nothing.
        assert found("app.py") == [TEXTS[0]]


def test_an_underscored_word_matches_as_written_and_ignores_case(indexed):
    assert found("error_code") == [TEXTS[2]]
    assert found("error code") == sorted([TEXTS[2], TEXTS[3]])


def test_a_quoted_phrase_matches_the_words_in_that_order_only(indexed):
    assert found('"quick brown"') == [TEXTS[5]]
    assert found('"brown quick"') == [TEXTS[6]]


def test_accents_and_case_are_folded_for_plain_words(indexed):
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL's 'simple' configuration keeps accents; this is FTS5's remove_diacritics")
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
    if connection.vendor == "sqlite":  # PostgreSQL's parser keeps a path as one token
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
