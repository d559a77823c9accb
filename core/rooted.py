"""Files under one root folder (a state root, Reprise's data or cache folder, an agent's store),
reached without ever leaving it: every path is walked from the root one folder at a time with
`O_NOFOLLOW`, so a symlink anywhere between the root and the file stops the operation with an
error naming the link, and nothing is read, written, moved or deleted outside the root.

Reads take regular files only, opened without blocking and capped; append-only logs are
streamed line by line with a cap per line. A move that crosses a filesystem is a copy, fsync
and digest check before the source is removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from . import faults
from .errors import RepriseError
from .session_files import ReadProblem, read_all
from .session_files import file_kind as _kind

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1 << 20


class OutsideRootError(RepriseError):
    """A path would leave its root: a symlink sits between the root and the file, or it is not under the root."""

    code = "outside_root"


class FileProblem(RepriseError):
    """A file under a root cannot be used as asked (not a regular file, too large, unreadable)."""

    code = "bad_file"

    def __init__(self, path: Path | str, code: str, reason: str):
        super().__init__(f"{path}: {reason}.", path=path)
        self.code = code
        self.reason = reason


class ContentMismatch(RepriseError):
    """A streamed write did not have the digest it was meant to have (its source changed while it was
    copied); nothing replaced the target."""

    code = "changed"


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a streamed log: its number from 1, its bytes without the newline (None when
    it was over the cap), and whether a newline ended it (a last line without one is torn)."""

    number: int
    data: bytes | None
    terminated: bool


