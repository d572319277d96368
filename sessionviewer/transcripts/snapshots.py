"""What a thread snapshot (ThreadSnapshot and its ThreadPiece rows) holds, for the two
ways of building one: store.py from entries, flat.py over columns."""

from __future__ import annotations

from sessionviewer.models import Session

# The version of what a snapshot keeps for the page's layout (noise) and its thread (3: a
# summary's leafUuid picks the active leaf; 4: kept in pieces, ThreadPiece; 5: no folds, no
# first prompt): a snapshot of another version is built again.
LAYOUT = 5

# Items per ThreadPiece: a first screen reads one or two, an append rewrites the last.
PIECE = 1000


def session_version(session: Session) -> tuple:
    # read_offset moves on every append; indexed_at on every rewrite the indexer made.
    return (session.id, session.read_offset, session.read_line, session.indexed_at)


def version_text(session: Session) -> str:
    return ":".join(str(part) for part in session_version(session))


def empty_piece() -> dict:
    return {"lines": [], "noise": [], "results": [], "owner": [], "summaries": []}
