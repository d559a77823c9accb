"""The names Codex gives sessions: `session_index.jsonl` under its root, one JSON line per rename
(`id`, `thread_name`, `updated_at`); the newest entry for an id wins (the latest `updated_at`,
else the later line). The file is small and read whole, at most once per change of its stat.
A named session's listing version includes the index's (see `listing.py`), so a rename shows at
the next listing.
"""

from __future__ import annotations

import os
from pathlib import Path

from ...session_files import ReadProblem, read_head
from .. import agent_json

MAX_INDEX_BYTES = 16 * 1024 * 1024


class SessionIndex:
    """The thread names of one Codex root, re-read when the index file changes."""

    def __init__(self, path: Path):
        self.path = path
        self._stat: tuple[int, int, int] | None = None
        self._names: dict[str, str] = {}

    def name_of(self, session_id: str) -> str | None:
        self._refresh()
        return self._names.get(session_id)

    def named(self) -> tuple[dict[str, str], int]:
        """({session id: name}, the index file's mtime_ns, 0 when there is none), as the file is now."""
        self._refresh()
        return self._names, self._stat[2] if self._stat is not None else 0

    def _refresh(self) -> None:
        try:
            info = os.stat(self.path)
        except OSError:
            self._stat, self._names = None, {}
            return
        stat = (info.st_ino, info.st_size, info.st_mtime_ns)
        if stat == self._stat:
            return
        self._stat = stat
        self._names = read_index(self.path)


def read_index(path: Path) -> dict[str, str]:
    """{session id: its newest thread name}; lines that are not entries are passed over. Anything
    else than a regular file (a FIFO would block every listing) names no session."""
    try:
        data, _ = read_head(path, MAX_INDEX_BYTES)
    except (OSError, ReadProblem):
        return {}
    newest: dict[str, tuple[str, int, str]] = {}
    for number, line in enumerate(data.splitlines()):
        try:
            entry = agent_json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict):
            continue
        session_id, name, updated = entry.get("id"), entry.get("thread_name"), entry.get("updated_at")
        if not isinstance(session_id, str) or not isinstance(name, str):
            continue
        key = (updated if isinstance(updated, str) else "", number, name)
        if session_id not in newest or key[:2] >= newest[session_id][:2]:
            newest[session_id] = key
    return {session_id: key[2] for session_id, key in newest.items() if key[2].strip()}
