"""An append-only session file (JSON lines: Claude Code's sessions, Codex's rollouts) read on from
where the last read of it ended.

A listing keeps, per file, a `Carry`: the byte offset its last read reached, the complete lines
before it, the file's identity (inode, device), its size, mtime and ctime then, digests of its
first 4 KB and of the 4 KB before that offset, the warnings so far, and the state of the source's
fold over the records (its own bytes). A file that grew and still matches is read from that offset
only, complete lines only (a truncated last line is read again next time); anything else (a new
inode, a shorter file, a fold another version stored) is read whole again. So is a file of the size
it had whose mtime or ctime changed: nothing was appended, so it was rewritten in place (an editor
or a sync tool that truncates and rewrites), and the edges the grown check compares may be all it
left alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Protocol, TypeVar

from ..session_files import MAX_SESSION_BYTES, opened_regular_file, read_all
from .base import HeadKeys, SessionFile

EDGE = 4096                      # the bytes hashed at the start of a file and before the offset read to
MAX_WARNINGS = 5
HEADS = (16 << 10, 256 << 10, 4 << 20)   # the heads `first_record` reads, each only when the one before ended mid-line
# magic, offset, lines, inode, device, size, mtime, ctime, head length, edge length
_CARRY = struct.Struct("<4sQQQQQqqII")
_MAGIC = b"RCL2"


def edge_digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(slots=True)
class Carry:
    """What one read of a file leaves for the next."""

    offset: int
    lines: int             # the complete lines before `offset` (warnings name lines by number)
    inode: int
    device: int
    size: int              # the file's size, mtime and ctime as its read began
    mtime_ns: int
    ctime_ns: int
    head: bytes            # the first min(EDGE, offset) bytes' digest
    head_length: int
    edge: bytes            # the digest of the EDGE bytes before `offset`
    edge_length: int
    warnings: list[str] = field(default_factory=list)
    fold: bytes = b""

    def to_bytes(self) -> bytes:
        notes = json.dumps(self.warnings).encode()
        return b"".join((_CARRY.pack(_MAGIC, self.offset, self.lines, self.inode, self.device, self.size,
                                     self.mtime_ns, self.ctime_ns, self.head_length,
                                     self.edge_length), self.head, self.edge, struct.pack("<I", len(notes)), notes,
                         self.fold))

    @classmethod
    def from_bytes(cls, data: bytes) -> Carry | None:
        """None for bytes another version wrote (the file is then read whole)."""
        try:
            (magic, offset, lines, inode, device, size, mtime_ns, ctime_ns, head_length,
             edge_length) = _CARRY.unpack_from(data)
            if magic != _MAGIC:
                return None
            at = _CARRY.size
            head, edge = data[at:at + 16], data[at + 16:at + 32]
            (notes_length,) = struct.unpack_from("<I", data, at + 32)
            notes_at = at + 36
            warnings = json.loads(data[notes_at:notes_at + notes_length])
            return cls(offset, lines, inode, device, size, mtime_ns, ctime_ns, head, head_length, edge,
                       edge_length, list(warnings), data[notes_at + notes_length:])
        except (struct.error, ValueError, TypeError):
            return None


class Parsed(Protocol):
    """What a source's line reader gives for a chunk: its records, the offset past its last complete
    line, the lines it skipped (as warnings) and how many complete lines it consumed."""

    @property
    def records(self) -> list[dict[str, object]]: ...
    @property
    def end(self) -> int: ...
    @property
    def warnings(self) -> list[str]: ...
    @property
    def lines(self) -> int: ...


class Fold(Protocol):
    """A source's listing fold: fed records chunk by chunk, stored between reads."""

    def feed(self, records: Iterable[dict[str, object]]) -> None: ...
    def to_bytes(self) -> bytes: ...


F = TypeVar("F", bound=Fold)


@dataclass(slots=True)
class GrownRead(Generic[F]):
    """A read of one file: the fold over every record so far, the bytes this read took, the stat of
    the file, the carry for the next read, and the warnings of every read."""

    fold: F
    size: int
    mtime_ns: int
    read_bytes: int
    carry: Carry
    warnings: list[str]


def pread_all(fd: int, length: int, offset: int) -> bytes:
    parts, done = [], 0
    while done < length:
        chunk = os.pread(fd, length - done, offset + done)
        if not chunk:
            break
        parts.append(chunk)
        done += len(chunk)
    return b"".join(parts)


