"""Turn untrusted transcript text into safe HTML: the only place that does.

Transcripts are untrusted input, so every function here returns HTML that is
safe to mark as such in a template, and every one passes its input through
`neutralise` first.

- `render_markdown(text)`: a message body. markdown-it-py (CommonMark plus
  tables and strikethrough) with raw HTML *disabled*, so `<script>` in the
  source is shown as text; fenced code is highlighted by Pygments; then
  `nh3.clean` with an explicit allow-list as a second line of defence. Links
  keep only http, https, mailto and relative URLs and get
  rel="noopener noreferrer nofollow". Markdown images are rendered as links
  ("[image: alt]") and never loaded, so a transcript cannot make the browser
  fetch a remote resource; an image inside a link becomes its alt text.
- `highlight_code(code, language)`: `<pre class="highlight"><code>` with
  Pygments spans. An unknown or missing language gives escaped plain code; we
  do not guess, since guesses are slow and often wrong on tool output. Code
  over `HIGHLIGHT_LIMIT` characters is also shown plain, to bound the cost.
- `render_json(value)`: pretty, highlighted JSON for tool call arguments. A
  string holding a JSON object or array (OpenAI-style arguments) is parsed
  first.
- `render_plain(text)`: escaped text in `<pre class="plain">`, for tool output.
- `highlight_file(code, filename)`: `highlight_code` with the language guessed
  from the file's name (its extension, or names such as Makefile), for a file a
  tool wrote.
- `highlight_file_lines(lines, filename)` and `render_numbered(numbers, lines)`: a file's
  lines as a read tool gave them, highlighted, with their numbers in the file in a gutter.
- `render_diff(lines)`: a unified diff as `<pre class="diff">`, one escaped line
  per span, its kind (add, del, ctx, hunk, note) as a class and its line numbers
  as data attributes, which CSS shows and copying leaves out; within a changed
  line, the words that changed are marked.
- `neutralise(text)`: replaces control characters (C0 except newline and tab,
  DEL, C1), bidirectional overrides and isolates, directional marks and lone
  surrogates by their escaped code point, e.g. "\\u202e", so they are visible
  and inert. CRLF becomes LF first; a lone CR is shown as "\\u000d".
- `clip_long_lines(text, limit)`: cuts lines over `MAX_LINE` characters with a
  marker; all render functions apply it so pages stay readable.
- `truncate(text, limit)`: cuts huge outputs at a code point boundary and says
  whether it did; callers decide where and show that it happened.
- `render_snippet(text, pattern, width)`: a search hit: a window of the text around the
  first match of the search's pattern, escaped piece by piece, each match in `<mark>`.

`render_markdown` and `render_diff`, the two that cost a page most, keep what they made in
`MEMO`, by what they made it from (see `Memo`): a reload renders neither again.

Highlighting CSS lives in static/css/pygments.css, scoped under `.highlight`.
"""

import html
import json
import re
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from difflib import SequenceMatcher
from functools import lru_cache
from threading import Lock

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

MAX_LINE = 10_000
# The only images shown inline, in transcripts and as workspace files: SVG and HTML can carry script.
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
# Pygments' Python lexer manages about 250 KB/s; longer code is shown plain.
HIGHLIGHT_LIMIT = 20_000

# C0 except \t and \n, DEL, C1, ALM, LRM/RLM, LRE..RLO, LRI..PDI, and lone
# surrogates (which json.loads lets through and which cannot be encoded as UTF-8).
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)

ALLOWED_TAGS = {
    "a", "blockquote", "br", "code", "del", "em", "h1", "h2", "h3", "h4", "h5", "h6", "hr",
    "li", "ol", "p", "pre", "s", "span", "strong", "table", "tbody", "td", "th", "thead",
    "tr", "ul",
}  # fmt: skip
# `rel` is set by nh3 itself (link_rel), so it is not in this list; `class` is
# governed separately by ALLOWED_CLASSES.
ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "ol": {"start"}}
ALLOWED_CLASSES = {
    "pre": {"highlight"},
    "span": {name for name in STANDARD_TYPES.values() if name},
}
URL_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "noopener noreferrer nofollow"

_formatter = HtmlFormatter(nowrap=True)


@lru_cache(maxsize=128)
def _lexer(language: str) -> Lexer | None:
    try:
        return get_lexer_by_name(language, stripnl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=256)
