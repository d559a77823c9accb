"""Whether Gemini CLI is writing a session now. Gemini CLI appends each record with a fresh open,
write and close (`appendFileSync`), so it seldom holds a session file open: a session counts as live
when its newest message or `lastUpdated` is under a few minutes old, when a process holds its file
open for writing, or when a process was started on its id (`gemini --resume ID`, `--session-id ID`;
a resume by `latest` or by number names no id and is seen by the first two rules only). The rules are
every agent's that writes its own files (`file_writers.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..file_writers import Writer, process_writing, recently_written

__all__ = ["Writer", "ids_in_argv", "writer_of"]

ID_OPTIONS = frozenset({"--resume", "-r", "--session-id"})
MAX_CMDLINE_BYTES = 64 * 1024


def ids_in_argv(pid: int) -> Iterator[str]:
    """The session ids a Gemini CLI process was started with (`--resume ID`, `--session-id ID`, or
    `--resume=ID`), read from /proc/<pid>/cmdline; none for another program or an unreadable entry."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()[:MAX_CMDLINE_BYTES]
    except OSError:
        return
    argv = [item.decode("utf-8", "replace") for item in raw.split(b"\0") if item]
    if not any("gemini" in item.rsplit("/", 1)[-1] for item in argv[:3]):
        return
    for at, item in enumerate(argv):
        option, equals, value = item.partition("=")
        if equals and option in ID_OPTIONS:
            yield value
        elif item in ID_OPTIONS and at + 1 < len(argv):
            yield argv[at + 1]


def writer_of(path: Path, session_id: str, newest_ts: float | None, now: float) -> Writer | None:
    """Who is probably writing the session `session_id` whose file is `path` and whose newest record
    is dated `newest_ts` (seconds since the epoch; None when none is dated), or None."""
    return recently_written(newest_ts, now) or process_writing(path, session_id=session_id, ids_in_argv=ids_in_argv)
