import logging
import time

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError, connection

from sessionviewer.index import index_roots, index_when_free, watch_roots
from sessionviewer.index.busy import BUSY_STATUS, database_busy
from sessionviewer.index.idle import IdleWork
from sessionviewer.index.locks import RootTaken, roots_held
from sessionviewer.models import KeyCheck
from sessionviewer.roots import configured_roots, container_id_warning, memory_roots, parse_root
from sessionviewer.transcripts.store import prepare_snapshots, snapshots_to_prepare, unprepared_sessions

log = logging.getLogger(__name__)


class Command(BaseCommand):
    # The checks look at URLs, templates and the admin, which the indexer never serves: they
    # imported every view, a tenth of an index that has nothing to read. `runserver`,
    # `check` and `migrate` still run them.
    requires_system_checks = []
    help = (
        "Index the given session roots (PATH or FORMAT=PATH), or the configured ones, "
        "and snapshot the memory roots' memory files."
    )

    def add_arguments(self, parser):
        parser.add_argument("roots", nargs="*", help="roots to index; default: SESSIONVIEWER_ROOTS")
        parser.add_argument("--watch", action="store_true", help="keep indexing as files change")

    def handle(self, *args, roots, watch, **options):
        try:
            specs = [parse_root(r) for r in roots] if roots else configured_roots()
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from None
        if warning := container_id_warning(settings.SESSIONVIEWER_MACHINE, connection.vendor):
            self.stderr.write(warning)
        memory = memory_roots()
        machine = settings.SESSIONVIEWER_MACHINE
        try:
            # On a shared PostgreSQL: one indexer per machine and root, for the whole pass or watch.
            with roots_held(machine, [*(str(spec.path) for spec in specs), *(str(root) for root in memory)]):
                self._index(specs, memory, watch, options["verbosity"])
        except RootTaken as error:
            raise CommandError(str(error)) from None

    def _index(self, specs, memory, watch: bool, verbosity: int) -> None:
        started = time.perf_counter()
        progress = self._progress if self.stderr.isatty() else None
        try:
            if mismatch := KeyCheck.mismatch():  # before anything is fingerprinted with this key
                raise CommandError(mismatch)
            # The watcher waits for a busy database; a single pass says so and stops.
            if watch:
                summary = index_when_free(specs, progress, memory)
            else:  # the long sessions' threads are prepared while the writer waits for its reader
                summary = index_roots(specs, progress, memory, idle=IdleWork(snapshots_to_prepare))
            if progress:
                self.stderr.write("\r\033[K", ending="")
            self._summarise(summary, verbosity)
            # Also the long sessions this pass did not touch whose thread is not prepared (an
            # upgrade changed the snapshots' layout; a pass was cut off before preparing them).
            with summary.phases.timing("snapshots"):
                prepare_snapshots(sorted({*summary.touched, *unprepared_sessions()}))
            if verbosity >= 2:  # one line, for bench/ to read: what start-up leaves
                command = time.perf_counter() - started
                self.stdout.write(f"Phases: {summary.phases.line()}; command {command:.3f} s")
            if summary.refused and not watch:
                raise CommandError(
                    f"the database refused {summary.refused} of this pass's writes (named above): "
                    "the next pass tries them again",
                    returncode=1,
                )
        except OperationalError as error:
            if not database_busy(error):
                raise
            if progress:
                self.stderr.write("\r\033[K", ending="")
            message = f"the database is busy ({error}): nothing is lost, the next pass indexes the rest"
            if not watch:
                raise CommandError(message, returncode=BUSY_STATUS) from None
            log.warning(message)  # a page prepares the thread it shows itself
        if watch:
            self._watch(specs, memory, verbosity)

    def _summarise(self, summary, verbosity: int) -> None:
        """The bad lines found, the files and roots that could not be indexed, then the counts."""
        if verbosity:
            for bad_line in summary.bad_lines:
                self.stderr.write(f"bad line {bad_line}")
            if (more := summary.problems - len(summary.bad_lines)) > 0:
                self.stderr.write(f"... and {more} more bad lines: each session's page lists its own")
        for error in summary.errors:
            self.stderr.write(f"not indexed: {error}")
        self.stdout.write(f"Indexed {summary.line()}")

    def _progress(self, done: int, total: int, name: str) -> None:
        width = 30
        filled = width * done // max(total, 1)
        bar = "#" * filled + "-" * (width - filled)
        self.stderr.write(f"\r\033[K[{bar}] {done}/{total} {name[-60:]}", ending="")
        self.stderr.flush()

    def _watch(self, specs, memory, verbosity: int) -> None:
        self.stdout.write(f"Watching {len(specs)} roots for changes (Ctrl-C to stop)")

        def report(summary) -> None:
            if summary.opened or summary.removed or summary.errors:
                self._summarise(summary, verbosity)
                self.stdout.flush()
            try:
                prepare_snapshots(summary.touched)
            except Exception as error:  # noqa: BLE001 - a page builds its thread itself when it has none
                log.error("preparing the threads of a pass failed", exc_info=error)

        try:
            watch_roots(specs, report, memory=memory)
        except FileNotFoundError as error:
            raise CommandError(str(error)) from None
