"""The only code that calls the readers and writes the index.

A pass walks every configured root, asks the format's reader which session files
are there, and brings each file's rows up to date:

- a file whose size, mtime and inode are unchanged is not opened;
- a file that grew (same inode, same first bytes) is read from its last indexed
  byte offset: an append costs time in proportion to the new bytes;
- a file that shrank, was replaced or was rewritten is indexed again whole;
- a file that is gone leaves the index;
- a last line without its newline yet is left for the next pass.

A file's new rows and its recorded offset are written in one transaction, so an
indexer killed at any moment leaves the index consistent and the next pass
starts exactly where the last commit ended.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC
from itertools import islice
from pathlib import Path

import orjson
from django.db import connection, transaction
from django.utils import timezone

from sessionviewer import readers
from sessionviewer.models import ENTRY_FIELDS, Entry, Problem, Session, Source
from sessionviewer.roots import RootSpec

log = logging.getLogger(__name__)

HEAD_BYTES = 4096
BATCH = 500
TITLE_LENGTH = 200


@dataclass
class IndexSummary:
    files: int = 0  # session files seen
    opened: int = 0  # files read this pass (new, grown or rewritten)
    sessions: int = 0  # sessions in the index for the roots, after the pass
    entries: int = 0  # entries added this pass
    problems: int = 0  # bad lines found this pass
    removed: int = 0  # sessions whose file is gone
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # roots or files that could not be read at all
    touched: list[int] = field(default_factory=list)  # ids of the sessions read this pass

    def line(self) -> str:
        text = (
            f"{self.files} files ({self.opened} read), {self.sessions} sessions, "
            f"{self.entries} new entries, {self.problems} bad lines, {self.removed} removed, "
            f"{self.seconds:.2f}s"
        )
        if self.errors:
            text += f", {len(self.errors)} errors"
        return text


Progress = Callable[[int, int, str], None]


def index_roots(specs: Iterable[RootSpec], progress: Progress | None = None) -> IndexSummary:
    """Bring the index up to date with every root; roots not listed are left alone."""
    started = time.perf_counter()
    summary = IndexSummary()
    for spec in specs:
        index_root(spec, summary, progress)
    summary.seconds = time.perf_counter() - started
    return summary


def watch_roots(
    specs: list[RootSpec], on_pass: Callable[[IndexSummary], None], stop_event: threading.Event | None = None
) -> None:
    """Index the roots again whenever files under them change, until stop_event is set.

    A pass is incremental (unchanged files are not opened), so running it over all
    roots is as cheap as working out which files changed, and never misses one.
    """
    from watchfiles import watch

    paths = [spec.path for spec in specs if spec.path.exists()]
    if not paths:
        raise FileNotFoundError("none of the roots exists: nothing to watch")
    for _changes in watch(*paths, debounce=300, step=50, stop_event=stop_event, raise_interrupt=False):
        on_pass(index_roots(specs))


# Files are written in groups, each group one transaction: a commit per file costs
# more than the writing (and leaves FTS5 many small segments to merge), while one
# file's rows and its offset still always change together.
GROUP_BYTES = 32 * 1024 * 1024
GROUP_FILES = 500


@dataclass
class _Work:
    found: readers.SessionFile
    stat: os.stat_result
    session_id: int | None


def index_root(spec: RootSpec, summary: IndexSummary, progress: Progress | None = None) -> Source | None:
    root = spec.path
    if not root.exists():
        return None
    fmt = spec.format or readers.detect_format(root)
    if fmt is None:
        summary.errors.append(f"{root}: no known session format found")
        return None
    source, _ = Source.objects.get_or_create(path=str(root), defaults={"format": fmt})
    if source.format != fmt:
        # The root was re-tagged: what was read under the old format means nothing now.
        source.sessions.all().delete()
        source.format = fmt
        source.save(update_fields=["format"])
    try:
        found = list(readers.format_module(fmt).discover(root))
    except OSError as error:
        summary.errors.append(f"{root}: {error}")
        return source
    # Only what the comparison needs: loading whole sessions would cost more than the stats.
    known = {
        key: (session_id, state)
        for session_id, key, *state in source.sessions.values_list(
            "id", "key", "file_size", "file_mtime_ns", "file_inode"
        )
    }
    work: list[_Work] = []
    for session_file in found:
        summary.files += 1
        try:
            stat = os.stat(session_file.path)
        except OSError as error:  # vanished between discovery and now
            summary.errors.append(f"{session_file.path}: {error}")
            continue
        session_id, state = known.get(session_file.key, (None, None))
        if state != [stat.st_size, stat.st_mtime_ns, stat.st_ino]:
            work.append(_Work(session_file, stat, session_id))
    touched: list[Session] = []
    done = 0
    for group in _groups(work):
        with transaction.atomic():
            for item in group:
                done += 1
                if progress:
                    progress(done, len(work), item.found.key)
                try:
                    # A savepoint per file: a read that fails halfway leaves none of its rows.
                    with transaction.atomic():
                        touched.append(index_file(source, item, summary))
                except OSError as error:  # unreadable: the rest of the group goes on
                    summary.errors.append(f"{item.found.path}: {error}")
    gone = set(known) - {f.key for f in found}
    if gone:
        summary.removed += len(gone)
        Session.objects.filter(source=source, key__in=gone).delete()
    if touched:
        link_sessions(source, touched)
        summary.touched += [s.id for s in touched]
    source.indexed_at = timezone.now()
    source.save(update_fields=["indexed_at"])
    summary.sessions += source.sessions.count()
    return source


def _groups(work: list[_Work]) -> Iterable[list[_Work]]:
    group: list[_Work] = []
    size = 0
    for item in work:
        group.append(item)
        size += item.stat.st_size
        if size >= GROUP_BYTES or len(group) >= GROUP_FILES:
            yield group
            group, size = [], 0
    if group:
        yield group


def _head_hash(path: Path, length: int) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read(length)).hexdigest()


def index_file(source: Source, work: _Work, summary: IndexSummary) -> Session:
    """Index one changed file's new lines, in the caller's transaction.

    Entries are read, folded into the session's totals and written in batches, so
    memory stays flat however large the file is.
    """
    found, stat = work.found, work.stat
    session = (
        Session.objects.get(id=work.session_id) if work.session_id else Session(source=source, key=found.key)
    )
    start_offset = start_line = 0
    if session.id and _can_append(session, found.path, stat):
        start_offset, start_line = session.read_offset, session.read_line
        # Problems past the offset (a cut-off last line) are looked at again.
        session.problem_count -= session.problems.filter(offset__gte=start_offset).delete()[0]
    elif session.id:
        _reset(session)
    _apply_discovery(session, found)
    reader = readers.SessionReader(found.path, found.format, start_offset, start_line)
    summary.opened += 1
    summaries: list[readers.Entry] = []
    items = iter(reader)
    batch = list(islice(items, BATCH))
    while True:
        following = list(islice(items, BATCH))
        entries = [item for item in batch if isinstance(item, readers.Entry)]
        problems = [item for item in batch if not isinstance(item, readers.Entry)]
        summaries += [e for e in entries if e.kind == readers.SUMMARY and e.leaf_id]
        _apply_entries(session, entries)
        session.problem_count += len(problems)
        summary.entries += len(entries)
        summary.problems += len(problems)
        if not following:
            # The last batch: one save with the file's state (most files are one batch).
            _record_file_state(session, found.path, stat, reader)
            session.save()
            _write_rows(session, entries, problems)
            break
        if session.id is None:
            session.save()  # the rows need its id
        _write_rows(session, entries, problems)
        batch = following
    session.new_summaries = summaries
    return session


def _record_file_state(session: Session, path: Path, stat: os.stat_result, reader) -> None:
    # A last line still being written: keep the file "changed" so the next pass looks again.
    session.file_size = -1 if reader.pending_tail else stat.st_size
    session.file_mtime_ns, session.file_inode = stat.st_mtime_ns, stat.st_ino
    session.read_offset, session.read_line = reader.end_offset, reader.end_line
    session.file_head = _head_hash(path, min(HEAD_BYTES, reader.end_offset))
    session.indexed_at = timezone.now()


def _can_append(session: Session, path: Path, stat: os.stat_result) -> bool:
    """A true append: same file, not shorter than what was read, same first bytes."""
    if session.read_offset == 0 or stat.st_ino != session.file_inode or stat.st_size < session.read_offset:
        return False
    return _head_hash(path, min(HEAD_BYTES, session.read_offset)) == session.file_head


def _reset(session: Session) -> None:
    session.entries.all().delete()
    session.problems.all().delete()
    for name in (
        "entry_count",
        "message_count",
        "problem_count",
        "input_tokens",
        "output_tokens",
        "cache_read_tokens",
        "cache_write_tokens",
    ):
        setattr(session, name, 0)
    session.models_used = []
    session.started_at = session.updated_at = None
    session.title = session.summary_title = session.first_prompt = ""
    session.extra = {}


def _apply_discovery(session: Session, found: readers.SessionFile) -> None:
    session.format = found.format
    session.path = str(found.path)
    session.status = found.status
    session.project_dir = found.project
    for name in ("jid", "agent", "channel", "account", "peer_kind", "peer_id", "agent_id"):
        setattr(session, name, getattr(found, name) or getattr(session, name))
    if found.title:
        session.title = found.title[:500]
    elif description := found.extra.get("description"):
        session.title = str(description)[:500]  # a subagent's task, from its .meta.json
    if found.parent_path is not None:
        session.parent_path = str(found.parent_path)
        session.kind = "subagent"
    if found.parent_tool_id:
        session.parent_tool_id = found.parent_tool_id
    room = session.extra.get("room")
    session.extra = {**session.extra, **found.extra}
    if room:  # found from "nick@muc" senders: discovery only knows room domains
        session.extra["room"], session.peer_kind = True, "group"


def _apply_entries(session: Session, entries: list[readers.Entry]) -> None:
    """Fold new entries into the session's totals; additive, so appends stay cheap."""
    models_used = list(session.models_used)
    # Every line of a streamed reply repeats the reply's usage: count each reply
    # once, with its last line's figures, even when its lines span two passes.
    last_reply = session.extra.get("last_reply") or {}
    for entry in entries:
        session.entry_count += 1
        # A subagent's own file is all sidechain: there, sidechain lines are the conversation.
        main_thread = not entry.is_sidechain or session.kind == "subagent"
        if entry.is_conversational and main_thread:
            session.message_count += 1
        if entry.timestamp:
            if session.started_at is None or entry.timestamp < session.started_at:
                session.started_at = entry.timestamp
            if session.updated_at is None or entry.timestamp > session.updated_at:
                session.updated_at = entry.timestamp
        # Meta rows (gateway-injected turns, "<synthetic>" models) are not models the session used.
        if (
            entry.model
            and not entry.is_meta
            and entry.model not in models_used
            and not entry.model.startswith("<")
        ):
            models_used.append(entry.model)
        if entry.usage:
            if entry.message_id and entry.message_id == last_reply.get("id"):
                _add_usage(session, last_reply.get("usage", {}), -1)
            _add_usage(session, entry.usage, 1)
            last_reply = {"id": entry.message_id, "usage": entry.usage}
        if not session.first_prompt and entry.is_prompt and main_thread and not _is_harness_text(entry):
            prompt = " ".join(entry.text.split())
            if prompt:
                session.first_prompt = prompt[:TITLE_LENGTH]
        if entry.kind in TITLE_KINDS and entry.kind != "summary" and entry.summary:
            session.summary_title = " ".join(entry.summary.split())[:TITLE_LENGTH]
        _apply_metadata(session, entry)
    session.models_used = models_used
    extra = dict(session.extra)
    if last_reply:
        extra["last_reply"] = last_reply
    links = getattr(readers.format_module(session.format), "subagent_links", None)
    if links is not None and (found := links(entries)):
        extra["subagent_links"] = {**found, **extra.get("subagent_links", {})}
    session.extra = extra


