"""Reprise's trash for Codex rollouts: `rm` moves a rollout out of the Codex root into the
workspace's trash in Reprise's data folder (`workspaces/<key>/reprise/trash/codex/`), `trash
restore` puts it back in its date folder, byte for byte, and `purge` deletes trashed ones for good.

The moves are every agent file's (`file_trash.py`: copy, fsync, verify, record, audit, and only then
unlink; restore refuses while anything is at the recorded place). A rollout has no sidecar folder.
Codex's SQLite is never touched: its `threads` table keeps the old path, and while the rollout is
in the trash `codex resume ID` fails ("no rollout found for thread id"); once restored it resumes
with its whole history (checked with the real client, tests/fixtures/codex-store/README.md).
"""

from __future__ import annotations

import re
from pathlib import Path

from ..file_trash import AgentFileTrash
from .layout import ARCHIVED, is_session_id, session_id_of

_DAY = re.compile(r"\d{4}/\d{2}/\d{2}")

class CodexTrash(AgentFileTrash):
    """The trash of Codex rollouts in Reprise's data folder (`paths`: OwnPaths of "codex"), each
    as `<id>.jsonl`."""

    agent = "Codex"
    source = "codex"

    def is_session_id(self, text: str) -> bool:
        return is_session_id(text)

    def is_session_file(self, path: Path, session_id: str) -> bool:
        return session_id_of(path.name) == session_id

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        """A rollout of the id in a `sessions/YYYY/MM/DD` folder or in `archived_sessions/` of `root`."""
        if not self.is_session_file(target, session_id):
            return False
        if target.parent == root / ARCHIVED:
            return True
        try:
            day = target.parent.relative_to(root / "sessions")
        except ValueError:
            return False
        return _DAY.fullmatch(day.as_posix()) is not None
