"""Search means the same on SQLite and PostgreSQL: the same query finds the same entries.

Every fixture tree is indexed once, and each query's hits are compared with the one list of
hits written here, whichever engine runs the suite (CI runs it on both). FTS5's tokenizer
defines what a word is (sessionviewer/tokens.py); PostgreSQL's index reads text by the same
tables (migration 0023), or holds the words the indexer found in an ASCII text (0028).
"""

import random
import sqlite3
from pathlib import Path

import pytest
from django.db import connection, transaction

from sessionviewer import tokens
from sessionviewer.index import index_roots
from sessionviewer.models import Entry
from sessionviewer.roots import RootSpec
from sessionviewer.search import matching_entries

FIXTURES = Path(__file__).parent / "fixtures"
TREES = [
    ("claude_code", "claude_code"),
    ("go_agent", "go_agent"),
    ("fluux_xmpp", "fluux_xmpp"),
    ("codex", "codex"),
    ("gemini_cli", "gemini_cli"),
    ("openclaw", "openclaw"),
    ("hostile/claude", "claude_code"),
    ("hostile/go", "go_agent"),
    ("hostile/fluux", "fluux_xmpp"),
    ("search", "claude_code"),
]
S = "search/words_in_many_scripts.jsonl"  # words in many scripts, paths and punctuation

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def every_fixture(django_db_setup, django_db_blocker):
    """Every fixture tree indexed once for the module's queries, in a transaction rolled back
    after them (each test's own is a savepoint inside it)."""
    with django_db_blocker.unblock(), transaction.atomic():
        summary = index_roots([RootSpec(FIXTURES / folder, fmt) for folder, fmt in TREES])
        assert summary.errors == []
        yield
        transaction.set_rollback(True)


def hits(query: str) -> list[str]:
    """The entries query matches, as fixture file:line."""
    rows = matching_entries(query).values_list("session__path", "line")
    return sorted(f"{Path(path).relative_to(FIXTURES)}:{line}" for path, line in rows)


# Each query, and the entries (fixture file:line) it finds on either engine. What a word is
# comes from FTS5: "src/app.py" is three words, "don't" two, a run of kana and kanji one;
# case and accents fold, but letters FTS5 keeps whole stay so (ł, ß, æ, ø, Greek tonos).
# Phrases and words with punctuation must also appear as written, ASCII case aside.
QUERIES = {
    # words
    "café": [S + ":1", S + ":8"],
    "cafe": [S + ":1", S + ":8"],
    "CAFE": [S + ":1", S + ":8"],
    "hélas": [S + ":1"],
    "fermé etait": [S + ":1"],
    "error code": [
        "claude_code/tool_call_and_result.jsonl:5",
        "claude_code/tool_views.jsonl:9",
        "gemini_cli/session-2026-03-02T09-14-5f1c2a9e.jsonl:5",  # Gemini CLI's shell output: "Error: (none)", "Exit Code: 2"
        S + ":9",
    ],
    "README.md": [
        "claude_code/one_reply_over_many_lines.jsonl:7",
        "claude_code/one_reply_over_many_lines.jsonl:8",
        "claude_code/tool_call_and_result.jsonl:3",
        "go_agent/fork_family/20260226-143012-22222222.jsonl:4",
        "go_agent/fork_family/20260226-143012-22222222.jsonl:5",
        "go_agent/fork_family/20260226-153000-33333333.jsonl:4",
        "go_agent/fork_family/20260226-153000-33333333.jsonl:5",
    ],
    "traceback": ["gemini_cli/session-2026-03-02T09-14-5f1c2a9e.jsonl:4"],  # in a Gemini reply's thoughts
    "dont": [],
    "don": [S + ":2"],
    # prefixes
    "caf*": [S + ":1", S + ":8"],
    "naï*": [S + ":1", S + ":8"],
    "tod*": [
        "claude_code/tool_views.jsonl:20",
        "claude_code/tool_views.jsonl:21",
        "claude_code/tool_views.jsonl:40",
        "gemini_cli/session-2025-11-20T16-02-0c9e4d11.json:2",
        "gemini_cli/session-2025-11-20T16-02-0c9e4d11.json:3",
        "gemini_cli/session-2025-11-20T16-02-0c9e4d11.json:4",
        S + ":11",
        S + ":12",
    ],
    "東京*": [S + ":4"],
    "моск*": [S + ":5"],
    "東京タワー*": [S + ":4"],
    # phrases
    '"était fermé"': [S + ":1"],
    '"etait ferme"': [],
    '"ÉTAIT FERMÉ"': [],
    '"ran tests"': [S + ":2"],
    "ls -la": ["claude_code/tool_call_and_result.jsonl:2"],
    "Error: Exit": [
        "claude_code/tool_call_and_result.jsonl:5",
        "claude_code/tool_views.jsonl:9",
        "gemini_cli/session-2026-03-02T09-14-5f1c2a9e.jsonl:5",
    ],
    '"Москва — столица"': [S + ":5"],
    '"москва — столица"': [],
    # accents
    "naive": [S + ":1", S + ":8"],
    "naïve": [S + ":1", S + ":8"],
    "NAÏVE": [S + ":1", S + ":8"],
    "nai\u0308ve": [S + ":1", S + ":8"],  # typed decomposed: i and a combining diaeresis
    "cafe\u0301*": [S + ":1", S + ":8"],
    "łódź": [S + ":3"],
    "ŁÓDŹ": [S + ":3"],
    "lodz": [],
    "straße": [S + ":3"],
    "strasse": [],
    "æsir": [S + ":3"],
    "aesir": [],
    "ørsted": [S + ":3"],
    "orsted": [],
    "ǆemal": [S + ":12"],
    "Ǆemal": [S + ":12"],
    "dzemal": [],
    # paths
    "app.py": [S + ":2", S + ":12"],
    "src/app.py": [S + ":2", S + ":12"],
    "app py": [
        "claude_code/paths_outside_home.jsonl:2",
        "claude_code/paths_outside_home.jsonl:6",
        "claude_code/tool_views.jsonl:2",
        "claude_code/tool_views.jsonl:3",
        "claude_code/tool_views.jsonl:6",
        "claude_code/tool_views.jsonl:7",
        "claude_code/tool_views.jsonl:14",
        "claude_code/tool_views.jsonl:16",
        "claude_code/tool_views.jsonl:17",
        S + ":2",
        S + ":12",
        S + ":13",
    ],
    "test_app.py": [S + ":2"],
    "tests/test_app.py": [S + ":2"],
    "/home/user/project/src/app.py": [],
    # punctuation
    "don't": [S + ":2"],
    "error_code": [S + ":9"],
    "E42": [S + ":9"],
    "example.com": [
        "claude_code/tool_views.jsonl:24",
        "claude_code/values_to_redact.jsonl:4",
        "hostile/go/20260201-100000-deadbeef.jsonl:2",
        S + ":9",
    ],
    "user@example.com": [S + ":9"],
    "https://example.com/docs?q=1#top": [S + ":9"],
    "C++": [
        "openclaw/myclaw/sessions/agent__main__channel__telegram__account__default__peer__direct__user_1001.jsonl:4",
        "openclaw/myclaw/sessions/agent__main__channel__telegram__account__default__peer__direct__user_1001.jsonl:5",
        S + ":10",
    ],
    "x²": [S + ":10"],
    "10½": [S + ":10"],
    "½": [],
    # scripts
    "東京タワーは高い": [S + ":4"],
    "東京タワー": [],
    "大阪城も": [S + ":4"],
    "москва": [S + ":5"],
    "МОСКВА": [S + ":5"],
    "россии": [S + ":5"],
    "καλημέρα": [S + ":6"],
    "ΚΑΛΗΜΈΡΑ": [S + ":6"],
    "καλημερα": [],
    "مرحبا": [S + ":7"],
}


