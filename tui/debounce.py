"""One pause in typing, one call: what the composer's meter, the trim preview and the search use so
that a burst of keystrokes starts one service call, not one per key.

A `Debouncer` belongs to a widget. `poke()` (re)starts its timer; when the timer fires, the call
runs once with the newest value. A call already running is not waited for: each run gets a
generation number, and `is_current(generation)` tells a worker whether a newer poke has superseded
it, so a stale result is dropped instead of shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from textual.timer import Timer
from textual.widget import Widget

T = TypeVar("T")


class Debouncer(Generic[T]):
    def __init__(self, owner: Widget, delay: float, run: Callable[[T, int], None]) -> None:
        self._owner = owner
        self._delay = delay
        self._run = run
        self._timer: Timer | None = None
        self._value: T | None = None
        self._generation = 0
        self.runs = 0  # how many calls were started (the tests count them)

    def poke(self, value: T) -> None:
        """A new value: restart the pause. Any result of an older value is now stale."""
        self._value = value
        self._generation += 1
        if self._timer is not None:
            self._timer.stop()
        self._timer = self._owner.set_timer(self._delay, self._fire)

    def now(self, value: T) -> None:
        """Run at once (Enter, or the first show): no pause, but older results still go stale."""
        self.cancel()
        self._value = value
        self._generation += 1
        self._start()

    def cancel(self) -> None:
        """Nothing pending runs, and what is running is stale."""
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self._generation += 1

    def is_current(self, generation: int) -> bool:
        return generation == self._generation

    @property
    def pending(self) -> bool:
        return self._timer is not None

    def _fire(self) -> None:
        self._timer = None
        self._start()

    def _start(self) -> None:
        self.runs += 1
        self._run(self._value, self._generation)  # type: ignore[arg-type]  # set by poke/now first
