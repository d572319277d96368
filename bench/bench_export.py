"""Exports that stream (issue 29), measured through a real gunicorn worker.

    SECRET_KEY=bench .venv/bin/python bench/bench_export.py                   # 20 MB vs 200 MB
    SECRET_KEY=bench .venv/bin/python bench/bench_export.py --huge-mb 2048    # and a 2 GB session
    SECRET_KEY=bench .venv/bin/python bench/bench_export.py --small-mb 0 --large-mb 0 --huge-mb 2048 --out export-huge.json
    SECRET_KEY=bench .venv/bin/python bench/bench_export.py --against /tmp/old --only-entries
                                                   # the 20,000-entry session, this tree against another

Each session (generate.generate_large, Claude Code) is indexed with `manage.py index` into its
own SQLite database in a temporary folder, removed at the end (--keep keeps it). For each, one
gunicorn worker (gthread, as `make run` serves) answers: the session's page first (modules and
thread loaded, as in a worker that has served before), then its peak RSS is reset
(/proc/<pid>/clear_refs) and each export is fetched over HTTP, read as it arrives. Figures: the
worker's peak RSS during the export (VmHWM), the time to the first byte and to the last, and the
size. --timeout-check serves the largest session again with a sync worker and with a gthread
worker, both with --timeout 20: the sync worker is killed mid-export, the gthread one finishes.
The table is printed; the figures go to bench/out/export.json (export-against.json with
--only-entries).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
sys.path.insert(0, str(ROOT))

import bench_sizes  # noqa: E402 (bench/ is not a package: the script's folder is on the path)
import generate  # noqa: E402

TARGETS = {"memory_ratio": 1.25, "first_byte_s": 1.0}
GUNICORN = Path(sys.executable).parent / "gunicorn"

# Run in a fresh interpreter (argv: tree, database): a logged-in session cookie, and the main
# session's id and entry count, on that database.
LOGIN = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/bench"]
import bench_pages
bench_pages.setup_django(Path(sys.argv[2]))
from sessionviewer.models import Session
client = bench_pages.bench_client()
session = Session.objects.filter(kind="main").order_by("-entry_count").first()
print(client.cookies["sessionid"].value, session.id, session.entry_count)
"""

# The export in a fresh interpreter (argv: tree, database, session id, format), read to its end;
# the session's page first, so that the thread and the modules are loaded, as in a worker that
# has served before.
EXPORT = """
import sys, time
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[1] + "/bench"]
import bench_pages
bench_pages.setup_django(Path(sys.argv[2]))
from django.urls import reverse
client = bench_pages.bench_client()
url = reverse("session-export-" + sys.argv[4], args=[int(sys.argv[3])])
client.get(reverse("session-detail", args=[int(sys.argv[3])]))
started = time.perf_counter()
size = len(client.get(url).getvalue())
print(time.perf_counter() - started, size)
"""


def environ(database: Path) -> dict:
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{database}", "DEBUG": "0"}
    env.setdefault("SECRET_KEY", "bench-only")
    return env


def build(folder: Path, template: Path, name: str, megabytes: float, lines: int | None = None) -> dict:
    """A generated session of about `megabytes` MB (cut to `lines` lines), indexed into its own
    database; one the folder holds already (--reuse) is measured again."""
    started = time.perf_counter()
    database, meta = folder / f"{name}.sqlite3", folder / f"{name}.json"
    if database.exists() and meta.exists():
        cookie, session_id, entries = login(ROOT, database)
        print(f"{name}: reusing {database}", flush=True)
        kept = json.loads(meta.read_text())
        return {**kept, "database": database, "session": session_id, "cookie": cookie}
    made = generate.generate_large(folder / name, megabytes)
    path = Path(made["path"])
    if lines is not None:
        with open(path, "rb") as handle:
            kept = [line for _, line in zip(range(lines), handle, strict=False)]
        if len(kept) < lines:
            raise SystemExit(f"{name}: {len(kept)} lines generated, fewer than {lines}: raise the size")
        path.write_bytes(b"".join(kept))
    size = path.stat().st_size
    bench_sizes.fresh(template, database)
    indexed = bench_sizes.run_index(database, made["roots"][0][1])
    shutil.rmtree(folder / name, ignore_errors=True)  # the pages read the database only
    cookie, session_id, entries = login(ROOT, database)
    print(
        f"{name}: {size / generate.MB:,.0f} MB, {entries:,} entries, made and indexed in "
        f"{time.perf_counter() - started:.0f} s (index {indexed['seconds']} s)",
        flush=True,
    )
    kept = {"name": name, "mb": round(size / generate.MB, 1), "entries": entries}
    meta.write_text(json.dumps(kept))
    return {**kept, "database": database, "session": session_id, "cookie": cookie}


def login(tree: Path, database: Path) -> tuple[str, int, int]:
    done = run([sys.executable, "-c", LOGIN, str(tree), str(database)], database, tree)
    cookie, session_id, entries = done.stdout.split()
    return cookie, int(session_id), int(entries)


