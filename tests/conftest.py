import os
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# The shared sample files sit beside the repository (../shared/samples) on our machines and in CI.
SAMPLES = Path(
    os.environ.get("SESSIONVIEWER_SAMPLES", Path(__file__).resolve().parents[2] / "shared" / "samples")
)


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def samples_dir() -> Path:
    if not SAMPLES.is_dir():
        pytest.skip("../shared/samples is not present")
    return SAMPLES
