"""Folding a file's entries into its session: counts, tokens, models, titles, metadata.

SessionState has the same names as the Session model's fields, so the indexer copies
them across by name. No Django: the reading process folds as it reads.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from sessionviewer import prices, readers
from sessionviewer.row_codec import db_text

TITLE_LENGTH = 200
# Kinds whose summary is the session's own title. Claude's summary lines are
# placed by their leafUuid instead, when sessions are linked.
TITLE_KINDS = {"summary", "custom-title", "ai-title", "title", "session_info"}
# In a session's extra: its unknown entries, counted by their type (UNTYPED: a line without one).
UNKNOWN_ENTRIES = "unknown_entries"
UNTYPED = "(no type)"
# Formats whose working directory is the session's project.
# A user's home at the start of a path: Linux, macOS, root's, and Windows' (either separator).
_HOME = re.compile(r"(?:/home/[^/]+|/Users/[^/]+|/root)(?=/|$)")
_WINDOWS_HOME = re.compile(r"[A-Za-z]:[\\/]Users[\\/][^\\/]+(?=[\\/]|$)")


def fold_home(path: str) -> str:
    """A project's key: its path with the user's home as "~", so that /home/dev/work/shop on
    one machine and /Users/dev/work/shop on another are one project (C:\\Users\\dev\\shop is
    ~/shop). A path outside a home is kept as it is."""
    if match := _HOME.match(path):
        return "~" + path[match.end() :]
    if match := _WINDOWS_HOME.match(path):
        return "~" + path[match.end() :].replace("\\", "/")
    return path


@dataclass
class SessionState:
    """What reading a file's lines changes on its session: the same names as the
    Session model's fields, so the indexer copies them across by name."""

    format: str
    kind: str = "main"
    entry_count: int = 0
    message_count: int = 0
    problem_count: int = 0
    started_at: datetime | None = None
    updated_at: datetime | None = None
    models_used: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    # Tokens by kind and turns, per prices.line_key (model, provider, day, context size):
    # what prices.price_lines prices into cost and unpriced_tokens.
    usage_lines: dict[str, dict[str, int]] = field(default_factory=dict)
    first_prompt: str = ""
    summary_title: str = ""
    cwd: str = ""
    project: str = ""
    git_branch: str = ""  # the branch of its last line that named one
    git_branches: list[str] = field(default_factory=list)  # every branch its lines named, in order
    session_uuid: str = ""
    jid: str = ""
    parent_path: str = ""
    fork_entry_id: str = ""
    agent_id: str = ""
    peer_kind: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, session) -> SessionState:
        return cls(**{name: getattr(session, name) for name in STATE_FIELDS})

    def copy_to(self, session) -> None:
        for name in STATE_FIELDS:
            setattr(session, name, getattr(self, name))


STATE_FIELDS = tuple(f.name for f in fields(SessionState))


