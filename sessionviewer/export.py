"""A session as a file to keep: self-contained HTML (styles inlined, no scripts) or Markdown.

Both show the latest branch as the page shows it, every compaction in place: the noise left
out unless asked for (show_all), one reply one message, tool calls as their views. Both are
made as parts, CHUNK messages at a time (the view streams them), so that a session of any
size costs a worker about one chunk's entries.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import html
import json
import re
import threading
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.db.models import Count, Max
from django.template.loader import get_template, render_to_string

from sessionviewer import readers, redaction, render, transcripts
from sessionviewer.index import findings
from sessionviewer.models import Session
from sessionviewer.row_codec import stored_id
from sessionviewer.templatetags.transcript import summary_in_banner
from sessionviewer.transcripts import layout, tools
from sessionviewer.transcripts.snapshots import session_version

_STYLES = ("css/app.css", "css/tools.css", "css/pygments.css", "css/transcript.css", "css/print.css")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def filename(session: Session, extension: str) -> str:
    stem = _UNSAFE_NAME.sub("-", Path(session.path).stem or session.key)[:80].strip("-.") or "session"
    return f"{stem}.{extension}"


def redacted_filename(session: Session, extension: str) -> str:
    """A redacted export's name: by the session's id alone. Its file's name and its title may
    hold a value taken out, and redacted they name only that ("redacted-session_file")."""
    return f"redacted-session-{session.id}.{extension}"


def _styles() -> str:
    static = Path(settings.BASE_DIR) / "static"
    return "\n".join((static / name).read_text(encoding="utf-8") for name in _STYLES)


def content_security_policy(styles: str | None = None) -> str:
    """The export's own policy, in the file itself: its one <style> (by hash) and data: images,
    nothing else. A downloaded file is opened without the app's headers, from disk, so the
    file has to carry its policy; no script may run in it, and nothing is fetched."""
    if styles is None:
        styles = _styles()
    digest = base64.b64encode(hashlib.sha256(styles.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; base-uri 'none'; form-action 'none'"
    )


# Messages rendered and sent at a time: each stretch's entries are let go before the next is
# read, so an export of any length holds about as much as one of this many messages.
CHUNK = 200


def _walk(t: transcripts.Transcript, children_by_tool: dict, show_all: bool) -> Iterator[list]:
    """The thread's groups of rows as the page shows them, CHUNK messages at a time: every
    compaction in place as its banner (no folds), the noise left out unless show_all, a tool
    result under its call, one reply one message."""
    start = 0
    while start < len(t.items):
        transcripts.walk_to(t, start, 8 * CHUNK)  # more than a chunk's messages span, most often
        chunk = transcripts.rows_for(
            t, start, len(t.items), children_by_tool, 0, show_all=show_all, limit=CHUNK
        )
        yield chunk.groups
        start = chunk.stop


def _children_by_tool(session: Session) -> dict[str, list]:
    found: dict[str, list] = {}
    for child in session.children.only(*transcripts.CHILD_FIELDS).order_by("id"):
        if child.parent_tool_id:
            found.setdefault(child.parent_tool_id, []).append(child)
    return found


# Said where an export stops early: the session's thread was built again while it was written.
REBUILT = "The session was indexed again while this export was written: export it again for the rest."


def as_html(
    session: Session, show_all: bool = False, redacted: redaction.Redaction | None = None
) -> Iterator[str]:
    """The export as parts to send one after another: the head, the rows of each CHUNK, the end.
    The thread is read here, before the first part, so an unknown or rebuilt one is known.
    redacted: the values to take out, from the entries before anything is rendered."""
    session, t, children_by_tool, problems = _read(session, redacted)
    styles = _styles()
    context = {
        "session": session,
        "thread": t.thread,
        "total": len(t.items),
        "show_all": show_all,
        "hidden_count": len(t.noise),
        "export": True,
        "target": "",  # no entry is singled out in an export
        "styles": styles,
        "content_security_policy": content_security_policy(styles),
        "children": [],
        "problems": problems,
        "redaction": redacted,
    }
    parts = _html_parts(t, children_by_tool, context)
    if redacted is None:
        return parts
    return _redacted_parts(parts, redacted, (styles, html.escape(context["content_security_policy"])))


def _redacted_parts(
    parts: Iterator[str], redacted: redaction.Redaction, kept: tuple[str, ...]
) -> Iterator[str]:
    """The last pass over each part, the styles and the policy aside: a short word taken out of
    them would break the page's look, or the hash its policy allows the styles by."""
    between = re.compile("|".join(f"({re.escape(text)})" for text in kept))
    for part in parts:
        pieces = between.split(part)
        yield "".join(
            piece if piece in kept else redacted.rendered(piece) for piece in pieces if piece is not None
        )


