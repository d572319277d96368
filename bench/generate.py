"""Realistic synthetic session trees for the benchmarks, in every format the indexer reads.

    python bench/generate.py OUT --mb 50                 # ~50 MB split evenly over the four formats
    python bench/generate.py OUT --mb 0 --small-files 10000   # many tiny sessions (re-scan figure)
    python bench/generate.py OUT --mb 0 --large-mb 20         # one big Claude Code session (appends, memory)
    python bench/generate.py OUT --history 6387          # a user's history: 6,387 sessions in five formats
    python bench/generate.py OUT --small-history         # 5 Claude Code sessions with subagents, 15 MiB

Each format is written in the layout its agent uses, so every root can be given
to the indexer as it is:

    OUT/claude-code/projects/-home-dev-projects-<name>/<session>.jsonl (+ <session>/subagents/agent-*.jsonl)
    OUT/go-agent/sessions/YYYYMMDD-HHMMSS-<8hex>.jsonl
    OUT/openclaw/agents/<agent>/sessions/sessions.json and <sessionId>.jsonl
    OUT/fluux/memory/<jid>/history.jsonl (+ sessions/YYYYMMDD-HHMMSS.jsonl, user.md, memory.md)
    OUT/codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDTHH-MM-SS-<uuid7>.jsonl (the history shapes)

The same seed writes the same bytes: every choice comes from one random.Random(seed).
"""

from __future__ import annotations

import argparse
import random
import time
import uuid
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path

import orjson

FORMATS = ("claude_code", "go_agent", "openclaw", "fluux_xmpp")
MB = 1024 * 1024

# Roots below OUT, by format.
ROOT_DIRS = {
    "claude_code": Path("claude-code/projects"),
    "go_agent": Path("go-agent/sessions"),
    "openclaw": Path("openclaw"),
    "fluux_xmpp": Path("fluux/memory"),
    "codex": Path("codex/sessions"),  # ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl (history shapes only)
}

_VOCABULARY = (
    "the a to of and in is it that for this we on with as be not are should can will file test index "
    "session reader line parse value error function return path config model query database request "
    "response cache token user assistant tool result output input thread branch commit merge build run "
    "check update change add remove fix bug issue feature module class method field string number list "
    "object null true false import export route view template render page server client socket event "
    "handler timeout retry batch offset limit append read write flush lock transaction schema migration "
    "column table row key type format json stream chunk buffer memory size time date log debug info warn "
    "looks like need first then after before because so but also just only maybe probably let me see now"
)
_WORDS = _VOCABULARY.split()

_LOG_TEMPLATES = (
    "{ts} [info] GET /api/sessions/{n} 200 in {ms}ms",
    '{ts} [debug] QUERY OK source="sessionviewer_entry" db={ms}.{n}ms idle={n}ms',
    "{ts} [warning] retrying request {n} after timeout ({ms}ms)",
    '  File "/home/dev/projects/{w}/{w}.py", line {n}, in {w}_{w}',
    "    {w} = {w}.{w}({w}, {n})",
    "def {w}_{w}(self, {w}: int = {n}) -> dict:",
    '    return {{"{w}": self.{w}, "{w}": {n}}}',
    "-rw-r--r-- 1 dev dev {n} Feb 10 22:{ms2} {w}_{w}.py",
    "src/{w}/{w}.ts:{n}:  const {w} = await {w}({w});",
    "PASSED tests/test_{w}.py::test_{w}_{w} [{ms2}%]",
    "FAILED tests/test_{w}.py::test_{w}_{w} - AssertionError: {n} != {ms}",
    "     {n}\t    {w}.{w}({w}, {w}={n})",
    "warning: unused variable `{w}` --> src/{w}.rs:{n}:{ms2}",
)


@dataclass
class Tally:
    files: int = 0
    lines: int = 0
    bytes: int = 0


@dataclass
class Generated:
    roots: list[tuple[str, Path]] = field(default_factory=list)
    by_format: dict[str, Tally] = field(default_factory=dict)

    def tally(self, fmt: str) -> Tally:
        return self.by_format.setdefault(fmt, Tally())

    def to_dict(self) -> dict:
        totals = Tally()
        for t in self.by_format.values():
            totals.files, totals.lines, totals.bytes = (
                totals.files + t.files,
                totals.lines + t.lines,
                totals.bytes + t.bytes,
            )
        return {
            "roots": [(fmt, str(path)) for fmt, path in self.roots],
            "files": totals.files,
            "lines": totals.lines,
            "bytes": totals.bytes,
            "by_format": {fmt: asdict(t) for fmt, t in self.by_format.items()},
        }


class Text:
    """Slices of two pre-built corpora: prose for messages, log and code lines for tool output."""

    def __init__(self, rng: random.Random, long_share: float = 0.4):
        self.rng = rng
        self.long_share = long_share  # of tool outputs, those of several KB
        words = []
        for _ in range(40_000):
            word = rng.choice(_WORDS)
            if rng.random() < 0.06:
                word += rng.choice((".", ",", ".\n\n", ":\n- ", "?"))
            words.append(word)
        self.prose = " ".join(words)
        lines = []
        for _ in range(5_000):
            lines.append(
                rng.choice(_LOG_TEMPLATES).format(
                    ts=f"22:{rng.randrange(60):02d}:{rng.randrange(60):02d}.{rng.randrange(1000):03d}",
                    n=rng.randrange(1, 5000),
                    ms=rng.randrange(1, 900),
                    ms2=rng.randrange(10, 99),
                    w=rng.choice(_WORDS),
                )
            )
        self.output = "\n".join(lines)

    def _slice(self, corpus: str, size: int) -> str:
        size = max(1, min(size, len(corpus) - 1))
        start = self.rng.randrange(len(corpus) - size)
        return corpus[start : start + size]

    def words(self, low: int, high: int) -> str:
        return self._slice(self.prose, self.rng.randint(low, high)).strip() or "ok"

    def tool_output(self) -> str:
        """Mostly short outputs, and a long one of several KB now and then."""
        rng = self.rng
        size = rng.randint(2_000, 12_000) if rng.random() < self.long_share else rng.randint(80, 900)
        return self._slice(self.output, size)

    def signature(self) -> str:
        return "".join(
            self.rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", k=600)
        )


class Clock:
    """Session time: milliseconds since the epoch, moving forward by a few seconds a line."""

    def __init__(self, rng: random.Random, start_ms: int):
        self.rng, self.ms = rng, start_ms

    def tick(self, low: float = 0.005, high: float = 4.0) -> int:
        self.ms += int(self.rng.uniform(low, high) * 1000)
        return self.ms

    def iso(self) -> str:
        seconds, ms = divmod(self.ms, 1000)
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{ms:03d}Z"


class Sink:
    """One session file being written: counts what goes in."""

    def __init__(self, path: Path, tally: Tally):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.tally = path, tally
        self.handle = open(path, "wb")  # noqa: SIM115 (closed in close())
        self.bytes = self.lines = 0
        tally.files += 1

    def emit(self, obj: dict) -> None:
        data = orjson.dumps(obj) + b"\n"
        self.handle.write(data)
        self.bytes += len(data)
        self.lines += 1
        self.tally.lines += 1
        self.tally.bytes += len(data)

    def close(self) -> None:
        self.handle.close()


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _hex(rng: random.Random, n: int) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _start_ms(rng: random.Random) -> int:
    # Somewhere in 2025 or early 2026.
    return 1_735_689_600_000 + rng.randrange(420 * 86_400) * 1000


def _session_budget(rng: random.Random, low: int, high: int) -> int:
    """Log-uniform: many small sessions, a few big ones."""
    return int(low * (high / low) ** rng.random())


# Claude Code