def fold_entries(state: SessionState, entries: list[readers.Entry]) -> None:
    """Fold new entries into the session's totals; additive, so appends stay cheap."""
    models_used = list(state.models_used)
    # Every line of a streamed reply repeats the reply's usage: count each reply once,
    # with its last line's figures, even when its lines span two passes or another
    # reply's lines come between (a sidechain written into the same file, or Claude
    # Code writing a reply again later). The last RECENT_REPLIES replies are
    # remembered for that: a bounded window, so an append stays as cheap as ever.
    # Copies of a reply in another file are counted once by index/copies.py.
    recent = _recent_replies(state.extra)
    # The model of the latest line that named one: a usage line that names none (Codex's
    # token counts; the model is on the turn's turn_context) is that model's.
    model_now = state.extra.get("model_now", "")
    lines = {key: dict(tokens) for key, tokens in state.usage_lines.items()}
    rules = readers.format_of(state.format)
    harness_line = rules.harness_line  # a user line the format's harness wrote titles nothing
    # A format whose prompts carry more than what the person wrote says what to title with.
    prompt_text = rules.prompt_text
    # And one whose lines name models that did not answer (a header's) says which did.
    model_answered = rules.model_answered
    state.entry_count += len(entries)
    if stamps := [e.timestamp for e in entries if e.timestamp]:
        if state.started_at is not None:
            stamps.append(state.started_at)
        if state.updated_at is not None:
            stamps.append(state.updated_at)
        state.started_at, state.updated_at = min(stamps), max(stamps)
    for entry in entries:
        # A subagent's own file is all sidechain: there, sidechain lines are the conversation.
        main_thread = not entry.is_sidechain or state.kind == "subagent"
        if entry.is_conversational and main_thread:
            state.message_count += 1
        # Meta rows (gateway-injected turns, "<synthetic>" models) are not models the session used.
        if (
            entry.model
            and not entry.is_meta
            and entry.model not in models_used
            and not entry.model.startswith("<")
            and (model_answered is None or model_answered(entry))
        ):
            models_used.append(entry.model)
        if entry.model and not entry.model.startswith("<"):
            model_now = entry.model
        if entry.usage:
            if not entry.model and model_now:
                entry.model = model_now  # kept on the row, so a page and copies.py price it alike
            # Every usage has its line, so the lines add up to the token totals.
            key, tokens = turn_line(entry)
            if entry.message_id and (counted := recent.pop(entry.message_id, None)):
                _add_line(lines, counted[0], counted[1], -1)
                _add_usage(state, usage_of(counted[1]), -1)
            _add_line(lines, key, tokens, 1)
            _add_usage(state, usage_of(tokens), 1)
            if entry.message_id:
                recent[entry.message_id] = (key, tokens)
                if len(recent) > RECENT_REPLIES:
                    del recent[next(iter(recent))]
        typed = (
            not state.first_prompt
            and entry.is_prompt
            and main_thread
            and (harness_line is None or harness_line(entry) is None)
        )
        if typed and (prompt := title_of(prompt_text(entry) if prompt_text else entry.text)):
            state.first_prompt = prompt
        if entry.kind in TITLE_KINDS and entry.kind != "summary" and entry.summary:
            state.summary_title = title_of(entry.summary)
        _fold_metadata(state, entry, rules)
    state.models_used = models_used
    state.usage_lines = {key: tokens for key, tokens in lines.items() if tokens.get("turns")}
    extra = dict(state.extra)
    extra.pop("last_reply", None)  # the one-reply window of index layouts before this one
    if model_now:
        extra["model_now"] = model_now
    if recent:
        extra["recent_replies"] = [
            [mid, key, *(tokens[k] for k in prices.KINDS)] for mid, (key, tokens) in recent.items()
        ]
    # Lines of a type the reader does not know: kept and shown, and counted by type, so
    # the list and the header can say a session holds some.
    unknown = [entry.subtype or UNTYPED for entry in entries if entry.kind == readers.RAW]
    if unknown:
        counts = dict(extra.get(UNKNOWN_ENTRIES, {}))
        for kind in unknown:
            key = db_text(kind[:128])
            counts[key] = counts.get(key, 0) + 1
        extra[UNKNOWN_ENTRIES] = counts
    if rules.subagent_links is not None and (found := rules.subagent_links(entries)):
        extra["subagent_links"] = {**found, **extra.get("subagent_links", {})}
    state.extra = extra


BRANCHES_KEPT = 50  # a session's git branches kept, in the order its lines named them
RECENT_REPLIES = 32  # replies remembered per session to count a repeated one once


def _recent_replies(extra: dict) -> dict[str, tuple[str, dict[str, int]]]:
    """The session's last replies with usage, oldest first: message id -> (line key, tokens)."""
    recent = {
        mid: (key, dict(zip(prices.KINDS, counts, strict=True)))
        for mid, key, *counts in extra.get("recent_replies") or ()
    }
    if not recent and (last := extra.get("last_reply")) and "line" in last:
        recent[last["id"]] = (last["line"], last["tokens"])
    return recent


def usage_of(tokens: dict[str, int]) -> dict[str, int]:
    """A usage line's tokens (turn_line) as the session's four token totals count them."""
    return {
        "input": tokens.get("input", 0),
        "output": tokens.get("output", 0),
        "cache_read": tokens.get("cache_read", 0),
        "cache_write": tokens.get("cache_write_5m", 0) + tokens.get("cache_write_1h", 0),
    }


def title_of(text: str) -> str:
    """A session title from a prompt or a summary: whitespace folded, cut to TITLE_LENGTH
    on a word boundary (cut_title).

    Folded from a growing head of the text, not the whole: a pasted log of 60 MB split
    into words took eight times its size (bench/README.md). The head's folding is the
    start of the whole's, so once it is long enough it is the title.
    """
    head = TITLE_LENGTH * 4
    while True:
        title = " ".join(text[:head].split())
        if len(title) > TITLE_LENGTH or head >= len(text):
            return cut_title(title, TITLE_LENGTH)
        head *= 4


