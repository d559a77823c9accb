"""What bench/search.py and bench/cold_start.py share: issue 27's store, whole processes timed to
the end (wall, CPU of the process and its children, the largest process's peak RSS, the first
byte it printed), Reprise's and fast-resume's environments over the store, and the references
measured in the same run (one `json.loads` pass over every line, the raw bytes of every file, a
stat of every file, `python -c pass`, `import textual.app`).

fast-resume (2.14.0, from PyPI) is installed into its own venv under bench/.venvs/ (git-ignored)
on the first run; it is a native binary (`fr`) that reads `~/.claude/projects` and
`~/.codex/sessions` under HOME and keeps its Tantivy index under `$XDG_CACHE_HOME/fast-resume`, so
it runs with a HOME of its own whose `.claude` and `.codex` are links to the store. It runs in a
network namespace of its own (`unshare -n`) where the machine allows it, so it cannot reach out.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import mixed_store
from .json_parsers import passes

PROJECT = Path(__file__).resolve().parent.parent
VENVS = Path(__file__).resolve().parent / ".venvs"
FAST_RESUME = "fast-resume==2.14.0"
LAUNCH = "import sys; from reprise.tui.cli import main; sys.exit(main())"   # what the `reprise` script runs
RARE = "ExporterError"       # an identifier in a few per cent of the store's files (code in replies)
COMMON = "parser"            # a word in most of the store's files
TUI_SIZE = (100, 30)
EXIT_GRACE_S = 1.0   # how long output is read after the process ended
LEFT_RUNNING: list[str] = []   # the runs that left a process holding their output or running
OUTLIVED_WAIT_S = 120.0   # how long a run's leftover processes are waited for (their CPU is counted)
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class Run:
    """One whole process, timed from the fork to its end."""

    wall: float
    cpu: float               # user + system of the process and every child it waited for
    max_rss: int             # bytes: the largest single process's peak
    first_output: float | None   # seconds to its first byte on stdout
    first_error: float | None    # seconds to its first byte on stderr (progress, notices)
    stdout: bytes
    stderr: bytes
    code: int
    left_running: bool = False   # something it started still held its output, or still ran, after it ended
    outlived_cpu: float = 0.0    # of `cpu`: the CPU of processes it started that outlived it


def run(argv: list[str], env: dict[str, str], cwd: Path, *, check: bool = True) -> Run:
    """Run `argv` to its end: wall, CPU and peak RSS, and when its first byte reached stdout and
    stderr (pipes, read as it writes). Its end is its own exit (a pidfd). CPU and RSS take in every
    process it started: those it waited for (wait4's figures), and those that outlived it (a
    forkserver, its workers: this process is their subreaper, and waits for them up to
    OUTLIVED_WAIT_S). A process still holding its pipes a grace second after it ended, or still
    running after that wait, is reported (`left_running`)."""
    before = _own_children()
    started = time.perf_counter()
    child = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    out_end, err_end = child.stdout.fileno(), child.stderr.fileno()
    exited = os.pidfd_open(child.pid)
    streams = {out_end: bytearray(), err_end: bytearray()}
    first: dict[int, float] = {}
    open_ends = {out_end, err_end}
    ended: float | None = None
    usage = status = None
    try:
        while open_ends or ended is None:
            waiting = list(open_ends) + ([exited] if ended is None else [])
            timeout = None if ended is None else max(0.0, ended + EXIT_GRACE_S - time.perf_counter())
            ready = select.select(waiting, [], [], timeout)[0]
            if not ready and ended is not None:
                break   # it ended, and something it started still holds its output
            for descriptor in ready:
                if descriptor == exited:
                    _, status, usage = os.wait4(child.pid, 0)
                    ended = time.perf_counter()
                    continue
                chunk = os.read(descriptor, 1 << 16)
                if not chunk:
                    open_ends.discard(descriptor)
                    continue
                first.setdefault(descriptor, time.perf_counter() - started)
                streams[descriptor] += chunk
    finally:
        os.close(exited)
    assert ended is not None and usage is not None and status is not None
    child.returncode = os.waitstatus_to_exitcode(status)
    child.stdout.close()
    child.stderr.close()
    out, err = bytes(streams[out_end]), bytes(streams[err_end])
    outlived_cpu, outlived_rss, still_running = _wait_for_outliving(before)
    if open_ends or still_running:
        LEFT_RUNNING.append(" ".join(argv[3:] if argv[:2] == [sys.executable, "-c"] else argv))
    if check and child.returncode not in (0, 1):   # 1: a search that found nothing
        raise RuntimeError(f"{argv} exited with {child.returncode}: {err[-2000:].decode(errors='replace')}")
    return Run(ended - started, usage.ru_utime + usage.ru_stime + outlived_cpu,
               max(usage.ru_maxrss, outlived_rss) * 1024, first.get(out_end), first.get(err_end), out, err,
               child.returncode, bool(open_ends) or still_running, outlived_cpu)


@functools.cache
def _subreaper() -> None:
    """Make this process the reaper of its descendants' orphans (Linux's PR_SET_CHILD_SUBREAPER),
    so that what a measured process leaves running can be waited for and counted."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def _own_children() -> set[int]:
    """The pids whose parent is this process; zombies among them are reaped (and left out)."""
    _subreaper()
    children = set()
    for pid, state in _children().items():
        if state == "Z":
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        else:
            children.add(pid)
    return children


