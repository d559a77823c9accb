"""Keeping a Gemini CLI session where Gemini CLI's sweep (`retention.py`) cannot reach it
(`file_keep.py`: verified copies into the session's archive, listed and read back once the original is
gone): the session file `chats/session-<minute>-<id8>.jsonl`, its subagents' files (those directly in
`chats/<session id>/`) and its other files beside it (a resume's stubs), which the sweep deletes with it.
"""

from __future__ import annotations

from pathlib import Path

from ...archive import Archive
from ...paths import SessionRef
from ..file_keep import SESSION, FileKeep, KeepResult, kept_session, kept_sessions
from .trash import named_for, others_of

__all__ = ["KEEP", "keep", "kept_path", "kept_session", "kept_sessions", "read_kept"]

SUBAGENTS = "subagents"


def _misnamed(path: Path, session_id: str) -> str | None:
    return None if named_for(path, session_id) else f"session-<minute>-{session_id[:8]}.jsonl"


def _sidecar_folders(session_file: Path, session_id: str) -> list[tuple[str, Path]]:
    return [(SUBAGENTS, session_file.parent / session_id)]


KEEP = FileKeep("Gemini CLI", _misnamed, _sidecar_folders, others_of)


def keep(archive: Archive, ref: SessionRef, session_file: Path, store_root: Path) -> KeepResult:
    """Copy the Gemini CLI session `ref` (its file `session_file` under the store `store_root`) and its
    subagents' files into its archive (`FileKeep.keep`)."""
    return KEEP.keep(archive, ref, session_file, store_root)


def read_kept(archive: Archive, ref: SessionRef, part: str = SESSION) -> bytes:
    """The newest kept bytes of the session file (or of the sidecar `part`), verified."""
    return KEEP.read_kept(archive, ref, part)


def kept_path(archive: Archive, ref: SessionRef, part: str = SESSION) -> Path:
    """Where the newest kept bytes of the session file (or of `part`) lie (unverified)."""
    return KEEP.kept_path(archive, ref, part)
