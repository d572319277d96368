"""The index: sources (roots), sessions (one per file), entries (one per line), problems."""

from __future__ import annotations

import functools
import hashlib
import stat
from collections.abc import Callable, Iterable
from pathlib import Path

import orjson
from django.conf import settings
from django.db import models
from django.db.models import F
from django.db.models.base import ModelState
from django.urls import reverse
from django.utils import timezone

from sessionviewer import (
    lookups,  # noqa: F401 - registers `field__among` (lookups.py)
    prices,
    redaction,
)
from sessionviewer.roots import is_inside_roots
from sessionviewer.row_codec import ENTRY_FIELDS as ENTRY_FIELDS  # the column order, written once there
from sessionviewer.row_codec import json_text
from sessionviewer.workspaces.secrets import fingerprint, fingerprinted


class OrjsonField(models.TextField):
    """JSON kept as text and encoded with orjson: the indexer writes millions of these."""

    def from_db_value(self, value, expression, connection):
        return None if value is None else orjson.loads(value)

    def to_python(self, value):
        if isinstance(value, str):
            return orjson.loads(value)
        return value

    def get_prep_value(self, value):
        return None if value is None else json_text(value)


class Source(models.Model):
    """A configured root folder of session files, on the machine whose indexer reads it:
    two machines' ~/.claude/projects are two sources. A root indexed before machines were
    named has machine "" until an indexer claims it (index/passes.py)."""

    machine = models.CharField(max_length=settings.MACHINE_MAX, blank=True, default="")
    path = models.CharField(max_length=1024)
    format = models.CharField(max_length=32)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["machine", "path"], name="source_machine_path")]

    def __str__(self) -> str:
        return f"{self.machine}:{self.path} ({self.format})"

    @classmethod
    def machines(cls) -> list[str]:
        """The machines that have claimed a root, by name: the list shows its Machine column,
        and a project its sessions per machine, once there are two."""
        named = cls.objects.exclude(machine="").values_list("machine", flat=True)
        return sorted(named.order_by().distinct())

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "machine": self.machine,
            "path": self.path,
            "format": self.format,
            "indexed_at": self.indexed_at,
        }


# What display_title reads.
PARENT_TITLE_FIELDS = ("summary_title", "title", "first_prompt", "key")


