"""No cyclic collection while a listing builds its rows.

A listing makes tens of thousands of small objects that all live on (the rows, their tuples, their
limits); the collector, run by the allocations, would walk all of them again and again before the
listing ends, for nothing: the rows hold no cycles, and rows a caller drops are freed by reference
counting at once. Nested pauses keep the collector off until the outermost one ends; a stretch
inside one that makes garbage of its own (metering sessions) runs with collections `resumed`.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


class NoGcPause:
    def __enter__(self) -> NoGcPause:
        self.enabled = gc.isenabled()
        gc.disable()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            gc.enable()

    @contextlib.contextmanager
    def resumed(self) -> Iterator[None]:
        """Collections as they were before the pause, for this stretch."""
        if self.enabled:
            gc.enable()
        try:
            yield
        finally:
            gc.disable()


def no_gc_pauses() -> NoGcPause:
    return NoGcPause()
