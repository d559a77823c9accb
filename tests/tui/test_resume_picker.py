"""`reprise resume` with neither an id nor --last opens the picker on the terminal and resumes the
session chosen there; driven as a person would, through a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time

from tests import factories


def run_on_a_terminal(argv: list[str], cwd, keys: bytes, wait_for: bytes, timeout: float = 60.0) -> tuple[int, bytes]:
    """Run `argv` with a pseudo-terminal as its stdin, stdout and stderr; once `wait_for` has been
    drawn, type `keys`; return its exit status and everything it wrote."""
    leader, follower = pty.openpty()
    env = dict(os.environ, TERM="xterm-256color", COLUMNS="100", LINES="30")
    process = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, cwd=cwd, env=env,
                               start_new_session=True)
    os.close(follower)
    written, typed = b"", False
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:   # the terminal closed: the program ended
                    break
                if not chunk:
                    break
                written += chunk
            if not typed and wait_for in written:
                time.sleep(0.5)   # the rows are drawn; let the app settle before typing
                os.write(leader, keys)
                typed = True
            if process.poll() is not None and not ready:
                break
        return process.wait(timeout=10), written
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(leader)


def test_resume_without_an_id_resumes_the_session_picked(tmp_path, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    data = factories.session_bytes("picked-session", turns=2)
    factories.write_session(isolated_paths, folder, data)
    session_id = "picked-session"
    status, written = run_on_a_terminal([sys.executable, "-m", "reprise.tui.cli", "resume", "--print"], folder,
                                        b"\r", wait_for=b"sessions shown")
    assert status == 0, written[-2000:]
    tail = written.rsplit(b"\x1b[?1049l", 1)[-1]   # what was printed after the picker left the screen
    assert f"--resume {session_id}".encode() in tail and str(folder).encode() in tail


def test_resume_without_an_id_resumes_nothing_when_the_picker_is_cancelled(tmp_path, isolated_paths):
    folder = tmp_path / "project"
    folder.mkdir()
    factories.write_session(isolated_paths, folder, factories.session_bytes("picked-session", turns=2))
    status, written = run_on_a_terminal([sys.executable, "-m", "reprise.tui.cli", "resume", "--print"], folder,
                                        b"\x1b", wait_for=b"sessions shown")
    assert status == 1 and b"--resume" not in written.rsplit(b"\x1b[?1049l", 1)[-1]
