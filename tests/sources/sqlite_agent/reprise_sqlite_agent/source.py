"""The test agent's source: it reads and resumes (the required roles) and does nothing else: no
meter, no send, no new session, no trim, no trash, no keep. Its database is never written."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reprise.core.archive import Archive
from reprise.core.audit import AuditLog
from reprise.core.errors import NotFoundError, ProblemFileError
from reprise.core.own_files import SessionMeta
from reprise.core.paths import OwnPaths, SessionRef
from reprise.core.problems import Problem
from reprise.core.sources.base import Handoff, OpenedSession, SessionSource
from reprise.core.sources.roles import Reader, Resumer

from .database import read_row
from .listing import SqliteListing, session_path, transcript_of
from .spec import SPEC

if TYPE_CHECKING:
    from reprise.core.config import Settings


class SqliteSource(SessionSource, Reader, Resumer):
    spec = SPEC
    name = SPEC.name
    label = SPEC.label
    window_per_folder = False

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.own_paths = OwnPaths(data, SPEC.name)
        self.listing = self.sqlite_listing = SqliteListing(Path(roots[0]), self.own_paths)
        self.own_files = self.sqlite_listing.own_files
        self.archive = Archive(self.own_paths)
        self.audit = AuditLog(self.own_paths)

    def open(self, ref: SessionRef) -> OpenedSession:
        database = self.sqlite_listing.database
        try:
            row = read_row(database, ref.session_id)
        except sqlite3.Error as exc:
            raise ProblemFileError(Problem(str(database), "unreadable", f"the {self.label} database cannot be read: "
                                           f"{exc}")) from None
        if row is None:
            raise NotFoundError(f"No {self.label} session {ref.session_id}.")
        digest = hashlib.sha256(repr((row.folder, row.title, row.turns)).encode()).hexdigest()
        return OpenedSession(ref, Path(session_path(database, row.records[0])), row.size, digest, transcript_of(row))

    def exists(self, ref: SessionRef) -> bool:
        try:
            return read_row(self.sqlite_listing.database, ref.session_id) is not None
        except sqlite3.Error:
            return False

    def session_path(self, ref: SessionRef) -> Path:
        """Where the listing says the session is: its first record (its id, when it has none)."""
        try:
            row = read_row(self.sqlite_listing.database, ref.session_id)
        except sqlite3.Error:
            row = None
        return Path(session_path(self.sqlite_listing.database, row.records[0] if row else ref.session_id))

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        return ["sqlite-agent", "--resume", ref.session_id]

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        return Handoff([])

    def has_sessions(self, key: str) -> bool:
        return False   # nothing to record: the database names each session's folder

    def workspace_path(self, key: str) -> str | None:
        return self.sqlite_listing.workspace_path(key)

    def record_workspace(self, key: str, folder: Path) -> None:
        return None

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        return self.own_files.read_meta(ref)

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        if not self.exists(ref):
            raise NotFoundError(f"No {self.label} session {ref.session_id}.")
        return self.own_files.update_meta(ref, change)