_CLAUDE_TOOLS = ("Bash", "Read", "Grep", "Edit", "Glob", "WebSearch")
_CLAUDE_MODELS = ("claude-opus-4-6", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001")


class ClaudeSession:
    """One Claude Code transcript: streamed replies, parallel tools, hooks, rewinds, compactions."""

    def __init__(
        self, sink: Sink, rng: random.Random, text: Text, cwd: str, session_id: str, agent_id: str = ""
    ):
        self.sink, self.rng, self.text, self.cwd = sink, rng, text, cwd
        self.clock = Clock(rng, _start_ms(rng))
        self.session_id = session_id
        self.agent_id = agent_id
        self.model = rng.choice(_CLAUDE_MODELS)
        self.slug = "-".join(rng.choice(_WORDS) for _ in range(3))
        self.last: str | None = None
        self.replies: deque[str] = deque(maxlen=12)  # assistant lines a rewind may branch from
        self.subagents: list[tuple[str, str]] = []  # (agent id, prompt) started by Task calls
        self.task_share = 0.01  # of tool calls, those that start a subagent (delegate() starts one always)

    def _base(self, kind: str, parent: str | None) -> dict:
        line = {
            "parentUuid": parent,
            "isSidechain": bool(self.agent_id),
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.38",
            "gitBranch": "master",
        }
        if self.agent_id:
            line["agentId"] = self.agent_id
        else:
            line["slug"] = self.slug
        line["type"] = kind
        return line

    def _emit(self, line: dict, advance: bool = True) -> str:
        self.clock.tick()
        line["uuid"] = uid = _uuid(self.rng)
        line["timestamp"] = self.clock.iso()
        self.sink.emit(line)
        if advance:
            self.last = uid
        return uid

    def summary(self, leaf: str) -> None:
        self.sink.emit({"type": "summary", "summary": self.text.words(30, 80), "leafUuid": leaf})

    def session_start(self) -> None:
        for hook in ("SessionStart:startup", "SessionStart:startup"):
            line = self._base("progress", self.last)
            line["data"] = {"type": "hook_progress", "hookEvent": "SessionStart", "hookName": hook}
            line["parentToolUseID"] = line["toolUseID"] = _uuid(self.rng)
            self._emit(line)

    def prompt(self, content: str | None = None) -> None:
        rng = self.rng
        parent = self.last
        if len(self.replies) > 4 and rng.random() < 0.06:
            parent = rng.choice(list(self.replies)[:-2])  # a rewind: the prompt branches off an earlier reply
        prompt_id = _uuid(rng)
        if not self.agent_id:
            self.sink.emit(
                {
                    "type": "file-history-snapshot",
                    "messageId": prompt_id,
                    "snapshot": {
                        "messageId": prompt_id,
                        "trackedFileBackups": {},
                        "timestamp": self.clock.iso(),
                    },
                    "isSnapshotUpdate": False,
                }
            )
        line = self._base("user", parent)
        line["message"] = {"role": "user", "content": content or self.text.words(20, 600)}
        line["thinkingMetadata"] = {"maxThinkingTokens": 31999}
        line["todos"] = []
        line["permissionMode"] = "bypassPermissions"
        self.clock.tick(5, 60)
        line["uuid"] = prompt_id
        line["timestamp"] = self.clock.iso()
        self.sink.emit(line)
        self.last = prompt_id

    def _assistant(self, message_id: str, usage: dict, block: dict) -> str:
        line = self._base("assistant", self.last)
        line["message"] = {
            "model": self.model,
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "content": [block],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
        }
        line["requestId"] = "req_" + _hex(self.rng, 24)
        uid = self._emit(line)
        if block["type"] == "text":
            self.replies.append(uid)
        return uid

    def _tool_call(self, name: str = "") -> dict:
        rng, text = self.rng, self.text
        name = name or rng.choice(_CLAUDE_TOOLS)
        if not self.agent_id and rng.random() < self.task_share:
            name = "Task"
        args = {
            "Bash": lambda: {"command": text.words(10, 80), "description": text.words(10, 40)},
            "Read": lambda: {"file_path": f"{self.cwd}/{rng.choice(_WORDS)}/{rng.choice(_WORDS)}.py"},
            "Grep": lambda: {"pattern": rng.choice(_WORDS), "path": self.cwd, "output_mode": "content"},
            "Edit": lambda: {
                "file_path": f"{self.cwd}/{rng.choice(_WORDS)}.py",
                "old_string": text.tool_output()[:400],
                "new_string": text.tool_output()[:400],
            },
            "Glob": lambda: {"pattern": f"**/*{rng.choice(_WORDS)}*.py"},
            "WebSearch": lambda: {"query": text.words(20, 60)},
            "Task": lambda: {
                "description": text.words(10, 40),
                "prompt": text.words(200, 1200),
                "subagent_type": "general-purpose",
            },
        }[name]()
        return {
            "type": "tool_use",
            "id": "toolu_01" + _hex(rng, 22),
            "name": name,
            "input": args,
            "caller": {"type": "direct"},
        }

    def _tool_result(self, call: dict, call_line: str) -> None:
        rng = self.rng
        error = rng.random() < 0.04
        output = "<tool_use_error>" + self.text.words(30, 200) + "</tool_use_error>" if error else None
        output = output or self.text.tool_output()
        if call["name"] == "Task":
            agent_id = _hex(rng, 7)
            self.subagents.append((agent_id, call["input"]["prompt"]))
            result = {
                "status": "completed",
                "agentId": agent_id,
                "totalDurationMs": rng.randrange(5000, 90000),
            }
        elif call["name"] == "Bash":
            result = {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        elif call["name"] == "Read":
            path = call["input"]["file_path"]
            result = {
                "type": "text",
                "file": {"filePath": path, "content": output, "numLines": output.count("\n")},
            }
        else:
            result = {
                "durationMs": rng.randrange(5, 3000),
                "numFiles": rng.randrange(1, 40),
                "truncated": False,
            }
        line = self._base("user", call_line)
        line["message"] = {
            "role": "user",
            "content": [
                {"tool_use_id": call["id"], "type": "tool_result", "content": output, "is_error": error}
            ],
        }
        line["toolUseResult"] = "Error: " + output if error else result
        line["sourceToolAssistantUUID"] = call_line
        self._emit(line)

    def _hook(self, event: str, call: dict, parent: str) -> None:
        line = self._base("progress", parent)
        line["data"] = {
            "type": "hook_progress",
            "hookEvent": event,
            "hookName": f"{event}:{call['name']}",
            "command": "${CLAUDE_PLUGIN_ROOT}/scripts/pre-commit-check.sh",
        }
        line["toolUseID"] = line["parentToolUseID"] = call["id"]
        self._emit(line, advance=False)

    def turn(self) -> None:
        """A prompt, then model rounds until one answers without tools."""
        rng = self.rng
        self.prompt()
        for _ in range(rng.randint(1, 5)):
            message_id = "msg_01" + _hex(rng, 22)
            usage = {
                "input_tokens": rng.randrange(1, 20),
                "cache_creation_input_tokens": rng.randrange(0, 9000),
                "cache_read_input_tokens": rng.randrange(10_000, 90_000),
                "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 208},
                "output_tokens": rng.randrange(1, 2000),
                "service_tier": "standard",
            }
            if rng.random() < 0.5:
                thought = {
                    "type": "thinking",
                    "thinking": self.text.words(100, 1500),
                    "signature": self.text.signature(),
                }
                self._assistant(message_id, usage, thought)
            if rng.random() < 0.7:
                self._assistant(message_id, usage, {"type": "text", "text": self.text.words(40, 1200)})
            n_calls = rng.choice((0, 1, 1, 1, 2, 2, 3))
            calls = []
            for _ in range(n_calls):
                call = self._tool_call()
                calls.append((call, self._assistant(message_id, usage, call)))
            if not calls:
                break
            for call, call_line in calls:
                self._hook("PreToolUse", call, call_line)
            if len(calls) > 1 and rng.random() < 0.5:
                calls.reverse()  # parallel results come back in any order
            for call, call_line in calls:
                self._tool_result(call, call_line)
        if not self.replies or self.replies[-1] != self.last:
            self._assistant(
                "msg_01" + _hex(rng, 22),
                {"input_tokens": 3, "output_tokens": 90},
                {"type": "text", "text": self.text.words(40, 900)},
            )
        self._end_of_turn()

    def delegate(self) -> None:
        """A turn that hands its work to a subagent: one Task call, its result, a reply."""
        rng = self.rng
        self.prompt()
        message_id = "msg_01" + _hex(rng, 22)
        usage = {"input_tokens": rng.randrange(1, 20), "output_tokens": rng.randrange(50, 900)}
        call = self._tool_call("Task")
        self._tool_result(call, self._assistant(message_id, usage, call))
        self._assistant(
            "msg_01" + _hex(rng, 22),
            {"input_tokens": 3, "output_tokens": 90},
            {"type": "text", "text": self.text.words(40, 900)},
        )
        self._end_of_turn()

    def _end_of_turn(self) -> None:
        rng = self.rng
        if self.agent_id:
            return
        line = self._base("system", self.last)
        if rng.random() < 0.3:
            line["subtype"] = "stop_hook_summary"
            line["hookCount"] = 1
            line["hookInfos"] = [{"command": "/home/dev/.claude/hooks/tmux-waiting.sh mark"}]
            line["hookErrors"] = []
            line["preventedContinuation"] = False
            line["level"] = "suggestion"
        else:
            line["subtype"] = "turn_duration"
            line["durationMs"] = rng.randrange(2_000, 400_000)
            line["isMeta"] = False
        self._emit(line)
        if rng.random() < 0.08:
            self.sink.emit(
                {
                    "type": "queue-operation",
                    "operation": "enqueue",
                    "timestamp": self.clock.iso(),
                    "sessionId": self.session_id,
                    "content": "/mcp",
                }
            )
            line = self._base("system", self.last)
            line["subtype"] = "local_command"
            line["content"] = "<command-name>/mcp</command-name>\n<command-message>mcp</command-message>"
            line["level"] = "info"
            line["isMeta"] = False
            self._emit(line)

    def compact(self) -> None:
        """A /compact: a boundary with no parent, then the summary as a user line."""
        line = self._base("system", None)
        line["logicalParentUuid"] = self.last
        line["subtype"] = "compact_boundary"
        line["content"] = "Conversation compacted"
        line["isMeta"] = False
        line["level"] = "info"
        line["compactMetadata"] = {"trigger": "auto", "preTokens": self.rng.randrange(100_000, 180_000)}
        boundary = self._emit(line)
        line = self._base("user", boundary)
        line["message"] = {
            "role": "user",
            "content": "This session is being continued from a previous conversation that ran out of context. "
            "The summary below covers the earlier portion of the conversation.\n\n"
            + self.text.words(2000, 6000),
        }
        line["isVisibleInTranscriptOnly"] = True
        line["isCompactSummary"] = True
        self._emit(line)
        self.replies.clear()


def _claude(
    out: Path, budget: int, rng: random.Random, text: Text, gen: Generated, single: bool = False
) -> Path:
    root = out / ROOT_DIRS["claude_code"]
    tally = gen.tally("claude_code")
    projects = [
        f"-home-dev-projects-{rng.choice(_WORDS)}{i}" for i in range(max(1, min(8, budget // (2 * MB))))
    ]
    last_leaf: dict[str, str] = {}
    written = 0
    while written < budget:
        project = rng.choice(projects)
        cwd = "/" + project.lstrip("-").replace("-", "/")
        size = budget if single else min(_session_budget(rng, 30_000, 1_500_000), budget - written + 10_000)
        session_id = _uuid(rng)
        sink = Sink(root / project / f"{session_id}.jsonl", tally)
        session = ClaudeSession(sink, rng, text, cwd, session_id)
        if project in last_leaf and not single and rng.random() < 0.3:
            session.summary(last_leaf[project])
        session.session_start()
        next_compact = rng.randint(400_000, 900_000)
        while sink.bytes < size:
            session.turn()
            if sink.bytes > next_compact:
                session.compact()
                next_compact += rng.randint(400_000, 900_000)
        sink.close()
        written += sink.bytes
        if session.last:
            last_leaf[project] = session.last
        if single:
            return sink.path
        for agent_id, prompt in session.subagents:
            side = Sink(root / project / session.session_id / "subagents" / f"agent-{agent_id}.jsonl", tally)
            agent = ClaudeSession(side, rng, text, cwd, session.session_id, agent_id=agent_id)
            agent.model = _CLAUDE_MODELS[-1]
            agent.prompt(prompt)
            for _ in range(rng.randint(1, 4)):
                agent.turn()
            side.close()
            written += side.bytes
    return root


# Go agent


class GoSession:
    """One Go agent transcript: header, then messages, tool results and compactions linked by id."""

    def __init__(self, sink: Sink, rng: random.Random, text: Text, clock: Clock, session_id: str):
        self.sink, self.rng, self.text, self.clock = sink, rng, text, clock
        self.last = ""
        self.messages: deque[dict] = deque(maxlen=20)  # what a fork copies
        self.session_id = session_id

    def header(self, cwd: str) -> None:
        self.sink.emit(
            {
                "type": "session",
                "id": self.session_id,
                "version": 1,
                "timestamp": self.clock.iso(),
                "cwd": cwd,
            }
        )

    def _entry(self, kind: str, **fields) -> dict:
        self.clock.tick()
        entry = {"type": kind, "id": _hex(self.rng, 8), "parent_id": self.last, "timestamp": self.clock.iso()}
        entry.update(fields)
        self.sink.emit(entry)
        self.last = entry["id"]
        if kind == "message":
            self.messages.append(entry)
        return entry

    def turn(self) -> None:
        rng, text = self.rng, self.text
        content = [{"type": "text", "text": text.words(20, 500)}]
        if rng.random() < 0.03:
            content.append(
                {"type": "image", "data": text.signature() * rng.randint(2, 6), "mime_type": "image/png"}
            )
        self._entry(
            "message", role="user", message={"role": "user", "content": content, "timestamp": self.clock.ms}
        )
        for _ in range(rng.randint(1, 4)):
            content = []
            if rng.random() < 0.5:
                content.append({"type": "thinking", "thinking": text.words(100, 1200)})
            content.append({"type": "text", "text": text.words(40, 1000)})
            calls = [
                {
                    "type": "tool_call",
                    "id": "call_" + _hex(rng, 12),
                    "name": rng.choice(("bash", "read_file", "write_file", "grep")),
                    "arguments": {"command": text.words(10, 80)},
                }
                for _ in range(rng.choice((0, 1, 1, 2, 3)))
            ]
            usage = {
                "input": rng.randrange(100, 9000),
                "output": rng.randrange(10, 2000),
                "cache_read": rng.randrange(0, 50_000),
                "cache_write": rng.randrange(0, 5000),
            }
            usage["total_tokens"] = usage["input"] + usage["output"]
            message = {
                "role": "assistant",
                "content": content + calls,
                "model": "claude-sonnet-4-5",
                "provider": "anthropic",
                "usage": usage,
                "stop_reason": "tool_use" if calls else "stop",
                "timestamp": self.clock.ms,
            }
            self._entry("message", role="assistant", message=message)
            for call in calls:
                result = {
                    "role": "tool_result",
                    "tool_call_id": call["id"],
                    "tool_name": call["name"],
                    "content": [{"type": "text", "text": text.tool_output()}],
                    "details": None,
                    "is_error": rng.random() < 0.04,
                    "timestamp": self.clock.ms,
                }
                self._entry("message", role="tool_result", message=result)
            if not calls:
                break

    def compact(self) -> None:
        kept = self.messages[-1]["id"] if self.messages else self.last
        self._entry(
            "compaction",
            summary="## Goal\n" + self.text.words(1000, 4000),
            first_kept_entry_id=kept,
            tokens_before=self.rng.randrange(40_000, 160_000),
        )


def _go_path(root: Path, rng: random.Random, clock: Clock, session_id: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(clock.ms // 1000))
    return root / f"{stamp}-{session_id[:8]}.jsonl"


def _go(out: Path, budget: int, rng: random.Random, text: Text, gen: Generated, single: bool = False) -> Path:
    root = out / ROOT_DIRS["go_agent"]
    tally = gen.tally("go_agent")
    written = 0
    while written < budget:
        clock = Clock(rng, _start_ms(rng))
        session_id = _uuid(rng)
        sink = Sink(_go_path(root, rng, clock, session_id), tally)
        session = GoSession(sink, rng, text, clock, session_id)
        session.header(f"/home/dev/src/{rng.choice(_WORDS)}")
        size = budget if single else min(_session_budget(rng, 10_000, 600_000), budget - written + 5_000)
        while sink.bytes < size:
            session.turn()
            if rng.random() < 0.04:
                session.compact()
        sink.close()
        written += sink.bytes
        if single:
            return sink.path
        if rng.random() < 0.1 and session.messages:
            written += _go_fork(root, rng, text, tally, session, sink.path)
    return root


def _go_fork(
    root: Path, rng: random.Random, text: Text, tally: Tally, parent: GoSession, parent_path: Path
) -> int:
    """A /fork: a branch entry, the parent's last messages copied with their ids, then new turns."""
    clock = Clock(rng, parent.clock.ms + 60_000)
    session_id = _uuid(rng)
    sink = Sink(_go_path(root, rng, clock, session_id), tally)
    child = GoSession(sink, rng, text, clock, session_id)
    child.header(f"/home/dev/src/{rng.choice(_WORDS)}")
    copied = list(parent.messages)[-rng.randint(2, 10) :]
    sink.emit(
        {
            "type": "branch",
            "id": _hex(rng, 8),
            "timestamp": clock.iso(),
            "parent_session_path": str(parent_path),
            "fork_entry_id": copied[-1]["id"],
            "branch_summary": text.words(200, 800),
        }
    )
    previous = ""
    for entry in copied:
        sink.emit({**entry, "parent_id": previous})  # the copy is a chain, even across a compaction
        previous = entry["id"]
    child.last = copied[-1]["id"]
    for _ in range(rng.randint(1, 5)):
        child.turn()
    sink.close()
    return sink.bytes


# OpenClaw (pi transcripts, format version 3)

_OPENCLAW_MODELS = (("anthropic", "claude-sonnet-4-5"), ("openai-codex", "gpt-5.4"), ("ollama", "qwen3.5:9b"))


class OpenClawSession:
    def __init__(self, sink: Sink, rng: random.Random, text: Text, clock: Clock, session_id: str, cwd: str):
        self.sink, self.rng, self.text, self.clock = sink, rng, text, clock
        self.last: str | None = None
        self.provider, self.model = rng.choice(_OPENCLAW_MODELS)
        self.usage_total = 0
        sink.emit({"type": "session", "version": 3, "id": session_id, "timestamp": clock.iso(), "cwd": cwd})

    def _entry(self, kind: str, **fields) -> None:
        self.clock.tick()
        entry = {"type": kind, "id": _hex(self.rng, 8), "parentId": self.last, "timestamp": self.clock.iso()}
        entry.update(fields)
        self.sink.emit(entry)
        self.last = entry["id"]

    def settings(self) -> None:
        self._entry("thinking_level_change", thinkingLevel=self.rng.choice(("off", "low", "high")))
        self._entry(
            "custom",
            customType="model-snapshot",
            data={
                "timestamp": self.clock.ms,
                "provider": self.provider,
                "modelApi": self.provider,
                "modelId": self.model,
            },
        )

    def turn(self) -> None:
        rng, text = self.rng, self.text
        sender = '```json\n{\n  "label": "openclaw-tui (gateway-client)",\n  "id": "gateway-client"\n}\n```'
        prompt = (
            f"Sender (untrusted metadata):\n{sender}\n\n[Sun 2026-03-08 22:03 GMT+9] {text.words(20, 500)}"
        )
        self._entry(
            "message",
            message={
                "role": "user",
                "content": [{"type": "text", "text": prompt}],
                "timestamp": self.clock.ms,
            },
        )
        for _ in range(rng.randint(1, 4)):
            usage = {
                "input": rng.randrange(100, 15_000),
                "output": rng.randrange(10, 1500),
                "cacheRead": rng.randrange(0, 14_000),
                "cacheWrite": 0,
            }
            usage["totalTokens"] = sum(usage.values())
            usage["cost"] = {
                "input": 0.02,
                "output": 0.003,
                "cacheRead": 0.0003,
                "cacheWrite": 0,
                "total": 0.0233,
            }
            self.usage_total += usage["totalTokens"]
            common = {
                "api": f"{self.provider}-responses",
                "provider": self.provider,
                "model": self.model,
                "usage": usage,
            }
            if rng.random() < 0.03:
                message = {
                    "role": "assistant",
                    "content": [],
                    "stopReason": "error",
                    **common,
                    "errorMessage": "fetch failed",
                }
                self._entry("message", message={**message, "timestamp": self.clock.ms})
                continue
            content = []
            if rng.random() < 0.4:
                content.append(
                    {
                        "type": "thinking",
                        "thinking": text.words(100, 1200),
                        "thinkingSignature": text.signature()[:120],
                    }
                )
            content.append({"type": "text", "text": text.words(40, 1000)})
            calls = []
            for _ in range(rng.choice((0, 1, 1, 2, 3))):
                args = {"file_path": f"/home/dev/.openclaw/workspace/{rng.choice(_WORDS)}.md"}
                call_id = f"call_{_hex(rng, 24)}|fc_{_hex(rng, 50)}"
                calls.append(
                    {
                        "type": "toolCall",
                        "id": call_id,
                        "name": rng.choice(("read", "exec", "write")),
                        "arguments": args,
                        "partialJson": orjson.dumps(args).decode(),
                    }
                )
            message = {
                "role": "assistant",
                "content": content + calls,
                **common,
                "stopReason": "toolUse" if calls else "stop",
            }
            self._entry("message", message={**message, "timestamp": self.clock.ms})
            for call in calls:
                output = text.tool_output()
                result = {
                    "role": "toolResult",
                    "toolCallId": call["id"],
                    "toolName": call["name"],
                    "content": [{"type": "text", "text": output}],
                    "details": {"status": "ok", "tool": call["name"], "bytes": len(output)},
                    "isError": False,
                    "timestamp": self.clock.ms,
                }
                self._entry("message", message=result)
            if not calls:
                break

    def compact(self) -> None:
        self._entry(
            "compaction",
            summary="## Goal\n" + self.text.words(1000, 4000),
            firstKeptEntryId=self.last,
            tokensBefore=self.rng.randrange(40_000, 160_000),
            details={"readFiles": [], "modifiedFiles": []},
        )


def _openclaw(
    out: Path, budget: int, rng: random.Random, text: Text, gen: Generated, single: bool = False
) -> Path:
    root = out / ROOT_DIRS["openclaw"]
    tally = gen.tally("openclaw")
    indexes: dict[str, dict] = {}
    written = 0
    path = root
    while written < budget:
        agent = "main" if single else rng.choice(("main", "main", "coder", "family"))
        folder = root / "agents" / agent / "sessions"
        clock = Clock(rng, _start_ms(rng))
        session_id = _uuid(rng)
        path = folder / f"{session_id}.jsonl"
        sink = Sink(path, tally)
        session = OpenClawSession(
            sink, rng, text, clock, session_id, f"/home/dev/.openclaw/workspace-{agent}"
        )
        session.settings()
        size = budget if single else min(_session_budget(rng, 10_000, 800_000), budget - written + 5_000)
        while sink.bytes < size:
            session.turn()
            if rng.random() < 0.03:
                session.compact()
        sink.close()
        written += sink.bytes
        channel, kind = rng.choice((("telegram", "direct"), ("discord", "group"), ("whatsapp", "direct")))
        key = (
            f"agent:{agent}:{channel}:{kind}:{rng.randrange(10**8, 10**9)}"
            if len(indexes.get(agent, ()))
            else f"agent:{agent}:main"
        )
        indexes.setdefault(agent, {})[key] = {
            "sessionId": session_id,
            "updatedAt": clock.ms,
            "sessionFile": str(path),
            "chatType": kind,
            "lastChannel": channel,
            "model": session.model,
            "modelProvider": session.provider,
            "totalTokens": session.usage_total,
            "contextTokens": 200_000,
            "thinkingLevel": "low",
            "origin": {"label": f"{channel} {rng.choice(_WORDS)}"},
        }
    for agent, index in indexes.items():
        (root / "agents" / agent / "sessions" / "sessions.json").write_bytes(
            orjson.dumps(index, option=orjson.OPT_INDENT_2)
        )
    return path if single else root


# Fluux (XMPP memory tree)


def _fluux_ts(clock: Clock, rng: random.Random) -> str:
    if rng.random() < 0.5:
        return clock.iso()
    seconds, ms = divmod(clock.ms, 1000)
    return (
        time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds))
        + f".{ms:03d}{rng.randrange(10**6):06d}+00:00"
    )


def _fluux_session(
    sink: Sink, rng: random.Random, text: Text, jid: str, room: bool, size: int, lines: int = 0
) -> None:
    clock = Clock(rng, _start_ms(rng))
    sink.emit({"type": "session", "version": 1, "created": clock.iso(), "jid": jid})
    nicks = [f"{rng.choice(_WORDS)}{i}@muc" for i in range(rng.randint(2, 6))]
    while True:  # at least one exchange, however small the size asked for
        clock.tick(2, 600)
        line = {
            "type": "message",
            "role": "user",
            "content": text.words(5, 400),
            "msg_id": "stanza-" + _hex(rng, 8),
        }
        line["sender"] = rng.choice(nicks) if room else jid
        line["ts"] = _fluux_ts(clock, rng)
        if rng.random() < 0.05:
            size_kb = rng.randrange(20, 4000)
            line["attachments"] = [
                {
                    "filename": f"{rng.choice(_WORDS)}.png",
                    "mime_type": "unknown" if room else "image/png",
                    "size": f"{size_kb}KB",
                }
            ]
        sink.emit(line)
        if room and rng.random() < 0.4:
            continue  # people talk among themselves; the agent answers now and then
        clock.tick(1, 20)
        last_reply = _uuid(rng)
        sink.emit(
            {
                "type": "message",
                "role": "assistant",
                "content": text.words(40, 2000),
                "msg_id": last_reply,
                "ts": _fluux_ts(clock, rng),
            }
        )
        if rng.random() < 0.05:
            reaction = {"message_id": last_reply, "emojis": [rng.choice(("👍", "❤️", "😂"))]}
            sink.emit(
                {
                    "type": "message",
                    "role": "user",
                    "content": "",
                    "sender": rng.choice(nicks) if room else jid,
                    "ts": _fluux_ts(clock, rng),
                    "reaction": reaction,
                }
            )
        if sink.bytes >= size and sink.lines >= lines:
            return


def _fluux_root(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "identity.md").write_text("You are Fluux Agent, a personal AI assistant.\n")
    (root / "personality.md").write_text("You are direct, helpful, and concise.\n")
    (root / "instructions.md").write_text("Rules:\n- Respond concisely, this is a chat conversation\n")


def _fluux(
    out: Path, budget: int, rng: random.Random, text: Text, gen: Generated, single: bool = False
) -> Path:
    root = out / ROOT_DIRS["fluux_xmpp"]
    tally = gen.tally("fluux_xmpp")
    _fluux_root(root)
    written, number = 0, 0
    path = root
    while written < budget:
        number += 1
        room = rng.random() < 0.3
        jid = f"{rng.choice(_WORDS)}{number}@conference.example.com" if room else f"user{number}@example.com"
        folder = root / jid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "user.md").write_text(f"- Name: {jid.split('@')[0]}\n- {text.words(40, 200)}\n")
        (folder / "memory.md").write_text(f"- 2025-06-01: {text.words(40, 300)}\n")
        archives = 0 if single else rng.choice((0, 0, 1, 2, 4))
        for archive in range(archives + 1):
            if archive < archives:
                stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(_start_ms(rng) // 1000))
                path = folder / "sessions" / f"{stamp}.jsonl"
            else:
                path = folder / "history.jsonl"
            sink = Sink(path, tally)
            size = budget if single else min(_session_budget(rng, 3_000, 300_000), budget - written + 2_000)
            _fluux_session(sink, rng, text, jid, room, size)
            sink.close()
            written += sink.bytes
    return path if single else root


# Codex CLI (rollouts, codex-rs/protocol: RolloutLine)

_CODEX_MODELS = ("gpt-5-codex", "gpt-5.1-codex", "gpt-5.5")


def _uuid7(rng: random.Random, ms: int) -> str:
    """A UUIDv7, as Codex names its sessions: the time first, so names sort by date."""
    raw = f"{ms:012x}7{_hex(rng, 3)}{8 + rng.randrange(4):x}{_hex(rng, 15)}"
    return f"{raw[:8]}-{raw[8:12]}-{raw[12:16]}-{raw[16:20]}-{raw[20:]}"


class CodexSession:
    """One Codex rollout: session_meta, then turns of response items, with the events
    that repeat them (user_message, agent_reasoning, agent_message) and running token counts."""

    def __init__(self, sink: Sink, rng: random.Random, text: Text, clock: Clock, session_id: str, cwd: str):
        self.sink, self.rng, self.text, self.clock, self.cwd = sink, rng, text, clock, cwd
        self.model = rng.choice(_CODEX_MODELS)
        self.total = dict.fromkeys(
            (
                "input_tokens",
                "cached_input_tokens",
                "output_tokens",
                "reasoning_output_tokens",
                "total_tokens",
            ),
            0,
        )
        meta = {
            "id": session_id,
            "timestamp": clock.iso(),
            "cwd": cwd,
            "originator": "codex_cli_rs",
            "cli_version": "0.55.0",
            "instructions": None,
            "source": "cli",
            "model_provider": "openai",
            "git": {
                "commit_hash": _hex(rng, 40),
                "branch": "main",
                "repository_url": f"git@github.com:dev/{cwd.rsplit('/', 1)[-1]}.git",
            },
        }
        self._line("session_meta", meta)
        context = (
            f"<environment_context>\n  <cwd>{cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
            "  <sandbox_mode>workspace-write</sandbox_mode>\n  <shell>bash</shell>\n</environment_context>"
        )
        self._message("user", "input_text", context)

    def _line(self, kind: str, payload: dict) -> None:
        self.clock.tick()
        self.sink.emit({"timestamp": self.clock.iso(), "type": kind, "payload": payload})

    def _message(self, role: str, kind: str, text: str) -> None:
        self._line(
            "response_item", {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}
        )

    def _tokens(self) -> None:
        rng = self.rng
        last = {
            "input_tokens": rng.randrange(2_000, 60_000),
            "cached_input_tokens": rng.randrange(0, 50_000),
            "output_tokens": rng.randrange(10, 3_000),
            "reasoning_output_tokens": rng.randrange(0, 1_000),
        }
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        for key, value in last.items():
            self.total[key] += value
        info = {
            "total_token_usage": dict(self.total),
            "last_token_usage": last,
            "model_context_window": 272_000,
        }
        limits = {
            "primary": {"used_percent": float(rng.randrange(100)), "window_minutes": 300},
            "secondary": None,
        }
        self._line("event_msg", {"type": "token_count", "info": info, "rate_limits": limits})

    def _call(self) -> None:
        rng, text = self.rng, self.text
        call_id = "call_" + _hex(rng, 24)
        output = text.tool_output()
        if rng.random() < 0.2:
            patch = f"*** Begin Patch\n*** Update File: src/{rng.choice(_WORDS)}.py\n@@\n-{text.words(20, 200)}\n+{text.words(20, 200)}\n*** End Patch\n"
            self._line(
                "response_item",
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": patch,
                },
            )
            result = {
                "output": "Success. Updated the following files:\nM src/app.py\n",
                "metadata": {"exit_code": 0},
            }
            self._line(
                "response_item",
                {
                    "type": "custom_tool_call_output",
                    "call_id": call_id,
                    "output": orjson.dumps(result).decode(),
                },
            )
            return
        if rng.random() < 0.5:
            name, arguments = "shell", {"command": ["bash", "-lc", text.words(10, 80)], "workdir": self.cwd}
            head = (
                f"Exit code: {int(rng.random() < 0.1)}\nWall time: 0.{rng.randrange(10)} seconds\nOutput:\n"
            )
        else:
            name, arguments = (
                "exec_command",
                {"cmd": text.words(10, 80), "workdir": self.cwd, "yield_time_ms": 1000},
            )
            head = f"Chunk ID: {_hex(rng, 4)}\nWall time: 1.2 seconds\nProcess exited with code {int(rng.random() < 0.1)}\nOutput:\n"
        self._line(
            "response_item",
            {
                "type": "function_call",
                "name": name,
                "arguments": orjson.dumps(arguments).decode(),
                "call_id": call_id,
            },
        )
        self._line(
            "response_item", {"type": "function_call_output", "call_id": call_id, "output": head + output}
        )

    def turn(self) -> None:
        """A prompt, then model rounds until one answers without tools."""
        rng, text = self.rng, self.text
        prompt = text.words(20, 500)
        self._message("user", "input_text", prompt)
        self._line("event_msg", {"type": "user_message", "message": prompt, "kind": "plain"})
        context = {
            "cwd": self.cwd,
            "approval_policy": "on-request",
            "sandbox_policy": {"mode": "workspace-write", "network_access": False},
            "model": self.model,
            "effort": "medium",
            "summary": "auto",
        }
        self._line("turn_context", context)
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.5:
                summary = text.words(40, 400)
                self._line("event_msg", {"type": "agent_reasoning", "text": summary})
                reasoning = {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": summary}],
                    "content": None,
                    "encrypted_content": "gAAAAAB" + text.signature(),
                }
                self._line("response_item", reasoning)
            calls = rng.choice((0, 1, 1, 2, 3))
            for _ in range(calls):
                self._call()
            self._tokens()
            if not calls:
                break
        reply = text.words(40, 1000)
        self._line("event_msg", {"type": "agent_message", "message": reply})
        self._message("assistant", "output_text", reply)
        self._tokens()
        self._line("event_msg", {"type": "task_complete", "last_agent_message": reply[:200]})

    def compact(self) -> None:
        history = [
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": self.text.words(20, 200)}],
            }
        ]
        self._line("compacted", {"message": self.text.words(1000, 4000), "replacement_history": history})
        self._line("event_msg", {"type": "context_compacted"})


def _codex_path(root: Path, clock: Clock, session_id: str) -> Path:
    """~/.codex/sessions/YYYY/MM/DD/rollout-YYYY-MM-DDTHH-MM-SS-<uuid>.jsonl"""
    moment = time.gmtime(clock.ms // 1000)
    return (
        root
        / time.strftime("%Y/%m/%d", moment)
        / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', moment)}-{session_id}.jsonl"
    )


_WRITERS = {"claude_code": _claude, "go_agent": _go, "openclaw": _openclaw, "fluux_xmpp": _fluux}


def generate(target: Path, megabytes: float, seed: int = 0, formats: tuple[str, ...] = FORMATS) -> dict:
    """About `megabytes` MB of sessions, split evenly over the formats, under target."""
    target = Path(target)
    rng = random.Random(seed)
    text = Text(rng)
    gen = Generated()
    share = int(megabytes * MB / len(formats))
    for fmt in formats:
        gen.roots.append((fmt, _WRITERS[fmt](target, share, rng, text, gen)))
    return gen.to_dict()


def generate_large(target: Path, megabytes: float, seed: int = 0, fmt: str = "claude_code") -> dict:
    """One session file of about `megabytes` MB in its format's layout; its own root."""
    target = Path(target)
    rng = random.Random(seed)
    gen = Generated()
    path = _WRITERS[fmt](target, int(megabytes * MB), rng, Text(rng), gen, single=True)
    result = gen.to_dict()
    result["roots"] = [(fmt, str(target / ROOT_DIRS[fmt]))]
    result["path"] = str(path)
    return result


def generate_many(target: Path, count: int, seed: int = 0, formats: tuple[str, ...] = FORMATS) -> dict:
    """`count` tiny sessions (a handful of lines each), split evenly over the formats."""
    target = Path(target)
    rng = random.Random(seed)
    text = Text(rng)
    gen = Generated()
    for index, fmt in enumerate(formats):
        n = count // len(formats) + (index < count % len(formats))
        root = target / ROOT_DIRS[fmt]
        tally = gen.tally(fmt)
        gen.roots.append((fmt, root))
        sessions_json: dict[str, dict] = {}
        if fmt == "fluux_xmpp":
            _fluux_root(root)
        for number in range(n):
            clock = Clock(rng, _start_ms(rng))
            session_id = _uuid(rng)
            if fmt == "claude_code":
                project = f"-home-dev-projects-app{number % 100}"
                sink = Sink(root / project / f"{session_id}.jsonl", tally)
                session = ClaudeSession(sink, rng, text, "/home/dev/projects/app", session_id)
                session.prompt(text.words(20, 120))
                session._assistant(
                    "msg_01" + _hex(rng, 22),
                    {"output_tokens": 9},
                    {"type": "text", "text": text.words(20, 200)},
                )
            elif fmt == "go_agent":
                sink = Sink(_go_path(root, rng, clock, session_id), tally)
                go = GoSession(sink, rng, text, clock, session_id)
                go.header("/home/dev/src/app")
                go._entry(
                    "message",
                    role="user",
                    message={"role": "user", "content": [{"type": "text", "text": text.words(20, 120)}]},
                )
                go._entry(
                    "message",
                    role="assistant",
                    message={
                        "role": "assistant",
                        "content": [{"type": "text", "text": text.words(20, 200)}],
                        "model": "claude-sonnet-4-5",
                    },
                )
            elif fmt == "openclaw":
                path = root / "agents" / "main" / "sessions" / f"{session_id}.jsonl"
                sink = Sink(path, tally)
                claw = OpenClawSession(sink, rng, text, clock, session_id, "/home/dev/.openclaw/workspace")
                claw._entry(
                    "message",
                    message={"role": "user", "content": [{"type": "text", "text": text.words(20, 120)}]},
                )
                claw._entry(
                    "message",
                    message={"role": "assistant", "content": [{"type": "text", "text": text.words(20, 200)}]},
                )
                sessions_json[f"agent:main:telegram:direct:{number}"] = {
                    "sessionId": session_id,
                    "updatedAt": clock.ms,
                    "sessionFile": str(path),
                    "chatType": "direct",
                }
            else:
                sink = Sink(root / f"user{number}@example.com" / "history.jsonl", tally)
                _fluux_session(sink, rng, text, f"user{number}@example.com", False, 1)
            sink.close()
        if sessions_json:
            (root / "agents" / "main" / "sessions" / "sessions.json").write_bytes(orjson.dumps(sessions_json))
    return gen.to_dict()


# A user's history: thousands of sessions of realistic size, in every format.

HISTORY_FORMATS = (*FORMATS, "codex")
# How a history's session files fall between the agents: subagents, forks and archives included.
HISTORY_SHARES = {"claude_code": 0.40, "codex": 0.20, "go_agent": 0.15, "openclaw": 0.15, "fluux_xmpp": 0.10}
# The long sessions, in lines, as a share of large_lines: one of each of these formats.
HISTORY_LARGE = {"claude_code": 1.0, "codex": 0.15, "go_agent": 0.15}
HISTORY_SESSIONS = 6387  # the history measured in issue 27: 132 MB, 149,877 entries


def _history_lines(rng: random.Random) -> int:
    """Lines a session of a user's history asks for: mostly 2-12 (whole turns make it 5-100),
    a long tail to 1,000."""
    if rng.random() < 0.01:
        return int(100 * 10 ** rng.random())
    return int(2 * 6 ** rng.random())


def _claude_history(
    out: Path, count: int, rng: random.Random, text: Text, gen: Generated, large: int
) -> None:
    root = out / ROOT_DIRS["claude_code"]
    tally = gen.tally("claude_code")
    projects = [f"-home-dev-projects-{rng.choice(_WORDS)}{i}" for i in range(max(1, min(40, count // 50)))]
    written = 0
    while written < count:
        project = rng.choice(projects)
        cwd = "/" + project.lstrip("-").replace("-", "/")
        session_id = _uuid(rng)
        sink = Sink(root / project / f"{session_id}.jsonl", tally)
        session = ClaudeSession(sink, rng, text, cwd, session_id)
        session.task_share = 0  # subagents come from delegate() only, so the count is exact
        wanted = large if written == 0 and large else _history_lines(rng)
        session.session_start()
        # A tenth of the sessions hand work to 1-3 subagents, each a session file of its own.
        delegations = rng.choice((1, 1, 2, 3)) if rng.random() < 0.1 else 0
        for _ in range(min(delegations, count - written - 1)):
            session.delegate()
        next_compact = rng.randint(1_500, 4_000)
        while True:  # whole turns, at least one
            session.turn()
            if sink.lines > next_compact:
                session.compact()
                next_compact += rng.randint(1_500, 4_000)
            if sink.lines >= wanted:
                break
        sink.close()
        written += 1
        for agent_id, prompt in session.subagents:
            side = Sink(root / project / session_id / "subagents" / f"agent-{agent_id}.jsonl", tally)
            agent = ClaudeSession(side, rng, text, cwd, session_id, agent_id=agent_id)
            agent.model = _CLAUDE_MODELS[-1]
            agent.prompt(prompt)
            wanted = _history_lines(rng)
            while True:  # whole turns, at least one
                agent.turn()
                if side.lines >= wanted:
                    break
            side.close()
            written += 1


def _codex_history(out: Path, count: int, rng: random.Random, text: Text, gen: Generated, large: int) -> None:
    root = out / ROOT_DIRS["codex"]
    tally = gen.tally("codex")
    for number in range(count):
        clock = Clock(rng, _start_ms(rng))
        session_id = _uuid7(rng, clock.ms)
        sink = Sink(_codex_path(root, clock, session_id), tally)
        session = CodexSession(sink, rng, text, clock, session_id, f"/home/dev/projects/{rng.choice(_WORDS)}")
        wanted = large if number == 0 and large else _history_lines(rng)
        while True:  # whole turns, at least one
            session.turn()
            if rng.random() < 0.02:
                session.compact()
            if sink.lines >= wanted:
                break
        sink.close()


def _go_history(out: Path, count: int, rng: random.Random, text: Text, gen: Generated, large: int) -> None:
    root = out / ROOT_DIRS["go_agent"]
    tally = gen.tally("go_agent")
    written = 0
    while written < count:
        clock = Clock(rng, _start_ms(rng))
        session_id = _uuid(rng)
        sink = Sink(_go_path(root, rng, clock, session_id), tally)
        session = GoSession(sink, rng, text, clock, session_id)
        session.header(f"/home/dev/src/{rng.choice(_WORDS)}")
        wanted = large if written == 0 and large else _history_lines(rng)
        while True:  # whole turns, at least one
            session.turn()
            if rng.random() < 0.04:
                session.compact()
            if sink.lines >= wanted:
                break
        sink.close()
        written += 1
        # One parent in nine is forked: a tenth of the sessions are forks, each holding
        # copies of 2-10 of its parent's messages (index/copies.py counts them once).
        if written < count and rng.random() < 1 / 9 and session.messages:
            _go_fork(root, rng, text, tally, session, sink.path)
            written += 1


def _openclaw_history(
    out: Path, count: int, rng: random.Random, text: Text, gen: Generated, large: int
) -> None:
    root = out / ROOT_DIRS["openclaw"]
    tally = gen.tally("openclaw")
    indexes: dict[str, dict] = {}
    for number in range(count):
        agent = rng.choice(("main", "main", "coder", "family"))
        clock = Clock(rng, _start_ms(rng))
        session_id = _uuid(rng)
        path = root / "agents" / agent / "sessions" / f"{session_id}.jsonl"
        sink = Sink(path, tally)
        session = OpenClawSession(
            sink, rng, text, clock, session_id, f"/home/dev/.openclaw/workspace-{agent}"
        )
        session.settings()
        wanted = _history_lines(rng)
        while True:  # whole turns, at least one
            session.turn()
            if sink.lines >= wanted:
                break
        sink.close()
        channel, kind = rng.choice((("telegram", "direct"), ("discord", "group"), ("whatsapp", "direct")))
        key = f"agent:{agent}:{channel}:{kind}:{number}" if agent in indexes else f"agent:{agent}:main"
        indexes.setdefault(agent, {})[key] = {
            "sessionId": session_id,
            "updatedAt": clock.ms,
            "sessionFile": str(path),
            "chatType": kind,
            "lastChannel": channel,
            "model": session.model,
            "modelProvider": session.provider,
            "totalTokens": session.usage_total,
        }
    for agent, index in indexes.items():
        (root / "agents" / agent / "sessions" / "sessions.json").write_bytes(orjson.dumps(index))


def _fluux_history(out: Path, count: int, rng: random.Random, text: Text, gen: Generated, large: int) -> None:
    """Per JID: user.md, memory.md, history.jsonl and now and then archived sessions."""
    root = out / ROOT_DIRS["fluux_xmpp"]
    tally = gen.tally("fluux_xmpp")
    _fluux_root(root)
    written, number = 0, 0
    while written < count:
        number += 1
        room = rng.random() < 0.3
        jid = f"{rng.choice(_WORDS)}{number}@conference.example.com" if room else f"user{number}@example.com"
        folder = root / jid
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "user.md").write_text(f"- Name: {jid.split('@')[0]}\n- {text.words(40, 200)}\n")
        (folder / "memory.md").write_text(f"- 2025-06-01: {text.words(40, 300)}\n")
        archives = min(rng.choice((0, 0, 1, 2, 3)), count - written - 1)
        for archive in range(archives + 1):
            if archive < archives:
                stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(_start_ms(rng) // 1000))
                path = folder / "sessions" / f"{stamp}-{archive}.jsonl"
            else:
                path = folder / "history.jsonl"
            sink = Sink(path, tally)
            _fluux_session(sink, rng, text, jid, room, 1, _history_lines(rng))
            sink.close()
            written += 1


_HISTORY_WRITERS = {
    "claude_code": _claude_history,
    "codex": _codex_history,
    "go_agent": _go_history,
    "openclaw": _openclaw_history,
    "fluux_xmpp": _fluux_history,
}


def generate_history(
    target: Path,
    sessions: int = HISTORY_SESSIONS,
    seed: int = 0,
    large_lines: int = 20_000,
    formats: tuple[str, ...] = HISTORY_FORMATS,
) -> dict:
    """A user's history: `sessions` session files of realistic size (mostly 5-100 lines, a
    long tail) shared between the formats as HISTORY_SHARES says, with Claude Code subagents,
    Go agent forks and Fluux memory files; the first session of Claude Code has
    `large_lines` lines, the first of Codex and of the Go agent a few thousand (HISTORY_LARGE)."""
    target = Path(target)
    rng = random.Random(seed)
    # Shorter tool outputs than the byte-sized shapes: real histories hold many short sessions.
    text = Text(rng, long_share=0.05)
    gen = Generated()
    shares = {fmt: HISTORY_SHARES[fmt] for fmt in formats}
    counts = {fmt: int(sessions * share / sum(shares.values())) for fmt, share in shares.items()}
    counts[formats[0]] += sessions - sum(counts.values())
    for fmt in formats:
        large = int(large_lines * HISTORY_LARGE.get(fmt, 0))
        _HISTORY_WRITERS[fmt](target, counts[fmt], rng, text, gen, large)
        gen.roots.append((fmt, target / ROOT_DIRS[fmt]))
    result = gen.to_dict()
    result["sessions_by_format"] = {fmt: tally.files for fmt, tally in gen.by_format.items()}
    return result


def generate_small_history(
    target: Path, seed: int = 0, sessions: int = 5, subagents: int = 11, megabytes: float = 15
) -> dict:
    """A light user's history: a few long Claude Code sessions with subagents (by default
    5 sessions and 11 subagents, 16 files, 15 MiB), as issue 27 measured on real files."""
    target = Path(target)
    rng = random.Random(seed)
    text = Text(rng)
    gen = Generated()
    root = target / ROOT_DIRS["claude_code"]
    tally = gen.tally("claude_code")
    agents = [subagents // sessions + (i < subagents % sessions) for i in range(sessions)]
    agent_bytes = [rng.randint(100_000, 400_000) for _ in range(subagents)]
    weights = [rng.uniform(0.3, 1.7) for _ in range(sessions)]
    budget = megabytes * MB - sum(agent_bytes)
    sizes = [int(budget * w / sum(weights)) for w in weights]
    for number, (size, delegations) in enumerate(zip(sizes, agents, strict=True)):
        project = f"-home-dev-projects-{rng.choice(_WORDS)}{number}"
        cwd = "/" + project.lstrip("-").replace("-", "/")
        session_id = _uuid(rng)
        sink = Sink(root / project / f"{session_id}.jsonl", tally)
        session = ClaudeSession(sink, rng, text, cwd, session_id)
        session.task_share = 0
        session.session_start()
        next_compact = rng.randint(400_000, 900_000)
        while sink.bytes < size:
            if len(session.subagents) < delegations and rng.random() < 0.15:
                session.delegate()
            else:
                session.turn()
            if sink.bytes > next_compact:
                session.compact()
                next_compact += rng.randint(400_000, 900_000)
        while len(session.subagents) < delegations:
            session.delegate()
        sink.close()
        for agent_id, prompt in session.subagents:
            side = Sink(root / project / session_id / "subagents" / f"agent-{agent_id}.jsonl", tally)
            agent = ClaudeSession(side, rng, text, cwd, session_id, agent_id=agent_id)
            agent.model = _CLAUDE_MODELS[-1]
            agent.prompt(prompt)
            wanted = agent_bytes.pop()
            while side.bytes < wanted:
                agent.turn()
            side.close()
    gen.roots.append(("claude_code", root))
    return gen.to_dict()


def append_entry(path: Path, fmt: str, seed: int = 0) -> int:
    """Append one realistic line (a streamed assistant reply chunk) linked to the file's last entry; its size."""
    rng = random.Random(seed)
    text = Text(random.Random(seed))
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - 256 * 1024))
        tail = handle.read().splitlines()[1:]
    last: dict = {}
    for raw in reversed(tail):
        obj = orjson.loads(raw)
        if obj.get("uuid") or obj.get("id") or fmt == "fluux_xmpp":
            last = obj
            break
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
    reply = text.words(400, 1200)
    if fmt == "claude_code":
        line = {
            k: last.get(k) for k in ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")
        }
        line = {"parentUuid": last.get("uuid"), **line, "type": "assistant"}
        line["message"] = {
            "model": "claude-opus-4-6",
            "id": "msg_01" + _hex(rng, 22),
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": reply}],
            "usage": {"input_tokens": 3, "output_tokens": 120},
        }
        line["uuid"], line["timestamp"] = _uuid(rng), stamp
    elif fmt == "go_agent":
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": reply}],
            "model": "claude-sonnet-4-5",
        }
        line = {
            "type": "message",
            "id": _hex(rng, 8),
            "parent_id": last.get("id", ""),
            "timestamp": stamp,
            "role": "assistant",
            "message": message,
        }
    elif fmt == "openclaw":
        message = {
            "role": "assistant",
            "content": [{"type": "text", "text": reply}],
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "stopReason": "stop",
        }
        line = {
            "type": "message",
            "id": _hex(rng, 8),
            "parentId": last.get("id"),
            "timestamp": stamp,
            "message": message,
        }
    else:
        line = {"type": "message", "role": "assistant", "content": reply, "msg_id": _uuid(rng), "ts": stamp}
    data = orjson.dumps(line) + b"\n"
    with open(path, "ab") as handle:
        handle.write(data)
    return len(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write into (one subfolder per format)")
    parser.add_argument(
        "--mb",
        type=float,
        help="megabytes of sessions, split over the formats (default 50, or 0 with a history)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--small-files", type=int, default=0, metavar="N", help="also write N tiny sessions under OUT/small"
    )
    parser.add_argument(
        "--large-mb", type=float, default=0, metavar="MB", help="also write one session of MB under OUT/large"
    )
    parser.add_argument("--large-format", choices=FORMATS, default="claude_code")
    parser.add_argument(
        "--history",
        type=int,
        default=0,
        metavar="N",
        help=f"also write a user's history of N session files under OUT/history (issue 27: {HISTORY_SESSIONS})",
    )
    parser.add_argument(
        "--history-large-lines", type=int, default=20_000, help="lines of the history's longest session"
    )
    parser.add_argument(
        "--small-history",
        action="store_true",
        help="also write 5 Claude Code sessions with 11 subagents, 15 MiB, under OUT/small-history",
    )
    args = parser.parse_args()
    if args.mb is None:
        args.mb = 0 if args.history or args.small_history else 50
    report = {}
    if args.mb:
        report["sessions"] = generate(args.out, args.mb, args.seed)
    if args.small_files:
        report["small"] = generate_many(args.out / "small", args.small_files, args.seed)
    if args.large_mb:
        report["large"] = generate_large(args.out / "large", args.large_mb, args.seed, args.large_format)
    if args.history:
        report["history"] = generate_history(
            args.out / "history", args.history, args.seed, args.history_large_lines
        )
    if args.small_history:
        report["small_history"] = generate_small_history(args.out / "small-history", args.seed)
    print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())


if __name__ == "__main__":
    main()
