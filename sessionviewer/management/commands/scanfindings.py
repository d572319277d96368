import time

from django.core.management.base import BaseCommand

from sessionviewer.models import Session
from sessionviewer.transcripts.findings import scan_again


class Command(BaseCommand):
    help = "Scan every indexed session's stored entries for possible secrets, replacing its findings."

    def add_arguments(self, parser):
        parser.add_argument("--session", type=int, action="append", default=[], help="only this session id")

    def handle(self, *args, session, **options):
        sessions = Session.objects.order_by("id")
        if session:
            sessions = sessions.filter(id__in=session)
        ids = list(sessions.values_list("id", flat=True))
        progress = self.stderr.isatty()
        started, found = time.perf_counter(), 0
        for done, session_id in enumerate(ids, start=1):
            one = Session.objects.filter(id=session_id).first()
            if one is None:  # deleted since the list was read
                continue
            found += scan_again(one)
            if progress:
                bar = "#" * (30 * done // len(ids))
                self.stderr.write(f"\r\033[K[{bar:-<30}] {done}/{len(ids)} sessions", ending="")
                self.stderr.flush()
        if progress:
            self.stderr.write("")
        seconds = time.perf_counter() - started
        self.stdout.write(f"Scanned {len(ids)} sessions in {seconds:.1f} s: {found} possible secrets")
