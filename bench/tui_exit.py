"""How long the TUI takes to end once told to: `reprise --demo` on a real pty (its controlling
terminal), held in each state with a fault point (REPRISE_FAULTS `hold`: the rows loading, the
preview loading, the meter counting, a search indexing) or with a dialog open (letters typed, then
F1's key list: the issue's case), then sent SIGHUP or SIGTERM, or its terminal closed (the pty's
other end: the kernel hangs it up). Timed from the signal, or the close, to the process's exit as
its parent sees it (waitpid); worst and median of REPEATS runs per state and ending.

The base commit (BASE) beside, in the one state it can be held in without the fault points (the
dialog open), each run capped at BASE_CAP seconds: a run still going then is counted as one that
never ends (it is killed by its pid)."""

from __future__ import annotations

import shutil
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from .startup import LAUNCH, base_package, environment
from .terminal import OnTerminal

USES_STORE = False   # the demo store, built by each run
BASE = "b1f859c"
REPEATS, QUICK_REPEATS = 5, 2
TARGET_S = 2.0
BASE_CAP = 20.0
STATE_WAIT = 120.0
STATES = {   # as tests/robustness/test_tui_signals.py holds them
    "rows loading": ("tui_load_rows", []),
    "preview loading": ("tui_load_detail", []),
    "meter counting": ("tui_measure", []),
    "search indexing": ("tui_search", [("sessions shown", b"\x06"), ("Search all text", b"needle")]),
    "dialog open": (None, [("sessions shown", b"abc\x1bOP"), ("Esc closes", b"")]),
}
ENDINGS = ("SIGHUP", "SIGTERM", "terminal closed")


def time_to_exit(env: dict[str, str], scratch: Path, state: str, ending: str, cap: float) -> float | None:
    """Seconds from the ending to the exit of one `reprise --demo` held in `state`; None: still
    running after `cap` seconds, or the state never reached."""
    point, steps = STATES[state]
    gate = scratch / "gate"   # never created
    run_env = {**env, "TMPDIR": str(scratch)}   # the demo store goes there, removed with it
    if point is not None:
        run_env["REPRISE_FAULTS"] = f"{point}=hold:{gate}"
    terminal = OnTerminal([sys.executable, "-c", LAUNCH, "--demo"], env=run_env, cwd=str(scratch))
    try:
        for text, keys in steps:
            if not terminal.wait_until(lambda text=text: terminal.shows(text), STATE_WAIT):
                return None
            terminal.type(keys)
        if point is not None and not terminal.wait_until(Path(f"{gate}.reached").exists, STATE_WAIT):
            return None
        started = time.perf_counter()
        if ending == "terminal closed":
            terminal.close()
        else:
            terminal.child.send_signal(getattr(signal, ending))
        if not terminal.wait_until(lambda: terminal.child.poll() is not None, cap):
            return None
        return time.perf_counter() - started
    finally:
        terminal.end()
        Path(f"{gate}.reached").unlink(missing_ok=True)


def run(store, report, *, quick: bool = False, log=print) -> None:
    section = report.section("tui_exit", "The TUI's end after SIGHUP, SIGTERM or a closed terminal")
    repeats = QUICK_REPEATS if quick else REPEATS
    scratch = Path(tempfile.mkdtemp(prefix="reprise-bench-tui-exit-"))
    try:
        ours = environment(scratch / "none", scratch / "ours")
        base = environment(scratch / "none", scratch / "base", pythonpath=base_package(log, BASE))
        for state in STATES:
            for ending in ENDINGS:
                log(f"  {state}, {ending} ...")
                runs = [time_to_exit(ours, scratch, state, ending, 60.0) for _ in range(repeats)]
                done = [seconds for seconds in runs if seconds is not None]
                baseline = ""
                if STATES[state][0] is None:
                    base_runs = [time_to_exit(base, scratch, state, ending, BASE_CAP) for _ in range(repeats)]
                    base_done = [seconds for seconds in base_runs if seconds is not None]
                    baseline = (f"worst {report.seconds(max(base_done)) if base_done else '–'}; "
                                f"{len(base_runs) - len(base_done)} of {len(base_runs)} never")
                    section.data[f"base {state}, {ending}"] = base_runs
                section.data[f"{state}, {ending}"] = runs
                worst = max(done) if len(done) == len(runs) else None
                ours_text = (f"worst {report.seconds(worst)}, median {report.seconds(statistics.median(done))}"
                             if worst is not None else f"{len(runs) - len(done)} of {len(runs)} never")
                section.row(f"{state}: {ending}", ours_text, baseline, "", f"< {TARGET_S:.0f} s",
                            worst is not None and worst < TARGET_S)
        section.note(f"`reprise --demo` on a 100x30 pty, {repeats} runs per row, each held in its state by "
                     "REPRISE_FAULTS=<point>=hold:<file> before the signal. Baseline: the base commit "
                     f"{BASE} (git archive), only where no fault point is needed; capped at {BASE_CAP:.0f} s "
                     "(\"never\": still running then, killed).")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
