"""The catalog: a SQLite cache of the listing fields of every session file of every source, keyed by
(source, workspace key, file id) and checked against (size, mtime_ns), so a listing stats every
file but re-reads only the new or changed ones, through the file's source.

It ties together the rows (`rows.py`), the parallel cold scan (`scan_pool.py`), the full-text
index (`search_index.py`) and the cached resume costs (`resume_costs.py`), all in one database.
Everything in it can be recomputed from the files: deleting the database is always safe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import itertools
import json
import operator
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, TypeVar

import orjson

from . import row_snapshot
from .catalog_columns import LAYOUT
from .catalog_db import CacheDatabase, rollback
from .errors import RepriseError
from .folder_scan import FolderNames, FolderStats
from .gc_pauses import no_gc_pauses
from .paths import SessionRef, is_temp_name, keys_resolved_once
from .problems import Problem
from .progress import Progress, ProgressSink, no_progress
from .resume_costs import carry_resume_cost, store_resume_costs
from .row_snapshot import SourceRows
from .rows import SessionRow
from .scan_pool import iter_in_processes
from .sources.base import HeadKeys, ListedFile, ListingFields, ListingSource, SessionFile
from .transcript import Usage

if TYPE_CHECKING:   # the search's modules: imported by the methods that search or index, never by a listing
    from .search_build import BuildResult
    from .search_engine import SearchUpdate, UpdateSink
    from .search_index import FileState, IndexedFile, Record, SearchHit, SearchIndex
    from .search_match import Query

SCHEMA = 16   # 16: the columns by name, the layout's digest in the version (issue 28); 15: heads (issue 27)
PARALLEL_MIN = 400
SERIAL_BATCH = 16   # files read between two reports of a cold read in this process
EARLY_FILES = 16    # a large read heard by a screen: the newest files in scope read here first (a screen's
                    # worth, some hidden by the agents' pickers),
EARLY_HEADS = 64    # found among at most this many newest files (their heads, for a store of mixed folders)
COLD_FILES = 64     # files in a search's scope not listed as they are, for it to scan before any listing
CHANGED_WARNING = "the file changed since it was listed; refresh the listing"
_FEW_ROWS = 64

# The row columns of the `files` table, its insert and select, and the building of rows from them come
# from one table of columns (`catalog_columns.LAYOUT`, read here at each use: a test may lay out its own).
# A warm listing SELECTs, source by source, the row columns of every file; the source's name and the
# path come from the source (decoding the path cost a fifth of the SELECT).
# `details`, the listing fields as one JSON array in ListingFields' field order (Usage's for `usage`),
# is read only for the rows a caller loads: built positionally, it loads in a fifth of the time of an
# object built by keyword. It and the source's `carry` live in a table of their own, `file_data`:
# in `files` they made a warm listing's scan read 45 MB of pages (Claude Code's carries are kilobytes
# a file, on overflow pages) for the 2 MB of row columns it wants.
# The schema's version holds a digest of the columns and of both dataclasses' fields (`_version`):
# changing either rebuilds an older cache without a SCHEMA bump.
_DATA_COLUMNS = ("source", "grp", "file_id", "details", "carry")
_by_file_id = operator.itemgetter(row_snapshot.FILE_ID)
P = ParamSpec("P")
R = TypeVar("R")
_INSERT_DATA = (f"INSERT OR REPLACE INTO file_data ({', '.join(_DATA_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(_DATA_COLUMNS))})")


def _record_of(item: _Read) -> tuple[object, ...]:
    return LAYOUT.record(item.row, item.racy, item.folder)


def _data_of(item: _Read) -> tuple[object, ...]:
    row = item.row
    return (row.source, row.group, row.file_id, item.details, item.carry)


DETAILS_LAYOUT = tuple(field.name for field in dataclasses.fields(ListingFields))
USAGE_LAYOUT = tuple(field.name for field in dataclasses.fields(Usage))
_USAGE_AT = DETAILS_LAYOUT.index("usage")


def _version() -> tuple[int, int]:
    """The catalog's schema: SCHEMA, and the digest of its columns' and listing fields' layout."""
    return SCHEMA, LAYOUT.digest(DETAILS_LAYOUT, USAGE_LAYOUT)


def _details_text(listing: ListingFields) -> str:
    values = [getattr(listing, name) for name in DETAILS_LAYOUT]
    values[_USAGE_AT] = [getattr(listing.usage, name) for name in USAGE_LAYOUT]
    return json.dumps(values)


# Where the stored fields hold integers: orjson reads an integer beyond 64 bits as a float, so a float
# there (or a cost at or beyond 2**63) means json's reading differs.
_INTEGERS_AT = tuple(at for at, f in enumerate(dataclasses.fields(ListingFields)) if str(f.type).startswith("int"))
_USAGE_INTEGERS_AT = tuple(at for at, f in enumerate(dataclasses.fields(Usage)) if str(f.type).startswith("int"))
_COST_AT = USAGE_LAYOUT.index("cost")


def _fields_of(text: str) -> ListingFields:
    values: list[Any] | None = None
    with contextlib.suppress(orjson.JSONDecodeError):   # NaN, a lone surrogate: json reads them
        values = orjson.loads(text)   # in half json's time: a warm listing of 2,500 rows 8 ms sooner
        usage = values[_USAGE_AT]
        cost = usage[_COST_AT]
        if (any(type(values[at]) is float for at in _INTEGERS_AT)
                or any(type(usage[at]) is float for at in _USAGE_INTEGERS_AT)
                or type(cost) is float and abs(cost) >= 2**63):
            values = None
    if values is None:
        values = json.loads(text)
    values[_USAGE_AT] = Usage(*values[_USAGE_AT])
    return ListingFields(*values)


# The agent's title in a row's stored fields, read by SQLite's JSON functions; a query's word `n`
# (`?n`, a LIKE pattern) in the fields and in that title, or the title not ASCII (LIKE folds ASCII
# only), or fields that are not JSON (left for `load_details` to say so, as before).
_AGENT_TITLE = f"json_extract(details, '$[{DETAILS_LAYOUT.index('agent_title')}]')"
_TITLE_MAY_HOLD = (f"details LIKE ?{{n}} ESCAPE '\\' AND (NOT json_valid(details) OR {_AGENT_TITLE} LIKE ?{{n}} "
                   f"ESCAPE '\\' OR length({_AGENT_TITLE}) != length(CAST({_AGENT_TITLE} AS BLOB)))")


@functools.cache
def _has_json_functions() -> bool:
    """Whether this SQLite has its JSON functions (built in since 3.38, an option before)."""
    try:
        with contextlib.closing(sqlite3.connect(":memory:")) as db:
            db.execute("SELECT json_extract('[1]', '$[0]')")
    except sqlite3.OperationalError:
        return False
    return True


