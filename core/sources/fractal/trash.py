"""Moving sessions out of and around the store without losing them: `rm` into the workspace's
trash and back out, `purge` (the one hard delete), applying a prune selection, and `relink`
(a moved repository's sessions, metadata and archives to the key of its new folder).

Every move goes through the state root's `Root` (no link followed; across filesystems a
verified copy), under the session's lock, and is refused while an agent is probably writing
the session unless forced. `rm`, `trash restore` and `relink` either finish, audit included,
or put back what they moved and say what is where. `purge` cannot be undone: each session is
first renamed into a tombstone, so it is either still restorable or wholly gone.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from ... import faults
from ...audit import AuditLog, iso_time
from ...errors import (
    ConflictError,
    NotFoundError,
    ProblemFileError,
    RepriseError,
    UsageError,
)
from ...paths import (
    SessionRef,
    validate_session_id,
    validate_workspace_key,
    workspace_key,
)
from ...retention import PruneSelection
from ...rooted import Root
from ...trash_results import PruneResult, PurgeResult, RelinkResult, TrashEntry, apply_prune, purge_entries
from ...trash_results import reason as _reason
from .liveness import check_not_running
from .store import MAX_META_BYTES, MAX_RECORD_BYTES, Loaded, Store

TOMBSTONE_PREFIX = ".purge-"


class Journal:
    """The moves of one multi-step operation, so that a failure can put everything back."""

    def __init__(self, root: Root):
        self.root = root
        self.moves: list[tuple[Path, Path]] = []
        self.undo_steps: list[Callable[[], object]] = []

    def move(self, source: Path, target: Path, *, replace: bool = False) -> None:
        self.root.move(source, target, replace=replace)
        self.moves.append((source, target))
        self.undo_steps.append(lambda: self.root.move(target, source))

    def on_undo(self, step: Callable[[], object]) -> None:
        self.undo_steps.append(step)

    def undo(self) -> list[str]:
        """Reverse every step, newest first; returns what could not be put back."""
        stuck = []
        for step in reversed(self.undo_steps):
            try:
                step()
            except (OSError, RepriseError) as exc:
                stuck.append(_reason(exc))
        self.undo_steps.clear()
        return stuck

    def where(self) -> str:
        return "; ".join(f"{source} is now at {target}" for source, target in self.moves)


def _failed(what: str, exc: BaseException, journal: Journal) -> RepriseError:
    """The first real error of a multi-step operation, after putting back what it did."""
    done = journal.where()
    stuck = journal.undo()
    if not stuck:
        return RepriseError(f"{what}: {_reason(exc)}; nothing was changed (every move was put back).",
                            path=getattr(exc, "path", None))
    return RepriseError(f"{what}: {_reason(exc)}; putting back failed too ({'; '.join(stuck)}): {done}.",
                        hint="move the files back by hand", path=getattr(exc, "path", None))


def _session_ids(root: Root, directory: Path) -> list[str]:
    """Valid session ids of the `<id>.json` entries of a directory (files or symlinks, not folders)."""
    ids = []
    for name, is_dir in root.names(directory):
        if not name.endswith(".json") or is_dir:
            continue
        try:
            ids.append(validate_session_id(name[:-5]))
        except RepriseError:
            continue
    return sorted(ids)


def _read_json(root: Root, path: Path, cap: int) -> dict[str, Any]:
    try:
        loaded = json.loads(root.read(path, cap))
    except (OSError, ValueError, RepriseError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


class Trash:
    """The trash of every workspace under one state root: `<key>/reprise/trash/`."""

    def __init__(self, store: Store, audit: AuditLog | None = None):
        self.store = store
        self.paths = store.paths
        self.root = store.rooted
        self.audit = audit or AuditLog(store.paths)

    def _places(self, ref: SessionRef) -> list[Path]:
        paths = self.paths
        return [paths.session_file(ref), paths.meta_file(ref), paths.trash_file(ref), paths.trash_meta_file(ref),
                paths.trash_record_file(ref), paths.archive_dir(ref), paths.lock_file(ref)]

    def _check(self, ref: SessionRef) -> None:
        """Refuse before anything moves when a link sits on the way to any place of this session."""
        for place in self._places(ref):
            self.root.check(place)

    # --- rm ----------------------------------------------------------------------------------------------

    def remove(self, ref: SessionRef, *, force: bool = False, now: float | None = None) -> TrashEntry:
        """`reprise rm`: move the session file and its metadata to the trash, then audit; a failed
        step puts back what was moved."""
        now = time.time() if now is None else now
        self._check(ref)
        with self.store.lock(ref):
            journal = Journal(self.root)
            entry = self._move_to_trash(ref, journal, force=force, now=now)
            try:
                self.audit.append(ref.workspace_key, "rm", session_id=ref.session_id, options={"force": force},
                                  counts={"bytes": entry.size}, now=now)
            except RepriseError as exc:
                raise _failed(f"Session {ref.session_id} was not moved to the trash", exc, journal) from None
        return entry

    def _move_to_trash(self, ref: SessionRef, journal: Journal, *, force: bool, now: float) -> TrashEntry:
        """The moves of `rm`, under the session's lock held by the caller."""
        source = self.paths.session_file(ref)
        target = self.paths.trash_file(ref)
        if not self.root.exists(source):
            raise NotFoundError(f"No session {ref.session_id} in {self.store.workspace_name(ref.workspace_key)}.",
                                path=source)
        try:
            loaded = self.store.load(ref)
        except ProblemFileError:
            loaded = None  # a broken file has no pending turn to protect
        if loaded is not None:
            check_not_running(self.store, loaded, now=now, force=force, action="removed")
        if self.root.exists(target):
            raise ConflictError(f"A session {ref.session_id} is already in the trash.",
                                hint="restore or purge that one first", path=target)
        size = self.root.lstat(source).st_size
        title = self.store.read_meta(ref).title
        trashed_at, origin = iso_time(now), f"sessions/{ref.session_id}.json"
        record = {"session_id": ref.session_id, "trashed_at": trashed_at, "trashed_ts": now, "from": origin,
                  "size": size}
        record_path = self.paths.trash_record_file(ref)
        try:
            self.root.write_atomic(record_path, (json.dumps(record, indent=2) + "\n").encode("ascii"))
            journal.on_undo(lambda: self.root.unlink(record_path))
            journal.move(source, target)
            meta = self.paths.meta_file(ref)
            if self.root.exists(meta):
                journal.move(meta, self.paths.trash_meta_file(ref), replace=True)
        except (OSError, RepriseError) as exc:
            raise _failed(f"Could not move session {ref.session_id} to the trash", exc, journal) from None
        return TrashEntry(ref, trashed_at, now, size, title, origin)

    # --- listing -------------------------------------------------------------------------------------------

    def entries(self, keys: Iterable[str]) -> list[TrashEntry]:
        """What is in the trash of these workspaces, newest first."""
        found = []
        for key in keys:
            for session_id in _session_ids(self.root, self.paths.trash_dir(key)):
                try:
                    found.append(self._entry(SessionRef(key, session_id, "fractal")))
                except FileNotFoundError:
                    continue  # purged or restored meanwhile
        found.sort(key=lambda entry: entry.trashed_ts, reverse=True)
        return found

    def _entry(self, ref: SessionRef) -> TrashEntry:
        info = self.root.lstat(self.paths.trash_file(ref))
        record = _read_json(self.root, self.paths.trash_record_file(ref), MAX_RECORD_BYTES)
        stamp = record.get("trashed_ts")
        trashed_ts = float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) \
            and abs(stamp) < 1e12 else info.st_ctime
        title = _read_json(self.root, self.paths.trash_meta_file(ref), MAX_META_BYTES).get("title")
        trashed_at, origin = record.get("trashed_at"), record.get("from")
        return TrashEntry(ref, trashed_at if isinstance(trashed_at, str) else None, trashed_ts, info.st_size,
                          title if isinstance(title, str) else None, origin if isinstance(origin, str) else None)

    # --- trash restore ---------------------------------------------------------------------------------------

    def restore(self, ref: SessionRef, *, now: float | None = None) -> TrashEntry:
        """`reprise trash restore`: move a trashed session back; refused if its id exists again. The
        trash record goes only once the move is audited; a failed step puts everything back."""
        now = time.time() if now is None else now
        source = self.paths.trash_file(ref)
        target = self.paths.session_file(ref)
        self._check(ref)
        with self.store.lock(ref):
            if not self.root.exists(source):
                raise NotFoundError(f"Session {ref.session_id} is not in the trash of "
                                    f"{self.store.workspace_name(ref.workspace_key)}.",
                                    hint="reprise trash list")
            if self.root.exists(target):
                raise ConflictError(f"A session {ref.session_id} exists again in "
                                    f"{self.store.workspace_name(ref.workspace_key)}; "
                                    "the trashed one was left in the trash.", path=target)
            entry = self._entry(ref)
            journal = Journal(self.root)
            try:
                journal.move(source, target)
                meta = self.paths.trash_meta_file(ref)
                if self.root.exists(meta):
                    journal.move(meta, self.paths.meta_file(ref), replace=True)
                self.audit.append(ref.workspace_key, "trash-restore", session_id=ref.session_id,
                                  counts={"bytes": entry.size}, now=now)
            except (OSError, RepriseError) as exc:
                raise _failed(f"Session {ref.session_id} was not restored from the trash", exc, journal) from None
            try:
                self.root.unlink(self.paths.trash_record_file(ref))
            except (OSError, RepriseError):
                pass  # a stale record of a session no longer in the trash is never read
        return entry

    # --- purge -----------------------------------------------------------------------------------------------

    def purge(self, keys: Iterable[str], *, confirmed: bool, older_than: float | None = None,
              now: float | None = None) -> PurgeResult:
        """Delete trashed sessions for good (only those trashed more than `older_than` seconds ago
        when given), with their metadata and archives. Raises unless `confirmed`.

        Each session is renamed into a tombstone folder first and the tombstone is then deleted,
        so a failure or a crash leaves it restorable or wholly gone; a tombstone left by a crash is
        finished by the next purge. Raises, after auditing what was purged, when a session could
        not be purged."""
        return purge_entries(self.audit, list(keys), self.entries, self._finish_tombstones, self._purge_locked,
                             confirmed=confirmed, older_than=older_than, now=now)

    def _purge_locked(self, entry: TrashEntry, result: PurgeResult) -> None:
        self._check(entry.ref)
        with self.store.lock(entry.ref):
            self._purge_one(entry, result)

    def _tombstone(self, ref: SessionRef) -> Path:
        return self.paths.trash_dir(ref.workspace_key) / f"{TOMBSTONE_PREFIX}{ref.session_id}"

    def _purge_one(self, entry: TrashEntry, result: PurgeResult) -> None:
        ref = entry.ref
        tomb = self._tombstone(ref)
        if self.root.exists(tomb):
            self.root.rmtree(tomb)
        self.root.mkdir(tomb)
        try:
            self.root.move(self.paths.trash_file(ref), tomb / "session.json")
        except BaseException:
            self.root.rmtree(tomb)
            raise
        # From here the session is no longer restorable: the rest goes into the tombstone too.
        faults.point("after_tombstone")
        result.purged.append(entry)
        deleted_archive = self._gather(ref, tomb)
        if deleted_archive:
            result.archives_deleted.append(ref.session_id)
        try:
            self.root.rmtree(tomb)
        except (OSError, RepriseError) as exc:
            result.leftovers.append(f"{tomb}: {_reason(exc)}; the next purge deletes it")

    def _gather(self, ref: SessionRef, tomb: Path) -> bool:
        """Move a purged session's metadata, record and (unless the id exists again) archive into its tombstone."""
        for place, name in ((self.paths.trash_meta_file(ref), "meta.json"),
                            (self.paths.trash_record_file(ref), "record.json")):
            if self.root.exists(place):
                self.root.move(place, tomb / name, replace=True)
        archive = self.paths.archive_dir(ref)
        if self.root.is_dir(archive) and not self.root.exists(self.paths.session_file(ref)):
            self.root.move(archive, tomb / "archive", replace=True)
            return True
        return False

    def _finish_tombstones(self, key: str, result: PurgeResult) -> None:
        """Delete the tombstones an interrupted purge left (audited as purged by this purge)."""
        trash = self.paths.trash_dir(key)
        for name, is_dir in self.root.names(trash):
            if not (is_dir and name.startswith(TOMBSTONE_PREFIX)):
                continue
            try:
                ref = SessionRef(key, name[len(TOMBSTONE_PREFIX):], "fractal")
            except RepriseError:
                continue
            tomb = trash / name
            try:
                with self.store.lock(ref):
                    if not self.root.exists(self.paths.trash_file(ref)) and self._gather(ref, tomb):
                        result.archives_deleted.append(ref.session_id)
                    self.root.rmtree(tomb)
            except (OSError, RepriseError) as exc:
                result.leftovers.append(f"{tomb}: {_reason(exc)}")
                continue
            result.finished.append(ref)

    # --- prune -----------------------------------------------------------------------------------------------

    def prune(self, selection: PruneSelection, *, confirmed: bool, now: float | None = None) -> PruneResult:
        """Move the selected sessions to the trash; without `confirmed` only report the selection."""
        moment = time.time() if now is None else now
        return apply_prune(self.audit, selection, lambda ref: self._prune_one(ref, selection.options.force, moment),
                           confirmed=confirmed, now=moment)

    def _prune_one(self, ref: SessionRef, force: bool, now: float) -> None:
        self._check(ref)
        with self.store.lock(ref):
            self._move_to_trash(ref, Journal(self.root), force=force, now=now)


