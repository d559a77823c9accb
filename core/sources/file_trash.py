"""Reprise's trash for the session files of an agent that writes its own store (Claude Code,
Codex): `rm` moves a session file (and its sidecar folder, when the agent keeps one) out of the
agent's root into the workspace's trash in Reprise's data folder (`workspaces/<key>/reprise/trash/<source>/`),
`trash restore` puts them back where they were, and `purge` (the one hard delete, confirmed)
deletes trashed ones for good. Each agent subclasses `AgentFileTrash` with its names and what its
session files are called and where they may be.

The agent's root and the data folder are two roots, often on two filesystems, so every move is a
copy: to a temp name, fsynced, checked to read back with the original's digest, renamed, and
only then is the original removed (never before). The agent may append at any moment, so the
original is first taken off its path (renamed within its folder to a hidden name, `.<name>.reprise-rm`),
that file is compared with the copy, and only then unlinked: an append that landed before the
rename is in the file compared, one after it makes a new file at the path. On a mismatch the
original is put back without replacing anything (a new file the agent made at the path meanwhile
is kept too, and both are named), the copy is dropped, and nothing is audited. A crash in between
leaves both the original and the copy, nothing is lost: with the original still at its path, restore
refuses and the next rm finishes; with it at its hidden name, restore renames it back (the very
bytes) and a later rm refuses while it lies there. (The fault points keep their first names,
`claude_trash_*`: `core/faults.py`.)

A session an agent keeps in several files beside each other (`file_is_session` False: a stub a
resume left) moves with all of them: the other files (`companions`) go and come back with the
session file, each verified the same way.

In the trash, beside `<id>.jsonl` and `<id>/`: `<id>.companions/` (the session's other files),
`records/<id>.json` (when, from where, the digests) and `meta/<id>.json` (Reprise's title and pins
of the session). Restore refuses while
anything is at the recorded place, and only writes under an agent root Reprise reads.
"""

from __future__ import annotations

import json
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from .. import faults
from ..archive import Archive
from ..audit import AuditLog, iso_time
from ..errors import ConflictError, NotFoundError, RepriseError, UsageError
from ..paths import OwnPaths, SessionRef
from ..rooted import Root
from ..trash_results import PurgeResult, TrashEntry, purge_entries
from ..trash_results import reason as _reason

TOMBSTONE_PREFIX = ".purge-"
ASIDE_SUFFIX = ".reprise-rm"   # `.<name>.reprise-rm`: where rm holds an original while it compares it
MAX_RECORD_BYTES = 64 * 1024
Locker = Callable[[SessionRef], AbstractContextManager[object]]


def aside(path: Path) -> Path:
    """The hidden name beside `path` that rm gives an original while it compares it with the copy."""
    return path.parent / f".{path.name}{ASIDE_SUFFIX}"


class _Changed(ConflictError):
    """The original taken off its path no longer has the bytes copied to the trash."""


class _BothKept(ConflictError):
    """An original could not go back to its path (the agent made a new file there): both were kept."""


@dataclass(frozen=True, slots=True)
class TrashedFiles:
    """Where one trashed session lies in the trash."""

    session: Path   # <trash>/<id>.jsonl
    sidecars: Path  # <trash>/<id>/
    record: Path    # <trash>/records/<id>.json
    meta: Path      # <trash>/meta/<id>.json
    companions: Path   # <trash>/<id>.companions/: the session's other files, by name


