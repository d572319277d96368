"""Hostile lines: each format's sample lines with a value no reader should stop at (nested
1,023 deep, a number past 64 bits, a NUL, half an emoji) put in any field, then a plain line
that must still index; and a Claude Code reply whose tool input nests too deep."""

import copy
import json
from pathlib import Path

import orjson

from .fixture_files import FIXTURES

SAMPLES = {
    "claude_code": sorted((FIXTURES / "claude_code").glob("*.jsonl")),
    "go_agent": sorted((FIXTURES / "go_agent").glob("*.jsonl")),
    "openclaw": sorted((FIXTURES / "openclaw").glob("*.jsonl")),
    "fluux_xmpp": sorted((FIXTURES / "fluux_xmpp").glob("*.jsonl")),
    "codex": sorted((FIXTURES / "codex").glob("*.jsonl")),
    "gemini_cli": sorted((FIXTURES / "gemini_cli").glob("*.jsonl")),
}
# Formats whose entries are numbered by their place in the session rather than by the line of
# the file they came from: Gemini CLI's records rewrite earlier messages (readers/gemini_cli.py).
NUMBERED_BY_PLACE = {"gemini_cli"}
# A plain line of each format, written after each hostile one: it must index.
AFTER = "surfaced after the hostile line"
NORMAL_LINE = {
    "claude_code": {
        "type": "user",
        "uuid": "after-1",
        "parentUuid": None,
        "sessionId": "s",
        "timestamp": "2026-02-01T10:00:00Z",
        "message": {"role": "user", "content": AFTER},
    },
    "go_agent": {
        "type": "message",
        "id": "after-1",
        "parent_id": "",
        "timestamp": "2026-02-01T10:00:00Z",
        "message": {"role": "user", "content": [{"type": "text", "text": AFTER}]},
    },
    "openclaw": {
        "type": "message",
        "id": "after-1",
        "parentId": None,
        "timestamp": "2026-02-01T10:00:00Z",
        "message": {"role": "user", "content": AFTER},
    },
    "fluux_xmpp": {"type": "message", "role": "user", "content": AFTER, "ts": "2026-02-01T10:00:00Z"},
    "codex": {
        "timestamp": "2026-02-01T10:00:00Z",
        "type": "response_item",
        "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": AFTER}]},
    },
    "gemini_cli": {
        "id": "after-1",
        "timestamp": "2026-02-01T10:00:00Z",
        "type": "user",
        "content": [{"text": AFTER}],
    },
}


def json_fields(value, path=()):
    """The path of every value in a JSON value, containers included, depth first."""
    if path:
        yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from json_fields(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from json_fields(item, (*path, index))


def sample_fields(fmt: str) -> list[tuple[dict, tuple]]:
    """Every field of the format's sample lines, once per line type and field:
    (a line holding it, its path). List positions count as one field."""
    seen = {}
    for path in SAMPLES[fmt]:
        for raw in path.read_bytes().splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict):
                continue
            for field in json_fields(line):
                shape = (str(line.get("type")), *("[]" if isinstance(k, int) else k for k in field))
                seen.setdefault(shape, (line, field))
    return list(seen.values())


def nested(levels: int, leaf: str) -> str:
    """JSON text of levels of lists and objects in turn around leaf (json.dumps would recurse)."""
    opening = "".join("[" if level % 2 == 0 else '{"deeper": ' for level in range(levels))
    closing = "".join("]" if level % 2 == 0 else "}" for level in reversed(range(levels)))
    return opening + json.dumps(leaf) + closing


def with_value(line: dict, field: tuple, value) -> dict:
    line = copy.deepcopy(line)
    holder = line
    for key in field[:-1]:
        holder = holder[key]
    holder[field[-1]] = value
    return line


