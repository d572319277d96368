"""PostgreSQL: the indexer hands over an ASCII entry's words, so that the server does not
read them again.

sessionviewer_search_vector(text) (migration 0023) was the biggest part of what a cold index
cost the PostgreSQL server: 9.5 s of the history corpus's 44 s, its regular expression alone
4-5 s (bench/README.md). 99.9% of those texts are ASCII, and an ASCII text's words are found
in C by str.translate and split (tokens.ascii_lexemes), in the indexer's reading process,
which works beside the writer rather than in its way.

The new column search_words holds those words, as the function would make them; it is NULL
for every other text (and for every row written before this migration, or by the ORM), whose
words the function still reads. The index, and the query (search.matching_entries), take
COALESCE(search_words, sessionviewer_search_vector(text)), so both engines still find the same
entries (tests/test_search_parity.py). A change to an entry's text that does not also write
its words makes them NULL again (a trigger), so they never go stale.

The column is PostgreSQL's alone, not the model's: SQLite has FTS5, and no page loads it.
The index is built again, over every row's text, as migration 0023's was: 13 s for the
history corpus's 155,000 entries (bench/README.md). The column is added at once (NULL, no
default), and costs the entry table a third more disk once the indexer fills it.
"""

from django.db import migrations

UP = [
    "ALTER TABLE sessionviewer_entry ADD COLUMN search_words tsvector",
    """
CREATE FUNCTION sessionviewer_entry_words_stale() RETURNS trigger
LANGUAGE plpgsql AS $function$
BEGIN
  NEW.search_words := NULL;
  RETURN NEW;
END
$function$""",
    # Not on insert: a BEFORE INSERT trigger would make COPY insert row by row.
    "CREATE TRIGGER entry_words_stale BEFORE UPDATE OF text ON sessionviewer_entry FOR EACH ROW "
    "WHEN (NEW.text IS DISTINCT FROM OLD.text AND NEW.search_words IS NOT DISTINCT FROM OLD.search_words) "
    "EXECUTE FUNCTION sessionviewer_entry_words_stale()",
    "DROP INDEX IF EXISTS entry_text_search",
    "SET LOCAL maintenance_work_mem = '256MB'",
    "CREATE INDEX entry_text_search ON sessionviewer_entry USING gin "
    "(COALESCE(search_words, sessionviewer_search_vector(text)))",
]
DOWN = [
    "DROP INDEX IF EXISTS entry_text_search",
    "DROP TRIGGER IF EXISTS entry_words_stale ON sessionviewer_entry",
    "DROP FUNCTION IF EXISTS sessionviewer_entry_words_stale()",
    "ALTER TABLE sessionviewer_entry DROP COLUMN IF EXISTS search_words",
    "SET LOCAL maintenance_work_mem = '256MB'",
    "CREATE INDEX entry_text_search ON sessionviewer_entry USING gin (sessionviewer_search_vector(text))",
]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            for statement in statements:
                schema_editor.execute(statement, params=None)

    return run


class Migration(migrations.Migration):
    dependencies = [("sessionviewer", "0027_links_pending")]

    operations = [migrations.RunPython(_run(UP), _run(DOWN))]
