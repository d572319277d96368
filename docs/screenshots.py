"""The README's screenshots: `make screenshots` writes docs/screenshots/*.png.

Builds a throwaway index of the repository's demo data in a temporary folder, serves it
with gunicorn on a free port, logs in with Playwright in Debian's chromium, and takes each
picture in SHOTS, wide (1280 px) or at 390 px, light or dark. It is not part of the test run,
so CI never rewrites tracked files; run it when the pages change, look at the pictures, commit
them.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PASSWORD = secrets.token_urlsafe(16)  # a throwaway user in a throwaway database

# The demo files shown, by the start of their file name.
CART = "81cc43d5"  # Claude Code: "Add a cart page", a Read and a failing test run
CENT = "dac5371b"  # Claude Code: "one cent off", a subagent, a word diff, /compact then its banner
DANA = "a999f2d9"  # OpenClaw: Dana on Telegram, the gateway's sender chips, a compaction, a reply


@dataclass
class Shot:
    name: str
    file: str
    top: str | None = None  # what to scroll to; None: the page as it opens
    block: str = "start"  # where it lands in the window (scrollIntoView)
    width: int = 1280
    scheme: str = "light"


SHOTS = [
    Shot("transcript-wide", CENT),  # the first screen: header, "Jump to", the conversation
    Shot("transcript-390", CENT, width=390),  # the phone's first screen: the conversation starts on it
    Shot("transcript-390-dark", CENT, width=390, scheme="dark"),
    Shot("compaction-wide", CENT, "li.entry.compaction", block="center"),  # /compact, then its banner
    Shot("read-wide", CART, "li.entry:has(.tool-read)"),
    Shot("transcript-diff-dark", CENT, "li.entry:has(.tool-edit)", scheme="dark"),
    Shot("openclaw-wide", DANA, "li.entry.compaction"),  # a sender chip, a model switch, a reply
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def manage(env: dict, *args: str) -> None:
    subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL
    )


def serve(folder: Path) -> tuple[subprocess.Popen, str, dict]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "sessionviewer.settings",
        "SECRET_KEY": "screenshots-only",
        "SESSIONVIEWER_DATA": str(folder),
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
        "SESSIONVIEWER_DEMO": "1",
        "HOME": str(folder),  # the default locations (~/.claude/projects, ...) are empty here
    }
    env.pop("SESSIONVIEWER_ROOTS", None)  # the demo roots under the data folder
    manage(env, "migrate", "--noinput")
    manage(env, "demo")  # the demo data, its memory with a history
    manage(env, "collectstatic", "--noinput", "--verbosity", "0")
    manage(env, "index")
    manage(env, "createuser", "shots", "--role", "viewer", "--password", PASSWORD)
    port = free_port()
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "gunicorn"), "sessionviewer.wsgi", "--bind", f"127.0.0.1:{port}"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            urllib.request.urlopen(base + "/accounts/login/", timeout=1)  # noqa: S310 - our own http URL
            break
        except OSError:
            time.sleep(0.1)
    return server, base, env


def session_paths(base: str, page) -> dict[str, str]:
    """Each session's page by its file's name."""
    response = page.request.get(base + "/api/sessions?_size=100")
    return {Path(row["path"]).name: f"/sessions/{row['id']}/" for row in response.json()["sessions"]}


def optimise(path: Path) -> None:
    """Lossless, about a fifth smaller: optipng if it is installed (apt-get install optipng)."""
    if shutil.which("optipng"):
        subprocess.run(["optipng", "-quiet", "-o2", "-strip", "all", str(path)], check=True)


def shoot(base: str) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        for shot in SHOTS:
            phone = shot.width < 600
            # At 1x: the phone's picture is the size a reader sees it, and half the bytes.
            context = browser.new_context(
                viewport={"width": shot.width, "height": 844 if phone else 900},
                color_scheme=shot.scheme,
            )
            page = context.new_page()
            page.set_default_timeout(120_000)  # a busy machine answers slowly
            page.goto(base + "/accounts/login/")
            page.fill("input[name=username]", "shots")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            path = next(p for name, p in session_paths(base, page).items() if name.startswith(shot.file))
            page.goto(base + path)
            if shot.top:
                page.locator(shot.top).first.evaluate("(el, block) => el.scrollIntoView({block})", shot.block)
            page.wait_for_timeout(300)
            out = OUT / f"{shot.name}.png"
            page.screenshot(path=out)
            optimise(out)
            print(f"wrote {out} ({out.stat().st_size // 1024} KB)")
            context.close()
        browser.close()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="sessionviewer-shots-") as folder:
        server, base, _ = serve(Path(folder))
        try:
            shoot(base)
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
