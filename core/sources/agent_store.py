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


def recorded_folder(value: str | None) -> str | None:
    """The folder an agent recorded for a session, when it is one: an absolute path without a NUL.
    Agents record absolute folders, so anything else (`..`, ``, `a\\0b`) is an unknown folder, never
    resolved against the folder Reprise runs in."""
    if not value or "\0" in value or not value.startswith("/"):
        return None
    return value


def odd_folder_note(value: str) -> str:
    """A listing's warning for a recorded folder `recorded_folder` refused."""
    shown = value[:80].encode("unicode_escape").decode("ascii")
    return f"the folder it records ({shown!r}) is not an absolute path: its folder is unknown"


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
