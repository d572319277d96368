#!/usr/bin/env python
"""Django's command-line utility for Session Viewer."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "sessionviewer.settings")
    from sessionviewer import collector

    collector.pause_until_ready()  # while Django sets up, then frozen_for_exit (collector.py)
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    finally:
        collector.frozen_for_exit()
