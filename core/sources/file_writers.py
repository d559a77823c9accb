"""Whether an agent is writing a session file now, for an agent that leaves no pending marker: its
newest record is under `RECENT_S` old, or a process holds the file open for writing. An agent
that says more (Claude Code's registry of running sessions, the id after `--resume` on a command
line) passes that to `scan_processes` as hooks.

Processes are seen through /proc (Linux): unreadable entries are skipped quietly, and this
process never counts. Without /proc only the age rule applies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

RECENT_S = 5 * 60.0
MAX_FDS_PER_PROCESS = 65536
_PROC = Path("/proc")
_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)

# (session id, pid, how: "is Claude Code running this session (<its record>)") of each live process
# the agent's own registry names.
Registered = Callable[[], Iterable[tuple[str, int, str]]]
# The session ids a process (its pid) was started with, read from its command line.
IdsInArgv = Callable[[int], Iterable[str]]


@dataclass(frozen=True, slots=True)
class Writer:
    """Why a session counts as being written: a process (`pid`, `name`), or a recent record (`age_s`)."""

    why: str
    pid: int | None = None
    name: str | None = None
    age_s: float | None = None


def recently_written(newest_ts: float | None, now: float) -> Writer | None:
    """A Writer when the newest record is under `RECENT_S` old; a time further ahead than that
    (a wrong clock, or a hand-made file) counts as none."""
    if newest_ts is None:
        return None
    age = now - newest_ts
    if not -RECENT_S < age < RECENT_S:
        return None
    return Writer(f"its newest record was written {max(0, int(age))} s ago", age_s=age)


@dataclass(frozen=True, slots=True)
class ProcessScan:
    """One look at the running processes (other than this one): the sessions live agent processes
    registered (id -> (pid, how)), the ids processes were started with (id -> pid), and the
    session files held open for writing (real path -> pid)."""

    registered: dict[str, tuple[int, str]] = field(default_factory=dict)
    started_with: dict[str, int] = field(default_factory=dict)
    writing: dict[str, int] = field(default_factory=dict)

    def writer(self, path: Path, *, session_id: str | None = None) -> Writer | None:
        if session_id is not None and session_id in self.registered:
            pid, how = self.registered[session_id]
            return _process(pid, how)
        if session_id is not None and session_id in self.started_with:
            return _process(self.started_with[session_id], "was started with this session's id")
        holder = self.writing.get(os.path.realpath(path))
        return _process(holder, "holds the file open for writing") if holder is not None else None


def scan_processes(*, suffix: str = ".jsonl", registered: Registered | None = None,
                   ids_in_argv: IdsInArgv | None = None) -> ProcessScan:
    """Read /proc once: every file named `*suffix` a process holds open for writing, and with the
    agent's hooks, the sessions its registry names (`registered`) and the ids on each process's
    command line (`ids_in_argv`). Unreadable entries are skipped quietly; no /proc gives an empty
    scan."""
    scan = ProcessScan()
    if not os.path.isdir(_PROC / "self"):
        return scan
    if registered is not None:
        for session_id, pid, how in registered():
            scan.registered.setdefault(session_id, (pid, how))
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        if ids_in_argv is not None:
            for session_id in ids_in_argv(pid):
                scan.started_with.setdefault(session_id, pid)
        for target in _written_files(pid, suffix):
            scan.writing.setdefault(target, pid)
    return scan


def process_writing(path: Path, *, session_id: str | None = None,
                    ids_in_argv: IdsInArgv | None = None) -> Writer | None:
    """The first process (other than this one) holding `path` open for writing, or started with
    `session_id` (as `ids_in_argv` reads a command line); None when none is, or /proc cannot be read."""
    suffix = os.path.realpath(path).rpartition("/")[2]
    return scan_processes(suffix=suffix, ids_in_argv=ids_in_argv).writer(path, session_id=session_id)


def _pids() -> Iterator[int]:
    try:
        names = os.listdir(_PROC)
    except OSError:
        return
    for name in names:
        if name.isdigit():
            yield int(name)


def _written_files(pid: int, suffix: str) -> Iterator[str]:
    folder = f"/proc/{pid}/fd"
    try:
        fds = os.listdir(folder)
    except OSError:  # another user's process, or gone
        return
    for fd in fds[:MAX_FDS_PER_PROCESS]:
        try:
            target = os.readlink(f"{folder}/{fd}")
        except OSError:
            continue
        if target.endswith(suffix) and target.startswith("/") and _open_for_writing(pid, fd):
            yield target


def _open_for_writing(pid: int, fd: str) -> bool:
    """Whether the descriptor's access mode writes (`flags:` in fdinfo, octal); True when unknown."""
    try:
        text = Path(f"/proc/{pid}/fdinfo/{fd}").read_text("ascii", "replace")
    except OSError:
        return True
    for line in text.splitlines():
        if line.startswith("flags:"):
            with contextlib.suppress(ValueError, IndexError):
                return (int(line.split()[1], 8) & os.O_ACCMODE) in _WRITE_MODES
    return True


def _process(pid: int, how: str) -> Writer:
    name = _name(pid)
    shown = "".join(ch if ch.isprintable() else "?" for ch in name) if name else ""
    return Writer(f"pid {pid} ({shown}) {how}" if shown else f"pid {pid} {how}", pid, name)


def _name(pid: int) -> str | None:
    """The program's file name (its `exe` link where readable, else its `comm`)."""
    try:
        return os.path.basename(os.readlink(f"/proc/{pid}/exe")).removesuffix(" (deleted)")
    except OSError:
        pass
    try:
        return Path(f"/proc/{pid}/comm").read_text("utf-8", "replace").strip() or None
    except OSError:
        return None
