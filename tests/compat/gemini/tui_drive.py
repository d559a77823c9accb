"""Type a message into the interactive Gemini CLI under tmux (inside the test's namespace).

    python tui_drive.py --record DIR --socket SOCK --message TEXT -- NODE GEMINI_JS ARGS...

Starts the command in a detached tmux session (its own socket, 200x50) and waits until the screen
shows the client's input box (`READY`), so no key is typed before the client reads keys; types
TEXT literally, waits until the screen shows its start, presses Enter, and waits until the fake
server has recorded a turn request (`:streamGenerateContent`) and the screen has been quiet for a
moment. Then it types `/quit` and Enter (Ctrl-C twice if the client is still there) and ends the
tmux server. Prints one JSON line: the turn requests recorded and the last screen.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

READY = "Type your message"
QUIET_S = 2.0
EXIT_S = 5
POLL_S = 0.25


class Tmux:
    def __init__(self, socket: Path):
        self.socket = socket

    def __call__(self, *args: str) -> str:
        return subprocess.run(["tmux", "-S", str(self.socket), *args], check=False, capture_output=True,
                              text=True).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "main")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-S", str(self.socket), "has-session", "-t", "main"], check=False,
                              capture_output=True).returncode == 0


def turns(record: Path) -> int:
    return sum(1 for path in record.glob("*.path") if ":streamGenerateContent" in path.read_text())


def wait(tmux: Tmux, deadline: float, until: Callable[[str], bool]) -> str:
    """Wait until `until(screen)` holds and the screen has not changed for QUIET_S (or the deadline)."""
    last, changed = "", time.monotonic()
    while time.monotonic() < deadline and tmux.alive():
        screen = tmux.screen()
        if screen != last:
            last, changed = screen, time.monotonic()
        elif until(screen) and time.monotonic() - changed > QUIET_S:
            break
        time.sleep(POLL_S)
    return last


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--socket", type=Path, required=True)
    parser.add_argument("--message", required=True)
    parser.add_argument("--timeout", type=float, default=180)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    tmux = Tmux(args.socket)
    tmux("new-session", "-d", "-s", "main", "-x", "200", "-y", "50", *argv)
    deadline = time.monotonic() + args.timeout
    if READY not in wait(tmux, deadline, lambda screen: READY in screen):
        problem = "the client ended before" if not tmux.alive() else "the client never showed"
        tmux("kill-server")
        print(json.dumps({"turns": 0, "screen": "", "problem": f"{problem} its input box ({READY!r})"}))
        return 0
    before = turns(args.record)
    tmux("send-keys", "-t", "main", "-l", args.message)
    wait(tmux, deadline, lambda screen: args.message[:30] in screen)
    tmux("send-keys", "-t", "main", "Enter")
    screen = wait(tmux, deadline, lambda _: turns(args.record) > before)
    for keys in (["-l", "/quit"], ["Enter"], ["C-c"], ["C-c"]):
        tmux("send-keys", "-t", "main", *keys)
        until = time.monotonic() + EXIT_S
        while tmux.alive() and time.monotonic() < until and keys != ["-l", "/quit"]:
            time.sleep(POLL_S)
        if not tmux.alive():
            break
    tmux("kill-server")
    print(json.dumps({"turns": turns(args.record) - before, "screen": screen[-3000:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
