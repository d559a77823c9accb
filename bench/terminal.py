"""A real terminal for whole-process timings: a child on a pseudo-terminal of a given size
(TIOCSWINSZ), TERM=xterm-256color, its controlling terminal (the TUI draws on /dev/tty), timed
from the fork to the first time a text appears in what it writes.

Escape sequences are taken out of the output before the text is looked for, and runs of spaces
are folded (a terminal app moves the cursor instead of writing some blanks)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass

_ESCAPES = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]"                 # CSI: cursor moves, colours, modes
                      rb"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"      # OSC: title, clipboard
                      rb"|\x1b[P^_][^\x1b]*\x1b\\|\x1b[@-Z\\-_]")  # DCS, PM, APC; two-byte escapes
_SPACES = re.compile(rb"\s+")


@dataclass(frozen=True)
class Paint:
    seconds: float | None   # fork to the text on screen; None: not seen before the deadline
    written: int            # bytes the child wrote until then


def plain(output: bytes) -> bytes:
    """What a terminal would show of the output, as one line of words."""
    return _SPACES.sub(b" ", _ESCAPES.sub(b"", output))


def time_to_text(argv: list[str], text: str, *, size: tuple[int, int], env: dict[str, str], cwd: str | None = None,
                 deadline: float = 30.0) -> Paint:
    """Start `argv` on a new pty of `size` (columns, rows); the seconds until `text` appears. The
    child (its own session, the pty its controlling terminal) is ended by its pid afterwards."""
    columns, rows = size
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    wanted = _SPACES.sub(b" ", text.encode("utf-8"))
    output = bytearray()
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, close_fds=True,
                             env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)},
                             start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(follower)
    seen: float | None = None
    try:
        while time.perf_counter() - started < deadline:
            ready, _, _ = select.select([leader], [], [], 0.05)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(leader, 1 << 16)
            except OSError:   # the child is gone and its end closed
                break
            if not chunk:
                break
            output += chunk
            if wanted in plain(bytes(output)):
                seen = time.perf_counter() - started
                break
    finally:
        _end(child, leader)
    return Paint(seen, len(output))


def _end(child: subprocess.Popen, leader: int) -> None:
    if child.poll() is None:
        child.send_signal(signal.SIGTERM)
        deadline = time.perf_counter() + 5
        while child.poll() is None and time.perf_counter() < deadline:
            try:   # drain, so a child blocked on a full pty can see the signal through
                if select.select([leader], [], [], 0.05)[0]:
                    os.read(leader, 1 << 16)
            except OSError:
                break
        if child.poll() is None:
            child.kill()
    child.wait()
    os.close(leader)
