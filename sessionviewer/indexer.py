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
from pathlib import Path

import orjson
from django.db import connection, transaction
from django.utils import timezone

from sessionviewer import readers
from sessionviewer.models import Entry, Problem, Session, Source
from sessionviewer.roots import RootSpec

log = logging.getLogger(__name__)

HEAD_BYTES = 4096
BATCH = 2000
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
    known = {s.key: s for s in source.sessions.all()}
    touched: list[Session] = []
    for number, session_file in enumerate(found, 1):
        summary.files += 1
        if progress:
            progress(number, len(found), session_file.key)
        try:
            session = index_file(source, session_file, known.get(session_file.key), summary)
        except OSError as error:  # vanished or unreadable between discovery and reading
            summary.errors.append(f"{session_file.path}: {error}")
            continue
        if session is not None:
            touched.append(session)
    gone = set(known) - {f.key for f in found}
    if gone:
        summary.removed += len(gone)
        Session.objects.filter(source=source, key__in=gone).delete()
    if touched or gone:
        link_sessions(source)
    source.indexed_at = timezone.now()
    source.save(update_fields=["indexed_at"])
    summary.sessions += source.sessions.count()
    return source


def _head_hash(path: Path, length: int) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read(length)).hexdigest()


def index_file(source: Source, found: readers.SessionFile, session: Session | None, summary: IndexSummary):
    """Index one file's new lines; returns the session when anything was read."""
    stat = os.stat(found.path)
    if session is not None and (session.file_size, session.file_mtime_ns, session.file_inode) == (
        stat.st_size,
        stat.st_mtime_ns,
        stat.st_ino,
    ):
        return None
    start_offset = start_line = 0
    if session is not None and _can_append(session, found.path, stat):
        start_offset, start_line = session.read_offset, session.read_line
    result = readers.read_session(found.path, found.format, start_offset, start_line)
    summary.opened += 1
    summary.entries += len(result.entries)
    summary.problems += len(result.problems)
    with transaction.atomic():
        if session is None:
            session = Session(source=source, key=found.key)
        elif start_offset == 0:
            _reset(session)
        _apply_discovery(session, found)
        _apply_entries(session, result.entries)
        session.problem_count += len(result.problems)
        session.file_size, session.file_mtime_ns, session.file_inode = (
            stat.st_size,
            stat.st_mtime_ns,
            stat.st_ino,
        )
        session.read_offset, session.read_line = result.end_offset, result.end_line
        session.file_head = _head_hash(found.path, min(HEAD_BYTES, result.end_offset))
        session.indexed_at = timezone.now()
        session.save()
        _write_rows(session, result.entries, result.problems)
    return session


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
    if found.parent_path is not None:
        session.parent_path = str(found.parent_path)
        session.kind = "subagent"
    if found.parent_tool_id:
        session.parent_tool_id = found.parent_tool_id
    session.extra = {**session.extra, **found.extra}


def _apply_entries(session: Session, entries: list[readers.Entry]) -> None:
    """Fold new entries into the session's totals; additive, so appends stay cheap."""
    models_used = list(session.models_used)
    # Every line of a streamed reply repeats the reply's usage: count each reply
    # once, with its last line's figures, even when its lines span two passes.
    last_reply = session.extra.get("last_reply") or {}
    for entry in entries:
        session.entry_count += 1
        if entry.is_conversational and not entry.is_sidechain:
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
        if not session.first_prompt and entry.is_prompt and not entry.is_sidechain:
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
    if (agent_id := extra.get("agentId")) and entry.is_sidechain and not session.agent_id:
        session.agent_id = str(agent_id)


ENTRY_COLUMNS = (
    "session_id",
    "line",
    "offset",
    "entry_id",
    "parent_id",
    "kind",
    "role",
    "timestamp",
    "text",
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
    "raw",
)


def _json(value) -> str:
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _write_rows(session: Session, entries: list[readers.Entry], problems: list[readers.Problem]) -> None:
    """Insert the rows with executemany: model instances and bulk_create cost several
    times the parse itself, and the indexer writes every line of every file."""
    adapt_datetime = connection.ops.adapt_datetimefield_value
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
            _db_text(e.text),
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
            _json(e.extra),
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
    Problem.objects.bulk_create(
        [
            Problem(session=session, line=p.line, offset=p.offset, message=p.message, text=_db_text(p.text))
            for p in problems
        ],
        batch_size=BATCH,
    )


def _db_text(text: str) -> str:
    # PostgreSQL text cannot hold NUL; the byte is shown as its escape instead.
    return text.replace("\x00", "\\u0000") if "\x00" in text else text


def link_sessions(source: Source) -> None:
    """Links that need more than one file: subagents and forks to their parent, cross-file titles."""
    sessions = list(source.sessions.all())
    by_path = {s.path: s for s in sessions}
    by_name: dict[str, Session] = {}
    for s in sessions:
        by_name.setdefault(Path(s.path).name, s)
    for s in sessions:
        parent = None
        if s.parent_path:
            parent = by_path.get(s.parent_path) or by_name.get(Path(s.parent_path).name)
        changed = parent != s.parent if parent else s.parent_id is not None
        if parent and s.kind == "subagent" and s.agent_id:
            tool_id = parent.extra.get("subagent_links", {}).get(s.agent_id, "")
            if tool_id and tool_id != s.parent_tool_id:
                s.parent_tool_id, changed = tool_id, True
        if changed:
            s.parent = parent
            s.save(update_fields=["parent", "parent_tool_id"])
    _link_summaries(source)


def _link_summaries(source: Source) -> None:
    """A summary whose leaf lies in another file of the same project titles that file's session."""
    summaries = Entry.objects.filter(session__source=source, kind="summary").exclude(leaf_id="")
    for entry in summaries.select_related("session").iterator():
        if Entry.objects.filter(session=entry.session, entry_id=entry.leaf_id).exists():
            owner = entry.session
        else:
            owner = Session.objects.filter(
                source=source, project_dir=entry.session.project_dir, entries__entry_id=entry.leaf_id
            ).first()
        if owner:
            title = " ".join(entry.summary.split())[:TITLE_LENGTH]
            if owner.summary_title != title:
                owner.summary_title = title
                owner.save(update_fields=["summary_title"])