def _children() -> dict[int, str]:
    """This process's children (zombies included) and the state letter of each, from /proc."""
    mine = str(os.getpid())
    children = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()   # after the command's name, in parentheses
        except OSError:
            continue
        if fields[1] == mine:
            children[int(entry.name)] = fields[0]
    return children


def _wait_for_outliving(before: set[int]) -> tuple[float, int, bool]:
    """Wait (up to OUTLIVED_WAIT_S) for the processes a run left behind, now this process's
    children: their CPU seconds, their largest peak RSS (KB), and whether any still runs."""
    cpu, rss = 0.0, 0
    deadline = time.perf_counter() + OUTLIVED_WAIT_S
    while True:
        left = {pid: _pidfd(pid) for pid in _children().keys() - before}
        ends = {fd: pid for pid, fd in left.items() if fd is not None}
        if not left:
            return cpu, rss, False
        try:
            remaining = deadline - time.perf_counter()
            if remaining <= 0:
                return cpu, rss, True
            for fd in select.select(list(ends), [], [], remaining)[0] if ends else []:
                _, _, usage = os.wait4(ends[fd], 0)
                cpu += usage.ru_utime + usage.ru_stime
                rss = max(rss, usage.ru_maxrss)
        finally:
            for fd in ends:
                os.close(fd)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        return None


def load() -> float:
    """The 1-minute load average now."""
    return os.getloadavg()[0]


def folder_bytes(folder: Path) -> tuple[int, list[tuple[str, int]]]:
    """Bytes of every file under `folder`, and each file's name and size (largest first)."""
    files = [(str(p.relative_to(folder)), p.stat().st_size) for p in folder.rglob("*") if p.is_file()]
    return sum(size for _, size in files), sorted(files, key=lambda f: -f[1])


# --- the store -----------------------------------------------------------------------------------

@functools.cache
def store(quick: bool) -> mixed_store.MixedStore:
    return mixed_store.build(quick=quick, log=_log)


_log: Callable[[str], None] = print


def set_log(log: Callable[[str], None]) -> None:
    global _log
    _log = log


# --- Reprise -------------------------------------------------------------------------------------