class AgentFileTrash(ABC):
    """The trash of one agent's sessions in Reprise's data folder (`paths`: OwnPaths of its source).
    A subclass names the agent (`agent`, for people; `source`), tells its session ids
    (`is_session_id`), what a session file of it is called and where it may be (`is_session_file`,
    `is_place`), the sidecar folder that goes with a session file, if any (`sidecar_folder`), and the
    session's other files beside it, if any (`companions`)."""

    agent: ClassVar[str]
    source: ClassVar[str]
    suffix: ClassVar[str] = ".jsonl"   # a trashed session file is `<id><suffix>`

    def __init__(self, paths: OwnPaths, audit: AuditLog, lock: Locker):
        self.paths = paths
        self.data = Root(paths.root, "Reprise data folder")
        self.audit = audit
        self.lock = lock

    def files(self, ref: SessionRef) -> TrashedFiles:
        trash = self.paths.trash_dir(ref.workspace_key)
        return TrashedFiles(trash / f"{ref.session_id}{self.suffix}", trash / ref.session_id,
                            trash / "records" / f"{ref.session_id}.json", trash / "meta" / f"{ref.session_id}.json",
                            trash / f"{ref.session_id}.companions")

    @abstractmethod
    def is_session_id(self, text: str) -> bool:
        """Whether `text` is a session id of the agent (a trashed file's name without its suffix)."""

    @abstractmethod
    def is_session_file(self, path: Path, session_id: str) -> bool:
        """Whether `path` is named as the file of session `session_id`."""

    @abstractmethod
    def is_place(self, target: Path, root: Path, session_id: str) -> bool:
        """Whether `target` is where a session file of `session_id` lies under the agent's root `root`."""

    def sidecar_folder(self, session_file: Path, session_id: str) -> Path | None:
        """The folder of files that goes with a session file wherever it goes; None: the agent keeps none."""
        return None

    def companions(self, session_file: Path, session_id: str) -> list[Path]:
        """The session's other files in the session file's folder (an agent that keeps one session in
        several files: `file_is_session` False), each a place `is_place` accepts; they go to the trash
        and come back with it. None by default."""
        return []

    # --- rm ----------------------------------------------------------------------------------------

    def remove(self, ref: SessionRef, session_file: Path, store_root: Path, *, now: float | None = None,
               force: bool = False) -> TrashEntry:
        """Move the session file `session_file` (under the agent's root `store_root`) and its sidecar
        folder, if any, into the trash, with Reprise's metadata of it, then audit. The caller holds the lock
        and has checked that no one is writing the session.

        The verified copies are recorded first; then the originals are taken off their paths and
        compared with them (`_take_off`), and only a match is audited and unlinked. Any failure
        (a change, a store Reprise cannot write) puts everything back and audits nothing."""
        now = time.time() if now is None else now
        session_file = Path(session_file)
        if not self.is_session_file(session_file, ref.session_id):
            raise UsageError(f"{session_file} is not the file of {self.agent} session {ref.session_id}.")
        store = Root(store_root, f"{self.agent} root")
        sidecars = self.sidecar_folder(session_file, ref.session_id)
        info = store.lstat(session_file)
        if not _is_regular(info.st_mode):
            raise ConflictError(f"{session_file} is not a regular file; it was left as it is.", path=session_file)
        has_sidecars = sidecars is not None and store.is_dir(sidecars)
        others = self._companions_there(store, Path(store_root), session_file, ref.session_id)
        self._check_aside(store, session_file, sidecars, others)
        there = self.files(ref)
        if self._interrupted(ref, store, session_file, sidecars, has_sidecars, others):
            return self._finish(ref, store, session_file, sidecars, has_sidecars, force=force, now=now)
        for place in (there.session, there.sidecars, there.record, there.companions):
            if self.data.exists(place):
                raise ConflictError(f"A {self.agent} session {ref.session_id} is already in the trash.",
                                    hint="restore or purge that one first", path=place)
        title = _title(self.data, self.paths.meta_file(ref))
        made: list[Path] = []
        meta_moved = False
        try:
            digest = self.data.copy_in(store, session_file, there.session)
            made.append(there.session)
            sidecar_digest = None
            if has_sidecars and sidecars is not None:
                sidecar_digest = self.data.copy_in(store, sidecars, there.sidecars)
                made.append(there.sidecars)
            companions: dict[str, str] = {}
            for other in others:
                companions[other.name] = self.data.copy_in(store, other, there.companions / other.name)
                if there.companions not in made:
                    made.append(there.companions)
            record = {"session_id": ref.session_id, "workspace_key": ref.workspace_key,
                      "trashed_at": iso_time(now), "trashed_ts": now, "from": str(session_file),
                      "root": str(Path(store_root)), "size": info.st_size, "mtime_ns": info.st_mtime_ns,
                      "sha256": digest, "sidecars": sidecar_digest, "companions": companions, "title": title,
                      "force": force}
            self.data.write_atomic(there.record, (json.dumps(record, indent=2, ensure_ascii=False) + "\n").encode())
            made.append(there.record)
            if self.data.exists(self.paths.meta_file(ref)):
                self.data.move(self.paths.meta_file(ref), there.meta, replace=True)
                meta_moved = True
            # Verified copies are in the trash and recorded: a crash from here leaves both (the next rm finishes).
            faults.point("claude_trash_before_unlink")
            moved = self._take_off(ref, store, session_file, digest, sidecars if has_sidecars else None,
                                   sidecar_digest,
                                   lambda: self.audit.append(ref.workspace_key, "rm", session_id=ref.session_id,
                                                             options={"force": force}, digests=[digest],
                                                             counts={"bytes": info.st_size}, now=now),
                                   [(other, companions[other.name]) for other in others])
        except (OSError, RepriseError) as exc:
            stuck = self._undo(made, there.meta if meta_moved else None, self.paths.meta_file(ref))
            where = "" if isinstance(exc, _BothKept) else "; the session was left where it is"
            where += f"; could not take back {stuck}" if stuck else ""
            error = ConflictError if isinstance(exc, ConflictError) else RepriseError
            raise error(f"Session {ref.session_id} was not moved to the trash: {_reason(exc)}{where}.",
                        hint=exc.hint if isinstance(exc, RepriseError) else None, path=str(session_file)) from None
        self._drop_aside(ref, store, moved)   # moved, checked and audited: only now do the originals go
        return TrashEntry(ref, iso_time(now), now, info.st_size, title, str(session_file))

    def _companions_there(self, store: Root, store_root: Path, session_file: Path, session_id: str) -> list[Path]:
        """The session's other files (`companions`) that are there: each in the session file's folder, at
        a place the agent's rule accepts, and a regular file (else a ConflictError naming it)."""
        found = []
        for other in self.companions(session_file, session_id):
            if other == session_file or other.parent != session_file.parent \
                    or not self.is_place(other, store_root, session_id):
                raise UsageError(f"{other} is not a file of {self.agent} session {session_id} beside {session_file}.")
            try:
                info = store.lstat(other)
            except FileNotFoundError:
                continue   # gone meanwhile: nothing of it to move
            if not _is_regular(info.st_mode):
                raise ConflictError(f"{other} is not a regular file; the session was left as it is.", path=other)
            found.append(other)
        return found

    def _check_aside(self, store: Root, session_file: Path, sidecars: Path | None, others: Sequence[Path] = ()
                     ) -> None:
        """Refuse while a hidden original of an rm cut short (a crash) lies beside the session."""
        for place in (aside(session_file), aside(sidecars) if sidecars is not None else None,
                      *(aside(other) for other in others)):
            if place is not None and store.exists(place):
                raise ConflictError(f"{place} was left by an rm cut short; nothing was moved.",
                                    hint=f"compare it with {place.parent / place.name[1:-len(ASIDE_SUFFIX)]} and "
                                         "remove the one not needed", path=place)

    def _take_off(self, ref: SessionRef, store: Root, session_file: Path, digest: str, sidecars: Path | None,
                  sidecar_digest: str | None, audited: Callable[[], object],
                  others: Sequence[tuple[Path, str]] = ()) -> list[tuple[Path, Path]]:
        """Take the original (and its sidecar folder, and the session's other files `others`, each with
        the digest of its copy) off its path, check it still has the digest of the copy in the trash
        and audit with `audited()`; returns (path, hidden name) of each, for `_drop_aside` to unlink.
        On a mismatch or a failure,
        put it back without replacing anything and raise: `_Changed` when it changed, a
        ConflictError naming both files when the agent made a new one at the path meanwhile."""
        moved: list[tuple[Path, Path]] = []
        wanted: dict[Path | None, str | None] = {session_file: digest, sidecars: sidecar_digest, **dict(others)}
        try:
            for place in (session_file, sidecars, *(other for other, _ in others)):
                if place is not None:
                    store.move_noreplace(place, aside(place))
                    moved.append((place, aside(place)))
            faults.point("claude_trash_set_aside")
            # The last look: bytes the agent wrote before the rename are in the file compared; those
            # written after it are in a new file at the path, which this rm never touches.
            for place, hidden in moved:
                if store.digest(hidden) != wanted[place]:
                    raise _Changed(f"{place} changed while Reprise moved it to the trash",
                                   hint=f"try again once {self.agent} is done with it")
                if store.exists(place):   # the agent went on at the path: it is not done with the session
                    raise _Changed(f"{place} was written anew while Reprise moved it to the trash",
                                   hint=f"try again once {self.agent} is done with it")
            audited()
        except (OSError, RepriseError) as exc:
            self._put_back(store, moved, exc)
            raise
        return moved

    def _drop_aside(self, ref: SessionRef, store: Root, moved: list[tuple[Path, Path]]) -> None:
        """Unlink the originals `_take_off` compared and audited (their bytes are in the trash)."""
        for place, hidden in moved:
            try:
                store.rmtree(hidden) if store.is_dir(hidden) else store.unlink(hidden)
            except (OSError, RepriseError) as exc:
                raise RepriseError(f"Session {ref.session_id} was moved to the trash, but {hidden} (what was at "
                                   f"{place}) could not be removed: {_reason(exc)}.",
                                   hint="remove it by hand: the trash holds the same bytes", path=hidden) from None

    def _put_back(self, store: Root, moved: list[tuple[Path, Path]], cause: BaseException) -> None:
        """Rename each original taken off its path back, never over anything: raise a ConflictError
        naming both when something new is at the path (both are kept)."""
        both, stuck = [], []
        for place, hidden in reversed(moved):
            try:
                store.move_noreplace(hidden, place)
            except FileExistsError:
                both.append(f"{self.agent} made a new {place} meanwhile and it was kept; what was there is now "
                            f"{hidden}")
            except (OSError, RepriseError) as exc:
                stuck.append(f"{place} is still at {hidden} ({_reason(exc)})")
        if both or stuck:
            raise _BothKept(f"{_reason(cause)}; " + "; ".join(both + stuck),
                                hint="both files were kept: compare them and keep the one you need",
                                path=moved[0][0])

    def _interrupted(self, ref: SessionRef, store: Root, session_file: Path, sidecars: Path | None,
                     has_sidecars: bool, others: Sequence[Path] = ()) -> bool:
        """Whether an `rm` stopped (a crash) after its verified copies were recorded in the trash but
        before the original went: the trash holds these very bytes, from this very place (the
        session's other files too)."""
        there = self.files(ref)
        record = self.record(ref)
        if not self.data.exists(there.session) or record.get("from") != str(session_file):
            return False
        try:
            if self.data.digest(there.session) != record.get("sha256") or store.digest(session_file) != \
                    record.get("sha256"):
                return False
            if has_sidecars != self.data.is_dir(there.sidecars):
                return False
            recorded = _companions(record)
            if sorted(recorded) != sorted(other.name for other in others) or not all(
                    store.digest(other) == recorded[other.name] == self.data.digest(there.companions / other.name)
                    for other in others):
                return False
            if not has_sidecars or sidecars is None:
                return True
            return store.digest(sidecars) == record.get("sidecars") == self.data.digest(there.sidecars)
        except (OSError, RepriseError):
            return False

    def _finish(self, ref: SessionRef, store: Root, session_file: Path, sidecars: Path | None, has_sidecars: bool, *,
                force: bool, now: float) -> TrashEntry:
        entry = self._entry(ref)
        record = self.record(ref)
        moved = self._take_off(ref, store, session_file, str(record.get("sha256")),
                               sidecars if has_sidecars else None, _text(record.get("sidecars")),
                               lambda: self.audit.append(ref.workspace_key, "rm", session_id=ref.session_id,
                                                         options={"force": force, "finished": True},
                                                         counts={"bytes": entry.size}, now=now),
                               [(session_file.parent / name, wanted) for name, wanted in _companions(record).items()])
        self._drop_aside(ref, store, moved)
        return entry

    def _undo(self, made: list[Path], meta_now: Path | None, meta_home: Path) -> str:
        stuck = []
        for path in reversed(made):
            try:
                if self.data.is_dir(path):
                    self.data.rmtree(path)
                else:
                    self.data.unlink(path)
            except (OSError, RepriseError) as exc:
                stuck.append(f"{path} ({_reason(exc)})")
        if meta_now is not None:
            try:
                self.data.move(meta_now, meta_home)
            except (OSError, RepriseError) as exc:
                stuck.append(f"{meta_now} ({_reason(exc)})")
        return "; ".join(stuck)

    # --- listing -----------------------------------------------------------------------------------

    def contains(self, ref: SessionRef) -> bool:
        return self.data.exists(self.files(ref).session)

    def entries(self, keys: Iterable[str]) -> list[TrashEntry]:
        """The trashed sessions of these workspaces, newest first."""
        found = []
        for key in keys:
            try:
                names = self.data.names(self.paths.trash_dir(key))
            except (OSError, RepriseError):
                continue
            for name, is_dir in names:
                session_id = name[:-len(self.suffix)]
                if is_dir or not name.endswith(self.suffix) or not self.is_session_id(session_id):
                    continue
                try:
                    found.append(self._entry(SessionRef(key, session_id, self.source)))
                except (OSError, RepriseError):
                    continue   # restored or purged meanwhile
        found.sort(key=lambda entry: entry.trashed_ts, reverse=True)
        return found

    def record(self, ref: SessionRef) -> dict[str, Any]:
        try:
            loaded = json.loads(self.data.read(self.files(ref).record, MAX_RECORD_BYTES))
        except (OSError, ValueError, RepriseError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def _entry(self, ref: SessionRef) -> TrashEntry:
        info = self.data.lstat(self.files(ref).session)
        record = self.record(ref)
        stamp = record.get("trashed_ts")
        trashed_ts = float(stamp) if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) \
            and abs(stamp) < 1e12 else info.st_ctime
        title = _title(self.data, self.files(ref).meta) or _text(record.get("title"))
        return TrashEntry(ref, _text(record.get("trashed_at")), trashed_ts, info.st_size, title,
                          _text(record.get("from")))

    # --- trash restore -----------------------------------------------------------------------------

    def restore(self, ref: SessionRef, roots: Sequence[Path], *, now: float | None = None) -> TrashEntry:
        """Put a trashed session's file and sidecar folder back where they were, byte for byte, with
        its metadata; refused while anything is there, or when that place is not in one of the agent's
        roots `roots`. The trash copies go only once the restored files are verified and audited."""
        now = time.time() if now is None else now
        there = self.files(ref)
        if not self.data.exists(there.session):
            raise NotFoundError(f"{self.agent} session {ref.session_id} is not in Reprise's trash.",
                                hint="reprise trash list --all")
        record = self.record(ref)
        origin, root = _text(record.get("from")), _text(record.get("root"))
        if origin is None or root is None:
            raise RepriseError(f"The trash record of {ref.session_id} ({there.record}) does not say where it was; "
                               "it was left in the trash.", hint=f"copy {there.session} back by hand")
        target, store_root = Path(origin), Path(root)
        if store_root not in [Path(r) for r in roots] or not self.is_place(target, store_root, ref.session_id):
            raise ConflictError(f"{target} is not a session file of a {self.agent} root Reprise reads "
                                f"({', '.join(str(r) for r in roots) or 'none'}); it was left in the trash.",
                                path=str(target))
        store = Root(store_root, f"{self.agent} root")
        sidecars = self.sidecar_folder(target, ref.session_id)
        others = _companions(record)
        for name in others:
            if Path(name).name != name or name in (".", "..") or name == target.name \
                    or not self.is_place(target.parent / name, store_root, ref.session_id):
                raise ConflictError(f"The trash record of {ref.session_id} ({there.record}) names {name!r} as a file "
                                    f"of the session, which is not one of a {self.agent} root Reprise reads; it was "
                                    "left in the trash.", path=str(there.record))
        for place in (target, sidecars, *(target.parent / name for name in others)):
            if place is not None and store.exists(place):
                raise ConflictError(f"{place} exists again; the trashed session was left in the trash.",
                                    hint="move that one away first", path=str(place))
        entry = self._entry(ref)
        if sidecars is not None and not self.data.is_dir(there.sidecars):
            sidecars = None   # none were trashed with it
        made: list[Path] = []
        back: list[Path] = []
        try:
            if self._back_from_aside(store, target, record.get("sha256")):
                back.append(target)
                digest = str(record.get("sha256"))
            else:
                digest = store.copy_in(self.data, there.session, target)
                made.append(target)
            if record.get("sha256") not in (None, digest):
                raise ConflictError(f"{there.session} no longer has the bytes that were trashed.")
            if sidecars is not None and self._back_from_aside(store, sidecars, record.get("sidecars")):
                back.append(sidecars)
            elif sidecars is not None:
                folder_digest = store.copy_in(self.data, there.sidecars, sidecars)
                made.append(sidecars)
                if record.get("sidecars") not in (None, folder_digest):
                    raise ConflictError(f"{there.sidecars} no longer has the files that were trashed.")
            for name, wanted in others.items():
                place = target.parent / name
                if self._back_from_aside(store, place, wanted):
                    back.append(place)
                    continue
                copied = store.copy_in(self.data, there.companions / name, place)
                made.append(place)
                if copied != wanted:
                    raise ConflictError(f"{there.companions / name} no longer has the bytes that were trashed.")
            self.audit.append(ref.workspace_key, "trash-restore", session_id=ref.session_id, digests=[digest],
                              counts={"bytes": entry.size}, now=now)
        except (OSError, RepriseError) as exc:
            stuck = []
            for path in reversed(made):
                try:
                    store.rmtree(path) if store.is_dir(path) else store.unlink(path)
                except (OSError, RepriseError) as undo:
                    stuck.append(f"{path} ({_reason(undo)})")
            for path in reversed(back):
                try:
                    store.move_noreplace(path, aside(path))
                except (OSError, RepriseError) as undo:
                    stuck.append(f"{path} ({_reason(undo)})")
            where = f"; could not remove the partial copy {'; '.join(stuck)}" if stuck else ""
            raise RepriseError(f"Session {ref.session_id} was not restored from the trash: {_reason(exc)}{where}; "
                               "it is still in the trash.", path=str(target)) from None
        if self.data.exists(there.meta) and not self.data.exists(self.paths.meta_file(ref)):
            self.data.move(there.meta, self.paths.meta_file(ref))
        for path in (there.sidecars, there.companions, there.session, there.meta, there.record):
            try:
                self.data.rmtree(path) if self.data.is_dir(path) else self.data.unlink(path)
            except (OSError, RepriseError):
                pass   # a leftover copy of a restored session: the next purge or rm names it
        return entry

    @staticmethod
    def _back_from_aside(store: Root, place: Path, wanted: object) -> bool:
        """Rename back to `place` the original an rm cut short (a crash) left beside it, when it has
        the digest the trash recorded: the very bytes, not a copy of them. False when there is none."""
        hidden = aside(place)
        try:
            if not (isinstance(wanted, str) and store.exists(hidden) and store.digest(hidden) == wanted):
                return False
        except (OSError, RepriseError):
            return False
        store.move_noreplace(hidden, place)
        return True

    # --- purge -------------------------------------------------------------------------------------

    def purge(self, keys: Iterable[str], *, confirmed: bool, older_than: float | None = None,
              now: float | None = None) -> PurgeResult:
        """Delete trashed sessions for good (only those trashed more than `older_than` seconds ago
        when given), with their metadata and, unless the session is back in the agent's store,
        Reprise's archive of it. Raises unless `confirmed`. Each is first renamed
        into a tombstone, so it is either still restorable or wholly gone."""
        return purge_entries(self.audit, list(keys), self.entries, self._finish_tombstones, self._purge_locked,
                             confirmed=confirmed, older_than=older_than, now=now)

    def _purge_locked(self, entry: TrashEntry, result: PurgeResult) -> None:
        with self.lock(entry.ref):
            self._purge_one(entry, result)

    def _tombstone(self, ref: SessionRef) -> Path:
        return self.paths.trash_dir(ref.workspace_key) / f"{TOMBSTONE_PREFIX}{ref.session_id}"

    def _purge_one(self, entry: TrashEntry, result: PurgeResult) -> None:
        ref, there = entry.ref, self.files(entry.ref)
        self._share_with_forks(ref, result)
        tomb = self._tombstone(ref)
        if self.data.exists(tomb):
            self.data.rmtree(tomb)
        self.data.mkdir(tomb)
        try:
            self.data.move(there.session, tomb / "session.jsonl")
        except BaseException:
            self.data.rmtree(tomb)
            raise
        result.purged.append(entry)   # no longer restorable: the rest joins it in the tombstone
        if self._gather(ref, tomb):
            result.archives_deleted.append(ref.session_id)
        try:
            self.data.rmtree(tomb)
        except (OSError, RepriseError) as exc:
            result.leftovers.append(f"{tomb}: {_reason(exc)}; the next purge deletes it")

    def _gather(self, ref: SessionRef, tomb: Path) -> bool:
        there = self.files(ref)
        record = self.record(ref)
        for place, name in ((there.sidecars, "sidecars"), (there.companions, "companions"), (there.meta, "meta.json"),
                            (there.record, "record.json")):
            if self.data.exists(place):
                self.data.move(place, tomb / name, replace=True)
        archive = self.paths.archive_dir(ref)
        if self._archive_goes(ref, record):
            self.data.move(archive, tomb / "archive", replace=True)
            return True
        return False

    def _archive_goes(self, ref: SessionRef, record: dict[str, Any]) -> bool:
        """Whether a purge deletes the session's archive: it has one, and the session is not back."""
        origin = _text(record.get("from"))
        return self.data.is_dir(self.paths.archive_dir(ref)) and not (origin is not None and Path(origin).exists())

    def _share_with_forks(self, ref: SessionRef, result: PurgeResult) -> None:
        """Before a purge deletes a session's archive: every original a fork of it still names in its
        markers (`fork-original`) is shared into that fork's archive, where `archive show FORK` finds
        it, and the purge says so. A fork Reprise wrote since issue 24 holds it already."""
        if not self._archive_goes(ref, self.record(ref)):
            return
        archive = Archive(self.paths)
        for entry in archive.entries(ref):
            fork_id = entry.info.get("fork_session_id")
            if entry.op != "fork-original" or not isinstance(fork_id, str) or not self.is_session_id(fork_id):
                continue
            fork = SessionRef(ref.workspace_key, fork_id, self.source)
            if not (self.data.exists(self.paths.meta_file(fork)) or self.data.exists(self.files(fork).session)):
                continue   # no fork of that id left: nothing names these bytes
            if not archive.holds(fork, entry.digest):
                with self.lock(fork):
                    archive.share(ref, fork, entry.digest, op="fork-original", source_session_id=ref.session_id)
            result.notes.append(f"the text {ref.session_id}'s fork {fork_id} names ({entry.digest[:12]}) is kept in "
                                f"the fork's archive: reprise archive show {fork_id} {entry.digest[:12]}")

    def _finish_tombstones(self, key: str, result: PurgeResult) -> None:
        trash = self.paths.trash_dir(key)
        try:
            names = self.data.names(trash)
        except (OSError, RepriseError):
            return
        for name, is_dir in names:
            session_id = name[len(TOMBSTONE_PREFIX):]
            if not (is_dir and name.startswith(TOMBSTONE_PREFIX)) or not self.is_session_id(session_id):
                continue
            ref = SessionRef(key, session_id, self.source)
            try:
                with self.lock(ref):
                    if not self.data.exists(self.files(ref).session):
                        self._share_with_forks(ref, result)
                    if not self.data.exists(self.files(ref).session) and self._gather(ref, trash / name):
                        result.archives_deleted.append(ref.session_id)
                    self.data.rmtree(trash / name)
            except (OSError, RepriseError) as exc:
                result.leftovers.append(f"{trash / name}: {_reason(exc)}")
                continue
            result.finished.append(ref)


def _is_regular(mode: int) -> bool:
    return stat.S_ISREG(mode)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _companions(record: dict[str, Any]) -> dict[str, str]:
    """{name: digest} of the session's other files a trash record names (none in a record written before
    the trash moved them, or in one that says nothing readable of them)."""
    found = record.get("companions")
    if not isinstance(found, dict):
        return {}
    return {name: digest for name, digest in found.items() if isinstance(name, str) and isinstance(digest, str)}


def _title(root: Root, meta: Path) -> str | None:
    try:
        loaded = json.loads(root.read(meta, MAX_RECORD_BYTES))
    except (OSError, ValueError, RepriseError):
        return None
    return _text(loaded.get("title")) if isinstance(loaded, dict) else None
