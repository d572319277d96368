"""The README's pictures (docs/screenshots/, written by `make screenshots`)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PICTURES = ROOT / "docs" / "screenshots"


def pictures_in_readme() -> list[str]:
    return re.findall(r"\]\(docs/screenshots/([^)]+\.png)\)", (ROOT / "README.md").read_text())


def test_every_picture_the_readme_shows_is_there():
    named = pictures_in_readme()
    assert named
    assert [name for name in named if not (PICTURES / name).is_file()] == []


def test_no_picture_is_left_that_the_readme_does_not_show():
    assert sorted(p.name for p in PICTURES.glob("*.png")) == sorted(set(pictures_in_readme()))


def test_the_readme_shows_the_pictures_the_issue_asks_for():
    # A session's first screen wide and on a phone in both schemes, a compaction banner, a Read
    # result and an OpenClaw turn with its sender chip (issue 29).
    assert {
        "transcript-wide.png",
        "transcript-390.png",
        "transcript-390-dark.png",
        "compaction-wide.png",
        "read-wide.png",
        "openclaw-wide.png",
    } <= set(pictures_in_readme())


def test_the_pictures_stay_small():
    assert {p.name: p.stat().st_size for p in PICTURES.glob("*.png") if p.stat().st_size > 150_000} == {}
