"""`manage.py demo`: the demo data copied into the data folder once, its memory with a history."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timedelta
from pathlib import Path

import orjson
from django.conf import settings
from django.core.management.base import BaseCommand
from django.db.models import Max

from sessionviewer.index import index_roots
from sessionviewer.models import MemorySnapshot
from sessionviewer.roots import RootSpec

DEMO = Path(settings.BASE_DIR) / "demo"


def replay_memory_history(memory: Path, history: Path) -> int:
    """Index the memory root once a step of history.json, each file written as it was then with
    the mtime the agent left, and each pass recorded a second after its last change, as a
    watcher running then would have: the timeline then has changes with diffs, turns and a
    finding, and the memory as of each of them can be rebuilt. Returns the passes made."""
    passes = orjson.loads(history.read_bytes())["passes"]
    now = {name: (memory / name).read_bytes() for step in passes for name in step}
    # Every other file was there from the start: its mtime, the copy's, would say today.
    start = min(datetime.fromisoformat(state["at"]) for state in passes[0].values()).timestamp()
    for path in memory.rglob("*"):
        if path.is_file():
            os.utime(path, (start, start))
    for step in passes:
        last = max(datetime.fromisoformat(state["at"]) for state in step.values())
        for name, state in step.items():
            path = memory / name
            path.write_bytes(now[name] if state["text"] is None else state["text"].encode())
            moment = datetime.fromisoformat(state["at"]).timestamp()
            os.utime(path, (moment, moment))
        seen = MemorySnapshot.objects.aggregate(last=Max("id"))["last"] or 0
        index_roots([RootSpec(memory, "fluux_xmpp")], memory=[memory])
        MemorySnapshot.objects.filter(id__gt=seen).update(recorded_at=last + timedelta(seconds=1))
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
