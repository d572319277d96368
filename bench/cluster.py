"""A local cluster: the shape of many machines on one PostgreSQL (issue 28), on one machine,
for development, tests and the load bench.

    .venv/bin/python bench/cluster.py start     # PostgreSQL, migrate, 3 indexers, 2 web processes
    .venv/bin/python bench/cluster.py status
    .venv/bin/python bench/cluster.py stop      # all of it; or some: stop indexer-laptop web-8002

PostgreSQL is the server DATABASE_URL names when it is a postgres:// one, else a server of
the cluster's own: Debian's binaries (/usr/lib/postgresql/*/bin), initdb into DIR/postgres,
the first free port from 54330. Three indexers (`manage.py index --watch`), each with its own
SESSIONVIEWER_MACHINE: laptop and ci-runner over the same root paths (TREES/shared), server
over its own (TREES/server); a tree is written once by generate.py. Two gunicorn web
processes, on 8001 and 8002, with no session files of their own. compose.yaml runs the same
commands (tests/test_cluster.py holds them equal).

Each piece runs in a session of its own: `start` returns, the pieces go on. Their pids are in
DIR/cluster.json, their output in DIR/logs/. `start` again starts what is not running (a
piece stopped or killed) and leaves the rest; `stop` with no names stops every piece, and the
PostgreSQL server if it is the cluster's own, and forgets the plan (the data stays).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
DIR = ROOT / "data" / "cluster"

# The commands, as compose.yaml gives them: "python" and "gunicorn" are the virtualenv's here.
MIGRATE = ["python", "manage.py", "migrate", "--noinput"]
ADMIN = ["python", "manage.py", "ensureadmin"]
INDEXER = ["python", "manage.py", "index", "--watch"]


def web_command(bind: str, workers: int = 3, threads: int = 4) -> list[str]:
    """A web process as `make run` and the Dockerfile serve (gthread workers, 300 s), but
    without gunicorn's control socket: every master of a user takes ~/.gunicorn/gunicorn.ctl
    by default, and two web processes on one host would take it from each other."""
    return [
        "gunicorn", "sessionviewer.wsgi", "--bind", bind, "--workers", str(workers),
        "--worker-class", "gthread", "--threads", str(threads), "--timeout", "300", "--access-logfile", "-",
        "--no-control-socket",
    ]  # fmt: skip


# Machine -> the tree its roots are in. Two machines with the same root paths are two
# machines to the index, as if each had its own copy of the files.
MACHINES = {"laptop": "shared", "ci-runner": "shared", "server": "server"}
WEB_PORTS = (8001, 8002)
PG_PORT = 54330
# What a piece must not take from the shell that starts it: the plan sets what it needs.
NOT_INHERITED = ("SECRET_KEY", "DATABASE_URL", "SESSIONVIEWER_ROOTS", "SESSIONVIEWER_MEMORY_ROOTS")


def tree_roots(tree: Path) -> list[str]:
    """FORMAT=PATH for each format's root a generated tree has (generate.ROOT_DIRS)."""
    import generate  # noqa: PLC0415 - only where a tree is planned

    return [f"{fmt}={tree / path}" for fmt, path in generate.ROOT_DIRS.items() if (tree / path).is_dir()]


def plan(
    database_url: str,
    secret_file: Path,
    logs: Path,
    trees: Path,
    machines: dict[str, str] = MACHINES,
    web_ports: tuple[int, ...] = WEB_PORTS,
    host: str = "127.0.0.1",
    workers: int = 3,
) -> dict[str, dict]:
    """Each piece by name: its command, the environment it adds, its log, its URL."""
    common = {
        "DATABASE_URL": database_url,
        "SECRET_KEY_FILE": str(secret_file),  # the same key everywhere: findings are keyed with it
        "SESSIONVIEWER_DEMO": "0",
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "sessionviewer.settings"),
        "PYTHONUNBUFFERED": "1",  # the logs as it happens
    }
    pieces = {}
    for machine, tree in machines.items():
        roots = "\n".join(tree_roots(trees / tree))
        env = {**common, "SESSIONVIEWER_MACHINE": machine, "SESSIONVIEWER_ROOTS": roots}
        pieces[f"indexer-{machine}"] = {
            "argv": INDEXER,
            "env": env,
            "log": str(logs / f"indexer-{machine}.log"),
        }
    for port in web_ports:
        pieces[f"web-{port}"] = {
            "argv": web_command(f"{host}:{port}", workers),
            "env": common,
            "log": str(logs / f"web-{port}.log"),
            "url": f"http://{host}:{port}/",
        }
    return pieces


def resolved(argv: list[str]) -> list[str]:
    venv = Path(sys.executable).parent
    return [{"python": sys.executable, "gunicorn": str(venv / "gunicorn")}.get(argv[0], argv[0]), *argv[1:]]


def environ(added: dict[str, str]) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if k not in NOT_INHERITED}, **added}


def alive(pid: int | None, argv: list[str]) -> bool:
    """The piece still runs: the pid is there, not a zombie, and still runs its command."""
    if not pid:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return state not in ("Z", "X") and argv[1].encode() in command


