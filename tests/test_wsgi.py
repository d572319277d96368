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
