"""Template helpers of the workspace pages: Markdown through render.py, and line diffs."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django import template

from sessionviewer.templatetags.transcript import markdown

register = template.Library()
register.filter("markdown", markdown)  # one definition, through render.py


@dataclass(frozen=True, slots=True)
class DiffLine:
    kind: str  # "added", "removed", "context", "hunk" or "header"
    text: str


def _kind(line: str, number: int) -> str:
    # Only the first two lines name the sides: a removed "--" or an added "++" line is content.
    if number < 2 and line.startswith(("+++", "---")):
        return "header"
    if line.startswith("@@"):
        return "hunk"
    return {"+": "added", "-": "removed"}.get(line[:1], "context")


def diff_lines(before: str | None, after: str | None, before_name="before", after_name="after"):
    """A unified diff, line by line; None (no file) diffs as empty text."""
    old = (before or "").replace("\r\n", "\n").splitlines()
    new = (after or "").replace("\r\n", "\n").splitlines()
    diff = difflib.unified_diff(old, new, before_name, after_name, lineterm="")
    return [DiffLine(_kind(line, number), line) for number, line in enumerate(diff)]


@register.simple_tag
def diff_rows(before: str | None, after: str | None, before_name="before", after_name="after"):
    return diff_lines(before, after, before_name, after_name)