class Session(models.Model):
    """One transcript file, with what the index knows about it."""

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="sessions")
    format = models.CharField(max_length=32)
    key = models.CharField(max_length=1024)  # stable name within the source
    path = models.CharField(max_length=2048)
    status = models.CharField(max_length=16, default="active")  # active, archived, reset, deleted
    kind = models.CharField(max_length=16, default="main")  # main, subagent, fork
    title = models.CharField(max_length=500, blank=True)
    summary_title = models.CharField(max_length=500, blank=True)  # the agent's own title/summary
    first_prompt = models.CharField(max_length=500, blank=True)
    session_uuid = models.CharField(max_length=128, blank=True)
    project = models.CharField(max_length=1024, blank=True)  # real path, from cwd
    project_dir = models.CharField(max_length=1024, blank=True)  # Claude Code project folder name
    cwd = models.CharField(max_length=1024, blank=True)
    git_branch = models.CharField(max_length=256, blank=True)
    git_branches = OrjsonField(default=list)  # every branch its lines named (fold.py)
    jid = models.CharField(max_length=512, blank=True)
    agent = models.CharField(max_length=256, blank=True)
    channel = models.CharField(max_length=256, blank=True)
    account = models.CharField(max_length=256, blank=True)
    peer_kind = models.CharField(max_length=64, blank=True)
    peer_id = models.CharField(max_length=512, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    parent_path = models.CharField(max_length=2048, blank=True)
    parent_tool_id = models.CharField(max_length=256, blank=True)
    fork_entry_id = models.CharField(max_length=256, blank=True)
    agent_id = models.CharField(max_length=256, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(null=True, blank=True)
    entry_count = models.PositiveIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    problem_count = models.PositiveIntegerField(default=0)
    models_used = OrjsonField(default=list)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cache_read_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    # Tokens by model, provider, day and context size (index/fold.py), and what they cost
    # at the prices of prices.py when indexed: USD (None: none has a price), and the tokens
    # no price covers. `manage.py reprice` prices every session's lines again.
    usage_lines = OrjsonField(default=dict)
    cost = models.FloatField(null=True, blank=True)
    unpriced_tokens = models.BigIntegerField(default=0)
    # Per model: {"tokens": n, "cost": USD or None}, for Activity to split by model.
    model_costs = OrjsonField(default=dict)
    extra = OrjsonField(default=dict)
    # Where the file stood when last read: a pass opens it only when these change.
    file_size = models.BigIntegerField(default=0)
    file_mtime_ns = models.BigIntegerField(default=0)
    file_inode = models.BigIntegerField(default=0)
    file_head = models.CharField(max_length=64, blank=True)  # hash of the first bytes: a rewrite shows
    read_offset = models.BigIntegerField(default=0)  # byte after the last complete line indexed
    read_line = models.PositiveIntegerField(default=0)
    indexed_at = models.DateTimeField(null=True, blank=True)
    # Why the last pass could not index the file ("" once one could): the list shows it.
    index_error = models.TextField(blank=True, default="")
    # With a links mark (PendingWork): the summary lines past this line wait to be linked.
    # Those before it were linked by an earlier pass, and applied again they could bring back
    # an older title than another file's since.
    links_after_line = models.PositiveIntegerField(default=0)
    # Whether a pass has copies to settle or links to make for the session: kept in
    # PendingWork, read into these by the pass that writes the session.
    copies_pending = False
    links_pending = False

    class Meta:
        constraints = [models.UniqueConstraint(fields=["source", "key"], name="session_source_key")]
        indexes = [
            # The list's orders as the ORM asks for them (nulls last, then the id): its pages
            # are read from these without sorting every session (bench/list_pages.py).
            models.Index(F("updated_at").desc(nulls_last=True), F("id").desc(), name="session_updated_id"),
            models.Index(
                F("format"),
                F("updated_at").desc(nulls_last=True),
                F("id").desc(),
                name="session_format_updated_id",
            ),
            models.Index(F("started_at").desc(nulls_last=True), F("id").desc(), name="session_started_id"),
            # Activity's busiest sessions (filters.filter_sessions' token_total).
            models.Index(
                (
                    F("input_tokens") + F("output_tokens") + F("cache_read_tokens") + F("cache_write_tokens")
                ).desc(),
                F("id").desc(),
                name="session_tokens_id",
            ),
            models.Index(fields=["project"], name="session_project"),
            models.Index(fields=["jid"], name="session_jid"),
            models.Index(fields=["path"], name="session_path"),
        ]

    def __str__(self) -> str:
        return self.display_title

    def get_absolute_url(self) -> str:
        return reverse("session-detail", args=[self.id])

    @classmethod
    def unsaved(cls, **values) -> Session:
        """A new session, as Session(**values) makes it, in a tenth of the time.

        Django's __init__ asks each of a session's fifty-odd fields for its default and sets
        each through setattr, and a first index makes a session per file before it reads any
        (45 us each, bench/README.md). Here the constant defaults are taken once a process
        and put in the new instance's dict at once, the callable ones (a dict, a list) made
        anew for each; then the values are set as Django's __init__ sets them. Django's
        pre_init and post_init signals are not sent: nothing listens to them for a session
        (a test checks)."""
        constants, made = _session_defaults()
        session = cls.__new__(cls)
        fields = session.__dict__
        fields.update(constants)
        for name, make in made:
            fields[name] = make()
        session._state = ModelState()
        for name, value in values.items():
            setattr(session, name, value)
        return session

    def file_inside_source(self) -> bool:
        """Whether the session's file (links resolved) still lies under the root it was indexed
        from, however that root was given (settings or `manage.py index PATH`)."""
        return is_inside_roots(Path(self.path), [Path(self.source.path)])

    @property
    def raw_available(self) -> bool:
        """Whether the raw view can serve the file: inside its source and a regular file
        (what the view checks, without opening it). The header shows the link only then."""
        try:
            return self.file_inside_source() and stat.S_ISREG(Path(self.path).stat().st_mode)
        except (OSError, ValueError):
            return False

    @property
    def raw_elsewhere(self) -> bool:
        """Whether the file is on another machine than this host: the header links to the
        page naming it, where the raw view cannot serve it here."""
        machine = self.source.machine
        return bool(machine) and machine != settings.SESSIONVIEWER_MACHINE and not self.raw_available

    @property
    def project_url(self) -> str:
        """The project's page (projects.py), or "" for a session without a project."""
        return reverse("project-detail", args=[self.project]) if self.project else ""

    def starting_call_entry(self) -> str:
        """The id of the parent's entry holding the tool call that started this subagent, or "".

        The parent's rows are narrowed by the call id as text (a LIKE on their blocks,
        within the one session), then read to find the row whose tool call it is."""
        if not (self.parent_id and self.parent_tool_id):
            return ""
        rows = Entry.objects.filter(session_id=self.parent_id, blocks__contains=self.parent_tool_id)
        for entry_id, blocks in rows.order_by("line").values_list("entry_id", "blocks")[:20]:
            if any(b.get("type") == "tool_call" and b.get("call_id") == self.parent_tool_id for b in blocks):
                return entry_id
        return ""

    @property
    def display_title(self) -> str:
        return self.summary_title or self.title or self.first_prompt or self.key

    @classmethod
    def with_source_and_parent(cls) -> models.QuerySet[Session]:
        """Sessions with their source and what their pages show of their parent: its title
        for the header's "Subagent of ..." link (display_title, get_absolute_url). Not the
        parent's usage lines and the rest of its row, which every transcript's read joined
        and Django compiled column by column: 107 columns, where 61 are needed."""
        kept = {"id", *PARENT_TITLE_FIELDS}
        deferred = [f"parent__{f.name}" for f in cls._meta.concrete_fields if f.name not in kept]
        return cls.objects.select_related("source", "parent").defer(*deferred)

    @property
    def unknown_entry_count(self) -> int:
        """Lines of a type the reader does not know: shown as unknown entries (index/fold.py)."""
        counts = self.extra.get("unknown_entries") if isinstance(self.extra, dict) else None
        return sum(n for n in counts.values() if isinstance(n, int)) if isinstance(counts, dict) else 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def apply_prices(self) -> None:
        """Price the usage lines: cost and unpriced_tokens, as the index stores them."""
        self.cost, self.unpriced_tokens, self.model_costs = prices.price_totals(self.usage_lines)

    def cost_to_dict(self) -> dict:
        """How the cost was computed: per model, tokens by kind x rates (prices.price_lines),
        at today's prices; then the subagents, each priced on its own and never in this total."""
        costing = prices.price_lines(self.usage_lines)
        subagents = list(self.children.filter(kind="subagent").order_by("id"))
        priced = [s.cost for s in subagents if s.cost is not None]
        return {
            "session": self.id,
            "title": self.display_title,
            "prices": prices.library_version(),
            "cost": costing["cost"],
            "unpriced_tokens": costing["unpriced_tokens"],
            "models": costing["models"],
            "subagents": [
                {"id": s.id, "title": s.display_title, "cost": s.cost, "unpriced_tokens": s.unpriced_tokens}
                for s in subagents
            ],
            "subagents_cost": sum(priced) if priced else None,
            "copied": self.copied_usage_to_list(),
        }

    def copied_usage_to_list(self) -> list[dict]:
        """The replies this session's file holds copies of, by the session that counts them
        (index/copies.py): their tokens are not in this session's totals."""
        by_session: dict[int, dict] = {}
        for counted_in, tokens in self.copied_usage.order_by("counted_in", "id").values_list(
            "counted_in", "tokens"
        ):
            found = by_session.setdefault(counted_in, {"replies": 0, "tokens": 0})
            found["replies"] += 1
            found["tokens"] += prices.line_tokens(tokens)
        holders = Session.objects.in_bulk(list(by_session))
        return [
            {"id": sid, "title": holders[sid].display_title, **found}
            for sid, found in by_session.items()
            if sid in holders
        ]

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "title": self.display_title,
            "format": self.format,
            "source": self.source_id,
            "machine": self.source.machine,  # "" for a root indexed before machines, not yet claimed
            "key": self.key,
            "path": self.path,
            "status": self.status,
            "kind": self.kind,
            "session_uuid": self.session_uuid,
            "project": self.project,
            "project_dir": self.project_dir,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "jid": self.jid,
            "agent": self.agent,
            "channel": self.channel,
            "account": self.account,
            "peer_kind": self.peer_kind,
            "peer_id": self.peer_id,
            "parent": self.parent_id,
            "parent_tool_id": self.parent_tool_id,
            "fork_entry_id": self.fork_entry_id,
            "agent_id": self.agent_id,
            "started_at": self.started_at,
            "updated_at": self.updated_at,
            "entry_count": self.entry_count,
            "message_count": self.message_count,
            "problem_count": self.problem_count,
            "unknown_entry_count": self.unknown_entry_count,
            "models": self.models_used,
            "tokens": {
                "input": self.input_tokens,
                "output": self.output_tokens,
                "cache_read": self.cache_read_tokens,
                "cache_write": self.cache_write_tokens,
                "total": self.total_tokens,
            },
            # USD; None: no token of it has a price. unpriced_tokens: tokens no price covers.
            "cost": {"usd": self.cost, "unpriced_tokens": self.unpriced_tokens},
            "extra": self.extra,
            "index_error": self.index_error,
        }


@functools.cache
def _session_defaults() -> tuple[dict[str, object], list[tuple[str, Callable[[], object]]]]:
    """Session.unsaved's values by attribute: the constant defaults, and the callable ones,
    which make a value of their own for each session."""
    constants: dict[str, object] = {}
    made: list[tuple[str, Callable[[], object]]] = []
    for field in Session._meta.concrete_fields:
        if field.has_default() and callable(field.default):
            made.append((field.attname, field.default))
        else:
            constants[field.attname] = field.get_default()
    return constants, made


class SessionTally(models.Model):
    """Each facet value's sessions per source and format (and project), and their tokens, messages and cost:
    kept by a trigger on the session table as rows are written, changed and deleted
    (migration 0032 says which shares a session adds), read by tallies.py for the list's
    facets and count and Activity's totals. source_id is no foreign key: the rows of a
    deleted source go to zero as its sessions are deleted, in whatever order."""

    source_id = models.BigIntegerField()
    format = models.CharField(max_length=32)
    # "": the whole index; a project's key: the list's facets among its sessions only.
    project = models.CharField(max_length=1024, blank=True, default="")
    facet = models.CharField(max_length=16)  # "" for the totals
    value = models.TextField()
    sessions = models.BigIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    messages = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0)  # USD of the priced sessions (or turns, for "model_cost")
    priced = models.BigIntegerField(default=0)  # how many of them have a cost
    unpriced_tokens = models.BigIntegerField(default=0)
    undated = models.BigIntegerField(default=0)  # sessions without a start
    # A change not folded into its value's one row yet: PostgreSQL's trigger adds these, and
    # index/tally.py folds them in after each pass. Readers sum every row of a value.
    pending = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["facet", "project", "source_id", "format", "value"],
                condition=models.Q(pending=False),
                name="tally_facet_source_value",
            )
        ]
        indexes = [
            models.Index(fields=["facet", "project", "source_id", "format", "value"], name="tally_rows"),
            # What index/tally.py folds, found without reading the whole tally at every pass.
            models.Index(fields=["id"], condition=models.Q(pending=True), name="tally_pending"),
        ]

    def __str__(self) -> str:
        return f"{self.facet}={self.value!r} in source {self.source_id} ({self.format}): {self.sessions}"


