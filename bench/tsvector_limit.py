"""How many characters of an entry's text PostgreSQL can index, at worst (row_codec.SEARCHABLE_CHARS).

A tsvector holds at most 1 MB of lexemes; past that, the index's expression fails with
"string is too long for tsvector" and the entry cannot be stored. How much text that is
depends on the text: distinct words only, in the characters UTF-8 takes the most bytes for.
For each kind of worst text this finds, by bisection, the most characters the index's
sessionviewer_search_vector (migration 0020; the database must be migrated) takes, and
prints it beside the cap.

    .venv/bin/python bench/tsvector_limit.py postgres://postgres@127.0.0.1:5432/sessionviewer
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sessionviewer.row_codec import SEARCHABLE_CHARS  # noqa: E402

# Letters UTF-8 writes in four bytes: CJK Unified Ideographs Extension B.
WIDE = [chr(c) for c in range(0x20000, 0x20000 + 4096)]


def distinct_words(length: int, alphabet: list[str], chars: int) -> str:
    """Words of `length` letters, every one different, one space apart, to `chars` characters."""
    words, n = [], 0
    total = 0
    while total < chars:
        word, rest = [], n
        for _ in range(length):
            rest, letter = divmod(rest, len(alphabet))
            word.append(alphabet[letter])
        words.append("".join(word))
        total += length + 1
        n += 1
    return " ".join(words)[:chars]


KINDS = {
    "ASCII words of 6 letters": lambda chars: distinct_words(
        6, list("abcdefghijklmnopqrstuvwxyz0123456789"), chars
    ),
    "4-byte words of 2 letters": lambda chars: distinct_words(2, WIDE, chars),
    "4-byte words of 500 letters": lambda chars: distinct_words(500, WIDE, chars),
}


def fits(cursor, text: str) -> bool:
    cursor.execute("SAVEPOINT probe")
    try:
        cursor.execute("SELECT length(sessionviewer_search_vector(%s::text))", [text])
    except psycopg.errors.ProgramLimitExceeded:
        cursor.execute("ROLLBACK TO SAVEPOINT probe")
        return False
    cursor.execute("RELEASE SAVEPOINT probe")
    return True


def most_chars(cursor, make) -> int:
    low, high = 0, 4 * 2**20  # fits, does not fit
    assert not fits(cursor, make(high))
    while high - low > 1000:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(cursor, make(middle)) else (low, middle)
    return low


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn", help="a migrated PostgreSQL database to run the index's expression in")
    args = parser.parse_args()
    with psycopg.connect(args.dsn) as connection, connection.cursor() as cursor:
        print(f"SEARCHABLE_CHARS = {SEARCHABLE_CHARS:,}")
        for name, make in KINDS.items():
            chars = most_chars(cursor, make)
            print(f"{name:32} at most {chars:>9,} characters ({chars / SEARCHABLE_CHARS:.2f}x the cap)")


if __name__ == "__main__":
    main()