def read_capped(fd: int, path: Path | str, cap: int) -> bytes:
    """The bytes of an open regular file, refusing more than `cap` (read by `session_files.read_all`)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise FileProblem(path, "not_regular", f"it is {_kind(info.st_mode)}, not a regular file")
    try:
        return read_all(fd, info.st_size, cap)
    except ReadProblem as exc:
        raise FileProblem(path, exc.code, exc.message) from None


def named(exc: OSError, path: Path | str) -> OSError:
    """The same error (its errno, so its subclass) naming `path`: the file or folder the caller
    meant, not a temp name or the last part of a path that `*at` calls report."""
    return OSError(exc.errno, exc.strerror or str(exc), str(path))


@contextlib.contextmanager
def _naming(name: str, path: Path) -> Iterator[None]:
    """Inside a block over two folders whose files may share a last part: an error naming `name`
    names the source `path` (else the target's `parent` would claim it)."""
    try:
        yield
    except OSError as exc:
        if exc.filename == name:
            raise named(exc, path) from None
        raise


_RENAME_NOREPLACE = 1
_renameat2: Callable[..., int] | None | bool = False   # False: not looked up yet; None: not in this libc


def _libc_renameat2() -> Callable[..., int] | None:
    global _renameat2
    if _renameat2 is False:
        import ctypes
        import ctypes.util
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
            function = libc.renameat2
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            function.restype = ctypes.c_int
            _renameat2 = function
        except (OSError, AttributeError):
            _renameat2 = None
    return _renameat2 if callable(_renameat2) else None


def rename_noreplace(src_fd: int, src_name: str, dst_fd: int, dst_name: str) -> None:
    """Rename within one filesystem, never replacing: FileExistsError when anything is at the
    target, checked by the kernel in the same step (`renameat2` with RENAME_NOREPLACE). Where the
    kernel or filesystem lacks it, a file is hard-linked to the target (which fails on anything
    there) and then unlinked; a folder is renamed after a last look (the one window left)."""
    import ctypes
    function = _libc_renameat2()
    if function is not None:
        status = function(src_fd, os.fsencode(src_name), dst_fd, os.fsencode(dst_name), _RENAME_NOREPLACE)
        if status == 0:
            return
        error = ctypes.get_errno()
        if error not in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
            raise OSError(error, os.strerror(error), dst_name)
    info = os.stat(src_name, dir_fd=src_fd, follow_symlinks=False)
    if stat.S_ISDIR(info.st_mode):
        with contextlib.suppress(FileNotFoundError):
            os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False)
            raise FileExistsError(errno.EEXIST, "it already exists", dst_name)
        os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
        return
    os.link(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
    os.unlink(src_name, dir_fd=src_fd)


def write_new(dir_fd: int, name: str, data: bytes) -> None:
    """Write `name` in the folder `dir_fd` atomically and never over an existing file: a temp file,
    fsync, a hard link to the name (fails if it exists), the temp removed, the folder fsynced. It
    takes what `Root.parent` yields: a new file beside an agent's own, which Reprise never replaces."""
    temp = _temp_name(name)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600, dir_fd=dir_fd)
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.link(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
    finally:
        os.unlink(temp, dir_fd=dir_fd)
    os.fsync(dir_fd)


def _temp_name(stem: str) -> str:
    """The name of a write's temp file beside `stem` (`paths.is_temp_name`)."""
    import secrets  # only a write needs it (with random, base64 and hmac): a listing reads

    return f".{stem}.tmp-{os.getpid()}-{secrets.token_hex(4)}"


def _fsync_fd(fd: int) -> None:
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a directory; the data is synced
        os.fsync(fd)


class Root:
    """One root folder; every method takes a path under it (absolute, or relative to it)."""

    def __init__(self, path: Path | str, label: str = "state root"):
        self.path = Path(path)
        self.label = label

    # --- walking -------------------------------------------------------------------------------------

    def parts(self, path: Path | str) -> list[str]:
        """The components of `path` below the root; refused when it is not lexically under it."""
        candidate = Path(path)
        if not candidate.is_absolute():
            candidate = self.path / candidate
        try:
            relative = candidate.relative_to(self.path)
        except ValueError:
            raise OutsideRootError(f"{candidate} is not inside the {self.label} {self.path}; nothing was done.",
                                   path=candidate) from None
        parts = list(relative.parts)
        if any(part in ("", ".", "..") for part in parts):
            raise OutsideRootError(f"{candidate} is not a plain path inside the {self.label}; nothing was done.",
                                   path=candidate)
        return parts

    def _link_error(self, components: list[str]) -> OutsideRootError:
        link = self.path.joinpath(*components)
        try:
            target = os.readlink(link)
        except OSError:
            target = "?"
        return OutsideRootError(f"{link} is a symlink (to {target}); Reprise follows no link inside the "
                                f"{self.label} for its own files, so nothing was done.",
                                hint="replace the link by a real folder or file", path=link)

    def _open_dir(self, parts: list[str], *, create: bool) -> int:
        """An fd of the folder `parts` below the root, reached without following any link."""
        if create:
            self._make_root()
        fd = os.open(self.path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            for index, part in enumerate(parts):
                try:
                    next_fd = self._open_existing_dir(fd, parts, index)
                except FileNotFoundError:
                    if not create:
                        raise
                    try:
                        os.mkdir(part, 0o700, dir_fd=fd)
                        _fsync_fd(fd)
                    except FileExistsError:
                        pass
                    except OSError as exc:   # named by its whole path, not its last part ("12")
                        raise named(exc, self.path.joinpath(*parts[: index + 1])) from None
                    next_fd = self._open_existing_dir(fd, parts, index)
                os.close(fd)
                fd = next_fd
            return fd
        except BaseException:
            os.close(fd)
            raise

    def _open_existing_dir(self, fd: int, parts: list[str], index: int) -> int:
        try:
            return os.open(parts[index], _DIR_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                raise self._not_a_folder(fd, parts, index) from None
            raise named(exc, self.path.joinpath(*parts[: index + 1])) from None

    def _not_a_folder(self, fd: int, parts: list[str], index: int) -> RepriseError:
        info = os.stat(parts[index], dir_fd=fd, follow_symlinks=False)
        if stat.S_ISLNK(info.st_mode):
            return self._link_error(parts[: index + 1])
        where = self.path.joinpath(*parts[: index + 1])
        return FileProblem(where, "not_a_folder", f"it is {_kind(info.st_mode)} where a folder belongs")

    def _make_root(self) -> None:
        """The root folder itself and its missing parents, mode 0700 (links above the root are the user's)."""
        missing = []
        current = self.path
        while not os.path.isdir(current) and current != current.parent:
            missing.append(current)
            current = current.parent
        for directory in reversed(missing):
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o700)

    @contextlib.contextmanager
    def parent(self, path: Path | str, *, create: bool = False) -> Iterator[tuple[int, str]]:
        """(fd of the folder holding `path`, the file's name), for the `*at` calls."""
        parts = self.parts(path)
        if not parts:
            raise OutsideRootError(f"{self.path} is the {self.label} itself, not a file in it.", path=self.path)
        fd = self._open_dir(parts[:-1], create=create)
        try:
            yield fd, parts[-1]
        except OSError as exc:
            # An `*at` call names only the last part, or a temp file beside it: name the real path.
            if isinstance(exc.filename, str) and (exc.filename == parts[-1]
                                                  or exc.filename.startswith(f".{parts[-1]}.tmp-")):
                raise named(exc, self.path.joinpath(*parts)) from None
            raise
        finally:
            os.close(fd)

    def check(self, path: Path | str) -> None:
        """Raise OutsideRootError if a symlink sits between the root and `path` (missing folders are fine)."""
        try:
            os.close(self._open_dir(self.parts(path)[:-1], create=False))
        except FileNotFoundError:
            return

    # --- questions -----------------------------------------------------------------------------------

    def lstat(self, path: Path | str) -> os.stat_result:
        with self.parent(path) as (fd, name):
            return os.stat(name, dir_fd=fd, follow_symlinks=False)

    def exists(self, path: Path | str) -> bool:
        """Whether anything (a link too) is at `path`; a symlinked folder on the way raises."""
        try:
            self.lstat(path)
        except (FileNotFoundError, NotADirectoryError):
            return False
        return True

    def is_dir(self, path: Path | str) -> bool:
        try:
            return stat.S_ISDIR(self.lstat(path).st_mode)
        except (FileNotFoundError, NotADirectoryError):
            return False

    def names(self, path: Path | str) -> list[tuple[str, bool]]:
        """(name, is a real folder) of each entry of a folder; [] when it does not exist."""
        parts = self.parts(path)
        try:
            fd = self._open_dir(parts, create=False)
        except (FileNotFoundError, NotADirectoryError):
            return []
        try:
            with os.scandir(fd) as entries:
                return sorted((entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries)
        finally:
            os.close(fd)

    # --- reading -------------------------------------------------------------------------------------

    def _open_read(self, fd: int, name: str, path: Path | str) -> int:
        try:
            return os.open(name, _READ_FLAGS, dir_fd=fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._link_error(self.parts(path)) from None
            if isinstance(exc, FileNotFoundError):
                raise
            raise FileProblem(path, "unreadable", exc.strerror or str(exc)) from None

    def read(self, path: Path | str, cap: int) -> bytes:
        """A regular file's bytes (at most `cap`); FileNotFoundError when it is missing, FileProblem
        or OutsideRootError when it is anything else than a regular file reached without links."""
        with self.parent(path) as (fd, name):
            file_fd = self._open_read(fd, name, path)
        try:
            return read_capped(file_fd, path, cap)
        except OSError as exc:
            raise FileProblem(path, "unreadable", exc.strerror or str(exc)) from None
        finally:
            os.close(file_fd)

    @contextlib.contextmanager
    def _regular(self, path: Path | str) -> Iterator[int]:
        """An fd of a regular file reached without links, closed when the block ends."""
        with self.parent(path) as (fd, name):
            file_fd = self._open_read(fd, name, path)
        try:
            info = os.fstat(file_fd)
            if not stat.S_ISREG(info.st_mode):
                raise FileProblem(path, "not_regular", f"it is {_kind(info.st_mode)}, not a regular file")
            yield file_fd
        finally:
            os.close(file_fd)

    def sha256(self, path: Path | str) -> str:
        """The SHA-256 of a regular file reached without links, hashed as it is read (never held whole)."""
        with self._regular(path) as file_fd:
            try:
                hasher = hashlib.sha256()
                while chunk := os.read(file_fd, _CHUNK):
                    hasher.update(chunk)
                return hasher.hexdigest()
            except OSError as exc:
                raise FileProblem(path, "unreadable", exc.strerror or str(exc)) from None

    def lines(self, path: Path | str, line_cap: int) -> Iterator[Line]:
        """Stream a log's lines, whatever the file's size; a line over `line_cap` bytes comes as None."""
        with self._regular(path) as file_fd:
            number, buffer, over = 0, b"", False
            while True:
                try:
                    chunk = os.read(file_fd, _CHUNK)
                except OSError as exc:
                    raise FileProblem(path, "unreadable", exc.strerror or str(exc)) from None
                if not chunk:
                    break
                pieces = chunk.split(b"\n")
                for piece in pieces[:-1]:
                    number += 1
                    whole = None if over or len(buffer) + len(piece) > line_cap else buffer + piece
                    yield Line(number, whole, True)
                    buffer, over = b"", False
                tail = pieces[-1]
                if over or len(buffer) + len(tail) > line_cap:
                    buffer, over = b"", True
                else:
                    buffer += tail
            if buffer or over:
                yield Line(number + 1, None if over else buffer, False)

    # --- writing -------------------------------------------------------------------------------------

    def mkdir(self, path: Path | str) -> None:
        """The folder and any missing parents (mode 0700), no link followed."""
        os.close(self._open_dir(self.parts(path), create=True))

    def create_exclusive(self, path: Path | str) -> int:
        """A new regular file (mode 0600) opened for writing, its folders created, no link followed;
        FileExistsError when anything is there."""
        with self.parent(path, create=True) as (fd, name):
            return os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                           dir_fd=fd)

    def write_atomic(self, path: Path | str, data: bytes | Iterable[bytes], *, temp_stem: str | None = None,
                     durable: bool = True, sha256: str | None = None) -> None:
        """Readers see the old file or the new one: a temp file beside it, fsync, rename, fsync of the
        folder. `durable=False` skips the fsyncs and the fault points, for records that matter only
        while the process that wrote them lives (a crash of the machine ends both).

        `data` may be chunks (a large file copied a chunk at a time, never held whole); with `sha256`,
        what was written must have that digest, else ContentMismatch and nothing is replaced."""
        with self.parent(path, create=True) as (fd, name):
            with contextlib.suppress(FileNotFoundError):
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    raise FileProblem(self.path.joinpath(*self.parts(path)), "not_regular",
                                      f"it is {_kind(info.st_mode)}; Reprise replaces only regular files, "
                                      "so nothing was written")
            stem = temp_stem or Path(name).stem
            temp = _temp_name(stem)
            real = self.path.joinpath(*self.parts(path))
            try:
                file_fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600,
                                  dir_fd=fd)
            except OSError as exc:   # named by the file it was to become, not the temp name
                raise named(exc, real) from None
            try:
                try:
                    written = _write_chunks(file_fd, data, hashed=sha256 is not None)
                    if written != sha256:
                        raise ContentMismatch(f"{self.path.joinpath(*self.parts(path))}: what was copied does not "
                                              "have the digest it was meant to have; nothing was written",
                                              path=self.path.joinpath(*self.parts(path)))
                    if durable:
                        faults.point("after_temp_write")
                        os.fsync(file_fd)
                finally:
                    os.close(file_fd)
                if durable:
                    faults.point("after_fsync")
                    faults.point("before_replace")
                os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except BaseException as exc:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp, dir_fd=fd)
                if isinstance(exc, OSError) and exc.filename == temp:
                    raise named(exc, real) from None
                raise
            if durable:
                faults.point("after_replace")
                _fsync_fd(fd)

    def append(self, path: Path | str, line: bytes) -> None:
        """Append one line durably (O_APPEND, fsync; the folder too when the file is new). A torn last
        line left by a crash is ended first, so it cannot swallow the new line."""
        with self.parent(path, create=True) as (fd, name):
            try:
                file_fd = os.open(name, os.O_RDWR | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                                  dir_fd=fd)
                created = False
            except FileNotFoundError:
                file_fd = os.open(name, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                  | os.O_CLOEXEC, 0o600, dir_fd=fd)
                created = True
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise self._link_error(self.parts(path)) from None
                raise
            try:
                info = os.fstat(file_fd)
                if not stat.S_ISREG(info.st_mode):
                    raise FileProblem(self.path.joinpath(*self.parts(path)), "not_regular",
                                      f"it is {_kind(info.st_mode)}, not a regular file; nothing was appended")
                if info.st_size and os.pread(file_fd, 1, info.st_size - 1) != b"\n":
                    line = b"\n" + line
                _write_all(file_fd, line)
                os.fsync(file_fd)
            finally:
                os.close(file_fd)
            if created:
                _fsync_fd(fd)

    def open_lock(self, path: Path | str) -> int:
        """An fd of a lock file (created empty), for flock."""
        with self.parent(path, create=True) as (fd, name):
            try:
                lock_fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                                  0o600, dir_fd=fd)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    raise self._link_error(self.parts(path)) from None
                raise
        info = os.fstat(lock_fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(lock_fd)
            raise FileProblem(self.path.joinpath(*self.parts(path)), "not_regular",
                              f"it is {_kind(info.st_mode)}, not a lock file")
        return lock_fd

    # --- moving and deleting -------------------------------------------------------------------------

    def unlink(self, path: Path | str) -> bool:
        """Remove one file or link (never what a link points to); False when nothing was there."""
        return self._remove(path, tree=False)

    def rmtree(self, path: Path | str) -> bool:
        """Delete a real folder inside the root and everything in it; a link is refused, not followed."""
        return self._remove(path, tree=True)

    def _remove(self, path: Path | str, *, tree: bool) -> bool:
        with self.parent(path) as (fd, name):
            try:
                info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return False
            if tree and stat.S_ISLNK(info.st_mode):
                raise self._link_error(self.parts(path))
            if not stat.S_ISDIR(info.st_mode):
                os.unlink(name, dir_fd=fd)
            elif tree:
                shutil.rmtree(name, dir_fd=fd)  # the fd-based walk, which follows no link
            else:
                raise FileProblem(self.path.joinpath(*self.parts(path)), "not_regular",
                                  "it is a directory where a file belongs; it was left as it is")
            _fsync_fd(fd)
            return True

    def move(self, source: Path | str, target: Path | str, *, replace: bool = False) -> None:
        """Rename `source` to `target` (folders on the way created); FileExistsError when the target
        exists and `replace` is false. Across filesystems: copy, fsync, verify, then remove the source."""
        with self.parent(source) as (src_fd, src_name), self.parent(target, create=True) as (dst_fd, dst_name), \
                _naming(src_name, self.path.joinpath(*self.parts(source))):
            info = os.stat(src_name, dir_fd=src_fd, follow_symlinks=False)
            if not replace:
                with contextlib.suppress(FileNotFoundError):
                    os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False)
                    raise FileExistsError(errno.EEXIST, "it already exists", str(target))
            try:
                os.rename(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise
                self._copy_across(src_fd, src_name, dst_fd, dst_name, info, self.path.joinpath(*self.parts(target)))
                if stat.S_ISDIR(info.st_mode):
                    shutil.rmtree(src_name, dir_fd=src_fd)
                else:
                    os.unlink(src_name, dir_fd=src_fd)
            _fsync_fd(dst_fd)
            _fsync_fd(src_fd)

    def move_noreplace(self, source: Path | str, target: Path | str) -> None:
        """Rename `source` to `target` in the same folder tree and filesystem, never replacing what
        is there: FileExistsError, with nothing moved, when anything is at `target` at that instant."""
        with self.parent(source) as (src_fd, src_name), self.parent(target) as (dst_fd, dst_name):
            try:
                rename_noreplace(src_fd, src_name, dst_fd, dst_name)
            except FileExistsError:
                raise FileExistsError(errno.EEXIST, "something else is there", str(target)) from None
            except OSError as exc:
                raise named(exc, self.path.joinpath(*self.parts(source))) from None
            _fsync_fd(dst_fd)
            _fsync_fd(src_fd)

    def link(self, source: Path | str, target: Path | str) -> None:
        """A second name `target` for the regular file `source` (a hard link, folders on the way
        created, no link followed): FileExistsError when anything is at `target`; OSError (EXDEV)
        when the two are on different filesystems."""
        with self.parent(source) as (src_fd, src_name), self.parent(target, create=True) as (dst_fd, dst_name):
            info = os.stat(src_name, dir_fd=src_fd, follow_symlinks=False)
            if not stat.S_ISREG(info.st_mode):
                raise FileProblem(self.path.joinpath(*self.parts(source)), "not_regular",
                                  f"it is {_kind(info.st_mode)}, not a regular file to link")
            try:
                os.link(src_name, dst_name, src_dir_fd=src_fd, dst_dir_fd=dst_fd, follow_symlinks=False)
            except OSError as exc:
                raise named(exc, self.path.joinpath(*self.parts(target))) from None
            _fsync_fd(dst_fd)

    def copy_in(self, other: Root, source: Path | str, target: Path | str) -> str:
        """Copy the file or folder `source` of another root to `target` under this one (folders on
        the way created, no link followed): to a temp name, fsynced, checked to read back with the
        source's digest, then given the target's name. Never replaces: FileExistsError when the
        target exists. Returns the digest (`digest`'s form); the source is left as it is."""
        with other.parent(source) as (src_fd, src_name), self.parent(target, create=True) as (dst_fd, dst_name), \
                _naming(src_name, other.path.joinpath(*other.parts(source))):
            info = os.stat(src_name, dir_fd=src_fd, follow_symlinks=False)

            def place(temp: str) -> None:
                with contextlib.suppress(FileNotFoundError):
                    os.stat(dst_name, dir_fd=dst_fd, follow_symlinks=False)
                    raise FileExistsError(errno.EEXIST, "it already exists", str(target))
                os.rename(temp, dst_name, src_dir_fd=dst_fd, dst_dir_fd=dst_fd)

            digest = _placed_copy(src_fd, src_name, dst_fd, dst_name, info, place,
                                  self.path.joinpath(*self.parts(target)))
            _fsync_fd(dst_fd)
        return digest

    def digest(self, path: Path | str) -> str:
        """A digest of a file, or of a folder's names and contents (links are not followed)."""
        with self.parent(path) as (fd, name):
            return _digest_entry(fd, name)

    def _copy_across(self, src_fd: int, src_name: str, dst_fd: int, dst_name: str, info: os.stat_result,
                     target: Path) -> None:
        """Copy to a temp name in the target folder, fsync, check it reads back with the source's
        digest, and only then give it the target's name."""
        _placed_copy(src_fd, src_name, dst_fd, dst_name, info,
                     lambda temp: os.replace(temp, dst_name, src_dir_fd=dst_fd, dst_dir_fd=dst_fd), target)


def _placed_copy(src_fd: int, src_name: str, dst_fd: int, dst_name: str, info: os.stat_result,
                 place: Callable[[str], None], target: Path) -> str:
    """Copy an entry to a temp name beside `dst_name` (fsynced), check it reads back with the
    source's digest, then `place(temp)` it; the temp copy is removed on any failure, and an error of
    it names `target` (the copy's real path). Returns the digest."""
    temp = _temp_name(dst_name)
    try:
        _copy_entry(src_fd, src_name, dst_fd, temp, info)
        digest = _digest_entry(src_fd, src_name)
        if digest != _digest_entry(dst_fd, temp):
            raise OSError(errno.EIO, "the copy does not read back as the original", str(target))
        place(temp)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            if stat.S_ISDIR(info.st_mode):
                shutil.rmtree(temp, dir_fd=dst_fd)
            else:
                os.unlink(temp, dir_fd=dst_fd)
        if isinstance(exc, OSError) and isinstance(exc.filename, str) and exc.filename.startswith(temp):
            raise named(exc, target) from None   # the copy's own path, not its temp name
        raise
    return digest


def _write_all(fd: int, data: bytes | bytearray | memoryview) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_chunks(fd: int, data: bytes | Iterable[bytes], *, hashed: bool) -> str | None:
    """Write bytes or chunks of bytes; with `hashed`, the SHA-256 of what was written."""
    hasher = hashlib.sha256() if hashed else None
    for chunk in (data,) if isinstance(data, (bytes, bytearray, memoryview)) else data:
        if hasher is not None:
            hasher.update(chunk)
        _write_all(fd, chunk)
    return hasher.hexdigest() if hasher is not None else None


def _copy_entry(src_fd: int, src_name: str, dst_fd: int, dst_name: str, info: os.stat_result) -> None:
    if stat.S_ISLNK(info.st_mode):
        os.symlink(os.readlink(src_name, dir_fd=src_fd), dst_name, dir_fd=dst_fd)
    elif stat.S_ISDIR(info.st_mode):
        os.mkdir(dst_name, 0o700, dir_fd=dst_fd)
        inner_src = os.open(src_name, _DIR_FLAGS, dir_fd=src_fd)
        inner_dst = os.open(dst_name, _DIR_FLAGS, dir_fd=dst_fd)
        try:
            with os.scandir(inner_src) as entries:
                for entry in entries:
                    _copy_entry(inner_src, entry.name, inner_dst, entry.name, entry.stat(follow_symlinks=False))
            os.fsync(inner_dst)
        finally:
            os.close(inner_src)
            os.close(inner_dst)
    elif stat.S_ISREG(info.st_mode):
        read_fd = os.open(src_name, _READ_FLAGS, dir_fd=src_fd)
        try:
            write_fd = os.open(dst_name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                               stat.S_IMODE(info.st_mode) or 0o600, dir_fd=dst_fd)
            try:
                while chunk := os.read(read_fd, _CHUNK):
                    _write_all(write_fd, chunk)
                os.fsync(write_fd)
            finally:
                os.close(write_fd)
        finally:
            os.close(read_fd)
    else:
        raise FileProblem(src_name, "not_regular", f"it is {_kind(info.st_mode)}; it cannot be copied")


def _digest_entry(dir_fd: int, name: str) -> str:
    """A digest of a file, a link's target or a folder's names and contents, for a copy's check."""
    info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    hasher = hashlib.sha256()
    if stat.S_ISLNK(info.st_mode):
        hasher.update(b"L" + os.fsencode(os.readlink(name, dir_fd=dir_fd)))
    elif stat.S_ISDIR(info.st_mode):
        inner = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
        try:
            for child in sorted(os.listdir(inner)):
                hasher.update(b"D" + os.fsencode(child) + b"\0" + _digest_entry(inner, child).encode())
        finally:
            os.close(inner)
    else:
        fd = os.open(name, _READ_FLAGS, dir_fd=dir_fd)
        try:
            while chunk := os.read(fd, _CHUNK):
                hasher.update(chunk)
        finally:
            os.close(fd)
    return hasher.hexdigest()
