"""Template filters for transcripts: each hands text to render.py and marks only its output safe.

render.py escapes or sanitises everything it returns (see its docstring), so these
are the only places a template gets HTML built from a session file.
"""

from __future__ import annotations

import re

import orjson
from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from sessionviewer import links, readers, render, transcripts
from sessionviewer.index import fold
from sessionviewer.index.findings import masked_credentials
from sessionviewer.transcripts import layout, tools
from sessionviewer.transcripts.masks import without_placeholders

register = template.Library()

# Tool output past this many characters is cut, with a note; the raw file has it all.
OUTPUT_LIMIT = 100_000
# Output with more lines or characters than this starts folded.
FOLD_LINES = 12
FOLD_CHARS = 1_500
IMAGE_LIMIT = 2_000_000  # base64 characters, about 1.5 MB
_BASE64 = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")


@register.filter
def markdown(text: str) -> SafeString:
    """Markdown, sanitised: the one markdown filter (workspace_tags registers this one too)."""
    return mark_safe(render.render_markdown(text or ""))  # noqa: S308 - sanitised by render.py


@register.filter
def envelope_parts(envelope: str, fmt: str) -> list[readers.EnvelopePart]:
    """A chat gateway's envelope in the parts its format's reader gives (its JSON blocks and
    time stamp), for the sender chip to show."""
    return readers.envelope_parts(fmt or "", envelope or "")


@register.filter
def json_pretty(value) -> SafeString:
    return mark_safe(render.render_json(value))  # noqa: S308 - escaped by render.py


@register.filter
def raw_json(value) -> SafeString:
    """An unknown entry's line as pretty JSON; past OUTPUT_LIMIT cut, plain, with a note."""
    text = orjson.dumps(value, option=orjson.OPT_INDENT_2, default=str).decode()
    if len(text) <= OUTPUT_LIMIT:
        return json_pretty(value)
    cut = render.render_plain(text[:OUTPUT_LIMIT])
    note = f'<p class="clipped">Cut at {OUTPUT_LIMIT:,} of {len(text):,} characters; the raw file has it whole.</p>'
    return mark_safe(cut + note)  # noqa: S308 - escaped by render.py


@register.simple_tag(takes_context=True)
def tool_output(context, result, entry) -> SafeString:
    """A tool result's text as plain does, and where it was cut, a link to the whole of it
    (the entry-text view sends it as a download); an export, or a result without its
    entry, keeps the note alone."""
    text = result.text or ""
    html = plain(text)
    session = context.get("session")
    if (
        len(text) <= OUTPUT_LIMIT
        or context.get("export")
        or session is None
        or entry is None
        or not entry.line
    ):
        return html
    at = next((i for i, block in enumerate(entry.blocks) if block is result), None)
    if at is None:
        return html
    url = links.entry_text(session.id, entry.line, at)
    return format_html(
        '{}<p class="clipped"><a href="{}" download>Download the whole output</a></p>', html, url
    )


@register.filter
def snippet_html(html: str) -> SafeString:
    """A search hit's snippet (search.Snippet.html), which render.render_snippet escaped."""
    return mark_safe(html)  # noqa: S308 - escaped by render.py


@register.filter
def plain(text: str) -> SafeString:
    """Tool output: escaped, cut at OUTPUT_LIMIT with a note saying so."""
    cut, clipped = render.truncate(text or "", OUTPUT_LIMIT)
    html = render.render_plain(cut)
    if clipped:
        html += f'<p class="clipped">Output cut at {OUTPUT_LIMIT:,} of {len(text):,} characters.</p>'
    return mark_safe(html)  # noqa: S308 - escaped by render.py


@register.filter
def neutral(text: str) -> str:
    """Names and titles: control and direction characters made visible; autoescape does the rest."""
    return render.neutralise(str(text or ""))


@register.filter
def spaced(name: str) -> str:
    """A record's kind as words for a label: model_change -> model change."""
    return str(name).replace("_", " ")