def cut_title(title: str, limit: int) -> str:
    """title at most limit characters long: cut after its last whole word that fits, with
    an ellipsis; cut inside a word only when no word boundary lies in its second half
    (a long path, a language written without spaces)."""
    if len(title) <= limit:
        return title
    head = title[: limit - 1]
    if title[limit - 1].isspace():  # the cut falls just after a word
        return head.rstrip() + "…"
    space = head.rfind(" ")
    if space >= limit // 2:
        head = head[:space]
    return head.rstrip() + "…"


def _add_usage(state: SessionState, usage: dict, sign: int) -> None:
    state.input_tokens += sign * int(usage.get("input") or 0)
    state.output_tokens += sign * int(usage.get("output") or 0)
    state.cache_read_tokens += sign * int(usage.get("cache_read") or 0)
    state.cache_write_tokens += sign * int(usage.get("cache_write") or 0)


def turn_line(entry: readers.Entry) -> tuple[str, dict[str, int]]:
    """One turn's usage line key (prices.line_key) and its tokens by prices.KINDS: cache
    writes split by how long they are kept, where the reader knew (Claude Code's
    cache_write_1h); the rest are 5-minute writes."""
    usage = entry.usage
    written = int(usage.get("cache_write") or 0)
    hour = min(max(int(entry.extra.get("cache_write_1h") or 0), 0), written)
    tokens = {
        "input": int(usage.get("input") or 0),
        "output": int(usage.get("output") or 0),
        "cache_read": int(usage.get("cache_read") or 0),
        "cache_write_5m": written - hour,
        "cache_write_1h": hour,
    }
    context = prices.context_class(tokens["input"] + tokens["cache_read"] + written)
    try:
        day = entry.timestamp.astimezone(UTC).date().isoformat() if entry.timestamp else ""
    except OverflowError:  # a year at the calendar's edge
        day = ""
    provider = str(entry.extra.get("provider") or "")
    return prices.line_key(entry.model, provider, day, context), tokens


def _add_line(lines: dict[str, dict[str, int]], key: str, tokens: dict[str, int], sign: int) -> None:
    line = lines.setdefault(key, {})
    for kind, count in tokens.items():
        line[kind] = line.get(kind, 0) + sign * count
    line["turns"] = line.get("turns", 0) + sign


def _fold_metadata(state: SessionState, entry: readers.Entry, rules: readers.Format) -> None:
    # Each value as the index stores it (db_text), so that queries with it meet the stored one.
    extra = entry.extra
    if cwd := extra.get("cwd"):
        cwd = db_text(str(cwd)[:1024])
        if cwd != state.cwd or not state.project:  # most lines: the same directory again
            state.cwd = cwd
            if rules.makes_projects:
                state.project = fold_home(cwd)
    if branch := extra.get("gitBranch") or extra.get("git_branch"):
        branch = db_text(str(branch)[:256])
        if branch != state.git_branch or not state.git_branches:  # most lines: the same branch again
            state.git_branch = branch
            if branch not in state.git_branches and len(state.git_branches) < BRANCHES_KEPT:
                state.git_branches = [*state.git_branches, branch]
    uuid = extra.get("sessionId") or extra.get("session_id")
    if not uuid and entry.kind == readers.HEADER:
        uuid = extra.get("id")
    if uuid and not state.session_uuid:
        state.session_uuid = db_text(str(uuid)[:128])
    if jid := extra.get("jid"):
        state.jid = state.jid or db_text(str(jid))
    # Go agent forks name their parent on a branch entry, pi transcripts on the header.
    if entry.kind in (readers.BRANCH, readers.HEADER):
        if parent := extra.get("parent_session_path"):
            state.parent_path = db_text(str(parent))
            state.kind = "fork"
        if fork := extra.get("fork_entry_id"):
            state.fork_entry_id = db_text(str(fork))
    room_sender = rules.room_sender
    if room_sender is not None and entry.sender and room_sender(entry.sender) and not state.extra.get("room"):
        state.extra = {**state.extra, "room": True}
        state.peer_kind = "group"
    if (agent_id := extra.get("agentId")) and entry.is_sidechain and not state.agent_id:
        state.agent_id = db_text(str(agent_id))