class SessionTallyTotal(models.Model):
    """The tally's folded rows summed over every source and format: what a page filtered by
    no machine, root or format reads (tallies.py), a few hundred rows where the tally holds
    one per value and source (34,000 for the list's facets at 400,000 sessions on 40 roots).
    index/tally.py's fold adds the pending rows it folds here, in the same statement; readers
    add the rows still pending. Anything that writes folded tally rows directly must add
    them here too (migration 0040 sums them once). PostgreSQL only, as the tally."""

    project = models.CharField(max_length=1024, blank=True, default="")
    facet = models.CharField(max_length=16)
    value = models.TextField()
    sessions = models.BigIntegerField(default=0)
    tokens = models.BigIntegerField(default=0)
    messages = models.BigIntegerField(default=0)
    cost = models.FloatField(default=0)
    priced = models.BigIntegerField(default=0)
    unpriced_tokens = models.BigIntegerField(default=0)
    undated = models.BigIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["facet", "project", "value"], name="tally_total_value")
        ]

    def __str__(self) -> str:
        return f"{self.facet}={self.value!r} in every source: {self.sessions}"


class TallyFolds(models.Model):
    """How many folds of the tally's pending rows took away one that counts a session
    (index/tally.py counts them in the fold's own statement). With the pending rows' session
    counts it says whether any session count the tally answers has changed since
    (tallies.counts_version): a web process keeps what it read until then. One row, id 1.
    PostgreSQL only, as the tally."""

    folds = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"the tally folded {self.folds} times"