def spawn(name: str, piece: dict) -> int:
    log = Path(piece["log"])
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        out.write(f"--- {name} started {time.strftime('%Y-%m-%d %H:%M:%S')}\n".encode())
        out.flush()
        process = subprocess.Popen(
            resolved(piece["argv"]),
            cwd=ROOT,
            env=environ(piece["env"]),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives `make`; its group is stopped whole (workers too)
        )
    return process.pid


def stop_group(pid: int, argv: list[str], seconds: float = 30) -> None:
    """SIGTERM to the piece's process group, SIGKILL if it is still there after `seconds`."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + seconds
        while alive(pid, argv) and time.monotonic() < deadline:
            time.sleep(0.1)
        if not alive(pid, argv):
            return


# PostgreSQL of the cluster's own.


def pg_bin() -> Path:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    if not found:
        raise SystemExit(
            "no PostgreSQL here: set DATABASE_URL=postgres://..., or install Debian's postgresql"
        )
    return found[-1].parent


def as_postgres(argv: list) -> list[str]:
    """initdb and postgres refuse to run as root: as root, run them as the postgres user."""
    argv = [str(part) for part in argv]
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def pg_running(folder: Path) -> int | None:
    """The port of the cluster's own server, if it runs."""
    data = folder / "data"
    if not (data / "PG_VERSION").exists():
        return None
    status = subprocess.run(as_postgres([pg_bin() / "pg_ctl", "status", "-D", data]), capture_output=True)
    if status.returncode != 0:
        return None
    return int((data / "postmaster.pid").read_text().splitlines()[3])