def _is_harness_text(entry: readers.Entry) -> bool:
    """A typed slash command or shell escape: a person typed it, but it makes a poor title."""
    return bool(entry.extra.get("command")) or entry.text.lstrip().startswith(("<bash-input>", "<command-"))


def _add_usage(session: Session, usage: dict, sign: int) -> None:
    session.input_tokens += sign * int(usage.get("input") or 0)
    session.output_tokens += sign * int(usage.get("output") or 0)
    session.cache_read_tokens += sign * int(usage.get("cache_read") or 0)
    session.cache_write_tokens += sign * int(usage.get("cache_write") or 0)


# Kinds whose summary is the session's own title. Claude's summary lines are
# placed by their leafUuid instead, in _link_summaries.
TITLE_KINDS = {"summary", "custom-title", "ai-title", "title", "session_info"}


def _apply_metadata(session: Session, entry: readers.Entry) -> None:
    extra = entry.extra
    if cwd := extra.get("cwd"):
        session.cwd = str(cwd)[:1024]
        if session.format in ("claude_code", "go_agent", "openclaw"):
            session.project = session.cwd
    if branch := extra.get("gitBranch") or extra.get("git_branch"):
        session.git_branch = str(branch)[:256]
    uuid = extra.get("sessionId") or extra.get("session_id")
    if not uuid and entry.kind == readers.HEADER:
        uuid = extra.get("id")
    if uuid and not session.session_uuid:
        session.session_uuid = str(uuid)[:128]
    if jid := extra.get("jid"):
        session.jid = session.jid or str(jid)
    # Go agent forks name their parent on a branch entry, pi transcripts on the header.
    if entry.kind in (readers.BRANCH, readers.HEADER):
        if parent := extra.get("parent_session_path"):
            session.parent_path = str(parent)
            session.kind = "fork"
        if fork := extra.get("fork_entry_id"):
            session.fork_entry_id = str(fork)
    if entry.sender.endswith("@muc") and not session.extra.get("room"):
        session.extra = {**session.extra, "room": True}
        session.peer_kind = "group"
    if (agent_id := extra.get("agentId")) and entry.is_sidechain and not session.agent_id:
        session.agent_id = str(agent_id)


