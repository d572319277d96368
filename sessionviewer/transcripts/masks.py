"""Possible secrets masked on the transcript page. No Django: plain strings in, plain strings out.

Before a page is rendered, each value a finding names is replaced, wherever the page's entries
hold it (text, thinking, tool arguments and output, their structured extras, summaries), by a
placeholder of the same length: a character of Unicode's plane 16 (private use) naming the
mask, then fillers. The same length keeps every cut, line wrap and diff where it was. Markdown,
Pygments and escaping leave these characters alone; after rendering, swap() turns each into
its mark (or, inside a tag, the masked text) and drops the fillers. A renderer may split a run
between elements (Pygments' error tokens): the first character carries the mark, the fillers
go wherever they are.

The session file's own plane-16 characters would pass for placeholders: they are replaced by
U+FFFD in every string masked here.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from ahocorasick_rs import AhoCorasick, MatchKind

BASE = 0x100000  # the placeholder naming mask n is chr(BASE + n)
FILLER = "\U0010fffd"
LIMIT = 0xFFFD  # masks one page can name: one code point each below FILLER
_PLANE16 = "\U00100000-\U0010ffff"
_ANY_PLACEHOLDER = re.compile(f"[{_PLANE16}]")
# Where a mark's button cannot go: interactive content holds no other.
_INTERACTIVE = ("a", "button", "summary", "label", "select", "textarea")
# What swap() stops at: an interactive element's tag, a tag holding a placeholder, a run of
# placeholders. Every other tag the regex engine passes over without calling back.
_SWAP = re.compile(
    rf"<(/?)(?:{'|'.join(_INTERACTIVE)})\b[^>]*>|<[^>]*[{_PLANE16}][^>]*>|[{_PLANE16}]+", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Mask:
    value: str  # what the finding found: never rendered
    mark: str  # the HTML shown in its place in text
    mark_inert: str  # the same without a control: inside a link, a button or a summary
    text: str  # the masked text, escaped: inside an attribute


def without_placeholders(text: str) -> str:
    """text with its plane-16 characters replaced by U+FFFD: for what the page shows outside
    the masked entries (a title), which must not pass for a mark."""
    return _ANY_PLACEHOLDER.sub("\ufffd", text) if _ANY_PLACEHOLDER.search(text) else text


def _placeholder(n: int, value: str) -> str:
    """chr(BASE + n), then a filler for each character of value after the first; its line
    breaks kept (a private key's lines), so that lines are where they were."""
    return chr(BASE + n) + "".join("\n" if c == "\n" else FILLER for c in value[1:])


class Masks:
    """The masks of one page: apply() before rendering, swap() after."""

    def __init__(self, masks: list[Mask]):
        self.masks = [m for m in masks if m.value][:LIMIT]
        values = [m.value for m in self.masks]
        self._placeholders = [_placeholder(n, value) for n, value in enumerate(values)]
        # One pass over a text finds every value (ahocorasick-rs): over a 2 KB tool output,
        # 1.3 µs for 200 values, where a regex alternating them took 545 µs (46 for 20). The
        # longest at a place wins, so a value that holds another is masked whole.
        self._values = AhoCorasick(values, matchkind=MatchKind.LeftmostLongest) if values else None

    def __bool__(self) -> bool:
        return self._values is not None

    def text(self, text: str) -> str:
        """text with each value replaced by its placeholder (the file's plane-16 characters by U+FFFD)."""
        found = self._values.find_matches_as_indexes(text) if self._values is not None else []
        text = without_placeholders(text)  # one code point for one: the places found hold
        if not found:
            return text
        parts, at = [], 0
        for n, start, end in found:
            parts += (text[at:start], self._placeholders[n])
            at = end
        parts.append(text[at:])
        return "".join(parts)

    def apply(self, value):
        """A copy of value (strings, lists, tuples, dicts and dataclasses, nested) with every
        string masked; the same object where nothing changed, so most of a page is not copied."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            masked = [self.apply(item) for item in value]
            return value if all(a is b for a, b in zip(masked, value, strict=True)) else masked
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            masked = tuple(self.apply(item) for item in value)
            return value if all(a is b for a, b in zip(masked, value, strict=True)) else masked
        if isinstance(value, dict):
            masked = {self.apply(k): self.apply(v) for k, v in value.items()}
            same = len(masked) == len(value) and all(k in value and value[k] is v for k, v in masked.items())
            return value if same else masked
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.apply_fields(value, [f.name for f in dataclasses.fields(value) if f.init])
        return value  # numbers, dates, model instances: nothing a finding names

    def apply_fields(self, value, names):
        """A copy of the dataclass value with these fields masked (value itself if none changed)."""
        changes = {}
        for name in names:
            old = getattr(value, name)
            new = self.apply(old)
            if new is not old:
                changes[name] = new
        return dataclasses.replace(value, **changes) if changes else value

    def swap(self, html: str) -> str:
        """The rendered page with each placeholder replaced by its mark: in text the mark (with
        its control where one may go), in a tag the masked text; the fillers dropped."""
        if not _ANY_PLACEHOLDER.search(html):
            return html
        inside = 0  # interactive elements open here: a mark in one gets no control of its own

        def replace(match: re.Match) -> str:
            nonlocal inside
            found = match.group()
            if found[0] != "<":
                return "".join(self._in_text(char, inside > 0) for char in found)
            if _ANY_PLACEHOLDER.search(found):
                found = _ANY_PLACEHOLDER.sub(lambda m: self._in_tag(m.group()), found)
            if match.group(1) is not None:  # an interactive element's tag
                inside = max(0, inside - 1) if match.group(1) else inside + 1
            return found

        return _SWAP.sub(replace, html)

    def _in_text(self, char: str, inert: bool) -> str:
        mask = self._mask(char)
        if mask is None:
            return ""
        return mask.mark_inert if inert else mask.mark

    def _mask(self, char: str) -> Mask | None:
        n = ord(char) - BASE
        return self.masks[n] if 0 <= n < len(self.masks) else None

    def _in_tag(self, char: str) -> str:
        mask = self._mask(char)
        return mask.text if mask is not None else ""
