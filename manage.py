#!/usr/bin/env python
"""Django's command-line utility for Session Viewer."""

import gc
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessionviewer.settings")
    from sessionviewer import collector

    collector.pause_until_ready()  # while Django sets up (sessionviewer/collector.py)
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    finally:
        # What is alive at the end goes out of the collector's way: at exit the interpreter
        # collects once more, walking every object Django and a pass left (0.1 s and more, a
        # fifth of `manage.py index` with nothing to read; bench/README.md). Objects are still
        # freed and closed as the modules go; only the walk for cycles is left out.
        gc.freeze()
