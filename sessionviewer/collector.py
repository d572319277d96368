"""Python's cycle collector around a manage.py command: its start and its end. No Django:
manage.py imports it first.

Django's set-up imports every app and makes its objects, none of them garbage, and the
collector walked them again and again as they grew: about 150 collections in a `manage.py`
command's first 0.3 s. manage.py turns the collector off until the apps are ready
(SessionViewerConfig.ready), then freezes what the set-up made, out of every later
collection, and turns it back on. `manage.py index` with nothing to read took 0.84x the
time (bench/README.md). Only a process that manage.py started is touched: a web worker
(wsgi.py) or a test run keeps its collector as it is.

At exit the interpreter collects once more, walking every object Django and a pass left:
0.13-0.19 s of a cold index, a fifth of `manage.py index` with nothing to read. manage.py
freezes them first (frozen_for_exit): they are still freed and closed as the modules go;
only the walk for cycles is left out.
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


def frozen_for_exit() -> None:
    """The command is over: what is alive stays out of the interpreter's last collection."""
    gc.freeze()
