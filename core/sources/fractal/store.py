"""The session store: safe reads, atomic writes, locks between Reprise processes, and
detection of changes made by anyone else between a read and a write.

Every write goes through `write_atomic`: a hidden temp file in the same directory, fsync,
`os.replace`, fsync of the directory. Session writes also hold `locks/<id>.lock` and check
that the file is still the version that was read.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import secrets
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ... import faults
from ...errors import (
    ChangedOnDiskError,
    LockedError,
    NotFoundError,
    ProblemFileError,
    RepriseError,
)
from ...paths import SessionRef, is_temp_name, validate_workspace_key
from ...problems import Problem
from ...rooted import Root
from .codec import Decoded, decode, decode_text, encode, text_of
from .layout import StorePaths
from .models import SessionState

MAX_SESSION_BYTES = 512 * 1024 * 1024
MAX_META_BYTES = 1024 * 1024
MAX_RECORD_BYTES = 65536
LOCK_TIMEOUT_S = 10.0
_SETTLE_TRIES = 6
_SETTLE_PAUSE_S = 0.05
_RECENT_NS = 2_000_000_000
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FileVersion:
    """What a write checks before replacing: the file is still exactly what was read."""

    size: int
    mtime_ns: int
    sha256: str


@dataclass(slots=True)
class Loaded:
    ref: SessionRef
    path: Path
    state: SessionState
    version: FileVersion
    data: bytes | None   # None when loaded without its bytes (`load(..., keep_data=False)`)
    warnings: list[Problem] = field(default_factory=list)


@dataclass(slots=True)
class Inspected:
    """One file as the catalog sees it: its stat, and the decoded state or the problem."""

    path: Path
    size: int
    mtime_ns: int
    decoded: Decoded
    data: bytes | None = None
    content_digest: str | None = None
    sha256: str | None = None   # with keep_data: the SHA-256 of the bytes that were parsed


class SessionMeta(BaseModel):
    """Reprise's own facts about a session, kept outside the session file (Fractal would drop them)."""

    model_config = ConfigDict(extra="allow")
    title: str | None = None
    pinned: bool = False
    created_at: str | None = None
    estimates: dict[str, int] = Field(default_factory=dict)


class _ReadProblem(Exception):
    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _ensure_dir(path: Path) -> None:
    """Create a session folder and any missing parents with mode 0700."""
    missing = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o700)


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomic(path: Path, data: bytes, *, temp_stem: str | None = None) -> None:
    """Write a session file so that readers see the old file or the new one, never a mix. (Reprise's
    own files are written through `rooted.Root.write_atomic`, which follows no link.)"""
    directory = path.parent
    _ensure_dir(directory)
    stem = temp_stem or path.stem
    temp = directory / f".{stem}.tmp-{os.getpid()}-{secrets.token_hex(4)}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            faults.point("after_temp_write")
            os.fsync(fd)
        finally:
            os.close(fd)
        faults.point("after_fsync")
        faults.point("before_replace")
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    faults.point("after_replace")
    fsync_dir(directory)


def _symlink_between(directory: Path, root: Path) -> bool:
    """Whether a folder between the state root and this one is a symlink (a few lstat calls;
    the full realpath check runs only then)."""
    current = directory
    while current != root and current != current.parent:
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except OSError:
            return False
        current = current.parent
    return current != root


def _inside(real_path: str, root: Path) -> bool:
    real_root = os.path.realpath(root)
    return real_path == real_root or real_path.startswith(real_root.rstrip("/") + "/")


