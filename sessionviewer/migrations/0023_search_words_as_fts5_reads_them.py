"""Search means the same on PostgreSQL as on SQLite: words split and folded as FTS5 does.

The GIN index was over to_tsvector('simple', text). PostgreSQL's parser keeps a path, host or
URL as one word ("src/app.py"), so a part of one ("app.py") found nothing, and the 'simple'
configuration keeps accents ("cafe" did not find "café"). Its words also depend on the
database's locale: in the "C" locale every non-ASCII character is a letter and only ASCII
letters lose their case.

sessionviewer_search_vector(text) reads text by FTS5's own tables (sessionviewer/tokens.py):
it splits at FTS5's separators, lowers ASCII in the C collation, folds the other characters
FTS5 folds (case and accents, one replace() per distinct character the text holds), and
keeps each word once, without positions (the index kept none of use: phrases are checked
as written, see search.matching_entries). It is IMMUTABLE, as an index expression must be,
and the same in every locale. The unaccent extension is not used: its rules are not FTS5's
(1,148 letters and digits fold otherwise, "ł" to "l", "æ" to "ae", "ß" to "ss", "½" to
"1/2"), so search would still differ between the engines.

A word of 2,048 bytes or more is left out: a tsvector's lexeme cannot be longer (FTS5
keeps it). Words of more than 1 MB in all fail as to_tsvector did, which the cap on the
searchable text keeps from happening (index.rows.SEARCHABLE_CHARS, bench/tsvector_limit.py).
The index is built again: about what the first one took.
"""

import json

from django.db import migrations

from sessionviewer import tokens


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _folds() -> dict[str, str]:
    # ASCII letters are lowered by lower() in the C collation, which leaves the rest as it is.
    kept = dict(zip(tokens.FOLD_FROM, tokens.FOLD_TO))  # those past FOLD_TO's end fold to none
    return {c: kept.get(c, "") for c in tokens.FOLD_FROM if not c.isascii()}


def _function() -> str:
    separators = _literal(tokens.SEPARATORS + "+")
    folds = _folds()
    foldable = _literal(tokens.character_class(sorted(ord(c) for c in folds)))
    table = _literal(json.dumps(folds, ensure_ascii=False))
    return f"""
CREATE FUNCTION sessionviewer_search_vector(body text) RETURNS tsvector
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $function$
DECLARE
  words text := lower(regexp_replace(body, {separators}, ' ', 'g') COLLATE "C");
  folded text;
  lexemes text[];
BEGIN
  IF words ~ {foldable} THEN
    FOR folded IN SELECT DISTINCT hit[1] FROM regexp_matches(words, {foldable}, 'g') AS hit LOOP
      words := replace(words, folded, {table}::jsonb ->> folded);
    END LOOP;
  END IF;
  IF octet_length(words) < 2048 THEN
    RETURN array_to_tsvector(array_remove(string_to_array(words, ' '), ''));
  END IF;
  lexemes := ARRAY(
    SELECT DISTINCT word FROM unnest(string_to_array(words, ' ')) AS word
    WHERE word <> '' AND octet_length(word) < 2048
  );
  -- array_to_tsvector does not check what to_tsvector does: past 1 MB its offsets wrap.
  IF octet_length(words) >= 1048576
      AND (SELECT sum(octet_length(word)) FROM unnest(lexemes) AS word) >= 1048576 THEN
    RAISE EXCEPTION 'string is too long for tsvector' USING ERRCODE = 'program_limit_exceeded';
  END IF;
  RETURN array_to_tsvector(lexemes);
END
$function$"""


UP = [
    _function(),
    "DROP INDEX IF EXISTS entry_text_search",
    "CREATE INDEX entry_text_search ON sessionviewer_entry USING gin (sessionviewer_search_vector(text))",
]
DOWN = [
    "DROP INDEX IF EXISTS entry_text_search",
    "DROP FUNCTION IF EXISTS sessionviewer_search_vector(text)",
    "CREATE INDEX entry_text_search ON sessionviewer_entry USING gin (to_tsvector('simple'::regconfig, COALESCE(text, '')))",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0022_projects_fold_home")]

    operations = [migrations.RunPython(_run(UP), _run(DOWN))]
