"""The session files under tests/fixtures/: where they are, the format of each folder, and
one of them indexed on its own."""

import shutil
from pathlib import Path

from sessionviewer.index import index_roots
from sessionviewer.models import Session
from sessionviewer.roots import RootSpec

FIXTURES = Path(__file__).parent / "fixtures"
FORMAT_OF_FOLDER = {
    "claude_code": "claude_code",
    "go_agent": "go_agent",
    "fluux_xmpp": "fluux_xmpp",
    "codex": "codex",
    "gemini_cli": "gemini_cli",
}


def index_fixture(tmp_path, fmt: str, name: str, folder: str, stem: str) -> Session:
    """One fixture file, in the folder layout its format's discovery expects."""
    target = tmp_path / folder
    target.mkdir(parents=True)
    shutil.copy(FIXTURES / fmt / name, target / f"{stem}.jsonl")
    index_roots([RootSpec(tmp_path / folder.split("/")[0], fmt)])
    return Session.objects.get()


# The Claude Code project folder the transcript tests index their fixture files in.
CLAUDE_PROJECT = "projects/-home-user-project"
# A Go agent session and its fork, which copies its last three messages.
FORK_FAMILY = FIXTURES / "go_agent" / "fork_family"
FORK_FILE = "20260226-153000-33333333.jsonl"
