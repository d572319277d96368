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
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable

from django.db import transaction

from sessionviewer.models import Session

log = logging.getLogger(__name__)

Piece = Callable[[], object]


class IdleWork:
    def __init__(self, on_written: Callable[[Session], Piece | None]):
        self.on_written = on_written
        self.queued: deque[Piece] = deque()
        self.done = 0  # pieces run to the end

    def written(self, session: Session) -> None:
        """A file's session and rows are written: queue what its writing calls for."""
        if (piece := self.on_written(session)) is not None:
            self.later(piece)

    def later(self, piece: Piece) -> None:
        """Queue a piece of work the pass does either while it waits or after it."""
        self.queued.append(piece)

    def run_while(self, waiting: Callable[[], bool]) -> None:
        """Run queued pieces, one at a time, for as long as waiting() says the writer would wait."""
        while self.queued and waiting():
            piece = self.queued.popleft()
            try:
                with transaction.atomic():
                    piece()
            except Exception as error:  # noqa: BLE001 - the pass goes on; the piece is done after it
                log.warning("work done while waiting failed (done after the pass instead): %r", error)
            else:
                self.done += 1
