"""What people call each session format, and the small mark shown beside that name.

The one place a format key ("claude_code") becomes what a page shows ("Claude Code"):
templatetags/display.py and the activity page's labels read it. The marks are simple shapes
drawn for this app (no agent's logo), one SVG file each in static/marks/, in colours that
read on the light and the dark background alike. They are images, not inline SVG: a page
holds no <svg> that a transcript could have smuggled in (tests/test_pages.py checks).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # what the pages call the format
    mark: str  # its mark, a path under static/


FAMILIES = {
    "claude_code": Family("Claude Code", "marks/claude_code.svg"),  # a shell prompt
    "openclaw": Family("OpenClaw", "marks/openclaw.svg"),  # a claw's three scratches
    "pi": Family("pi", "marks/pi.svg"),  # the letter
    "go_agent": Family("Go agent", "marks/go_agent.svg"),  # a hexagon going forward
    "fluux_xmpp": Family("Fluux", "marks/fluux_xmpp.svg"),  # two chat bubbles
    "codex": Family("Codex CLI", "marks/codex.svg"),  # a prompt in a circle
}


def format_name(key: str) -> str:
    """The name a person knows the format by; a key this app does not know, as it is."""
    family = FAMILIES.get(key)
    return family.name if family else key