@pytest.mark.parametrize("query", QUERIES)
def test_a_query_finds_the_same_entries_on_either_engine(every_fixture, query):
    assert hits(query) == sorted(QUERIES[query])


def fts5_words(texts: dict[int, str]) -> dict[int, set[str]]:
    """The words SQLite's FTS5 reads in each text, with the index's tokenizer (migration 0002)."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(x, tokenize='unicode61 remove_diacritics 2')")
    db.execute("CREATE VIRTUAL TABLE t_words USING fts5vocab(t, 'instance')")
    db.executemany("INSERT INTO t(rowid, x) VALUES (?, ?)", texts.items())
    found: dict[int, set[str]] = {id_: set() for id_ in texts}
    for id_, word in db.execute("SELECT doc, term FROM t_words"):
        found[id_].add(word)
    return found


def read_words(text: str) -> set[str]:
    return {tokens.fold(word) for word in tokens.words(text)} - {""}


@pytest.fixture
def texts(every_fixture) -> dict[int, str]:
    return dict(Entry.objects.values_list("id", "text"))


def test_the_words_of_every_fixture_entry_are_those_fts5_reads(texts):
    assert len(texts) > 300
    assert fts5_words(texts) == {id_: read_words(text) for id_, text in texts.items()}


def test_the_index_holds_the_words_fts5_reads_in_every_fixture_entry(texts):
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT id, tsvector_to_array(COALESCE(search_words, sessionviewer_search_vector(text))) "
                "FROM sessionviewer_entry"
            )
            held = {id_: set(words) for id_, words in cursor.fetchall()}
        # A lexeme holds less than 2 KB: longer words are left out there (none in the fixtures).
        assert held == {id_: read_words(text) for id_, text in texts.items()}
    else:
        with connection.cursor() as cursor:
            cursor.execute("CREATE VIRTUAL TABLE temp.entry_words USING fts5vocab(main, entry_fts, 'row')")
            cursor.execute("SELECT term FROM temp.entry_words")
            held = {word for (word,) in cursor.fetchall()}
            cursor.execute("DROP TABLE temp.entry_words")
        assert held == set().union(*(read_words(text) for text in texts.values()))


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the indexer finds words for PostgreSQL only")
def test_the_indexer_hands_over_the_words_of_every_ascii_entry_and_of_no_other(texts):
    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM sessionviewer_entry WHERE search_words IS NOT NULL")
        given = {id_ for (id_,) in cursor.fetchall()}
    assert given == {id_ for id_, text in texts.items() if text.isascii()}
    assert given != set(texts)  # the fixtures hold other texts too, which the function reads


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the indexer finds words for PostgreSQL only")
def test_the_indexer_sends_a_tsvectors_lexemes_in_the_order_the_server_keeps_them():
    """tokens.ascii_lexemes sorts them as tsvectorrecv would: the server then keeps them as sent."""
    rng = random.Random(1)
    pool = [*"abcxyzABZ019_-./ ", "ab ", "abc ", "a ", "0a ", "a0 ", "b" * 40 + " "]
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 80))) for _ in range(500)]
    sent = [tokens.ascii_lexemes(text) for text in texts]
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE given (n int, words tsvector)")
        with cursor.copy("COPY given FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "bytea"])
            for n, words in enumerate(sent):
                copy.write_row([n, tokens.binary_tsvector(words)])
        cursor.execute("SELECT tsvector_to_array(words) FROM given ORDER BY n")
        kept = [row[0] for row in cursor.fetchall()]
        cursor.execute("DROP TABLE given")
    assert kept == [[word.decode() for word in words] for words in sent]
    assert sum(len(words) > 3 for words in sent) > 400


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the indexer finds words for PostgreSQL only")
def test_the_indexer_reads_an_ascii_text_as_the_function_does():
    rng = random.Random(0)
    pool = [chr(c) for c in range(1, 128)] + ["word "] * 20
    texts = ["".join(rng.choice(pool) for _ in range(rng.randint(0, 300))) for _ in range(2000)]
    texts += ["x" * 2046 + " kept", "y" * 2047 + " kept", "z" * 2048 + " left out"]  # lexemes < 2 KB
    lexemes = [tokens.ascii_lexemes(text) for text in texts]
    with connection.cursor() as cursor:
        # As the indexer hands them over: a binary COPY of binary tsvectors.
        cursor.execute("CREATE TEMPORARY TABLE given (n int, words tsvector, text text)")
        with cursor.copy("COPY given FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(["int4", "bytea", "text"])
            for n, (words, text) in enumerate(zip(lexemes, texts, strict=True)):
                copy.write_row([n, None if words is None else tokens.binary_tsvector(words), text])
        cursor.execute(  # the function reads the texts with words too long for the indexer (NULL)
            "SELECT tsvector_to_array(COALESCE(g.words, sessionviewer_search_vector(g.text))) "
            "= tsvector_to_array(sessionviewer_search_vector(g.text)), g.words IS NOT DISTINCT FROM u.plain::tsvector "
            "FROM given g JOIN unnest(%s::text[]) WITH ORDINALITY AS u(plain, n) ON u.n = g.n + 1 ORDER BY g.n",
            [[None if words is None else b" ".join(words).decode() for words in lexemes]],
        )
        same = cursor.fetchall()
        cursor.execute("DROP TABLE given")
    assert [found for found, _ in same] == [True] * len(texts)
    assert [as_text for _, as_text in same] == [True] * len(texts)  # the binary form says what the text does


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the indexer finds words for PostgreSQL only")
def test_an_entry_whose_text_changes_is_found_by_its_new_words(every_fixture):
    entry = Entry.objects.filter(text__contains="src/app.py").first()
    Entry.objects.filter(id=entry.id).update(text="zyzzyva quux")
    assert list(matching_entries("zyzzyva").values_list("id", flat=True)) == [entry.id]
    assert entry.id not in matching_entries("src/app.py").values_list("id", flat=True)


def test_the_full_text_index_serves_a_query(every_fixture):
    sql, params = matching_entries("src/app.py").query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # the fixtures are too few to need it otherwise
            cursor.execute("EXPLAIN " + sql, params)
            assert "entry_text_search" in "\n".join(row for (row,) in cursor.fetchall())
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            assert "VIRTUAL TABLE INDEX" in "\n".join(str(row) for row in cursor.fetchall())


def test_text_of_random_characters_is_read_as_fts5_reads_it():
    """FTS5, the tables and, on PostgreSQL, the index's function read the same words in 2,000
    texts drawn from the first 12,288 code points and some kana and kanji."""
    rng = random.Random(0)
    pool = [chr(c) for c in range(0x20, 0x3000)] + list("東京タワーは高い。大阪城も、")
    texts = {n: "".join(rng.choice(pool) for _ in range(rng.randint(1, 200))) for n in range(1, 2001)}
    read = {n: read_words(text) for n, text in texts.items()}
    assert fts5_words(texts) == read
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n, tsvector_to_array(sessionviewer_search_vector(x)) FROM unnest(%s::text[], %s::int[]) AS u(x, n)",
                [list(texts.values()), list(texts)],
            )
            assert {n: set(words) for n, words in cursor.fetchall()} == read
