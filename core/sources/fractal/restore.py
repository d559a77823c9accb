"""Putting back what a trim took: from the archive's verified entries, exactly when the
session is still what the trim wrote, by re-inserting the archived records at their anchors
when turns were added since, and never when the records are already back.

A restore archives the bytes it replaces first (entry `restore`), so it can itself be undone,
and it never deletes an archive entry.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from ...archive import Archive, ArchiveEntry, find_entry
from ...audit import AuditLog
from ...errors import (
    ArchiveError,
    ChangedOnDiskError,
    ConflictError,
    NotFoundError,
    ProblemFileError,
    RepriseError,
)
from ...paths import SessionRef
from ...trimming import HistoryBeyondFractal, RestoreResult, RestoreStep
from .codec import decode, encode_data
from .liveness import check_not_running
from .models import FRACTAL_MAX_HISTORY
from .store import Store, digest
from .trim import RECORDS_FORMAT

WHOLE_FILE_OPS = ("trim-original", "snapshot", "restore")


def unrestored_trims(entries: list[ArchiveEntry], current_sha256: str | None = None) -> list[ArchiveEntry]:
    """The trim entries that were written and that no later written restore undid, oldest first.

    A process killed between its archive write and its file write leaves an index entry for a
    change that never happened. Each trim and restore entry names the file it read and the one
    it wrote (`result_sha256`); the file the next entry read (or, for the newest, the current
    file) tells whether it was written: still the file it read, and not its result, means not.
    Identical entries (the same trim made again after a restore) are told apart by position."""
    pending: list[ArchiveEntry] = []
    for index, entry in enumerate(entries):
        if entry.op not in ("trim", "restore") or not _written(entries, index, current_sha256):
            continue
        if entry.op == "trim":
            pending.append(entry)
        else:
            restored = set(entry.info.get("restores") or [])
            pending = [trim for trim in pending if trim.digest not in restored]
    return pending


def fork_undone(entries: list[ArchiveEntry], current_sha256: str, *, all_trims: bool) -> ArchiveEntry | None:
    """The trim that wrote this session as a fork, when undoing (the newest trim not yet restored,
    or every one with `all_trims`) reaches it. Undoing that trim moves the fork to the trash, as
    for a Claude Code fork, instead of filling the fork back with the turns trimmed from it: the
    session it was trimmed from still has them."""
    reached = unrestored_trims(entries, current_sha256)
    if not all_trims:
        reached = reached[-1:]
    return next((entry for entry in reached if entry.info.get("forked_from")), None)


def _file_read(entry: ArchiveEntry) -> str | None:
    """The SHA-256 of the session file as the operation that wrote this entry read it."""
    if entry.op == "trim":
        return entry.info.get("original_sha256")
    return entry.digest if entry.op in ("trim-original", "restore") else None


def _written(entries: list[ArchiveEntry], index: int, current_sha256: str | None) -> bool:
    entry = entries[index]
    seen = next((sha for later in entries[index + 1:] if (sha := _file_read(later)) is not None), current_sha256)
    return seen is None or seen != _file_read(entry) or seen == entry.info.get("result_sha256")


# --- the pure part ------------------------------------------------------------------------------------

def reinsert(current: dict[str, Any], records: dict[str, Any],
             records_digest: str) -> tuple[dict[str, Any], RestoreStep]:
    """`current` (a session's JSON data) with a trim's records put back at their anchors.

    Removes the digest turn the trim added, replaces capped turns by their originals and inserts
    removed turns after the nearest turn that preceded them originally (at the start when none
    is present). Turns added since the trim stay where they are. Raises ConflictError, changing
    nothing, when a record is already back.
    """
    summary = list(current["summary"]["turns"])
    history = list(current["history"])
    positions = {turn["turn_id"]: index for index, turn in enumerate(summary)}
    history_ids = {entry["turn_id"] for entry in history}
    present = []
    for record in records["summary"]:
        turn = record["turn"]
        at = positions.get(turn["turn_id"])
        if at is not None and (record["change"] == "removed" or summary[at] == turn):
            present.append(turn["turn_id"])
    present += [record["turn"]["turn_id"] for record in records["history"]
                if record["turn"]["turn_id"] in history_ids]
    if present:
        shown = ", ".join(sorted(set(present))[:5])
        raise ConflictError(
            f"{len(set(present))} archived turn(s) are already in the session ({shown}); "
            "the trim seems to have been undone already, so nothing was restored.")
    removed_digest = False
    if records.get("digest_turn"):
        digest_id = f"turn-{records_digest[:32]}"
        kept = [turn for turn in summary if turn["turn_id"] != digest_id]
        removed_digest = len(kept) != len(summary)
        summary = kept
    replaced = inserted = 0
    for record in records["summary"]:
        turn = record["turn"]
        at = next((i for i, t in enumerate(summary) if t["turn_id"] == turn["turn_id"]), None)
        if at is not None:
            summary[at] = turn
            replaced += 1
        else:
            summary.insert(_position(summary, records["summary_order"], record["index"]), turn)
            inserted += 1
    for record in records["history"]:
        history.insert(_position(history, records["history_order"], record["index"]), record["turn"])
    data = dict(current)
    data["summary"] = {**current["summary"], "turns": summary}
    data["history"] = history
    step = RestoreStep(records_digest, "trim", "reinserted", inserted, replaced, len(records["history"]),
                       removed_digest)
    return data, step


def _position(items: list[dict[str, Any]], order: list[str], index: int) -> int:   # Any: turns as JSON
    """Where the record originally at `order[index]` goes: after the nearest present predecessor."""
    where = {item["turn_id"]: position for position, item in enumerate(items)}
    for predecessor in reversed(order[:index]):
        if predecessor in where:
            return where[predecessor] + 1
    return 0


def restored_bytes(current: bytes, entries: list[ArchiveEntry],
                   read: Callable[[str], bytes]) -> tuple[bytes, list[RestoreStep]]:
    """Apply `entries` newest first to `current`; `read(digest)` gives verified archive bytes."""
    steps: list[RestoreStep] = []
    for entry in reversed(entries):
        if entry.op == "trim":
            current, step = _undo_trim(current, entry, read)
        elif entry.op in WHOLE_FILE_OPS:
            current, step = _whole_file(current, entry, read)
        else:
            raise ArchiveError(f"Archive entry {entry.digest[:12]} ({entry.op}) cannot be restored.")
        steps.append(step)
    return current, steps


def _undo_trim(current: bytes, entry: ArchiveEntry, read: Callable[[str], bytes]) -> tuple[bytes, RestoreStep]:
    records_bytes = read(entry.digest)
    original_digest = entry.info.get("original_sha256")
    try:
        records = json.loads(records_bytes)
    except ValueError:
        raise ArchiveError(f"Archive entry {entry.digest[:12]} is not a trim record.") from None
    if not isinstance(records, dict) or records.get("format") != RECORDS_FORMAT \
            or not isinstance(original_digest, str) or records.get("original_sha256") != original_digest:
        raise ArchiveError(f"Archive entry {entry.digest[:12]} does not match its index line.")
    original = read(original_digest)
    forked = bool(entry.info.get("forked_from"))
    if not forked and digest(current) == entry.info.get("result_sha256"):
        return original, RestoreStep(entry.digest, entry.op, "exact")
    data, step = reinsert(json.loads(current), records, entry.digest)
    return encode_data(data), step


def _whole_file(current: bytes, entry: ArchiveEntry, read: Callable[[str], bytes]) -> tuple[bytes, RestoreStep]:
    """A whole-file entry goes back exactly, but only if no turn of the current file would be lost."""
    snapshot = read(entry.digest)
    now, then = json.loads(current), json.loads(snapshot)
    if now.get("session_id") != then.get("session_id"):
        raise ConflictError(f"Archive entry {entry.digest[:12]} is a file of another session "
                            f"({str(then.get('session_id'))[:40]}).", hint="restore the trim entry instead")
    added = _turn_ids(now) - _turn_ids(then)
    if added:
        raise ConflictError(
            f"{len(added)} turn(s) were added after archive entry {entry.digest[:12]}; putting the whole "
            "file back would lose them, so nothing was restored.", hint="restore the trim (its records) instead")
    return snapshot, RestoreStep(entry.digest, entry.op, "exact")


def _turn_ids(data: dict[str, Any]) -> set[str]:
    return {turn["turn_id"] for turn in data["summary"]["turns"]} | {entry["turn_id"] for entry in data["history"]}


def _keep_restored_copy(archive: Archive, ref: SessionRef, entries: list[ArchiveEntry], after: bytes,
                        beyond: HistoryBeyondFractal) -> None:
    """Make sure the archive holds the restored file, whose oldest history Fractal's next save drops:
    an exact restore's bytes are already there (the trim's original); others are archived now."""
    name = digest(after)
    if not any(entry.digest == name and entry.op in WHOLE_FILE_OPS for entry in entries):
        name = archive.put(ref, after, op="snapshot", reason=f"a restore left history beyond Fractal's "
                           f"{FRACTAL_MAX_HISTORY}", drops=[f"{len(beyond.dropped)} history turns"]).digest
    archive.read(ref, name)  # verified
    beyond.kept_in, beyond.archive_digest = archive.directory(ref) / f"{name}.json", name


# --- applying ------------------------------------------------------------------------------------------

def restore_session(store: Store, archive: Archive, ref: SessionRef, *, digest_text: str | None = None,
                    all_trims: bool = False, dry_run: bool = False, force: bool = False,
                    audit: AuditLog | None = None, now: float | None = None) -> RestoreResult:
    """Undo the newest trim not yet restored (or the entry `digest_text`, or every trim with
    `all_trims`), after verifying every archive entry it needs; archive first, then write."""
    if digest_text is not None and all_trims:
        raise RepriseError("Give --archive DIGEST or --all, not both.")
    now = time.time() if now is None else now
    loaded = store.load(ref)
    assert loaded.data is not None   # `load` keeps the file's bytes unless told not to
    entries = archive.checked_entries(ref)
    if digest_text is not None:
        chosen = [find_entry(entries, digest_text)]
    else:
        chosen = unrestored_trims(entries, digest(loaded.data))
        if not chosen:
            raise NotFoundError(f"Session {ref.session_id} has no trim left to restore.",
                                hint="reprise restore ID --archive DIGEST puts back a specific entry")
        if not all_trims:
            chosen = chosen[-1:]
    cache: dict[str, bytes] = {}

    def read(name: str) -> bytes:
        if name not in cache:
            cache[name] = archive.read(ref, name)
        return cache[name]

    for entry in chosen:  # verify every digest before anything changes
        read(entry.digest)
        if entry.op == "trim":
            read(entry.info.get("original_sha256") or "")
    after, steps = restored_bytes(loaded.data, chosen, read)
    decoded = decode(after, path=str(loaded.path), expected_id=ref.session_id)
    if decoded.state is None:
        raise ProblemFileError(decoded.failure(), hint="the restored file would not load; nothing was written")
    result = RestoreResult(ref, loaded.data, after, steps, False, dry_run)
    if after == loaded.data:
        result.notes.append("the session already holds these bytes; nothing to write")
        return result
    history = decoded.state.history
    if len(history) > FRACTAL_MAX_HISTORY:
        result.beyond_fractal = HistoryBeyondFractal(len(history),
                                                     [entry.turn_id for entry in history[:-FRACTAL_MAX_HISTORY]],
                                                     FRACTAL_MAX_HISTORY)
    if dry_run:
        if result.beyond_fractal:
            result.notes.append(result.beyond_fractal.note())
        return result
    check_not_running(store, loaded, now=now, force=force, action="restored")
    audit = audit or AuditLog(store.paths)
    restores = [entry.digest for entry in chosen]
    options = {"archive": digest_text, "all": all_trims, "force": force}
    try:
        with store.lock(ref):
            if store.current_version(loaded.path) != loaded.version:
                raise ChangedOnDiskError(f"Session {ref.session_id} changed on disk since Reprise read it; "
                                         "nothing was restored.", hint="try again", path=loaded.path)
            saved = archive.put(ref, loaded.data, op="restore", restores=restores, result_sha256=digest(after))
            if result.beyond_fractal is not None:
                _keep_restored_copy(archive, ref, entries, after, result.beyond_fractal)
            store.save_bytes(ref, after, expected=loaded.version, locked=True)
    except RepriseError as exc:
        audit.append(ref.workspace_key, "restore", session_id=ref.session_id, options=options, digests=restores,
                     counts=result.counts(), result=f"failed: {exc.code}", now=now)
        raise
    result.applied, result.archived = True, saved.digest
    if result.beyond_fractal:
        result.notes.append(result.beyond_fractal.note())
    audit.append(ref.workspace_key, "restore", session_id=ref.session_id, options=options,
                 digests=[*restores, saved.digest], counts=result.counts(), now=now)
    return result
