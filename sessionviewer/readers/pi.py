"""pi, the coding agent (github.com/badlogic/pi-mono): sessions it writes itself.

    {"type":"session","version":3,"id":"d703a1a9-...","timestamp":"2025-11-20T23:33:50.805Z","cwd":"/home/user/project"}
    {"type":"message","id":"6f2bd1b4","parentId":null,"timestamp":"2025-11-20T23:33:50.804Z","message":{"role":"user","content":[{"type":"text","text":"hi"}]}}

pi keeps ~/.pi/agent/sessions/--<cwd with "/" as "-">--/<time>_<uuid>.jsonl. OpenClaw writes
its transcripts with pi's own library, line for line the same, so one reader reads both
(openclaw.py): what makes a transcript pi's is where it lies and what it holds, decided by
openclaw.discover (a pi header outside OpenClaw's folders, with nothing of its gateway).
"""

from __future__ import annotations

from pathlib import Path

from . import Format
from .openclaw import discover, envelope_parts, model_answered, parse_line, prompt_text, read, read_output

FORMAT = "pi"
THIS_FORMAT = Format(
    FORMAT,
    "pi",
    "marks/pi.svg",  # the letter
    makes_projects=True,
    prompt_text=prompt_text,
    model_answered=model_answered,
)

__all__ = [
    "FORMAT",
    "THIS_FORMAT",
    "discover",
    "envelope_parts",
    "looks_like",
    "model_answered",
    "parse_line",
    "prompt_text",
    "read",
    "read_output",
]


def looks_like(path: Path, first: dict | None) -> bool:
    """Never by detection: an untagged root of pi sessions is detected as OpenClaw's, whose
    discovery tells each pi session apart. Tag a root pi=PATH to say it."""
    return False
