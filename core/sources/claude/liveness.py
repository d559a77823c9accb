"""Whether a Claude Code session is being written now: Claude Code leaves no pending marker, so a
session counts as live while its newest record is under `RECENT_S` old, or while a process holds
its file open for writing, or runs with its id after `--resume`/`--session-id` (an interactive
Claude Code waiting for its user's next prompt; it opens the file only to append a line).

Processes are seen through /proc (Linux): each process's `fd/` links are read where readable and
the others skipped quietly; this process is never counted. Elsewhere only the age rule applies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

RECENT_S = 5 * 60.0
MAX_FDS_PER_PROCESS = 65536
_PROC = Path("/proc")
_ID_FLAGS = ("--resume", "-r", "--session-id")
_WRITE_MODES = (os.O_WRONLY, os.O_RDWR)


@dataclass(frozen=True, slots=True)
class Writer:
    """Why a session counts as being written: a process (`pid`, `name`), or a recent record (`age_s`)."""

    why: str
    pid: int | None = None
    name: str | None = None
    age_s: float | None = None


def writer_of(path: Path, newest_ts: float | None, now: float, *, session_id: str | None = None,
              scan: ProcessScan | None = None) -> Writer | None:
    """Who is probably writing the session file `path` whose newest record is dated `newest_ts`
    (seconds since the epoch; None when no record is dated), or None. With `session_id`, a process
    started with `--resume <id>` or `--session-id <id>` counts too. `scan` is one look at the
    processes shared by many sessions (a listing); without it, /proc is read for this one."""
    recent = recently_written(newest_ts, now)
    if recent is not None:
        return recent
    return (scan if scan is not None else scan_processes()).writer(path, session_id=session_id)


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
    """One look at every readable process (other than this one): the session files each holds open
    for writing (real path -> pid), and the session ids each was started with (id -> pid)."""

    writing: dict[str, int] = field(default_factory=dict)
    started_with: dict[str, int] = field(default_factory=dict)

    def writer(self, path: Path, *, session_id: str | None = None) -> Writer | None:
        if session_id is not None and session_id in self.started_with:
            return _process(self.started_with[session_id], "was started with this session's id")
        pid = self.writing.get(os.path.realpath(path))
        return _process(pid, "holds the file open for writing") if pid is not None else None


def scan_processes(*, suffix: str = ".jsonl") -> ProcessScan:
    """Read /proc once: every file named `*suffix` a process holds open for writing, and every id
    after a Claude Code id flag in a process's arguments. Unreadable processes are skipped quietly;
    no /proc gives an empty scan."""
    scan = ProcessScan()
    me = os.getpid()
    for pid in _pids():
        if pid == me:
            continue
        for session_id in _ids_in_argv(pid):
            scan.started_with.setdefault(session_id, pid)
        for target in _written_files(pid, suffix):
            scan.writing.setdefault(target, pid)
    return scan


def process_writing(path: Path, *, session_id: str | None = None) -> Writer | None:
    """The first process (other than this one) holding `path` open for writing, or started with
    `session_id` after a Claude Code id flag; None when none is, or /proc cannot be read."""
    return scan_processes(suffix=os.path.realpath(path).rpartition("/")[2]).writer(path, session_id=session_id)


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


def _ids_in_argv(pid: int) -> Iterator[str]:
    """The values of `--resume ID`, `-r ID`, `--session-id ID` (or `--flag=ID`) in a process's arguments."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    previous = ""
    for raw in argv:
        arg = raw.decode("utf-8", "surrogateescape")
        if previous in _ID_FLAGS and arg:
            yield arg
        flag, equals, value = arg.partition("=")
        if equals and flag in _ID_FLAGS and value:
            yield value
        previous = arg


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
