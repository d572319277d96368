"""How fast the pages are on a large index, against the targets in bench/README.md.

    SECRET_KEY=bench .venv/bin/python bench/bench_pages.py           # 10,000 sessions, ~1,000,000 entries
    SECRET_KEY=bench .venv/bin/python bench/bench_pages.py --quick   # smoke run: 1,000 sessions, ~100,000
    SECRET_KEY=bench .venv/bin/python bench/bench_pages.py --reuse   # measure again on the last database

The index is built once, through the real indexer, from sessions bench/generate.py
writes: 10,000 sessions and about 1,000,000 entries, one of them a Claude Code
session of 20,000 entries. The database is kept under bench/out/ for --reuse. Every
page is then requested with Django's test client, logged in as a superuser; each
figure is the median of --runs requests. The table is printed and the figures are
written to bench/out/pages.json.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pstats
import re
import shutil
import statistics
import sys
import sysconfig
import tempfile
import time
import traceback
from pathlib import Path

import orjson

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
OUT = BENCH / "out"
sys.path.insert(0, str(ROOT))

import generate  # noqa: E402 (bench/ is not a package: the script's folder is on the path)
from bench_index import environment  # noqa: E402

LIST_TARGET_MS = 200  # the list and search pages
SCREEN_TARGET_MS = 100  # the first screen of any transcript, whatever its length
SLOW_MS = 1000  # a figure whose warm-up request takes longer is timed over fewer runs
SLOW_RUNS = 3
VERY_SLOW_MS = 5000  # ... and one whose warm-up takes longer counts it as one of those runs

COMMON_SHARE, RARE_SHARE = 0.01, 0.0002  # of entries: the search words, ~10,000 and ~200 in a million

# Entries per MB the generator writes, to size the chunks; corrected by what the indexer reports.
ENTRIES_PER_MB = {"mixed": 760.0, "claude_code": 600.0}
BIG_ENTRIES_PER_MB = 590.0


def setup_django(database: Path | str) -> None:
    """Point Django at the benchmark's SQLite file (or a database URL); must run before anything
    imports the models."""
    os.environ["DATABASE_URL"] = database if isinstance(database, str) else f"sqlite:///{database}"
    os.environ["DJANGO_SETTINGS_MODULE"] = "sessionviewer.settings"
    os.environ["DEBUG"] = "0"  # DEBUG keeps every query in memory and renders differently
    os.environ.setdefault("SECRET_KEY", "bench")
    hosts = [h for h in os.environ.get("ALLOWED_HOSTS", "localhost,127.0.0.1").split(",") if h]
    os.environ["ALLOWED_HOSTS"] = ",".join(dict.fromkeys([*hosts, "testserver"]))
    import django

    django.setup()
    from django.conf import settings

    # As the tests do: the source static folder, no manifest (collectstatic has not run). A deployed
    # server looks names up in the manifest instead, a dict lookup either way.
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
    }


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def clock(seconds: float) -> str:
    minutes, seconds = divmod(int(seconds), 60)
    return f"{minutes}:{seconds:02d}"


# --- Building the index ------------------------------------------------------------------------------


class Builder:
    """Generates sessions chunk by chunk, indexes each chunk and deletes its files.

    generate() makes about 90 entries per session over the four formats, Claude Code alone
    about 170 (its subagents are sessions too): the chunks mix the two so that sessions and
    entries reach their targets together, and tiny sessions (generate_many) make up the count.
    """

    def __init__(self, work: Path, args: argparse.Namespace):
        self.work, self.args = work, args
        self.sessions = self.entries = self.megabytes = 0
        self.chunks: list[dict] = []
        self.started = time.perf_counter()
        self.per_mb = dict(ENTRIES_PER_MB)
        self.ratio = {"mixed": 90.0, "claude_code": 170.0}  # entries per session, corrected as we go

    def index(self, name: str, made: dict, kind: str = "") -> dict:
        from sessionviewer import transcripts
        from sessionviewer.index import index_roots
        from sessionviewer.roots import RootSpec

        prepare_snapshots = getattr(transcripts, "prepare_snapshots", None)
        generated = time.perf_counter()
        summary = index_roots([RootSpec(Path(path), fmt) for fmt, path in made["roots"]])
        # What `manage.py index` does after a pass: store the threads of the long sessions.
        if prepare_snapshots is not None:
            prepare_snapshots(summary.touched)
        seconds = time.perf_counter() - generated
        if summary.errors:
            say(f"  {name}: {len(summary.errors)} errors, first: {summary.errors[0]}")
        self.sessions += summary.sessions
        self.entries += summary.entries
        megabytes = made["bytes"] / generate.MB
        self.megabytes += megabytes
        if kind and summary.sessions:
            self.per_mb[kind] = summary.entries / max(megabytes, 0.01)
            self.ratio[kind] = summary.entries / summary.sessions
        row = {
            "name": name,
            "kind": kind,
            "megabytes": round(megabytes, 1),
            "sessions": summary.sessions,
            "entries": summary.entries,
            "index_seconds": round(seconds, 1),
            "summary": summary.line(),
        }
        self.chunks.append(row)
        say(
            f"  {name}: {megabytes:.0f} MB, {summary.sessions:,} sessions, {summary.entries:,} entries, "
            f"indexed in {seconds:.1f} s ({summary.entries / max(seconds, 1e-9):,.0f} entries/s); "
            f"total {self.sessions:,} sessions, {self.entries:,} entries, {clock(time.perf_counter() - self.started)}"
        )
        return row

    def bulk(self, target_sessions: int, target_entries: int) -> None:
        """Chunks of generate() until the entries are there, steering the sessions on the way."""
        number = 0
        while True:
            left_entries = target_entries - self.entries
            left_sessions = target_sessions - self.sessions
            if left_entries < 0.005 * target_entries or left_entries < 500:
                return
            # Claude Code alone when the sessions left must be longer than a mixed chunk makes them.
            wanted = left_entries / max(left_sessions, 1)
            kind = "claude_code" if wanted > self.ratio["mixed"] * 1.1 else "mixed"
            formats = ("claude_code",) if kind == "claude_code" else generate.FORMATS
            megabytes = min(self.args.chunk_mb, max(left_entries / self.per_mb[kind], 0.5))
            folder = self.work / f"chunk-{number:03d}"
            made = generate.generate(folder, megabytes, self.args.seed + number, formats)
            self.index(f"chunk {number} ({kind})", made, kind)
            shutil.rmtree(folder, ignore_errors=True)
            number += 1

    def tiny(self, count: int) -> None:
        if count <= 0:
            return
        folder = self.work / "tiny"
        made = generate.generate_many(folder, count, self.args.seed + 10_000)
        self.index(f"{count:,} tiny sessions", made)
        shutil.rmtree(folder, ignore_errors=True)

    def big(self, entries: int) -> int:
        """One Claude Code session cut to exactly `entries` lines (one entry per line)."""
        from sessionviewer.models import Session

        megabytes = entries / BIG_ENTRIES_PER_MB * 1.1
        folder = self.work / "big"
        while True:
            made = generate.generate_large(folder, megabytes, self.args.seed + 20_000, "claude_code")
            path = Path(made["path"])
            with open(path, "rb") as handle:
                lines = handle.readlines()
            if len(lines) >= entries:
                break
            shutil.rmtree(folder, ignore_errors=True)
            megabytes *= 1.3 * entries / max(len(lines), 1)
        path.write_bytes(b"".join(lines[:entries]))
        made["bytes"] = path.stat().st_size
        self.index(f"the {entries:,}-entry session", made)
        session = Session.objects.get(source__path=made["roots"][0][1])
        shutil.rmtree(folder, ignore_errors=True)
        return session.id


def search_words(entries: int) -> dict:
    """A word in about 1% of entries and a rare one, read from the FTS index's own vocabulary."""
    from django.db import connection

    started = time.perf_counter()
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.bench_vocab USING fts5vocab(main, entry_fts, row)"
        )
        cursor.execute("SELECT term, doc FROM temp.bench_vocab")
        vocabulary = cursor.fetchall()
        cursor.execute("DROP TABLE temp.bench_vocab")

    # Words people would type first: the generator's own, then any word of letters (in generated
    # text the rarer ones are mostly the cut ends of words: "viewer", "proj"), then anything.
    known = set(generate._WORDS) | set(re.findall(r"[a-z]{3,}", " ".join(generate._LOG_TEMPLATES).lower()))
    tiers = [
        [(t, d) for t, d in vocabulary if t in known],
        [(t, d) for t, d in vocabulary if len(t) >= 4 and t.isalpha()],
        [(t, d) for t, d in vocabulary if any(c.isalpha() for c in t)],
        vocabulary,
    ]

    def nearest(docs: float, within: float) -> tuple[str, int]:
        """The term whose entry count is nearest docs (by ratio), from the first tier that has
        one within the given factor; else the nearest of the last tier."""
        best = ("", 0)
        for tier in (tier for tier in tiers if tier):
            best = min(
                tier, key=lambda td: (max(td[1], 1) / docs if td[1] > docs else docs / max(td[1], 1), td[0])
            )
            if max(best[1], 1) / docs <= within and docs / max(best[1], 1) <= within:
                return best
        return best

    common, common_docs = nearest(entries * COMMON_SHARE, 1.5)
    rare, rare_docs = nearest(max(5, entries * RARE_SHARE), 4)
    return {
        "terms": len(vocabulary),
        "common": common,
        "common_entries": common_docs,
        "rare": rare,
        "rare_entries": rare_docs,
        "seconds": round(time.perf_counter() - started, 1),
    }