class Reprise:
    """This checkout's `reprise` over the store, with state, data and config of its own under a
    scratch folder; each `fresh_cache()` is a new REPRISE_CACHE_DIR (a first run ever)."""

    def __init__(self, mixed: mixed_store.MixedStore, scratch: Path):
        self.scratch = scratch
        self.caches = 0
        for name in ("fractal", "home", "xdg"):
            (scratch / name).mkdir(parents=True, exist_ok=True)
        self.base = {key: value for key, value in os.environ.items()
                     if not key.startswith(("REPRISE_", "CLAUDE_", "CODEX_", "FRACTAL_"))}
        self.base.update(REPRISE_STATE_DIR=str(scratch / "fractal"), REPRISE_DATA_DIR=str(scratch / "data"),
                         REPRISE_CONFIG=str(scratch / "config.toml"), CLAUDE_CONFIG_DIR=str(mixed.claude.root),
                         CODEX_HOME=str(mixed.codex.root), HOME=str(scratch / "home"),
                         XDG_CONFIG_HOME=str(scratch / "xdg"))
        self.base.pop("PYTHONDONTWRITEBYTECODE", None)
        self.env = self.fresh_cache()

    def fresh_cache(self) -> dict[str, str]:
        self.caches += 1
        cache = self.scratch / f"cache-{self.caches}"
        return {**self.base, "REPRISE_CACHE_DIR": str(cache)}

    @staticmethod
    def argv(*args: str) -> list[str]:
        return [sys.executable, "-c", LAUNCH, *args]

    def run(self, env: dict[str, str], *args: str) -> Run:
        return run(self.argv(*args), env, self.scratch)


# --- fast-resume ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class FastResume:
    """fast-resume's `fr` over the store: a HOME whose .claude and .codex link to it, an index under
    a scratch XDG_CACHE_HOME (`fresh_cache()`: a first run ever)."""

    binary: Path
    home: Path
    scratch: Path
    netless: bool    # run in a network namespace of its own

    def fresh_cache(self, name: str) -> dict[str, str]:
        cache = self.scratch / f"xdg-{name}"
        shutil.rmtree(cache, ignore_errors=True)
        cache.mkdir(parents=True)
        return {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "XDG_CACHE_HOME": str(cache),
                "LANG": os.environ.get("LANG", "C.UTF-8")}

    def argv(self, *args: str) -> list[str]:
        return (["unshare", "-n"] if self.netless else []) + [str(self.binary), *args]

    def run(self, env: dict[str, str], *args: str) -> Run:
        return run(self.argv(*args), env, self.scratch)

    @staticmethod
    def index_bytes(env: dict[str, str]) -> int:
        return folder_bytes(Path(env["XDG_CACHE_HOME"]) / "fast-resume")[0]


def fast_resume(mixed: mixed_store.MixedStore, scratch: Path, log: Callable[[str], None]) -> FastResume | str:
    """fast-resume over the store, installed from PyPI into bench/.venvs/ on first use; or why not."""
    venv = VENVS / "fast-resume"
    binary = venv / "bin" / "fr"
    if not binary.exists():
        log(f"  installing {FAST_RESUME} into {venv} ...")
        shutil.rmtree(venv, ignore_errors=True)
        made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
        if made.returncode:
            return f"no venv for it: {made.stderr.strip()[-300:]}"
        pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", FAST_RESUME], capture_output=True,
                             text=True)
        if pip.returncode or not binary.exists():
            return f"`pip install {FAST_RESUME}` failed: {(pip.stderr or pip.stdout).strip()[-300:]}"
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
    if version.returncode or "2.14.0" not in version.stdout:
        return f"`fr --version` said {version.stdout.strip() or version.stderr.strip()[-200:]!r}"
    home = scratch / "fr-home"
    home.mkdir(parents=True, exist_ok=True)
    for name, target in ((".claude", mixed.claude.root), (".codex", mixed.codex.root)):
        link = home / name
        if link.is_symlink():
            link.unlink()
        link.symlink_to(target, target_is_directory=True)
    netless = subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    return FastResume(binary, home, scratch, netless)


MEASURES = ("CPU = user + system of the process and of every process it started (those it waited for, from "
            "wait4, and those that outlived it, waited for by the bench as their subreaper), which other work on the "
            "shared machine does not inflate; peak RSS = the largest single process of the tree; the json.loads "
            "passes (bench/json_parsers.py's) are serial, in the bench's process, from the page cache, best of 2.")


def close_section(section: Any, loads: list[str], found: FastResume | str) -> None:
    """The notes every section of issue 27's table ends with: the load at each step, how fast-resume ran."""
    section.note("1-minute load average at each step: " + ", ".join(loads) + f" ({os.cpu_count()} cores).")
    section.note(fast_resume_note(found))
    if LEFT_RUNNING:
        section.note(f"{len(LEFT_RUNNING)} run(s) left a process that still held their stdout or stderr "
                     f"{EXIT_GRACE_S:.0f} s after they ended (their pipes were then closed) or still ran "
                     f"{OUTLIVED_WAIT_S:.0f} s after: "
                     + "; ".join(sorted(set(LEFT_RUNNING))[:4]))
        LEFT_RUNNING.clear()


