"""`manage.py demo`: the demo data copied into the data folder once, its memory with a history."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

import orjson
from django.conf import settings
from django.core.management.base import BaseCommand

from sessionviewer.index import index_roots
from sessionviewer.roots import RootSpec

DEMO = Path(settings.BASE_DIR) / "demo"


def replay_memory_history(memory: Path, history: Path) -> int:
    """Index the memory root once a step of history.json, each file written as it was then with
    the mtime the agent left: the timeline then has changes with diffs, turns and a finding, as
    a memory watched for a while has. Returns the passes made."""
    passes = orjson.loads(history.read_bytes())["passes"]
    now = {name: (memory / name).read_bytes() for step in passes for name in step}
    for step in passes:
        for name, state in step.items():
            path = memory / name
            path.write_bytes(now[name] if state["text"] is None else state["text"].encode())
            moment = datetime.fromisoformat(state["at"]).timestamp()
            os.utime(path, (moment, moment))
        index_roots([RootSpec(memory, "fluux_xmpp")], memory=[memory])
    return len(passes)


class Command(BaseCommand):
    help = "Copy the demo data into the data folder (once), and give its memory a history."

    def handle(self, *args, **options):
        target = Path(settings.DEMO_DIR)
        if target.exists():
            return f"{target} is there already: left as it is"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(DEMO, target)
        passes = replay_memory_history(target / "fluux" / "memory", target / "fluux" / "history.json")
        return f"Copied the demo data to {target}; its memory's history in {passes} passes"