class Entry(models.Model):
    """One line of a session file, as the reader normalised it."""

    # No index of its own: entry_session_line starts with the session, and serves
    # every lookup by session. A second index cost a cold index its upkeep per row.
    # On PostgreSQL the key is kept without its per-row check: the indexer's writer locks
    # the sessions it writes to, once per group, and triggers refuse a session's delete
    # while entries name it (migration 0042).
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="entries", db_index=False)
    line = models.PositiveIntegerField()
    offset = models.BigIntegerField()
    entry_id = models.CharField(max_length=256)  # the file's own id, or line:<n>
    # None (no parent) differs from "" in some formats' files, so keep NULL.
    parent_id = models.CharField(max_length=256, null=True, blank=True)  # noqa: DJ001
    kind = models.CharField(max_length=64)
    role = models.CharField(max_length=32, blank=True)
    timestamp = models.DateTimeField(null=True, blank=True)
    text = models.TextField(blank=True)  # searchable text
    blocks = OrjsonField(default=list)
    sender = models.CharField(max_length=512, blank=True)
    model = models.CharField(max_length=256, blank=True)
    usage = OrjsonField(default=dict)
    message_id = models.CharField(max_length=256, blank=True)
    subtype = models.CharField(max_length=128, blank=True)
    is_sidechain = models.BooleanField(default=False)
    is_meta = models.BooleanField(default=False)
    logical_parent_id = models.CharField(max_length=256, blank=True)
    first_kept_id = models.CharField(max_length=256, blank=True)
    summary = models.TextField(blank=True)
    leaf_id = models.CharField(max_length=256, blank=True)
    extra = OrjsonField(default=dict)
    raw = OrjsonField(null=True, blank=True)
    # What a thread's layout needs of the text (index.rows.text_facts); 0 in rows
    # indexed before it was kept, whose text is then read instead.
    text_facts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["session", "line"], name="entry_session_line"),
            models.Index(fields=["session", "entry_id"], name="entry_session_id"),
            models.Index(fields=["leaf_id"], name="entry_leaf", condition=~models.Q(leaf_id="")),
            # index/copies.py finds a reply's copies in other files by its message id; the
            # session too, so that counting the sessions holding each reply reads the index alone.
            models.Index(
                fields=["message_id", "session"],
                name="entry_message",
                condition=~models.Q(message_id="") & ~models.Q(usage={}),
            ),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.line} {self.kind}"


class Problem(models.Model):
    """A line the reader could not use: shown on the session with its line number."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="problems", db_index=False)
    line = models.PositiveIntegerField()
    offset = models.BigIntegerField()
    message = models.TextField()
    text = models.TextField(blank=True)

    class Meta:
        indexes = [models.Index(fields=["session", "line"], name="problem_session_line")]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.line} {self.message}"

    def to_dict(self) -> dict:
        return {"line": self.line, "offset": self.offset, "message": self.message, "text": self.text}


class CopiedUsage(models.Model):
    """A reply whose usage another session counts (index/copies.py): a clone, fork or
    older resume copied its line into this session's file. Its tokens are taken off this
    session's totals and kept here, so the cost page can say so and a later pass can
    give them back if the session that counted them goes."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="copied_usage")
    message_id = models.CharField(max_length=256)
    counted_in = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    # prices.line_key of the reply's turn, kept as JSON: a model or provider may hold NUL.
    line_key = OrjsonField(default=str)
    tokens = OrjsonField(default=dict)  # by prices.KINDS

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["session", "message_id"], name="copied_usage_once"),
        ]
        indexes = [models.Index(fields=["message_id"], name="copied_usage_message")]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.message_id} counted in {self.counted_in_id}"


class PendingWork(models.Model):
    """What a pass owes a session it wrote, once its files' groups are committed: the copies
    it may hold settled (index/copies.py), its root's links made (index/links.py). A pass cut
    off first leaves the row, and the next pass does the work; a pass that does it deletes it.

    A table of its own rather than two flags on the session: clearing a flag wrote the whole
    session row again, with every one of its fourteen indexes, on PostgreSQL (0.71 s of a
    cold index's last phase, bench/README.md). Here a row goes in and comes out of a table
    of two columns. The session is not a foreign key in the database: PostgreSQL checks
    one row by row at commit (the entries' key cost a cold index 1.5-2.5 s, migration 0042),
    and a row whose session is gone marks nothing. Django still deletes a session's rows
    with it."""

    COPIES, LINKS = "copies", "links"

    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="pending_work", db_constraint=False, db_index=False
    )
    work = models.CharField(max_length=8, choices=[(COPIES, "copies"), (LINKS, "links")])

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "work"], name="pending_work_once")]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.work}"


