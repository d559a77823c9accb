"""How far a long read is, on the command line: one line on a terminal's stderr, rewritten in
place ("reading 3,200/10,000 sessions…"), at most ten times a second, cleared when it ends.
Never on a pipe or a file, never with `--json`: the caller decides, this only draws."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from reprise.core.progress import Progress

_CLEAR_TO_END = "\x1b[K"


class ProgressLine:
    def __init__(self, stream: TextIO, *, clock: Callable[[], float] = time.monotonic, interval: float = 0.1):
        self.stream = stream
        self.clock = clock
        self.interval = interval
        self._shown = False
        self._last = 0.0

    def __call__(self, progress: Progress) -> None:
        if progress.finished:
            self.clear()
            return
        now = self.clock()
        if self._shown and now - self._last < self.interval:
            return
        self.stream.write(f"\r{progress.doing} {progress.done:,}/{progress.total:,} sessions…{_CLEAR_TO_END}")
        self.stream.flush()
        self._shown, self._last = True, now

    def clear(self) -> None:
        """Take the line away (at the end, or when the command stops early)."""
        if self._shown:
            self.stream.write("\r" + _CLEAR_TO_END)
            self.stream.flush()
            self._shown = False
