"""Go agent session files written on the spot: a line at a time, or a whole session of
messages that each reply to the last."""

from pathlib import Path

import orjson


def go_line(number: int, parent: str, role: str, text: str) -> bytes:
    message = {"role": role, "content": [{"type": "text", "text": text}]}
    if role == "assistant":
        message |= {"model": "test-model", "usage": {"input": 10, "output": 5}}
    entry = {
        "type": "message",
        "id": f"m{number:05d}",
        "parent_id": parent,
        "timestamp": f"2026-01-01T{number // 3600 % 24:02d}:{number // 60 % 60:02d}:{number % 60:02d}Z",
        "role": role,
        "message": message,
    }
    return orjson.dumps(entry) + b"\n"


def write_go_session(folder: Path, count: int, name: str = "20260101-000000-0000abcd.jsonl") -> Path:
    """A Go agent session of count messages, user and assistant in turn, each the reply to the last."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    lines = [
        b'{"type":"session","id":"gen-0000","version":1,"timestamp":"2026-01-01T00:00:00Z","cwd":"/tmp/gen"}\n'
    ]
    for n in range(1, count + 1):
        role = "user" if n % 2 else "assistant"
        lines.append(go_line(n, f"m{n - 1:05d}" if n > 1 else "", role, f"Message number {n} ({role})"))
    path.write_bytes(b"".join(lines))
    return path


def go_tool_line(number: int, parent: str, call_id: str, result: str | None = None) -> bytes:
    """An assistant line calling bash (result None), or the tool's result line."""
    if result is None:
        call = {"type": "tool_call", "id": call_id, "name": "bash", "arguments": {"command": "ls"}}
        message = {"role": "assistant", "content": [call], "model": "test-model"}
    else:
        message = {"role": "tool_result", "tool_call_id": call_id, "tool_name": "bash", "content": result}
    entry = {"type": "message", "id": f"m{number:05d}", "parent_id": parent, "message": message}
    return orjson.dumps(entry | {"timestamp": f"2026-01-01T00:00:{number:02d}Z"}) + b"\n"
