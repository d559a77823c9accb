"""The archive of one session: exact bytes of whatever Reprise removed or replaced, each
stored under the SHA-256 of its bytes, with an ordered index of entries.

An entry is written and verified before the session file changes, so a crash can leave an
archive entry without its trim, never a trim without its archive entry.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import faults
from .errors import ArchiveError
from .models import utc_now_iso
from .paths import SessionRef, StorePaths
from .store import append_line, digest, ensure_dir, write_atomic


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


class Archive:
    def __init__(self, paths: StorePaths):
        self.paths = paths

    def directory(self, ref: SessionRef) -> Path:
        return self.paths.archive_dir(ref)

    def put(self, ref: SessionRef, data: bytes, *, op: str, anchors: list[str] | None = None,
            **info: Any) -> ArchiveEntry:
        """Store bytes (deduplicated by digest), verify them, then append an index line."""
        faults.point("before_archive")
        name = digest(data)
        directory = self.directory(ref)
        path = directory / f"{name}.json"
        try:
            ensure_dir(directory)
            if not self._verified(path, name):
                write_atomic(path, data, temp_stem=name)
                if not self._verified(path, name):
                    raise ArchiveError(f"Archive entry {path} does not read back as written.", path=path)
            entry = ArchiveEntry(name, op, utc_now_iso(), list(anchors or []), info)
            self._append_index(directory / "index.jsonl", entry)
        except OSError as exc:
            raise ArchiveError(f"Could not write the archive of session {ref.session_id}: {exc.strerror or exc}.",
                               hint="nothing in the session was changed", path=directory) from None
        faults.point("after_archive")
        return entry

    @staticmethod
    def _verified(path: Path, name: str) -> bool:
        """Whether the entry on disk has this digest (hashed as it is read: no second copy in memory)."""
        try:
            with open(path, "rb") as handle:
                return hashlib.file_digest(handle, "sha256").hexdigest() == name
        except FileNotFoundError:
            return False

    @staticmethod
    def _append_index(index: Path, entry: ArchiveEntry) -> None:
        append_line(index, (json.dumps(entry.as_dict(), ensure_ascii=True) + "\n").encode("ascii"))
        faults.point("after_index_append")

    def entries(self, ref: SessionRef) -> list[ArchiveEntry]:
        """The index in order; a torn last line (a crash mid-append) is skipped."""
        index = self.directory(ref) / "index.jsonl"
        try:
            lines = index.read_text(encoding="ascii", errors="replace").splitlines()
        except FileNotFoundError:
            return []
        entries = []
        for line in lines:
            try:
                item = json.loads(line)
                known = {"digest", "op", "time", "anchors"}
                entries.append(ArchiveEntry(item["digest"], item["op"], item["time"], list(item.get("anchors", [])),
                                            {k: v for k, v in item.items() if k not in known}))
            except (ValueError, KeyError, TypeError):
                continue
        return entries

    def read(self, ref: SessionRef, name: str) -> bytes:
        """An entry's bytes, verified against its name."""
        if len(name) != 64 or any(ch not in "0123456789abcdef" for ch in name):
            raise ArchiveError(f"{name!r} is not an archive digest (64 hex characters).")
        path = self.directory(ref) / f"{name}.json"
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArchiveError(f"Archive entry {name[:12]} of session {ref.session_id} is missing.", path=path) from None
        if digest(data) != name:
            raise ArchiveError(f"Archive entry {path} is corrupt: its content does not match its digest.", path=path)
        return data
