"""The catalog: a SQLite cache of the listing fields of every session file, keyed by path
and checked against (size, mtime_ns), so a listing stats every file but re-reads only the
new or changed ones.

Everything in it can be recomputed from the files: deleting the database is always safe.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .codec import Problem
from .errors import RepriseError
from .models import SessionState, last_measured_context, parse_time, usage_totals
from .paths import SessionRef, is_temp_name
from .store import SessionMeta, Store

SCHEMA = 5
PREVIEW_CHARS = 400
_RACY_NS = 3_000_000_000

_COLUMNS = (
    "path", "workspace_key", "file_id", "size", "mtime_ns", "racy", "session_id", "turns",
    "first_message", "last_message", "last_status", "pending", "last_activity", "activity_source",
    "context_tokens", "input_tokens", "output_tokens", "cost", "history_count",
    "problem_code", "problem_message", "problem_field", "warning", "resume_cost", "resume_cost_key",
    "content_digest",
)


@dataclass(slots=True)
class SessionRow:
    """One line of a listing: a session, or a file that could not be read and why."""

    path: str
    workspace_key: str
    file_id: str
    size: int
    mtime_ns: int
    session_id: str | None
    turns: int
    first_message: str
    last_message: str
    last_status: str | None
    pending: bool
    last_activity: str | None
    activity_source: str
    context_tokens: int
    input_tokens: int
    output_tokens: int
    cost: float
    history_count: int
    problem_code: str | None
    problem_message: str | None
    problem_field: str | None
    warning: str | None
    resume_cost: int | None
    resume_cost_key: str | None
    content_digest: str | None
    workspace_path: str | None = None
    title: str | None = None
    pinned: bool = False

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
        first = self.first_message.strip().splitlines()[0] if self.first_message.strip() else ""
        return first or "(no turns yet)"

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
            "pending": bool(self.pending),
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


def _preview(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def row_values(path: str, key: str, file_id: str, size: int, mtime_ns: int, racy: bool,
               state: SessionState | None, problem, warnings, content_digest: str | None) -> tuple:
    """The catalog columns for one inspected file."""
    if state is None:
        return (path, key, file_id, size, mtime_ns, int(racy), None, 0, "", "", None, 0, None, "mtime",
                0, 0, 0, 0.0, 0, problem.code, problem.message, problem.field, None, None, None, content_digest)
    turns = state.turns
    times = [t for t in (parse_time(h.updated_at) for h in state.history) if t is not None]
    if times:
        activity, source = max(times).isoformat(), "history"
    else:
        activity, source = None, "mtime"
    pending = any(t.agent is None for t in turns) or any(h.status == "pending" for h in state.history)
    measured = last_measured_context(state)
    totals = usage_totals(state)
    warning = "; ".join(w.message for w in warnings) or None
    return (path, key, file_id, size, mtime_ns, int(racy), state.session_id, len(turns),
            _preview(turns[0].user.message) if turns else "", _preview(turns[-1].user.message) if turns else "",
            turns[-1].status if turns else None, int(pending), activity, source,
            measured[1] if measured else 0, totals.input_tokens, totals.output_tokens, totals.cost,
            len(state.history), None, None, None, warning, None, None, content_digest)


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


class Catalog:
    """The listing cache of one state root."""

    def __init__(self, store: Store, cache_dir: Path):
        self.store = store
        root_id = hashlib.sha256(str(store.root.resolve()).encode("utf-8", "surrogateescape")).hexdigest()[:16]
        self.db_path = cache_dir / f"catalog-{root_id}.sqlite"
        self._db: sqlite3.Connection | None = None

    # --- database ------------------------------------------------------------------------

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def _open(self) -> sqlite3.Connection:
        self.db_path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        for attempt in range(2):
            try:
                db = sqlite3.connect(self.db_path, timeout=10, check_same_thread=False, isolation_level=None)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                version = db.execute("PRAGMA user_version").fetchone()[0]
                if version != SCHEMA:
                    self._create(db)
                return db
            except sqlite3.DatabaseError:
                if attempt:
                    raise
                with contextlib.suppress(NameError):
                    db.close()
                for suffix in ("", "-wal", "-shm"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(f"{self.db_path}{suffix}")
        raise AssertionError("unreachable")

    @staticmethod
    def _create(db: sqlite3.Connection) -> None:
        db.executescript(f"""
            DROP TABLE IF EXISTS files;
            DROP TABLE IF EXISTS meta;
            DROP TABLE IF EXISTS search;
            DROP TABLE IF EXISTS search_state;
            CREATE TABLE files (
                path TEXT PRIMARY KEY, workspace_key TEXT NOT NULL, file_id TEXT NOT NULL,
                size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, racy INTEGER NOT NULL,
                session_id TEXT, turns INTEGER NOT NULL, first_message TEXT NOT NULL,
                last_message TEXT NOT NULL, last_status TEXT, pending INTEGER NOT NULL,
                last_activity TEXT, activity_source TEXT NOT NULL, context_tokens INTEGER NOT NULL,
                input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL, cost REAL NOT NULL,
                history_count INTEGER NOT NULL, problem_code TEXT, problem_message TEXT,
                problem_field TEXT, warning TEXT, resume_cost INTEGER, resume_cost_key TEXT,
                content_digest TEXT);
            CREATE TABLE meta (
                path TEXT PRIMARY KEY, workspace_key TEXT NOT NULL, session_id TEXT NOT NULL,
                size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, title TEXT, pinned INTEGER NOT NULL);
            CREATE VIRTUAL TABLE search USING fts5(
                text, path UNINDEXED, workspace_key UNINDEXED, turn UNINDEXED, field UNINDEXED,
                tokenize = 'unicode61 remove_diacritics 2');
            CREATE TABLE search_state (path TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL);
            PRAGMA user_version = {SCHEMA};
        """)

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # --- refresh ---------------------------------------------------------------------------

    def refresh(self, keys: Iterable[str] | None = None) -> list[SessionRow]:
        """Bring the cache up to date with the disk for these workspaces (all when None); return their rows."""
        keys = list(self.store.workspace_keys() if keys is None else keys)
        now_ns = time.time_ns()
        on_disk = {}
        meta_on_disk = {}
        for key in keys:
            on_disk.update(self._scan_sessions(key))
            meta_on_disk.update(self._scan_meta(key))
        cached = self._cached_rows(keys)
        changed = []
        for path, (key, file_id, size, mtime_ns) in on_disk.items():
            row = cached.get(path)
            if row is None or row[3] != size or row[4] != mtime_ns or row[5]:
                changed.append((path, key, file_id))
        deleted = [path for path in cached if path not in on_disk]
        new_values = [self._carry_resume_cost(self._inspect(path, key, file_id, now_ns), cached.get(path))
                      for path, key, file_id in changed]
        meta_rows = self._refresh_meta(keys, meta_on_disk)
        if new_values or deleted:
            with self._transaction() as db:
                db.executemany("DELETE FROM files WHERE path = ?", [(p,) for p in deleted])
                db.executemany(f"INSERT OR REPLACE INTO files VALUES ({', '.join('?' * len(_COLUMNS))})",
                               new_values)
            for path in deleted:
                cached.pop(path)
            for values in new_values:
                cached[values[0]] = values
        workspace_paths = {key: self.store.workspace_path(key) for key in keys}
        rows = []
        for values in cached.values():
            row = SessionRow(*values[:5], *values[6:], workspace_paths.get(values[1]))
            row.pending = bool(row.pending)
            meta = meta_rows.get((row.workspace_key, row.file_id))
            if meta is not None:
                row.title, row.pinned = meta
            rows.append(row)
        return rows

    def _scan_sessions(self, key: str) -> dict[str, tuple[str, str, int, int]]:
        found = {}
        try:
            entries = os.scandir(self.store.paths.sessions(key))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return found
        with entries:
            for entry in entries:
                name = entry.name
                if not name.endswith(".json") or is_temp_name(name):
                    continue
                try:
                    info = entry.stat()
                    size, mtime_ns = info.st_size, info.st_mtime_ns
                except OSError:
                    size, mtime_ns = -1, -1
                found[entry.path] = (key, name[:-5], size, mtime_ns)
        return found

    def _scan_meta(self, key: str) -> dict[str, tuple[str, str, int, int]]:
        found = {}
        try:
            entries = os.scandir(self.store.paths.meta_dir(key))
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return found
        with entries:
            for entry in entries:
                if entry.name.endswith(".json") and not is_temp_name(entry.name):
                    with contextlib.suppress(OSError):
                        info = entry.stat(follow_symlinks=False)
                        found[entry.path] = (key, entry.name[:-5], info.st_size, info.st_mtime_ns)
        return found

    def _cached_rows(self, keys: list[str]) -> dict[str, tuple]:
        db = self.db
        if len(keys) == len(self.store.workspace_keys()):
            cursor = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM files")
        else:
            marks = ", ".join("?" * len(keys))
            cursor = db.execute(f"SELECT {', '.join(_COLUMNS)} FROM files WHERE workspace_key IN ({marks})", keys)
        return {row[0]: row for row in cursor}

    def _inspect(self, path: str, key: str, file_id: str, now_ns: int) -> tuple:
        try:
            inspected = self.store.inspect(Path(path), file_id)
        except FileNotFoundError:
            problem = Problem(path, "vanished", "the file disappeared while it was read")
            return row_values(path, key, file_id, -1, -1, True, None, problem, [], None)
        decoded = inspected.decoded
        racy = now_ns - inspected.mtime_ns < _RACY_NS
        return row_values(path, key, file_id, inspected.size, inspected.mtime_ns, racy,
                          decoded.state, decoded.problem, decoded.warnings, inspected.content_digest)

    @staticmethod
    def _carry_resume_cost(values: tuple, old: tuple | None) -> tuple:
        """A re-read file whose bytes did not change keeps its computed resume cost."""
        if old is None or old[-1] is None or old[-1] != values[-1]:
            return values
        return (*values[:-3], old[-3], old[-2], values[-1])

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
        except Exception:
            return SessionMeta()

    @contextlib.contextmanager
    def _transaction(self):
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # --- full-text search ---------------------------------------------------------------

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
        state = {path: (size, mtime) for path, size, mtime in self.db.execute("SELECT * FROM search_state")}
        stale = [row for row in rows if state.get(row.path) != (row.size, row.mtime_ns) and not row.problem_code]
        gone = [(path,) for path in state if path not in {row.path for row in rows}
                and not os.path.exists(path)]
        batch: list[tuple] = []
        done: list[SessionRow] = []
        for row in stale:
            if should_stop():
                break
            inspected = self.store.inspect(Path(row.path), row.file_id)
            if inspected.decoded.state is None:
                continue
            batch.extend(_search_records(inspected.decoded.state, row))
            done.append(row)
            if len(batch) > 5000:
                self._write_index(done, batch)
                batch, done = [], []
        self._write_index(done, batch, gone)

    def _write_index(self, rows: list[SessionRow], records: list[tuple], gone: list[tuple] = ()) -> None:
        with self._transaction() as db:
            db.executemany("DELETE FROM search WHERE path = ?", [(row.path,) for row in rows] + list(gone))
            db.executemany("DELETE FROM search_state WHERE path = ?", gone)
            db.executemany("INSERT INTO search VALUES (?, ?, ?, ?, ?)", records)
            db.executemany("INSERT OR REPLACE INTO search_state VALUES (?, ?, ?)",
                           [(row.path, row.size, row.mtime_ns) for row in rows])

    # --- derived figures ---------------------------------------------------------------------

    def set_resume_costs(self, costs: list[tuple[int, str, str, int, int]]) -> None:
        """Store meter totals as (cost, key, path, size, mtime_ns), each only if the file is still
        the one it was computed on."""
        with self._transaction() as db:
            db.executemany("UPDATE files SET resume_cost = ?, resume_cost_key = ? "
                           "WHERE path = ? AND size = ? AND mtime_ns = ?", costs)

