"""Template helpers of the workspace pages: Markdown through render.py, and line diffs."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from django import template

from sessionviewer.templatetags.transcript import markdown
from sessionviewer.workspaces import memory_files

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
def memory_file(kind: str) -> memory_files.MemoryFile:
    """The registry's file of a kind ("knowledge", "files"): its name and title for a page."""
    return memory_files.first_of(memory_files.Kind(kind))


@register.simple_tag
def global_memory_files() -> tuple[str, ...]:
    """The root's files (the global persona files), in the prompt's order."""
    return memory_files.root_names()


@register.simple_tag
def diff_rows(before: str | None, after: str | None, before_name="before", after_name="after"):
    return diff_lines(before, after, before_name, after_name)