class Revision(models.Model):
    """One save of a persona or memory file: who, when, the text before and after."""

    # The machine whose tree was saved (where it is mounted): two machines' trees at one path
    # are two histories. "" until an indexer of the path claims it, as for a MemorySnapshot.
    machine = models.CharField(max_length=settings.MACHINE_MAX, blank=True, default="")
    root = models.CharField(max_length=1024)
    jid = models.CharField(max_length=512, blank=True)  # blank: a global file
    filename = models.CharField(max_length=64)
    user = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    # The text shown (bytes that are not UTF-8 as U+FFFD), and the exact bytes a restore puts
    # back. Revisions saved before 0012 have text only.
    before = models.TextField(null=True, blank=True)  # noqa: DJ001 - None: the file did not exist
    after = models.TextField(null=True, blank=True)  # noqa: DJ001 - None: the file was removed
    before_bytes = models.BinaryField(null=True, blank=True)
    after_bytes = models.BinaryField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["machine", "root", "jid", "filename", "-created_at"], name="revision_file")
        ]
        permissions = [
            ("view_workspace", "Can read personas, memory and workspaces"),
            ("edit_workspace", "Can edit personas and memory, and run /new and /forget"),
        ]

    def __str__(self) -> str:
        return f"{self.jid or 'global'}/{self.filename} @ {self.created_at:%Y-%m-%d %H:%M}"

    @staticmethod
    def text_of(data: bytes | None) -> str | None:
        return None if data is None else data.decode("utf-8", errors="replace")

    @classmethod
    def of_bytes(cls, before: bytes | None, after: bytes | None, **fields) -> Revision:
        """A revision keeping both sides exactly, and their text for pages and diffs."""
        return cls(
            before=cls.text_of(before),
            after=cls.text_of(after),
            before_bytes=before,
            after_bytes=after,
            **fields,
        )

    @classmethod
    def record(
        cls,
        before: bytes | None,
        after: bytes | None,
        *,
        machine: str,
        root: str,
        jid: str,
        filename: str,
        user,
        action: str | None = None,
        **detail,
    ) -> Revision:
        """Save a change to one file of machine's tree: its revision, and the audit event naming
        it. action None: "create" or "edit", by whether the file existed. The caller holds the
        transaction."""
        fields = {"machine": machine, "root": str(root), "jid": jid, "filename": filename, "user": user}
        revision = cls.of_bytes(before, after, **fields)
        revision.save()
        MemorySnapshot.of_edit(revision, after)
        action = action or ("create" if before is None else "edit")
        AuditEvent.record(
            user, action, root, jid, machine=machine, file=filename, revision=revision.id, **detail
        )
        return revision

    @classmethod
    def of_root(cls, machine: str, root: str | Path) -> models.QuerySet[Revision]:
        """The saves made in one machine's tree at root."""
        return cls.objects.filter(machine=machine, root=str(root))

    @classmethod
    def history_of(cls, machine: str, root: str, jid: str, filename: str, limit: int = 20) -> models.QuerySet:
        """The latest revisions of one file of machine's tree, newest first."""
        revisions = cls.of_root(machine, root).filter(jid=jid, filename=filename).select_related("user")
        return revisions.order_by("-created_at", "-id")[:limit]

    def content(self, side: str) -> str | bytes | None:
        """What a restore of one side ("before" or "after") writes: the exact bytes, or the
        text of a revision saved before bytes were kept; None: no file."""
        data = getattr(self, f"{side}_bytes")
        return bytes(data) if data is not None else getattr(self, side)

    def is_utf8(self, side: str) -> bool:
        data = getattr(self, f"{side}_bytes")
        if data is None:
            return True
        try:
            bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    @property
    def before_is_utf8(self) -> bool:
        return self.is_utf8("before")

    @property
    def after_is_utf8(self) -> bool:
        return self.is_utf8("after")

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "machine": self.machine,  # "" for a save made before machines, not yet claimed
            "root": self.root,
            "jid": self.jid,
            "filename": self.filename,
            "user": self.user.get_username() if self.user else None,
            "created_at": self.created_at,
        }


class AuditEvent(models.Model):
    """Who did what, when, to which JID: persona edits, /new, /forget and purges."""

    user = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=32)  # edit, create, remove, restore, new, forget, purge
    # The machine whose tree (or, for a purge, whose history) it changed: "" until an indexer
    # of the path claims it, as for a MemorySnapshot.
    machine = models.CharField(max_length=settings.MACHINE_MAX, blank=True, default="")
    root = models.CharField(max_length=1024)
    jid = models.CharField(max_length=512, blank=True)
    detail = OrjsonField(default=dict)

    class Meta:
        indexes = [
            models.Index(fields=["-created_at"], name="audit_created"),
            models.Index(fields=["machine", "root"], name="audit_machine_root"),
        ]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.action} {self.jid}"

    @classmethod
    def record(cls, user, action: str, root: str, jid: str, *, machine: str, **detail) -> AuditEvent:
        return cls.objects.create(
            user=user, action=action, machine=machine, root=str(root), jid=jid, detail=detail
        )

    @classmethod
    def of_root(cls, machine: str, root: str | Path) -> models.QuerySet[AuditEvent]:
        """What was done to one machine's tree at root."""
        return cls.objects.filter(machine=machine, root=str(root))

    @classmethod
    def record_forget(
        cls, user, root: str, jid: str, names: list[str], files: list[dict], *, machine: str
    ) -> AuditEvent:
        """/forget in machine's tree, before anything is deleted: what it erases (names, sizes
        and hashes, never content), and the erasure of the revisions and snapshots held of those
        files. The caller holds the transaction, and commits it before deleting."""
        revisions = Revision.of_root(machine, root).filter(jid=jid, filename__in=names)
        erased_revisions, _ = revisions.delete()
        erased_snapshots = MemorySnapshot.erase(machine, root, jid, list(names), user)
        return cls.record(
            user,
            "forget",
            root,
            jid,
            machine=machine,
            erased=list(names),
            files=files,
            revisions=erased_revisions,
            snapshots=erased_snapshots,
        )

    @classmethod
    def filtered(cls, root: str = "", jid: str = "", action: str = "", machine: str = "") -> models.QuerySet:
        """Events newest first, with only the given root, JID, action and machine (blank: any)."""
        events = cls.objects.select_related("user").order_by("-created_at", "-id")
        filters = {"root": root, "jid": jid, "action": action, "machine": machine}
        return events.filter(**{name: value for name, value in filters.items() if value})

    @classmethod
    def recorded_roots(cls) -> list[str]:
        return sorted(cls.objects.order_by().values_list("root", flat=True).distinct())

    @classmethod
    def recorded_machines(cls) -> list[str]:
        """The machines events were recorded on: the machine filter's choices."""
        return sorted(cls.objects.exclude(machine="").order_by().values_list("machine", flat=True).distinct())

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "user": self.user.get_username() if self.user else None,
            "created_at": self.created_at,
            "action": self.action,
            "machine": self.machine,  # "" for an event recorded before machines, not yet claimed
            "root": self.root,
            "jid": self.jid,
            "detail": self.detail,
        }