def _read(session: Session, redacted: redaction.Redaction | None):
    """The session, its thread, its subagents by tool call and its problems: as indexed, or
    with every redacted value taken out of each (a thread built anew from redacted entries,
    no subagent)."""
    problems = list(session.problems.order_by("line")[: transcripts.PROBLEM_LIMIT])
    if redacted is None:
        return session, transcripts.transcript_to_walk(session), _children_by_tool(session), problems
    entries = [redacted.value(entry) for entry in transcripts.load_entries(session)]
    for problem in problems:
        problem.message, problem.text = redacted.text(problem.message), redacted.text(problem.text)
    t = transcripts.transcript_of_entries(entries, session.format)
    # No subagent under its call: a shared page or a redacted file leads nowhere else.
    return redacted_session(session, redacted), t, {}, problems


def redacted_session(session: Session, redacted: redaction.Redaction) -> Session:
    """A copy of the session row (never saved) with its shown fields redacted, its parent's and
    its machine's too."""
    copied = copy.copy(session)
    for name, value in redaction.session_fields(session).items():
        setattr(copied, name, redacted.text(value))
    copied.extra = redacted.value(session.extra)
    copied.models_used = redacted.value(session.models_used)
    source = copy.copy(session.source)
    source.machine = redacted.text(source.machine)
    source.path = redacted.text(source.path)
    copied.source = source
    if session.parent_id is not None and session.parent is not None:
        copied.parent = redacted_session(session.parent, redacted)
    return copied


_CHILD_TEXTS = ("key", "title", "summary_title", "first_prompt", "parent_tool_id")


# The reviews made last, by what they were made from: the review page and the export or link
# it posts right after ask for the same one, and a rescan costs a second per 10,000 entries.
_REVIEWS: OrderedDict[tuple, list[redaction.Candidate]] = OrderedDict()
_REVIEWS_KEPT = 16
_REVIEWS_LOCK = threading.Lock()


def review_candidates(session: Session, *, high_entropy: bool = False) -> list[redaction.Candidate]:
    """The values a redaction review lists for the session: those in every text an export
    shows, the index's findings, and the files its tool calls touched. Made once for each
    version of the session and of what its export shows beside it (its parent's fields, its
    subagents' titles, its machine)."""
    key = _review_key(session, high_entropy)
    with _REVIEWS_LOCK:
        if key in _REVIEWS:
            _REVIEWS.move_to_end(key)
            return _REVIEWS[key]
    entries = transcripts.load_entries(session)
    found = redaction.review_values(
        _review_texts(session, entries),
        session.source.machine,
        high_entropy=high_entropy,
        paths=_touched_paths(entries),
        own_file=session.path,
        findings=_indexed_findings(session, entries, high_entropy),
        may_hold_credential=findings.may_hold_secret,
    )
    with _REVIEWS_LOCK:
        _REVIEWS[key] = found
        while len(_REVIEWS) > _REVIEWS_KEPT:
            _REVIEWS.popitem(last=False)
    return found


def _review_key(session: Session, high_entropy: bool) -> tuple:
    children = session.children.aggregate(count=Count("id"), last=Max("indexed_at"))
    parent = session.parent
    return (
        session_version(session),
        high_entropy,
        session.source.machine,
        session.source.path,
        # A title may change without a new version: renamed.
        tuple(redaction.session_fields(session).values()),
        session_version(parent) if parent is not None else None,
        tuple(redaction.session_fields(parent).values()) if parent is not None else None,
        children["count"],
        children["last"],
    )


def clear_reviews() -> None:
    with _REVIEWS_LOCK:
        _REVIEWS.clear()


def _indexed_findings(session: Session, entries: list, high_entropy: bool) -> Iterator[tuple[str, str, str]]:
    """(kind, masked, value) of what the index found in the blocks its finding rows name,
    found again (the rows keep no value): a credential under a JSON key's name among them,
    which the review's scan of each string alone would not see."""
    where = set(session.findings.values_list("entry_id", "block"))
    if not where:
        return
    for entry in entries:
        entry_id = stored_id(entry.id)
        for number, block in enumerate(entry.blocks):
            if (entry_id, number) in where:
                yield from findings.block_secrets(block, high_entropy=high_entropy)


