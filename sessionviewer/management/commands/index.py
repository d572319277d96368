from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError

from sessionviewer.indexer import index_roots, watch_roots
from sessionviewer.roots import configured_roots, parse_root
from sessionviewer.transcripts import prepare_snapshots


class Command(BaseCommand):
    help = "Index the given session roots (PATH or FORMAT=PATH), or the configured ones."

    def add_arguments(self, parser):
        parser.add_argument("roots", nargs="*", help="roots to index; default: SESSIONVIEWER_ROOTS")
        parser.add_argument("--watch", action="store_true", help="keep indexing as files change")

    def handle(self, *args, roots, watch, **options):
        try:
            specs = [parse_root(r) for r in roots] if roots else configured_roots()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        progress = self._progress if self.stderr.isatty() else None
        summary = index_roots(specs, progress)
        if progress:
            self.stderr.write("\r\033[K", ending="")
        for error in summary.errors:
            self.stderr.write(error)
        self.stdout.write(f"Indexed {summary.line()}")
        prepare_snapshots(summary.touched)
        if watch:
            self._watch(specs)

    def _progress(self, done: int, total: int, name: str) -> None:
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        self.stderr.write(f"\r\033[K[{bar}] {done}/{total} {name[-60:]}", ending="")
        self.stderr.flush()

    def _watch(self, specs) -> None:
        self.stdout.write(f"Watching {len(specs)} roots for changes (Ctrl-C to stop)")
        try:
            watch_roots(specs, self._report)
        except FileNotFoundError as error:
            raise CommandError(str(error)) from None

    def _report(self, summary) -> None:
        prepare_snapshots(summary.touched)
        if summary.opened or summary.removed:
            self.stdout.write(f"Indexed {summary.line()}")
            self.stdout.flush()
