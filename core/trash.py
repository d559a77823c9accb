"""Moving sessions out of and around the store without losing them: `rm` into the workspace's
trash and back out, `purge` (the one hard delete), applying a prune selection, and `relink`
(a moved repository's sessions, metadata and archives to the key of its new folder).

Moves are `os.rename`s inside one state root (one filesystem), under the session's lock, and
are refused while an agent is probably writing the session unless forced.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .audit import AuditLog, iso_time
from .errors import ConflictError, NotFoundError, ProblemFileError, RepriseError, UsageError
from .liveness import check_not_running
from .paths import SessionRef, validate_session_id, validate_workspace_key, workspace_key
from .retention import PruneSelection
from .store import Store, ensure_dir, fsync_dir, write_atomic


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

    def as_dict(self) -> dict[str, Any]:
        return {"purged": [entry.as_dict() for entry in self.purged], "kept": len(self.kept),
                "archives_deleted": self.archives_deleted}


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


def _unlink(path: Path) -> bool:
    try:
        os.unlink(path)
        return True
    except FileNotFoundError:
        return False


def _session_ids(directory: Path) -> list[str]:
    """Valid session ids of the `<id>.json` entries of a directory (files or symlinks, not folders)."""
    try:
        entries = list(os.scandir(directory))
    except (FileNotFoundError, NotADirectoryError):
        return []
    ids = []
    for entry in entries:
        if not entry.name.endswith(".json") or entry.is_dir(follow_symlinks=False):
            continue
        try:
            ids.append(validate_session_id(entry.name[:-5]))
        except RepriseError:
            continue
    return sorted(ids)


class Trash:
    """The trash of every workspace under one state root: `<key>/reprise/trash/`."""

    def __init__(self, store: Store, audit: AuditLog | None = None):
        self.store = store
        self.paths = store.paths
        self.audit = audit or AuditLog(store.paths)

    # --- rm ----------------------------------------------------------------------------------------------

    def remove(self, ref: SessionRef, *, force: bool = False, now: float | None = None) -> TrashEntry:
        """`reprise rm`: move the session file and its metadata to the trash."""
        now = time.time() if now is None else now
        entry = self._move_to_trash(ref, force=force, now=now)
        self.audit.append(ref.workspace_key, "rm", session_id=ref.session_id, options={"force": force},
                          counts={"bytes": entry.size}, now=now)
        return entry

    def _move_to_trash(self, ref: SessionRef, *, force: bool, now: float) -> TrashEntry:
        source = self.paths.session_file(ref)
        target = self.paths.trash_file(ref)
        with self.store.lock(ref):
            if not os.path.lexists(source):
                raise NotFoundError(f"No session {ref.session_id} in workspace {ref.workspace_key}.", path=source)
            try:
                loaded = self.store.load(ref)
            except ProblemFileError:
                loaded = None  # a broken file has no pending turn to protect
            if loaded is not None:
                check_not_running(self.store, loaded, now=now, force=force, action="removed")
            if os.path.lexists(target):
                raise ConflictError(f"A session {ref.session_id} is already in the trash.",
                                    hint="restore or purge that one first", path=target)
            size = os.lstat(source).st_size
            title = self.store.read_meta(ref).title
            record = {"session_id": ref.session_id, "trashed_at": iso_time(now), "trashed_ts": now,
                      "from": f"sessions/{ref.session_id}.json", "size": size}
            try:
                write_atomic(self.paths.trash_record_file(ref),
                             (json.dumps(record, indent=2) + "\n").encode("ascii"))
                ensure_dir(target.parent)
                os.rename(source, target)
                meta = self.paths.meta_file(ref)
                if os.path.lexists(meta):
                    ensure_dir(self.paths.trash_meta_file(ref).parent)
                    os.rename(meta, self.paths.trash_meta_file(ref))
                    fsync_dir(meta.parent)
                fsync_dir(source.parent)
                fsync_dir(target.parent)
            except OSError as exc:
                raise RepriseError(f"Could not move session {ref.session_id} to the trash: {exc.strerror or exc}.",
                                   path=source) from None
        return TrashEntry(ref, record["trashed_at"], now, size, title, record["from"])

    # --- listing -------------------------------------------------------------------------------------------

    def entries(self, keys: Iterable[str]) -> list[TrashEntry]:
        """What is in the trash of these workspaces, newest first."""
        found = []
        for key in keys:
            for session_id in _session_ids(self.paths.trash_dir(key)):
                found.append(self._entry(SessionRef(key, session_id)))
        found.sort(key=lambda entry: entry.trashed_ts, reverse=True)
        return found

    def _entry(self, ref: SessionRef) -> TrashEntry:
        path = self.paths.trash_file(ref)
        info = os.lstat(path)
        record: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            loaded = json.loads(self.paths.trash_record_file(ref).read_bytes())
            record = loaded if isinstance(loaded, dict) else {}
        stamp = record.get("trashed_ts")
        trashed_ts = float(stamp) if isinstance(stamp, (int, float)) else info.st_ctime
        title = None
        with contextlib.suppress(OSError, ValueError, AttributeError):
            title = json.loads(self.paths.trash_meta_file(ref).read_bytes()).get("title")
        return TrashEntry(ref, record.get("trashed_at"), trashed_ts, info.st_size,
                          title if isinstance(title, str) else None, record.get("from"))

    # --- trash restore ---------------------------------------------------------------------------------------

    def restore(self, ref: SessionRef, *, now: float | None = None) -> TrashEntry:
        """`reprise trash restore`: move a trashed session back; refused if its id exists again."""
        now = time.time() if now is None else now
        source = self.paths.trash_file(ref)
        target = self.paths.session_file(ref)
        with self.store.lock(ref):
            if not os.path.lexists(source):
                raise NotFoundError(f"Session {ref.session_id} is not in the trash of workspace {ref.workspace_key}.",
                                    hint="reprise trash list")
            if os.path.lexists(target):
                raise ConflictError(f"A session {ref.session_id} exists again in workspace {ref.workspace_key}; "
                                    "the trashed one was left in the trash.", path=target)
            entry = self._entry(ref)
            try:
                ensure_dir(target.parent)
                os.rename(source, target)
                meta = self.paths.trash_meta_file(ref)
                if os.path.lexists(meta):
                    ensure_dir(self.paths.meta_file(ref).parent)
                    os.replace(meta, self.paths.meta_file(ref))
                _unlink(self.paths.trash_record_file(ref))
                fsync_dir(target.parent)
                fsync_dir(source.parent)
            except OSError as exc:
                raise RepriseError(f"Could not move session {ref.session_id} out of the trash: "
                                   f"{exc.strerror or exc}.", path=source) from None
        self.audit.append(ref.workspace_key, "trash-restore", session_id=ref.session_id,
                          counts={"bytes": entry.size}, now=now)
        return entry

    # --- purge -----------------------------------------------------------------------------------------------

    def purge(self, keys: Iterable[str], *, confirmed: bool, older_than: float | None = None,
              now: float | None = None) -> PurgeResult:
        """Delete trashed sessions for good (only those trashed more than `older_than` seconds ago
        when given), with their metadata and archives. Raises unless `confirmed`."""
        if not confirmed:
            raise UsageError("Purging deletes trashed sessions for good.", hint="confirm with --yes")
        now = time.time() if now is None else now
        result = PurgeResult()
        purged_by_key: dict[str, list[str]] = {}
        for entry in self.entries(keys):
            if older_than is not None and entry.age(now) <= older_than:
                result.kept.append(entry)
                continue
            ref = entry.ref
            with self.store.lock(ref):
                _unlink(self.paths.trash_file(ref))
                _unlink(self.paths.trash_meta_file(ref))
                _unlink(self.paths.trash_record_file(ref))
                archive = self.paths.archive_dir(ref)
                if archive.is_dir() and not os.path.lexists(self.paths.session_file(ref)):
                    shutil.rmtree(archive)
                    result.archives_deleted.append(ref.session_id)
            result.purged.append(entry)
            purged_by_key.setdefault(ref.workspace_key, []).append(ref.session_id)
        for key, ids in purged_by_key.items():
            self.audit.append(key, "purge", options={"older_than_s": older_than}, sessions=ids,
                              counts={"sessions": len(ids), "archives": sum(
                                  1 for e in result.archives_deleted if e in ids)}, now=now)
        return result

    # --- prune -----------------------------------------------------------------------------------------------

    def prune(self, selection: PruneSelection, *, confirmed: bool, now: float | None = None) -> PruneResult:
        """Move the selected sessions to the trash; without `confirmed` only report the selection."""
        result = PruneResult(selection, confirmed)
        if not confirmed:
            return result
        now = time.time() if now is None else now
        by_key: dict[str, list[str]] = {}
        for candidate in selection.selected:
            try:
                self._move_to_trash(candidate.ref, force=selection.options.force, now=now)
            except RepriseError as exc:
                result.failed.append((candidate.ref, exc.message))
                continue
            result.moved.append(candidate.ref)
            by_key.setdefault(candidate.ref.workspace_key, []).append(candidate.ref.session_id)
        keys = {c.ref.workspace_key for c in selection.selected}
        for key in sorted(keys):
            moved = by_key.get(key, [])
            failed = sum(1 for ref, _ in result.failed if ref.workspace_key == key)
            self.audit.append(key, "prune", options=selection.options.as_dict(), sessions=moved,
                              counts={"moved": len(moved), "failed": failed,
                                      "protected": sum(1 for c in selection.protected if c.ref.workspace_key == key)},
                              result="ok" if not failed else f"failed: {failed} not moved", now=now)
        return result


# --- relink ------------------------------------------------------------------------------------------------

def relink(store: Store, old_key: str, new_dir: str | Path, *, force: bool = False, audit: AuditLog | None = None,
           now: float | None = None) -> RelinkResult:
    """Move the sessions of key `old_key` (with metadata, archives and trash) to the key of
    `new_dir` and record `new_dir` as that key's folder. Refused, changing nothing, on any id
    that already exists under the new key or while an agent is probably writing a session."""
    now = time.time() if now is None else now
    paths = store.paths
    folder = Path(new_dir).expanduser().resolve()
    new_key = workspace_key(folder)
    if new_key == validate_workspace_key(old_key):
        raise UsageError(f"{folder} already has the key {old_key}; nothing to relink.")
    if not paths.workspace(old_key).is_dir():
        raise NotFoundError(f"No workspace {old_key} in the state root {store.root}.")
    sessions = _session_ids(paths.sessions(old_key))
    trashed = _session_ids(paths.trash_dir(old_key))
    archive_root = paths.reprise_dir(old_key) / "archive"
    archives = sorted(entry.name for entry in _scandir(archive_root) if entry.is_dir(follow_symlinks=False))
    archives = [name for name in archives if _valid_id(name)]
    moves: list[tuple[Path, Path]] = []
    kinds = [(sessions, (paths.session_file, paths.meta_file)),
             (trashed, (paths.trash_file, paths.trash_meta_file, paths.trash_record_file)),
             (archives, (paths.archive_dir,))]
    for ids, places in kinds:
        for session_id in ids:
            old, new = SessionRef(old_key, session_id), SessionRef(new_key, session_id)
            moves += [(place(old), place(new)) for place in places]
    moves = [(source, target) for source, target in moves if os.path.lexists(source)]
    collisions = sorted({target.name.removesuffix(".json") for _, target in moves if os.path.lexists(target)})
    if collisions:
        raise ConflictError(f"{len(collisions)} id(s) of workspace {old_key} already exist under {new_key}: "
                            f"{', '.join(collisions[:10])}; nothing was moved.",
                            hint="remove or rename the duplicates first")
    with contextlib.ExitStack() as locks:
        for session_id in sessions:
            ref = SessionRef(old_key, session_id)
            locks.enter_context(store.lock(ref))
            try:
                loaded = store.load(ref)
            except ProblemFileError:
                continue
            check_not_running(store, loaded, now=now, force=force, action="relinked")
        for source, target in moves:
            ensure_dir(target.parent)
            os.rename(source, target)
        for directory in {target.parent for _, target in moves} | {source.parent for source, _ in moves}:
            fsync_dir(directory)
    store.record_workspace(new_key, folder)
    left = sorted(entry.name for entry in _scandir(paths.sessions(old_key)))
    result = RelinkResult(old_key, new_key, str(folder), sessions, trashed, archives, left)
    audit = audit or AuditLog(paths)
    for key in (old_key, new_key):
        audit.append(key, "relink", options={"from_key": old_key, "to_key": new_key, "force": force},
                     sessions=sessions, counts={"sessions": len(sessions), "trashed": len(trashed),
                                                "archives": len(archives)}, now=now)
    return result


def _scandir(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except (FileNotFoundError, NotADirectoryError):
        return []


def _valid_id(name: str) -> bool:
    try:
        validate_session_id(name)
    except RepriseError:
        return False
    return True
