"""The session store: safe reads, atomic writes, locks between Reprise processes, and
detection of changes made by anyone else between a read and a write.

Every write goes through `write_atomic`: a hidden temp file in the same directory, fsync,
`os.replace`, fsync of the directory. Session writes also hold `locks/<id>.lock` and check
that the file is still the version that was read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import ChangedOnDiskError, NotFoundError, ProblemFileError, RepriseError
from ...own_files import (
    LOCK_TIMEOUT_S,
    MAX_META_BYTES,
    MAX_RECORD_BYTES,
    OwnFiles,
)
from ...paths import SessionRef, is_temp_name, validate_workspace_key
from ...problems import Problem
from ...rooted import Root
from ...session_files import (
    MAX_SESSION_BYTES,
    FileVersion,
    ReadProblem,
    chunks_of,
    digest,
    hash_regular_file,
    inside,
    opened_regular_file,
    problems_named,
    read_regular_file,
    write_atomic,
)
from .layout import StorePaths

if TYPE_CHECKING:   # the decoding imports pydantic: a listing of the cached rows reads no file
    from .codec import Decoded
    from .models import SessionState

__all__ = ["LOCK_TIMEOUT_S", "MAX_META_BYTES", "MAX_RECORD_BYTES", "MAX_SESSION_BYTES", "FileVersion",
           "Inspected", "Loaded", "Store", "digest"]

_SETTLE_TRIES = 20   # up to a second for a file rewritten in place to settle (a loaded machine is slow to finish)
_SETTLE_PAUSE_S = 0.05
_RECENT_NS = 2_000_000_000


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


class Store(OwnFiles):
    """Sessions under one state root."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.paths: StorePaths = StorePaths(self.root, "fractal")
        super().__init__(self.paths, Root(self.root))

    # --- reading -------------------------------------------------------------------------

    def inspect(self, path: Path, expected_id: str | None, *, keep_data: bool = False,
                digest_only: bool = False) -> Inspected:
        """Read and decode one file for listing; a file caught mid-write is retried before it is a problem.
        With `keep_data` the bytes come back too (read again after the parse and checked by SHA-256);
        with `digest_only` as well, the file is only hashed again after the parse (streamed, so its
        bytes are not held beside the parsed state) and `data` is b"" (None when it changed)."""
        from .codec import Decoded, decode, decode_text, text_of

        sha256 = None
        for attempt in range(_SETTLE_TRIES):
            try:
                data, info = read_regular_file(path, self.root)
            except ReadProblem as exc:
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
                again: bytes | None
                if digest_only:
                    again = b"" if self._hashes_to(path, sha256, info.st_size) else None
                else:
                    again = self._read_again(path, sha256)
                data = again if again is not None else b""
                if again is None:
                    decoded = Decoded(None, Problem(str(path), "changed", "the file changed while it was read"))
                    if attempt < _SETTLE_TRIES - 1:
                        time.sleep(_SETTLE_PAUSE_S)
                        continue
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
        except (ReadProblem, FileNotFoundError):
            return None
        return data if digest(data) == sha256 else None

    def _hashes_to(self, path: Path, sha256: str, size: int) -> bool:
        """Whether the file still has this digest, and as many bytes as its stat said (hashed as it is read)."""
        try:
            again, length, _ = hash_regular_file(path, self.root)
        except (ReadProblem, FileNotFoundError):
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
            raise NotFoundError(f"No session {ref.session_id} in {self.workspace_name(ref.workspace_key)}.",
                                path=path) from None
        decoded = inspected.decoded
        if decoded.state is None:
            raise ProblemFileError(decoded.failure())
        assert inspected.sha256 is not None
        version = FileVersion(inspected.size, inspected.mtime_ns, inspected.sha256)
        return Loaded(ref, path, decoded.state, version, inspected.data if keep_data else None, decoded.warnings)

    def current_version(self, path: Path) -> FileVersion | None:
        """The file's version now (hashed as it is read: a large file is never held whole), None when missing."""
        try:
            sha256, _, info = hash_regular_file(path, self.root)
        except FileNotFoundError:
            return None
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        return FileVersion(info.st_size, info.st_mtime_ns, sha256)

    @contextlib.contextmanager
    def chunks(self, path: Path) -> Iterator[Iterator[bytes]]:
        """A session file's bytes a chunk at a time, through the checks of `read_regular_file`
        (FileNotFoundError, or ProblemFileError naming what is wrong)."""
        try:
            with opened_regular_file(path, self.root) as (fd, _):
                yield problems_named(path, chunks_of(fd))
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None

    # --- writing -------------------------------------------------------------------------

    def save(self, ref: SessionRef, state: SessionState, *, expected: FileVersion | None,
             locked: bool = False) -> FileVersion:
        """Replace the session file if it is still `expected` (None: it must not exist yet)."""
        from .codec import encode

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
            from .codec import decode

            decoded = decode(data, path=str(self.paths.session_file(ref)), expected_id=ref.session_id)
            if decoded.state is None:
                raise ProblemFileError(decoded.failure(), hint="Reprise only writes files Fractal loads")
        if locked:
            return self._save_locked(ref, data, expected)
        with self.lock(ref):
            return self._save_locked(ref, data, expected)

    def _save_locked(self, ref: SessionRef, data: bytes, expected: FileVersion | None) -> FileVersion:
        path = self.paths.session_file(ref)
        if path.parent.exists() and not inside(os.path.realpath(path.parent), self.root):
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
