"""Small fake agents for the process and signal tests, and the helpers that run `reprise send`
as a real process and make sure no process a test started outlives it.

The agent (`AGENT`) reads the message, notes its pid in $PIDS_FILE and, by $AGENT_MODE:
`daemon` starts a `setsid` daemon that keeps its stdout and stderr (`stubborn`: the daemon and
the agent ignore SIGTERM and SIGINT), `hang` sleeps instead of replying, `flood` prints 12 MiB.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from reprise.core import config
from reprise.core.paths import SessionRef
from reprise.core.service import Service

AGENT = '''\
import os, signal, subprocess, sys, time
message = sys.stdin.read()
mode = os.environ.get("AGENT_MODE", "")
def note(pid):
    with open(os.environ["PIDS_FILE"], "a") as pids:
        pids.write(f"{pid}\\n")
note(os.getpid())
if "flood" in mode:
    sys.stdout.write("abcdé\\n" * (12 * 1024 * 1024 // 7))
    sys.exit(0)
if "stubborn" in mode:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
if "daemon" in mode:
    daemon = ("import os, signal, sys, time\\n"
              + ("signal.signal(signal.SIGTERM, signal.SIG_IGN)\\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\\n"
                 if "stubborn" in mode else "")
              + "open(os.environ['PIDS_FILE'], 'a').write(f'{os.getpid()}\\\\n')\\n"
              + "sys.stdout.write('daemon says hello\\\\n'); sys.stdout.flush()\\n"
              + "time.sleep(300)\\n")
    subprocess.Popen(["setsid", sys.executable, "-c", daemon])
    deadline = time.monotonic() + 30
    while len(open(os.environ["PIDS_FILE"]).read().split()) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
if "hang" in mode:
    time.sleep(300)
print("reply to: " + message.strip(), flush=True)
'''

REPRISE_TIMEOUT_S = 60


def alive(pid: int) -> bool:
    """Running (a zombie is not: it has ended and only waits for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def pids_in(path: Path) -> list[int]:
    try:
        return [int(item) for item in path.read_text().split()]
    except FileNotFoundError:
        return []


def wait_for(condition, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return condition()


class Setup:
    """A state root, a workspace, a session and the config of the command backend running AGENT."""

    def __init__(self, tmp_path: Path, *, timeout: float = 60, max_reply_bytes: int | None = None,
                 backend: str = "command"):
        self.tmp = tmp_path
        self.workspace = tmp_path / "ws"
        self.workspace.mkdir(exist_ok=True)
        self.pids_file = tmp_path / "pids"
        script = tmp_path / "agent.py"
        script.write_text(AGENT)
        toml = f'[agent]\nbackend = "{backend}"\ntimeout = {timeout}\nturn = ["{sys.executable}", "{script}"]\n'
        if max_reply_bytes is not None:
            toml += f"max_reply_bytes = {max_reply_bytes}\n"
        (tmp_path / "config.toml").write_text(toml)
        self.env = {**os.environ, "PIDS_FILE": str(self.pids_file), "REPRISE_CONFIG": str(tmp_path / "config.toml"),
                    "REPRISE_STATE_DIR": str(tmp_path / "state"), "FRACTAL_STATE_HOME": str(tmp_path / "state"),
                    "PYTHONUNBUFFERED": "1"}
        self.service = Service(config.load(state_dir=str(tmp_path / "state"), config_path=tmp_path / "config.toml"),
                               workspace=self.workspace)
        self.ref: SessionRef = self.service.new_session("t")
        self.started: list[subprocess.Popen] = []

    def argv(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "reprise.tui.cli", "--state-dir", str(self.tmp / "state"),
                "--workspace", str(self.workspace), *args]

    def start_send(self, message: str, mode: str, *extra: str) -> subprocess.Popen:
        return self.start(["send", self.ref.session_id, "--message", message, *extra], mode)

    def finish(self, child: subprocess.Popen, timeout: float = REPRISE_TIMEOUT_S) -> tuple[int, str, str]:
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"reprise send did not return within {timeout} s") from None
        return child.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    def reprise(self, *args: str, mode: str = "") -> tuple[int, str, str]:
        return self.finish(self.start(list(args), mode))

    def start(self, args: list[str], mode: str) -> subprocess.Popen:
        child = subprocess.Popen(self.argv(*args), env={**self.env, "AGENT_MODE": mode}, cwd=self.workspace,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        self.started.append(child)
        return child

    def last_turn(self):
        state = self.service.sources["fractal"].store.load(self.ref).state
        return state.turns[-1], state.history[-1]

    def cleanup(self) -> None:
        """End, by pid, every process this test started that is still running."""
        for child in self.started:
            if child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(child.pid, signal.SIGKILL)
                child.wait(10)
            for stream in (child.stdout, child.stderr):
                if stream:
                    stream.close()
        for pid in pids_in(self.pids_file):
            if alive(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def setup(tmp_path: Path, **kwargs) -> Iterator[Setup]:
    at_hand = Setup(tmp_path, **kwargs)
    try:
        yield at_hand
    finally:
        at_hand.cleanup()
