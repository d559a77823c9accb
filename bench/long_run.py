"""Long-run benchmark (issue 24, section 3): peak memory and time of whole `reprise` processes on a
200 MB Claude Code session whose dropped turn holds one run without token breaks (a model repeating
a letter), side by side with the base commit's code.

The session (built once under bench/.stores/, reused): four ordinary turns around a second turn whose
reply is one text block of `RUN_CHAR` repeated to make the file FULL_BYTES. The same session with a
100 KB run is the idle process of each command: the interpreter, the imports and the tokenizer, what
a command holds whatever the file's size. For each program, `list --json` runs first on a cold catalog
(measured too), then each command as its own process: `trim ID --fork --dry-run --drop 2` (the preview
counts the dropped turn's tokens), `show ID`, `meter ID`. Peak = the child's `ru_maxrss` from `os.wait4`;
the target: the peak above the idle process under 4x the file's size.

Baseline: the same interpreter running commit BASELINE_COMMIT's code, extracted with `git archive`
(bench/memory.py's `baseline_source`). It counted the run in one piece: about 1.5 s and 60 bytes of
memory a byte of the run, so it runs under an address-space limit (BASELINE_LIMIT) and a timeout; a
command stopped by either is said so, with what it had reached.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from . import memory, stores

USES_STORE = False   # builds its own session
BASELINE_COMMIT = "b1f859c"
FULL_BYTES = 200 * 2**20
QUICK_BYTES = 16 * 2**20
IDLE_RUN = 100 * 1024
RUN_CHAR = "a"
TARGET_RATIO = 4.0
BASELINE_LIMIT = 14 * 2**30   # the base commit's trim preview of 200 MB took 10.4 GB
BASELINE_TIMEOUT_S = 900
GENERATOR_VERSION = 1
SESSION_ID = "10a9c0de-0000-4000-8000-000000000001"
COMMANDS = (("trim ID --fork --dry-run --drop 2", ["trim", SESSION_ID, "--fork", "--dry-run", "--drop", "2"]),
            ("show ID", ["show", SESSION_ID]),
            ("meter ID", ["meter", SESSION_ID]))


@dataclass(frozen=True)
class Run:
    peak: int         # bytes
    seconds: float
    status: int       # the exit status; negative: the signal that ended it
    stopped: str = ""  # why it did not finish ("timeout", "memory limit"), or ""


def _records(run_chars: int, cwd: str) -> tuple[bytes, bytes]:
    """The session's JSON lines before and after the run (the run goes between them)."""
    clock = [0]

    def stamp() -> str:
        clock[0] += 1
        return f"2026-11-20T09:{clock[0] // 60:02d}:{clock[0] % 60:02d}.000Z"

    lines: list[bytes] = []
    parent: list[str | None] = [None]

    def chain(kind: str, message: dict, number: int) -> None:
        uuid = f"10a9c0de-{number:04d}-4000-8000-{len(lines):012d}"
        record = {"parentUuid": parent[0], "isSidechain": False, "message": message, "type": kind, "uuid": uuid,
                  "timestamp": stamp(), "userType": "external", "entrypoint": "cli", "cwd": cwd,
                  "sessionId": SESSION_ID, "version": "2.1.332", "gitBranch": "main"}
        lines.append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
        parent[0] = uuid

    usage = {"input_tokens": 100, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 4000,
             "output_tokens": 20, "service_tier": "standard"}
    marker = b"@@RUN@@"
    for number in range(1, 6):
        chain("user", {"role": "user", "content": f"Turn {number}: go on with the refactoring."}, number)
        text = "@@RUN@@" if number == 2 else f"Done with step {number}: the tests pass. " * 20
        chain("assistant", {"id": f"msg_{number:04d}", "type": "message", "role": "assistant",
                            "model": "claude-opus-5-5", "content": [{"type": "text", "text": text}],
                            "stop_reason": "end_turn", "stop_sequence": None, "usage": usage}, number)
    head, tail = b"".join(lines).split(marker)
    return head, tail


