"""A cold `list --all` and a first `search --all` say how far they are on a terminal's stderr, and
nothing on a pipe or with --json."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time

from reprise.core.progress import Progress
from reprise.tui.progress_line import ProgressLine
from tests.factories import session_bytes, write_session


def _store(state, tmp_path, count: int = 30):
    folder = tmp_path / "project"
    folder.mkdir()
    an_hour_ago = time.time() - 3600   # not just written: a file this fresh is read again on the next listing
    for index in range(count):
        path = write_session(state, folder, session_bytes(f"{index:032x}", turns=2))
        os.utime(path, (an_hour_ago, an_hour_ago))
    return folder


def _run(args: list[str], cwd, *, stderr_on_a_terminal: bool) -> tuple[str, str]:
    """stdout through a pipe; stderr on a pty (read from its other end) or a pipe."""
    if not stderr_on_a_terminal:
        done = subprocess.run([sys.executable, "-m", "reprise.tui.cli", *args], cwd=cwd, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "COLUMNS": "120"})
        return done.stdout, done.stderr
    leader, follower = pty.openpty()
    with subprocess.Popen([sys.executable, "-m", "reprise.tui.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=follower, stdin=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "120"}) as child:
        os.close(follower)
        err = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            err += chunk
        out = child.stdout.read() if child.stdout else b""
        child.wait(timeout=120)
    os.close(leader)
    return out.decode(), err.decode()


def test_a_cold_listing_and_a_first_search_show_progress_on_a_terminal(isolated_paths, tmp_path):
    folder = _store(isolated_paths, tmp_path)
    out, err = _run(["list", "--all"], folder, stderr_on_a_terminal=True)
    assert "reading 1/30 sessions…" in err and err.endswith("\r\x1b[K")  # rewritten in place, cleared at the end
    assert "reading" not in out and "30 of 30" not in err
    out, err = _run(["search", "--all", "session"], folder, stderr_on_a_terminal=True)
    assert re.search(r"searching \d+/30 sessions…", err) and err.endswith("\r\x1b[K") and "searching" not in out
    _, err = _run(["list", "--all"], folder, stderr_on_a_terminal=True)
    assert err == ""  # warm: nothing to read, nothing shown


def test_no_progress_into_a_pipe_or_with_json(isolated_paths, tmp_path):
    folder = _store(isolated_paths, tmp_path)
    out, err = _run(["list", "--all"], folder, stderr_on_a_terminal=False)
    assert "reading" not in err and "reading" not in out and out
    out, err = _run(["search", "--all", "--json", "session"], tmp_path, stderr_on_a_terminal=True)
    assert "indexing" not in err and "searching" not in err and out.startswith("{")


def test_the_line_is_drawn_at_most_ten_times_a_second_and_cleared_once():
    stream, now = io.StringIO(), [0.0]
    line = ProgressLine(stream, clock=lambda: now[0])
    for done in range(1, 6):
        now[0] += 0.03
        line(Progress("reading", done, 10))
    assert stream.getvalue() == "\rreading 1/10 sessions…\x1b[K\rreading 5/10 sessions…\x1b[K"
    line(Progress("reading", 10, 10))
    line.clear()
    assert stream.getvalue().endswith("sessions…\x1b[K\r\x1b[K") and stream.getvalue().count("\r\x1b[K") == 1
