"""The catalog: a SQLite cache of the listing fields of every session file, keyed by path
and checked against (size, mtime_ns), so a listing stats every file but re-reads only the
new or changed ones.

Everything in it can be recomputed from the files: deleting the database is always safe.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import itertools
import json
import multiprocessing
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .catalog_db import CacheDatabase, rollback
from .errors import RepriseError
from .paths import SessionRef, is_temp_name
from .problems import Problem
from .sources.fractal.models import (
    SessionState,
    last_measured_context,
    parse_time,
    usage_totals,
)
from .sources.fractal.store import SessionMeta, Store

SCHEMA = 7
PREVIEW_CHARS = 400
PARALLEL_MIN = 400
_RACY_NS = 3_000_000_000

# Eager columns are what a warm listing needs for every row (identity, change check, sort keys);
# the rest travels as one JSON text parsed on first access, which keeps a 10,000-row SELECT cheap.
_COLUMNS = (
    "workspace_key", "file_id", "size", "mtime_ns", "racy", "activity_ts", "turns", "context_tokens",
    "problem_code", "resume_cost", "resume_cost_key", "content_digest", "details",
)
_DETAILS = (
    "session_id", "first_message", "last_message", "last_status", "pending", "last_activity", "activity_source",
    "input_tokens", "output_tokens", "cost", "history_count", "problem_message", "problem_field", "warning",
)


class SessionRow:
    """One line of a listing: a session, or a file that could not be read and why."""

    __slots__ = (
        "_details",
        "_sessions_dir",
        "activity_ts",
        "content_digest",
        "context_tokens",
        "file_id",
        "mtime_ns",
        "pinned",
        "problem_code",
        "resume_cost",
        "resume_cost_key",
        "size",
        "title",
        "turns",
        "workspace_key",
        "workspace_path",
    )

    def __init__(self, values: tuple, sessions_dir: str, workspace_path: str | None = None):
        """`values` are the catalog columns; the last, the details, may be a _DetailSource that
        fetches the details of a whole listing on first use."""
        (self.workspace_key, self.file_id, self.size, self.mtime_ns, _racy, self.activity_ts, self.turns,
         self.context_tokens, self.problem_code, self.resume_cost, self.resume_cost_key, self.content_digest,
         self._details) = values
        self._sessions_dir = sessions_dir
        self.workspace_path = workspace_path
        self.title: str | None = None
        self.pinned = False

    @classmethod
    def from_fields(cls, *, workspace_key: str, file_id: str, size: int, mtime_ns: int, turns: int = 0,
                    context_tokens: int = 0, problem_code: str | None = None, sessions_dir: str = "/sessions",
                    pinned: bool = False, title: str | None = None, **details) -> SessionRow:
        """A row built from named fields (tests and tools); details default like an empty session's."""
        defaults = dict(zip(_DETAILS, (file_id, "", "", None, False, None, "mtime", 0, 0, 0.0, turns, None, None,
                                       None)))
        defaults.update(details)
        activity = parse_time(defaults["last_activity"]) if defaults["activity_source"] == "history" else None
        activity_ts = activity.timestamp() if activity else mtime_ns / 1e9
        row = cls((workspace_key, file_id, size, mtime_ns, 0, activity_ts, turns, context_tokens, problem_code,
                   None, None, None, defaults), sessions_dir)
        row.pinned, row.title = pinned, title
        return row

    def _detail(self, name: str):
        details = self._details
        if type(details) is not dict:
            if isinstance(details, _DetailSource):
                details = details.get(self.workspace_key, self.file_id)
            details = self._details = json.loads(details)
        return details[name]

    @property
    def path(self) -> str:
        return f"{self._sessions_dir}/{self.file_id}.json"

    @property
    def ref(self) -> SessionRef | None:
        """The session's validated name; None for a file whose name is not a valid id."""
        try:
            return SessionRef(self.workspace_key, self.file_id)
        except RepriseError:
            return None

    @property
    def display_title(self) -> str:
        if self.title:
            return self.title
        if self.problem_code:
            return f"[{self.problem_code}] {self.problem_message}"
        first = self.first_message.strip()
        return first.splitlines()[0] if first else "(no turns yet)"

    def as_dict(self) -> dict:
        return {
            "session_id": self.session_id or self.file_id,
            "workspace_key": self.workspace_key,
            "workspace_path": self.workspace_path,
            "path": self.path,
            "title": self.title,
            "pinned": self.pinned,
            "turns": self.turns,
            "first_message": self.first_message,
            "last_message": self.last_message,
            "last_status": self.last_status,
            "pending": self.pending,
            "last_activity": self.last_activity,
            "activity_source": self.activity_source,
            "size": self.size,
            "context_tokens": self.context_tokens or None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens, "cost": self.cost},
            "resume_cost": self.resume_cost,
            "problem": None if self.problem_code is None else {
                "code": self.problem_code, "message": self.problem_message, "field": self.problem_field},
            "warning": self.warning,
        }