ENTRY_COLUMNS = ("session_id", *ENTRY_FIELDS, "text", "raw")


# Fields Claude Code repeats on every line: folded into the session, not kept per entry.
SESSION_EXTRA = frozenset({"cwd", "gitBranch", "version", "sessionId", "userType", "slug", "requestId"})


def _json(value) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _write_rows(session: Session, entries: list[readers.Entry], problems: list[readers.Problem]) -> None:
    """Insert the rows with executemany: model instances and bulk_create cost several
    times the parse itself, and the indexer writes every line of every file."""
    adapt_datetime = _datetime_adapter()
    rows = [
        (
            session.id,
            e.line,
            e.offset,
            e.id[:256],
            e.parent_id[:256] if e.parent_id else None,
            e.kind[:64],
            e.role[:32],
            adapt_datetime(e.timestamp) if e.timestamp else None,
            _json([b.to_dict() for b in e.blocks]),
            e.sender[:512],
            e.model[:256],
            _json(e.usage),
            e.message_id[:256],
            e.subtype[:128],
            e.is_sidechain,
            e.is_meta,
            e.logical_parent_id[:256],
            e.first_kept_id[:256],
            _db_text(e.summary),
            e.leaf_id[:256],
            _json({k: v for k, v in e.extra.items() if k not in SESSION_EXTRA}) if e.extra else "{}",
            _db_text(e.text),
            None if e.raw is None else _json(e.raw),
        )
        for e in entries
    ]
    table = connection.ops.quote_name(Entry._meta.db_table)
    columns = ", ".join(connection.ops.quote_name(c) for c in ENTRY_COLUMNS)
    placeholders = ", ".join(["%s"] * len(ENTRY_COLUMNS))
    insert = f"INSERT INTO {table} ({columns}) VALUES ({placeholders})"  # noqa: S608 - names are ours
    with connection.cursor() as cursor:
        for start in range(0, len(rows), BATCH):
            cursor.executemany(insert, rows[start : start + BATCH])
        if rows and connection.vendor == "sqlite":
            # Full-text rows for what was just written, in one statement (migration 0006).
            cursor.execute(
                f"INSERT INTO entry_fts(rowid, text) SELECT id, text FROM {table}"  # noqa: S608 - names are ours
                " WHERE session_id = %s AND line BETWEEN %s AND %s",
                [session.id, entries[0].line, entries[-1].line],
            )
    Problem.objects.bulk_create(
        [
            Problem(session=session, line=p.line, offset=p.offset, message=p.message, text=_db_text(p.text))
            for p in problems
        ],
        batch_size=BATCH,
    )


