"""Whether Codex is writing a session now. A rollout counts as live when its newest record is
under a few minutes old, or when a process (other than this one) holds the file open for writing:
the two rules of every agent that writes its own files (`file_writers.py`); Codex keeps no
registry of running sessions outside its SQLite, which Reprise never opens.
"""

from __future__ import annotations

from pathlib import Path

from ..file_writers import Writer, process_writing, recently_written

__all__ = ["Writer", "writer_of"]


def writer_of(path: Path, newest_ts: float | None, now: float) -> Writer | None:
    """Who is probably writing the rollout `path` whose newest record is dated `newest_ts` (seconds
    since the epoch; None when no record is dated), or None."""
    return recently_written(newest_ts, now) or process_writing(path)
