"""Drive the interactive Claude Code in a pseudo-terminal (inside the test's namespace).

    python pty_drive.py --record DIR --send TEXT [--timeout S] -- ARGV...

Starts ARGV on a pty (120x40), waits until its screen has been quiet for a moment (the UI is
up), types TEXT and Enter, waits until the fake server has recorded one more request than before
(and the reply had time to land), then types `/exit` and Enter; a child still running after
that is killed (by its pid: it is this script's own child). Prints one JSON line: the exit
status, whether a request was sent, and the screen text seen (ANSI codes removed, the tail).
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import re
import select
import signal
import struct
import sys
import termios
import time
from fcntl import ioctl
from pathlib import Path

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>]")


def count(record: Path) -> int:
    return len(list(record.glob("*.json")))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--send", default="")
    parser.add_argument("--timeout", type=float, default=60)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    before = count(args.record)
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    seen = bytearray()
    deadline = time.monotonic() + args.timeout
    last_output = time.monotonic()
    phase = "starting"  # -> sent -> exiting
    sent_at = 0.0
    status = None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                break
            seen += chunk
            last_output = time.monotonic()
            # answer a terminal's cursor-position query, which some TUIs wait for
            if b"\x1b[6n" in chunk:
                os.write(fd, b"\x1b[1;1R")
        done_pid, raw_status = os.waitpid(pid, os.WNOHANG)
        if done_pid:
            status = raw_status
            break
        quiet = time.monotonic() - last_output
        if phase == "starting" and quiet > 2.5:
            if args.send:
                os.write(fd, args.send.encode())
                time.sleep(0.5)
                os.write(fd, b"\r")
            phase, sent_at = "sent", time.monotonic()
        elif phase == "sent" and ((count(args.record) > before and quiet > 2.5) or
                                  time.monotonic() - sent_at > args.timeout / 2 or not args.send):
            os.write(fd, b"/exit")
            time.sleep(0.5)
            os.write(fd, b"\r")
            phase = "exiting"
    if status is None:
        try:
            done_pid, raw_status = os.waitpid(pid, os.WNOHANG)
            if not done_pid:
                os.kill(pid, signal.SIGKILL)
                _, raw_status = os.waitpid(pid, 0)
            status = raw_status
        except ChildProcessError:
            status = 0
    text = ANSI_RE.sub("", seen.decode("utf-8", "replace"))
    print(json.dumps({"exit": os.waitstatus_to_exitcode(status) if status is not None else None,
                      "requests": count(args.record) - before, "phase": phase, "screen": text[-6000:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
