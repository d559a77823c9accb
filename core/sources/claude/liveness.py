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

The first and the last rule, and the look at /proc, are every file-writing agent's
(`file_writers.py`); the registry and the id flags are Claude Code's, given to it as hooks.
Processes are seen through /proc (Linux): unreadable entries are skipped quietly, and this
process never counts. Without /proc only the first rule applies.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from ...processes import process_stat
from ...session_files import ReadProblem, read_head
from .. import agent_json, file_writers
from ..file_writers import RECENT_S, ProcessScan, Writer, recently_written

__all__ = ["RECENT_S", "ProcessScan", "Writer", "process_writing", "recently_written", "scan_processes", "writer_of"]

MAX_REGISTRY_BYTES = 65536
MAX_REGISTRY_FILES = 4096
_ID_FLAGS = ("--resume", "-r", "--session-id")


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


def scan_processes(*, roots: Iterable[Path] = (), suffix: str = ".jsonl") -> ProcessScan:
    """Read /proc once (and the session registry of each Claude root in `roots`): every file named
    `*suffix` a process holds open for writing, every id after a Claude Code id flag in a process's
    arguments, every session a live Claude Code registered. Unreadable entries are skipped quietly;
    no /proc gives an empty scan."""
    def registered() -> Iterator[tuple[str, int, str]]:
        for root in roots:
            for session_id, pid, record in _registered(Path(root)):
                yield session_id, pid, f"is Claude Code running this session ({record})"

    return file_writers.scan_processes(suffix=suffix, registered=registered, ids_in_argv=_ids_in_argv)


def process_writing(path: Path, *, session_id: str | None = None) -> Writer | None:
    """The first process (other than this one) holding `path` open for writing, or started with
    `session_id` after a Claude Code id flag; None when none is, or /proc cannot be read."""
    return file_writers.process_writing(path, session_id=session_id, ids_in_argv=_ids_in_argv)


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
