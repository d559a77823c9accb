"""The catalog's SQLite file, opened so that it can never break a command: created private (0600),
a corrupt one moved aside and rebuilt, and one that is locked, from a newer Reprise or in a folder
that cannot be used replaced by an in-memory database (a read-through listing), each said once.

Another Reprise process may hold the file open, so nothing here deletes it: a broken file and its
`-wal`/`-shm` are renamed, under an exclusive `flock` that every opener takes shared.

Closing any descriptor of a file drops every POSIX lock the process holds on it, the locks through
which SQLite's connections in this process tell other processes that they use the shared memory
(`-shm`): one dropped, the next process to connect takes itself for the only user and resets the
memory the others have mapped, and they die of SIGBUS or read wrong rows (SQLite's "How To Corrupt
An SQLite Database File", 2.2). So the files are only ever opened here before connecting, and never
while another connection of this process holds the same database.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from .errors import RepriseError

BUSY_TIMEOUT_S = 5.0
_SIDE_FILES = ("-wal", "-shm")
# Error names (Python 3.11's sqlite_errorname) that mean the file itself is damaged, and those that
# mean a connection went stale (another Reprise rebuilt the tables under it) and a reconnect helps.
_BROKEN = {"SQLITE_CORRUPT", "SQLITE_NOTADB"}
_STALE = {"SQLITE_ERROR", "SQLITE_SCHEMA"}
_HEADER = b"SQLite format 3\x00"

# The databases this process holds connections to, by the main file's (device, inode), with how
# many; changed, and read before any file of a database is opened, only under `_HELD_LOCK`.
_HELD: dict[tuple[int, int], int] = {}
_HELD_LOCK = threading.Lock()


def rollback(db: sqlite3.Connection) -> None:
    """End a failed transaction; SQLite may have ended it already (a full disk does), and the
    first error is the one worth reporting."""
    if db.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            db.execute("ROLLBACK")


class _Unusable(Exception):
    """The on-disk database cannot be used now; the sentence says why."""


class _Broken(Exception):
    """The file is damaged: it is moved aside and rebuilt."""


class CacheDatabase:
    """One connection to a cache database, on disk when possible, in memory otherwise."""

    def __init__(self, path: Path, schema: int, create: Callable[[sqlite3.Connection], None], *, layout: int = 0):
        """`create` makes the tables of version `schema` (dropping older ones) inside a transaction.
        `layout` (16 bits) tells layouts of one schema apart (a digest of their columns): a file of
        another layout is rebuilt, and only a file of a higher `schema` counts as a newer Reprise's."""
        self.path = path
        self.schema = schema
        self.version = schema << 16 | layout & 0xFFFF   # what the file's user_version holds
        self.create = create
        self.in_memory = False
        self._db: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self._held: tuple[int, int] | None = None   # the key of `_HELD` the open connection counts under
        self._notices: list[str] = []
        self._said: set[str] = set()

    @property
    def connection(self) -> sqlite3.Connection:
        if self._db is None:
            self._db = self._open()
        return self._db

    def close(self) -> None:
        if self._db is not None:
            with _HELD_LOCK:
                self._db.close()
                self._db = None
                if self._held is not None:
                    _HELD[self._held] -= 1
                    if not _HELD[self._held]:
                        del _HELD[self._held]
                    self._held = None

    def take_notices(self) -> list[str]:
        """One-line reports not yet shown: the cache was rebuilt or is bypassed, and why."""
        notices, self._notices = self._notices, []
        return notices

    def _say(self, text: str) -> None:
        if text not in self._said:
            self._said.add(text)
            self._notices.append(text)

    # --- opening -----------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if not self.in_memory:
            try:
                return self._open_file()
            except _Unusable as exc:
                self._fall_back(str(exc))
        return self._memory()

    def _open_file(self) -> sqlite3.Connection:
        try:
            return self._connect()
        except _Broken as broken:
            self._replace_broken(broken)
        try:
            return self._connect()
        except _Broken as broken:
            raise _Unusable(f"it is still unreadable after a rebuild ({broken})") from None

    def _replace_broken(self, broken: Exception) -> None:
        aside = self._move_aside()
        where = f"moved to {aside.name} and" if aside else "replaced by another Reprise process and"
        self._say(f"The catalog cache {self.path} was damaged ({broken}); it was {where} rebuilt.")

    def _fall_back(self, why: str) -> None:
        self.close()
        self.in_memory = True
        self._say(f"Cannot use the catalog cache {self.path}: {why}; listing without it.")

    def _memory(self) -> sqlite3.Connection:
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self._build(db)
        return db

    def _connect(self) -> sqlite3.Connection:
        with self._opening_lock(fcntl.LOCK_SH), _HELD_LOCK:
            self._identity = self._held_identity() or self._create_private()
            try:
                db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False,
                                     isolation_level=None)
            except sqlite3.Error as exc:
                raise _Unusable(str(exc)) from None
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                self._build(db)
            except BaseException as exc:
                db.close()
                if isinstance(exc, sqlite3.Error):
                    raise self._classified(exc) from None
                raise
            self._held = self._identity
            _HELD[self._held] = _HELD.get(self._held, 0) + 1
            return db

    def _held_identity(self) -> tuple[int, int] | None:
        """The file's identity when a connection of this process holds it: then none of its files
        may be opened (their modes were narrowed when that connection was made)."""
        try:
            info = os.stat(self.path, follow_symlinks=False)
        except OSError:
            return None
        identity = info.st_dev, info.st_ino
        return identity if identity in _HELD else None

    def _build(self, db: sqlite3.Connection) -> None:
        """Create the tables unless they are this version's already; refuse a newer version's file."""
        if db.execute("PRAGMA user_version").fetchone()[0] == self.version:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            version = db.execute("PRAGMA user_version").fetchone()[0]
            if version >> 16 > self.schema:
                raise _Unusable(f"it was made by a newer Reprise (schema {version >> 16}; this one uses "
                                f"{self.schema}), so it is left as it is (delete it to rebuild it for this version)")
            if version != self.version:
                self.create(db)
                db.execute(f"PRAGMA user_version = {int(self.version)}")
        except BaseException:
            rollback(db)
            raise
        db.execute("COMMIT")

    def _classified(self, exc: sqlite3.Error) -> Exception:
        name = getattr(exc, "sqlite_errorname", "")
        if name in _BROKEN:
            return _Broken(str(exc))
        if name in ("SQLITE_BUSY", "SQLITE_LOCKED"):
            return _Unusable(f"it is locked by another process for more than {BUSY_TIMEOUT_S:g} s")
        return _Unusable(str(exc))

    def _create_private(self) -> tuple[int, int]:
        """Create the file 0600 before SQLite does (its -wal and -shm take the file's mode), and
        narrow the modes of a file, -wal and -shm an older Reprise left readable by others: before
        connecting, while this process holds no lock on them. A file that is not a database is
        found here, before SQLite opens it and resets the -wal and -shm beside it."""
        try:
            self._make_folder()
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise _Unusable(exc.strerror or str(exc)) from None
        try:
            info = os.fstat(fd)
            if info.st_mode & 0o077:
                with contextlib.suppress(PermissionError):
                    os.fchmod(fd, 0o600)
            identity = info.st_dev, info.st_ino
            if info.st_size and os.pread(fd, len(_HEADER), 0) != _HEADER:
                self._identity = identity
                raise _Broken("file is not a database")
            self._make_side_files_private()
            return identity
        except OSError as exc:
            raise _Unusable(exc.strerror or str(exc)) from None
        finally:
            os.close(fd)

    def _make_folder(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        except (FileExistsError, NotADirectoryError):
            raise _Unusable(f"{self.path.parent} is not a folder (REPRISE_CACHE_DIR names the cache folder)") from None

    def _make_side_files_private(self) -> None:
        for suffix in _SIDE_FILES:
            try:
                fd = os.open(f"{self.path}{suffix}", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if os.fstat(fd).st_mode & 0o077:
                    with contextlib.suppress(PermissionError):
                        os.fchmod(fd, 0o600)
            finally:
                os.close(fd)

    # --- recovering --------------------------------------------------------------------------

    def recover(self, exc: sqlite3.Error, *, give_up: bool = False) -> None:
        """After an operation failed with `exc`, make the next `connection` one worth retrying on:
        a damaged file is moved aside (the next connection rebuilds it), a stale connection is
        reopened, anything else (or `give_up`: it failed again) switches to memory. Raises when
        even the in-memory database failed."""
        if self.in_memory:
            raise RepriseError(f"The in-memory catalog failed: {exc}.") from exc
        self.close()
        classified = self._classified(exc)
        if give_up:
            self._fall_back(f"it failed again after a recovery ({exc})")
        elif isinstance(classified, _Broken):
            try:
                self._replace_broken(exc)
            except _Unusable as unusable:
                self._fall_back(str(unusable))
        elif getattr(exc, "sqlite_errorname", None) not in _STALE:
            self._fall_back(str(classified))

    def _move_aside(self) -> Path | None:
        """Rename the broken file and its -wal/-shm to one timestamped name; None when another
        process already did (the file at the path is no longer the one found broken)."""
        with self._opening_lock(fcntl.LOCK_EX):
            try:
                info = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                return None
            except OSError as exc:
                raise _Unusable(exc.strerror or str(exc)) from None
            if self._identity is not None and (info.st_dev, info.st_ino) != self._identity:
                return None
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            aside = self.path.with_name(f"{self.path.stem}.broken-{stamp}-{os.getpid()}{self.path.suffix}")
            try:
                for suffix in ("", *_SIDE_FILES):
                    with contextlib.suppress(FileNotFoundError):
                        os.rename(f"{self.path}{suffix}", f"{aside}{suffix}")
            except OSError as exc:
                raise _Unusable(f"it is damaged and cannot be moved aside ({exc.strerror or exc})") from None
            return aside

    @contextlib.contextmanager
    def _opening_lock(self, kind: int) -> Iterator[None]:
        """Openers share this lock and moving aside takes it alone, so nobody opens a half-moved set
        of files; waiting is bounded like SQLite's own busy wait."""
        try:
            self._make_folder()
            fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise _Unusable(exc.strerror or str(exc)) from None
        try:
            deadline = time.monotonic() + BUSY_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(fd, kind | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise _Unusable(f"another process has held its lock for more than {BUSY_TIMEOUT_S:g} s") \
                            from None
                    time.sleep(0.01)
            yield
        finally:
            os.close(fd)
