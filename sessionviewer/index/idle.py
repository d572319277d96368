"""Work the writer does while it waits for the reading worker, rather than after the pass.

On a cold index the reading worker is the slower half: the writer waited for it for a
fifth of the pass (bench/README.md), then prepared the long sessions' threads alone
once every file was in. Work queued here runs in those waits instead, one piece at a
time, and stops as soon as the next batch is ready. What it has not done when the pass
ends is done after it, as before: each piece must be safe to run again (a thread
already prepared is seen to be current and left alone).

    idle = IdleWork(on_written)   # on_written(session) -> a piece of work, or None
    index_roots(specs, idle=idle)

A piece runs inside the writer's transaction, in a savepoint of its own: one that
fails is rolled back alone, logged, and left for after the pass.

On PostgreSQL the writer hardly ever waits for its reader: it waits for the server, on a
socket, which leaves the interpreter free. There the pieces run beside the writer instead
(IdleWork.beside): in a thread of their own, on a connection of their own, each in its own
transaction, and a session's piece only once the transaction that wrote the session has
committed, so that the thread reads what the writer wrote.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from django.db import connection, transaction

from sessionviewer.models import Session

log = logging.getLogger(__name__)

Piece = Callable[[], object]


class IdleWork:
    def __init__(self, on_written: Callable[[Session], Piece | None]):
        self.on_written = on_written
        self.queued: deque[Piece] = deque()
        self.done = 0  # pieces run to the end
        self._beside: _Beside | None = None

    def written(self, session: Session) -> None:
        """A file's session and rows are written: queue what its writing calls for (beside
        the writer: once its transaction has committed; none if it rolls back)."""
        if (piece := self.on_written(session)) is None:
            return
        if self._beside is not None:
            transaction.on_commit(lambda: (self.later(piece), self.committed()))
        else:
            self.later(piece)

    def later(self, piece: Piece) -> None:
        """Queue a piece of work the pass does either while it waits or after it."""
        self.queued.append(piece)
        if self._beside is not None and self._beside.thread is not None:
            self._beside.wake()

    def committed(self) -> None:
        """A group of the pass is committed: beside the writer, the thread starts on what
        waits. Not before: until then the writer surveys the roots and plans their files,
        in Python, and the thread would only slow it down (the memory snapshots did)."""
        if self._beside is not None and self.queued:
            self._beside.wake()

    def run_while(self, waiting: Callable[[], bool]) -> None:
        """Run queued pieces, one at a time, for as long as waiting() says the writer would wait."""
        if self._beside is not None:  # the thread runs them
            return
        while self.queued and waiting():
            self._run(self.queued.popleft())

    @contextmanager
    def beside(self) -> Iterator[None]:
        """While the block runs, queued pieces run in a thread beside it, as they come, from the
        pass's first commit (committed). When it ends, the thread finishes the piece it is
        running and stops; the others stay queued, for after the pass."""
        beside = _Beside(self)
        self._beside = beside
        try:
            yield
        finally:
            self._beside = None
            beside.stop()

    def _run(self, piece: Piece) -> None:
        try:
            with transaction.atomic():
                piece()
        except Exception as error:  # noqa: BLE001 - the pass goes on; the piece is done after it
            log.warning("work done while waiting failed (done after the pass instead): %r", error)
        else:
            self.done += 1


class _Beside:
    """The thread IdleWork.beside runs the pieces in, started at the pass's first commit."""

    def __init__(self, idle: IdleWork):
        self.idle = idle
        self.changed = threading.Condition()
        self.stopping = False
        self.thread: threading.Thread | None = None

    def wake(self) -> None:
        with self.changed:
            if self.thread is None:
                self.thread = threading.Thread(target=self._work, name="sessionviewer-beside", daemon=True)
                self.thread.start()
            self.changed.notify()

    def stop(self) -> None:
        with self.changed:
            self.stopping = True
            self.changed.notify()
        if self.thread is not None:
            self.thread.join()

    def _work(self) -> None:
        try:
            while True:
                with self.changed:
                    self.changed.wait_for(lambda: self.stopping or self.idle.queued)
                    if self.stopping:
                        return
                    piece = self.idle.queued.popleft()
                self.idle._run(piece)
        finally:
            connection.close()  # this thread's own