class SessionFinding(models.Model):
    """A likely secret in one block of an indexed entry (index/findings.py): where, what kind,
    masked, and its keyed fingerprint (workspaces.secrets.fingerprint, as the memory findings
    keep it). The value itself is never stored: a reveal scans the entry's block again."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="findings", db_index=False)
    # The session's source, kept beside its findings: the list's "possible secrets" facet
    # filtered by a machine or root counts the findings of its sources alone, not an EXISTS
    # per session of the filter (filters.count_with_possible_secrets, migration 0039). No
    # foreign key, as the tally's: a session never changes source (a root a machine claims
    # keeps its Source row, index/passes.py _claimed_source), and goes with its findings.
    source_id = models.BigIntegerField()
    line = models.PositiveIntegerField()  # the entry's line in its file
    entry_id = models.CharField(max_length=256)  # the entry's id as the index stores it
    block = models.PositiveIntegerField()  # the index of the block in the entry's blocks
    kind = models.CharField(max_length=32)
    masked = models.TextField()
    fingerprint = models.CharField(max_length=64)

    class Meta:
        indexes = [
            models.Index(fields=["session", "line"], name="finding_session_line"),
            models.Index(fields=["fingerprint"], name="finding_fingerprint"),
            models.Index(fields=["source_id", "session"], name="finding_source_session"),
        ]
        permissions = [
            ("reveal_secret", "Can reveal a possible secret's value on a transcript"),
            ("dismiss_secret", "Can mark a possible secret as not a secret, and undo it"),
        ]

    def __str__(self) -> str:
        return f"{self.session_id}:{self.line} {self.kind} {self.masked}"

    def to_dict(self) -> dict:
        return {
            "line": self.line,
            "entry_id": self.entry_id,
            "block": self.block,
            "kind": self.kind,
            "masked": self.masked,
            "fingerprint": self.fingerprint,
        }


class SecretDismissal(models.Model):
    """A fingerprint someone marked "not a secret": it applies wherever the value appears.
    Undone by deleting it; both are audited (AuditEvent "dismiss_secret", "undismiss_secret")."""

    fingerprint = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=32)
    by = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"{self.kind} {self.fingerprint[:12]} dismissed"

    @classmethod
    def dismiss(cls, user, fingerprint: str, kind: str) -> SecretDismissal:
        """Mark a fingerprint not a secret, everywhere; the caller holds the transaction."""
        dismissal, created = cls.objects.get_or_create(
            fingerprint=fingerprint, defaults={"kind": kind, "by": user}
        )
        if created:
            AuditEvent.record(user, "dismiss_secret", "", "", machine="", fingerprint=fingerprint, kind=kind)
        return dismissal

    @classmethod
    def dismissed(cls, fingerprints: Iterable[str]) -> set[str]:
        """Those of the fingerprints someone marked not a secret (no query for none)."""
        fingerprints = set(fingerprints)
        if not fingerprints:
            return set()
        return set(cls.objects.filter(fingerprint__in=fingerprints).values_list("fingerprint", flat=True))

    @classmethod
    def undo(cls, user, fingerprint: str) -> bool:
        """Take the mark back; False: there was none."""
        dismissal = cls.objects.filter(fingerprint=fingerprint).first()
        if dismissal is None:
            return False
        dismissal.delete()
        AuditEvent.record(
            user, "undismiss_secret", "", "", machine="", fingerprint=fingerprint, kind=dismissal.kind
        )
        return True


class ThreadSnapshot(models.Model):
    """A session's thread as built by threads.build_thread, without the entries' content:
    a long transcript's first screen then loads only the rows it shows. One per leaf
    shown ("" for the active thread). Derived data, rebuilt whenever the session's
    file has moved on (version)."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="snapshots")
    leaf = models.CharField(max_length=256, blank=True)
    version = models.CharField(max_length=128)
    data = OrjsonField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["session", "leaf"], name="snapshot_session_leaf")]

    def __str__(self) -> str:
        return f"thread of {self.session_id} to {self.leaf or 'the active leaf'} at {self.version}"