def _no_fields(key: str, warning: str | None = None) -> ListingFields:
    """The listing fields of a file that has none (a problem file): an empty session's."""
    return ListingFields(session_id="", workspace_key=key, usage=Usage(cost=0.0), warning=warning)


def _activity_ts(listing: ListingFields, mtime_ns: int) -> float:
    if listing.last_activity:
        with contextlib.suppress(ValueError):
            moment = datetime.fromisoformat(listing.last_activity)
            return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    return mtime_ns / 1e9


@dataclasses.dataclass(slots=True)
class _Read:
    """A file just read: its row (details not attached), whether to read it again next time, its details,
    the folder it records (for a store that records it in the file), and the source's carry."""

    row: SessionRow
    racy: bool
    details: str
    folder: str | None
    carry: bytes | None


def _read_file(source: ListingSource, file: SessionFile, now_ns: int) -> _Read:
    listed: ListedFile = source.read_listing(file, now_ns)
    found = listed.fields
    problem = found if isinstance(found, Problem) else None
    listing = _no_fields(listed.workspace_key) if isinstance(found, Problem) else found
    folder = listing.workspace_path if source.workspaces.kind == "recorded" else None
    row = LAYOUT.row_type(
        source=source.name, workspace_key=listed.workspace_key, file_id=listed.file_id, size=listed.size,
        mtime_ns=listed.mtime_ns, activity_ts=_activity_ts(listing, listed.mtime_ns),
        problem_code=problem.code if problem else None, problem_message=problem.message if problem else None,
        problem_field=problem.field if problem else None, resume_cost=None, resume_cost_key=None,
        content_digest=listed.content_digest, path=listed.path, group=file.group, workspace_path=folder,
        **LAYOUT.figures(listing, source))
    return _Read(row, not listed.settled, _details_text(listing), folder, listed.carry)


def listed_row(source: ListingSource, file: SessionFile) -> SessionRow:
    """One file's row as a listing reads it, its details attached: what the cold first search reads
    of just the files that hold hits (in a worker process, or here)."""
    item = _read_file(source, file, time.time_ns())
    item.row.details = _fields_of(item.details)
    return item.row


def _read_batch(sources: dict[str, ListingSource], now_ns: int, files: Sequence[tuple[str, SessionFile]]
                ) -> list[_Read]:
    """Read each (source's name, file); in a worker process, or here. No cyclic collection meanwhile
    (`gc_pauses`): a read's records make no cycles, and a worker's collector walked them, and every
    module it imported, again and again (8% of a Claude Code file's read). Each folder a file records
    is resolved to its key once in the batch (`keys_resolved_once`)."""
    with no_gc_pauses(), keys_resolved_once():
        return [_read_file(sources[name], file, now_ns) for name, file in files]


def _rows_of(source: ListingSource, group: str, columns: list[row_snapshot.Columns],
             scanned: tuple[str, FolderNames | None] = ("", None)) -> dict[Ident, SessionRow]:
    """The rows of one folder from their catalog columns (a snapshot's or the table's); each one's
    path from the names the folder's scan read (`scanned`: the folder and those), else from the source."""
    directory, read = scanned
    return LAYOUT.build(source.name, group, columns, read.names if read is not None else {}, f"{directory}/",
                        source.file_path)


def _folders_after(source: ListingSource, known: SourceRows, touched: dict[str, FolderNames | None],
                   cached: dict[Ident, SessionRow], racy: set[Ident]) -> dict[str, row_snapshot.Folder]:
    """The source's snapshot after a refresh: the folders it did not touch as they were, the others
    from their rows now, with the names their scan read (`racy`: the rows just read whose stat cannot
    be trusted)."""
    name, recorded, values = source.name, source.workspaces.kind == "recorded", LAYOUT.values
    folders = {group: folder for group, folder in known.folders.items() if group not in touched}
    for ident, row in cached.items():
        if row.source != name or row.group not in touched:
            continue
        folder = folders.get(row.group)
        if folder is None:
            folder = folders[row.group] = row_snapshot.Folder({}, [], False, touched[row.group])
        is_racy = ident in racy
        folder.stats[row.file_id] = (row.size, row.mtime_ns)
        folder.columns.append(values(row, is_racy, row.workspace_path if recorded else None))
        folder.racy = folder.racy or is_racy
    for group in touched.keys() & folders.keys():
        folders[group].columns.sort(key=_by_file_id)
    return dict(sorted(folders.items()))   # the table's order: by folder, then by file id


