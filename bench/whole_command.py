"""`manage.py index` as a user runs it: a fresh process, start-up included, timed from outside.

Used by bench_index.py (the history shapes) and compare.py (`--shape`). A tree is a folder
holding a version's manage.py and sessionviewer/ package; each tree migrates a template
database of its own once, and every cold run starts from a copy of it.

`manage.py index -v 2` prints the pass's phases (sessionviewer/index/phases.py) and the
command's own time; start-up is what the whole command took beyond that (the interpreter,
django.setup(), the imports, and the exit). A tree from before the phases prints none.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# The order phases are shown in: start-up first, then a pass's, then what is left.
PHASES = ("startup", "scan", "read", "write", "prices", "links", "copies", "memory", "snapshots", "other")
_INDEXED = re.compile(
    r"^Indexed (\d+) files \((\d+) read\), (\d+) sessions, (\d+) new entries, (\d+) bad lines"
)
_PHASE = re.compile(r"(\w+) (\d+\.\d+) s")


@dataclass
class Run:
    seconds: float  # the whole command, from outside
    files: int = 0
    read: int = 0
    sessions: int = 0
    entries: int = 0
    bad_lines: int = 0
    errors: int = 0
    phases: dict[str, float] = field(default_factory=dict)  # empty for a tree that prints none


_TICK = os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> tuple[str, int, float] | None:
    """A process's name, its parent's pid and the CPU it has taken (user and system seconds),
    from /proc/PID/stat; None once it has ended (or on a machine without /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            head, tail = stat.read().rsplit(")", 1)
    except OSError:
        return None
    fields = tail.split()
    return head.split("(", 1)[1], int(fields[1]), (int(fields[11]) + int(fields[12])) / _TICK


def formats_of(tree: Path) -> set[str]:
    """The session formats a tree reads: one module each in sessionviewer/readers/."""
    return {path.stem for path in (tree / "sessionviewer" / "readers").glob("*.py")}


# A database is a SQLite file's Path, or a PostgreSQL URL (str): its template is a database
# of its own on the same server, and a fresh one is made from it (CREATE DATABASE ... TEMPLATE).
Database = Path | str


def on_postgresql(database: Database) -> bool:
    return isinstance(database, str) and database.startswith(("postgres://", "postgresql://"))


def environment(database: Database, roots: list) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SESSIONVIEWER_") and k != "DATABASE_URL"}
    env.update(
        DATABASE_URL=database if on_postgresql(database) else f"sqlite:///{database}",
        DJANGO_SETTINGS_MODULE="sessionviewer.settings",
        DEBUG="0",
        SECRET_KEY="bench-only",  # noqa: S106 (a throwaway database's)
        SESSIONVIEWER_DEMO="0",
        # As a user configures them: the memory roots follow from the Fluux root.
        SESSIONVIEWER_ROOTS=",".join(f"{fmt}={path}" for fmt, path in roots),
        PYTHONDONTWRITEBYTECODE="",
    )
    return env


def manage(tree: Path, database: Database, roots: list, *args: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, str(tree / "manage.py"), *args],
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
        env=environment(database, roots),
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{tree}: manage.py {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def migrate(tree: Path, template: Database) -> None:
    if on_postgresql(template):
        _create_database(template)
        manage(tree, template, [], "migrate", "--noinput", "-v", "0")
        return
    for suffix in ("", "-wal", "-shm"):
        Path(f"{template}{suffix}").unlink(missing_ok=True)
    manage(tree, template, [], "migrate", "--noinput", "-v", "0")
    with sqlite3.connect(template) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def fresh(template: Database, database: Database) -> None:
    if on_postgresql(database):
        _create_database(database, template)
        return
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(template, database)


def _create_database(url: str, template: str | None = None) -> None:
    """A new, empty PostgreSQL database at url (dropped first), or a copy of template's."""
    import psycopg
    from psycopg import sql

    server, name = url.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as connection:
        connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        create = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
        if template is not None:
            create += sql.SQL(" TEMPLATE {}").format(sql.Identifier(template.rsplit("/", 1)[1]))
        connection.execute(create)


def index(tree: Path, database: Database, roots: list) -> Run:
    """One `manage.py index -v 2` over the roots, into the database as it is."""
    seconds, out = manage(tree, database, roots, "index", "-v", "2")
    run = Run(seconds)
    for line in out.splitlines():
        if match := _INDEXED.match(line):
            run.files, run.read, run.sessions, run.entries, run.bad_lines = map(int, match.groups())
            if errors := re.search(r", (\d+) errors?\b", line):
                run.errors = int(errors.group(1))
        elif line.startswith("Phases: "):
            phases = {name: float(seconds) for name, seconds in _PHASE.findall(line)}
            command = phases.pop("command")
            run.phases = {"startup": seconds - command, **phases}
            run.phases["other"] = command - sum(phases.values())
    return run


def sessions_by_format(database: Database) -> dict[str, int]:
    query = "SELECT format, count(*) FROM sessionviewer_session GROUP BY format"
    if on_postgresql(database):
        import psycopg

        with psycopg.connect(database) as connection:
            return dict(sorted(connection.execute(query).fetchall()))
    with sqlite3.connect(database) as connection:
        return dict(sorted(connection.execute(query)))


def median_phases(runs: list[Run]) -> dict[str, float]:
    """Each phase's median over the runs that printed phases."""
    runs = [run for run in runs if run.phases]
    names = [name for name in PHASES if any(name in run.phases for run in runs)]
    return {name: statistics.median(run.phases.get(name, 0.0) for run in runs) for name in names}


def phase_line(phases: dict[str, float]) -> str:
    if not phases:
        return "(no phases: the tree prints none)"
    total = sum(phases.values())
    return ", ".join(f"{name} {seconds:.2f} s ({seconds / total:.0%})" for name, seconds in phases.items())
