"""A session's thread from the index: rows back to reader entries, then threads.build_thread.

The API and the pages both come through here, so they show the same thread.
"""

from __future__ import annotations

from sessionviewer import readers, threads
from sessionviewer.models import Entry, Session

UnknownLeaf = threads.UnknownLeaf

_FIELDS = (
    "id",
    "line",
    "offset",
    "entry_id",
    "parent_id",
    "kind",
    "role",
    "timestamp",
    "blocks",
    "sender",
    "model",
    "usage",
    "message_id",
    "subtype",
    "is_sidechain",
    "is_meta",
    "logical_parent_id",
    "first_kept_id",
    "summary",
    "leaf_id",
    "extra",
)


def _block(data: dict) -> readers.Block:
    return readers.Block(**{k: v for k, v in data.items() if k in readers.Block.__slots__})


def load_entries(session: Session) -> list[readers.Entry]:
    """The session's entries in file order, as the reader produced them."""
    rows = Entry.objects.filter(session=session).order_by("line").values_list(*_FIELDS)
    entries = []
    for row in rows:
        values = dict(zip(_FIELDS, row, strict=True))
        entries.append(
            readers.Entry(
                id=values["entry_id"],
                parent_id=values["parent_id"],
                kind=values["kind"],
                role=values["role"],
                timestamp=values["timestamp"],
                blocks=[_block(b) for b in values["blocks"] or []],
                line=values["line"],
                offset=values["offset"],
                sender=values["sender"],
                model=values["model"],
                usage=values["usage"] or {},
                message_id=values["message_id"],
                subtype=values["subtype"],
                is_sidechain=values["is_sidechain"],
                is_meta=values["is_meta"],
                logical_parent_id=values["logical_parent_id"],
                first_kept_id=values["first_kept_id"],
                summary=values["summary"],
                leaf_id=values["leaf_id"],
                extra=values["extra"] or {},
            )
        )
    return entries


def session_thread(session: Session, leaf: str | None = None) -> threads.Thread:
    return threads.build_thread(load_entries(session), leaf)


def thread_to_dict(session: Session, thread: threads.Thread) -> dict:
    return {
        "session": session.to_dict(),
        "leaf": thread.leaf_id,
        "leaves": thread.leaves,
        "problems": [p.to_dict() for p in session.problems.order_by("line")],
        "thread_problems": thread.problems,
        "children": [
            {"id": c.id, "title": c.display_title, "kind": c.kind, "parent_tool_id": c.parent_tool_id}
            for c in session.children.order_by("id")
        ],
        "entries": [item_to_dict(item) for item in thread.items],
    }


def item_to_dict(item: threads.ThreadItem) -> dict:
    data = item.entry.to_dict()
    data["compacted"] = item.compacted
    if item.alternatives:
        data["alternatives"] = item.alternatives
    return data