def _file_lexer(key: str) -> Lexer | None:
    try:
        return get_lexer_for_filename(key, stripnl=False)
    except ClassNotFound:
        return None


class Memo:
    """HTML this module made, by what it made it from, the least recently used let go first
    once the characters of keys and values pass `budget`; an item over `largest` is never kept.

    Keyed by the text itself (and the limits the output depends on), not by the session's
    version as the thread cache is: a changed entry is a new key, so nothing stale is served,
    and an append (which changes the version) keeps the rest of the screen's HTML. The memo
    lives in the process, so new code (a deploy restarts the workers) starts with none.
    Bounded in characters, not items; an export reads it but keeps nothing (`reading_only`).
    Workers serve requests on threads (gthread), hence the lock."""

    def __init__(self, budget: int, largest: int) -> None:
        self.budget, self.largest = budget, largest
        self.size = self.hits = self.misses = 0
        self._kept: OrderedDict[tuple, tuple[str, int]] = OrderedDict()
        self._lock = Lock()
        self._keeping: ContextVar[bool] = ContextVar("keeping", default=True)

    @contextmanager
    def reading_only(self) -> Iterator[None]:
        """HTML made within is not kept: an export walks a whole session once, and would push
        out the HTML of every screen being read for HTML nobody asks for again."""
        token = self._keeping.set(False)
        try:
            yield
        finally:
            self._keeping.reset(token)

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, key: tuple) -> str | None:
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                self.misses += 1
                return None
            self.hits += 1
            self._kept.move_to_end(key)
            return found[0]

    def keep(self, key: tuple, made: str, source_size: int) -> str:
        size = source_size + len(made)
        if size > self.largest or not self._keeping.get():
            return made
        with self._lock:
            if key in self._kept:
                self.size -= self._kept.pop(key)[1]
            self._kept[key] = (made, size)
            self.size += size
            while self.size > self.budget:
                self.size -= self._kept.popitem(last=False)[1][1]
        return made

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()
            self.size = self.hits = self.misses = 0


# About 8 MB of ASCII text: a few hundred screens of messages and diffs.
MEMO = Memo(budget=8_000_000, largest=500_000)


def _limits() -> tuple[int, ...]:
    """The limits the HTML depends on, read when it is made: part of each memo key, so a
    changed limit is never served what the old one made."""
    return (MAX_LINE, HIGHLIGHT_LIMIT, WORD_DIFF_LIMIT, PAIR_WITHIN)


def neutralise(text: str) -> str:
    text = text.replace("\r\n", "\n")
    if not _INVISIBLE.search(text):
        return text
    return _INVISIBLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def clip_long_lines(text: str, limit: int = MAX_LINE) -> str:
    if len(text) <= limit:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if len(line) > limit:
            lines[i] = f"{line[:limit]} … [line cut: {len(line) - limit:,} more characters]"
    return "\n".join(lines)


def truncate(text: str, limit: int) -> tuple[str, bool]:
    if limit < 0:
        raise ValueError("limit must not be negative")
    if len(text) <= limit:
        return text, False
    # Python slices never split a code point; drop a dangling high surrogate
    # so the cut cannot create an unencodable string.
    cut = text[:limit]
    if cut and "\ud800" <= cut[-1] <= "\udbff":
        cut = cut[:-1]
    return cut, True


def _prepare(text: str) -> str:
    return clip_long_lines(neutralise(text))


def _highlight(code: str, language: str | None) -> str:
    lexer = None
    if language and language.strip() and len(code) <= HIGHLIGHT_LIMIT:
        lexer = _lexer(language.strip().lower())
    body = highlight(code, lexer, _formatter) if lexer else html.escape(code, quote=False)
    return f'<pre class="highlight"><code>{body}</code></pre>'


def highlight_code(code: str, language: str | None) -> str:
    return _highlight(_prepare(code), language)


def render_plain(text: str) -> str:
    return f'<pre class="plain">{html.escape(_prepare(text), quote=False)}</pre>'


def _highlight_by_name(code: str, filename: str) -> str:
    """Prepared code, highlighted by its file's name; escaped alone when the name says nothing
    or the code is long."""
    name = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    stem, dot, suffix = name.rpartition(".")
    # Keyed by extension, so the cache stays small: "x.py" for every Python file.
    key = f"x.{suffix.lower()}" if dot and stem and suffix else name
    lexer = _file_lexer(key[:100]) if key and len(code) <= HIGHLIGHT_LIMIT else None
    return highlight(code, lexer, _formatter) if lexer else html.escape(code, quote=False)


