"""A session's thread from the index, and the transcript page built on it.

entries.py loads rows back into reader entries; store.py caches built threads and keeps
their snapshots (what one holds: snapshots.py); page.py turns a thread into the page's
rows and the API's dicts. The API and the pages both come through here, so they show the
same thread.
"""

from sessionviewer.transcripts.entries import load_entries, load_entry
from sessionviewer.transcripts.snapshots import version_text
from sessionviewer.transcripts.store import (
    LazyItem,
    StaleSnapshot,
    Transcript,
    UnknownLeaf,
    clear_cache,
    forget_session,
    prepare_snapshots,
    thread_changes,
    transcript,
    transcript_of_entries,
    transcript_to_walk,
    unprepared_sessions,
    walk_to,
)

# The page's names load on first use: the indexer needs only the snapshots (store.py),
# and page.py brings search, Markdown and Pygments, a fifth of `manage.py index`'s start.
_PAGE_NAMES = frozenset(
    {
        "CHILD_FIELDS",
        "CHUNK",
        "FIRST_SCREEN",
        "PROBLEM_LIMIT",
        "TEXT_LIMIT",
        "Group",
        "Piece",
        "Row",
        "UnknownEntry",
        "anchor",
        "compaction_summary",
        "item_to_dict",
        "result_slot",
        "rows_for",
        "thread_to_dict",
        "transcript_page",
    }
)


def __getattr__(name: str):
    if name in _PAGE_NAMES:
        from sessionviewer.transcripts import page

        return getattr(page, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "FIRST_SCREEN",
    "StaleSnapshot",
    "forget_session",
    "CHILD_FIELDS",
    "CHUNK",
    "PROBLEM_LIMIT",
    "TEXT_LIMIT",
    "Group",
    "LazyItem",
    "Piece",
    "Row",
    "Transcript",
    "UnknownEntry",
    "UnknownLeaf",
    "anchor",
    "clear_cache",
    "compaction_summary",
    "item_to_dict",
    "load_entries",
    "load_entry",
    "prepare_snapshots",
    "unprepared_sessions",
    "result_slot",
    "rows_for",
    "thread_changes",
    "thread_to_dict",
    "transcript",
    "transcript_page",
    "transcript_of_entries",
    "transcript_to_walk",
    "version_text",
    "walk_to",
]