def resumable(fd: int, info: os.stat_result, carry: Carry | None) -> Carry | None:
    """The carry, when the file is the one it was taken from, grown or as it was: its first bytes
    and the bytes before the offset read to unchanged, and, when it has the size it had, its mtime
    and ctime too (a change that appended nothing rewrote it in place)."""
    if (carry is None or carry.inode != info.st_ino or carry.device != info.st_dev
            or info.st_size < carry.offset):
        return None
    if info.st_size == carry.size and (info.st_mtime_ns, info.st_ctime_ns) != (carry.mtime_ns, carry.ctime_ns):
        return None
    if edge_digest(pread_all(fd, carry.head_length, 0)) != carry.head:
        return None
    start = carry.offset - carry.edge_length
    if edge_digest(pread_all(fd, carry.edge_length, start)) != carry.edge:
        return None
    return carry


def read_grown(path: Path, root: Path, previous: bytes | None, *, parse: Callable[[bytes, int, int], Parsed],
               new_fold: Callable[[], F], stored_fold: Callable[[bytes], F], keep_fold: bool = True) -> GrownRead[F]:
    """Fold the file's records, from the previous read's offset when the file only grew since.
    `parse(chunk, offset, first line number)` reads a chunk's complete lines; `stored_fold` raises
    ValueError for bytes that are not a fold it stored. Without `keep_fold`, the carry keeps no fold:
    the file is read whole again if it grows. Raises ReadProblem or FileNotFoundError for a file that
    cannot be read."""
    carry = Carry.from_bytes(previous) if previous else None
    with opened_regular_file(path, root) as (fd, info):
        resumed = resumable(fd, info, carry)
        fold: F | None = None
        if resumed is not None:
            try:
                fold = stored_fold(resumed.fold)
            except ValueError:
                fold = None
        if resumed is not None and fold is not None:
            start, lines, warnings = resumed.offset, resumed.lines, list(resumed.warnings)
            os.lseek(fd, start, os.SEEK_SET)
        else:
            fold, start, lines, warnings = new_fold(), 0, 0, []
        data = read_all(fd, info.st_size - start, MAX_SESSION_BYTES)   # one read of the size: no chunks joined
        mtime_ns = os.fstat(fd).st_mtime_ns
        parsed = parse(data, start, lines + 1)
        end = parsed.end   # a truncated last line is read again next time
        head_length = edge_length = min(EDGE, end)
        if start == 0:
            head_digest = edge_digest(data[:head_length])
        elif resumed is not None and resumed.head_length == head_length:
            head_digest = resumed.head   # `resumable` just checked these very bytes against it
        else:
            head_digest = edge_digest(pread_all(fd, head_length, 0))
        consumed = end - start
        edge = data[consumed - edge_length:consumed] if consumed >= edge_length else \
            pread_all(fd, edge_length, end - edge_length)
    fold.feed(parsed.records)
    warnings = (warnings + parsed.warnings)[:MAX_WARNINGS]
    # The stat from before the read: a rewrite during it leaves other times than these.
    new_carry = Carry(end, lines + parsed.lines, info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns,
                      info.st_ctime_ns, head_digest, head_length, edge_digest(edge), edge_length, warnings,
                      fold.to_bytes() if keep_fold else b"")
    return GrownRead(fold, start + len(data), mtime_ns, len(data), new_carry, warnings)


def first_record(path: Path, root: Path, parse: Callable[[bytes, int, int], Parsed],
                 wanted: Callable[[dict[str, object]], bool]) -> tuple[dict[str, object] | None, bool]:
    """The first record of the file that `wanted` takes, found in its head, line by line (a longer head
    only when the shorter one ended before such a record): (the record, True); (None, True) when the
    whole file holds none; (None, False) when its first 4 MB do not tell. The records are those `parse`
    gives, as a whole read would feed them. Raises ReadProblem or FileNotFoundError as `read_grown` does."""
    with opened_regular_file(path, root) as (fd, _):
        start = 0   # the lines before it are read and hold none
        for cap in HEADS:
            data = pread_all(fd, cap, 0)
            while (end := data.find(b"\n", start)) >= 0:
                found = next((record for record in parse(data[start:end + 1], start, 1).records if wanted(record)),
                             None)
                if found is not None:
                    return found, True
                start = end + 1
            if len(data) < cap:   # the whole file (a cut last line is not read whole either)
                return None, True
    return None, False


def files_of_workspaces(files: Iterable[SessionFile], keys: Collection[str], known: HeadKeys,
                        key_of: Callable[[SessionFile], str | None]) -> list[SessionFile]:
    """Those of `files` whose head names one of these workspaces, or cannot tell (`key_of` gives None:
    read it whole). `known` keeps each path's key with the (size, mtime) it was found at, so the head of
    a file is read again only once the file changed."""
    chosen = []
    for file in files:
        kept = known.get(file.path)
        if kept is not None and kept[:2] == (file.size, file.mtime_ns):
            key = kept[2]
        else:
            key = key_of(file)
            known[file.path] = (file.size, file.mtime_ns, key)
        if key is None or key in keys:
            chosen.append(file)
    return chosen
