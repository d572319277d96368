"""What masking possible secrets costs a transcript page (transcripts/masks.py).

    SECRET_KEY=bench .venv/bin/python bench/bench_masks.py [--entries 2000] [--runs 15]

Two Claude Code sessions of the same length and shape are indexed into a fresh SQLite file:
one whose tool outputs hold credentials (one in every tenth entry, 20 distinct values), and one
whose outputs hold the same text without them. The first screen and the next chunk of each are
requested with Django's test client, logged in as a superuser; each figure is the median of
--runs requests; the leaky session is measured twice, with its masks and with them turned off
(the page as it was before masking: each value shown).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from bench_pages import setup_django  # noqa: E402

KEYS = [f"ghp_{n:03d}R4nd0mT0k3nV4lu3F0rT3st1ngAbCd" for n in range(int(os.environ.get("BENCH_KEYS", "20")))]
OUTPUT = "line of ordinary tool output, nothing to see here\n" * 40


def session_lines(entries: int, leaky: bool) -> list[bytes]:
    lines, parent = [], None
    for n in range(entries):
        uuid = f"e-{n}"
        base = {"sessionId": "s", "cwd": "/home/user/p", "parentUuid": parent, "uuid": uuid,
                "timestamp": f"2026-01-02T19:{n // 60 % 60:02d}:{n % 60:02d}.000Z"}  # fmt: skip
        output = OUTPUT
        if leaky and n % 10 == 5:
            output += f"export GITHUB_TOKEN={KEYS[n // 10 % len(KEYS)]}\n"
        if n % 2 == 0:
            record = {**base, "type": "user", "message": {"role": "user", "content": f"question {n}"}}
        else:
            content = [{"type": "text", "text": f"answer {n}"}, {"type": "text", "text": output}]
            record = {
                **base,
                "type": "assistant",
                "message": {"role": "assistant", "id": f"m{n}", "content": content},
            }
        lines.append(orjson.dumps(record) + b"\n")
        parent = uuid
    return lines


def median_ms(client, url: str, params: dict, runs: int, masking, **headers) -> float:
    """The median of runs requests, each made once with the masks (masking) and once without,
    turn about, so that both see the same machine; (masked, unmasked)."""
    from sessionviewer.views import pages

    kept = pages.transcript_masks
    times: dict[bool, list[float]] = {True: [], False: []}
    try:
        for run in range(runs + 1):
            for masked in (True, False):
                pages.transcript_masks = masking if masked else (lambda *args, **kwargs: None)
                start = time.perf_counter()
                response = client.get(url, params, **headers)
                if run:  # the first: warming the thread's snapshot
                    times[masked].append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, response.status_code
    finally:
        pages.transcript_masks = kept
    return statistics.median(times[True]), statistics.median(times[False])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-masks-"))
    setup_django(work / "db.sqlite3")
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth.models import User
    from django.test import Client

    from sessionviewer.index import index_roots
    from sessionviewer.models import Session
    from sessionviewer.roots import RootSpec

    folder = work / "projects" / "-home-user-p"
    folder.mkdir(parents=True)
    for name, leaky in (("leaky", True), ("clean", False)):
        (folder / f"{name}.jsonl").write_bytes(b"".join(session_lines(args.entries, leaky)))
    index_roots([RootSpec(work / "projects", "claude_code")])
    client = Client()
    client.force_login(User.objects.create_superuser("bench", password=None))
    print(f"{args.entries} entries per session, median of {args.runs} requests (ms)")
    print(f"{'session':16} {'findings':>8} {'first screen':>13} {'next chunk':>11}")
    from sessionviewer.views import pages

    masking = pages.transcript_masks
    for session in Session.objects.order_by("path"):
        url = session.get_absolute_url()
        first = median_ms(client, url, {}, args.runs, masking)
        chunk = median_ms(client, url, {"_offset": "40"}, args.runs, masking, HTTP_HX_REQUEST="true")
        rows = [(Path(session.path).stem, 0)] if not session.findings.exists() else [
            (Path(session.path).stem, 0), (f"{Path(session.path).stem}, unmasked", 1)
        ]  # fmt: skip
        for label, at in rows:
            print(f"{label:16} {session.findings.count():>8} {first[at]:>13.1f} {chunk[at]:>11.1f}")


if __name__ == "__main__":
    main()
