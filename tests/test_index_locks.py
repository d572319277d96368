"""One indexer per machine and root on a shared PostgreSQL (index/locks.py); SQLite takes none."""

from __future__ import annotations

from contextlib import nullcontext
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from sessionviewer.index.locks import RootTaken, lock_key, roots_held
from sessionviewer.models import Session
from tests.claude_files import write_tool_turn

pytestmark = pytest.mark.django_db

ON_POSTGRESQL = connection.vendor == "postgresql"


def test_the_key_names_the_machine_and_the_root_and_fits_a_bigint():
    keys = {
        lock_key("laptop", "/home/dev/.claude/projects"),
        lock_key("ci-runner", "/home/dev/.claude/projects"),
        lock_key("laptop", "/home/dev/.codex/sessions"),
    }
    assert len(keys) == 3
    assert lock_key("laptop", "/r") == lock_key("laptop", "/r")
    assert all(-(2**63) <= key < 2**63 for key in keys)


def test_a_second_indexer_of_the_same_machine_and_root_is_refused_on_postgresql():
    with roots_held("laptop", ["/home/dev/.claude/projects", "/srv/fluux/memory"]):
        if ON_POSTGRESQL:
            with pytest.raises(RootTaken) as refused, roots_held("laptop", ["/home/dev/.claude/projects"]):
                pass
            assert refused.value.machine == "laptop"
            assert refused.value.root == "/home/dev/.claude/projects"
        else:  # one machine's database: a second pass waits for the first's transaction instead
            with roots_held("laptop", ["/home/dev/.claude/projects"]):
                pass
        # Another machine with the same path, and the same machine's other roots, go ahead.
        with roots_held("ci-runner", ["/home/dev/.claude/projects"]), roots_held("laptop", ["/home/dev/.codex"]):
            pass
    with roots_held("laptop", ["/home/dev/.claude/projects"]):  # let go when the first ended
        pass


def test_a_refused_root_lets_go_of_the_roots_it_had_taken():
    with roots_held("laptop", ["/b"]):
        with pytest.raises(RootTaken) if ON_POSTGRESQL else nullcontext(), roots_held("laptop", ["/a", "/b"]):
            pass
        with roots_held("laptop", ["/a"]):  # "/a" was taken before "/b" was refused, and let go
            pass


def test_manage_py_index_refuses_a_root_another_indexer_of_its_machine_holds(tmp_path, settings):
    settings.SESSIONVIEWER_MACHINE = "laptop-a"
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    write_tool_turn(root / "p" / "a.jsonl", "Fix the upload test", [{"type": "text", "text": "Done."}])
    out, err = StringIO(), StringIO()
    with roots_held("laptop-a", [str(root)]):
        if ON_POSTGRESQL:
            with pytest.raises(CommandError) as refused:
                call_command("index", f"claude_code={root}", stdout=out, stderr=err)
            assert "'laptop-a'" in str(refused.value) and str(root) in str(refused.value)
            assert refused.value.returncode != 0
            assert not Session.objects.exists()
        else:
            call_command("index", f"claude_code={root}", stdout=out, stderr=err)
            assert Session.objects.count() == 1
    settings.SESSIONVIEWER_MACHINE = "laptop-b"  # the same path on another machine
    with roots_held("laptop-a", [str(root)]):
        call_command("index", f"claude_code={root}", stdout=out, stderr=err)
    assert Session.objects.count() == 1