class _DetailSource:
    """The details of every row of one listing, read from the catalog in one query on first use."""

    def __init__(self, catalog: Catalog, keys: list[str]):
        self.catalog = catalog
        self.keys = keys
        self.details: dict[tuple[str, str], str] | None = None

    def get(self, key: str, file_id: str) -> str:
        if self.details is None:
            self.details = self.catalog.details(self.keys)
        return self.details.get((key, file_id)) or json.dumps(dict(zip(_DETAILS, (
            file_id, "", "", None, False, None, "mtime", 0, 0, 0.0, 0, "the file changed; refresh the listing",
            None, None))))


for _name in _DETAILS:
    setattr(SessionRow, _name, property(lambda self, name=_name: self._detail(name)))


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def row_values(key: str, file_id: str, size: int, mtime_ns: int, racy: bool, state: SessionState | None,
               problem, warnings, content_digest: str | None) -> tuple:
    """The catalog columns for one inspected file."""
    if state is None:
        details = dict(zip(_DETAILS, (None, "", "", None, False, None, "mtime", 0, 0, 0.0, 0, problem.message,
                                      problem.field, None)))
        return (key, file_id, size, mtime_ns, int(racy), mtime_ns / 1e9, 0, 0, problem.code, None, None,
                content_digest, json.dumps(details))
    turns = state.turns
    times = [t for t in (parse_time(h.updated_at) for h in state.history) if t is not None]
    if times:
        newest = max(times)
        activity, source, activity_ts = newest.isoformat(), "history", newest.timestamp()
    else:
        activity, source, activity_ts = None, "mtime", mtime_ns / 1e9
    pending = any(t.agent is None for t in turns) or any(h.status == "pending" for h in state.history)
    measured = last_measured_context(state)
    totals = usage_totals(state)
    warning = "; ".join(w.message for w in warnings) or None
    details = dict(zip(_DETAILS, (
        state.session_id, _preview(turns[0].user.message) if turns else "",
        _preview(turns[-1].user.message) if turns else "", turns[-1].status if turns else None, pending,
        activity, source, totals.input_tokens, totals.output_tokens, totals.cost, len(state.history), None, None,
        warning)))
    return (key, file_id, size, mtime_ns, int(racy), activity_ts, len(turns), measured[1] if measured else 0,
            None, None, None, content_digest, json.dumps(details))


def inspect_row(store: Store, key: str, file_id: str, now_ns: int) -> tuple:
    """Read and decode one session file into its catalog columns."""
    path = store.paths.sessions(key) / f"{file_id}.json"
    try:
        inspected = store.inspect(path, file_id)
    except FileNotFoundError:
        problem = Problem(str(path), "vanished", "the file disappeared while it was read")
        return row_values(key, file_id, -1, -1, True, None, problem, [], None)
    decoded = inspected.decoded
    # Re-read on the next listing while the mtime is within the racy window of now: a rewrite in the same
    # tick can keep (size, mtime). Not a file dated in the future (a rewrite now moves its mtime back), and
    # not a problem (the store already retried it while it could be mid-write): those are cached like
    # any row, so a broken file costs one read per change, not one per listing.
    racy = decoded.state is not None and abs(now_ns - inspected.mtime_ns) < _RACY_NS
    return row_values(key, file_id, inspected.size, inspected.mtime_ns, racy, decoded.state, decoded.problem,
                      decoded.warnings, inspected.content_digest)