# --- relink ------------------------------------------------------------------------------------------------

def relink(store: Store, old_key: str, new_dir: str | Path, *, force: bool = False, audit: AuditLog | None = None,
           now: float | None = None) -> RelinkResult:
    """Move the sessions of key `old_key` (with metadata, archives and trash) to the key of
    `new_dir` and record `new_dir` as that key's folder. Refused, changing nothing, on any id
    that already exists under the new key, on a link on the way, or while an agent is probably
    writing a session; a failure later (a full disk) puts every move back."""
    now = time.time() if now is None else now
    paths, root = store.paths, store.rooted
    folder = Path(new_dir).expanduser().resolve()
    new_key = workspace_key(folder)
    if new_key == validate_workspace_key(old_key):
        raise UsageError(f"The sessions of {folder} are already there; nothing to relink.")
    if not root.is_dir(paths.workspace(old_key)):
        raise NotFoundError(f"No sessions of {store.workspace_name(old_key)} in the state root {store.root}.")
    sessions = _session_ids(root, paths.sessions(old_key))
    trashed = _session_ids(root, paths.trash_dir(old_key))
    archive_root = paths.reprise_dir(old_key) / "archive"
    archives = [name for name, is_dir in root.names(archive_root) if is_dir and _valid_id(name)]
    moves: list[tuple[Path, Path]] = []
    kinds = [(sessions, (paths.session_file, paths.meta_file)),
             (trashed, (paths.trash_file, paths.trash_meta_file, paths.trash_record_file)),
             (archives, (paths.archive_dir,))]
    for ids, places in kinds:
        for session_id in ids:
            old, new = SessionRef(old_key, session_id, "fractal"), SessionRef(new_key, session_id, "fractal")
            moves += [(place(old), place(new)) for place in places]
    for source, target in moves:
        root.check(source)
        root.check(target)
    root.check(paths.workspace_record(new_key))
    moves = [(source, target) for source, target in moves if root.exists(source)]
    collisions = sorted({target.name.removesuffix(".json") for _, target in moves if root.exists(target)})
    if collisions:
        raise ConflictError(f"{len(collisions)} id(s) of {store.workspace_name(old_key)} already exist in "
                            f"workspace {folder}: "
                            f"{', '.join(collisions[:10])}; nothing was moved.",
                            hint="remove or rename the duplicates first")
    audit = audit or AuditLog(paths)
    options = {"from_key": old_key, "to_key": new_key, "force": force}
    counts = {"sessions": len(sessions), "trashed": len(trashed), "archives": len(archives)}
    with _SessionLocks(store, old_key, sessions) as loaded_states:
        for loaded in loaded_states:
            check_not_running(store, loaded, now=now, force=force, action="relinked")
        journal = Journal(root)
        audited: list[str] = []
        try:
            for source, target in moves:
                journal.move(source, target)
            _record_with_undo(store, journal, new_key, folder)
            for key in (old_key, new_key):
                audit.append(key, "relink", options=options, sessions=sessions, counts=counts, now=now)
                audited.append(key)
        except (OSError, RepriseError) as exc:
            error = _failed(f"The sessions of {store.workspace_name(old_key)} were not relinked to {folder}", exc,
                            journal)
            for key in audited:  # that line claimed a relink that was undone
                audit.append(key, "relink", options=options, sessions=sessions, counts=counts,
                             result=f"failed: rolled back ({_reason(exc)})", now=now)
            raise error from None
    left = sorted(name for name, _ in root.names(paths.sessions(old_key)))
    return RelinkResult(old_key, new_key, str(folder), sessions, trashed, archives, left)