def build_session(folder: Path, run_chars: int) -> tuple[Path, Path]:
    """(the Claude root, the workspace) of a session whose second turn's reply is one run."""
    claude, workspace = folder / "claude", folder / "project"
    path = claude / "projects" / stores_slug(str(workspace)) / f"{SESSION_ID}.jsonl"
    if path.exists():
        return claude, workspace
    workspace.mkdir(parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    head, tail = _records(run_chars, str(workspace))
    chunk = RUN_CHAR.encode() * (1 << 20)
    temp = path.with_suffix(".part")
    with open(temp, "wb") as handle:
        handle.write(head)
        for start in range(0, run_chars, len(chunk)):
            handle.write(chunk[:min(len(chunk), run_chars - start)])
        handle.write(tail)
    hour_ago = time.time() - 3600   # an hour old, as a real large session: never re-read as in flight
    os.utime(temp, (hour_ago, hour_ago))
    os.replace(temp, path)
    return claude, workspace


def stores_slug(cwd: str) -> str:
    from .claude_store import slug

    return slug(cwd)


def run_command(argv: list[str], claude: Path, workspace: Path, scratch: Path, *, pythonpath: Path | None,
                limit: int | None, timeout: float) -> Run:
    """One `reprise` process on this Claude root alone; its peak RSS from wait4."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("REPRISE_", "FRACTAL_"))}
    env.pop("PYTHONPATH", None)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.update({"CLAUDE_CONFIG_DIR": str(claude), "CODEX_HOME": str(scratch / "no-codex"),
                "FRACTAL_STATE_HOME": str(scratch / "fractal"), "REPRISE_CACHE_DIR": str(scratch / "cache"),
                "REPRISE_DATA_DIR": str(scratch / "data"), "REPRISE_CONFIG": str(scratch / "no-config.toml"),
                "XDG_CONFIG_HOME": str(scratch / "config"), "COLUMNS": "120"})

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    started = time.perf_counter()
    with open(scratch / "stdout", "wb") as stdout, open(scratch / "stderr", "wb") as stderr:
        process = subprocess.Popen([sys.executable, "-m", "reprise.tui.cli", *argv], stdout=stdout, stderr=stderr,
                                   stdin=subprocess.DEVNULL, cwd=workspace, env=env, preexec_fn=limited)
        stopped = ""
        deadline = started + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                process.kill()
                stopped = "timeout"
            time.sleep(0.2)
    seconds = time.perf_counter() - started
    code = os.waitstatus_to_exitcode(status)
    text = (scratch / "stderr").read_text("utf-8", "replace")
    if not stopped and (code not in (0, 1) or "Traceback" in text):
        stopped = "memory limit" if "MemoryError" in text or "memory allocation" in text else f"exit {code}"
    return Run(usage.ru_maxrss * 1024, seconds, code, stopped)


def measure(claude: Path, workspace: Path, work: Path, label: str, pythonpath: Path | None, log) -> dict[str, Run]:
    scratch = work / label
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "config").mkdir(parents=True)
    limit = BASELINE_LIMIT if pythonpath is not None else None
    runs = {}
    for what, argv in (("list --json (cold catalog)", ["list", "--json"]), *COMMANDS):
        runs[what] = run_command(argv, claude, workspace, scratch, pythonpath=pythonpath, limit=limit,
                                 timeout=BASELINE_TIMEOUT_S)
        done = runs[what]
        log(f"long_run: {label}: {what}: peak {done.peak / 2**20:,.0f} MB in {done.seconds:.1f} s"
            + (f" ({done.stopped})" if done.stopped else ""))
    return runs


def run(store, report, *, quick: bool, log) -> None:
    size = QUICK_BYTES if quick else FULL_BYTES
    folder = stores.STORES_DIR / f"long-run-v{GENERATOR_VERSION}-{size}"
    head, tail = _records(0, "/x")
    big = build_session(folder / "big", size - len(head) - len(tail))
    idle = build_session(folder / "idle", IDLE_RUN)
    file_size = next((big[0] / "projects").rglob("*.jsonl")).stat().st_size
    base = memory.baseline_source(log, BASELINE_COMMIT)
    section = report.section("long_run", f"A {size // 2**20} MB Claude Code session with one run without token "
                                         "breaks in a dropped turn")
    with tempfile.TemporaryDirectory(prefix="reprise-long-run-", dir=stores.STORES_DIR) as temp:
        work = Path(temp)
        results = {}
        for label, pythonpath in (("ours", None), ("baseline", base)):
            results[label] = (measure(*idle, work, f"{label}-idle", pythonpath, log),
                              measure(*big, work, label, pythonpath, log))
    for what in results["ours"][1]:
        cells = []
        for label in ("ours", "baseline"):
            quiet, loud = results[label][0][what], results[label][1][what]
            above = max(loud.peak - quiet.peak, 0)
            cells.append((above, loud, f"{report.mb(above)} ({above / file_size:.2f}× size) in "
                          f"{report.seconds(loud.seconds)}" + (f", stopped: {loud.stopped}" if loud.stopped else "")))
        (ours_above, ours, ours_text), (base_above, theirs, base_text) = cells
        section.row(what, ours_text, base_text, report.ratio(base_above, ours_above),
                    f"< {TARGET_RATIO:g}× size above idle",
                    ours_above < TARGET_RATIO * file_size and not ours.stopped)
        section.data[what] = {"file_size": file_size, "ours_above_idle": ours_above, "ours_seconds": ours.seconds,
                              "ours_peak": ours.peak, "baseline_above_idle": base_above,
                              "baseline_seconds": theirs.seconds, "baseline_peak": theirs.peak,
                              "baseline_stopped": theirs.stopped}
    section.note(f"The session: {file_size:,} bytes, five turns; the second turn's reply is one text block of "
                 f"{RUN_CHAR!r} repeated, dropped by the trim. Peak above idle = the command's ru_maxrss (os.wait4) "
                 f"minus the same command's on the same session with a {IDLE_RUN // 1024} KB run.")
    section.note(f"Baseline: commit {BASELINE_COMMIT}'s code by the same interpreter, under a "
                 f"{BASELINE_LIMIT // 2**30} GB address-space limit and a {BASELINE_TIMEOUT_S} s timeout "
                 "(a stopped command's figures are what it had reached). What changed: tokens.count_tokens cuts a "
                 "run of one character class of 4,096 characters or more into pieces of 4,096 before tiktoken, "
                 "which held about 60 bytes a character of one piece.")
