"""The demo's session roots (demo/), as the page and browser tests index them; conftest.py's
demo fixture indexes them and makes them the configured roots."""

from pathlib import Path

from django.conf import settings

from sessionviewer.models import Session
from sessionviewer.roots import RootSpec

DEMO = Path(settings.BASE_DIR) / "demo"
DEMO_SPECS = [
    RootSpec(DEMO / "claude/projects", "claude_code"),
    RootSpec(DEMO / "go-agent/sessions", "go_agent"),
    RootSpec(DEMO / "openclaw/agents", "openclaw"),
    RootSpec(DEMO / "myclaw/sessions", "openclaw"),
    RootSpec(DEMO / "fluux/memory", "fluux_xmpp"),
    RootSpec(DEMO / "codex/sessions", "codex"),
    RootSpec(DEMO / "gemini/tmp", "gemini_cli"),
]


def titled(text: str) -> Session:
    """The indexed session whose title holds text."""
    return next(s for s in Session.objects.all() if text in s.display_title)