def _guarded(method: Callable[Concatenate[Catalog, P], R]) -> Callable[Concatenate[Catalog, P], R]:
    """One thread at a time uses the catalog's connection (the TUI refreshes, searches and fills costs
    from different workers), and a database that fails is recovered from and the call retried:
    the catalog is a cache and never breaks a command."""
    @functools.wraps(method)
    def wrapper(self: Catalog, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._lock:
            for attempt in itertools.count():
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.Error as exc:
                    self._cache.recover(exc, give_up=attempt > 0)   # raises on the second failure
        raise AssertionError("unreachable: itertools.count() does not end")
    return wrapper


Ident = tuple[str, str, str]   # (source, group, file id)
RowsSink = Callable[[list[SessionRow]], object]   # hears rows as a refresh reads them


def _held(state: FileState | None, row: SessionRow) -> bool:
    """Whether the index holds the row's file as it is on disk."""
    return state is not None and (state.size, state.mtime_ns) == (row.size, row.mtime_ns)


def _file_bytes(path: Path) -> int:
    """The bytes of a database file with its write-ahead log."""
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += os.stat(f"{path}{suffix}").st_size
    return total


def _megabytes(size: int) -> str:
    return f"{size / 1e6:,.1f} MB" if size < 1e9 else f"{size / 1e9:,.2f} GB"


@dataclasses.dataclass(frozen=True, slots=True)
class _Stored:
    """What the catalog holds of the files, read apart from its connection (`Catalog._stored_stats`)."""

    rows: dict[Ident, tuple[int, int]]
    heads: dict[str, HeadKeys]


def _not_fewer(on_update: UpdateSink, shown: int) -> UpdateSink:
    """`on_update` for the search over the listed rows after a cold search showed `shown` hits: it
    hears that search once it has as many (or is complete), so the hits shown never go back."""
    def heard(update: SearchUpdate) -> None:
        if update.complete or len(update.hits) >= shown:
            on_update(update)
    return heard


class Catalog:
    """The listing cache of a set of sources (one database per set of roots)."""

    def __init__(self, sources: Sequence[ListingSource], cache_dir: Path, *, parallel: bool = False,
                 progress: ProgressSink = no_progress):
        """`parallel` lets a large refresh decode files in the process's pool of workers (`scan_pool`);
        only programs whose main module is safe to re-import (an `if __name__ == "__main__"` guard)
        may turn it on.
        `progress` hears how far the reading of new or changed files and the indexing are."""
        if not sources or len({source.name for source in sources}) != len(sources):
            raise ValueError("a catalog lists one or more sources, each once")
        self.sources = list(sources)
        self._by_name = {source.name: source for source in self.sources}
        self.parallel = parallel
        self.progress = progress
        roots = "\0".join(str(source.own_paths.root.resolve()) for source in self.sources)
        root_id = hashlib.sha256(roots.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.db_path = cache_dir / f"catalog-{root_id}.sqlite"
        schema, layout = _version()
        self._cache = CacheDatabase(self.db_path, schema, self._create, layout=layout)
        self._lock = threading.RLock()
        self.index_enabled = True              # `[search] index`: off, searches scan and nothing is indexed
        self.index_cap: int | None = None      # `[search] max_mb`, in bytes
        self._search_ready: sqlite3.Connection | None = None   # the connection whose search tables are checked
        self._search_notices: list[str] = []
        self.scan_problems: list[Problem] = []
        self._heads: dict[str, HeadKeys] = {}   # by source: what each unread file's head told (`_of_workspaces`)
        self._rows_read: tuple[RowsSink | None, set[str] | None] = (None, None)   # the running refresh's

    # --- database ------------------------------------------------------------------------

    @property
    def db(self) -> sqlite3.Connection:
        return self._cache.connection

    @functools.cached_property
    def _index(self) -> SearchIndex:
        from .search_index import SearchIndex

        return SearchIndex(lambda: self.db, self._transaction)

    def take_notices(self) -> list[str]:
        """One line for each time the cache was rebuilt or bypassed since the last call."""
        notices, self._search_notices = [*self._cache.take_notices(), *self._search_notices], []
        return notices

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        """This schema's tables, replacing an older version's, inside the opener's transaction
        (one statement at a time: executescript would commit it)."""
        from .search_index import OLD_TABLE_NAMES as OLD_SEARCH_TABLE_NAMES
        from .search_index import TABLE_NAMES as SEARCH_TABLE_NAMES
        from .search_index import TABLES as SEARCH_TABLES

        for statement in (
            "DROP TABLE IF EXISTS files",
            "DROP TABLE IF EXISTS file_data",
            "DROP TABLE IF EXISTS meta",
            "DROP TABLE IF EXISTS heads",
            *(f"DROP TABLE IF EXISTS {name}" for name in row_snapshot.TABLE_NAMES),
            *(f"DROP TABLE IF EXISTS {name}" for name in (*OLD_SEARCH_TABLE_NAMES, *SEARCH_TABLE_NAMES)),
            LAYOUT.table,
            """CREATE TABLE file_data (
                source TEXT NOT NULL, grp TEXT NOT NULL, file_id TEXT NOT NULL, details TEXT NOT NULL, carry BLOB,
                PRIMARY KEY (source, grp, file_id)) WITHOUT ROWID""",
            # What the head of a file not read yet names (a one-folder listing of a store that records the
            # folder in each file reads only that folder's files).
            """CREATE TABLE heads (
                source TEXT NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                workspace_key TEXT, PRIMARY KEY (source, path)) WITHOUT ROWID""",
            "CREATE INDEX workspace_files ON files (workspace_key)",
            # `workspace_folder`, asked for each workspace a listing shows whose folder is not recorded:
            # with the index above it looked at every file of the workspace.
            "CREATE INDEX workspace_folders ON files (workspace_key, activity_ts) WHERE folder IS NOT NULL",
            """CREATE TABLE meta (
                path TEXT PRIMARY KEY, source TEXT NOT NULL, workspace_key TEXT NOT NULL, session_id TEXT NOT NULL,
                size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, title TEXT, pinned INTEGER NOT NULL)""",
            *SEARCH_TABLES,
            *row_snapshot.TABLES,
            *row_snapshot.TRIGGERS,
        ):
            db.execute(statement)

    def close(self) -> None:
        self._cache.close()

    @_guarded
    def workspace_keys(self) -> list[str]:
        """Every workspace the sources hold sessions of, as far as the last refresh saw for the
        sources that record the folder inside their files."""
        return self._workspace_keys()

    def _workspace_keys(self) -> list[str]:
        keys: set[str] = set()
        for source in self.sources:
            if source.workspaces.kind == "group":
                keys.update(source.groups())
            else:
                keys.update(key for (key,) in self.db.execute(
                    "SELECT DISTINCT workspace_key FROM files WHERE source = ?", (source.name,)))
        return sorted(keys)

    @_guarded
    def workspace_folder(self, key: str) -> str | None:
        """The folder the files of a store that records it name for a workspace (the newest file's)."""
        found = self.db.execute("SELECT folder FROM files WHERE workspace_key = ? AND folder IS NOT NULL "
                                "ORDER BY activity_ts DESC LIMIT 1", (key,)).fetchone()
        return None if found is None else str(found[0])

    @_guarded
    def paths_of(self, source: str, session_id: str) -> list[str]:
        """Where the rows of a session id of one source, as the last refresh saw them, say its files
        are (the id is the file id unless the row names a session id of its own: `file_is_session`)."""
        listing = self._by_name[source]
        return [listing.file_path(str(group), str(file_id)) for group, file_id in self.db.execute(
            "SELECT grp, file_id FROM files WHERE source = ? "
            "AND (session_id = ? OR session_id IS NULL AND file_id = ?) ORDER BY grp, file_id",
            (source, session_id, session_id))]

    @_guarded
    def listed_stat(self, source: str, workspace_key: str, session_id: str) -> tuple[int, int] | None:
        """(size, mtime_ns) of a session's row as the last refresh saw it: for a session of several
        files, its main file's size and the newest mtime of them all (what a kept copy is compared with)."""
        found = self.db.execute(
            "SELECT size, mtime_ns FROM files WHERE source = ? AND workspace_key = ? "
            "AND (session_id = ? OR session_id IS NULL AND file_id = ?) ORDER BY grp, file_id",
            (source, workspace_key, session_id, session_id)).fetchone()
        return None if found is None else (int(found[0]), int(found[1]))

    # --- refresh ---------------------------------------------------------------------------

    @_guarded
    def refresh(self, keys: Iterable[str] | None = None, *, rows_read: RowsSink | None = None) -> list[SessionRow]:
        """Bring the cache up to date with the disk for these workspaces (all when None); return their
        rows, without their details (`load_details`). `rows_read` hears the rows of the new or changed
        files as they are read (newest first, their details attached), before the refresh ends."""
        wanted = None if keys is None else list(dict.fromkeys(keys))
        self._rows_read = (rows_read, None if wanted is None else set(wanted))
        try:
            with no_gc_pauses():
                return self._refresh(wanted)
        finally:
            self._rows_read = (None, None)

    def _refresh(self, keys: list[str] | None) -> list[SessionRow]:
        now_ns = time.time_ns()
        self.scan_problems = []
        cached: dict[Ident, SessionRow] = {}
        changed: dict[str, list[SessionFile]] = {}
        deleted: list[Ident] = []
        # Listed whole: the rows, and the folders changed (with the names their scan read).
        whole: list[tuple[ListingSource, SourceRows, dict[str, FolderNames | None]]] = []
        scoped: dict[str, list[str] | None] = {}
        for source in self.sources:
            # A store grouped by workspace (or mapping its groups to folders) is scanned for the groups of
            # the wanted keys only; one that records the folder in each file is scanned whole (a stat per
            # file) and its rows picked by key after.
            rule = source.workspaces
            groups = scoped[source.name] = None if keys is None else rule.groups_for(keys)
            if groups is None:
                known = row_snapshot.load(self.db, source.name, LAYOUT.select)
            else:
                scope, arguments = self._scope(groups)
                known = SourceRows(None, row_snapshot.folders_of(self.db.execute(
                    f"{LAYOUT.select} AND {scope}", [source.name, *arguments])), False)
            on_disk: Iterable[tuple[str, FolderStats]] = self._scan(source, groups, known)
            if rule.kind != "group":
                # The whole scan first: it tells a store that learns its files' names from it (Codex)
                # the path of each cached row, which took a second listing of every folder. A store
                # grouped by workspace is scanned a folder at a time, holding one folder's stats.
                on_disk = list(on_disk)
            touched = self._compare(source, on_disk, known, cached, changed, deleted)
            if groups is None:
                whole.append((source, known, touched))
        changed = self._with_carries(changed, cached)
        early = self._read_newest(changed, keys, now_ns)
        if keys is not None:
            for source in self.sources:
                if scoped[source.name] is None and source.name in changed:
                    # Only the files that can hold these workspaces are read (the rule narrows them); the
                    # others stay new (no row) until a listing wants them.
                    changed[source.name] = self._of_workspaces(source, changed[source.name], keys)
        read = self._read(changed, now_ns, early)
        for item in read:
            carry_resume_cost(item.row, cached.get((item.row.source, item.row.group, item.row.file_id)))
        for ident in deleted:
            cached.pop(ident, None)
        for item in read:
            cached[(item.row.source, item.row.group, item.row.file_id)] = item.row
        stale = [entry for entry in whole if entry[2] or not entry[1].from_snapshot]
        if read or deleted or stale:
            with self._transaction() as db:
                # Checked before this transaction's own writes bump the generations.
                current = [entry for entry in stale if row_snapshot.unchanged_since(db, entry[0].name,
                                                                                    entry[1].generation)]
                db.executemany("DELETE FROM files WHERE source = ? AND grp = ? AND file_id = ?", deleted)
                db.executemany("DELETE FROM file_data WHERE source = ? AND grp = ? AND file_id = ?", deleted)
                db.executemany(LAYOUT.insert, [_record_of(item) for item in read])
                db.executemany(_INSERT_DATA, [_data_of(item) for item in read])
                for source, _, _ in whole if keys is None else []:   # every file read now: no head to remember
                    if source.workspaces.kind != "group" and self._heads_of(source):
                        db.execute("DELETE FROM heads WHERE source = ?", (source.name,))
                        self._heads[source.name] = {}
                racy = {(item.row.source, item.row.group, item.row.file_id) for item in read if item.racy}
                for source, known, touched in current:
                    row_snapshot.store(db, source.name, _folders_after(source, known, touched, cached, racy))
        rows = list(cached.values())
        if keys is not None:
            wanted = set(keys)
            rows = [row for row in rows if row.workspace_key in wanted]
        self._attach_workspaces_and_meta(rows, keys)
        return rows

    @_guarded
    def stored_rows(self, keys: Iterable[str] | None = None) -> list[SessionRow]:
        """The rows of these workspaces (all when None) as the last refresh stored them, without
        looking at any file (no stat, no read): what a screen can show at once, before `refresh`
        says what changed. Their details are not loaded (`load_details`)."""
        wanted = None if keys is None else list(dict.fromkeys(keys))
        rows: list[SessionRow] = []
        with no_gc_pauses():
            for source in self.sources:
                groups = None if wanted is None else source.workspaces.groups_for(wanted)
                if groups is not None:
                    scope, arguments = self._scope(groups)
                    folders = row_snapshot.folders_of(self.db.execute(f"{LAYOUT.select} AND {scope}",
                                                                      [source.name, *arguments]))
                else:
                    folders = row_snapshot.load(self.db, source.name, LAYOUT.select).folders
                for group, folder in folders.items():
                    rows.extend(_rows_of(source, group, folder.columns).values())
            if wanted is not None:
                keep = set(wanted)
                rows = [row for row in rows if row.workspace_key in keep]
            self._attach_workspaces_and_meta(rows, wanted)
        return rows

    @staticmethod
    def _compare(source: ListingSource, on_disk: Iterable[tuple[str, FolderStats]], known: SourceRows,
                 cached: dict[Ident, SessionRow], changed: dict[str, list[SessionFile]], deleted: list[Ident]
                 ) -> dict[str, FolderNames | None]:
        """Add the source's cached rows to `cached`, its new or changed files to `changed` and the rows
        whose file is gone to `deleted`; return the folders with any of those, or whose scan read
        names the snapshot does not hold, with those names. A folder whose stats are the ones its
        rows were read at is taken whole."""
        name, keyed, file_path = source.name, source.workspaces.kind == "group", source.file_path
        touched: dict[str, FolderNames | None] = {}
        seen: dict[str, tuple[str, FolderNames | None]] = {}   # each folder scanned, and the names read
        built: dict[str, dict[Ident, SessionRow]] = {}
        for group, scanned in on_disk:
            seen[group] = (scanned.directory, scanned.names)
            stats = scanned.stats
            folder = known.folders.get(group)
            if folder is not None and not folder.racy and folder.stats == stats:
                if scanned.names is not folder.names and scanned.names != folder.names:
                    touched[group] = scanned.names   # its rows as they are, its names anew
                continue
            touched[group] = scanned.names
            rows = built[group] = _rows_of(source, group, folder.columns, seen[group]) if folder is not None else {}
            racy = {(name, group, columns[row_snapshot.FILE_ID]) for columns in folder.columns
                    if columns[row_snapshot.RACY]} if folder is not None and folder.racy else set()
            unseen = dict(rows)   # what is left once every file on disk is seen was deleted
            for file_id, (size, mtime_ns) in stats.items():
                ident = (name, group, file_id)
                old = unseen.pop(ident, None)
                if old is None or old.size != size or old.mtime_ns != mtime_ns or ident in racy:
                    changed.setdefault(name, []).append(SessionFile(
                        group if keyed else None, file_id, file_path(group, file_id), size, mtime_ns, group=group))
            deleted.extend(unseen)
        # The rows in the order the catalog keeps them (a search ranks equal hits in the order indexed).
        for group, folder in known.folders.items():
            if group in seen:
                cached.update(built[group] if group in built else _rows_of(source, group, folder.columns, seen[group]))
            else:
                touched[group] = None
                deleted.extend((name, group, file_id) for file_id in folder.stats)
        return touched

    def _of_workspaces(self, source: ListingSource, files: list[SessionFile], keys: list[str]) -> list[SessionFile]:
        """The source's files that can hold these workspaces (`files_of_workspaces`), with what their
        heads told before kept in the catalog (`heads`), so that a new process listing one folder does
        not look at the other folders' heads again."""
        known = self._heads_of(source)
        before = {file.path: known.get(file.path) for file in files}
        chosen = source.workspaces.narrow(files, keys, known)
        told = [(source.name, path, *known[path]) for path, was in before.items()
                if path in known and known[path] != was]
        if told:
            with self._transaction() as db:
                db.executemany("INSERT OR REPLACE INTO heads (source, path, size, mtime_ns, workspace_key) "
                               "VALUES (?, ?, ?, ?, ?)", told)
        return chosen

    def _heads_of(self, source: ListingSource) -> HeadKeys:
        known = self._heads.get(source.name)
        if known is None:
            known = self._heads[source.name] = {
                str(path): (int(size), int(mtime_ns), key) for path, size, mtime_ns, key in self.db.execute(
                    "SELECT path, size, mtime_ns, workspace_key FROM heads WHERE source = ?", (source.name,))}
        return known

    def _scan(self, source: ListingSource, groups: list[str] | None, known: SourceRows
              ) -> Iterator[tuple[str, FolderStats]]:
        """The stats of each group of the source (these, or all when None), from the names the
        snapshot holds while a folder's stamp says they are still all there is."""
        folders = known.folders
        for group in source.groups() if groups is None else groups:
            folder = folders.get(group)
            scanned = source.file_stats(group, None if folder is None else folder.names)
            if scanned.problem is not None:
                self.scan_problems.append(scanned.problem)
            yield group, scanned

    def _with_carries(self, changed: dict[str, list[SessionFile]], cached: dict[Ident, SessionRow]
                      ) -> dict[str, list[SessionFile]]:
        """Hand each changed file that was read before what its source kept of that read."""
        for name, files in changed.items():
            if self._by_name[name].workspaces.kind == "group":
                continue   # such a store (Fractal's) reads each file whole
            for i, file in enumerate(files):
                if (name, file.group, file.file_id) in cached:
                    found = self.db.execute("SELECT carry FROM file_data WHERE source = ? AND grp = ? AND file_id = ?",
                                            (name, file.group, file.file_id)).fetchone()
                    if found is not None and found[0] is not None:
                        files[i] = dataclasses.replace(file, carry=bytes(found[0]))
        return changed

    def _attach_workspaces_and_meta(self, rows: list[SessionRow], keys: list[str] | None) -> None:
        """Each row's folder and Reprise's own title and pin of it."""
        # A store grouped by workspace knows its keys (its groups) and each key's folder; a store that maps
        # its groups knows each key's folder; the others' rows name their folders themselves. The keys
        # of the last two come from their rows. One pass over the rows.
        by_source: dict[str, set[str]] = {}
        paths_of: dict[str, dict[str, str | None]] = {}
        rules = {source.name: source.workspaces for source in self.sources}
        for source in self.sources:
            rule = rules[source.name]
            by_source[source.name] = set(source.groups() if keys is None else keys) if rule.kind == "group" else set()
            if rule.kind != "recorded":
                paths_of[source.name] = {key: rule.folder_of(key) for key in by_source[source.name]}
        for row in rows:
            paths = paths_of.get(row.source)
            if paths is None:
                by_source[row.source].add(row.workspace_key)
            elif row.workspace_key in paths:
                row.workspace_path = paths[row.workspace_key]
            else:   # a row the groups did not name (its folder was listed a moment before): looked up too
                row.workspace_path = paths[row.workspace_key] = rules[row.source].folder_of(row.workspace_key)
                by_source[row.source].add(row.workspace_key)
        meta_rows: dict[Ident, tuple[str | None, bool]] = {}
        for source in self.sources:
            source_keys = by_source[source.name]
            on_disk: dict[str, tuple[str, str, str, int, int]] = {}
            present = self._folder_names(str(source.own_paths.workspaces))
            for key in sorted(source_keys):
                if present is None or key in present:   # a workspace with no folder has no metadata files
                    on_disk.update(self._scan_meta(source.name, key, str(source.own_paths.meta_dir(key))))
            meta_rows.update(self._refresh_meta(source.name, sorted(source_keys), on_disk))
        if meta_rows:
            for row in rows:
                found = meta_rows.get((row.source, row.workspace_key, row.id))
                if found is not None:
                    row.title, row.pinned = found

    def _read_newest(self, changed: dict[str, list[SessionFile]], keys: list[str] | None, now_ns: int
                     ) -> dict[tuple[str, str], _Read]:
        """On a read large enough for the pool of workers, heard by a screen (`rows_read`): the newest
        EARLY_FILES files in scope read here first and streamed together, so the first rows wait
        neither for the heads of every file (a one-folder listing) nor for the pool's start. Their
        heads are looked at newest first, at most EARLY_HEADS of them; by (source, path)."""
        candidates = [(name, file) for name, files in changed.items() for file in files]
        if not (self.parallel and self._rows_read[0] is not None and len(candidates) >= PARALLEL_MIN):
            return {}
        candidates.sort(key=lambda item: item[1].mtime_ns, reverse=True)
        chosen: list[tuple[str, SessionFile]] = []
        for start in range(0, min(len(candidates), EARLY_HEADS), EARLY_FILES):
            chosen.extend(self._in_scope(candidates[start:start + EARLY_FILES], keys))
            if len(chosen) >= EARLY_FILES:
                break
        early = {(name, file.path): _read_file(self._by_name[name], file, now_ns)
                 for name, file in chosen[:EARLY_FILES]}
        self._stream(list(early.values()))
        return early

    def _in_scope(self, files: list[tuple[str, SessionFile]], keys: list[str] | None
                  ) -> list[tuple[str, SessionFile]]:
        """Those of these (source, file) that a listing of these workspaces reads, in their order: what
        `_of_workspaces` keeps of a store that records the folder in each file, all of the others."""
        kept: set[tuple[str, str]] = set()
        for name in dict.fromkeys(name for name, _ in files):
            source = self._by_name[name]
            of_source = [file for each, file in files if each == name]
            if keys is not None and source.workspaces.groups_for(keys) is None:
                of_source = self._of_workspaces(source, of_source, keys)
            kept.update((name, file.path) for file in of_source)
        return [(name, file) for name, file in files if (name, file.path) in kept]

    def _read(self, changed: dict[str, list[SessionFile]], now_ns: int,
              early: dict[tuple[str, str], _Read] | None = None) -> list[_Read]:
        """Read the new or changed files, newest first by file time, in batches: each batch heard by
        `progress` and by the refresh's `rows_read` (its rows in scope, details attached); returned
        in the catalog's order (a search ranks equal hits in the order indexed). The files in `early`
        (`_read_newest`) were read already."""
        done = early or {}
        in_order = [(name, file) for name, files in changed.items() for file in files]
        total = len(in_order)
        if not total:
            return []
        newest_first = sorted((i for i in range(total) if (in_order[i][0], in_order[i][1].path) not in done),
                              key=lambda i: in_order[i][1].mtime_ns, reverse=True)
        items = [in_order[i] for i in newest_first]
        sources = {name: self._by_name[name] for name in changed}
        read: list[_Read] = []
        if self.parallel and total >= PARALLEL_MIN and items:
            for batch in iter_in_processes(functools.partial(_read_batch, sources, now_ns), items):
                read.extend(batch)
                self.progress(Progress("reading", len(done) + len(read), total))
                self._stream(batch)
        else:   # each file reported as it is read, the rows every SERIAL_BATCH files
            for start in range(0, len(items), SERIAL_BATCH):
                for name, file in items[start:start + SERIAL_BATCH]:
                    read.append(_read_file(sources[name], file, now_ns))
                    self.progress(Progress("reading", len(done) + len(read), total))
                self._stream(read[start:])
        by_index = dict(zip(newest_first, read, strict=True))
        return [by_index[i] if i in by_index else done[(in_order[i][0], in_order[i][1].path)] for i in range(total)]

    def _stream(self, batch: list[_Read]) -> None:
        """Hand a batch just read to the refresh's `rows_read`: its rows in the refresh's scope, their
        details attached (a later `load_details` passes over them)."""
        rows_read, wanted = self._rows_read
        if rows_read is None:
            return
        rows = []
        for item in batch:
            row = item.row
            if wanted is None or row.workspace_key in wanted:
                row.details = _fields_of(item.details)
                rows.append(row)
        if rows:
            rows_read(rows)

    @staticmethod
    def _folder_names(directory: str) -> set[str] | None:
        """The names in a folder ({} when it does not exist); None when it cannot be read."""
        try:
            return set(os.listdir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return set()
        except OSError:
            return None

    @staticmethod
    def _scan_meta(source: str, key: str, directory: str) -> dict[str, tuple[str, str, str, int, int]]:
        found: dict[str, tuple[str, str, str, int, int]] = {}
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return found
        with entries:
            for entry in entries:
                if entry.name.endswith(".json") and not is_temp_name(entry.name):
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        found[entry.path] = (source, key, entry.name[:-5], info.st_size, info.st_mtime_ns)
        return found

    @staticmethod
    def _scope(groups: list[str] | None, column: str = "grp") -> tuple[str, list[str]]:
        """An SQL condition for the files of these groups (all when None), and its arguments."""
        if groups is None:
            return "1", []
        marks = ", ".join("?" * len(groups)) or "''"
        return f"{column} IN ({marks})", groups

    def _refresh_meta(self, name: str, keys: list[str], on_disk: dict[str, tuple[str, str, str, int, int]]
                      ) -> dict[tuple[str, str, str], tuple[str | None, bool]]:
        """{(source, workspace key, session id): (title, pinned)} of these workspaces' metadata files."""
        db = self.db
        marks = ", ".join("?" * len(keys)) or "''"
        cached = {row[0]: row for row in db.execute(
            f"SELECT path, source, workspace_key, session_id, size, mtime_ns, title, pinned FROM meta "
            f"WHERE source = ? AND workspace_key IN ({marks})", [name, *keys])}
        updates = []
        for path, (name, key, session_id, size, mtime_ns) in on_disk.items():
            row = cached.get(path)
            if row is None or row[4] != size or row[5] != mtime_ns:
                title, pinned = self._title_and_pin(name, key, session_id)
                row = (path, name, key, session_id, size, mtime_ns, title, int(pinned))
                updates.append(row)
                cached[path] = row
        deleted = [path for path in cached if path not in on_disk]
        if updates or deleted:
            with self._transaction() as tx:
                tx.executemany("DELETE FROM meta WHERE path = ?", [(p,) for p in deleted])
                tx.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?, ?, ?, ?, ?, ?, ?)", updates)
            for path in deleted:
                cached.pop(path)
        return {(row[1], row[2], row[3]): (row[6], bool(row[7])) for row in cached.values()}

    def _title_and_pin(self, name: str, key: str, session_id: str) -> tuple[str | None, bool]:
        try:
            ref = SessionRef(key, session_id, name)
        except RepriseError:   # a metadata file whose name is not a session id lists without it
            return None, False
        return self._by_name[name].title_and_pin(ref)

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            rollback(db)
            raise
        db.execute("COMMIT")

    # --- details -----------------------------------------------------------------------------

    @_guarded
    def load_details(self, rows: Sequence[SessionRow]) -> None:
        """Attach the listing fields to the rows that have none yet, in one query. A row whose file
        changed since it was listed gets an empty session's fields with a warning saying so: the
        fields of another version of the file would not match the row's figures."""
        wanted = [row for row in rows if row.details is None]
        if not wanted:
            return
        select = ("SELECT source, grp, file_id, size, mtime_ns, details "
                  "FROM files JOIN file_data USING (source, grp, file_id)")
        if len(wanted) <= _FEW_ROWS:
            found = {}
            for row in {id(row): row for row in wanted}.values():   # search hits repeat their rows
                found.update(self._details_by_ident(self.db.execute(
                    f"{select} WHERE files.source = ? AND files.grp = ? AND files.file_id = ?",
                    (row.source, row.group, row.file_id))))
        else:
            keys = sorted({row.workspace_key for row in wanted})
            if set(keys) == set(self._workspace_keys()):
                found = self._every_details()
            else:
                scope, arguments = self._scope(keys, "workspace_key")
                found = self._details_by_ident(self.db.execute(f"{select} WHERE {scope}", arguments))
        for row in wanted:
            stored = found.get((row.source, row.group, row.file_id))
            if stored is not None and stored[0] == (row.size, row.mtime_ns):
                row.details = _fields_of(stored[1])
            else:
                row.details = _no_fields(row.workspace_key, CHANGED_WARNING)

    def _every_details(self) -> dict[Ident, tuple[tuple[int, int], str]]:
        """Every file's details with the stat they were read at: each table read whole in its order,
        in one read transaction (joined row by row, the same took three times as long)."""
        db = self.db
        db.execute("BEGIN")
        try:
            stats = {(source, key, file_id): (size, mtime_ns) for source, key, file_id, size, mtime_ns
                     in db.execute("SELECT source, grp, file_id, size, mtime_ns FROM files")}
            texts = db.execute("SELECT source, grp, file_id, details FROM file_data").fetchall()
        finally:
            rollback(db)   # ends the read
        missing = (-1, -1)
        return {(source, key, file_id): (stats.get((source, key, file_id), missing), text)
                for source, key, file_id, text in texts}

    @staticmethod
    def _details_by_ident(cursor: Iterable[tuple[str, str, str, int, int, str]]
                          ) -> dict[Ident, tuple[tuple[int, int], str]]:
        return {(source, key, file_id): ((size, mtime_ns), text)
                for source, key, file_id, size, mtime_ns, text in cursor}

    # --- full-text search ---------------------------------------------------------------

    def search(self, query: str, keys: Iterable[str] | None = None, *, limit: int = 200,
               should_stop: Callable[[], bool] = lambda: False, on_update: UpdateSink | None = None,
               indexing: bool = True) -> list[SearchHit]:
        """Turns whose text matches every word of the query, newest session first (its title, then by
        turn), their rows without details; `on_update` hears the hits as they are found and how far
        the search is. The index answers for the files it holds as they are; the others are scanned
        (`search_engine`), and those parsed then are added to the index. With the index off (the
        setting, or `indexing` False) every file is scanned and nothing is written.

        On a cold cache (many files in scope not listed) the files are scanned before any listing, and
        only those with hits read for their rows (`search_cold`): nothing waits for a listing, nor for
        one another thread runs. A search whose limit fills before every file is scanned then lists
        the scope and is answered over its rows, with what the scan found."""
        from .search_engine import SearchRun, no_update
        from .search_match import Query

        on_update = no_update if on_update is None else on_update
        parsed = Query.of(query)
        if not query.split():
            return []
        wanted = None if keys is None else list(keys)
        use_index = indexing and self.index_enabled
        known = None
        cold = self._cold_files(wanted) if parsed else None
        if cold is not None:
            from .search_cold import ColdSearch

            found = ColdSearch(parsed, cold, keys=None if wanted is None else set(wanted),
                               titles=self._renamed_titles(), list_file=listed_row, limit=limit,
                               should_stop=should_stop, on_update=on_update, parallel=self.parallel).run()
            if not found.listing_needed:
                if use_index and found.parsed and found.update.complete:
                    self._add_to_index(found.parsed)
                return found.update.hits
            known = found.known
            on_update = _not_fewer(on_update, len(found.update.hits))
        rows = self.refresh(wanted)
        titled, indexed, candidates = self._search_start(parsed, rows, use_index)
        run = SearchRun(parsed, rows, self._by_name, indexed=indexed, candidates=candidates,
                        records=self._indexed_records, limit=limit, titled=titled, should_stop=should_stop,
                        on_update=on_update, keep=self._add_to_index if use_index else None,
                        parallel=self.parallel, known=known)
        return run.run().hits

    def _cold_files(self, keys: list[str] | None) -> list[tuple[ListingSource, SessionFile]] | None:
        """The files in scope, newest first, when at least COLD_FILES of them have no row stored as
        they are (a search then scans them before any listing); else None. Looks at the stored rows
        through a read-only connection of its own, never waiting for a listing another thread runs.
        Where one folder's files are told by their heads, only those without such a row are looked at
        to count them; all of them once the search is cold."""
        stored = self._stored_stats()
        if stored is None:
            return None
        by_source: list[tuple[ListingSource, list[SessionFile], HeadKeys | None]] = []
        unlisted = 0
        for source in self.sources:
            rule = source.workspaces
            keyed = rule.kind == "group"
            groups = None if keys is None else rule.groups_for(keys)
            mine: list[SessionFile] = []
            for group in source.groups() if groups is None else groups:
                scanned = source.file_stats(group)
                for file_id, (size, mtime_ns) in scanned.stats.items():
                    mine.append(SessionFile(group if keyed else None, file_id, source.file_path(group, file_id),
                                            size, mtime_ns, group=group))
            new = [file for file in mine
                   if stored.rows.get((source.name, file.group, file.file_id)) != (file.size, file.mtime_ns)]
            known = None
            if keys is not None and groups is None:   # only the new or changed files' heads are looked at
                known = dict(stored.heads.get(source.name, {}))
                new = rule.narrow(new, keys, known)
            unlisted += len(new)
            by_source.append((source, mine, known))
        if unlisted < COLD_FILES:
            return None
        files: list[tuple[ListingSource, SessionFile]] = []
        for source, mine, known in by_source:
            if keys is not None and known is not None:
                mine = source.workspaces.narrow(mine, keys, known)
            files += [(source, file) for file in mine]
        return files

    def _stored_stats(self) -> _Stored | None:
        """The (size, mtime_ns) of every row stored, and the heads told, read through a read-only
        connection of its own (a listing in another thread holds the catalog's); None when the catalog
        is not a file."""
        if self._cache.in_memory:
            return None
        if not self.db_path.exists():
            return _Stored({}, {})
        try:
            db = sqlite3.connect(f"{self.db_path.as_uri()}?mode=ro", uri=True, timeout=1.0)
        except sqlite3.Error:
            return _Stored({}, {})
        try:
            rows = {(source, group, file_id): (size, mtime_ns) for source, group, file_id, size, mtime_ns
                    in db.execute("SELECT source, grp, file_id, size, mtime_ns FROM files")}
            heads: dict[str, HeadKeys] = {}
            for source, path, size, mtime_ns, key in db.execute(
                    "SELECT source, path, size, mtime_ns, workspace_key FROM heads"):
                heads.setdefault(source, {})[path] = (size, mtime_ns, key)
            return _Stored(rows, heads)
        except sqlite3.Error:   # no tables yet, or a damaged file the catalog rebuilds: nothing listed
            return _Stored({}, {})
        finally:
            db.close()

    def _renamed_titles(self) -> dict[tuple[str, str, str], tuple[str | None, bool]]:
        """Reprise's own titles and pins, read from their files (as a listing attaches them)."""
        from .search_cold import renamed_titles

        return renamed_titles(self.sources, self._scan_meta, self._title_and_pin)

    @_guarded
    def _search_start(self, query: Query, rows: list[SessionRow], use_index: bool
                      ) -> tuple[list[SearchHit], dict[str, FileState], dict[int, list[int]]]:
        """The title hits, the index's files still as they are on disk, and its preselection."""
        from .search_engine import title_hits

        titled = title_hits(query.text, self._titled_rows(query.text, rows))   # Reprise's or the agent's titles
        if not use_index or not query:
            return titled, {}, {}
        self._search_tables_ready()
        held = self._index.files()
        indexed = {row.path: held[row.path] for row in rows if _held(held.get(row.path), row)}
        return titled, indexed, self._index.candidates(query) if indexed else {}

    def _titled_rows(self, query: str, rows: list[SessionRow]) -> list[SessionRow]:
        """The rows whose title can hold every word: renamed in Reprise, or whose agent's title (in
        their stored listing fields) holds every word as SQLite's LIKE finds it (ASCII in any case),
        or is not ASCII (its characters may lower to a word's); their fields are loaded, not every
        row's. A word LIKE cannot find as the fields keep it (not ASCII, a quote or a backslash:
        JSON escapes them) loads every row's fields."""
        words = query.lower().split()
        if not all(word.isascii() and word.isprintable() and '"' not in word and "\\" not in word for word in words):
            self.load_details([row for row in rows if not row.title])
            return rows
        # Each word in the fields at all (a fast LIKE), then in the agent's title (only those rows' JSON
        # read): a common word's search loaded the fields of the hundreds of rows whose prompts hold it.
        may_hold = _TITLE_MAY_HOLD if _has_json_functions() else "details LIKE ?{n} ESCAPE '\\'"
        likes = " AND ".join(may_hold.format(n=number) for number in range(1, len(words) + 1))
        patterns = ["%" + word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
                    for word in words]
        holding = set(self.db.execute(f"SELECT source, grp, file_id FROM file_data WHERE {likes}", patterns))
        self.load_details([row for row in rows if not row.title and (row.source, row.group, row.file_id) in holding])
        return [row for row in rows if row.title or (row.details is not None
                                                     and (row.source, row.group, row.file_id) in holding)]

    @_guarded
    def _indexed_records(self, number: int, places: list[int]) -> list[Record]:
        return self._index.records(number, places)

    @_guarded
    def _add_to_index(self, files: list[IndexedFile]) -> None:
        """Index these files, as far as the cap lets the index grow."""
        self._search_tables_ready()
        if self.index_cap is not None:
            from .search_build import within_cap

            files = list(within_cap(files, self.index_cap - self._index.size_bytes()))
        self._index.add(files)

    @_guarded
    def _index_size(self) -> int:
        self._search_tables_ready()
        return self._index.size_bytes()

    @_guarded
    def index_files(self) -> int:
        """How many session files the index holds."""
        self._search_tables_ready()
        return int(self.db.execute("SELECT count(*) FROM search_files").fetchone()[0])

    def index_bytes(self) -> int:
        """The bytes the search index takes in the catalog's file."""
        return self._index_size()

    def build_index(self, keys: Iterable[str] | None = None, *, should_stop: Callable[[], bool] = lambda: False,
                    progress: ProgressSink = no_progress) -> BuildResult:
        """Index the files of these workspaces (all when None) the index does not hold as they are,
        newest first, in worker processes when the catalog may start them (`search_build`)."""
        from .search_build import BuildResult, build

        if not self.index_enabled:
            return BuildResult()
        rows = self.refresh(None if keys is None else list(keys))
        files = self._unindexed(rows)
        try:
            return build(files, self._add_to_index, self._index_size, cap=self.index_cap, parallel=self.parallel,
                         should_stop=should_stop, progress=progress)
        finally:
            if files:
                self._truncate_log()

    @_guarded
    def _truncate_log(self) -> None:
        """The write-ahead log back to nothing after a build wrote the index through it (it keeps its
        largest size otherwise: 48 MB beside a 90 MB index); skipped while another process reads."""
        with contextlib.suppress(sqlite3.OperationalError):
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    @_guarded
    def _unindexed(self, rows: list[SessionRow]) -> list[tuple[ListingSource, SessionFile]]:
        """The rows' files the index does not hold as they are, newest first; what it holds of files
        gone from the disk is dropped on the way."""
        self._search_tables_ready()
        state = self._index.files()
        self._index.remove(path for path in state if not os.path.exists(path))
        stale = [row for row in rows if not row.problem_code and not _held(state.get(row.path), row)]
        stale.sort(key=lambda row: -row.activity_ts)
        from .search_engine import session_file

        return [(self._by_name[row.source], session_file(row)) for row in stale]

    def _search_tables_ready(self) -> None:
        """The index's tables as this version makes them: an index from before issue 27 (every
        text, with content: half the size of the store) is dropped once and the file compacted."""
        if self._search_ready is self.db:
            return
        from .search_index import OLD_TABLE_NAMES as OLD_SEARCH_TABLE_NAMES
        from .search_index import TABLE_NAMES as SEARCH_TABLE_NAMES
        from .search_index import TABLES as SEARCH_TABLES

        db = self.db
        names = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        old = [name for name in OLD_SEARCH_TABLE_NAMES if name in names]
        if old or not set(SEARCH_TABLE_NAMES) <= names:
            before = _file_bytes(self.db_path)
            with self._transaction() as tx:
                for name in (*old, *SEARCH_TABLE_NAMES):
                    tx.execute(f"DROP TABLE IF EXISTS {name}")
                for statement in SEARCH_TABLES:
                    tx.execute(statement)
            if old and not self._cache.in_memory:
                with contextlib.suppress(sqlite3.OperationalError):   # busy: SQLite reuses the free pages
                    db.execute("VACUUM")
                    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                self._search_notices.append(
                    f"The search index of an earlier Reprise ({_megabytes(before)} with the listing cache) was "
                    f"dropped and {self.db_path.name} compacted to {_megabytes(_file_bytes(self.db_path))}; "
                    "the new index is smaller and is built as you search.")
        self._search_ready = db

    # --- derived figures ---------------------------------------------------------------------

    @_guarded
    def set_resume_costs(self, rows: Iterable[SessionRow]) -> None:
        """Store the rows' resume costs, each only if the file is still the one it was computed on."""
        with self._transaction() as db:
            store_resume_costs(db, rows)
