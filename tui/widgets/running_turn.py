"""The running turn's own line: how long it has run and how to stop it, redrawn each second. It
is one short line so that it is never cut at 80 columns."""

from __future__ import annotations

import time

from rich.text import Text
from textual.reactive import var
from textual.timer import Timer
from textual.widgets import Static


def running_text(seconds: float, stopping: bool) -> Text:
    if stopping:
        return Text(f"stopping the turn… {seconds:.0f} s", style="bold")
    return Text.assemble(("running ", "bold"), f"{seconds:.0f} s", " · ", ("ctrl+c", "bold"), " stops")


class RunningTurnLine(Static):
    DEFAULT_CSS = """
    RunningTurnLine {
        height: 1;
        padding: 0 1;
        background: $warning 30%;
        display: none;
    }
    RunningTurnLine.-running {
        display: block;
    }
    """

    started: var[float | None] = var(None, init=False)   # time.monotonic() when the turn began
    stopping: var[bool] = var(False, init=False)
    _timer: Timer | None = None

    def watch_started(self, started: float | None) -> None:
        self.set_class(started is not None, "-running")
        self.stopping = False
        if started is None:
            if self._timer is not None:
                self._timer.pause()
        elif self._timer is None:
            self._timer = self.set_interval(1.0, self._tick)
        else:
            self._timer.resume()
        self._tick()

    def watch_stopping(self) -> None:
        self._tick()

    def _tick(self) -> None:
        if self.started is not None:
            self.update(running_text(time.monotonic() - self.started, self.stopping))
