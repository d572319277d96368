"""The sizes users have (issue 19): a 2 GB Claude Code session and a 60 MB single line.

    SECRET_KEY=bench .venv/bin/python bench/bench_sizes.py           # 20 MB vs 2 GB, a 60 MB line
    SECRET_KEY=bench .venv/bin/python bench/bench_sizes.py --quick   # smoke run: 20 MB vs 200 MB, a 6 MB line

Generated files and databases live in a temporary folder (or --keep it) and are removed at the
end. `manage.py index` runs in a subprocess of a small wrapper, which reads the peak RSS of the
whole command (ru_maxrss of its children: the writer, or the reading worker it starts). Pages
are requested in this process with Django's test client, logged in as a superuser, on the
large session's database. The table is printed; the figures go to bench/out/sizes.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
sys.path.insert(0, str(ROOT))

import bench_pages  # noqa: E402 (bench/ is not a package: the script's folder is on the path)
import generate  # noqa: E402

TARGETS = {"memory_ratio": 1.25, "append_ratio": 1.5, "first_screen_ms": 100, "search_ms": 200}

# Runs `manage.py index` and prints the wall time and the peak RSS of the command's processes.
WRAPPER = (
    "import resource, subprocess, sys, time; t = time.perf_counter(); "
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
    "sys.stderr.write(done.stderr[-3000:]) if done.returncode else None; "
    "print(done.returncode, time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def run_index(database: Path, root: str, fmt: str = "claude_code") -> dict:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "0"}
    env.setdefault("SECRET_KEY", "bench-only")
    command = [sys.executable, "-c", WRAPPER, sys.executable, str(ROOT / "manage.py"), "index"]
    done = subprocess.run([*command, f"{fmt}={root}"], capture_output=True, text=True, env=env, check=True)
    code, seconds, maxrss = done.stdout.split()
    if code != "0":
        raise RuntimeError(f"manage.py index failed: {done.stderr}")
    return {"seconds": round(float(seconds), 3), "peak_rss_mb": round(int(maxrss) / 1024, 1)}


def migrate(template: Path) -> None:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{template}", "DEBUG": "0"}
    env.setdefault("SECRET_KEY", "bench-only")
    subprocess.run([sys.executable, str(ROOT / "manage.py"), "migrate", "-v0"], env=env, check=True)


def fresh(template: Path, database: Path) -> Path:
    shutil.copyfile(template, database)
    return database


def long_line_session(target: Path, megabytes: float) -> str:
    """A Claude Code session whose prompt is a pasted log of `megabytes` MB on one line."""
    folder = target / "claude-code" / "projects" / "-home-dev-projects-log"
    folder.mkdir(parents=True)
    size = int(megabytes * generate.MB)
    row = "2026-01-01T12:00:00Z worker-3 GET /api/items?page=%d 200 12ms request served\n"
    log, n = [], 0
    while size > 0:
        log.append(row % n)
        size -= len(log[-1])
        n += 1
    base = {"sessionId": "log", "cwd": "/home/dev/projects/log", "timestamp": "2026-01-01T12:00:00Z"}
    lines = [
        {
            **base,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "message": {"role": "user", "content": "".join(log)},
        },
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": "m",
                "content": [{"type": "text", "text": "Read."}],
            },
        },
    ]
    (folder / "log.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return str(target / "claude-code" / "projects")


def timed_get(client, url: str, runs: int, before=None, **headers) -> dict:
    times, size = [], 0
    for n in range(runs + 1):
        if before:
            before()
        started = time.perf_counter()
        response = client.get(url, **headers)
        elapsed = time.perf_counter() - started
        assert response.status_code == 200, (url, response.status_code)
        size = len(response.content)
        if n:  # the first is a warm-up
            times.append(elapsed * 1000)
    return {
        "median_ms": round(statistics.median(times), 1),
        "max_ms": round(max(times), 1),
        "kb": round(size / 1024, 1),
    }


def pages(database: Path, runs: int, word: str) -> dict:
    """First screen, search and scrolling on the large session; in this process."""
    bench_pages.setup_django(database)
    from django.contrib.auth.models import User
    from django.db import connections
    from django.test import Client
    from django.urls import reverse

    from sessionviewer import transcripts
    from sessionviewer.models import Session

    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", password=None
    )
    client = Client()
    client.force_login(user)
    result = {}
    for session in Session.objects.filter(kind="main"):
        url = reverse("session-detail", args=[session.id])
        api = reverse("api-session-detail", args=[session.id])
        name = "long_line" if session.key.endswith("log") or "log" in session.path else "large"
        figures = {"entries": session.entry_count}
        figures["first_screen_cold"] = timed_get(client, url, runs, transcripts.clear_cache)
        figures["first_screen_warm"] = timed_get(client, url, runs)
        if name == "large":
            middle = session.entry_count // 2
            figures["chunk_middle"] = timed_get(
                client, f"{url}?_offset={middle}", runs, HTTP_HX_REQUEST="true"
            )
            figures["search_list"] = timed_get(client, f"/?q={word}", runs)
            figures["search_api"] = timed_get(client, f"/api/search?q={word}", runs)
            figures["search_in_session"] = timed_get(client, f"{url}?q={word}", runs)
        else:
            figures["api"] = timed_get(client, api, runs)
            figures["peak_kb_sent"] = max(figures["first_screen_cold"]["kb"], figures["api"]["kb"])
        result[name] = figures
    connections.close_all()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="20 MB vs 200 MB and a 6 MB line")
    parser.add_argument("--small-mb", type=float, default=20)
    parser.add_argument("--large-mb", type=float, default=None, help="default 2048 (200 with --quick)")
    parser.add_argument("--line-mb", type=float, default=None, help="default 60 (6 with --quick)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--word", default="served", help="a word to search for")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args()
    large_mb = args.large_mb or (200 if args.quick else 2048)
    line_mb = args.line_mb or (6 if args.quick else 60)

    folder = Path(tempfile.mkdtemp(prefix="sessionviewer-bench-sizes-"))
    print(f"working in {folder}; {shutil.disk_usage(folder).free / generate.MB:,.0f} MB free", flush=True)
    results: dict = {"small_mb": args.small_mb, "large_mb": large_mb, "line_mb": line_mb}
    try:
        template = folder / "template.sqlite3"
        migrate(template)
        made = {}
        for name, megabytes in (("small", args.small_mb), ("large", large_mb)):
            started = time.perf_counter()
            made[name] = generate.generate_large(folder / name, megabytes)
            print(
                f"generated {name}: {made[name]['lines']:,} lines in {time.perf_counter() - started:.0f} s",
                flush=True,
            )
        memory, append = {}, {}
        for name in ("small", "large"):
            database = fresh(template, folder / f"{name}.sqlite3")
            memory[name] = run_index(database, made[name]["roots"][0][1])
            memory[name].update(lines=made[name]["lines"], mb=round(made[name]["bytes"] / generate.MB))
            print(f"index {name}: {memory[name]}", flush=True)
            seconds = []
            for run in range(args.runs):
                generate.append_entry(Path(made[name]["path"]), "claude_code", seed=run)
                seconds.append(run_index(database, made[name]["roots"][0][1])["seconds"])
            append[name] = {"median_seconds": round(statistics.median(seconds), 3), "seconds": seconds}
            print(f"append {name}: {append[name]}", flush=True)
        memory["ratio"] = round(memory["large"]["peak_rss_mb"] / memory["small"]["peak_rss_mb"], 2)
        append["ratio"] = round(append["large"]["median_seconds"] / append["small"]["median_seconds"], 2)
        results.update(memory=memory, append=append)
        shutil.rmtree(folder / "large", ignore_errors=True)  # the pages read the database alone

        database = folder / "large.sqlite3"
        line_root = long_line_session(folder / "line", line_mb)
        results["long_line_index"] = run_index(database, line_root)
        print(f"index the {line_mb} MB line: {results['long_line_index']}", flush=True)
        results["pages"] = pages(database, args.runs, args.word)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    OUT.mkdir(exist_ok=True)
    (OUT / "sizes.json").write_text(json.dumps(results, indent=2))
    print(table(results))


def table(r: dict) -> str:
    def ok(good: bool) -> str:
        return "ok" if good else "MISSED"

    m, a, p = r["memory"], r["append"], r["pages"]
    large, line = p["large"], p["long_line"]
    rows = [
        f"peak RSS of manage.py index: {r['small_mb']:g} MB file {m['small']['peak_rss_mb']} MB, "
        f"{m['large']['mb']} MB file ({m['large']['lines']:,} lines) {m['large']['peak_rss_mb']} MB: "
        f"{m['ratio']}x  {ok(m['ratio'] <= TARGETS['memory_ratio'])}",
        f"index time: {m['small']['seconds']} s and {m['large']['seconds']} s",
        f"append one line (manage.py index, median): {a['small']['median_seconds']} s and "
        f"{a['large']['median_seconds']} s: {a['ratio']}x  {ok(a['ratio'] <= TARGETS['append_ratio'])}",
    ]
    for key in ("first_screen_cold", "first_screen_warm", "chunk_middle"):
        good = large[key]["median_ms"] < TARGETS["first_screen_ms"]
        rows.append(f"large session {key}: {large[key]['median_ms']} ms, {large[key]['kb']} KB  {ok(good)}")
    for key in ("search_list", "search_api", "search_in_session"):
        good = large[key]["median_ms"] < TARGETS["search_ms"]
        rows.append(f"large session {key}: {large[key]['median_ms']} ms  {ok(good)}")
    rows.append(
        f"{r['line_mb']:g} MB line: index {r['long_line_index']['seconds']} s, "
        f"peak RSS {r['long_line_index']['peak_rss_mb']} MB; first screen {line['first_screen_cold']['median_ms']} ms; "
        f"most sent for it {line['peak_kb_sent']} KB (page {line['first_screen_cold']['kb']} KB, "
        f"API {line['api']['kb']} KB)"
    )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