@register.filter
def credentials_masked(text: str) -> str:
    """A session's title with the credentials it holds masked (a first prompt may paste one):
    before neutral and title_cut, so a cut never leaves part of a value unmasked. Its own
    private-use characters of plane 16 become U+FFFD: on the transcript they would pass for
    the placeholders of masks.py. Every row of a list asks: a title in which no credential
    can start is not scanned line by line (index/findings.py masked_credentials)."""
    return without_placeholders(masked_credentials(str(text or "")))


@register.filter
def title_cut(text: str, limit: int) -> str:
    """A title cut to limit characters as the index cuts one: after its last whole word, with
    an ellipsis (fold.cut_title). truncatechars would cut inside a word."""
    return fold.cut_title(str(text or ""), int(limit))


@register.filter
def folds(text: str) -> bool:
    """Whether output is long enough to start folded."""
    text = text or ""
    return len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES


@register.filter
def too_long(text: str) -> bool:
    """Whether a block's text is past TEXT_LIMIT: shown folded and cut, the rest on request."""
    return len(text or "") > transcripts.TEXT_LIMIT


@register.filter
def head(text: str) -> str:
    """The part of a long text the page sends with it."""
    return render.truncate(text or "", transcripts.TEXT_LIMIT)[0]


@register.filter
def rest_length(text: str) -> int:
    """The characters of a long text the page leaves for "show the rest"."""
    return max(0, len(text or "") - transcripts.TEXT_LIMIT)


@register.filter
def first_line(text: str) -> str:
    line = render.neutralise((text or "").strip().split("\n", 1)[0])
    return line[:120] + ("…" if len(line) > 120 else "")


# A thinking block longer than this shows its opening lines, the rest behind "show all".
OPENING_LINES = 4
OPENING_CHARS = 400


@register.filter
def opening(text: str) -> str:
    """The opening lines of a long thinking block, shown before "show all"; "" when the
    block is short enough to show whole."""
    lines = [line for line in (text or "").strip().split("\n") if line.strip()]
    if len(lines) <= OPENING_LINES and sum(map(len, lines)) <= OPENING_CHARS:
        return ""
    head = "\n".join(lines[:OPENING_LINES])
    if len(head) > OPENING_CHARS:
        head = head[:OPENING_CHARS].rsplit(" ", 1)[0]
    return head + "…"


@register.filter
def line_count(text: str) -> int:
    return (text or "").count("\n") + 1


@register.filter
def image_src(block) -> str:
    """A data: URL for a raster image of a safe type and size, else "" (the page says why)."""
    mime = (block.mime_type or "").lower()
    data = (block.data or "").replace("\n", "")
    if mime not in render.IMAGE_TYPES or not data or len(data) > IMAGE_LIMIT or not _BASE64.match(data):
        return ""
    return f"data:{mime};base64,{data}"


@register.filter
def anchor(entry_id: str) -> str:
    return transcripts.anchor(entry_id or "")


@register.filter
def result_slot(call_id: str) -> str:
    return transcripts.result_slot(call_id)


@register.filter
def compact(number) -> str:
    """12345 -> 12.3k: token counts that fit a table cell."""
    try:
        n = int(number or 0)
    except (TypeError, ValueError):
        return ""
    for size, suffix in ((1_000_000_000, "G"), (1_000_000, "M"), (1_000, "k")):
        if abs(n) >= size:
            return f"{n / size:.1f}{suffix}"
    return str(n)


@register.filter
def duration(milliseconds) -> str:
    """38799 -> 38.8 s, 125000 -> 2 min 5 s: how long a subagent ran."""
    try:
        seconds = int(milliseconds) / 1000
    except (TypeError, ValueError):
        return ""
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {rest} s"


@register.filter
def harness(entry, format_key: str) -> dict | None:
    """What a user line the session's harness wrote is (its format's rule, as the index's), or None."""
    return layout.harness_line(entry, readers.format_of(format_key))


