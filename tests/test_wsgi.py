"""The WSGI entry point gunicorn loads (make run, the Dockerfile)."""

import os
import subprocess
import sys

from django.conf import settings


def printed_by(code: str) -> list[str]:
    """What code prints, run in a process of its own (as gunicorn's master imports the module)."""
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "SECRET_KEY": "test-wsgi"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_the_wsgi_application_leaves_what_it_loaded_out_of_the_collector_s_way():
    code = "import gc, sessionviewer.wsgi as w; print(callable(w.application), gc.get_freeze_count())"
    is_app, frozen = printed_by(code)
    assert is_app == "True"
    assert int(frozen) > 10_000  # Django and the apps' objects


# What importing the WSGI module (gunicorn's master) has loaded.
WARMED = """
import sys
from pathlib import Path
import sessionviewer.wsgi
from django.conf import settings
from django.db import connections
from django.template import engines
(cached,) = engines["django"].engine.template_loaders[0].loaders  # the partials loader wraps it
ours = {p.relative_to(settings.BASE_DIR / "templates").as_posix() for p in (settings.BASE_DIR / "templates").rglob("*.html")}
print(len(ours), len(ours - set(cached.get_template_cache)), "genai_prices.data_snapshot" in sys.modules,
      sum(c.connection is not None for c in connections.all()))
"""


def test_the_wsgi_module_compiles_every_template_and_loads_the_price_tables_without_a_connection():
    """gunicorn loads it once before forking (preload_app): a worker's first pages find their
    templates compiled and genai-prices' tables loaded, and no worker inherits a connection."""
    templates, not_compiled, prices_loaded, connections_open = printed_by(WARMED)
    assert int(templates) > 50
    assert not_compiled == "0"
    assert prices_loaded == "True"
    assert connections_open == "0"


def test_make_run_and_the_dockerfile_serve_with_threaded_workers():
    # A sync worker's heartbeat waits for its request to end: a long export that streams
    # would be killed at --timeout. gthread workers beat while their threads answer.
    for name in ("Makefile", "Dockerfile"):
        text = (settings.BASE_DIR / name).read_text()
        serve = next(line for line in text.splitlines() if "gunicorn sessionviewer.wsgi" in line)
        assert "--worker-class gthread" in serve, name
