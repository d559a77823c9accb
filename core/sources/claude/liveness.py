"""Whether a Claude Code session is being written now. Claude Code leaves no pending marker and
opens its session file only to append a line (2.1.332 holds no descriptor on it during a turn),
so a session counts as live when any of these holds:

1. its newest record is under `RECENT_S` old;
2. a live Claude Code process has registered it: Claude Code keeps `<root>/sessions/<pid>.json`
   (`pid`, `sessionId`, `procStart` in clock ticks, `pidDomain` "linux:<machine id>:pid:[<pid
   namespace>]") while it runs and removes it at exit; a record whose process is gone, whose pid
   was reused (another start time), or that comes from another machine or pid namespace (which
   cannot be checked from here) does not count;
3. a process was started with its id after `--resume`, `-r` or `--session-id`;
4. a process holds its file open for writing.

Processes are seen through /proc (Linux): unreadable entries are skipped quietly, and this
process never counts. Without /proc only the first rule applies.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ...processes import process_stat
from ...session_files import ReadProblem, read_head
from .. import agent_json

RECENT_S = 5 * 60.0
MAX_FDS_PER_PROCESS = 65536
MAX_REGISTRY_BYTES = 65536
MAX_REGISTRY_FILES = 4096
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
              claude_root: Path | None = None, scan: ProcessScan | None = None) -> Writer | None:
    """Who is probably writing the session file `path` whose newest record is dated `newest_ts`
    (seconds since the epoch; None when no record is dated), or None. The session id defaults to
    the file's name and the Claude root to the folder above `projects/<slug>/`. `scan` is one look
    at the processes shared by many sessions (a listing); without it, /proc is read for this one."""
    recent = recently_written(newest_ts, now)
    if recent is not None:
        return recent
    path = Path(path)
    if scan is None:
        root = claude_root if claude_root is not None else _root_of(path)
        scan = scan_processes(roots=[root] if root is not None else [])
    return scan.writer(path, session_id=session_id if session_id is not None else path.stem)


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
    """One look at the running processes (other than this one): the sessions live Claude Code
    processes registered (id -> (pid, registry file)), the ids processes were started with
    (id -> pid), and the session files held open for writing (real path -> pid)."""

    registered: dict[str, tuple[int, str]] = field(default_factory=dict)
    started_with: dict[str, int] = field(default_factory=dict)
    writing: dict[str, int] = field(default_factory=dict)

    def writer(self, path: Path, *, session_id: str | None = None) -> Writer | None:
        if session_id is not None and session_id in self.registered:
            pid, record = self.registered[session_id]
            return _process(pid, f"is Claude Code running this session ({record})")
        if session_id is not None and session_id in self.started_with:
            return _process(self.started_with[session_id], "was started with this session's id")
        holder = self.writing.get(os.path.realpath(path))
        return _process(holder, "holds the file open for writing") if holder is not None else None


def scan_processes(*, roots: Iterable[Path] = (), suffix: str = ".jsonl") -> ProcessScan:
    """Read /proc once (and the session registry of each Claude root in `roots`): every file named
    `*suffix` a process holds open for writing, every id after a Claude Code id flag in a process's
    arguments, every session a live Claude Code registered. Unreadable entries are skipped quietly;
    no /proc gives an empty scan."""
    scan = ProcessScan()
    if not os.path.isdir(_PROC / "self"):
        return scan
    for root in roots:
        for session_id, pid, record in _registered(Path(root)):
            scan.registered.setdefault(session_id, (pid, record))
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


def _root_of(path: Path) -> Path | None:
    """The Claude root of `<root>/projects/<slug>/<id>.jsonl`, else None."""
    return path.parents[2] if len(path.parents) > 2 and path.parent.parent.name == "projects" else None


def _registered(root: Path) -> Iterator[tuple[str, int, str]]:
    """(session id, pid, record file) of each record in `<root>/sessions/` whose Claude Code
    process is alive here: the same machine and pid namespace, the same start time."""
    folder = root / "sessions"
    try:
        names = sorted(name for name in os.listdir(folder) if name.endswith(".json"))[:MAX_REGISTRY_FILES]
    except OSError:
        return
    domain = _pid_domain()
    for name in names:
        record = _registry_record(folder / name)
        if record is None:
            continue
        pid, session_id = record.get("pid"), record.get("sessionId")
        if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 1 or not isinstance(session_id, str):
            continue
        their_domain = record.get("pidDomain")
        if isinstance(their_domain, str) and their_domain != domain:
            continue
        info = process_stat(pid)
        if info is None or info[1] in ("Z", "X"):
            continue
        started = record.get("procStart")
        if isinstance(started, str) and started.isdigit() and int(started) != info[2]:
            continue
        yield session_id, pid, str(folder / name)


def _registry_record(path: Path) -> dict[str, object] | None:
    try:
        data, size = read_head(path, MAX_REGISTRY_BYTES, follow=False)
        record = agent_json.loads(data) if size <= MAX_REGISTRY_BYTES else None
    except (OSError, ValueError, RecursionError, ReadProblem):
        return None
    return record if isinstance(record, dict) else None


def _pid_domain() -> str | None:
    """This process's pid domain as Claude Code writes it: "linux:<machine id>:pid:[<namespace>]"."""
    try:
        machine = Path("/etc/machine-id").read_text("ascii").strip().lower()
        namespace = os.readlink("/proc/self/ns/pid")
    except (OSError, UnicodeDecodeError):
        return None
    return f"linux:{machine}:{namespace}"


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
    """The values of `--resume ID`, `-r ID`, `--session-id ID` (or `--flag=ID`) in the arguments of a
    Claude Code process (one whose program, or the script it runs, is named claude…): another
    program's `--resume` says nothing about this session."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if not any(os.path.basename(raw).startswith(b"claude") for raw in argv[:2]):
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
