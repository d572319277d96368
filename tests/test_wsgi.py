"""The WSGI entry point gunicorn loads (make run, the Dockerfile)."""

import os
import subprocess
import sys

from django.conf import settings


def test_the_wsgi_application_leaves_what_it_loaded_out_of_the_collector_s_way():
    code = "import gc, sessionviewer.wsgi as w; print(callable(w.application), gc.get_freeze_count())"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "SECRET_KEY": "test-wsgi"}
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    is_app, frozen = done.stdout.split()
    assert is_app == "True"
    assert int(frozen) > 10_000  # Django and the apps' objects


def test_make_run_and_the_dockerfile_serve_with_threaded_workers():
    # A sync worker's heartbeat waits for its request to end: a long export that streams
    # would be killed at --timeout. gthread workers beat while their threads answer.
    for name in ("Makefile", "Dockerfile"):
        text = (settings.BASE_DIR / name).read_text()
        serve = next(line for line in text.splitlines() if "gunicorn sessionviewer.wsgi" in line)
        assert "--worker-class gthread" in serve, name
