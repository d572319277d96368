import gc
import os
from pathlib import Path

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessionviewer.settings")

application = get_wsgi_application()


def _warm_up() -> None:
    """Load now what a worker's first pages would otherwise load while someone waits: every
    template of ours compiled (the cached loader keeps them) and genai-prices' tables. A fresh
    worker's first transcript took 75 ms of CPU against 25 for the next, and the first with a
    turn whose rates the index had not kept 0.2 s more; its other threads waited meanwhile.
    gunicorn loads the application once, before it forks its workers (gunicorn.conf.py), so
    this runs once a server. Nothing here opens a database connection."""
    from django.conf import settings
    from django.db import connections
    from django.template.loader import get_template

    from sessionviewer import prices

    prices.load_library()
    for folder in settings.TEMPLATES[0]["DIRS"]:
        for path in sorted(Path(folder).rglob("*.html")):
            get_template(path.relative_to(folder).as_posix())
    connections.close_all()  # none should be open: a forked worker must not share one


_warm_up()

# What is loaded by now (Django, the apps, their modules) lives as long as the worker: out of
# the collector's way, a full collection walks only what requests made. A page that parses a
# long session's snapshot (1.3 MB of JSON at 2 GB) otherwise paid about 40 ms for every
# other full collection walking Django's own objects (bench/README, Size benchmark).
gc.freeze()
