"""What the reading worker loads when it starts (index/worker.py): it starts during a pass's
planning, and what it imports is time before its first file. Plain Python: no Django, and
not importlib.metadata, which prices.library_version reads only when asked (with the e-mail
package it took a fifth of the worker's start-up)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules_loaded_by(statement: str) -> set[str]:
    code = f"import sys; {statement}; print('\\n'.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_the_reading_worker_loads_neither_django_nor_package_metadata():
    loaded = modules_loaded_by("from sessionviewer.index.worker import serve")
    assert "sessionviewer.index.worker" in loaded
    assert not {name for name in loaded if name == "django" or name.startswith("django.")}
    assert "importlib.metadata" not in loaded
    assert "email" not in loaded


def test_the_library_version_still_reads_the_package_metadata():
    loaded = modules_loaded_by("from sessionviewer import prices; prices.library_version()")
    assert "importlib.metadata" in loaded
