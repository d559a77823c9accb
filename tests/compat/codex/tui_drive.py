"""Drive the interactive Codex TUI under tmux (inside the test's namespace).

    python tui_drive.py --record DIR --binary CODEX [--step send:TEXT | paste:TEXT | compact ...] -- ARGS...

Starts `CODEX ARGS` in a detached tmux session (its own socket, 200x50), waits until the screen
has been quiet for a moment (the UI is up), then for each step: `send:TEXT` types TEXT (literally;
`paste:TEXT` pastes it, as a bracketed paste) and Enter, and waits until the fake server has
recorded one more request and the screen is quiet again; `compact` types `/compact` and Enter and
waits the same way. Then it types `/quit` and Enter (again Enter, then Ctrl-C twice, while the TUI
is still there), ends the tmux session, and ends the `codex app-server` daemon the TUI leaves
behind, by the pid it records under `$CODEX_HOME/app-server-daemon/`. Prints one JSON line: the
requests recorded, each step's outcome, the daemon pids it ended and the last screen.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

QUIET_S = 2.5
EXIT_S = 5        # how long each key that should end the TUI is given
POLL_S = 0.25


def count(record: Path) -> int:
    return len(list(record.glob("*.json")))


class Tmux:
    def __init__(self, socket: Path):
        self.socket = socket

    def __call__(self, *args: str) -> str:
        done = subprocess.run(["tmux", "-S", str(self.socket), *args], check=False, capture_output=True, text=True)
        return done.stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "main")

    def alive(self) -> bool:
        return subprocess.run(["tmux", "-S", str(self.socket), "has-session", "-t", "main"], check=False,
                              capture_output=True).returncode == 0


def settle(tmux: Tmux, deadline: float, until=lambda: True) -> str:
    """Wait until `until()` holds and the screen has not changed for QUIET_S (or the deadline)."""
    last, changed = "", time.monotonic()
    while time.monotonic() < deadline and tmux.alive():
        screen = tmux.screen()
        if screen != last:
            last, changed = screen, time.monotonic()
        elif until() and time.monotonic() - changed > QUIET_S:
            break
        time.sleep(POLL_S)
    return last


def daemons(codex_home: Path) -> list[int]:
    """The pids of the app-server daemon (and its updater) the TUI started, as it records them in
    `$CODEX_HOME/app-server-daemon/*.pid` (JSON with a `pid`), those still running."""
    found = []
    for record in sorted((codex_home / "app-server-daemon").glob("*.pid")):
        try:
            pid = int(json.loads(record.read_text())["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if Path(f"/proc/{pid}").exists():
            found.append(pid)
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", type=Path, required=True)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--socket", type=Path, default=Path("/tmp/codex-tui.sock"))
    parser.add_argument("--step", action="append", default=[])
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    tmux = Tmux(args.socket)
    tmux("new-session", "-d", "-s", "main", "-x", "200", "-y", "50", args.binary, *argv)
    deadline = time.monotonic() + args.timeout
    settle(tmux, deadline)
    outcomes = []
    for step in args.step:
        before = count(args.record)
        if step.startswith("paste:"):    # a long draft goes in as a person pastes it (bracketed paste)
            buffer = args.socket.with_suffix(".paste")
            buffer.write_text(step.removeprefix("paste:"))
            tmux("load-buffer", "-b", "draft", str(buffer))
            tmux("paste-buffer", "-p", "-d", "-b", "draft", "-t", "main")
        else:
            tmux("send-keys", "-t", "main", "-l", "/compact" if step == "compact" else step.removeprefix("send:"))
        settle(tmux, deadline)
        tmux("send-keys", "-t", "main", "Enter")
        screen = settle(tmux, deadline, lambda before=before: count(args.record) > before)
        outcomes.append({"step": step[:40], "requests": count(args.record) - before, "screen": screen[-3000:]})
    final = tmux.screen()
    for keys in (["-l", "/quit"], ["Enter"], ["Enter"], ["C-c"], ["C-c"]):   # /quit (its popup may take an Enter)
        tmux("send-keys", "-t", "main", *keys)
        until = time.monotonic() + EXIT_S
        while tmux.alive() and time.monotonic() < until and keys != ["-l", "/quit"]:
            final = tmux.screen() or final
            time.sleep(POLL_S)
        if not tmux.alive():
            break
    if tmux.alive():
        tmux("kill-session", "-t", "main")
    tmux("kill-server")
    ended = daemons(Path(os.environ["CODEX_HOME"]))
    for pid in ended:
        os.kill(pid, signal.SIGTERM)
    print(json.dumps({"requests": sum(o["requests"] for o in outcomes), "steps": outcomes, "daemons": ended,
                      "screen": final[-3000:]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
