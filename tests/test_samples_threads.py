"""Threading every shared sample session: nothing raises, nothing said is lost.

The samples are real and hand-made files (../shared/samples, see its README); each is
read with its format's reader and threaded as the session page would.
"""

import importlib
import re
from pathlib import Path

import pytest

from sessionviewer.readers import TOOL_CALL, TOOL_RESULT, read_session
from sessionviewer.threads import build_thread
from tests.conftest import SAMPLES

FORMATS = {
    "claude-code": "claude_code",
    "go-agent": "go_agent",
    "openclaw": "openclaw",
    "fluux": "fluux_xmpp",
}
SPOTTER = SAMPLES / "claude-code" / "projects" / "-home-USER-projects-spotter"
RENDERINGS = SAMPLES / "claude-code" / "terminal-renderings"


def _sessions() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(path for folder in FORMATS for path in (SAMPLES / folder).rglob("*.jsonl"))


def _read(path: Path):
    if not SAMPLES.is_dir():
        pytest.skip(f"{SAMPLES} is not present")
    fmt = FORMATS[path.relative_to(SAMPLES).parts[0]]
    try:
        importlib.import_module(f"sessionviewer.readers.{fmt}")
    except ImportError:
        pytest.skip(f"the {fmt} reader is not there yet")
    return read_session(path, fmt).entries


def _name(path: Path) -> str:
    return str(path.relative_to(SAMPLES))


SESSIONS = pytest.mark.parametrize(
    "path", _sessions() or [SAMPLES / "claude-code" / "absent.jsonl"], ids=_name
)


@SESSIONS
def test_sample_threads_keep_every_message(path):
    entries = _read(path)
    thread = build_thread(entries)
    shown = {id(item.entry) for item in thread.items}
    for leaf in thread.leaves:
        shown |= {id(item.entry) for item in build_thread(entries, leaf=leaf).items}
    main = [e for e in entries if e.is_conversational and not e.is_sidechain]
    said = main or [e for e in entries if e.is_conversational]  # a subagent file is all sidechain
    lost = [f"line {e.line} {e.role}" for e in said if id(e) not in shown]
    assert lost == []


@SESSIONS
def test_sample_threads_list_items_in_file_order(path):
    thread = build_thread(_read(path))
    lines = [item.entry.line for item in thread.items]
    assert lines == sorted(lines)


@pytest.mark.parametrize(
    "path",
    sorted((SAMPLES / "claude-code" / "handmade").glob("*.jsonl")) or [SAMPLES / "absent.jsonl"],
    ids=_name,
)
def test_handmade_claude_files_thread_in_file_order(path):
    entries = _read(path)
    thread = build_thread(entries)
    said = [e.line for e in entries if e.is_conversational]
    assert [item.entry.line for item in thread.items if item.entry.is_conversational] == said


def test_tool_heavy_session_keeps_every_tool_result_with_its_call():
    entries = _read(SPOTTER / "tool_heavy.jsonl")
    blocks = [b for item in build_thread(entries).items for b in item.entry.blocks]
    calls = [b.call_id for e in entries for b in e.blocks if b.type == TOOL_CALL]
    answered = {b.call_id for b in blocks if b.type == TOOL_RESULT}
    assert len(calls) == 6
    assert [call for call in calls if call not in answered] == []


def test_compacted_sample_carries_its_summary_on_the_boundary():
    folder = SAMPLES / "claude-code" / "claudeless" / "compact-command" / "projects"
    path = next(folder.glob("*/*.jsonl"), folder / "absent.jsonl")
    thread = build_thread(_read(path))
    [boundary] = thread.compactions
    assert boundary.summary.startswith("This session is being continued")
    assert all(item.compacted for item in thread.items if item.entry.line < boundary.entry.line)
    assert not any(item.compacted for item in thread.items if item.entry.line >= boundary.entry.line)


def _rendered_prompts(name: str) -> list[str]:
    text = (RENDERINGS / f"{name}.terminal.stripped.txt").read_text()
    prompts = re.findall(r"^❯ (.+)$", text, re.M)
    return [p for p in prompts if not p.startswith(("claude ", 'Try "'))]


@pytest.mark.parametrize("name", ["short", "tool_heavy", "subagent"])
def test_sample_thread_shows_prompts_in_the_order_claude_code_did(name):
    thread = build_thread(_read(SPOTTER / f"{name}.jsonl"))
    texts = iter(item.entry.text for item in thread.items)
    for prompt in _rendered_prompts(name):
        key = prompt.split()[0] if prompt.startswith("/") else prompt[:40]
        assert any(key in text for text in texts), f"{prompt!r} missing or out of order"
