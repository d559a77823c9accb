"""How the TUI ends on SIGHUP, SIGTERM and SIGINT, whatever it is doing.

The signals are taken by plain handlers that only write the signal's number into a pipe; a thread
of this module reads it and hands it to the app's event loop (which interrupts a running turn,
records it, then exits with 128 + the signal). The handlers never wait for the loop: a loop that
is busy or blocked cannot make a signal go unanswered.

For the `reprise` process itself (`last_resort`), the same thread then makes sure the process ends:
once the app has recorded the signal (a running turn stopped and written first), the process has
GRACE seconds to end on its own, waiting for the threads still reading a session, counting a meter
or indexing a search. Past it, the thread restores the terminal as it was before the app, prints
the signal's line when there is a terminal to read it, and ends the process with the signal's
status (`os._exit`). Nothing is lost that way: every write Reprise makes is atomic (a temp file
renamed into place), as for a SIGKILL, and the locks it holds are released by the process's end."""

from __future__ import annotations

import contextlib
import os
import signal
import termios
import threading
from collections.abc import Callable
from typing import Any

from reprise.core.processes import (
    INTERRUPT_GRACE,
    KILL_WAIT,
    LINGER_GRACE,
    SIGNAL_EXIT_STATUS,
    TERM_GRACE,
    TurnSignals,
)

GRACE = 1.0   # seconds from the app's exit to the process's end before the last resort
# the longest a running turn takes to stop its processes and be recorded, with room to spare
TURN_STOP_BUDGET = INTERRUPT_GRACE + TERM_GRACE + KILL_WAIT + LINGER_GRACE + 5.0
# what Textual undoes when it leaves: keyboard protocol, alternate screen, hidden cursor, focus
# reports, mouse reports, bracketed paste, line wrap off
RESTORE_SEQUENCE = (b"\x1b[<u\x1b[?1049l\x1b[?25h\x1b[?1004l\x1b[?1000l\x1b[?1003l\x1b[?1015l\x1b[?1006l"
                    b"\x1b[?2004l\x1b[?7h")
_STOP = 0   # the byte that ends the thread: no signal has the number 0


class Ending:
    """The TUI's signal handling, one per app run: `install` from the main thread once the loop
    runs, `uninstall` when the app leaves. `last_resort` only for the `reprise` process (never in a
    test's own process): see the module's docstring."""

    SIGNALS = TurnSignals.SIGNALS

    def __init__(self, *, last_resort: bool = False, grace: float = GRACE):
        self.last_resort = last_resort
        self.grace = grace
        self.received: int | None = None
        self.recorded = threading.Event()   # the app has recorded the signal and asked to exit
        self.said = threading.Event()       # the command line has printed the signal's line
        self._terminal: tuple[str, list[Any]] | None = None
        self._previous: dict[int, Any] = {}
        self._pipe: tuple[int, int] | None = None

    def save_terminal(self) -> None:
        """Note the terminal's name and modes before the app changes them (for the last resort)."""
        with contextlib.suppress(OSError, termios.error):
            self._terminal = (os.ttyname(0), termios.tcgetattr(0))

    def install(self, deliver: Callable[[int], None], turn_running: Callable[[], bool],
                stop_turn: Callable[[int], str | None]) -> None:
        """Take the signals. `deliver(signum)` is called from this module's thread and must only
        hand the signal to the loop. For the last resort (the loop never having recorded the
        signal), `turn_running()` says whether to wait for a turn to stop and `stop_turn(signum)`
        ends a running turn and records the signal itself, returning the line to print."""
        if threading.current_thread() is not threading.main_thread():
            return   # only the main thread takes signals: the app runs without them
        read, write = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(write, False)
        self._pipe = (read, write)
        threading.Thread(target=self._watch, args=(read, deliver, turn_running, stop_turn), daemon=True,
                         name="reprise-ending").start()
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._arrived)

    def uninstall(self) -> None:
        """Give the signals back to their previous handlers. Without a signal, the thread ends;
        after one, it stays on guard until the process ends."""
        for sig, previous in self._previous.items():
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(sig, previous)
        self._previous.clear()
        pipe, self._pipe = self._pipe, None
        if pipe is not None:
            with contextlib.suppress(OSError):
                os.write(pipe[1], bytes((_STOP,)))
            os.close(pipe[1])

    def _arrived(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum
        pipe = self._pipe
        if pipe is not None:
            with contextlib.suppress(OSError):   # a full pipe: the thread has a signal to read already
                os.write(pipe[1], bytes((signum,)))

    def _watch(self, read: int, deliver: Callable[[int], None], turn_running: Callable[[], bool],
               stop_turn: Callable[[int], str | None]) -> None:
        try:
            data = os.read(read, 1)
        finally:
            os.close(read)
        if not data or data[0] == _STOP:
            return
        signum = data[0]
        deliver(signum)
        if not self.last_resort:
            return
        line: str | None = None
        if self.recorded.wait(TURN_STOP_BUDGET if turn_running() else self.grace):
            threading.Event().wait(self.grace)   # the process's end ends this wait
        else:  # the loop never took the signal: end the turn and record it from here
            with contextlib.suppress(Exception):  # the last resort goes on whatever this says
                line = stop_turn(signum)
        self._end(signum, line)

    def _end(self, signum: int, line: str | None) -> None:
        """The last resort: the terminal as it was, the line for the reader, then the process's end."""
        status = SIGNAL_EXIT_STATUS.get(signal.Signals(signum), 128 + signum)
        terminal = self._terminal
        if terminal is not None:
            with contextlib.suppress(OSError, termios.error):
                fd = os.open(terminal[0], os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
                try:
                    with contextlib.suppress(OSError, termios.error):
                        termios.tcsetattr(fd, termios.TCSANOW, terminal[1])
                    os.write(fd, RESTORE_SEQUENCE)
                finally:
                    os.close(fd)
        name = signal.Signals(signum).name
        if not self.said.is_set() and not (signum == signal.SIGHUP and os.isatty(2)):  # as the command line does
            with contextlib.suppress(OSError, ValueError):
                os.write(2, f"{line or f'reprise: {name}: Reprise was closed.'}\n".encode())
        os._exit(status)