def port_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def start_postgres(folder: Path, port: int) -> str:
    """initdb once, start the server on the first free port from `port`, make the
    database: its URL."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    data, log = folder / "data", folder / "postgres.log"
    if not (data / "PG_VERSION").exists():
        initdb = [pg_bin() / "initdb", "-D", data, "--auth=trust", "--username=postgres", "-E", "UTF8"]
        subprocess.run(as_postgres(initdb), check=True, stdout=subprocess.DEVNULL)
    running = pg_running(folder)
    if running is None:
        while not port_free(port):
            port += 1
        options = f"-p {port} -k {shlex.quote(str(folder))} -c listen_addresses=127.0.0.1"
        start = [pg_bin() / "pg_ctl", "-D", data, "-l", log, "-w", "-o", options, "start"]
        subprocess.run(as_postgres(start), check=True, stdout=subprocess.DEVNULL)
    port = running or port
    import psycopg  # noqa: PLC0415 - the virtualenv's, only for a server of our own

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{port}/postgres", autocommit=True) as db:
        if not db.execute("SELECT 1 FROM pg_database WHERE datname = 'sessionviewer'").fetchone():
            db.execute("CREATE DATABASE sessionviewer")
    return f"postgres://postgres@127.0.0.1:{port}/sessionviewer"


def stop_postgres(folder: Path) -> None:
    if pg_running(folder) is not None:
        stop = [pg_bin() / "pg_ctl", "-D", folder / "data", "-m", "fast", "-w", "stop"]
        subprocess.run(as_postgres(stop), check=True, stdout=subprocess.DEVNULL)


# The commands.


def load(folder: Path) -> dict | None:
    state = folder / "cluster.json"
    return json.loads(state.read_text()) if state.exists() else None


def save(folder: Path, state: dict) -> None:
    path = folder / "cluster.json"
    path.touch(mode=0o600)  # DATABASE_URL may hold a password
    path.write_text(json.dumps(state, indent=2) + "\n")


def secret_file(folder: Path) -> Path:
    """SECRET_KEY_FILE if set, else a key made once for the cluster, readable by its owner only."""
    if given := os.environ.get("SECRET_KEY_FILE"):
        return Path(given).resolve()
    path = folder / "secret_key"
    if not path.exists():
        folder.mkdir(parents=True, exist_ok=True)
        path.touch(mode=0o600)
        path.write_text(secrets.token_urlsafe(50) + "\n")
    return path


def start(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    state = load(folder)
    if state is None:
        configured = os.environ.get("DATABASE_URL", "")
        own = not configured.startswith(("postgres://", "postgresql://"))
        url = start_postgres(folder / "postgres", args.pg_port) if own else configured
        trees = (args.trees or folder / "sessions").resolve()
        for seed, tree in enumerate(sorted(set(args.machines.values()))):
            if not (trees / tree).exists():
                import generate  # noqa: PLC0415

                print(f"writing {args.mb:g} MB of sessions into {trees / tree} (bench/generate.py)")
                generate.generate(trees / tree, args.mb, seed=seed)
        pieces = plan(
            url,
            secret_file(folder),
            folder / "logs",
            trees,
            args.machines,
            args.web_ports,
            args.host,
            args.workers,
        )
        state = {"database_url": url, "postgres": str(folder / "postgres") if own else None, "pieces": pieces}
        save(folder, state)
    elif state["postgres"]:
        start_postgres(Path(state["postgres"]), int(state["database_url"].rsplit(":", 1)[1].split("/")[0]))
    env = environ(next(iter(state["pieces"].values()))["env"])
    for step in (MIGRATE, ADMIN):  # once, before any piece: two webs must not migrate at once
        done = subprocess.run(resolved(step), cwd=ROOT, env=env, capture_output=True, text=True)
        if done.returncode:
            print(done.stdout + done.stderr, file=sys.stderr)
            return done.returncode
        if step is ADMIN:
            print(done.stdout.strip())
    webs = {name: piece for name, piece in state["pieces"].items() if "url" in piece}
    indexers = {name: piece for name, piece in state["pieces"].items() if name not in webs}
    # The web processes first, answering before the indexers' first passes take the CPU.
    for name, piece in webs.items():
        if not alive(piece.get("pid"), piece["argv"]):
            if not port_free(web_address(piece)[1]):
                print(f"{name}: {piece['url']} is taken by another process", file=sys.stderr)
                return 1
            piece["pid"] = spawn(name, piece)
            save(folder, state)
    if failed := wait_ready(webs, args.seconds):
        return failed
    for name, piece in indexers.items():
        if not alive(piece.get("pid"), piece["argv"]):
            piece["pid"] = spawn(name, piece)
            save(folder, state)
    return status(args)


def web_address(piece: dict) -> tuple[str, int]:
    host, port = piece["url"].split("//")[1].strip("/").rsplit(":", 1)
    return host, int(port)


def wait_ready(webs: dict[str, dict], seconds: float) -> int:
    """Wait for the web processes to answer; say which one ended, with its log's end."""
    deadline = time.monotonic() + seconds
    for name, piece in webs.items():
        while alive(piece["pid"], piece["argv"]) and time.monotonic() < deadline:
            try:
                socket.create_connection(web_address(piece), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            tail = Path(piece["log"]).read_text(errors="replace").splitlines()[-15:]
            print(f"{name} did not answer:\n  " + "\n  ".join(tail), file=sys.stderr)
            return 1
    return 0


def status(args: argparse.Namespace) -> int:
    state = load(args.dir)
    if state is None:
        print(f"no cluster planned in {args.dir}")
        return 3
    down = 0
    print(f"PostgreSQL  {state['database_url']}")
    if state["postgres"]:
        print(f"            log {Path(state['postgres']) / 'postgres.log'}")
    for name, piece in state["pieces"].items():
        running = alive(piece.get("pid"), piece["argv"])
        down += not running
        where = f"  {piece['url']}" if "url" in piece else ""
        machine = (
            f"  machine {piece['env']['SESSIONVIEWER_MACHINE']}"
            if "SESSIONVIEWER_MACHINE" in piece["env"]
            else ""
        )
        print(f"{name:<20} {'pid ' + str(piece['pid']) if running else 'stopped':<11}{where}{machine}")
        print(f"{'':<20} log {piece['log']}")
    return 3 if down else 0


def stop(args: argparse.Namespace) -> int:
    state = load(args.dir)
    if state is None:
        print(f"no cluster planned in {args.dir}")
        return 0
    names = args.names or list(state["pieces"])
    for name in names:
        piece = state["pieces"].get(name)
        if piece is None:
            raise SystemExit(f"no piece named {name!r}: {', '.join(state['pieces'])}")
        if alive(piece.get("pid"), piece["argv"]):
            stop_group(piece["pid"], piece["argv"])
        piece["pid"] = None
        save(args.dir, state)
    if not args.names:
        if state["postgres"]:
            stop_postgres(Path(state["postgres"]))
        (args.dir / "cluster.json").unlink()
    print(f"stopped {', '.join(names)}" + ("" if args.names else f" (data kept in {args.dir})"))
    return 0


def machine_tree(value: str) -> tuple[str, str]:
    machine, _, tree = value.partition("=")
    if not machine or not tree:
        raise argparse.ArgumentTypeError(f"{value!r}: give MACHINE=TREE")
    return machine, tree


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dir", type=Path, default=DIR, help="pids, logs, key and own server (default data/cluster)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("start", help="start what is not running")
    up.add_argument("--trees", type=Path, help="the machines' session trees (default DIR/sessions)")
    up.add_argument("--machine", type=machine_tree, action="append", dest="machines", metavar="MACHINE=TREE")
    up.add_argument(
        "--mb", type=float, default=10, help="MB of sessions generate.py writes in a missing tree"
    )
    up.add_argument("--web-port", type=int, action="append", dest="web_ports", metavar="PORT")
    up.add_argument("--host", default="127.0.0.1")
    up.add_argument("--workers", type=int, default=3, help="gunicorn workers per web process")
    up.add_argument(
        "--pg-port", type=int, default=PG_PORT, help="the own server's port, or the next free one"
    )
    up.add_argument(
        "--seconds", type=float, default=120, help="how long the web processes may take to answer"
    )
    commands.add_parser("status", help="what runs, where it logs, the URLs")
    down = commands.add_parser("stop", help="stop the named pieces, or all of it")
    down.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    args.dir = args.dir.resolve()
    if args.command == "start":
        args.machines = dict(args.machines or MACHINES)
        args.web_ports = tuple(args.web_ports or WEB_PORTS)
    return {"start": start, "status": status, "stop": stop}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
