"""What every source of another agent's store (Claude Code, Codex) does alike: each session file
names its own folder, so there is no workspace to record, and Reprise's metadata of a session lives
in Reprise's own files (`OwnFiles`), never in the agent's."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import cast

from ..errors import NotFoundError, RepriseError
from ..meter import RESUME
from ..own_files import OwnFiles, SessionMeta
from ..paths import SessionRef
from .base import SessionSource
from .roles import Metered


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

    def fork_estimate(self, ref: SessionRef, size: int) -> int | None:
        """A fork Reprise wrote, before its first turn: the next turn's estimate kept with it."""
        return None

    def resume_cost(self, ref: SessionRef, workspace: Path | None, size: int, mtime_ns: int,
                    listed_context: int = 0) -> int | None:
        """The next turn with an empty draft, resumed in the agent's own terminal UI (a fork's estimate
        until its first turn); the measured context the listing read when the file cannot be read now;
        None when the file is no longer the version listed."""
        forked = self.fork_estimate(ref, size)
        if forked:
            return forked
        try:
            opened = self.open(ref)
        except RepriseError:
            return listed_context or None
        if opened.size != size:
            return None
        meter = cast(Metered, self)   # each agent store that is asked for a resume cost is metered
        return meter.prepare_meter(opened, workspace, via=RESUME).with_message("").total or listed_context or None

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        if not self.exists(ref):
            raise NotFoundError(f"No {self.label} session {ref.session_id}.")
        return self.own_files.update_meta(ref, change)
