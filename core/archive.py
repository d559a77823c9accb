"""The archive of one session: exact bytes of whatever Reprise removed or replaced, each
stored under the SHA-256 of its bytes, with an ordered index of entries.

An entry is written and verified before the session file changes, so a crash can leave an
archive entry without its trim, never a trim without its archive entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import faults
from .errors import ArchiveError, ChangedOnDiskError, NotFoundError, RepriseError
from .paths import OwnPaths, SessionRef
from .problems import Problem
from .rooted import ContentMismatch, Root
from .session_files import MAX_SESSION_BYTES, digest
from .times import utc_now_iso

MIN_DIGEST_PREFIX = 6

MAX_INDEX_LINE_BYTES = 1024 * 1024
_DIGEST = re.compile(r"\A[0-9a-f]{64}\Z")


@dataclass(frozen=True, slots=True)
class ArchiveEntry:
    """One line of `index.jsonl`."""

    digest: str
    op: str
    time: str
    anchors: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"digest": self.digest, "op": self.op, "time": self.time, "anchors": self.anchors, **self.info}


@dataclass(slots=True)
class IndexReading:
    """An index as read: its usable entries, and each line that was skipped and why."""

    entries: list[ArchiveEntry] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    torn_tail: bool = False


def parse_index_line(data: bytes) -> ArchiveEntry:
    """One index line as an entry; ValueError saying what is wrong."""
    item = json.loads(data)
    if not isinstance(item, dict):
        raise TypeError(f"a JSON {type(item).__name__}, not an object")
    name, op, time, anchors = item.get("digest"), item.get("op"), item.get("time"), item.get("anchors", [])
    if not isinstance(name, str) or not _DIGEST.match(name):
        raise TypeError("its digest is not 64 hex characters")
    if not isinstance(op, str) or not isinstance(time, str):
        raise TypeError("its op or time is not a string")
    if not isinstance(anchors, list) or not all(isinstance(anchor, str) for anchor in anchors):
        raise TypeError("its anchors are not a list of turn ids")
    for key in ("original_sha256", "result_sha256"):   # what restore compares with the session's file
        value = item.get(key)
        if value is not None and not (isinstance(value, str) and _DIGEST.match(value)):
            raise TypeError(f"its {key} is not 64 hex characters")
    restores = item.get("restores", [])
    if not isinstance(restores, list) or not all(isinstance(name, str) for name in restores):
        raise TypeError("its restores are not a list of digests")
    for key in ("forked_from", "part", "root", "path"):   # a fork's origin; what a kept copy is of, and where from
        if not isinstance(item.get(key, ""), str):
            raise TypeError(f"its {key} is not a string")
    known = {"digest", "op", "time", "anchors"}
    return ArchiveEntry(name, op, time, list(anchors), {k: v for k, v in item.items() if k not in known})


class Archive:
    def __init__(self, paths: OwnPaths):
        self.paths = paths
        self.root = Root(paths.root)

    def directory(self, ref: SessionRef) -> Path:
        return self.paths.archive_dir(ref)

    def put(self, ref: SessionRef, data: bytes, *, op: str, anchors: list[str] | None = None,
            **info: Any) -> ArchiveEntry:
        """Store bytes (deduplicated by digest), verify them, then append an index line."""
        return self._put(ref, digest(data), data, op=op, anchors=anchors, info=info)

    def put_copy(self, ref: SessionRef, name: str, chunks: Iterable[bytes], *, op: str,
                 anchors: list[str] | None = None, **info: Any) -> ArchiveEntry:
        """Store a file's bytes copied a chunk at a time (a large session is never held whole) as the
        entry `name`, the SHA-256 they must have: ChangedOnDiskError, and nothing stored, when they
        do not (the file changed since it was read). Otherwise as `put`."""
        return self._put(ref, name, chunks, op=op, anchors=anchors, info=info, streamed=True)

    def _put(self, ref: SessionRef, name: str, data: bytes | Iterable[bytes], *, op: str,
             anchors: list[str] | None, info: dict[str, Any], streamed: bool = False) -> ArchiveEntry:
        faults.point("before_archive")
        directory = self.directory(ref)
        path = directory / f"{name}.json"
        try:
            self.root.mkdir(directory)
            if not self._verified(path, name):
                self.root.write_atomic(path, data, temp_stem=name, sha256=name if streamed else None)
                if not self._verified(path, name):
                    raise ArchiveError(f"Archive entry {path} does not read back as written.", path=path)
            entry = ArchiveEntry(name, op, utc_now_iso(), list(anchors or []), info)
            self.root.append(directory / "index.jsonl",
                             (json.dumps(entry.as_dict(), ensure_ascii=True) + "\n").encode("ascii"))
            faults.point("after_index_append")
        except OSError as exc:
            raise ArchiveError(f"Could not write the archive of session {ref.session_id}: {exc.strerror or exc}.",
                               hint="nothing in the session was changed", path=directory) from None
        except ContentMismatch:
            raise ChangedOnDiskError(f"Session {ref.session_id} changed on disk while Reprise archived it; "
                                     "nothing was archived or written.", hint="reload and try again",
                                     path=directory) from None
        except ArchiveError:
            raise
        except RepriseError as exc:
            raise ArchiveError(f"Could not write the archive of session {ref.session_id}: {exc.message}",
                               hint="nothing in the session was changed", path=exc.path or directory) from None
        faults.point("after_archive")
        return entry

    def put_file(self, ref: SessionRef, source: Path, name: str, *, op: str, **info: Any) -> ArchiveEntry:
        """Adopt a file written in this session's archive folder and hashed as it was written
        (an agent's whole output, too large to hold in memory): verified against `name`,
        renamed to its entry, then indexed. The source is gone afterwards either way."""
        faults.point("before_archive")
        directory = self.directory(ref)
        path = directory / f"{name}.json"
        try:
            if source.parent != directory:
                raise ArchiveError(f"{source} is not in the archive folder {directory}.", path=source)
            if self.root.sha256(source) != name:
                raise ArchiveError(f"{source} does not match the digest it was written with.", path=source)
            if self._verified(path, name):
                self.root.unlink(source)
            else:
                self.root.move(source, path, replace=True)
            entry = ArchiveEntry(name, op, utc_now_iso(), [], info)
            self.root.append(directory / "index.jsonl",
                             (json.dumps(entry.as_dict(), ensure_ascii=True) + "\n").encode("ascii"))
        except (OSError, RepriseError) as exc:
            with contextlib.suppress(OSError, RepriseError):
                self.root.unlink(source)
            if isinstance(exc, ArchiveError):
                raise
            reason = f"{exc.strerror or exc}." if isinstance(exc, OSError) else exc.message
            raise ArchiveError(f"Could not write the archive of session {ref.session_id}: {reason}",
                               path=directory) from None
        faults.point("after_archive")
        return entry

    def share(self, source: SessionRef, target: SessionRef, name: str, *, op: str, **info: Any) -> ArchiveEntry:
        """Index in `target`'s archive the entry `name` of `source`'s archive (a fork's markers name
        the bytes of the session it was trimmed from), so that it is found, and kept, from either:
        the same file under a second name (a hard link, no second copy), or a verified copy where
        the two cannot share one."""
        faults.point("before_archive")
        origin = self.directory(source) / f"{name}.json"
        directory = self.directory(target)
        path = directory / f"{name}.json"
        try:
            self.root.mkdir(directory)
            if not self._verified(path, name):
                if not self._verified(origin, name):
                    raise ArchiveError(f"Archive entry {origin} is missing or does not match its digest; it was not "
                                       f"shared with session {target.session_id}.", path=origin)
                try:
                    self.root.link(origin, path)
                except OSError:   # another filesystem, one without links, a damaged file there
                    self.root.write_atomic(path, self.read(source, name), temp_stem=name)
                if not self._verified(path, name):
                    raise ArchiveError(f"Archive entry {path} does not read back as written.", path=path)
            entry = ArchiveEntry(name, op, utc_now_iso(), [], info)
            self.root.append(directory / "index.jsonl",
                             (json.dumps(entry.as_dict(), ensure_ascii=True) + "\n").encode("ascii"))
        except OSError as exc:
            raise ArchiveError(f"Could not write the archive of session {target.session_id}: "
                               f"{exc.strerror or exc} ({exc.filename}).", path=directory) from None
        except ArchiveError:
            raise
        except RepriseError as exc:
            raise ArchiveError(f"Could not write the archive of session {target.session_id}: {exc.message}",
                               path=exc.path or directory) from None
        faults.point("after_archive")
        return entry

    def holds(self, ref: SessionRef, name: str) -> bool:
        """Whether this session's archive indexes the entry `name` and has its bytes."""
        return any(entry.digest == name for entry in self.entries(ref)) and \
            self._verified(self.directory(ref) / f"{name}.json", name)

    def withdraw(self, ref: SessionRef, entry: ArchiveEntry) -> None:
        """Take back an entry just put for an operation that then failed: its index line, and its
        bytes unless another line still names them (a session's folder with nothing left goes too)."""
        directory = self.directory(ref)
        index = directory / "index.jsonl"
        line = json.dumps(entry.as_dict(), ensure_ascii=True).encode("ascii")
        lines = list(self.root.lines(index, MAX_INDEX_LINE_BYTES))
        at = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].data == line), None)
        if at is None or any(read.data is None for read in lines):
            return   # not there, or a line too long to write back as it is: the index stays whole
        kept = lines[:at] + lines[at + 1:]
        names = {parse_index_line(read.data).digest for read in kept if read.data and _parses(read.data)}
        if kept:
            self.root.write_atomic(index, [(read.data or b"") + (b"\n" if read.terminated else b"")
                                           for read in kept])
        else:
            self.root.unlink(index)
        if entry.digest not in names:
            self.root.unlink(directory / f"{entry.digest}.json")
        if not self.root.names(directory):
            with contextlib.suppress(OSError), self.root.parent(directory) as (fd, name):
                os.rmdir(name, dir_fd=fd)

    def _verified(self, path: Path, name: str) -> bool:
        """Whether the entry on disk has this digest (hashed as it is read: no second copy in memory)."""
        try:
            return self.root.sha256(path) == name
        except FileNotFoundError:
            return False

    def index_path(self, ref: SessionRef) -> Path:
        return self.directory(ref) / "index.jsonl"

    def reading(self, ref: SessionRef) -> IndexReading:
        """The index streamed line by line; each bad line is skipped and named. A last line without
        its newline is a crash mid-append (`torn_tail`), not damage."""
        index = self.index_path(ref)
        result = IndexReading()
        try:
            for line in self.root.lines(index, MAX_INDEX_LINE_BYTES):
                if line.data is None:
                    reason = f"over the {MAX_INDEX_LINE_BYTES:,}-byte line limit"
                elif not line.data.strip():
                    continue
                else:
                    try:
                        result.entries.append(parse_index_line(line.data))
                        continue
                    except (ValueError, TypeError, RecursionError) as exc:
                        reason = "nested too deeply" if isinstance(exc, RecursionError) else \
                            str(exc) if not isinstance(exc, json.JSONDecodeError) else "not JSON"
                if not line.terminated:
                    result.torn_tail = True
                    continue
                result.problems.append(Problem(str(index), "bad_index_line",
                                               f"{index} line {line.number}: {reason}; skipped"))
        except (FileNotFoundError, NotADirectoryError):
            return result
        except RepriseError as exc:
            result.problems.append(Problem(str(index), exc.code, exc.message))
        except OSError as exc:
            result.problems.append(Problem(str(index), "unreadable", f"{index}: {exc.strerror or exc}."))
        return result

    def problems(self, keys: list[str]) -> list[Problem]:
        """The damaged lines of every archive index of these workspaces (for `doctor`)."""
        found = []
        for key in keys:
            folder = self.paths.archive_folder(key)
            try:
                names = self.root.names(folder)
            except RepriseError as exc:
                found.append(Problem(exc.path or str(folder), exc.code, exc.message))
                continue
            except OSError as exc:
                found.append(Problem(str(folder), "unreadable", f"{folder}: {exc.strerror or exc}."))
                continue
            for name, is_dir in names:
                try:
                    ref = SessionRef(key, name, self.paths.source)
                except RepriseError:
                    continue
                if is_dir:
                    found.extend(self.reading(ref).problems)
        return found

    def entries(self, ref: SessionRef) -> list[ArchiveEntry]:
        """The usable entries of the index in order (bad lines skipped; see `reading`)."""
        return self.reading(ref).entries

    def checked_entries(self, ref: SessionRef) -> list[ArchiveEntry]:
        """The index for an operation that relies on it whole (restore): ArchiveError when any line
        is damaged or the index cannot be read, naming the first problem."""
        reading = self.reading(ref)
        if reading.problems:
            first = reading.problems[0]
            more = f" (and {len(reading.problems) - 1} more)" if len(reading.problems) > 1 else ""
            raise ArchiveError(f"The archive index of session {ref.session_id} is damaged: {first.message}{more}; "
                               "nothing was restored.", hint="repair or move the index file", path=first.path)
        return reading.entries

    def read(self, ref: SessionRef, name: str) -> bytes:
        """An entry's bytes, verified against its name."""
        if len(name) != 64 or any(ch not in "0123456789abcdef" for ch in name):
            raise ArchiveError(f"{name!r} is not an archive digest (64 hex characters).")
        path = self.directory(ref) / f"{name}.json"
        try:
            data = self.root.read(path, MAX_SESSION_BYTES)
        except FileNotFoundError:
            raise ArchiveError(f"Archive entry {name[:12]} of session {ref.session_id} is missing.",
                               path=path) from None
        except ArchiveError:
            raise
        except RepriseError as exc:
            raise ArchiveError(f"Archive entry {name[:12]} of session {ref.session_id} cannot be read: "
                               f"{exc.message}", path=path) from None
        if digest(data) != name:
            raise ArchiveError(f"Archive entry {path} is corrupt: its content does not match its digest.", path=path)
        return data


def _parses(data: bytes) -> bool:
    try:
        parse_index_line(data)
    except (ValueError, TypeError):
        return False
    return True


def find_entry(entries: list[ArchiveEntry], text: str) -> ArchiveEntry:
    """The newest entry whose digest starts with `text`; a trim's original resolves to the trim."""
    wanted = text.strip().lower()
    if len(wanted) < MIN_DIGEST_PREFIX or any(ch not in "0123456789abcdef" for ch in wanted):
        raise ArchiveError(f"{text[:70]!r} is not an archive digest.",
                           hint=f"at least {MIN_DIGEST_PREFIX} hex digits of a digest from `reprise archive`")
    matches = [entry for entry in entries if entry.digest.startswith(wanted)]
    if len({entry.digest for entry in matches}) > 1:
        raise ArchiveError(f"Archive digest {wanted} is ambiguous; give more digits.")
    if not matches:
        raise NotFoundError(f"No archive entry {wanted} for this session.")
    entry = matches[-1]
    if entry.op == "trim-original" and entry.info.get("records"):
        trims = [e for e in entries if e.op == "trim" and e.digest == entry.info["records"]]
        if trims:
            return trims[-1]
    return entry
