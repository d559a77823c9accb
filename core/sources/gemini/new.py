"""A new Gemini CLI session on an id Reprise chose: Gemini CLI takes one on its command line
(`gemini --session-id ID`, `[sources.gemini] new`), run in the workspace, so Reprise writes nothing
into the store: the client makes the session's file (in the `chats/` folder of the folder's project,
registering the folder in `projects.json` first when it is new) with its first message, and deletes
it again on exit when no message was sent. Reprise keeps its title of the session in its own files, so
a title given in Reprise names the row that appears.
"""

from __future__ import annotations

from pathlib import Path

from ...agents import substitute
from ...errors import UsageError
from .fork import new_session_id

__all__ = ["new_argv", "new_session_id"]


def new_argv(template: list[str], session_id: str, folder: Path) -> list[str]:
    """`[sources.gemini] new` for this id and folder; refused when it does not name the id (the session
    would start on another)."""
    if not any("{session_id}" in item for item in template):
        raise UsageError("[sources.gemini] new does not name {session_id}: Gemini CLI would start a session "
                         "Reprise cannot find.", hint='set it to ["gemini", "--session-id", "{session_id}"]')
    return substitute(template, session_id=session_id, workspace=str(folder))