def _datetime_adapter():
    """Django's adapt_datetimefield_value reads settings on every call; the indexer calls
    it for every line. SQLite stores UTC as text, as Django itself would write it."""
    if connection.vendor == "sqlite":
        return lambda value: value.astimezone(UTC).replace(tzinfo=None).isoformat(" ")
    return connection.ops.adapt_datetimefield_value


def _db_text(text: str) -> str:
    # PostgreSQL text cannot hold NUL; the byte is shown as its escape instead.
    return text.replace("\x00", "\\u0000") if "\x00" in text else text


def link_sessions(source: Source, touched: list[Session]) -> None:
    """Links that need more than one file: subagents and forks to their parent, cross-file titles.

    Only what this pass touched is looked at: the touched sessions' own parents, the
    sessions waiting for a touched one as their parent, and the new summary lines.
    """
    paths = {s.path for s in touched}
    names = {Path(path).name for path in paths}
    candidates = {s.id: s for s in touched if s.parent_path}
    # Sessions still without their parent are few (the parent was not indexed yet).
    waiting = Session.objects.filter(source=source, parent__isnull=True).exclude(parent_path="")
    for session in waiting:
        if session.parent_path in paths or Path(session.parent_path).name in names:
            candidates[session.id] = session
    for session in candidates.values():
        _link_parent(source, session)
    _link_summaries(source, [e for s in touched for e in getattr(s, "new_summaries", [])], touched)


