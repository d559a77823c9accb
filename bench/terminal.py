"""A real terminal for whole-process timings: a child on a pseudo-terminal of a given size
(TIOCSWINSZ), TERM=xterm-256color, its controlling terminal (the TUI draws on /dev/tty), timed
from the fork to the first time a text appears in what it writes.

Escape sequences are taken out of the output before the text is looked for, and runs of spaces
are folded (a terminal app moves the cursor instead of writing some blanks)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from collections.abc import Callable
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
    wanted = _SPACES.sub(b" ", text.encode("utf-8"))
    return time_to_shown(argv, lambda screen: wanted in screen, size=size, env=env, cwd=cwd, deadline=deadline)


def time_to_match(argv: list[str], pattern: re.Pattern[bytes], *, size: tuple[int, int], env: dict[str, str],
                  cwd: str | None = None, deadline: float = 30.0) -> Paint:
    """`time_to_text` for the first text that `pattern` finds (searched in the output as one line of
    words, escape sequences taken out), when the exact text is not known beforehand."""
    return time_to_shown(argv, lambda screen: pattern.search(screen) is not None, size=size, env=env, cwd=cwd,
                         deadline=deadline)


def time_to_shown(argv: list[str], shown: Callable[[bytes], bool], *, size: tuple[int, int], env: dict[str, str],
                  cwd: str | None = None, deadline: float = 30.0) -> Paint:
    """Start `argv` on a new pty of `size`; the seconds until `shown(what the terminal shows)` holds."""
    output = bytearray()
    started = time.perf_counter()
    leader, child = start_on_pty(argv, size=size, env=env, cwd=cwd)
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
            if shown(plain(bytes(output))):
                seen = time.perf_counter() - started
                break
    finally:
        _end(child, leader)
    return Paint(seen, len(output))


def start_on_pty(argv: list[str], *, size: tuple[int, int], env: dict[str, str],
                 cwd: str | None = None) -> tuple[int, subprocess.Popen]:
    """`argv` started on a new pty of `size` (columns, rows), its controlling terminal in a session
    of its own; the pty's other end (for the caller to read, write and close) and the child."""
    columns, rows = size
    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    child = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, close_fds=True,
                             env={**env, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows)},
                             start_new_session=True, preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    os.close(follower)
    return leader, child


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
    with contextlib.suppress(ProcessLookupError):   # what it started and left (its own process group)
        os.killpg(child.pid, signal.SIGKILL)
    os.close(leader)


class OnTerminal:
    """A child on a new pty of `size` (columns, rows) that is its controlling terminal (its own
    session), read all along by a thread so it never blocks on a full pty: what it shows can be
    waited for, keys typed, the terminal closed (its other end), and the child ended by its pid."""

    def __init__(self, argv: list[str], *, env: dict[str, str], cwd: str | None = None,
                 size: tuple[int, int] = (100, 30)):
        self.leader, self.child = start_on_pty(argv, size=size, env=env, cwd=cwd)
        self.output = bytearray()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while not self._stop.is_set():
            if select.select([self.leader], [], [], 0.05)[0]:
                try:
                    chunk = os.read(self.leader, 1 << 16)
                except OSError:   # every holder of the child's side closed it
                    return
                if not chunk:
                    return
                self.output += chunk

    def shows(self, text: str) -> bool:
        return _SPACES.sub(b" ", text.encode("utf-8")) in plain(bytes(self.output))

    def wait_until(self, condition: Callable[[], bool], timeout: float) -> bool:
        """Whether `condition` held within `timeout` seconds (checked every 20 ms)."""
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    def type(self, keys: bytes) -> None:
        """One key at a time (an escape sequence is one key), as a person types."""
        for key in re.findall(rb"\x1b\[[A-Z]|\x1bO[A-Z]|.", keys, re.DOTALL):
            os.write(self.leader, key)

    def read_to_the_end(self, timeout: float = 60.0) -> None:
        self._reader.join(timeout)

    def close(self) -> None:
        """The terminal's window closed: the pty's other end is closed (the kernel hangs it up)."""
        self._stop.set()
        self._reader.join()
        if self.leader >= 0:
            os.close(self.leader)
            self.leader = -1

    def group_gone(self) -> bool:
        """No process is left in the child's process group (its own, as the leader of its session)."""
        try:
            os.killpg(self.child.pid, 0)
        except ProcessLookupError:
            return True
        return False

    def end(self) -> None:
        """Whatever is left ends: the child and its process group, killed; the terminal closed."""
        if self.child.poll() is None:
            self.child.kill()
            self.child.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.child.pid, signal.SIGKILL)
        self.close()
