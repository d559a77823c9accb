"""Where an agent runs a session, by its spec's `resume_folder`: "any" (it finds a session by id from
any folder: a gone folder is run from one that exists), "recorded" (in the session's recorded
folder, which a relink can move) or "exact" (only in that very folder: the agent looks its sessions
up by the folder it runs in, so a gone folder is a refusal that says how to go on)."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import RepriseError
from .sources.roles import Creator, Relinking

if TYPE_CHECKING:
    from .sources.base import SessionSource


def folder_is_gone(folder: str | None) -> bool:
    """Whether a session's folder is unknown or no longer a folder."""
    return folder is None or not Path(folder).is_dir()


def runs_anywhere(source: SessionSource) -> bool:
    """Whether the source's agent finds a session by its id from any folder."""
    return source.spec.resume_folder == "any"


def runs_only_there(source: SessionSource) -> bool:
    """Whether the source's agent runs a session only in the very folder it ran in."""
    return source.spec.resume_folder == "exact"


def exact_folder_gone(source: SessionSource, session_id: str, folder: str | None,
                      error: type[RepriseError] = RepriseError) -> RepriseError:
    """The refusal to run a session of an agent that runs it only in its own folder, which is gone or
    unknown: the folder named, and how to go on (recreate it; move the sessions, when the source
    relinks; or carry the session on in a new one where you are, when it starts sessions)."""
    label = source.label
    steps = []
    if folder is None:
        message = (f"{label} runs session {session_id} only in the folder it ran in, and its store does not say "
                   "which folder that is.")
    else:
        message = f"{label} runs session {session_id} only in the folder it ran in, which is gone: {folder}."
        steps.append(f"recreate the folder (mkdir -p {shlex.quote(folder)}) and run it again")
        if Relinking in source.roles:
            steps.append(f"if the project moved, move its sessions: reprise relink {shlex.quote(folder)} NEW_FOLDER")
    elsewhere = f"read it (reprise show {session_id})"
    if Creator in source.roles:
        elsewhere += f" and go on in a new session where you are (reprise new --agent {source.name})"
    steps.append(elsewhere)
    return error(message, hint="; or ".join(steps), path=folder)


def exact_new_folder_gone(source: SessionSource, folder: Path) -> RepriseError:
    """The refusal to start a session of an agent that runs a session only in its own folder, in a
    folder that does not exist."""
    return RepriseError(f"{source.label} runs a session only in its own folder, and {folder} does not exist.",
                        hint=f"create it (mkdir -p {shlex.quote(str(folder))}), or run reprise new in an "
                             "existing folder", path=folder)