def highlight_file(code: str, filename: str) -> str:
    """Code highlighted by its file's name; plain when the name says nothing or the code is long."""
    return f'<pre class="highlight"><code>{_highlight_by_name(_prepare(code), filename)}</code></pre>'


def highlight_file_lines(lines: list[str], filename: str) -> list[str]:
    """A file's lines highlighted by its name as highlight_file does, one HTML string a line:
    Pygments closes its spans at each line's end, so any run of them stands alone."""
    body = _highlight_by_name(_prepare("\n".join(lines)), filename)
    return body.split("\n")[: len(lines)]


def render_numbered(numbers: list[int], lines: list[str]) -> str:
    """Lines from highlight_file_lines with their numbers in the file in a gutter, which CSS
    shows and copying leaves out."""
    out = ['<pre class="highlight numbered"><code>']
    for number, line in zip(numbers, lines, strict=True):
        out.append(f'<span class="cl"><span class="ln" data-n="{int(number)}"></span>{line}\n</span>')
    out.append("</code></pre>")
    return "".join(out)


_DIFF_SIGNS = {"add": "+", "del": "-", "ctx": " "}


# Words are compared within a changed line up to this length; past it the line is marked whole.
WORD_DIFF_LIMIT = 1_000
_WORD = re.compile(r"\w+|\s+|[^\w\s]")


def _word_marks(old: str, new: str) -> tuple[str, str] | None:
    """A removed line and the line that replaced it, escaped, the words that differ marked
    (<span class="wd"> removed, <span class="wa"> added); None when they share too little
    for marks to help, or are too long to compare."""
    if len(old) > WORD_DIFF_LIMIT or len(new) > WORD_DIFF_LIMIT:
        return None
    a, b = _WORD.findall(old), _WORD.findall(new)
    matcher = SequenceMatcher(None, a, b, autojunk=False)
    # The quick ratios bound the real one from above: most unrelated pairs stop there.
    if matcher.real_quick_ratio() < 0.5 or matcher.quick_ratio() < 0.5 or matcher.ratio() < 0.5:
        return None
    old_out, new_out = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        removed = html.escape("".join(a[i1:i2]), quote=False)
        added = html.escape("".join(b[j1:j2]), quote=False)
        if op == "equal":
            old_out.append(removed)
            new_out.append(added)
            continue
        if removed:
            old_out.append(f'<span class="wd">{removed}</span>')
        if added:
            new_out.append(f'<span class="wa">{added}</span>')
    return "".join(old_out), "".join(new_out)


# How many added lines after the last pair a removed line is compared with.
PAIR_WITHIN = 8


def _diff_texts(lines) -> list[str]:
    """Each diff line's text, escaped; in a run of removed lines followed by added ones, a
    removed line and the added line it became have the words that changed marked."""
    texts = [_prepare(str(line.text)) for line in lines]
    out = [html.escape(text, quote=False) for text in texts]
    kinds = [line.kind for line in lines]
    i = 0
    while i < len(kinds):
        if kinds[i] != "del":
            i += 1
            continue
        d = i
        while d < len(kinds) and kinds[d] == "del":
            d += 1
        a = d
        while a < len(kinds) and kinds[a] == "add":
            a += 1
        # Each removed line, in order, pairs with the first added line after the last pair that
        # shares half its words (as many comparisons as a screenful of lines needs, at most).
        start = d
        for k in range(i, d):
            for j in range(start, min(a, start + PAIR_WITHIN)):
                if marked := _word_marks(texts[k], texts[j]):
                    out[k], out[j] = marked
                    start = j + 1
                    break
        i = a
    return out


def render_diff(lines, numbered: bool = False) -> str:
    """Diff lines (objects with kind, text, old and new) as one <pre>, a span per line, the
    words changed within a changed line marked; numbered shows the line numbers' gutters."""
    lines = list(lines)
    source = tuple((line.kind, str(line.text), line.old, line.new) for line in lines)
    key = ("diff", _limits(), bool(numbered), source)
    if (found := MEMO.get(key)) is not None:
        return found
    return MEMO.keep(key, _render_diff(lines, numbered), sum(len(line[1]) for line in source))


