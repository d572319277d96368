"""FTS5's tokenizer as tables: the words and folds search reads on both engines."""

import random
import re

from sessionviewer import tokens

# Planes 0 and 1 hold every script with separators or folds, and plane 14 the tags and
# variation selectors; the others (CJK ideographs, private use) are letters FTS5 keeps as written.
PLANES = [(0x1, 0xFFFF), (0x10000, 0x1FFFF), (0xE0000, 0xE0FFF)]


def test_the_tables_are_those_of_the_sqlite_in_use():
    separators = re.compile(tokens.SEPARATORS)
    for first, last in PLANES:
        found, folds = tokens.probe(first, last)
        written = [
            c for c in range(first, last + 1) if not 0xD800 <= c <= 0xDFFF and separators.match(chr(c))
        ]
        assert written == found
        assert {c: tokens.fold(c) for c in map(chr, range(first, last + 1)) if tokens.fold(c) != c} == folds


def test_a_path_is_split_at_its_punctuation():
    assert tokens.words("src/app.py") == ["src", "app", "py"]
    assert tokens.words("error_code=E42;") == ["error", "code", "E42"]


def test_an_apostrophe_splits_a_word():
    assert tokens.words("don't") == ["don", "t"]


def test_case_and_accents_fold_written_whole_or_decomposed():
    assert [tokens.fold(w) for w in tokens.words("NAÏVE nai\u0308ve Café")] == ["naive", "naive", "cafe"]


def test_letters_fts5_keeps_whole_do_not_fold_to_ascii():
    assert [tokens.fold(w) for w in tokens.words("Łódź Straße ÆSIR Ørsted")] == [
        "łodz",
        "straße",
        "æsir",
        "ørsted",
    ]


def test_a_run_of_kana_and_kanji_is_one_word_and_cjk_punctuation_splits():
    assert tokens.words("東京タワーは高い。大阪城も、") == ["東京タワーは高い", "大阪城も"]


def test_symbols_split_but_other_numbers_stay_in_the_word():
    assert tokens.words("x²+y² ≤ 10½% 🚀ok") == ["x²", "y²", "10½", "ok"]


def test_a_word_of_accents_only_folds_to_nothing():
    assert tokens.words("\u0301") == ["\u0301"]
    assert tokens.fold("\u0301") == ""


def test_an_ascii_text_has_the_words_fts5_reads_each_once():
    rng = random.Random(0)
    pool = [chr(c) for c in range(1, 128)] + ["Word "] * 20
    for _ in range(2000):
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 300)))
        lexemes = tokens.ascii_lexemes(text)
        assert sorted(lexemes) == sorted({tokens.fold(word).encode() for word in tokens.words(text)})


def test_a_text_with_a_word_too_long_for_a_tsvectors_text_is_left_to_postgresql():
    assert tokens.ascii_lexemes("a" * 2046 + " b") == [b"a" * 2046, b"b"]
    assert tokens.ascii_lexemes("a" * 2047 + " b") is None


def test_a_text_that_is_not_all_ascii_is_left_to_postgresql():
    assert tokens.ascii_lexemes("Café au lait") is None
    assert tokens.ascii_lexemes("Src/App.py src") == [b"app", b"py", b"src"]  # once each, sorted


def test_a_binary_tsvector_is_the_count_then_each_lexeme_ended_and_without_positions():
    assert tokens.binary_tsvector([b"src", b"py"]) == b"\x00\x00\x00\x02src\x00\x00\x00py\x00\x00\x00"
    assert tokens.binary_tsvector([]) == b"\x00\x00\x00\x00"