def _link_parent(source: Source, session: Session) -> None:
    parents = Session.objects.filter(source=source).exclude(id=session.id)
    parent = (
        parents.filter(path=session.parent_path).first()
        or parents.filter(path__endswith="/" + Path(session.parent_path).name).first()
    )
    tool_id = session.parent_tool_id
    if parent and session.kind == "subagent" and session.agent_id:
        tool_id = parent.extra.get("subagent_links", {}).get(session.agent_id, "") or tool_id
    if (parent and parent.id) != session.parent_id or tool_id != session.parent_tool_id:
        session.parent, session.parent_tool_id = parent, tool_id
        session.save(update_fields=["parent", "parent_tool_id"])


def _link_summaries(source: Source, summaries: list[readers.Entry], touched: list[Session]) -> None:
    """A summary line titles the session that holds its leaf: its own file's, or
    another file's of the same project (Claude Code writes them into the next session)."""
    owner_of = {id(e): s for s in touched for e in getattr(s, "new_summaries", [])}
    for entry in summaries:
        session = owner_of[id(entry)]
        owner = session if session.entries.filter(entry_id=entry.leaf_id).exists() else None
        if owner is None:
            owner = (
                Session.objects.filter(
                    source=source, project_dir=session.project_dir, entries__entry_id=entry.leaf_id
                )
                .exclude(id=session.id)
                .first()
            )
        title = " ".join(entry.summary.split())[:TITLE_LENGTH]
        if owner and title and owner.summary_title != title:
            owner.summary_title = title
            owner.save(update_fields=["summary_title"])
