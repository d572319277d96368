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


def test_the_reading_worker_loads_only_the_workspace_modules_the_secrets_scan_needs():
    # The package's names are loaded with their module, when first asked for (PEP 562):
    # the editor's writes and the memory audit are not the worker's.
    loaded = modules_loaded_by("from sessionviewer.index.worker import serve")
    modules = {name.rsplit(".", 1)[1] for name in loaded if name.startswith("sessionviewer.workspaces.")}
    assert "secrets" in modules
    assert not modules & {"writes", "memory"}


def test_every_name_the_workspaces_package_gives_is_its_modules():
    from sessionviewer import workspaces
    from sessionviewer.workspaces import listing, memory, memory_files, paths, prompt, secrets, writes

    by_module = [listing, memory, memory_files, paths, prompt, secrets, writes]
    for name in workspaces.__all__:
        assert any(getattr(module, name, None) is getattr(workspaces, name) for module in by_module), name
    assert {"scan_tree", "atomic_write", "effective_prompt", "jid_status"} <= set(dir(workspaces))
    try:
        workspaces.no_such_name  # noqa: B018 - the attribute's lookup is the test
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("an unknown name was found")