@contextlib.contextmanager
def _opened_regular_file(path: Path, root: Path) -> Iterator[tuple[int, os.stat_result]]:
    """An fd of a regular file inside the root (after symlinks), opened without blocking (never a FIFO)."""
    try:
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            try:
                path.resolve(strict=True)
            except (RuntimeError, OSError) as exc:
                if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
                    raise _ReadProblem("symlink_loop", "the symlink loops") from None
                raise _ReadProblem("dangling_symlink", "the symlink points to nothing") from None
            info = os.stat(path)
        if stat.S_ISLNK(os.lstat(path).st_mode) or _symlink_between(path.parent, root):
            target = os.path.realpath(path)
            if not _inside(target, root):
                raise _ReadProblem("symlink_outside", f"a symlink leads out of the state root (to {target})")
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) else "not a regular file"
            raise _ReadProblem("not_regular", f"it is {kind}, not a regular file")
        if info.st_size > MAX_SESSION_BYTES:
            raise _ReadProblem("too_large", f"{info.st_size:,} bytes is over the {MAX_SESSION_BYTES:,}-byte limit")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except PermissionError:
        raise _ReadProblem("unreadable", "permission denied") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise _ReadProblem("unreadable", exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _ReadProblem("not_regular", "it is not a regular file")
        yield fd, info
    finally:
        os.close(fd)


def read_regular_file(path: Path, root: Path) -> tuple[bytes, os.stat_result]:
    """Read a file only if it is a regular file inside the root (after symlinks); never opens a FIFO."""
    with _opened_regular_file(path, root) as (fd, info):
        try:
            chunks = []
            while True:
                # The whole size in one read: one bytes object, which the join returns as it is (chunks
                # of a large file joined would hold it twice).
                chunk = os.read(fd, max(info.st_size + 1 - sum(map(len, chunks)), 1 << 20))
                if not chunk:
                    break
                chunks.append(chunk)
                if sum(map(len, chunks)) > MAX_SESSION_BYTES:
                    raise _ReadProblem("too_large", f"it grew over the {MAX_SESSION_BYTES:,}-byte limit while read")
            return b"".join(chunks), info
        except OSError as exc:
            raise _ReadProblem("unreadable", exc.strerror or str(exc)) from None


def _chunks_of(fd: int) -> Iterator[bytes]:
    """An open file's bytes a chunk at a time, refusing more than the session limit."""
    total = 0
    try:
        while chunk := os.read(fd, _CHUNK):
            total += len(chunk)
            if total > MAX_SESSION_BYTES:
                raise _ReadProblem("too_large", f"it grew over the {MAX_SESSION_BYTES:,}-byte limit while read")
            yield chunk
    except OSError as exc:
        raise _ReadProblem("unreadable", exc.strerror or str(exc)) from None


def hash_regular_file(path: Path, root: Path) -> tuple[str, int, os.stat_result]:
    """The SHA-256 and length of a file `read_regular_file` would read, hashed as it is read (never held whole)."""
    with _opened_regular_file(path, root) as (fd, info):
        hasher, length = hashlib.sha256(), 0
        for chunk in _chunks_of(fd):
            hasher.update(chunk)
            length += len(chunk)
        return hasher.hexdigest(), length, info


def _problems_named(path: Path, chunks: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from chunks
    except _ReadProblem as exc:
        raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None


class Store:
    """Sessions under one state root."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.paths = StorePaths(self.root)
        self.rooted = Root(self.root)

    # --- reading -------------------------------------------------------------------------

    def inspect(self, path: Path, expected_id: str | None, *, keep_data: bool = False,
                digest_only: bool = False) -> Inspected:
        """Read and decode one file for listing; a file caught mid-write is retried before it is a problem.
        With `keep_data` the bytes come back too (read again after the parse and checked by SHA-256);
        with `digest_only` as well, the file is only hashed again after the parse (streamed, so its
        bytes are not held beside the parsed state) and `data` is b"" (None when it changed)."""
        sha256 = None
        for attempt in range(_SETTLE_TRIES):
            try:
                data, info = read_regular_file(path, self.root)
            except _ReadProblem as exc:
                return Inspected(path, 0, 0, Decoded(None, Problem(str(path), exc.code, exc.message)))
            if keep_data:
                # The bytes are dropped while the text is parsed and read again after: a large file
                # is then held as bytes and text, or as text and objects, never all three at once.
                sha256 = digest(data)
                text = text_of(data, path=str(path))
                del data
                decoded = (Decoded(None, text) if isinstance(text, Problem)
                           else decode_text(text, path=str(path), expected_id=expected_id))
                del text
                if digest_only:
                    data = b"" if self._hashes_to(path, sha256, info.st_size) else None
                else:
                    data = self._read_again(path, sha256)
                if data is None:
                    decoded = Decoded(None, Problem(str(path), "changed", "the file changed while it was read"))
                    if attempt < _SETTLE_TRIES - 1:
                        time.sleep(_SETTLE_PAUSE_S)
                        continue
                    data = b""
            else:
                decoded = decode(data, path=str(path), expected_id=expected_id)
            if decoded.problem is None or decoded.problem.code not in ("empty", "invalid_json"):
                break
            if not self._maybe_in_flight(path, info) or attempt == _SETTLE_TRIES - 1:
                break
            time.sleep(_SETTLE_PAUSE_S)
        # The digest tells a re-read of a recently written file (same size and mtime tick) from a change;
        # older files are never re-read unchanged, so they skip the hashing.
        recent = time.time_ns() - info.st_mtime_ns < _RECENT_NS and not digest_only
        return Inspected(path, info.st_size, info.st_mtime_ns, decoded, data if keep_data else None,
                         hashlib.blake2b(data, digest_size=16).hexdigest() if recent else None,
                         sha256 if keep_data else None)

    def _read_again(self, path: Path, sha256: str) -> bytes | None:
        """The file's bytes if they still have this digest, else None."""
        try:
            data, _ = read_regular_file(path, self.root)
        except (_ReadProblem, FileNotFoundError):
            return None
        return data if digest(data) == sha256 else None

    def _hashes_to(self, path: Path, sha256: str, size: int) -> bool:
        """Whether the file still has this digest, and as many bytes as its stat said (hashed as it is read)."""
        try:
            again, length, _ = hash_regular_file(path, self.root)
        except (_ReadProblem, FileNotFoundError):
            return False
        return again == sha256 and length == size

    @staticmethod
    def _maybe_in_flight(path: Path, info: os.stat_result) -> bool:
        try:
            now = os.stat(path)
        except OSError:
            return False
        changed = (now.st_size, now.st_mtime_ns) != (info.st_size, info.st_mtime_ns)
        return changed or abs(time.time_ns() - now.st_mtime_ns) < _RECENT_NS  # not a future-dated file

    def exists(self, ref: SessionRef) -> bool:
        return os.path.lexists(self.paths.session_file(ref))

    def load(self, ref: SessionRef, *, keep_data: bool = True) -> Loaded:
        """The session as a model, or NotFoundError / ProblemFileError. Without `keep_data`, `data`
        is None: the file's bytes are not kept (a trim copies the file itself into the archive,
        checked by `version.sha256`; `version.size` is then the length of the bytes parsed)."""
        path = self.paths.session_file(ref)
        try:
            inspected = self.inspect(path, ref.session_id, keep_data=True, digest_only=not keep_data)
        except FileNotFoundError:
            raise NotFoundError(f"No session {ref.session_id} in workspace {ref.workspace_key}.", path=path) from None
        decoded = inspected.decoded
        if decoded.state is None:
            raise ProblemFileError(decoded.problem)
        assert inspected.sha256 is not None
        version = FileVersion(inspected.size, inspected.mtime_ns, inspected.sha256)
        return Loaded(ref, path, decoded.state, version, inspected.data if keep_data else None, decoded.warnings)

    def current_version(self, path: Path) -> FileVersion | None:
        """The file's version now (hashed as it is read: a large file is never held whole), None when missing."""
        try:
            sha256, _, info = hash_regular_file(path, self.root)
        except FileNotFoundError:
            return None
        except _ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        return FileVersion(info.st_size, info.st_mtime_ns, sha256)

    @contextlib.contextmanager
    def chunks(self, path: Path) -> Iterator[Iterator[bytes]]:
        """A session file's bytes a chunk at a time, through the checks of `read_regular_file`
        (FileNotFoundError, or ProblemFileError naming what is wrong)."""
        try:
            with _opened_regular_file(path, self.root) as (fd, _):
                yield _problems_named(path, _chunks_of(fd))
        except _ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None

    # --- writing -------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, ref: SessionRef, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
        """Serialise writers of one session between Reprise processes (fcntl.flock)."""
        path = self.paths.lock_file(ref)
        try:
            fd = self.rooted.open_lock(path)
        except OSError as exc:
            raise RepriseError(f"Could not open the lock file {path}: {exc.strerror or exc}; nothing was changed.",
                               path=path) from None
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockedError(
                            f"Session {ref.session_id} is being changed by another Reprise process.",
                            hint="try again in a moment", path=path) from None
                    time.sleep(0.01)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def save(self, ref: SessionRef, state: SessionState, *, expected: FileVersion | None,
             locked: bool = False) -> FileVersion:
        """Replace the session file if it is still `expected` (None: it must not exist yet)."""
        if state.session_id != ref.session_id:
            raise RepriseError(f"Refusing to write session {state.session_id!r} as {ref.session_id!r}.")
        data = encode(state)
        if locked:
            return self._save_locked(ref, data, expected)
        with self.lock(ref):
            return self._save_locked(ref, data, expected)

    def save_bytes(self, ref: SessionRef, data: bytes, *, expected: FileVersion | None,
                   locked: bool = False, encoded_from: SessionState | None = None) -> FileVersion:
        """Write exact bytes (a restore); the same checks as `save`. `encoded_from`: the state
        these bytes are `encode(state)` of (a trim), checked as `save` checks it instead of
        decoding the bytes again (a second copy of a large session)."""
        if encoded_from is not None:
            if encoded_from.session_id != ref.session_id:
                raise RepriseError(f"Refusing to write session {encoded_from.session_id!r} as {ref.session_id!r}.")
        else:
            decoded = decode(data, path=str(self.paths.session_file(ref)), expected_id=ref.session_id)
            if decoded.state is None:
                raise ProblemFileError(decoded.problem, hint="Reprise only writes files Fractal loads")
        if locked:
            return self._save_locked(ref, data, expected)
        with self.lock(ref):
            return self._save_locked(ref, data, expected)

    def _save_locked(self, ref: SessionRef, data: bytes, expected: FileVersion | None) -> FileVersion:
        path = self.paths.session_file(ref)
        if path.parent.exists() and not _inside(os.path.realpath(path.parent), self.root):
            raise RepriseError(f"{path.parent} leads out of the state root through a symlink; nothing was written.",
                               path=path)
        current = self.current_version(path)
        if current != expected:
            if expected is None:
                raise ChangedOnDiskError(f"Session {ref.session_id} already exists.", path=path)
            raise ChangedOnDiskError(
                f"Session {ref.session_id} changed on disk since Reprise read it; nothing was written.",
                hint="reload and try again", path=path)
        write_atomic(path, data, temp_stem=ref.session_id)
        info = os.stat(path)
        return FileVersion(info.st_size, info.st_mtime_ns, digest(data))

    # --- Reprise's metadata --------------------------------------------------------------

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        """A session's metadata; the defaults when the file is missing or unusable (see `meta_problem`)."""
        meta, _problem = self._meta(self.paths.meta_file(ref))
        return meta

    def _meta(self, path: Path) -> tuple[SessionMeta, str | None]:
        try:
            data = self.rooted.read(path, MAX_META_BYTES)
        except FileNotFoundError:
            return SessionMeta(), None
        except RepriseError as exc:
            return SessionMeta(), exc.message
        try:
            return SessionMeta.model_validate_json(data), None
        except ValueError:
            return SessionMeta(), f"{path}: not a JSON object of Reprise's metadata (title, pinned, estimates)."

    def update_meta(self, ref: SessionRef, change) -> SessionMeta:
        """Read, change and write a session's metadata under the session's lock. A metadata file
        that exists but cannot be read is not silently replaced."""
        with self.lock(ref):
            path = self.paths.meta_file(ref)
            meta, problem = self._meta(path)
            if problem is not None:
                raise RepriseError(f"{problem.rstrip('.')}; Reprise's metadata of this session was left as it is.",
                                   hint="fix or delete the file", path=path)
            change(meta)
            self.write_meta(ref, meta)
            return meta

    def write_meta(self, ref: SessionRef, meta: SessionMeta) -> None:
        data = json.dumps(meta.model_dump(mode="json"), indent=2) + "\n"
        self._write_own(self.paths.meta_file(ref), data.encode("ascii"), "the session's metadata")

    def _write_own(self, path: Path, data: bytes, what: str) -> None:
        """Write one of Reprise's own files through the root; an I/O error is a RepriseError naming it."""
        try:
            self.rooted.write_atomic(path, data)
        except OSError as exc:
            raise RepriseError(f"Could not write {what} ({path}): {exc.strerror or exc}.", path=path) from None

    def record_workspace(self, key: str, workspace: Path) -> None:
        """Remember the folder behind a key (the key cannot be reversed). Raises OSError when it cannot
        be written, RepriseError when a link or a non-file is in the way."""
        validate_workspace_key(key)
        path = self.paths.workspace_record(key)
        wanted = {"path": str(workspace)}
        with contextlib.suppress(FileNotFoundError, ValueError, RepriseError):
            if json.loads(self.rooted.read(path, MAX_RECORD_BYTES)) == wanted:
                return
        self.rooted.write_atomic(path, (json.dumps(wanted, indent=2) + "\n").encode("ascii"))

    def workspace_path(self, key: str) -> str | None:
        """The folder recorded for a key, or None. Called for every workspace on every listing, so it
        reads a plain path string and refuses anything but a small regular file reached without links."""
        validate_workspace_key(key)
        try:
            value = json.loads(self.rooted.read(self.paths.workspace_record(key), MAX_RECORD_BYTES)).get("path")
        except (OSError, ValueError, AttributeError, RepriseError):
            return None
        return value if isinstance(value, str) else None

    # --- enumeration ---------------------------------------------------------------------

    def workspace_keys(self) -> list[str]:
        try:
            entries = os.scandir(self.paths.workspaces)
        except FileNotFoundError:
            return []
        with entries:
            keys = []
            for entry in entries:
                try:
                    validate_workspace_key(entry.name)
                except RepriseError:
                    continue
                keys.append(entry.name)
        return sorted(keys)

    def temp_files(self) -> list[Path]:
        """Leftover in-flight writes of Reprise processes that died (no link followed)."""
        found: list[Path] = []

        def walk(directory: Path) -> None:
            try:
                entries = self.rooted.names(directory)
            except (OSError, RepriseError):
                return
            for name, is_dir in entries:
                if is_dir:
                    walk(directory / name)
                elif is_temp_name(name):
                    found.append(directory / name)

        for key in self.workspace_keys():
            walk(self.paths.workspace(key))
        return sorted(found)
