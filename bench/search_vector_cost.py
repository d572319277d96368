"""What PostgreSQL's full-text index pays to read an entry's text, before and after migration 0020.

Times to_tsvector('simple', text) (the index's expression before) against
sessionviewer_search_vector(text) (after: FTS5's words, sessionviewer/tokens.py) on the same
texts: 20,000 short ones, ASCII or with accents, and texts of row_codec.SEARCHABLE_CHARS
characters (ASCII with paths and URLs, mixed scripts, and Cyrillic words that each start with
a capital). Each figure is the median of --runs, in a migrated database of your choice:

    .venv/bin/python bench/search_vector_cost.py postgres://postgres@127.0.0.1:5432/sessionviewer
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sessionviewer.row_codec import SEARCHABLE_CHARS  # noqa: E402

EXPRESSIONS = {
    "to_tsvector": "to_tsvector('simple', {})",
    "search_vector": "sessionviewer_search_vector({})",
}
SHORT = {
    "20,000 short ASCII": "please check why request {n} was served late, see src/app.py",
    "20,000 short accented": "Le café était fermé {n}, hélas: Straße, Łódź, naïve",
}


def long_texts() -> dict[str, str]:
    rng = random.Random(0)
    ascii_words = [f"w{n}" for n in range(3000)] + ["src/app.py", "error_code", "https://example.com/a?b=c"]
    mixed = [*ascii_words, "café", "naïve", "東京タワー", "Москва", "don't", "καλημέρα"]
    letters = "АБВГДабвгдеёжзийклмнопрстуфхцчшщъыьэюя"
    cyrillic = [
        rng.choice(letters[:5]) + "".join(rng.choice(letters[5:]) for _ in range(6)) for _ in range(5000)
    ]

    def text(words: list[str]) -> str:
        return " ".join(rng.choice(words) for _ in range(SEARCHABLE_CHARS))[:SEARCHABLE_CHARS]

    return {
        "200,000 chars ASCII": text(ascii_words),
        "200,000 chars mixed": text(mixed),
        "200,000 chars Cyrillic capitals": text(cyrillic),
    }


def timed(cursor, sql: str, params: list, runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        cursor.execute(sql, params)
        cursor.fetchall()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dsn", help="a migrated PostgreSQL database")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with psycopg.connect(args.dsn) as connection, connection.cursor() as cursor:
        print(f"{'text':34}" + "".join(f"{name:>16}" for name in EXPRESSIONS))
        for label, template in SHORT.items():
            row = "t || n::text"
            figures = [
                timed(
                    cursor,
                    f"SELECT sum(length({e.format(row)})) FROM generate_series(1, 20000) AS n, (SELECT %s::text AS t) AS x",  # noqa: S608
                    [template.replace("{n}", "")],
                    args.runs,
                )
                for e in EXPRESSIONS.values()
            ]
            print(f"{label:34}" + "".join(f"{f:13,.0f} ms" for f in figures))
        for label, text in long_texts().items():
            figures = [
                timed(cursor, f"SELECT length({e.format('%s::text')})", [text], args.runs)
                for e in EXPRESSIONS.values()
            ]  # noqa: S608
            print(f"{label:34}" + "".join(f"{f:13,.0f} ms" for f in figures))


if __name__ == "__main__":
    main()
