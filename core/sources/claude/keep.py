"""Keeping a Claude Code session where Claude Code's age sweep cannot reach it (`file_keep.py`:
verified copies into the session's archive, listed and read back once the original is gone): the
session file `<uuid>.jsonl` and its sidecar files, those directly in `<uuid>/subagents/` and
`<uuid>/tool-results/`.

Claude Code 2.1.332's sweep (run for real) removes a session's `<uuid>/` folder with its old
session file, and a file of `tool-results/` by that file's own age even while the session is
fresh: both are kept here for that reason.
"""

from __future__ import annotations

from pathlib import Path

from ...archive import Archive
from ...paths import SessionRef
from ..file_keep import SESSION, FileKeep, KeepResult, kept_session, kept_sessions
from .layout import SUFFIX

__all__ = ["SIDECAR_FOLDERS", "KEEP", "keep", "kept_path", "kept_session", "kept_sessions", "read_kept"]

SIDECAR_FOLDERS = ("subagents", "tool-results")


def _misnamed(path: Path, session_id: str) -> str | None:
    name = f"{session_id}{SUFFIX}"
    return None if path.name == name else name


def _sidecar_folders(session_file: Path, session_id: str) -> list[tuple[str, Path]]:
    return [(sub, session_file.parent / session_id / sub) for sub in SIDECAR_FOLDERS]


KEEP = FileKeep("Claude Code", _misnamed, _sidecar_folders)


def keep(archive: Archive, ref: SessionRef, session_file: Path, store_root: Path) -> KeepResult:
    """Copy the Claude Code session `ref` (its file `session_file` under the Claude root
    `store_root`, named `<session id>.jsonl`) and its sidecars into its archive (`FileKeep.keep`)."""
    return KEEP.keep(archive, ref, session_file, store_root)


def read_kept(archive: Archive, ref: SessionRef, part: str = SESSION) -> bytes:
    """The newest kept bytes of the session file (or of the sidecar `part`), verified."""
    return KEEP.read_kept(archive, ref, part)


def kept_path(archive: Archive, ref: SessionRef, part: str = SESSION) -> Path:
    """Where the newest kept bytes of the session file (or of `part`) lie (unverified)."""
    return KEEP.kept_path(archive, ref, part)
