"""What the trash reports: a trashed session, and the results of purge, prune and relink."""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass(slots=True)
class PurgeResult:
    purged: list[TrashEntry] = field(default_factory=list)
    kept: list[TrashEntry] = field(default_factory=list)
    archives_deleted: list[str] = field(default_factory=list)
    failed: list[tuple[TrashEntry, str]] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    finished: list[SessionRef] = field(default_factory=list)


@dataclass(slots=True)
class PruneResult:
    selection: PruneSelection
    applied: bool
    moved: list[SessionRef] = field(default_factory=list)
    failed: list[tuple[SessionRef, str]] = field(default_factory=list)


@dataclass(slots=True)
class RelinkResult:
    old_key: str
    new_key: str
    new_path: str
    sessions: list[str] = field(default_factory=list)
    trashed: list[str] = field(default_factory=list)
    archives: list[str] = field(default_factory=list)
    left_behind: list[str] = field(default_factory=list)
