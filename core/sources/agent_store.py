"""What every source of another agent's store (Claude Code, Codex) does alike: each session file
names its own folder, so there is no workspace to record, and Reprise's metadata of a session lives
in Reprise's own files (`OwnFiles`), never in the agent's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import NotFoundError
from ..own_files import OwnFiles, SessionMeta
from ..paths import SessionRef
from .base import SessionSource


class AgentStoreSource(SessionSource):
    own_files: OwnFiles
    window_per_folder = False   # the agent's window comes from its settings and the session, not the folder

    def has_sessions(self, key: str) -> bool:
        return False   # nothing to record: each file names its own folder

    def workspace_path(self, key: str) -> str | None:
        return None

    def record_workspace(self, key: str, folder: Path) -> None:
        return None

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        return self.own_files.read_meta(ref)

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        if not self.exists(ref):
            raise NotFoundError(f"No {self.label} session {ref.session_id}.")
        return self.own_files.update_meta(ref, change)
