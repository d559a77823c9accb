"""Reprise's trash for Claude Code sessions (`file_trash.py`: copy, fsync, verify, record, audit,
and only then unlink; restore refuses while anything is at the recorded place): a session file
`projects/<slug>/<uuid>.jsonl` goes with its sidecar folder `<uuid>/` (subagent transcripts, tool
results) into the workspace's trash in Reprise's data folder (`workspaces/<key>/reprise/trash/claude/`).
"""

from __future__ import annotations

from pathlib import Path

from ..file_trash import AgentFileTrash
from .layout import SUFFIX, is_session_id


class ClaudeTrash(AgentFileTrash):
    """The trash of Claude Code sessions in Reprise's data folder (`paths`: OwnPaths of "claude")."""

    agent = "Claude Code"
    source = "claude"

    def is_session_id(self, text: str) -> bool:
        return is_session_id(text)

    def is_session_file(self, path: Path, session_id: str) -> bool:
        return path.name == f"{session_id}{SUFFIX}"

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        """A file named by the id in a project folder (`projects/<slug>/`) of `root`."""
        return self.is_session_file(target, session_id) and target.parent.parent == root / "projects"

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        """`<uuid>/` beside the session file: its subagents' transcripts and tool results."""
        return session_file.parent / session_id