def _record_with_undo(store: Store, journal: Journal, key: str, folder: Path) -> None:
    """Record the key's folder; undoing puts the previous record back (or removes the new one)."""
    path = store.paths.workspace_record(key)
    try:
        before: bytes | None = store.rooted.read(path, MAX_RECORD_BYTES)
    except (FileNotFoundError, NotADirectoryError):
        before = None
    store.record_workspace(key, folder)
    if before is None:
        journal.on_undo(lambda: store.rooted.unlink(path))
    else:
        journal.on_undo(lambda: store.rooted.write_atomic(path, before))


class _SessionLocks:
    """Hold the locks of every session of a workspace, yielding those that load."""

    def __init__(self, store: Store, key: str, ids: list[str]):
        self.store, self.key, self.ids = store, key, ids
        self.stack = contextlib.ExitStack()

    def __enter__(self) -> list[Loaded]:
        loaded: list[Loaded] = []
        try:
            for session_id in self.ids:
                ref = SessionRef(self.key, session_id, "fractal")
                self.stack.enter_context(self.store.lock(ref))
                try:
                    loaded.append(self.store.load(ref))
                except ProblemFileError:
                    continue
        except BaseException:
            self.stack.close()
            raise
        return loaded

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> bool | None:
        return self.stack.__exit__(exc_type, exc, traceback)


def _valid_id(name: str) -> bool:
    try:
        validate_session_id(name)
    except RepriseError:
        return False
    return True