@register.filter
def summary_in_banner(entry, thread) -> bool:
    """Whether a compact-summary line's text is already the summary of a compaction banner."""
    if not entry.extra.get("is_compact_summary"):
        return False
    text = entry.text
    return any(item.summary == text for item in getattr(thread, "compactions", ()))


# --- Tool calls shown by what they did (transcripts/tools.py reads them) ----------------------------------

# A file's content or a JSON value past this many lines starts folded: about a screen.
SCREEN_LINES = 30
SCREEN_CHARS = 3_000


@register.filter
def tool_view(piece) -> tools.ToolView:
    extra = dict(piece.result_entry.extra) if piece.result_entry else {}
    if piece.later_lines:
        extra["later_lines"] = piece.later_lines
    stats_of = piece.rules.subagent_stats if piece.rules is not None else None
    if stats_of is not None and (stats := stats_of(extra)):
        extra["subagent_stats"] = stats
    return tools.describe(piece.block, piece.result, extra)


@register.filter
def result_state(result, result_entry) -> tools.ResultState:
    return tools.result_state(result, result_entry.extra if result_entry else None)


@register.filter
def past_screen(text) -> bool:
    """Whether a file's content or a JSON value is longer than a screen, so starts folded."""
    if not isinstance(text, str):
        try:
            text = orjson.dumps(text, default=str, option=orjson.OPT_INDENT_2).decode()
        except (TypeError, orjson.JSONEncodeError):  # integers past 64 bits, nesting past 254
            return True
    return len(text) > SCREEN_CHARS or text.count("\n") >= SCREEN_LINES


@register.filter
def diff(file_diff: tools.FileDiff) -> SafeString:
    return mark_safe(render.render_diff(file_diff.lines, file_diff.numbered))  # noqa: S308 - escaped by render.py


@register.filter
def highlight_file(content: str, path: str) -> SafeString:
    """A written file's content, highlighted by its name, cut at OUTPUT_LIMIT with a note."""
    cut, clipped = render.truncate(content or "", OUTPUT_LIMIT)
    html = render.highlight_file(cut, path or "")
    if clipped:
        html += f'<p class="clipped">Content cut at {OUTPUT_LIMIT:,} of {len(content):,} characters.</p>'
    return mark_safe(html)  # noqa: S308 - escaped by render.py


# A read result shows this many of its lines, the rest behind "show all".
PREVIEW_LINES = 5


@register.simple_tag(takes_context=True)
def file_lines(context, result, call) -> dict | None:
    """A read result as the file's lines, highlighted by the file's name with their numbers in
    a gutter: the first PREVIEW_LINES (head), all of them when there are more (whole: "show
    all" puts them in the head's place), and the tool's note. None
    when the session's format has no rule for it, the text is not a file's lines, the read
    failed or its text is past OUTPUT_LIMIT: it then shows as any output does."""
    session = context.get("session")
    text = result.text or ""
    if session is None or result.is_error or len(text) > OUTPUT_LIMIT:
        return None
    found = readers.read_output(session.format, text, call.arguments)
    if found is None:
        return None
    lines = render.highlight_file_lines(found.lines, tools.edit_path(call))
    numbers, cut = found.numbers, PREVIEW_LINES
    whole = render.render_numbered(numbers, lines) if len(lines) > cut else ""
    return {
        "count": len(lines),
        "head": mark_safe(render.render_numbered(numbers[:cut], lines[:cut])),  # noqa: S308 - escaped by render.py
        "whole": mark_safe(whole),  # noqa: S308 - escaped by render.py
        "note": found.note,
    }


@register.filter
def json_or_plain(text: str) -> SafeString:
    """A result that is a JSON object or array, pretty; any other text as plain output."""
    stripped = (text or "").strip()
    if stripped[:1] in ("{", "[") and len(stripped) <= OUTPUT_LIMIT:
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            value = None
        if isinstance(value, dict | list):
            return mark_safe(render.render_json(value))  # noqa: S308 - escaped by render.py
    return plain(text)
