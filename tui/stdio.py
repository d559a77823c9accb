"""The command line's standard streams: a reader that went away (`reprise list | head -1`)
ends the command quietly, and the TUI reads keys from and draws on the controlling terminal
whatever stdin, stdout and stderr were redirected to, as fzf does."""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from reprise.core.errors import UsageError

# 128 + SIGPIPE: the status a shell reports for a Unix tool stopped by a closed pipe (`cat big | head -1`),
# so `set -o pipefail` still sees that the output was cut short.
CLOSED_PIPE_STATUS = 141
TERMINAL = "/dev/tty"
_GONE = select.POLLERR | select.POLLHUP


def closed_outputs() -> list[int]:
    """stdout and stderr among the descriptors whose reader has gone (a pipe or socket closed at the
    other end polls as an error or hang-up; files, terminals and /dev/null never do)."""
    poller = select.poll()
    for fd in (1, 2):
        poller.register(fd, select.POLLOUT)
    return [fd for fd, events in poller.poll(0) if events & _GONE]


def quiet_closed_outputs(closed: list[int]) -> None:
    """Point the closed descriptors at /dev/null, so that the interpreter's last flush of what is
    still buffered neither raises nor prints "Exception ignored" to a stderr that may be gone too."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in closed:
            os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def settle_outputs() -> None:
    """Flush stdout and stderr; one that cannot be written any more (a terminal that hung up: EIO) is
    pointed at /dev/null, what it still buffered dropped, so the interpreter's last flush does not
    turn the exit status into 120 and print "Exception ignored" (the TUI ended by a signal)."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        try:
            stream.flush()
        except ValueError:   # closed already
            continue
        except OSError:
            try:
                quiet_closed_outputs([stream.fileno()])
                stream.flush()
            except (OSError, ValueError):
                pass


@contextmanager
def on_terminal(command: str) -> Iterator[None]:
    """Run the block with descriptors 0, 1 and 2 on the controlling terminal, each one that is not
    a terminal reopened onto /dev/tty; afterwards each goes back to what it was, so a result printed
    then reaches the original stdout (`$(reprise pick)`)."""
    redirected = [fd for fd in (0, 1, 2) if not os.isatty(fd)]
    if not redirected:
        yield
        return
    try:
        terminal = os.open(TERMINAL, os.O_RDWR | os.O_NOCTTY)
    except OSError as exc:
        raise UsageError(f"{command} needs a terminal: {TERMINAL} cannot be opened ({exc.strerror or exc}).",
                         hint="run it from a terminal; `reprise list` and `reprise search` work without one",
                         path=TERMINAL) from None
    _flush()
    saved: dict[int, int | None] = {}
    try:
        for fd in redirected:
            try:
                saved[fd] = os.dup(fd)
            except OSError:  # the descriptor was closed (`<&-`): it is closed again afterwards
                saved[fd] = None
            os.dup2(terminal, fd)
        yield
    finally:
        _flush()
        for fd, original in saved.items():
            if original is None:
                os.close(fd)
            else:
                os.dup2(original, fd)
                os.close(original)
        os.close(terminal)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe is reported by the caller's own write, not here
            pass
