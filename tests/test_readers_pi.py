"""pi, the coding agent: its sessions are told apart from OpenClaw's, read by the same reader."""

import shutil
from pathlib import Path

from sessionviewer import readers
from sessionviewer.index import fold
from sessionviewer.readers import detect_format, openclaw, pi, read_session
from sessionviewer.transcripts import layout

FIXTURES = Path(__file__).parent / "fixtures"
PI_ROOT = FIXTURES / "pi" / "sessions"
(PI_FILE,) = PI_ROOT.glob("*/*.jsonl")


def folded(path: Path, fmt: str) -> fold.SessionState:
    state = fold.SessionState(format=fmt)
    fold.fold_entries(state, read_session(path, fmt).entries)
    return state


def test_a_pi_session_in_pis_own_folders_is_format_pi():
    (found,) = pi.discover(PI_ROOT)
    assert found.format == "pi"
    assert found.key == f"--home-user-shop--/{PI_FILE.stem}"


def test_an_untagged_root_of_pi_sessions_is_read_by_the_openclaw_reader_and_still_pi():
    assert detect_format(PI_ROOT) == "openclaw"
    assert [f.format for f in openclaw.discover(PI_ROOT)] == ["pi"]


def test_the_same_transcript_in_an_openclaw_agent_folder_is_openclaws(tmp_path):
    folder = tmp_path / "agents" / "main" / "sessions"
    folder.mkdir(parents=True)
    shutil.copy(PI_FILE, folder / "0c9e5d2a-1111-4222-8333-444455556666.jsonl")
    assert [f.format for f in openclaw.discover(tmp_path)] == ["openclaw"]


def test_a_loose_transcript_with_the_gateways_marks_is_openclaws(tmp_path):
    shutil.copy(FIXTURES / "openclaw" / "gateway_turns.jsonl", tmp_path / "s.jsonl")
    shutil.copy(PI_FILE, tmp_path / "p.jsonl")
    assert {f.key: f.format for f in openclaw.discover(tmp_path)} == {"s": "openclaw", "p": "pi"}


def test_the_samples_pi_transcript_is_pi_and_the_gateway_excerpt_is_openclaw(samples_dir):
    formats = {f.key: f.format for f in openclaw.discover(samples_dir / "openclaw")}
    assert formats["pi/pi-large-session"] == "pi"
    assert formats["openclaw-excerpt/8555a0a4-excerpt"] == "openclaw"


def test_pis_models_are_those_that_answered():
    # Not the aborted request's gpt-5.1-codex, nor the one that failed before saying anything twice.
    assert folded(PI_FILE, "pi").models_used == ["claude-sonnet-4-5", "gpt-5.1"]


def test_the_samples_pi_session_used_only_sonnet(samples_dir):
    state = folded(samples_dir / "openclaw" / "pi" / "pi-large-session.jsonl", "pi")
    assert state.models_used == ["claude-sonnet-4-5"]  # its first request, to gpt-5.1-codex, was aborted


def test_a_pi_session_is_titled_by_its_first_prompt_not_a_bare_command():
    assert folded(PI_FILE, "pi").first_prompt == "Fix the failing cart test"


def test_a_model_switch_shows_where_it_happened():
    entries = read_session(PI_FILE, "pi").entries
    switches = [e for e in entries if e.kind == "model_change"]
    assert [e.text for e in switches] == ["model: anthropic/claude-sonnet-4-5", "model: openai/gpt-5.1"]
    assert not any(layout.is_noise(e, 0, readers.format_of("pi")) for e in switches)
    # Other settings stay bookkeeping.
    assert layout.is_noise(next(e for e in entries if e.kind == "session"), 0, readers.format_of("pi"))


def test_the_model_a_session_starts_with_is_no_switch():
    first = openclaw.parse_line(
        {
            "type": "model_change",
            "id": "m",
            "parentId": None,
            "provider": "anthropic",
            "modelId": "claude-sonnet-4-5",
        },
        2,
    )
    assert "marker" not in first.extra
    assert layout.is_noise(first, 0, readers.format_of("pi"))