def _inspect_batch(root: str, items: list[tuple[str, str]], now_ns: int) -> list[tuple]:
    store = Store(Path(root))
    return [inspect_row(store, key, file_id, now_ns) for key, file_id in items]


def inspect_in_parallel(root: str, items: list[tuple[str, str]], now_ns: int) -> list[tuple]:
    """Decode many files on every core: a cold catalog is bound by JSON parsing, which holds the GIL."""
    workers = min(os.cpu_count() or 1, 8)
    if workers < 2:
        store = Store(Path(root))
        return [inspect_row(store, key, file_id, now_ns) for key, file_id in items]
    size = max(16, min(256, len(items) // (workers * 4)))
    batches = [items[start:start + size] for start in range(0, len(items), size)]
    context = multiprocessing.get_context("spawn")
    with _real_stderr(), ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = pool.map(_inspect_batch, [root] * len(batches), batches, [now_ns] * len(batches))
        return [values for batch in results for values in batch]


@contextlib.contextmanager
def _real_stderr():
    """multiprocessing hands sys.stderr's descriptor to its helper process; a UI that captures
    stderr (Textual does) gives it -1, so use the process's real stderr while starting workers."""
    try:
        usable = sys.stderr is not None and sys.stderr.fileno() >= 0
    except (AttributeError, OSError, ValueError):
        usable = False
    if usable or sys.__stderr__ is None:
        yield
        return
    with contextlib.redirect_stderr(sys.__stderr__):
        yield


HIT_START, HIT_END = "\x02", "\x03"


@dataclass(slots=True)
class SearchHit:
    """A turn whose text matched: the session's row, the turn number (from 1), which field, a snippet
    with the matched words between HIT_START and HIT_END."""

    row: SessionRow
    turn: int
    field: str
    snippet: str

    def as_dict(self) -> dict:
        return {"session_id": self.row.file_id, "workspace_key": self.row.workspace_key, "turn": self.turn,
                "field": self.field, "snippet": self.snippet.replace(HIT_START, "[").replace(HIT_END, "]")}


def _utf8(text: str) -> str:
    """SQLite stores UTF-8: lone surrogates (valid in JSON strings) become U+FFFD."""
    return text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text


def _search_records(state: SessionState, row: SessionRow) -> list[tuple]:
    """(text, path, workspace_key, turn, field) for every searchable text of a session."""
    records = []
    numbers = {}
    for number, turn in enumerate(state.turns, start=1):
        numbers[turn.turn_id] = number
        records.append((turn.user.message, row.path, row.workspace_key, number, "user"))
        if turn.agent is not None:
            if turn.agent.response:
                records.append((turn.agent.response, row.path, row.workspace_key, number, "response"))
            if turn.agent.error:
                records.append((turn.agent.error, row.path, row.workspace_key, number, "error"))
    for entry in state.history:
        number = numbers.get(entry.turn_id, 0)
        for field_name, items in (("files", entry.files_read + entry.files_modified), ("commands", entry.commands_run)):
            if items:
                records.append(("\n".join(items), row.path, row.workspace_key, number, field_name))
        if entry.error and number == 0:
            records.append((entry.error, row.path, row.workspace_key, number, "error"))
    return records


def _guarded(method):
    """One thread at a time uses the catalog's connection (the TUI refreshes, searches and fills costs
    from different workers), and a database that fails is recovered from and the call retried:
    the catalog is a cache and never breaks a command."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            for attempt in itertools.count():
                try:
                    return method(self, *args, **kwargs)
                except sqlite3.Error as exc:
                    self._cache.recover(exc, give_up=attempt > 0)
    return wrapper


@contextlib.contextmanager
def _no_gc_pauses():
    """A listing allocates tens of thousands of small objects that all live on; collecting them
    mid-listing costs more than the listing itself."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class Catalog:
    """The listing cache of one state root."""

    def __init__(self, store: Store, cache_dir: Path, *, parallel: bool = False):
        """`parallel` lets a large refresh decode files in spawned processes; only programs whose
        main module is safe to re-import (an `if __name__ == "__main__"` guard) may turn it on."""
        self.store = store
        self.parallel = parallel
        root_id = hashlib.sha256(str(store.root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.db_path = cache_dir / f"catalog-{root_id}.sqlite"
        self._cache = CacheDatabase(self.db_path, SCHEMA, self._create)
        self._lock = threading.RLock()
        self.scan_problems: list[Problem] = []

    # --- database ------------------------------------------------------------------------

    @property
    def db(self) -> sqlite3.Connection:
        return self._cache.connection

    def take_notices(self) -> list[str]:
        """One line for each time the cache was rebuilt or bypassed since the last call."""
        return self._cache.take_notices()

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        """This schema's tables, replacing an older version's, inside the opener's transaction
        (one statement at a time: executescript would commit it)."""
        for statement in (
            "DROP TABLE IF EXISTS files",
            "DROP TABLE IF EXISTS meta",
            "DROP TABLE IF EXISTS search",
            "DROP TABLE IF EXISTS search_state",
            """CREATE TABLE files (
                workspace_key TEXT NOT NULL, file_id TEXT NOT NULL, size INTEGER NOT NULL,
                mtime_ns INTEGER NOT NULL, racy INTEGER NOT NULL, activity_ts REAL NOT NULL,
                turns INTEGER NOT NULL, context_tokens INTEGER NOT NULL, problem_code TEXT,
                resume_cost INTEGER, resume_cost_key TEXT, content_digest TEXT, details TEXT NOT NULL,
                PRIMARY KEY (workspace_key, file_id)) WITHOUT ROWID""",
            """CREATE TABLE meta (
                path TEXT PRIMARY KEY, workspace_key TEXT NOT NULL, session_id TEXT NOT NULL,
                size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, title TEXT, pinned INTEGER NOT NULL)""",
            """CREATE VIRTUAL TABLE search USING fts5(
                text, path UNINDEXED, workspace_key UNINDEXED, turn UNINDEXED, field UNINDEXED,
                tokenize = 'unicode61 remove_diacritics 2')""",
            """CREATE TABLE search_state (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                                       first_rowid INTEGER NOT NULL, last_rowid INTEGER NOT NULL)""",
        ):
            db.execute(statement)

    def close(self) -> None:
        self._cache.close()

    # --- refresh ---------------------------------------------------------------------------

    @_guarded
    def refresh(self, keys: Iterable[str] | None = None) -> list[SessionRow]:
        """Bring the cache up to date with the disk for these workspaces (all when None); return their rows."""
        with _no_gc_pauses():
            return self._refresh(keys)

    def _refresh(self, keys: Iterable[str] | None) -> list[SessionRow]:
        keys = list(self.store.workspace_keys() if keys is None else keys)
        now_ns = time.time_ns()
        on_disk: dict[tuple[str, str], tuple[int, int]] = {}
        meta_on_disk = {}
        base = f"{self.store.paths.workspaces}/"
        self.scan_problems = []
        for key in keys:
            problem = self._scan_sessions(key, f"{base}{key}/sessions", on_disk)
            if problem is not None:
                self.scan_problems.append(problem)
            meta_on_disk.update(self._scan_meta(key, f"{base}{key}/reprise/meta"))
        cached = self._cached_rows(keys)
        changed = [ident for ident, (size, mtime_ns) in on_disk.items()
                   if (old := cached.get(ident)) is None or old[2] != size or old[3] != mtime_ns or old[4]]
        deleted = [ident for ident in cached if ident not in on_disk]
        inspected = (inspect_in_parallel(str(self.store.root), changed, now_ns)
                     if self.parallel and len(changed) >= PARALLEL_MIN
                     else [inspect_row(self.store, key, file_id, now_ns) for key, file_id in changed])
        new_values = [self._carry_resume_cost(values, cached.get((values[0], values[1]))) for values in inspected]
        meta_rows = self._refresh_meta(keys, meta_on_disk)
        if new_values or deleted:
            with self._transaction() as db:
                db.executemany("DELETE FROM files WHERE workspace_key = ? AND file_id = ?", deleted)
                db.executemany(f"INSERT OR REPLACE INTO files VALUES ({', '.join('?' * len(_COLUMNS))})",
                               new_values)
            for ident in deleted:
                cached.pop(ident)
            for values in new_values:
                cached[(values[0], values[1])] = values
        sessions_dirs = {key: f"{base}{key}/sessions" for key in keys}
        workspace_paths = {key: self.store.workspace_path(key) for key in keys}
        rows = []
        for values in cached.values():
            key = values[0]
            row = SessionRow(values, sessions_dirs[key], workspace_paths[key])
            meta = meta_rows.get((key, row.file_id))
            if meta is not None:
                row.title, row.pinned = meta
            rows.append(row)
        return rows

    @staticmethod
    def _scan_sessions(key: str, directory: str, found: dict[tuple[str, str], tuple[int, int]]) -> Problem | None:
        """Add the folder's session files to `found`; a folder that cannot be read is a problem."""
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            return Problem(directory, "unreadable_folder",
                           f"the sessions folder cannot be read ({exc.strerror or exc}); its sessions are not listed")
        with entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(".json") or (name[0] == "." and is_temp_name(name)):
                    continue
                try:
                    info = entry.stat()
                    found[(key, name[:-5])] = (info.st_size, info.st_mtime_ns)
                except OSError:
                    found[(key, name[:-5])] = (-1, -1)
        return None

    @staticmethod
    def _scan_meta(key: str, directory: str) -> dict[str, tuple[str, str, int, int]]:
        found = {}
        try:
            entries = os.scandir(directory)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return found
        with entries:
            for entry in entries:
                if entry.name.endswith(".json") and not is_temp_name(entry.name):
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        found[entry.path] = (key, entry.name[:-5], info.st_size, info.st_mtime_ns)
        return found

    def _select(self, columns: str, keys: list[str]):
        if set(keys) == set(self.store.workspace_keys()):
            return self.db.execute(f"SELECT {columns} FROM files")
        marks = ", ".join("?" * len(keys))
        return self.db.execute(f"SELECT {columns} FROM files WHERE workspace_key IN ({marks})", keys)

    def _cached_rows(self, keys: list[str]) -> dict[tuple[str, str], tuple]:
        """Every column but the details (the bulky part, fetched only when a row's details are read)."""
        source = _DetailSource(self, keys)
        cursor = self._select(", ".join(_COLUMNS[:-1]), keys)
        return {(row[0], row[1]): (*row, source) for row in cursor}

    @_guarded
    def details(self, keys: list[str]) -> dict[tuple[str, str], str]:
        return {(key, file_id): text for key, file_id, text in self._select("workspace_key, file_id, details", keys)}

    @staticmethod
    def _carry_resume_cost(values: tuple, old: tuple | None) -> tuple:
        """A re-read file whose bytes did not change keeps its computed resume cost."""
        if old is None or old[11] is None or old[11] != values[11]:
            return values
        return (*values[:9], old[9], old[10], *values[11:])

    def _refresh_meta(self, keys: list[str], on_disk: dict) -> dict[tuple[str, str], tuple[str | None, bool]]:
        db = self.db
        marks = ", ".join("?" * len(keys)) or "''"
        cached = {row[0]: row for row in db.execute(
            f"SELECT path, workspace_key, session_id, size, mtime_ns, title, pinned FROM meta "
            f"WHERE workspace_key IN ({marks})", keys)}
        updates = []
        for path, (key, session_id, size, mtime_ns) in on_disk.items():
            row = cached.get(path)
            if row is None or row[3] != size or row[4] != mtime_ns:
                meta = self._read_meta(key, session_id)
                row = (path, key, session_id, size, mtime_ns, meta.title, int(meta.pinned))
                updates.append(row)
                cached[path] = row
        deleted = [path for path in cached if path not in on_disk]
        if updates or deleted:
            with self._transaction() as tx:
                tx.executemany("DELETE FROM meta WHERE path = ?", [(p,) for p in deleted])
                tx.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?, ?, ?, ?, ?, ?)", updates)
            for path in deleted:
                cached.pop(path)
        return {(row[1], row[2]): (row[5], bool(row[6])) for row in cached.values()}

    def _read_meta(self, key: str, session_id: str) -> SessionMeta:
        try:
            return self.store.read_meta(SessionRef(key, session_id))
        except (RepriseError, OSError, ValueError):  # a bad name or metadata file lists without it
            return SessionMeta()

    @contextlib.contextmanager
    def _transaction(self):
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            rollback(db)
            raise
        db.execute("COMMIT")

    # --- full-text search ---------------------------------------------------------------

    @_guarded
    def search(self, query: str, keys: Iterable[str] | None = None, *, limit: int = 200,
               should_stop=lambda: False) -> list[SearchHit]:
        """Turns whose text matches every word of the query, best first. Files are indexed on
        first search and re-indexed when they change, so listing never pays for it."""
        terms = query.split()
        if not terms:
            return []
        keys = list(self.store.workspace_keys() if keys is None else keys)
        rows = self.refresh(keys)
        self._index(rows, should_stop)
        match = " ".join('"' + term.replace('"', '""') + '"' for term in terms)
        marks = ", ".join("?" * len(keys)) or "''"
        cursor = self.db.execute(
            f"SELECT path, workspace_key, turn, field, snippet(search, 0, ?, ?, '…', 16) FROM search "
            f"WHERE search MATCH ? AND workspace_key IN ({marks}) ORDER BY rank LIMIT ?",
            [HIT_START, HIT_END, match, *keys, limit])
        by_path = {row.path: row for row in rows}
        hits = []
        for path, key, turn, field_name, snippet in cursor:
            row = by_path.get(path)
            if row is not None:
                hits.append(SearchHit(row, int(turn), field_name, snippet))
        return hits

    def _index(self, rows: list[SessionRow], should_stop) -> None:
        """Index the turns of new or changed files. Each file's records take a contiguous rowid
        range, so a re-index deletes by rowid instead of scanning the whole index."""
        state = {path: (size, mtime, first, last)
                 for path, size, mtime, first, last in self.db.execute("SELECT * FROM search_state")}
        listed = {row.path for row in rows}
        stale = [row for row in rows if state.get(row.path, (None, None))[:2] != (row.size, row.mtime_ns)
                 and not row.problem_code]
        gone = [path for path in state if path not in listed and not os.path.exists(path)]
        next_rowid = (self.db.execute("SELECT max(rowid) FROM search").fetchone()[0] or 0) + 1
        batch: list[tuple] = []
        done: list[tuple] = []
        for row in stale:
            if should_stop():
                break
            inspected = self.store.inspect(Path(row.path), row.file_id)
            if inspected.decoded.state is None:
                continue
            records = _search_records(inspected.decoded.state, row)
            first = next_rowid
            batch.extend((next_rowid + i, _utf8(text), *rest) for i, (text, *rest) in enumerate(records))
            next_rowid += len(records)
            done.append((row.path, row.size, row.mtime_ns, first, next_rowid - 1))
            if len(batch) > 20_000:
                self._write_index(done, batch, state)
                batch, done = [], []
        self._write_index(done, batch, state, gone)

    def _write_index(self, done: list[tuple], records: list[tuple], state: dict, gone: list[str] = ()) -> None:
        old_ranges = [state[path][2:] for path in [entry[0] for entry in done] + list(gone) if path in state]
        with self._transaction() as db:
            db.executemany("DELETE FROM search WHERE rowid BETWEEN ? AND ?", old_ranges)
            db.executemany("DELETE FROM search_state WHERE path = ?", [(path,) for path in gone])
            db.executemany("INSERT INTO search (rowid, text, path, workspace_key, turn, field) "
                           "VALUES (?, ?, ?, ?, ?, ?)", records)
            db.executemany("INSERT OR REPLACE INTO search_state VALUES (?, ?, ?, ?, ?)", done)

    # --- derived figures ---------------------------------------------------------------------

    @_guarded
    def set_resume_costs(self, costs: list[tuple[int, str, str, str, int, int]]) -> None:
        """Store meter totals as (cost, cost key, workspace key, file id, size, mtime_ns), each only
        if the file is still the one it was computed on."""
        with self._transaction() as db:
            db.executemany("UPDATE files SET resume_cost = ?, resume_cost_key = ? "
                           "WHERE workspace_key = ? AND file_id = ? AND size = ? AND mtime_ns = ?", costs)