def fast_resume_note(found: FastResume | str) -> str:
    if isinstance(found, str):
        return f"fast-resume's rows are left out: {found}."
    return (f"fast-resume: `{FAST_RESUME}` from PyPI (a native `fr` binary in a wheel) in its own venv under "
            f"bench/.venvs/, run as `fr --json …` (its search without the TUI; `--all` to list every session) "
            f"with HOME a scratch folder whose .claude and .codex link to the store and a fresh XDG_CACHE_HOME for "
            f"a first run (it then scans the store and builds its Tantivy index before answering; a warm run "
            f"does its incremental refresh, a stat of every file, then answers from the index)"
            + ("; in a network namespace of its own (`unshare -n`): it needs no network. " if found.netless else
               "; not in a network namespace (`unshare -n` is not allowed here). ")
            + "It reads Codex's sessions/ only (not archived_sessions/) and skips Claude Code's subagent files; "
              "its hits are sessions, Reprise's are turns.")


# --- references ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Pass:
    wall: float
    cpu: float
    bytes: int
    lines: int


@functools.cache
def json_pass(quick: bool, files: tuple[Path, ...] | None = None, rounds: int = 2) -> Pass:
    """One serial stdlib `json.loads` pass over every line of these files (default: the store's),
    from the page cache: best of `rounds` (CPU of this process)."""
    chosen = list(files) if files is not None else store(quick).files()
    passes(chosen, None)   # into the page cache
    best = min((passes(chosen, json.loads) for _ in range(rounds)), key=lambda p: p[3])
    return Pass(best[0], best[3], best[2], best[1])


@functools.cache
def raw_pass(quick: bool, rounds: int = 3) -> Pass:
    """The raw bytes of every file, read in 1 MB blocks (best of `rounds`)."""
    files = store(quick).files()
    best: Pass | None = None
    for _ in range(rounds):
        started, cpu, total = time.perf_counter(), time.process_time(), 0
        for path in files:
            with open(path, "rb", buffering=0) as handle:
                while block := handle.read(1 << 20):
                    total += len(block)
        done = Pass(time.perf_counter() - started, time.process_time() - cpu, total, 0)
        best = done if best is None or done.cpu < best.cpu else best
    assert best is not None
    return best


@functools.cache
def stat_pass(quick: bool, rounds: int = 5) -> Pass:
    """Walk the store's folders and stat every file (what a warm listing must do at least)."""
    mixed = store(quick)
    roots = [mixed.claude.root / "projects", mixed.codex.root / "sessions", mixed.codex.root / "archived_sessions"]
    best: Pass | None = None
    for _ in range(rounds):
        started, cpu, count = time.perf_counter(), time.process_time(), 0
        for root in roots:
            for folder, _, names in os.walk(root):
                for name in names:
                    os.stat(os.path.join(folder, name))
                    count += 1
        done = Pass(time.perf_counter() - started, time.process_time() - cpu, 0, count)
        best = done if best is None or done.wall < best.wall else best
    assert best is not None
    return best


def best_process(argv: list[str], env: dict[str, str], cwd: Path, repeats: int) -> Run:
    """The fastest (wall) of `repeats` runs, after one uncounted warm-up run."""
    run(argv, env, cwd)
    return min((run(argv, env, cwd) for _ in range(repeats)), key=lambda r: r.wall)


@functools.cache
def bare_python(repeats: int) -> Run:
    return best_process([sys.executable, "-c", "pass"], dict(os.environ), PROJECT, repeats)


@functools.cache
def import_textual(repeats: int) -> Run:
    return best_process([sys.executable, "-c", "import textual.app"], dict(os.environ), PROJECT, repeats)


def times(value: float, reference: float) -> str:
    """`value` as a multiple of `reference`."""
    return f"{value / reference:.2f}× the reference" if reference else "–"
