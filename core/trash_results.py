"""What the trash reports: a trashed session, and the results of purge, prune and relink; and
the steps every source's purge and prune share (which sessions, the audit lines, the summary)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .errors import RepriseError, UsageError
from .paths import SessionRef
from .retention import PruneSelection

if TYPE_CHECKING:
    from .audit import AuditLog


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
    notes: list[str] = field(default_factory=list)   # what it kept and why (bytes a live fork names)


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


def reason(exc: BaseException) -> str:
    """An error as one clause for a summary line."""
    if isinstance(exc, RepriseError):
        return exc.message.rstrip(".")
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
    return str(exc)


def purge_entries(audit: AuditLog, keys: list[str], entries: Callable[[list[str]], list[TrashEntry]],
                  finish: Callable[[str, PurgeResult], None], purge_one: Callable[[TrashEntry, PurgeResult], None],
                  *, confirmed: bool, older_than: float | None, now: float | None) -> PurgeResult:
    """The shared steps of a purge: refuse unless `confirmed`; `finish(key, result)` the tombstones a
    cut-short purge left; `purge_one(entry, result)` each entry of `entries(keys)` trashed more than
    `older_than` seconds ago (all when None), under its lock; audit per workspace. Raises, after
    auditing what was purged, when a session could not be purged."""
    if not confirmed:
        raise UsageError("Purging deletes trashed sessions for good.", hint="confirm with --yes")
    now = time.time() if now is None else now
    result = PurgeResult()
    for key in keys:
        finish(key, result)
    purged_by_key: dict[str, list[str]] = {}
    for ref in result.finished:
        purged_by_key.setdefault(ref.workspace_key, []).append(ref.session_id)
    for entry in entries(keys):
        if older_than is not None and entry.age(now) <= older_than:
            result.kept.append(entry)
            continue
        try:
            purge_one(entry, result)
        except (OSError, RepriseError) as exc:
            result.failed.append((entry, reason(exc)))
            continue
        purged_by_key.setdefault(entry.ref.workspace_key, []).append(entry.ref.session_id)
    audit_errors = []
    for key, ids in purged_by_key.items():
        try:
            audit.append(key, "purge", options={"older_than_s": older_than}, sessions=ids,
                         counts={"sessions": len(ids), "archives": sum(1 for e in result.archives_deleted if e in ids)},
                         now=now)
        except RepriseError as exc:
            audit_errors.append(exc.message)
    if result.failed or audit_errors:
        purged = ", ".join(entry.ref.session_id for entry in result.purged) or "none"
        problems = [f"{entry.ref.session_id} is still in the trash ({error})" for entry, error in result.failed]
        raise RepriseError(f"Purged {len(result.purged)} trashed session(s) ({purged}); "
                           + "; ".join(problems + audit_errors) + ".")
    return result


def apply_prune(audit: AuditLog, selection: PruneSelection, move: Callable[[SessionRef], object], *,
                confirmed: bool, now: float | None = None) -> PruneResult:
    """`move(ref)` each selected session to the trash when `confirmed` (one that fails is named with
    why, the rest still move), then one `prune` audit line per workspace; else only the selection."""
    result = PruneResult(selection, confirmed)
    if not confirmed:
        return result
    now = time.time() if now is None else now
    for candidate in selection.selected:
        try:
            move(candidate.ref)
        except RepriseError as exc:
            result.failed.append((candidate.ref, exc.message))
            continue
        result.moved.append(candidate.ref)
    keys: Iterable[str] = sorted({c.ref.workspace_key for c in selection.selected})
    for key in keys:
        moved = [ref.session_id for ref in result.moved if ref.workspace_key == key]
        failed = sum(1 for ref, _ in result.failed if ref.workspace_key == key)
        audit.append(key, "prune", options=selection.options.as_dict(), sessions=moved,
                     counts={"moved": len(moved), "failed": failed,
                             "protected": sum(1 for c in selection.protected if c.ref.workspace_key == key)},
                     result="ok" if not failed else f"failed: {failed} not moved", now=now)
    return result
