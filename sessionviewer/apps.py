"""The app's configuration: its ready() ends manage.py's start-up (collector.py)."""

from django.apps import AppConfig

from sessionviewer import collector


class SessionViewerConfig(AppConfig):
    name = "sessionviewer"

    def ready(self) -> None:
        collector.resume_when_ready()  # manage.py's start-up is over (collector.py)
