"""Where a pass's time goes, phase by phase: what `manage.py index -v 2` prints and bench/ reads.

A phase timed inside another is left out of the outer one, so the phases add up to the
time they cover: "write" is the writing alone, without the reads it waits for or the
prices it computes. Entering a phase costs two clock reads and a few attribute lookups
(about a microsecond): a pass enters three a session.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator

_END = object()


class Phases(dict[str, float]):
    """Seconds by phase name, in the order the phases were first entered."""

    def __init__(self) -> None:
        super().__init__()
        self._inner: list[float] = []  # per open phase: the time its inner phases took

    def timing(self, name: str) -> _Phase:
        return _Phase(self, name)

    def add(self, name: str, spent: float, inner: float = 0.0) -> None:
        self[name] = self.get(name, 0.0) + spent - inner
        if self._inner:
            self._inner[-1] += spent

    def timed(self, name: str, items: Iterable) -> Iterator:
        """items, with the time taken to produce each one counted to name (no phase inside it)."""
        iterator = iter(items)
        clock = time.perf_counter
        while True:
            started = clock()
            item = next(iterator, _END)
            self.add(name, clock() - started)
            if item is _END:
                return
            yield item

    def line(self) -> str:
        return ", ".join(f"{name} {seconds:.3f} s" for name, seconds in self.items())


class _Phase:
    __slots__ = ("name", "phases", "started")

    def __init__(self, phases: Phases, name: str) -> None:
        self.phases, self.name = phases, name

    def __enter__(self) -> None:
        self.phases.setdefault(self.name, 0.0)  # an outer phase is listed before its inner ones
        self.phases._inner.append(0.0)
        self.started = time.perf_counter()

    def __exit__(self, *_exc) -> None:
        spent = time.perf_counter() - self.started
        self.phases.add(self.name, spent, self.phases._inner.pop())
