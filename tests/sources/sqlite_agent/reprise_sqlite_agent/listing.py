"""The test agent's store as the catalog lists it: a group is a folder the database names (the
`mapped` workspace rule: the database is the map), a "file" is one session's records joined, named
by its first record at `<database>#<record id>` (so a file id is not a session id: the session's id
comes with its listing fields); every read opens the database read-only."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from reprise.core.folder_scan import FolderNames, FolderStats
from reprise.core.own_files import OwnFiles
from reprise.core.paths import OwnPaths, SessionRef, workspace_key
from reprise.core.problems import Problem
from reprise.core.rooted import Root
from reprise.core.sources.base import ListedFile, ListingFields, ListingSource, SearchRecord, SessionFile
from reprise.core.sources.transcript_search import search_records
from reprise.core.sources.workspaces import MappedRule, WorkspaceRule
from reprise.core.transcript import Transcript, Turn

from .database import NO_FOLDER, Row, database_of, folders, read_row, session_of, stats
from .spec import SPEC


def session_path(database: Path, record_id: str) -> str:
    """Where a listing says a session is: the database, and its first record's id after a `#`."""
    return f"{database}#{record_id}"


def transcript_of(row: Row) -> Transcript:
    """The session as the neutral transcript: a turn per prompt, each answered."""
    return Transcript(SPEC.name, row.session_id, [
        Turn(f"{row.session_id}-{number}", prompt, "succeeded", reply, detailed=False)
        for number, (prompt, reply) in enumerate(row.turns, start=1)])


def _listing_at(root: str, data: str) -> SqliteListing:
    return SqliteListing(Path(root), OwnPaths(Path(data), SPEC.name))


class SqliteListing(ListingSource):
    name = SPEC.name
    groups_are_workspaces = False
    file_is_session = SPEC.file_is_session

    def __init__(self, root: Path, own_paths: OwnPaths):
        self.root = root
        self.database = database_of(root)
        self._own_paths = own_paths
        self.own_files = OwnFiles(own_paths, Root(own_paths.root, "Reprise's data folder"))
        self._stats: dict[str, tuple[str, int, int]] | None = None
        self._problem: Problem | None = None   # why the last listing could not read the database

    def __reduce__(self) -> tuple[Callable[[str, str], SqliteListing], tuple[str, str]]:
        return _listing_at, (str(self.root), str(self._own_paths.root))

    @property
    def own_paths(self) -> OwnPaths:
        return self._own_paths

    @property
    def workspaces(self) -> WorkspaceRule:
        return MappedRule(self.groups, lambda: folders(self.database))

    def groups(self) -> list[str]:
        """The folders the database names; when it cannot be read, one group that says why."""
        self._problem = None
        try:
            self._stats = stats(self.database)   # one query per listing: its groups' stats are asked next
        except sqlite3.Error as exc:
            self._stats = {}
            self._problem = Problem(str(self.database), "unreadable", f"the {SPEC.label} database cannot be "
                                    f"read: {exc}")
            return [NO_FOLDER]
        return sorted({group for group, _, _ in self._stats.values()})

    def file_stats(self, group: str, known: FolderNames | None = None) -> FolderStats:
        if self._stats is None:
            self.groups()
        if self._problem is not None:
            return FolderStats({}, str(self.database), self._problem)
        found = self._stats or {}
        return FolderStats({file_id: (size, updated) for file_id, (in_group, size, updated) in found.items()
                            if in_group == group}, str(self.database))

    def file_path(self, group: str, file_id: str) -> str:
        return session_path(self.database, file_id)

    def _row(self, file: SessionFile) -> Row | Problem:
        try:
            session_id = session_of(self.database, file.file_id)
            row = None if session_id is None else read_row(self.database, session_id)
        except sqlite3.Error as exc:
            return Problem(file.path, "unreadable", f"the database cannot be read: {exc}")
        if row is None:
            return Problem(file.path, "vanished", "the session is no longer in the database")
        return row

    def read_listing(self, file: SessionFile, now_ns: int) -> ListedFile:
        row = self._row(file)
        if isinstance(row, Problem):
            key = workspace_key(file.group) if file.group.startswith("/") else workspace_key(self.root)
            return ListedFile(key, file.file_id, file.path, -1, -1, row, settled=False)
        folder = row.folder if file.group != NO_FOLDER else None
        key = workspace_key(folder) if folder is not None else workspace_key(self.root)
        when = datetime.fromtimestamp(row.updated_ns / 1e9, UTC).isoformat()
        fields = ListingFields(row.session_id, key, turns=len(row.turns),
                               first_message=row.turns[0][0] if row.turns else "",
                               last_message=row.turns[-1][0] if row.turns else "",
                               last_status="succeeded" if row.turns else None, last_activity=when,
                               activity_source="history", workspace_path=folder, agent_title=row.title)
        return ListedFile(key, file.file_id, file.path, row.size, row.updated_ns, fields)

    def read_search_records(self, file: SessionFile) -> list[SearchRecord] | None:
        row = self._row(file)
        return None if isinstance(row, Problem) else search_records(transcript_of(row))

    def workspace_path(self, key: str) -> str | None:
        return self.workspaces.folder_of(key)

    def title_and_pin(self, ref: SessionRef) -> tuple[str | None, bool]:
        meta = self.own_files.read_meta(ref)   # the defaults when Reprise has none or cannot read them
        return meta.title, meta.pinned
