"""The index: the only code that calls the readers and writes rows.

The entry points are index_roots(), index_when_free(), watch_roots() and IndexSummary
(passes.py).
They are loaded on first use, not here: rows.py is imported by models.py, and
worker.py by the reading process, and neither may bring Django along.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sessionviewer.index.passes import IndexSummary, index_roots, index_when_free, watch_roots

__all__ = ["IndexSummary", "index_roots", "index_when_free", "watch_roots"]


def __getattr__(name: str):
    if name in __all__:
        from sessionviewer.index import passes

        return getattr(passes, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
