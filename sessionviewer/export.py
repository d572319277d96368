"""A session as a file to keep: self-contained HTML (styles inlined, no scripts) or Markdown.

Both show the thread the page shows by default (the latest branch), every item of it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

from django.conf import settings
from django.template.loader import render_to_string

from sessionviewer import readers, render, transcripts
from sessionviewer.models import Session
from sessionviewer.templatetags.transcript import harness
from sessionviewer.transcripts import tools

_STYLES = ("css/app.css", "css/tools.css", "css/pygments.css", "css/transcript.css")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def filename(session: Session, extension: str) -> str:
    stem = _UNSAFE_NAME.sub("-", Path(session.path).stem or session.key)[:80].strip("-.") or "session"
    return f"{stem}.{extension}"


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


def as_html(session: Session) -> str:
    t = transcripts.transcript(session)
    styles = _styles()
    context = {
        "session": session,
        "thread": t.thread,
        "groups": transcripts.rows_for(t, 0, len(t.items), show_all=True).groups,
        "total": len(t.items),
        "export": True,
        "target": "",  # no entry is singled out in an export
        "styles": styles,
        "content_security_policy": content_security_policy(styles),
        "children": [],
        "problems": list(session.problems.order_by("line")[: transcripts.PROBLEM_LIMIT]),
    }
    return render_to_string("sessions/export.html", context)


def _fence(text: str, language: str = "") -> str:
    # A fence longer than any backtick run inside, so the output cannot close it early.
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


_DIFF_SIGNS = {"add": "+", "del": "-", "ctx": " "}


def _tool_call_markdown(block: readers.Block) -> str:
    """A tool call as what it did, as the page shows it: an edit as a diff per file, a
    command as a console line; any other call as its arguments in JSON."""
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
    arguments = json.dumps(block.arguments, indent=2, ensure_ascii=False, default=str)
    return f"{head}\n\n{_fence(arguments)}"


def _code(text: str) -> str:
    ticks = "`" * (max((len(m) for m in re.findall(r"`+", text)), default=0) + 1)
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


def as_markdown(session: Session) -> str:
    t = transcripts.transcript(session)
    lines = [f"# {session.display_title}", ""]
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
    lines.append("")
    summaries = {c.summary for c in t.thread.compactions if c.summary}
    for item in t.items:
        e = item.entry
        if e.kind == readers.COMPACTION:
            lines += ["---", "", "## Compaction", "", item.summary or e.summary, "", "---", ""]
            continue
        if e.kind != readers.MESSAGE or (e.extra.get("is_compact_summary") and e.text in summaries):
            continue  # a compact summary is already under its compaction's heading
        line = harness(e)
        if line is not None and line["kind"] in ("caveat", "meta"):
            continue  # text the harness wrote for the model, not part of the conversation
        who = e.sender or e.role or e.kind
        when = f" · {e.timestamp:%Y-%m-%d %H:%M:%S}" if e.timestamp else ""
        model = f" · {e.model}" if e.model else ""
        compacted = " · compacted" if item.compacted else ""
        if line is not None:
            who = "command" if line["kind"] == "command" else "command output"
            body = _code(line["line"]) if line["kind"] == "command" else _fence(line["text"])
            lines += [f"## {who}{when}{compacted}", "", body, ""]
            continue
        lines += [f"## {who}{model}{when}{compacted}", ""]
        lines += [_block_markdown(b) for b in e.blocks]
        if error := e.extra.get("error_message"):
            lines += ["", f"**Error:** {error}"]
        lines += [""]
    return render.neutralise("\n".join(lines))
