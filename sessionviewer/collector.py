"""Python's cycle collector around a command's start (manage.py). No Django: manage.py
imports it first.

Django's set-up imports every app and makes its objects, none of them garbage, and the
collector walked them again and again as they grew: about 150 collections in a `manage.py`
command's first 0.3 s. manage.py turns the collector off until the apps are ready
(SessionViewerConfig.ready), then freezes what the set-up made, out of every later
collection, and turns it back on. `manage.py index` with nothing to read took 0.84x the
time (bench/README.md). Only a process that manage.py started is touched: a web worker
(wsgi.py) or a test run keeps its collector as it is.
"""

from __future__ import annotations

import gc

_paused = False


def pause_until_ready() -> None:
    """Turn the collector off until resume_when_ready(); nothing if it is off already."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume_when_ready() -> None:
    """The apps are ready: what they made stays out of later collections, and the collector
    runs again. Nothing unless pause_until_ready() turned it off."""
    global _paused
    if _paused:
        _paused = False
        gc.freeze()
        gc.enable()