def small_session() -> int:
    """A main Claude Code session of about 100 entries, for comparison with the big one."""
    from sessionviewer.models import Session

    rows = Session.objects.filter(format="claude_code", kind="main").values_list("id", "entry_count")
    return min(rows, key=lambda row: (abs(row[1] - 100), row[0]))[0]


def build(database: Path, args: argparse.Namespace) -> dict:
    from django.core.management import call_command
    from django.db import connection, connections

    from sessionviewer.models import Entry, Session

    call_command("migrate", verbosity=0)
    work = Path(tempfile.mkdtemp(prefix="sessionviewer-bench-pages-"))
    started = time.perf_counter()
    say(
        f"building the index: {args.sessions:,} sessions, ~{args.entries:,} entries "
        f"(one of {args.big_entries:,}) into {database}"
    )
    try:
        builder = Builder(work, args)
        big = builder.big(args.big_entries)
        tiny_share = max(1, args.sessions // 10)  # kept for the end: they fix the count exactly
        builder.bulk(args.sessions - tiny_share, args.entries)
        builder.tiny(args.sessions - builder.sessions)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    seconds = time.perf_counter() - started
    total_entries = Entry.objects.count()
    say(f"index built in {clock(seconds)}; looking for search words ...")
    words = search_words(total_entries)
    meta = {
        "complete": True,
        "options": {k: getattr(args, k) for k in ("sessions", "entries", "big_entries", "seed", "chunk_mb")},
        "sessions": Session.objects.count(),
        "entries": total_entries,
        "generated_mb": round(builder.megabytes, 1),
        "build_seconds": round(seconds, 1),
        "chunks": builder.chunks,
        "big_session": big,
        "small_session": small_session(),
        "words": words,
    }
    connections.close_all()
    meta["database_mb"] = round(database.stat().st_size / generate.MB, 1)
    return meta


# --- Measuring -----------------------------------------------------------------------------------------


def bench_client():
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.filter(username="bench").first() or User.objects.create_superuser(
        "bench", "bench@example.com", None
    )
    client = Client()
    client.force_login(user)
    return client


def timed_page(client, url: str, runs: int) -> tuple[float, list[dict]]:
    """The median time of runs requests of url (one first, untimed), in ms, and the
    statements the last one sent (Django's CaptureQueriesContext)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    assert client.get(url).status_code == 200, url
    times = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            response = client.get(url)
            times.append(time.perf_counter() - started)
        assert response.status_code == 200, url
    return statistics.median(times) * 1000, queries.captured_queries


def slowest_statement(queries: list[dict], width: int) -> str:
    """The slowest of these statements: its ms and the start of its SQL."""
    slowest = max(queries, key=lambda q: float(q["time"]), default={"time": 0, "sql": ""})
    return f"{float(slowest['time']) * 1000:.0f}: {' '.join(slowest['sql'].split())[:width]}"


# Before each timed request: nothing (warm), the in-process thread cache and rendered HTML
# (render.MEMO) emptied (cold: a server restart, another worker), or that and the session's
# stored thread snapshot removed too
# (rebuild: the thread built from the entries, as after an append no index pass prepared yet).
WARM, COLD, REBUILD = "warm", "cold", "rebuild"


def forget(mode: str, session_id: int | None) -> None:
    from sessionviewer import render, transcripts

    if mode in (COLD, REBUILD):
        transcripts.clear_cache()
        if (memo := getattr(render, "MEMO", None)) is not None:  # a tree before it had none
            memo.clear()
    if mode == REBUILD and session_id is not None:
        from sessionviewer.models import ThreadSnapshot

        ThreadSnapshot.objects.filter(session_id=session_id).delete()


def measure(client, figure: dict, runs: int) -> dict:
    """Median, min and max of `runs` requests, after one untimed warm-up request."""
    url, mode, session_id = figure["url"], figure["mode"], figure.get("session")
    headers = {"HTTP_HX_REQUEST": "true"} if figure["htmx"] else {}

    def once() -> tuple[float, object]:
        forget(mode, session_id)
        gc.collect()
        started = time.perf_counter()
        response = client.get(url, **headers)
        body = response.getvalue()  # an export streams: read to its end
        elapsed = (time.perf_counter() - started) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"GET {url}: {response.status_code} {body[:300]!r}")
        return elapsed, body

    warm_up, body = once()
    times = []
    if warm_up > SLOW_MS:
        runs = min(runs, SLOW_RUNS)
        if warm_up > VERY_SLOW_MS:
            times.append(warm_up)  # nothing left to warm up that matters next to its own time
    times += [once()[0] for _ in range(runs - len(times))]
    return {
        "runs_ms": [round(t, 1) for t in times],
        "warm_up_ms": round(warm_up, 1),
        "median_ms": round(statistics.median(times), 1),
        "min_ms": round(min(times), 1),
        "max_ms": round(max(times), 1),
        "kb": round(len(body) / 1024, 1),
    }


def figures(meta: dict) -> list[dict]:
    """Every figure: key, label, URL, what is forgotten before each request, htmx, target."""
    from urllib.parse import urlencode

    from django.db.models import Count, Sum
    from django.urls import reverse

    from sessionviewer import transcripts
    from sessionviewer.models import Session

    big = Session.objects.get(id=meta["big_session"])
    small = Session.objects.get(id=meta["small_session"])
    shown = transcripts.transcript(big)
    total = len(shown.items)
    late = next(
        (shown.items[i].entry.id for i in range(max(total - 21, 0), -1, -1) if shown.items[i].entry.id),
        shown.items[-1].entry.id,
    )
    offset = 10_000 if total > 10_000 else total // 2 // transcripts.CHUNK * transcripts.CHUNK
    words, entries = meta["words"], meta["entries"]
    home, search = reverse("session-list"), reverse("api-search")
    detail, small_detail = (reverse("session-detail", args=[s.id]) for s in (big, small))
    permalink = detail + "?" + urlencode({"entry": late})
    common, rare = (home + "?" + urlencode({"q": words[k]}) for k in ("common", "rare"))
    api_common, api_rare = (search + "?" + urlencode({"q": words[k]}) for k in ("common", "rare"))
    long_ = f"{big.entry_count:,} entries"
    # Projects: the one with the most sessions, and the long transcript's (the most entries).
    crowded = (
        Session.objects.exclude(project="")
        .values("project")
        .annotate(n=Count("id"))
        .order_by("-n", "project")
        .first()
    )
    crowded_url = reverse("project-detail", args=[crowded["project"]])
    big_project_url = reverse("project-detail", args=[big.project])
    big_project_entries = Session.objects.filter(project=big.project).aggregate(n=Sum("entry_count"))["n"]
    rows = [
        # key, label, url, mode, htmx, target, session whose snapshot a rebuild removes
        ("list", "list page /", home, WARM, False, LIST_TARGET_MS, None),
        ("list_filtered", "list ?format=claude_code&_sort=tokens", home + "?format=claude_code&_sort=tokens", WARM, False, LIST_TARGET_MS, None),
        ("list_htmx", "list /, htmx fragment", home, WARM, True, LIST_TARGET_MS, None),
        ("list_cost", "list ?_sort=cost", home + "?_sort=cost", WARM, False, LIST_TARGET_MS, None),
        ("activity", "activity, all sessions", reverse("activity"), WARM, False, LIST_TARGET_MS, None),
        ("activity_30", "activity ?_range=30", reverse("activity") + "?_range=30", WARM, False, LIST_TARGET_MS, None),
        ("api_activity", "/api/activity", reverse("api-activity"), WARM, False, LIST_TARGET_MS, None),
        ("project", f"project page, {crowded['n']} sessions", crowded_url, WARM, False, LIST_TARGET_MS, None),
        ("project_big", f"project page, {big_project_entries:,} entries", big_project_url, WARM, False, LIST_TARGET_MS, None),
        ("api_project", f"/api/projects/<key>, {crowded['n']} sessions", reverse("api-project-detail", args=[crowded["project"]]), WARM, False, LIST_TARGET_MS, None),
        ("cost_page", f"cost page, {long_}", reverse("session-cost", args=[big.id]), WARM, False, LIST_TARGET_MS, None),
        ("search_common", f"list ?q={words['common']} ({words['common_entries'] / entries:.1%} of entries)", common, WARM, False, LIST_TARGET_MS, None),
        ("search_rare", f"list ?q={words['rare']} ({words['rare_entries']:,} entries)", rare, WARM, False, LIST_TARGET_MS, None),
        ("api_search_common", f"/api/search?q={words['common']}", api_common, WARM, False, LIST_TARGET_MS, None),
        ("api_search_rare", f"/api/search?q={words['rare']}", api_rare, WARM, False, LIST_TARGET_MS, None),
        ("first_screen_rebuild", f"first screen, {long_}, no snapshot", detail, REBUILD, False, SCREEN_TARGET_MS, big.id),
        ("first_screen_cold", f"first screen, {long_}, cold", detail, COLD, False, SCREEN_TARGET_MS, big.id),
        ("first_screen_warm", f"first screen, {long_}, warm", detail, WARM, False, SCREEN_TARGET_MS, big.id),
        ("small_first_screen_cold", f"first screen, {small.entry_count} entries, cold", small_detail, COLD, False, SCREEN_TARGET_MS, small.id),
        ("small_first_screen_warm", f"first screen, {small.entry_count} entries, warm", small_detail, WARM, False, SCREEN_TARGET_MS, small.id),
        ("permalink_cold", f"late permalink (item {shown.positions[late]:,} of {total:,}), cold", permalink, COLD, False, SCREEN_TARGET_MS, big.id),
        ("permalink_warm", "late permalink, warm", permalink, WARM, False, SCREEN_TARGET_MS, big.id),
        ("chunk_warm", f"chunk ?_offset={offset:,}, htmx, warm", detail + f"?_offset={offset}", WARM, True, SCREEN_TARGET_MS, big.id),
        ("api_detail", f"JSON /api/sessions/<id>, {long_}", reverse("api-session-detail", args=[big.id]), WARM, False, None, big.id),
        ("api_detail_small", f"JSON /api/sessions/<id>, {small.entry_count} entries", reverse("api-session-detail", args=[small.id]), WARM, False, None, small.id),
        ("export_html", f"export.html, {long_}", reverse("session-export-html", args=[big.id]), WARM, False, None, big.id),
        ("export_md", f"export.md, {long_}", reverse("session-export-md", args=[big.id]), WARM, False, None, big.id),
    ]  # fmt: skip
    return [
        {
            "key": key,
            "label": label,
            "url": url,
            "mode": mode,
            "htmx": htmx,
            "target_ms": target,
            "session": sid,
        }
        for key, label, url, mode, htmx, target, sid in rows
    ]


# Request plumbing every page goes through: left out of the cumulative list, which it would fill.
PLUMBING = (
    "django/test/",
    "django/core/handlers/",
    "django/utils/deprecation.py",
    "django/views/decorators/",
    "django/contrib/auth/decorators.py",
    "django_htmx/middleware.py",
    "whitenoise/middleware.py",
    "django/template/",  # the template engine's nested render calls: django/shortcuts.py:render sums them
    "template_partials/",
)


def profile_request(client, figure: dict, top: int) -> str:
    """cProfile one request: the top functions by cumulative time (plumbing left out), then by own time."""
    forget(figure["mode"], figure.get("session"))
    if figure["mode"] == WARM:  # as measure() does: the figures since may have emptied the caches
        client.get(figure["url"]).getvalue()
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    client.get(figure["url"]).getvalue()  # an export streams: profile it to its end
    profiler.disable()
    OUT.mkdir(exist_ok=True)
    saved = OUT / f"pages_{figure['key']}.prof"
    profiler.dump_stats(saved)
    stats = pstats.Stats(
        profiler
    ).stats  # (file, line, function) -> (calls, ncalls, tottime, cumtime, callers)
    prefixes = sorted(
        {str(ROOT) + "/", sysconfig.get_paths()["purelib"] + "/", sys.base_prefix + "/"}, key=len
    )[::-1]

    def where(key: tuple) -> str:
        path, line, function = key
        for prefix in prefixes:
            path = path.replace(prefix, "")
        return f"{path}:{line}({function})" if line else function

    def rows(order: int, keep) -> list[str]:
        found = sorted(
            ((v, k) for k, v in stats.items() if keep(k)), key=lambda vk: vk[0][order], reverse=True
        )
        return [f"{v[3] * 1000:9.1f} {v[2] * 1000:9.1f} {v[1]:>9}  {where(k)}" for v, k in found]

    total = sum(v[2] for v in stats.values()) * 1000
    header = f"{'cum ms':>9} {'own ms':>9} {'calls':>9}  function"
    return "\n".join(
        [
            f"{total:.0f} ms under the profiler (which slows Python code down); saved to {saved}",
            "by cumulative time; request plumbing and the template engine's nested calls left out:",
            header,
            *rows(3, lambda k: not any(p in k[0] for p in PLUMBING))[:top],
            "by own time:",
            header,
            *rows(2, lambda k: True)[:10],
        ]
    )


def verdict(row: dict) -> str:
    if row.get("error"):
        return "FAILED"
    if row["target_ms"] is None:
        return ""
    return "ok" if row["median_ms"] < row["target_ms"] else "MISSED"


def table(rows: list[dict]) -> str:
    lines = [("figure", "median ms", "min–max", "n", "KB", "target", "")]
    for row in rows:
        target = f"< {row['target_ms']} ms" if row["target_ms"] else ""
        if row.get("error"):
            lines.append(
                (row["label"], "", "", "", "", target, "FAILED: " + row["error"].splitlines()[-1][:60])
            )
            continue
        lines.append(
            (
                row["label"],
                f"{row['median_ms']:.1f}",
                f"{row['min_ms']:.1f}–{row['max_ms']:.1f}",
                str(len(row["runs_ms"])),
                f"{row['kb']:,.0f}",
                target,
                verdict(row),
            )
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    right = {1, 2, 3, 4}
    text = [
        "  ".join(
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        ).rstrip()
        for line in lines
    ]
    text.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10_000, help="sessions in the index")
    parser.add_argument("--entries", type=int, default=1_000_000, help="entries in the index, about")
    parser.add_argument("--big-entries", type=int, default=20_000, help="entries of the long transcript")
    parser.add_argument("--runs", type=int, default=7, help="timed requests per figure (median, min, max)")
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 1,000 sessions, 100,000 entries, 3 runs"
    )
    parser.add_argument("--reuse", action="store_true", help="measure on the database a previous run built")
    parser.add_argument("--discard", action="store_true", help="delete the built database at the end")
    parser.add_argument("--chunk-mb", type=float, default=150, help="MB of sessions generated per step")
    parser.add_argument(
        "--profile",
        nargs="+",
        default=["first_screen_cold"],
        metavar="FIGURE",
        help="figures to cProfile one request of, by key (see pages.json), e.g. search_common",
    )
    parser.add_argument("--profile-top", type=int, default=15, help="functions shown from each profile")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.quick:
        args.sessions, args.entries, args.runs, args.chunk_mb = 1_000, 100_000, 3, 40

    OUT.mkdir(exist_ok=True)
    stem = f"pages-{args.sessions}s-{args.entries}e-{args.big_entries}b-seed{args.seed}"
    database, meta_path = OUT / f"{stem}.sqlite3", OUT / f"{stem}.json"
    reuse = args.reuse and database.exists() and meta_path.exists()
    if args.reuse and not reuse:
        say(f"no database from an earlier run at {database}: building one")
    if not reuse:
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"), meta_path):
            path.unlink(missing_ok=True)
    setup_django(database)
    started = time.perf_counter()
    results: dict = {"environment": environment(), "options": vars(args), "database": str(database)}
    if reuse:
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        meta = orjson.loads(meta_path.read_bytes())
        say(f"reusing {database} ({meta['sessions']:,} sessions, {meta['entries']:,} entries)")
        meta["words"] = search_words(meta["entries"])  # a few seconds: the choice may have changed
    else:
        meta = build(database, args)
        meta_path.write_bytes(orjson.dumps(meta, option=orjson.OPT_INDENT_2))
    results["index"] = meta

    client = bench_client()
    rows = figures(meta)
    for row in rows:
        say(f"measuring {row['label']} ...")
        try:
            row.update(measure(client, row, args.runs))
        except Exception:  # one broken page must not hide the others' figures
            row["error"] = traceback.format_exc()
            say(row["error"])
    results["profiles"] = {}
    for key in args.profile:
        figure = next((row for row in rows if row["key"] == key), None)
        if figure is None:
            results["profiles"][key] = f"no figure {key!r}; one of: {', '.join(row['key'] for row in rows)}"
            continue
        say(f"profiling {figure['label']} ...")
        try:
            text = profile_request(client, figure, args.profile_top)
        except Exception:
            text = "FAILED\n" + traceback.format_exc()
        results["profiles"][key] = f"cProfile of one request: {figure['label']}\n{text}"
    results["figures"] = rows
    results["seconds"] = round(time.perf_counter() - started, 1)

    words = meta["words"]
    print(
        f"index: {meta['sessions']:,} sessions, {meta['entries']:,} entries, {meta['database_mb']:,} MB "
        f"(built in {clock(meta['build_seconds'])} from {meta['generated_mb']:,} MB of sessions); "
        f"search words: {words['common']!r} in {words['common_entries']:,} entries, "
        f"{words['rare']!r} in {words['rare_entries']:,}"
    )
    print()
    print(table(rows))
    print()
    for text in results["profiles"].values():
        print(text, end="\n\n")
    print(f"{clock(results['seconds'])} in all")
    (OUT / "pages.json").write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2, default=str))
    print(f"figures written to {OUT / 'pages.json'}")
    if args.discard:
        for path in (database, Path(f"{database}-wal"), Path(f"{database}-shm"), meta_path):
            path.unlink(missing_ok=True)
    else:
        size = sum(p.stat().st_size for p in OUT.glob(f"{stem}.sqlite3*")) / generate.MB
        print(
            f"database kept for --reuse: {database} ({size:,.0f} MB); delete it when done, or use --discard"
        )


if __name__ == "__main__":
    main()
