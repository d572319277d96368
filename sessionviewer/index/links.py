"""Links that need more than one file: subagents and forks to their parent, and the
summary lines that title a session (Claude Code writes them into the next file).

A session written by a pass is marked (models.PendingWork) until its root's links are
made: a pass cut off between its groups and its links leaves the mark, and the next pass
over the root links those sessions with its own (pending_links), in the files' order, their
summary lines that no pass linked yet (past Session.links_after_line) read back from their
entries. So the titles come out as one pass that was not cut off gives them.
"""

from __future__ import annotations

from pathlib import Path

from sessionviewer import readers
from sessionviewer.index import pending
from sessionviewer.index.fold import title_of
from sessionviewer.index.statements import update_sessions
from sessionviewer.index.worker import SummaryLink
from sessionviewer.models import Entry, Session, Source
from sessionviewer.row_codec import db_text


def link_sessions(source: Source, touched: list[Session]) -> None:
    """Links that need more than one file: subagents and forks to their parent, cross-file titles.

    Only what this pass touched is looked at: the touched sessions' own parents, the
    sessions waiting for a touched one as their parent, and the new summary lines.
    """
    paths = {s.path for s in touched}
    names = {Path(path).name for path in paths}
    candidates = {s.id: s for s in touched if s.parent_path}
    # Sessions still without their parent: their ids and parent paths only (after a
    # first index every subagent is one), then the few whose parent was just indexed.
    waiting = Session.objects.filter(source=source, parent__isnull=True).exclude(parent_path="")
    wanted = [
        session_id
        for session_id, parent_path in waiting.values_list("id", "parent_path")
        if session_id not in candidates and (parent_path in paths or Path(parent_path).name in names)
    ]
    for session in Session.objects.filter(id__in=wanted).only(*_LINK_FIELDS):
        candidates[session.id] = session
    parents = {
        parent.path: parent
        for parent in Session.objects.filter(
            source=source, path__in={s.parent_path for s in candidates.values()}
        ).only("id", "path", "extra")
    }
    linked = [s for s in candidates.values() if link_parent(source, s, parents.get(s.parent_path))]
    update_sessions(linked, ("parent_id", "parent_tool_id"))
    link_summaries(source, touched)


_LINK_FIELDS = ("id", "source", "path", "kind", "parent_path", "parent", "parent_tool_id", "agent_id")


def pending_links(source: Source, touched: list[Session]) -> list[Session]:
    """The root's sessions an earlier pass wrote and did not link (it was cut off first),
    besides this pass's own: each with the summary lines it left unlinked, read from its
    entries. A session of this pass's that such a pass had written too gets its own the same way."""
    ours = {s.id for s in touched}
    marked = Session.objects.filter(source=source, pending_work__work=pending.LINKS).exclude(id__in=ours)
    sessions = list(marked.only(*_LINK_FIELDS, "project_dir", "summary_title", "links_after_line"))
    for session in sessions:
        session.links_pending = True
    _read_summaries([*sessions, *(s for s in touched if s.new_summaries is None)])
    return sessions


def _read_summaries(sessions: list[Session]) -> None:
    """Each session's summary lines past links_after_line: those before it an earlier pass
    linked, and applied again they could bring back a title another file's line has replaced."""
    after = {s.id: s.links_after_line for s in sessions}
    summaries: dict[int, list[SummaryLink]] = {s.id: [] for s in sessions}
    ids = list(summaries)
    for start in range(0, len(ids), CHUNK):
        lines = Entry.objects.filter(session_id__in=ids[start : start + CHUNK], kind=readers.SUMMARY)
        for session_id, line, leaf_id, text in (
            lines.exclude(leaf_id="")
            .order_by("session_id", "line")
            .values_list("session_id", "line", "leaf_id", "summary")
        ):
            if line > after[session_id]:
                summaries[session_id].append(SummaryLink(leaf_id, db_text(title_of(text))))
    for session in sessions:
        session.new_summaries = summaries[session.id]


def links_made(sessions: list[Session]) -> None:
    """Clear the mark of sessions whose links are made, in the transaction that made them."""
    pending.unmark([s.id for s in sessions if s.links_pending], pending.LINKS)
    for session in sessions:
        session.links_pending = False


CHUNK = 500  # ids a statement: well under SQLite's limit on parameters


def link_parent(source: Source, session: Session, parent: Session | None) -> bool:
    """Set the session's parent and the tool call that started it; whether they changed.

    parent: the session at exactly session.parent_path, if there is one.
    """
    if parent is None or parent.id == session.id:
        parent = (
            Session.objects.filter(source=source, path__endswith="/" + Path(session.parent_path).name)
            .exclude(id=session.id)
            .only("id", "path", "extra")
            .first()
        )
    tool_id = session.parent_tool_id
    if parent and session.kind == "subagent" and session.agent_id:
        tool_id = parent.extra.get("subagent_links", {}).get(session.agent_id, "") or tool_id
    if (parent and parent.id) == session.parent_id and tool_id == session.parent_tool_id:
        return False
    session.parent, session.parent_tool_id = parent, tool_id
    return True


def link_summaries(source: Source, touched: list[Session]) -> None:
    """A summary line titles the session that holds its leaf: its own file's, or
    another file's of the same project (Claude Code writes them into the next session).

    The sessions holding the leaves come from one query per LEAF_QUERY leaves, not
    two per summary line: older Claude Code versions wrote a summary line for every
    conversation a file continued, thousands over a first index.
    """
    links = [(s, link) for s in touched for link in getattr(s, "new_summaries", []) if link.title]
    if not links:
        return
    holders: dict[str, list[tuple[int, str]]] = {}  # leaf id: (session id, project) of each holder
    leaf_ids = sorted({link.leaf_id for _, link in links})
    for start in range(0, len(leaf_ids), LEAF_QUERY):
        found = Entry.objects.filter(
            session__source=source, entry_id__in=leaf_ids[start : start + LEAF_QUERY]
        )
        for session_id, entry_id, project_dir in found.values_list(
            "session_id", "entry_id", "session__project_dir"
        ):
            holders.setdefault(entry_id, []).append((session_id, project_dir))
    wanted: dict[int, str] = {}  # session id: title, the last summary to name a session wins
    for session, link in links:
        holding = holders.get(link.leaf_id, [])
        if any(session_id == session.id for session_id, _ in holding):
            wanted[session.id] = link.title
        elif others := sorted(
            i for i, project in holding if project == session.project_dir and i != session.id
        ):
            wanted[others[0]] = link.title
    # Each compares with the stored title (nothing was saved above), or the one this pass
    # has in memory for a session it read.
    by_id = {s.id: s for s in touched if s.id in wanted}
    missing = [session_id for session_id in wanted if session_id not in by_id]
    by_id.update(Session.objects.only("id", "summary_title").in_bulk(missing))
    titled = []
    for session_id, title in wanted.items():
        owner = by_id.get(session_id)
        if owner is not None and owner.summary_title != title:
            owner.summary_title = title
            titled.append(owner)
    update_sessions(titled, ("summary_title",))


LEAF_QUERY = 5000  # leaf ids per query: well under SQLite's limit on a statement's parameters
