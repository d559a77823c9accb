"""Textual's terminal driver, made safe for a terminal that goes away under the app.

A closed terminal (a window closed, `tmux kill-session`, an ssh link dropped) hangs the pty up: the
kernel sends SIGHUP and then SIGCONT, reads return end of file and writes fail with EIO. Textual's
driver met that with three faults that together kept `reprise` running for good, blocked on a
futex with SIGHUP and SIGTERM unanswered:

- SIGCONT restarted application mode though nothing had stopped the app, with a new output thread;
- that output thread died on the first EIO, and the next writes filled its queue of 30 and blocked
  the event loop's thread, so no signal handler of the loop ever ran again;
- the input thread read end of file in a loop, or died on EIO and ended the app as a crash (1).

Here writes to a terminal that is gone are dropped (the output thread never dies, so a write never
waits for it), SIGCONT restarts application mode only after a stop (SIGTSTP), and input that ends
(end of file or an error on the terminal) is taken for what it is: the terminal hung up, SIGHUP."""

from __future__ import annotations

import os
import selectors
import signal
from codecs import getincrementaldecoder
from typing import IO, Any, cast

from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver


class _TerminalOutput:
    """The driver's output file: once a write or flush fails (EIO from a hung-up terminal), every
    later one is dropped, so the thread writing it keeps taking the queued writes off."""

    def __init__(self, file: IO[str]):
        self._file = file
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._file.write(text)
            except (OSError, ValueError):
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._file.flush()
            except (OSError, ValueError):
                self.gone = True

    def fileno(self) -> int:
        return self._file.fileno()

    def isatty(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(self._file, name)


class TerminalDriver(LinuxDriver):
    """LinuxDriver for a terminal that may hang up: see the module's docstring."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._output = _TerminalOutput(cast("IO[str]", self._file))
        self._file = self._output  # type: ignore[assignment]   # what the output thread writes to
        self._stopped = False   # SIGTSTP seen and not yet continued

    def _sigtstp_application(self, *args: Any) -> None:
        self._stopped = True
        super()._sigtstp_application(*args)

    def _sigcont_application(self, *args: Any) -> None:
        """Back from a stop only: the SIGCONT a hung-up terminal sends after its SIGHUP restarts nothing."""
        if self._stopped:
            self._stopped = False
            super()._sigcont_application(*args)

    def run_input_thread(self) -> None:
        """Textual's input loop, except at its end: end of file or an error on the terminal (it hung
        up) raises SIGHUP in this process, as the kernel does for a controlling terminal, instead of
        spinning on end of file or ending the app as a crash."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        parser = XTermParser(self._debug)
        decode = getincrementaldecoder("utf-8")().decode
        hung_up = False
        try:
            while not self.exit_event.is_set() and not hung_up:
                ready = selector.select(0.1)
                for _key, mask in ready:
                    if not mask & selectors.EVENT_READ:
                        continue
                    try:
                        data = os.read(self.fileno, 4096)
                    except OSError:
                        data = b""
                    if not data:
                        hung_up = True
                        break
                    for event in parser.feed(decode(data)):
                        self.process_message(event)
                for event in parser.tick():
                    self.process_message(event)
        finally:
            selector.close()
        if hung_up and self.input_tty:
            self._output.gone = True
            os.kill(os.getpid(), signal.SIGHUP)
