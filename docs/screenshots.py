"""The README's screenshots: `make screenshots` writes docs/screenshots/*.png.

Builds a throwaway index of the repository's demo data in a temporary folder, serves it
with gunicorn on a free port, logs in with Playwright in Debian's chromium, and takes each
page wide (1280 px) and at 390 px. It is not part of the test run, so CI never rewrites
tracked files; run it when the pages change, look at the pictures, commit them.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "screenshots"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
PASSWORD = secrets.token_urlsafe(16)  # a throwaway user in a throwaway database

# name, title words of the demo session, what to put at the top, width, colour scheme
SHOTS = [
    ("transcript-wide", "Add a cart page", "#entry-list", 1280, "light"),
    ("transcript-390", "Add a cart page", "#entry-list", 390, "light"),
    ("transcript-diff-dark", "Add a cart page", ".tool-edit", 1280, "dark"),
    ("compaction-wide", "one cent off", "li.entry.compaction", 1280, "light"),
    ("read-wide", "one cent off", ".tool-read", 1280, "light"),
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
    response = page.request.get(base + "/api/sessions?_size=100")
    return {row["title"]: f"/sessions/{row['id']}/" for row in response.json()["sessions"]}


def shoot(base: str) -> None:
    from playwright.sync_api import sync_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        for name, title, top, width, scheme in SHOTS:
            context = browser.new_context(
                viewport={"width": width, "height": 900 if width > 600 else 844},
                color_scheme=scheme,
                device_scale_factor=1 if width > 600 else 2,
            )
            page = context.new_page()
            page.goto(base + "/accounts/login/")
            page.fill("input[name=username]", "shots")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            path = next(p for t, p in session_paths(base, page).items() if title in t)
            page.goto(base + path)
            page.locator(top).first.evaluate("el => el.scrollIntoView({block: 'start'})")
            page.wait_for_timeout(300)
            page.screenshot(path=OUT / f"{name}.png")
            print(f"wrote {OUT / name}.png")
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
