"""Reprise's trash for Gemini CLI sessions (`file_trash.py`: copy, fsync, verify, record, audit, and
only then unlink; restore refuses while anything is at the recorded place): a session file
`tmp/<slug>/chats/session-<minute>-<id8>.jsonl` goes with its subagents' folder `chats/<session id>/`
into the workspace's trash in Reprise's data folder (`workspaces/<key>/reprise/trash/gemini/`), and
comes back to the same name. While it is there, `gemini --resume ID` does not find it.
"""

from __future__ import annotations

from pathlib import Path

from ..file_trash import AgentFileTrash
from ..uuid_ids import is_uuid
from .layout import is_session_name, join_id


def named_for(path: Path, session_id: str) -> bool:
    """Whether `path` is named as the client names a file of the session (`session-...-<id8>.json[l]`)."""
    return is_session_name(path.name) and join_id(path.name) == session_id[:8]


class GeminiTrash(AgentFileTrash):
    """The trash of Gemini CLI sessions in Reprise's data folder (`paths`: OwnPaths of "gemini")."""

    agent = "Gemini CLI"
    source = "gemini"

    def is_session_id(self, text: str) -> bool:
        return is_uuid(text)

    def is_session_file(self, path: Path, session_id: str) -> bool:
        return named_for(path, session_id)

    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        """A session file of the id in a project's `chats/` folder (`tmp/<slug>/chats/`) of `root`."""
        return self.is_session_file(target, session_id) and target.parent.name == "chats" \
            and target.parent.parent.parent == root / "tmp"

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        """`chats/<session id>/`: the session's subagents' files."""
        return session_file.parent / session_id
