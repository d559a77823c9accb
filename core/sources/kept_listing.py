"""The sessions only Reprise's kept copies hold, for an agent whose sessions `file_keep.py` keeps: those
whose original the agent's own clean-up has since deleted (not Reprise's trash: a trashed session is
listed by `trash list` only). A listing lists them as one more group, `kept`, each row read from the
newest kept copy of its session file; and `put_back` copies the kept files back where the agent had
them, byte for byte, for an agent that resumes a session only from its own store.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..archive import Archive
from ..errors import ConflictError, RepriseError
from ..folder_scan import FolderStats
from ..paths import OwnPaths
from ..problems import Problem
from ..rooted import Root
from .file_keep import FileKeep, KeptFile, KeptSession, kept_sessions

KEPT = "kept"   # the group of kept copies whose original the agent has deleted (Reprise's archive)


@dataclass(slots=True)
class KeptOnly:
    """The kept group of one agent's listing: `refresh` finds its sessions ({session id: the path of the
    newest kept copy of its session file}), `stats` and `path` are the group's, as a folder's are."""

    own_paths: OwnPaths
    keep: FileKeep
    trash_suffix: str = ".jsonl"   # a trashed session file is `<trash>/<id><suffix>` (`file_trash.py`)
    paths: dict[str, str] | None = None
    sessions: dict[str, KeptSession] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    @property
    def note(self) -> str:
        """What a row of the group says first."""
        return f"{self.keep.agent} deleted its file; listed from the copy Reprise kept"

    def refresh(self) -> dict[str, str]:
        """{session id: path of its newest kept copy} of the kept sessions whose original is gone and
        not into Reprise's trash; read again on every call (a listing calls it once, from `groups`)."""
        listing = kept_sessions(self.own_paths)
        self.problems = listing.problems
        archive = Archive(self.own_paths)
        found: dict[str, str] = {}
        sessions: dict[str, KeptSession] = {}
        for kept in listing.sessions:
            trashed = self.own_paths.trash_dir(kept.ref.workspace_key) / f"{kept.ref.session_id}{self.trash_suffix}"
            if not kept.original.exists() and not os.path.lexists(trashed):
                with contextlib.suppress(OSError, RepriseError):
                    found[kept.ref.session_id] = str(self.keep.kept_path(archive, kept.ref))
                    sessions[kept.ref.session_id] = kept
        self.paths, self.sessions = found, sessions
        return found

    def groups(self) -> list[str]:
        """The kept group, when it has a session."""
        return [KEPT] if self.refresh() else []

    def stats(self) -> FolderStats:
        """{session id: (size, mtime_ns)} of the group's copies, as `file_stats` gives a folder's."""
        found: dict[str, tuple[int, int]] = {}
        for session_id, path in (self.paths if self.paths is not None else self.refresh()).items():
            try:
                info = os.stat(path)
                found[session_id] = (info.st_size, info.st_mtime_ns)
            except OSError:
                found[session_id] = (-1, -1)
        return FolderStats(found, "")

    def path(self, session_id: str) -> str:
        """The kept copy a row of the group is read from."""
        known = self.paths if self.paths is not None and session_id in self.paths else self.refresh()
        return known.get(session_id, f"{self.own_paths.root}/{KEPT}/{session_id}")

    def session_of(self, path: str | Path) -> KeptSession | None:
        """The kept session whose copy `path` is (None for any other path)."""
        text = str(path)
        for session_id, copy in (self.paths or {}).items():
            if copy == text:
                return self.sessions.get(session_id)
        return None


def put_back(archive: Archive, kept: KeptSession, store_root: Path, agent: str) -> list[Path]:
    """Copy the newest kept copies of the session file and of each file kept with it back to where the
    agent had them (under `store_root`), verified against their digests; the files put back, session
    file first. Refused (ConflictError, nothing written) while any of those places holds a file, or is
    not under `store_root`; a copy that fails removes the ones already made."""
    store = Root(store_root, f"{agent} root")
    data = Root(archive.paths.root, "Reprise data folder")
    files: list[KeptFile] = [kept.session, *kept.sidecars]
    for item in files:
        place = item.original
        if not place.is_absolute() or not place.is_relative_to(store_root):
            raise ConflictError(f"{place} is not under the {agent} root {store_root}; nothing was put back.",
                                path=str(place))
        if store.exists(place):
            raise ConflictError(f"{place} exists again; the kept copy of session {kept.ref.session_id} was not "
                                "put back.", hint="move that file away first", path=str(place))
    made: list[Path] = []
    try:
        for item in files:
            source = archive.directory(kept.ref) / f"{item.digest}.json"
            copied = store.copy_in(data, source, item.original)   # a file's digest is its SHA-256, the copy's name
            made.append(item.original)
            if copied != item.digest:
                raise ConflictError(f"{source} no longer holds the bytes Reprise kept of {item.original}.")
    except (OSError, RepriseError) as exc:
        for path in reversed(made):
            with contextlib.suppress(OSError, RepriseError):
                store.unlink(path)
        reason = exc.message if isinstance(exc, RepriseError) else exc.strerror or str(exc)
        raise RepriseError(f"The kept copy of {agent} session {kept.ref.session_id} was not put back: "
                           f"{reason.rstrip('.')}.", path=str(kept.original)) from None
    return made