class ThreadPiece(models.Model):
    """snapshots.PIECE items of a thread snapshot, in thread order: their lines, which are noise,
    their tool calls' results, their compaction summaries. The snapshot itself keeps what
    does not grow with the thread, so a first screen reads only the pieces it shows, and an
    append rewrites only the last ones."""

    snapshot = models.ForeignKey(ThreadSnapshot, on_delete=models.CASCADE, related_name="pieces")
    number = models.IntegerField()
    data = OrjsonField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["snapshot", "number"], name="piece_snapshot_number")]

    def __str__(self) -> str:
        return f"piece {self.number} of snapshot {self.snapshot_id}"


class MemorySnapshot(models.Model):
    """One state of a memory or persona file: what the indexer found on disk after a change,
    or what an editor save, restore or remove left (with its revision). The bytes are kept
    exactly; files/ is kept by name, size and hash only. The previous snapshot of the same
    file is what a change is compared with, so several changes between two passes are one.

    who: "outside" (found changed on disk: most often the agent), "editor" (user, revision),
    "forget" (/forget from the app erased it: the bytes are gone), or "first" (the first
    time the file was seen: what came before is unknown)."""

    OUTSIDE, EDITOR, FORGET, FIRST = "outside", "editor", "forget", "first"

    # The machine whose tree it is: two machines' trees at one path are two histories. ""
    # until an indexer of the path claims it (index/memory.py), as for a Source.
    machine = models.CharField(max_length=settings.MACHINE_MAX, blank=True, default="")
    root = models.CharField(max_length=1024)
    jid = models.CharField(max_length=512, blank=True)  # blank: a global persona file
    filename = models.CharField(max_length=300)  # "memory.md", "files/<name>"
    who = models.CharField(max_length=16)
    user = models.ForeignKey("auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    revision = models.ForeignKey(
        Revision, null=True, blank=True, on_delete=models.SET_NULL, related_name="snapshots"
    )
    # When the change happened: the file's mtime, or the save's time (editor, /forget), or
    # the pass's time for a file found gone.
    changed_at = models.DateTimeField()
    recorded_at = models.DateTimeField(auto_now_add=True)
    exists = models.BooleanField(default=True)
    size = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, blank=True)
    content = models.BinaryField(null=True, blank=True)  # None: gone, erased, or a files/ entry
    # Where the file stood when last looked at: a pass reads it only when these change.
    mtime_ns = models.BigIntegerField(default=0)
    inode = models.BigIntegerField(default=0)
    current = models.BooleanField(default=True)  # the latest snapshot of its file
    # The secrets report on these bytes, as they were recorded (secrets.fingerprinted): masked,
    # placed, fingerprinted. None: recorded before findings were kept, scanned when first needed.
    findings = OrjsonField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["machine", "root", "jid", "-changed_at"], name="snapshot_jid_changed"),
            models.Index(fields=["machine", "root", "current"], name="snapshot_root_current"),
            models.Index(fields=["-changed_at"], name="snapshot_changed"),
        ]

    def __str__(self) -> str:
        return f"{self.jid or 'global'}/{self.filename} @ {self.changed_at:%Y-%m-%d %H:%M:%S} by {self.who}"

    @property
    def text(self) -> str | None:
        return None if self.content is None else bytes(self.content).decode("utf-8", errors="replace")

    def who_label(self) -> str:
        if self.who == self.EDITOR:
            return self.user.get_username() if self.user else "an editor (user since deleted)"
        return {self.OUTSIDE: "outside the app", self.FORGET: "/forget", self.FIRST: "first seen"}[self.who]

    @classmethod
    def of_edit(cls, revision: Revision, after: bytes | None) -> MemorySnapshot:
        """The state an editor save, restore or remove leaves: recorded with its revision, in the
        same transaction, so the next pass finds the file as known and records nothing more."""
        return cls.change(
            machine=revision.machine,
            root=revision.root,
            jid=revision.jid,
            filename=revision.filename,
            who=cls.EDITOR,
            user=revision.user,
            revision=revision,
            changed_at=revision.created_at,
            exists=after is not None,
            size=len(after or b""),
            sha256=hashlib.sha256(after).hexdigest() if after is not None else "",
            content=after,
        )

    @classmethod
    def of_root(cls, machine: str, root: str | Path) -> models.QuerySet[MemorySnapshot]:
        """The history of one machine's tree at root."""
        return cls.objects.filter(machine=machine, root=str(root))

    @classmethod
    def claim(cls, machine: str, root: str) -> None:
        """Give machine the history of root recorded before machines were named (snapshots,
        editor revisions, audit events): the first indexer to snapshot the path claims it, as
        one claims a Source (index/passes.py). Another machine's tree at the path stays its own."""
        for model in (cls, Revision, AuditEvent):
            model.of_root("", root).update(machine=machine)

    @classmethod
    def change(cls, **fields) -> MemorySnapshot:
        """Save a new state of one file, which becomes its current one, with its findings."""
        files = cls.of_root(fields["machine"], fields["root"]).filter(
            jid=fields["jid"], filename=fields["filename"]
        )
        files.filter(current=True).update(current=False)
        state = cls.new_state(**fields)
        state.save(force_insert=True)
        return state

    @classmethod
    def new_state(cls, **fields) -> MemorySnapshot:
        """A file's new current state, unsaved, with its findings: the caller retires the
        state it replaces (change() one file, the indexer a root's files at once)."""
        return cls(current=True, findings=cls.scan(fields.get("content"), fields["jid"]), **fields)

    @staticmethod
    def scan(content: bytes | None, jid: str) -> list[dict] | None:
        """The secrets report on one state's bytes; a JID's own address is not a finding."""
        if content is None:
            return None
        text = bytes(content).decode("utf-8", errors="replace")
        return fingerprinted(
            text,
            (jid,) if jid else (),
            settings.SECRET_KEY,
            high_entropy=settings.SESSIONVIEWER_SECRETS_HIGH_ENTROPY,
        )

    def findings_now(self) -> list[dict]:
        """findings, scanning (and keeping) them for a state recorded before they were kept."""
        if self.findings is None and self.content is not None:
            self.findings = self.scan(self.content, self.jid)
            MemorySnapshot.objects.filter(id=self.id).update(findings=self.findings)
        return self.findings or []

    @classmethod
    def erase(cls, machine: str, root: str, jid: str, names: list[str], user=None) -> int:
        """/forget: erase every snapshot of the JID's forgotten files in machine's tree (names
        as forget_plan gives them: "files/" stands for the folder), leaving one marker per file
        saying /forget erased it, with no content. Returns how many snapshots went."""
        snapshots = cls.of_root(machine, root).filter(jid=jid)
        query = models.Q(filename__in=[n for n in names if not n.endswith("/")])
        for folder in (n for n in names if n.endswith("/")):
            query |= models.Q(filename__startswith=folder)
        erased = snapshots.filter(query)
        filenames = sorted(set(erased.filter(exists=True, current=True).values_list("filename", flat=True)))
        count, _ = erased.delete()
        now = timezone.now()
        for filename in filenames:
            cls.objects.create(
                machine=machine, root=str(root), jid=jid, filename=filename, who=cls.FORGET, user=user,
                changed_at=now, exists=False, current=True,
            )  # fmt: skip
        return count


