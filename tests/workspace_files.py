"""The memory trees the workspace tests build or copy, and what they expect of them."""

import os
import time
from datetime import date
from pathlib import Path

from sessionviewer.workspaces import effective_prompt

from .conftest import SAMPLES as SHARED_SAMPLES

# The shared Fluux sample tree (../shared/samples, or SESSIONVIEWER_SAMPLES), as conftest finds it.
SAMPLES = SHARED_SAMPLES / "fluux" / "memory"
FIXTURES = Path(__file__).parent / "fixtures" / "fluux_memory"
OVERRIDES = FIXTURES / "overrides"
MONDAY = date(2025, 6, 2)
DATE_LINE = "Current date: Monday, June 2, 2025"
UUID = "0b1e4a52-8c1d-4a57-9e0a-5d3c2f1b7a10"


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    """Files by path relative to root; a trailing "/" makes an empty folder."""
    root.mkdir(parents=True, exist_ok=True)
    for relative, content in files.items():
        path = root / relative
        if relative.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root


def prompt_text(root: Path, jid: str, agent_name: str = "Fluux Agent") -> str:
    prompt = effective_prompt(root, jid, agent_name, MONDAY)
    assert prompt.ok, prompt.errors
    return prompt.text


def sample_file(name: str) -> str:
    return (SAMPLES / name).read_text().strip()


def slow_rename(monkeypatch):
    """Renames that take a moment, as on a busy disk: a window for a racing writer."""
    from sessionviewer.workspaces import writes

    rename = os.replace

    def slow(src, dst):
        time.sleep(0.005)
        rename(src, dst)

    monkeypatch.setattr(writes.os, "replace", slow)