def _render_diff(lines: list, numbered: bool) -> str:
    out = ['<pre class="diff numbered"><code>' if numbered else '<pre class="diff"><code>']
    for line, text in zip(lines, _diff_texts(lines), strict=True):
        kind = line.kind if line.kind in ("add", "del", "ctx", "hunk", "note") else "ctx"
        if kind in _DIFF_SIGNS:
            old = "" if line.old is None else int(line.old)
            new = "" if line.new is None else int(line.new)
            out.append(
                f'<span class="dl {kind}"><span class="ln" data-n="{old}"></span>'
                f'<span class="ln" data-n="{new}"></span><span class="sign">{_DIFF_SIGNS[kind]}</span>{text}\n</span>'
            )
        else:
            out.append(f'<span class="dl {kind}">{text}\n</span>')
    out.append("</code></pre>")
    return "".join(out)


def render_json(value: object) -> str:
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):  # deep nesting overflows json's recursion
            parsed = None
        if isinstance(parsed, dict | list):
            value = parsed
    text = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    # Kept as markdown is: Pygments' JSON lexer was a twelfth of a transcript's first screen,
    # made again for the same tool calls at every request (bench/README.md).
    key = ("json", _limits(), text)
    if (found := MEMO.get(key)) is not None:
        return found
    return MEMO.keep(key, _highlight(_prepare(text), "json"), len(text))


def _fence(code: str, language: str, attrs: str) -> str:
    # Starts with "<pre", so markdown-it uses it as is instead of wrapping it.
    return _highlight(code, language)


def _mark_images_in_links(state) -> None:
    # One pass per paragraph, so a message full of images stays linear.
    for token in state.tokens:
        depth = 0
        for child in token.children or []:
            if child.type == "link_open":
                depth += 1
            elif child.type == "link_close":
                depth -= 1
            elif child.type == "image" and depth > 0:
                child.meta["in_link"] = True


def _image_as_link(self, tokens, idx, options, env) -> str:
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children or [], options, env)
    label = escapeHtml(f"[image: {alt}]" if alt else "[image]")
    if token.meta.get("in_link"):
        # A badge inside a link: nested anchors are invalid, so keep the text only.
        return label
    href = escapeHtml(str(token.attrGet("src") or ""))
    title = token.attrGet("title")
    title_attr = f' title="{escapeHtml(str(title))}"' if title else ""
    return f'<a href="{href}"{title_attr}>{label}</a>'


_md = MarkdownIt("commonmark", {"html": False, "linkify": False, "highlight": _fence}).enable(
    ["table", "strikethrough"]
)
_md.core.ruler.push("mark_images_in_links", _mark_images_in_links)
_md.add_render_rule("image", _image_as_link)


def render_markdown(text: str) -> str:
    key = ("markdown", _limits(), text)
    if (found := MEMO.get(key)) is not None:
        return found
    return MEMO.keep(key, _render_markdown(text), len(text))


def _render_markdown(text: str) -> str:
    rendered = _md.render(_prepare(text))
    return nh3.clean(
        rendered,
        tags=ALLOWED_TAGS,
        clean_content_tags={"script", "style"},
        attributes=ALLOWED_ATTRIBUTES,
        allowed_classes=ALLOWED_CLASSES,
        url_schemes=URL_SCHEMES,
        link_rel=LINK_REL,
        strip_comments=True,
    )


def render_snippet(text: str, pattern: re.Pattern | None, width: int) -> str:
    """A window of width characters of text (its white space runs made one space) around the
    first match of pattern (search.match_pattern), with "…" where it is cut: escaped piece by
    piece, and only our own <mark> tags, around each match, added. No pattern: the start."""
    text = " ".join(neutralise(text).split())
    if pattern is None:
        return html.escape(text[:width])
    first = pattern.search(text)
    begin = max(0, (first.start() if first else 0) - width // 3)
    window = text[begin : begin + width]
    parts = ["…" if begin else ""]
    last = 0
    for match in pattern.finditer(window):
        parts.append(html.escape(window[last : match.start()]))
        parts.append(f"<mark>{html.escape(match.group())}</mark>")
        last = match.end()
    parts.append(html.escape(window[last:]))
    if begin + width < len(text):
        parts.append("…")
    return "".join(parts)