class KeyCheck(models.Model):
    """What SECRET_KEY makes of a fixed text, kept once for the whole index: finding
    fingerprints are keyed with SECRET_KEY, so an indexer or web host with another key would
    fingerprint the same value differently and split its findings. mismatch() says so."""

    purpose = models.CharField(max_length=64, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)

    FINGERPRINTS = "finding fingerprints"

    def __str__(self) -> str:
        return self.purpose

    @classmethod
    def mismatch(cls) -> str:
        """ "" when this process's SECRET_KEY is the index's (the first to ask records its
        own), else what is wrong and what to do."""
        digest = fingerprint("key check", cls.FINGERPRINTS, settings.SECRET_KEY)
        check, _ = cls.objects.get_or_create(purpose=cls.FINGERPRINTS, defaults={"digest": digest})
        if check.digest == digest:
            return ""
        return (
            "SECRET_KEY is not the one this index's finding fingerprints were made with "
            f"(recorded {check.created_at:%Y-%m-%d %H:%M} UTC): every indexer and web host of one "
            "index needs the same SECRET_KEY, or the same finding is counted as two"
        )


class SharedSession(models.Model):
    """A read-only link to one session's redacted export, for people without an account.

    It holds the page made when it was created (zstd-compressed), never the live session: the
    link serves those bytes and nothing else. The token is kept only as its SHA-256, so the
    database alone cannot open a link."""

    token_hash = models.CharField(max_length=64, unique=True)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="shares")
    created_by = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey("auth.User", null=True, on_delete=models.SET_NULL, related_name="+")
    page = models.BinaryField()  # the redacted HTML export, zstd-compressed
    page_bytes = models.PositiveIntegerField(default=0)  # its size uncompressed
    policy = models.TextField()  # its Content-Security-Policy (its <style>'s hash when made)
    redacted = OrjsonField(default=dict)  # kind -> how many values were taken out

    class Meta:
        permissions = [("share_session", "Can make, list and revoke share links to sessions")]
        indexes = [models.Index(fields=["session", "-created_at"], name="share_session_created")]

    def __str__(self) -> str:
        return f"share {self.id} of session {self.session_id}"

    @staticmethod
    def hash_of(token: str) -> str:
        return hashlib.sha256(token.encode()).hexdigest()

    @property
    def state(self) -> str:
        if self.revoked_at is not None:
            return "revoked"
        return "expired" if self.expires_at <= timezone.now() else "active"

    @property
    def redacted_text(self) -> str:
        return redaction.counts_text(self.redacted) or "nothing"

    def to_dict(self) -> dict:
        """The link as the review lists it: never its token, which only its maker saw once."""
        return {
            "id": self.id,
            "state": self.state,
            "created_at": self.created_at,
            "created_by": self.created_by.get_username() if self.created_by else None,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "redacted": self.redacted,  # kind -> how many values were taken out
            "redacted_text": self.redacted_text,
            "page_bytes": self.page_bytes,
        }

    def open_within_limit(self, limit: int) -> bool:
        """Count one opening in this minute's row; False past limit. In the database, so that
        the limit holds across web servers: the row's count rises by one in one statement."""
        window = timezone.now().replace(second=0, microsecond=0)
        opens, _ = ShareOpens.objects.get_or_create(share=self, window=window)
        ShareOpens.objects.filter(id=opens.id).update(count=F("count") + 1)
        ShareOpens.objects.filter(share=self, window__lt=window).delete()
        return ShareOpens.objects.get(id=opens.id).count <= limit


class ShareOpens(models.Model):
    """How often a share link was opened in one minute: its rate limit's counter."""

    share = models.ForeignKey(SharedSession, on_delete=models.CASCADE, related_name="+")
    window = models.DateTimeField()
    count = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["share", "window"], name="share_opens_window")]

    def __str__(self) -> str:
        return f"{self.share_id} {self.window:%H:%M} {self.count}"
