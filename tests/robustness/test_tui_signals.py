"""The TUI never outlives its terminal: `reprise` on a real pseudo-terminal (its controlling
terminal), held in each state with a fault point (the rows loading, the preview loading, the meter
counting, a search indexing) or with a dialog open, ends on SIGHUP (129), on SIGTERM (143) and when
the terminal closes (the pty's other end closed: the kernel's SIGHUP, then SIGCONT, reads at end of
file and writes failing with EIO), and leaves no process of its session behind.

Before, a closed terminal could leave it running for good at parent pid 1, its event loop blocked
on a futex (Textual's output thread, restarted by the hang-up's SIGCONT, died on EIO and its queue
filled), deaf to SIGTERM and SIGHUP; and a worker still busy kept a signalled process alive until
it finished. No timing is asserted: each wait is for an event, bounded only so a hang fails."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench.terminal import OnTerminal
from tests import factories

EXIT_WAIT = 60.0    # generous: a hang fails the test instead of blocking it
STATE_WAIT = 90.0   # the TUI's start on a loaded machine, until the state is reached

# state -> (the fault point holding a worker there, or None; then each text to wait for on screen
# and the keys typed once it is there). The state is reached once the fault point's file exists
# (a worker held there), else once the last text is on screen.
STATES = {
    "rows loading": ("tui_load_rows", []),
    "preview loading": ("tui_load_detail", []),
    "meter counting": ("tui_measure", []),
    "search indexing": ("tui_search", [("sessions shown", b"\x06"), ("Search all text", b"needle")]),
    # letters typed, then F1: the case; its help screen is open
    "dialog open": (None, [("sessions shown", b"abc\x1bOP"), ("Esc closes", b"")]),
}
ENDINGS = {"SIGHUP": 129, "SIGTERM": 143, "terminal closed": 129}


def as_a_user_runs_it() -> dict[str, str]:
    """This environment without PYTHONUNBUFFERED (a developer's or CI's setting): stdout buffered, as a
    user's `reprise` has it, so what is still buffered when the terminal hangs up is flushed at exit
    (once ending with status 120 instead of 129)."""
    env = dict(os.environ)
    env.pop("PYTHONUNBUFFERED", None)
    return env


def end_and_wait(terminal: OnTerminal, ending: str, what: str) -> int:
    """Send the signal, or close the terminal; the exit status, waited for (a hang fails)."""
    if ending == "terminal closed":
        terminal.close()
    else:
        terminal.child.send_signal(getattr(signal, ending))
    try:
        return terminal.child.wait(timeout=EXIT_WAIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what} still running {EXIT_WAIT:.0f} s after {ending}")


@pytest.fixture
def store(tmp_path, isolated_paths) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    for number in range(3):
        factories.write_session(isolated_paths, folder,
                                factories.session_bytes(f"session-{number}", turns=3))
    return folder


@pytest.mark.parametrize("ending", list(ENDINGS))
@pytest.mark.parametrize("state", list(STATES))
def test_the_tui_ends_on_a_signal_or_a_closed_terminal_in_every_state(store, tmp_path, state, ending):
    point, steps = STATES[state]
    gate = tmp_path / "gate"   # never created: the worker stays held until the process ends
    env = as_a_user_runs_it()
    if point is not None:
        env["REPRISE_FAULTS"] = f"{point}=hold:{gate}"
    terminal = OnTerminal([sys.executable, "-m", "reprise.tui.cli"], env=env, cwd=str(store))
    try:
        for text, keys in steps:
            assert terminal.wait_until(lambda text=text: terminal.shows(text), STATE_WAIT), terminal.output[-2000:]
            terminal.type(keys)
        if point is not None:
            assert terminal.wait_until(Path(f"{gate}.reached").exists, STATE_WAIT), terminal.output[-2000:]
        assert end_and_wait(terminal, ending, f"reprise ({state})") == ENDINGS[ending], terminal.output[-2000:]
        assert terminal.wait_until(terminal.group_gone, EXIT_WAIT), "a process of its session is left"
        if ending != "terminal closed":
            terminal.read_to_the_end()
            assert b"Traceback" not in terminal.output
            if ending == "SIGTERM":   # a SIGHUP's line is left out on a terminal: it is taken for a closed one
                assert terminal.shows("reprise: SIGTERM: Reprise was closed.")
    finally:
        terminal.end()


@pytest.mark.parametrize("ending", ["SIGTERM", "terminal closed"])
def test_the_picker_ends_with_the_signal_s_status_not_as_a_cancel(store, ending):
    """`reprise pick` (and `resume` without an id) told to end is not "nothing picked" (1)."""
    terminal = OnTerminal([sys.executable, "-m", "reprise.tui.cli", "pick"], env=as_a_user_runs_it(), cwd=str(store))
    try:
        assert terminal.wait_until(lambda: terminal.shows("sessions shown"), STATE_WAIT), terminal.output[-2000:]
        assert end_and_wait(terminal, ending, "reprise pick") == ENDINGS[ending], terminal.output[-2000:]
    finally:
        terminal.end()