def _review_texts(session: Session, entries: list) -> Iterator[str]:
    """Every text of the session an export shows (the index's entries: the web host has no
    session files)."""
    problems = [(p.message, p.text) for p in session.problems.all()]
    yield from redaction.session_texts(session, entries, [session.extra, problems])
    for child in session.children.only(*transcripts.CHILD_FIELDS):
        yield from (getattr(child, name) for name in _CHILD_TEXTS)
    yield session.source.machine
    yield session.source.path
    if session.parent is not None:
        yield from redaction.session_fields(session.parent).values()


_TOUCHING = frozenset({tools.EDIT, tools.WRITE, tools.READ})


def _touched_paths(entries: list) -> Iterator[str]:
    """Each file a tool call read, wrote, edited or patched."""
    for entry in entries:
        for block in entry.blocks:
            if block.type != readers.TOOL_CALL:
                continue
            arguments = tools.parsed_arguments(block.arguments)
            kind = tools.kind_of(block.name, arguments)
            if kind == tools.PATCH:
                yield from (diff.path for diff in tools.describe(block).diffs)
            elif kind in _TOUCHING and isinstance(arguments, dict):
                yield tools.first_str(arguments, tools.PATH_KEYS) or ""


def _html_parts(t: transcripts.Transcript, children_by_tool: dict, context: dict) -> Iterator[str]:
    rows = get_template("sessions/_rows.html")
    yield render_to_string("sessions/export.html#export-start", context)
    try:
        for groups in _walk(t, children_by_tool, context["show_all"]):
            with render.MEMO.reading_only():  # no yield within: the context is this thread's
                part = rows.render({**context, "groups": groups})
            yield part
    except transcripts.StaleSnapshot:
        yield f'<li class="entry meta"><p class="clipped">{REBUILT}</p></li>'
    yield render_to_string("sessions/export.html#export-end", context)


def _longest_backticks(text: str, at_least: int) -> int:
    """The longest run of backticks in text, if it is at_least long (0 otherwise): the search
    runs only on texts that hold such a run, few of a long session's outputs."""
    if "`" * at_least not in text:
        return 0
    return max(len(m) for m in re.findall(r"`+", text))


def _fence(text: str, language: str = "") -> str:
    # A fence longer than any backtick run inside, so the output cannot close it early.
    fence = "`" * max(3, _longest_backticks(text, 3) + 1)
    return f"{fence}{language}\n{text}\n{fence}"


_DIFF_SIGNS = {"add": "+", "del": "-", "ctx": " "}


def _tool_call_markdown(block: readers.Block) -> str:
    """A tool call as what it did, as the page shows it: an edit as a diff per file, a
    command as a console line, a written file as code, a read as its path; any other call
    as its arguments in JSON."""
    head = f"**Tool call `{block.name}`** (`{block.call_id}`)"
    view = tools.describe(block)
    if view.kind in (tools.EDIT, tools.PATCH) and view.diffs:
        parts = [head]
        for diff in view.diffs:
            body = "\n".join(_DIFF_SIGNS.get(line.kind, "") + line.text for line in diff.lines)
            parts.append(f"{_code(diff.path)}\n\n{_fence(body, 'diff')}")
        return "\n\n".join(parts)
    if view.kind == tools.SHELL and view.command:
        return f"{head}\n\n{_fence('$ ' + view.command, 'console')}"
    if view.kind == tools.WRITE:
        return f"{head}\n\n{_code(view.path)}\n\n{_fence(view.content, _language(view.path))}"
    if view.kind == tools.READ:
        return f"{head} {_code(view.path)}{' ' + view.line_range if view.line_range else ''}"
    arguments = json.dumps(block.arguments, indent=2, ensure_ascii=False, default=str)
    return f"{head}\n\n{_fence(arguments)}"


def _language(path: str) -> str:
    """A fence's language from a file's extension, as far as it is a plain word."""
    suffix = Path(path).suffix.lstrip(".")
    return suffix if re.fullmatch(r"[A-Za-z0-9+-]{1,12}", suffix) else ""


def _code(text: str) -> str:
    ticks = "`" * (_longest_backticks(text, 1) + 1)
    return f"{ticks} {text} {ticks}"


