"""The one reader of an agent's files, and one session file written safely.

Every file of an agent's store (a session, its sidecars, an index beside the sessions, a
settings file, a registry of running sessions) is read here: checked to be a regular file
before it is opened, opened without blocking (a FIFO named like a session never hangs a
listing), and read capped, whole (`read_regular_file`), a chunk at a time (`chunks_of`) or its
head only (`read_head`). `rooted.Root` reaches Reprise's own files and an agent's without a
link and reads them through `read_all` too; tests/robustness/test_one_reader.py fails when
code under core/ opens a file any other way. A session file is replaced atomically (a hidden
temp file in the same folder, fsync, `os.replace`, fsync of the folder), with the version a
write checks so that a change made by anyone else in between is detected.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import faults
from .errors import ProblemFileError
from .problems import Problem

MAX_SESSION_BYTES = 512 * 1024 * 1024
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FileVersion:
    """What a write checks before replacing: the file is still exactly what was read."""

    size: int
    mtime_ns: int
    sha256: str


class ReadProblem(Exception):
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
    temp = directory / f".{stem}.tmp-{os.getpid()}-{os.urandom(4).hex()}"
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
    """Whether a folder between the state root and this one is a symlink, or the root is not above
    it (a few lstat calls; the full realpath check runs only then). On path strings: Path's parent
    and comparison cost a cold listing four times the lstat calls."""
    current, stop = os.fspath(directory), os.fspath(root)
    while current != stop:
        parent = os.path.dirname(current)
        if parent == current:
            return True   # the top, never passing the root
        try:
            if stat.S_ISLNK(os.lstat(current).st_mode):
                return True
        except OSError:
            return False
        current = parent
    return False


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, for a problem's message."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISREG(mode):
        return "a regular file"
    return "not a regular file"


def inside(real_path: str, root: Path) -> bool:
    real_root = os.path.realpath(root)
    return real_path == real_root or real_path.startswith(real_root.rstrip("/") + "/")


def _inside(path: Path, root: Path) -> os.stat_result:
    """The stat of a file reached by its path inside the root, refused when a symlink loops, points to
    nothing or leads out of the root."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        try:
            path.resolve(strict=True)
        except (RuntimeError, OSError) as exc:
            if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
                raise ReadProblem("symlink_loop", "the symlink loops") from None
            raise ReadProblem("dangling_symlink", "the symlink points to nothing") from None
        info = os.stat(path)
    if stat.S_ISLNK(os.lstat(path).st_mode) or _symlink_between(path.parent, root):
        target = os.path.realpath(path)
        if not inside(target, root):
            raise ReadProblem("symlink_outside", f"a symlink leads out of the state root (to {target})")
    return info


@contextlib.contextmanager
def opened_regular_file(path: Path, root: Path | None, *,
                        follow: bool = True) -> Iterator[tuple[int, os.stat_result]]:
    """An fd of a regular file, checked before it is opened and opened without blocking (never a
    FIFO): inside the root after symlinks and at most MAX_SESSION_BYTES; with no root (a file found
    by its path alone), any size (its reads are capped), and with `follow` False never a symlink."""
    try:
        info = _inside(path, root) if root is not None else os.stat(path) if follow else os.lstat(path)
        if not stat.S_ISREG(info.st_mode):
            raise ReadProblem("not_regular", f"it is {file_kind(info.st_mode)}, not a regular file")
        if root is not None and info.st_size > MAX_SESSION_BYTES:
            raise ReadProblem("too_large", f"{info.st_size:,} bytes is over the {MAX_SESSION_BYTES:,}-byte limit")
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW))
    except PermissionError:
        raise ReadProblem("unreadable", "permission denied") from None
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise ReadProblem("unreadable", exc.strerror or str(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadProblem("not_regular", f"it is {file_kind(info.st_mode)}, not a regular file")
        yield fd, info
    finally:
        os.close(fd)


def read_regular_file(path: Path, root: Path) -> tuple[bytes, os.stat_result]:
    """Read a file only if it is a regular file inside the root (after symlinks); never opens a FIFO."""
    with opened_regular_file(path, root) as (fd, info):
        return read_all(fd, info.st_size, MAX_SESSION_BYTES), info


def read_all(fd: int, size: int, cap: int) -> bytes:
    """The bytes of an open regular file of `size` bytes (its fstat), refusing more than `cap`."""
    if size > cap:
        raise ReadProblem("too_large", f"{size:,} bytes is over the {cap:,}-byte limit")
    try:
        chunks: list[bytes] = []
        total = 0
        while True:
            # The whole size in one read: one bytes object, which the join returns as it is (chunks
            # of a large file joined would hold it twice).
            chunk = os.read(fd, min(max(size + 1 - total, _CHUNK), cap + 1 - total))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise ReadProblem("too_large", f"it grew over the {cap:,}-byte limit while read")
    except OSError as exc:
        raise ReadProblem("unreadable", exc.strerror or str(exc)) from None


def read_head(path: Path, cap: int, *, follow: bool = True) -> tuple[bytes, int]:
    """At most `cap` bytes from the start of a file found by its path alone (a settings file, a
    registry of running sessions, an index beside the sessions, a workspace's AGENTS.md), and its
    size on disk: a regular file only (its stat is checked before it is opened), opened without
    blocking; with `follow` False, a symlink is refused. FileNotFoundError when it is missing,
    ReadProblem when it is anything else than a readable regular file."""
    with opened_regular_file(path, None, follow=follow) as (fd, info):
        chunks: list[bytes] = []
        total = 0
        try:
            while total < cap and (chunk := os.read(fd, min(_CHUNK, cap - total))):
                chunks.append(chunk)
                total += len(chunk)
        except OSError as exc:
            raise ReadProblem("unreadable", exc.strerror or str(exc)) from None
        return b"".join(chunks), max(info.st_size, total)


def chunks_of(fd: int) -> Iterator[bytes]:
    """An open file's bytes a chunk at a time, refusing more than the session limit."""
    total = 0
    try:
        while chunk := os.read(fd, _CHUNK):
            total += len(chunk)
            if total > MAX_SESSION_BYTES:
                raise ReadProblem("too_large", f"it grew over the {MAX_SESSION_BYTES:,}-byte limit while read")
            yield chunk
    except OSError as exc:
        raise ReadProblem("unreadable", exc.strerror or str(exc)) from None


def hash_regular_file(path: Path, root: Path) -> tuple[str, int, os.stat_result]:
    """The SHA-256 and length of a file `read_regular_file` would read, hashed as it is read (never held whole)."""
    with opened_regular_file(path, root) as (fd, info):
        hasher, length = hashlib.sha256(), 0
        for chunk in chunks_of(fd):
            hasher.update(chunk)
            length += len(chunk)
        return hasher.hexdigest(), length, info


def problems_named(path: Path, chunks: Iterator[bytes]) -> Iterator[bytes]:
    try:
        yield from chunks
    except ReadProblem as exc:
        raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
