"""The stat of every session file of one folder, which a listing takes of every folder each time.

A scan opens the folder once and stats each file relative to it (a stat by path walks every
component of the path again for each file). It also notes the folder's stamp, its inode, mtime and
ctime: adding, removing or renaming a file in a folder changes both times (and setting the mtime
back changes the ctime), so while the stamp holds, the next scan stats the names this one read and
does not read the folder again. A stamp within a few seconds of the clock is not kept: a change in
the same tick of the file system's clock could leave it as it was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from .problems import Problem

_RACY_NS = 3_000_000_000
NOT_FILES = (".", "..", "")   # names no session file has (a stored name checked before a stat)

Stats = dict[str, tuple[int, int]]


@dataclass(frozen=True, slots=True)
class FolderNames:
    """The session files of a folder as a scan read them, {file id: file name}, and the folder's
    stamp then (None: too recent to trust)."""

    stamp: tuple[int, int, int] | None
    names: dict[str, str]


@dataclass(slots=True)
class FolderStats:
    """{file id: (size, mtime_ns)} of a folder's session files ((-1, -1) for one that cannot be
    stat'ed), the folder; the problem when it cannot be read; the names, to hand to the next scan
    (None for a folder that is not there or cannot be read)."""

    stats: Stats
    directory: str
    problem: Problem | None = None
    names: FolderNames | None = None


def scan_folder(directory: str, what: str, file_id_of: Callable[[str], str | None],
                known: FolderNames | None = None) -> FolderStats:
    """Stat the session files of a folder (`what`, as people call it): the entries `file_id_of` names
    (None for any other entry), or the `known` names of an earlier scan while its stamp holds."""
    try:
        fd = opened_folder(directory)
    except (FileNotFoundError, NotADirectoryError):
        return FolderStats({}, directory)
    except OSError as exc:
        return FolderStats({}, directory, Problem(directory, "unreadable_folder", f"the {what} cannot be read "
                                                  f"({exc.strerror or exc}); its sessions are not listed"))
    try:
        now = time.time_ns()
        info = os.fstat(fd)   # before the entries are read: a change while they are is a new stamp
        stamp = (info.st_ino, info.st_mtime_ns, info.st_ctime_ns)
        if known is not None and known.stamp == stamp:   # a stamp too recent to trust is never kept
            stats = _stats_of(fd, known.names)
            if stats is not None:
                return FolderStats(stats, directory, None, known)
        names: dict[str, str] = {}
        stats = {}
        with os.scandir(fd) as entries:
            for entry in entries:
                file_id = file_id_of(entry.name)
                if file_id is None:
                    continue
                names[file_id] = entry.name
                try:
                    found = entry.stat()
                    stats[file_id] = (found.st_size, found.st_mtime_ns)
                except OSError:
                    stats[file_id] = (-1, -1)
    finally:
        os.close(fd)
    # Settled: last changed a while before the stamp was taken. A stamp dated after it (a file system
    # whose clock is ahead of ours) is never kept; mtime too, where ctime is not the change time (vfat).
    settled = now - max(info.st_ctime_ns, info.st_mtime_ns) >= _RACY_NS
    return FolderStats(stats, directory, None, FolderNames(stamp if settled else None, names))


def _stats_of(fd: int, names: dict[str, str]) -> Stats | None:
    """The stats of the named files; None when one is gone or a name is not a plain name (the
    folder is read again)."""
    stats: Stats = {}
    stat = os.stat
    for file_id, name in names.items():
        try:
            if "/" in name or name in NOT_FILES:
                return None
            found = stat(name, dir_fd=fd)
        except (FileNotFoundError, ValueError, TypeError):   # gone; a NUL or not a string: a damaged cache
            return None
        except OSError:
            stats[file_id] = (-1, -1)
            continue
        stats[file_id] = (found.st_size, found.st_mtime_ns)
    return stats


def with_suffix(suffix: str, wanted: Callable[[str], bool] | None = None) -> Callable[[str], str | None]:
    """The file id of a name `<id><suffix>` whose id is `wanted` (any, when None)."""
    cut = -len(suffix)
    if wanted is None:
        return lambda name: name[:cut] if name.endswith(suffix) else None
    return lambda name: name[:cut] if name.endswith(suffix) and wanted(name[:cut]) else None


def opened_folder(directory: str) -> int:
    """A descriptor of the folder, for a scandir whose stats are `fstatat` calls relative to it: a stat
    by path walks every component of it (and every link on the way) again for each file."""
    return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
