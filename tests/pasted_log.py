"""A pasted log of several MB on one line, and a Claude Code session that reads it."""

from .claude_files import write_tool_turn


def pasted_log() -> str:
    # Past the first part, markup that must come back escaped.
    lines = [f"2026-01-01 12:00:{n % 60:02d} worker {n}: request served" for n in range(60_000)]
    lines[3_000] = "<script>alert('rest')</script>"
    return "\n".join(lines)


def write_pasted_log_session(root) -> None:
    """A Claude Code root of one session whose tool result is the pasted log."""
    write_tool_turn(root / "-w" / "s.jsonl", pasted_log(), [{"type": "text", "text": "Read it."}])