def _block_markdown(block: readers.Block) -> str:
    if block.type == readers.TEXT:
        return block.text
    if block.type == readers.THINKING:
        return "> *Thinking*\n>\n" + "\n".join(f"> {line}" for line in block.text.splitlines())
    if block.type == readers.TOOL_CALL:
        return _tool_call_markdown(block)
    if block.type == readers.TOOL_RESULT:
        label = "Tool error" if block.is_error else "Tool result"
        return f"**{label}** (`{block.call_id}`)\n\n{_fence(block.text)}"
    if block.type == readers.IMAGE:
        return f"*[image: {block.mime_type}]*"
    if block.type == readers.ATTACHMENT:
        return f"*[attachment: {block.name} {block.size} {block.mime_type}]*"
    if block.type == readers.REACTION:
        return f"*[reaction {' '.join(block.emojis) or block.text} to {block.target_id}]*"
    return block.text


def as_markdown(
    session: Session, show_all: bool = False, redacted: redaction.Redaction | None = None
) -> Iterator[str]:
    """The export as Markdown parts: the head, then the rows of each CHUNK (as_html's walk)."""
    session, t, children_by_tool, _ = _read(session, redacted)
    parts = _markdown_parts(session, t, children_by_tool, show_all, redacted)
    return parts if redacted is None else map(redacted.rendered, parts)


def _markdown_parts(
    session: Session, t, children_by_tool: dict, show_all: bool, redacted: redaction.Redaction | None
) -> Iterator[str]:
    lines = [f"# {session.display_title}", ""]
    if redacted is not None:
        lines.append(f"- {redacted.summary()}")
    for label, value in (
        ("Format", session.format),
        ("File", session.path),
        ("Project", session.project),
        ("JID", session.jid),
        ("Started", session.started_at),
        ("Updated", session.updated_at),
        ("Models", ", ".join(session.models_used)),
        ("Tokens", session.total_tokens),
    ):
        if value:
            lines.append(f"- {label}: {value}")
    if not show_all and len(t.noise):
        lines.append(
            f"- Hidden: {len(t.noise)} progress, hook and meta entries (export with _all=1 for them)"
        )
    yield render.neutralise("\n".join(lines) + "\n\n")
    try:
        for groups in _walk(t, children_by_tool, show_all):
            parts = [_row_markdown(row, t) for group in groups for row in group.rows if not row.hidden]
            yield render.neutralise("".join(parts))
    except transcripts.StaleSnapshot:
        yield f"*{REBUILT}*\n"


def _row_markdown(row: transcripts.Row, t: transcripts.Transcript) -> str:
    """One message as the page shows it, a heading and its blocks, each tool call with its result."""
    e = row.entry
    when = f" · {e.timestamp:%Y-%m-%d %H:%M:%S}" if e.timestamp else ""
    if row.role_class == "compaction":
        c = row.compaction
        facts = "".join(
            f" · {text}"
            for text in (
                c["trigger"] and f"trigger: {c['trigger']}",
                c["before"] and f"{c['before']} tokens before",
                c["after"] and f"{c['after']} tokens after",
            )
            if text
        )
        summary = row.item.summary or e.summary
        return "\n".join(["---", "", f"## Compaction{when}{facts}", "", summary, "", "---", "", ""])
    line = layout.harness_line(e, t.rules)
    if line is not None:
        if line["kind"] == "command":
            body = _code(line["line"])
        elif line["kind"] == "interrupt":
            body = "*Stopped by the person.*"
        else:
            body = _fence(line["text"])
        return f"## {layout.harness_who(line['kind'])}{when}\n\n{body}\n\n"
    if row.role_class == "compact-summary":
        if summary_in_banner(e, t.thread):
            return f"## compaction summary{when}\n\n*The summary the model continued from, shown under its compaction above.*\n\n"
        return f"## compaction summary{when}\n\n{e.text}\n\n"
    if row.role_class == "unknown":
        raw = json.dumps(e.raw, indent=2, ensure_ascii=False, default=str) if e.raw is not None else ""
        return f"## unknown entry{when}\n\n{_fence(raw, 'json')}\n\n"
    if row.role_class == "meta":
        kind = f"{e.kind} · {e.subtype}" if e.subtype else e.kind
        text = (e.summary or e.text).strip().splitlines()
        return f"## {kind}{when}\n\n{text[0] if text else ''}\n\n"
    who = e.sender or e.role or e.kind
    model = f" · {e.model}" if e.model else ""
    parts = [f"## {who}{model}{when}"]
    for piece in row.pieces:
        parts.append(_block_markdown(piece.block))
        if piece.result is not None:
            parts.append(_block_markdown(piece.result))
    if error := row.error_message:
        parts.append(f"**Error:** {error}")
    return "\n\n".join(parts) + "\n\n"