def run(command: list[str], database: Path, tree: Path = ROOT) -> subprocess.CompletedProcess:
    done = subprocess.run(command, capture_output=True, text=True, env=environ(database), cwd=tree)
    if done.returncode:
        raise RuntimeError(f"{command[:3]} failed: {done.stderr[-3000:]}")
    return done


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(database: Path, worker_class: str, timeout: int):
    """One gunicorn worker on the database; yields (port, the worker's pid)."""
    port = free_port()
    command = [str(GUNICORN), "sessionviewer.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    command += ["--worker-class", worker_class, "--timeout", str(timeout)]
    if worker_class == "gthread":
        command += ["--threads", "4"]
    log = open(database.with_suffix(f".{worker_class}.log"), "w")  # noqa: SIM115 - closed below
    master = subprocess.Popen(command, cwd=ROOT, env=environ(database), stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or master.poll() is not None:
                    raise RuntimeError(f"gunicorn did not start: see {log.name}") from None
                time.sleep(0.2)
        yield port, lambda: worker_of(master.pid)
    finally:
        master.terminate()
        master.wait(30)
        log.close()


def worker_of(master: int) -> int:
    children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
    return int(children[0])


def status_kb(pid: int, key: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise KeyError(key)


def fetch(port: int, path: str, cookie: str) -> dict:
    """GET path, read as it arrives: time to the first byte of the body and to the last."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    started = time.perf_counter()
    connection.request("GET", path, headers={"Cookie": f"sessionid={cookie}"})
    response = connection.getresponse()
    first, size, tail, error = None, 0, b"", ""
    try:
        while chunk := response.read1(1 << 16):
            if first is None:
                first = time.perf_counter() - started
            size += len(chunk)
            tail = (tail + chunk)[-64:]
    except (http.client.HTTPException, OSError) as cut:
        error = type(cut).__name__
    seconds = time.perf_counter() - started
    connection.close()
    return {
        "status": response.status,
        "first_byte_s": round(first or 0, 3),
        "seconds": round(seconds, 2),
        "mb": round(size / generate.MB, 2),
        "complete": not error and (tail.rstrip().endswith(b"</html>") or not path.endswith(".html")),
        "error": error,
        "load": round(os.getloadavg()[0], 1),  # the machine may be shared: the 1-minute load at the end
    }


def export_in_worker(session: dict, kinds: tuple[str, ...]) -> dict:
    """Each export of the session through one gthread worker: peak RSS, first byte, time."""
    figures = {}
    with serve(session["database"], "gthread", 300) as (port, worker):
        page = fetch(port, f"/sessions/{session['session']}/", session["cookie"])
        assert page["status"] == 200, page
        pid = worker()
        for kind in kinds:
            Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM starts again from VmRSS
            before = status_kb(pid, "VmRSS")
            got = fetch(port, f"/sessions/{session['session']}/export.{kind}", session["cookie"])
            got.update(
                rss_before_mb=round(before / 1024, 1), peak_rss_mb=round(status_kb(pid, "VmHWM") / 1024, 1)
            )
            figures[kind] = got
            print(f"  {session['name']} export.{kind}: {got}", flush=True)
    return figures


def timeout_check(session: dict, timeout: int = 20) -> dict:
    """The session's HTML export with --timeout 20, through a sync worker and a gthread worker."""
    found = {}
    for worker_class in ("sync", "gthread"):
        with serve(session["database"], worker_class, timeout) as (port, _):
            found[worker_class] = fetch(
                port, f"/sessions/{session['session']}/export.html", session["cookie"]
            )
        print(f"  --timeout {timeout}, {worker_class}: {found[worker_class]}", flush=True)
    return found


def against(tree: Path, session: dict, rounds: int, kinds: tuple[str, ...]) -> dict:
    """The session's exports in this tree and in another, alternately, each in a fresh process."""
    times: dict = {}
    for kind in kinds:
        for n in range(rounds):
            for name, where in (("other", tree), ("this", ROOT)):
                copy = session["database"].with_name(f"{session['name']}-{name}.sqlite3")
                if n == 0 and kind == kinds[0]:
                    shutil.copyfile(session["database"], copy)
                command = [sys.executable, "-c", EXPORT, str(where), str(copy), str(session["session"]), kind]
                done = run(command, copy, where)
                seconds, size = done.stdout.split()
                times.setdefault(kind, {}).setdefault(name, []).append(float(seconds))
                print(
                    f"  export.{kind} {name} tree: {float(seconds):.2f} s, {int(size) / generate.MB:.1f} MB",
                    flush=True,
                )
    return {
        kind: {name: round(statistics.median(runs), 2) for name, runs in by_tree.items()}
        for kind, by_tree in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--small-mb", type=float, default=20, help="0 leaves it out")
    parser.add_argument("--large-mb", type=float, default=200, help="0 leaves it out")
    parser.add_argument("--huge-mb", type=float, default=0, help="also a session this size (2048: 2 GB)")
    parser.add_argument("--timeout-check", action="store_true", help="sync against gthread with --timeout 20")
    parser.add_argument("--against", type=Path, help="another tree to time the 20,000-entry export in")
    parser.add_argument("--entries", type=int, default=20_000, help="lines of the session --against times")
    parser.add_argument("--only-entries", action="store_true", help="only the --against comparison")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", default="html,md", help="the exports measured, in this order")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--out", default="", help="the figures' file in bench/out/ (export.json)")
    parser.add_argument(
        "--reuse", type=Path, help="work in this folder, kept: its databases are measured again"
    )
    args = parser.parse_args()
    if args.reuse:
        args.reuse.mkdir(parents=True, exist_ok=True)
        args.keep = True
    folder = args.reuse or Path(tempfile.mkdtemp(prefix="sessionviewer-bench-export-"))
    print(f"working in {folder}; {shutil.disk_usage(folder).free / generate.MB:,.0f} MB free", flush=True)
    results: dict = {"environment": bench_sizes.bench_pages.environment()}
    try:
        template = folder / "template.sqlite3"
        if not template.exists():
            bench_sizes.migrate(template)
        # The page a worker answers first names its static files through the manifest.
        collect = [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v0"]
        subprocess.run(collect, env=environ(template), check=True, cwd=ROOT)
        if args.against:
            entries = build(folder, template, "entries", args.entries / 590 * 1.2, lines=args.entries)
            results["against"] = {"tree": str(args.against), "entries": entries["entries"]}
            results["against"].update(
                against(args.against, entries, args.rounds, tuple(args.kinds.split(",")))
            )
        if not args.only_entries:
            sizes = [("small", args.small_mb), ("large", args.large_mb), ("huge", args.huge_mb)]
            for name, megabytes in [(name, mb) for name, mb in sizes if mb]:  # 0 leaves one out
                session = build(folder, template, name, megabytes)
                figures = export_in_worker(session, tuple(args.kinds.split(",")))
                results[name] = {"mb": session["mb"], "entries": session["entries"], **figures}
                if args.timeout_check and name == "large":
                    results["timeout_check"] = timeout_check(session)
                if not args.keep:
                    session["database"].unlink()  # a 2 GB session's database is 2 GB more
        print(table(results))
    finally:
        OUT.mkdir(exist_ok=True)
        name = args.out or ("export-against.json" if args.only_entries else "export.json")
        (OUT / name).write_text(json.dumps(results, indent=2, default=str))
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


def table(results: dict) -> str:
    names = [k for k in ("small", "large", "huge") if k in results]
    rows = ["| figure | " + " | ".join(names) + " |"] if names else []
    if names:
        rows.append("|---" * (len(names) + 1) + "|")
        rows.append(
            "| size | "
            + " | ".join(f"{results[n]['mb']:,} MB, {results[n]['entries']:,} entries" for n in names)
            + " |"
        )
        for kind in ("html", "md"):
            cells = []
            for n in names:
                got = results[n].get(kind)
                cells.append(
                    f"{got['peak_rss_mb']} MB peak, first byte {got['first_byte_s']} s, {got['seconds']} s, {got['mb']} MB sent"
                    f", load {got.get('load', '?')}"
                    + ("" if got["complete"] else f", **cut: {got['error'] or 'incomplete'}**")
                    if got
                    else ""
                )
            rows.append(f"| export.{kind} | " + " | ".join(cells) + " |")
        if "small" in results and "large" in results:
            for kind in [k for k in ("html", "md") if k in results["small"] and k in results["large"]]:
                ratio = results["large"][kind]["peak_rss_mb"] / results["small"][kind]["peak_rss_mb"]
                verdict = "ok" if ratio <= TARGETS["memory_ratio"] else "MISSED"
                rows.append(
                    f"\npeak RSS, export.{kind}, large / small: {ratio:.2f}x ({verdict}, target 1.25x)"
                )
        worst = max(results[n][k]["first_byte_s"] for n in names for k in ("html", "md") if k in results[n])
        rows.append(
            f"slowest first byte: {worst} s ({'ok' if worst < TARGETS['first_byte_s'] else 'MISSED'}, target 1 s)"
        )
    if "timeout_check" in results:
        for worker_class, got in results["timeout_check"].items():
            state = "complete" if got["complete"] else f"cut ({got['error'] or 'incomplete'})"
            rows.append(f"--timeout 20, {worker_class} worker: {got['seconds']} s, {got['mb']} MB, {state}")
    if "against" in results:
        a = results["against"]
        for kind in [k for k in ("html", "md") if k in a]:
            rows.append(
                f"{a['entries']:,}-entry export.{kind}: this tree {a[kind]['this']} s, {a['tree']} {a[kind]['other']} s "
                f"({a[kind]['this'] / a[kind]['other']:.2f}x)"
            )
    return "\n".join(rows)


if __name__ == "__main__":
    main()
