"""Small Claude Code session files for the tests that need one written on the spot."""

from __future__ import annotations

from pathlib import Path

import orjson


def write_tool_turn(
    path: Path, prompt: str, calls: list[dict], results: dict[str, str] | None = None
) -> Path:
    """A Claude Code session file: the prompt (u1), one assistant line making the tool
    calls (a1), then a result line (r1, r2, ...) for each call id in results."""
    base = {"sessionId": path.stem, "cwd": "/home/me/app", "timestamp": "2025-02-08T19:00:00Z"}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": prompt},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {"id": "msg1", "role": "assistant", "model": "m", "content": calls},
        },
    ]
    for number, (call_id, output) in enumerate((results or {}).items(), start=1):
        result = {"type": "tool_result", "tool_use_id": call_id, "content": output}
        lines.append(
            {
                **base,
                "type": "user",
                "uuid": f"r{number}",
                "parentUuid": "a1",
                "message": {"role": "user", "content": [result]},
            }
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return path


def write_sessions(root: Path, sessions: int, replies: int, ids: str = "msg") -> None:
    """Claude Code sessions of `replies` turns each under root/-home-me-app/NNNN.jsonl, the
    same bytes wherever they are written: two roots written alike hold each other's every
    reply (and its usage), as a clone's copies do; replies of other `ids` are their own."""
    for number in range(sessions):
        base = {"sessionId": f"s{number}", "cwd": "/home/me/app"}
        lines, parent = [], None
        for reply in range(replies):
            at = f"2026-02-08T19:{reply:02d}:{number % 60:02d}Z"
            lines.append(
                {**base, "type": "user", "uuid": f"u{reply}", "parentUuid": parent, "timestamp": at,
                 "message": {"role": "user", "content": f"Step {reply} of {number}"}}
            )  # fmt: skip
            message = {
                "id": f"{ids}_{number}_{reply}", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Done."}],
                "usage": {"input_tokens": 100, "output_tokens": 10},
            }  # fmt: skip
            lines.append(
                {**base, "type": "assistant", "uuid": f"a{reply}", "parentUuid": f"u{reply}", "timestamp": at,
                 "message": message}
            )  # fmt: skip
            parent = f"a{reply}"
        path = root / "-home-me-app" / f"{number:04d}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
