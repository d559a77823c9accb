"""Reprise's trash for Gemini CLI sessions (`file_trash.py`: copy, fsync, verify, record, audit, and
only then unlink; restore refuses while anything is at the recorded place): a session file
`tmp/<slug>/chats/session-<minute>-<id8>.jsonl` goes with its subagents' folder `chats/<session id>/`
and its other files beside it (a resume's stubs: `companions`) into the workspace's trash in
Reprise's data folder (`workspaces/<key>/reprise/trash/gemini/`), and all come back under their own
names. While it is there, `gemini --resume ID` does not find it (nor lists a stub left behind).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..file_trash import ASIDE_SUFFIX, AgentFileTrash
from ..uuid_ids import is_uuid
from .layout import is_file_id, is_session_name, join_id


def named_for(path: Path, session_id: str) -> bool:
    """Whether `path` is named as the client names a file of the session (`session-...-<id8>.json[l]`); of
    a file listed as unreadable (its id is its name), whether it is that file."""
    if is_file_id(session_id):
        return path.name == session_id
    return is_session_name(path.name) and join_id(path.name) == session_id[:8]


def others_of(session_file: Path, session_id: str) -> list[Path]:
    """The session's other files beside its file (named for it: a resume's stubs), by name."""
    try:
        names = os.listdir(session_file.parent)
    except OSError:
        return []
    return [session_file.parent / name for name in sorted(names)
            if name != session_file.name and not name.endswith(ASIDE_SUFFIX)
            and named_for(session_file.parent / name, session_id)]


class GeminiTrash(AgentFileTrash):
    """The trash of Gemini CLI sessions in Reprise's data folder (`paths`: OwnPaths of "gemini")."""

    agent = "Gemini CLI"
    source = "gemini"

    def is_session_id(self, text: str) -> bool:
        return is_uuid(text) or is_file_id(text)

    def is_session_file(self, path: Path, session_id: str) -> bool:
        return named_for(path, session_id)

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        """A session file of the id in a project's `chats/` folder (`tmp/<slug>/chats/`) of `root`."""
        return self.is_session_file(target, session_id) and target.parent.name == "chats" \
            and target.parent.parent.parent == root / "tmp"

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        """`chats/<session id>/`: the session's subagents' files (none of a file listed as unreadable)."""
        return None if is_file_id(session_id) else session_file.parent / session_id

    def companions(self, session_file: Path, session_id: str) -> list[Path]:
        return others_of(session_file, session_id)