def hostile_line(line: dict, field: tuple, kind: str) -> bytes:
    """The line with the value at field replaced by a HOSTILE_VALUES one."""
    if kind.startswith("deep"):  # nested so that the whole line is that deep: orjson reads 1,024 at most
        value = nested(int(kind.removeprefix("deep")) - len(field), "abyssal")
    else:
        value = HOSTILE_VALUES[kind]
    text = json.dumps(with_value(line, field, "PLACEHOLDER")).encode()
    return text.replace(b'"PLACEHOLDER"', value.encode("utf-8", "surrogatepass"), 1)


HOSTILE_VALUES = {
    "huge": "1" + "0" * 300,  # a number past 64 bits: orjson reads it as a float
    "nul": '"before\\u0000after"',
    "surrogate": '"a cut emoji \\ud83c"',  # JSON.stringify of a String.slice between the halves
    "surrogate_bytes": '"a cut emoji \ud83c"',  # the same, written raw: not UTF-8
}
HOSTILE_KINDS = ("deep300", "deep900", "deep1023", *HOSTILE_VALUES)
HOSTILE_FIELDS = {fmt: sample_fields(fmt) for fmt in SAMPLES}


def write_hostile(path: Path, fmt: str, line: dict, field: tuple, kind: str) -> None:
    """A file of two lines: the hostile one, then NORMAL_LINE."""
    path.write_bytes(hostile_line(line, field, kind) + b"\n" + json.dumps(NORMAL_LINE[fmt]).encode() + b"\n")


HOSTILE_LAYOUT = {  # where a root of each format keeps its n-th session file
    "claude_code": lambda root, n: root / "-home-x" / f"{n:08x}-0000-4000-8000-000000000000.jsonl",
    "go_agent": lambda root, n: root / f"20260201-100000-{n:08x}.jsonl",
    "openclaw": lambda root, n: root / "agents" / "main" / "sessions" / f"{n:08x}-0000-4000-8000-0000.jsonl",
    "fluux_xmpp": lambda root, n: root / f"user{n}@example.com" / "history.jsonl",
    "codex": lambda root, n: root / "2026" / "02" / "01" / f"rollout-2026-02-01T10-00-00-{n:08x}.jsonl",
    "gemini_cli": lambda root, n: root / "project" / "chats" / f"session-2026-02-01T10-00-{n:08x}.jsonl",
}


def write_hostile_root(root: Path, fmt: str, kinds: tuple[str, ...]) -> int:
    """A root of the format with a file per field and kind (write_hostile); how many files."""
    cases = [(line, field, kind) for line, field in HOSTILE_FIELDS[fmt] for kind in kinds]
    for n, (line, field, kind) in enumerate(cases):
        path = HOSTILE_LAYOUT[fmt](root, n)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_hostile(path, fmt, line, field, kind)
    return len(cases)


def deep_tool_call(levels: int) -> bytes:
    """A Claude Code reply calling a tool whose input nests levels deep, with a word at
    level 10, one at level 150 and one at the bottom (written as text: dumps would recurse)."""
    words = {level: f', "word": "level{level}word"' for level in (10, 150)}
    value = "".join('{"deeper": ' for _ in range(levels)) + '"bottommost"'
    value += "".join(words.get(level, "") + "}" for level in reversed(range(levels)))
    line = {
        "type": "assistant",
        "uuid": "a1",
        "parentUuid": "u1",
        "sessionId": "s",
        "timestamp": "2026-02-01T10:00:01Z",
        "message": {
            "id": "msg_1",
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "Deep", "input": "INPUT"}],
        },
    }
    return json.dumps(line).replace('"INPUT"', value).encode()


def claude_file(path: Path, *lines: dict | bytes) -> Path:
    prompt = {**NORMAL_LINE["claude_code"], "uuid": "u1", "message": {"role": "user", "content": "go deep"}}
    after = {**NORMAL_LINE["claude_code"], "parentUuid": "a1"}
    body = [json.dumps(prompt).encode()]
    body += [line if isinstance(line, bytes) else orjson.dumps(line) for line in lines]
    body += [json.dumps(after).encode()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(body) + b"\n")
    return path
