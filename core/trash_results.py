"""What the trash reports: a trashed session, and the results of purge, prune and relink."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from .paths import SessionRef
from .retention import PruneSelection


@dataclass(frozen=True, slots=True)
class TrashEntry:
    ref: SessionRef
    trashed_at: str | None
    trashed_ts: float
    size: int
    title: str | None = None
    origin: str | None = None

    def age(self, now: float) -> float:
        return max(0.0, now - self.trashed_ts)

    def as_dict(self, now: float | None = None) -> dict[str, Any]:
        now = time.time() if now is None else now
        return {"session_id": self.ref.session_id, "workspace_key": self.ref.workspace_key,
                "trashed_at": self.trashed_at, "age_s": round(self.age(now)), "size": self.size,
                "title": self.title, "from": self.origin}


@dataclass(slots=True)
class PurgeResult:
    purged: list[TrashEntry] = field(default_factory=list)
    kept: list[TrashEntry] = field(default_factory=list)
    archives_deleted: list[str] = field(default_factory=list)
    failed: list[tuple[TrashEntry, str]] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    finished: list[SessionRef] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"purged": [entry.as_dict() for entry in self.purged], "kept": len(self.kept),
                "archives_deleted": self.archives_deleted,
                "finished": [ref.session_id for ref in self.finished],
                "failed": [{"session_id": entry.ref.session_id, "error": error} for entry, error in self.failed],
                "leftovers": self.leftovers}


@dataclass(slots=True)
class PruneResult:
    selection: PruneSelection
    applied: bool
    moved: list[SessionRef] = field(default_factory=list)
    failed: list[tuple[SessionRef, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {**self.selection.as_dict(), "applied": self.applied,
                "moved": [ref.session_id for ref in self.moved],
                "failed": [{"session_id": ref.session_id, "error": error} for ref, error in self.failed]}


@dataclass(slots=True)
class RelinkResult:
    old_key: str
    new_key: str
    new_path: str
    sessions: list[str] = field(default_factory=list)
    trashed: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"old_key": self.old_key, "new_key": self.new_key, "new_path": self.new_path,
                "sessions": self.sessions, "trashed": self.trashed, "archives": self.archives,
                "left_behind": self.left_behind}
