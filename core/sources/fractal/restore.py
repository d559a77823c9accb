"""Putting back what a trim took: from the archive's verified entries, exactly when the
session is still what the trim wrote, by re-inserting the archived records at their anchors
when turns were added since, and never when the records are already back.

A restore archives the bytes it replaces first (entry `restore`), so it can itself be undone,
and it never deletes an archive entry.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...archive import Archive, ArchiveEntry
from ...audit import AuditLog
from ...errors import (
    ArchiveError,
    ChangedOnDiskError,
    ConflictError,
    NotFoundError,
    ProblemFileError,
    RepriseError,
)
from ...liveness import check_not_running
from ...paths import SessionRef
from .codec import decode, encode_data
from .models import FRACTAL_MAX_HISTORY
from .store import Store, digest
from .trim import RECORDS_FORMAT

WHOLE_FILE_OPS = ("trim-original", "snapshot", "restore")
MIN_DIGEST_PREFIX = 6


@dataclass(frozen=True, slots=True)
class RestoreStep:
    """One archive entry put back: `exact` (the original bytes) or `reinserted` (records at anchors)."""

    digest: str
    op: str
    mode: str
    summary_inserted: int = 0
    summary_replaced: int = 0
    history_inserted: int = 0
    digest_turn_removed: bool = False


@dataclass(slots=True)
class RestoreResult:
    ref: SessionRef
    before: bytes
    after: bytes
    steps: list[RestoreStep]
    applied: bool
    dry_run: bool
    archived: str | None = None
    notes: list[str] = field(default_factory=list)
    beyond_fractal: HistoryBeyondFractal | None = None

    @property
    def size_before(self) -> int:
        return len(self.before)

    @property
    def size_after(self) -> int:
        return len(self.after)

    def counts(self) -> dict[str, int]:
        return {"entries": len(self.steps),
                "summary_inserted": sum(step.summary_inserted for step in self.steps),
                "summary_replaced": sum(step.summary_replaced for step in self.steps),
                "history_inserted": sum(step.history_inserted for step in self.steps)}


@dataclass(slots=True)
class HistoryBeyondFractal:
    """A restored file with more history entries than Fractal keeps: its next save drops the oldest,
    which stay in the archive entry `kept_in` (a copy of the restored file, written before it)."""

    entries: int
    dropped: list[str]
    kept_in: Path | None = None
    archive_digest: str | None = None

    @property
    def fractal_keeps(self) -> int:
        return FRACTAL_MAX_HISTORY

    def note(self) -> str:
        span = self.dropped[0] if len(self.dropped) == 1 else f"{self.dropped[0]} to {self.dropped[-1]}"
        said = (f"the session now holds {self.entries} history entries; Fractal keeps the newest "
                f"{FRACTAL_MAX_HISTORY} on its next save and drops the {len(self.dropped)} oldest ({span})")
        if self.kept_in is None:
            return said.replace("now holds", "would hold") + "; applying copies the restored file to the archive first"
        return f"{said}; they are kept in the archive at {self.kept_in} (entry {(self.archive_digest or '')[:12]})"


# --- which entries ------------------------------------------------------------------------------------

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


def _file_read(entry: ArchiveEntry) -> str | None:
    """The SHA-256 of the session file as the operation that wrote this entry read it."""
    if entry.op == "trim":
        return entry.info.get("original_sha256")
    return entry.digest if entry.op in ("trim-original", "restore") else None


def _written(entries: list[ArchiveEntry], index: int, current_sha256: str | None) -> bool:
    entry = entries[index]
    seen = next((sha for later in entries[index + 1:] if (sha := _file_read(later)) is not None), current_sha256)
    return seen is None or seen != _file_read(entry) or seen == entry.info.get("result_sha256")


def find_entry(entries: list[ArchiveEntry], text: str) -> ArchiveEntry:
    """The newest entry whose digest starts with `text`; a trim's original resolves to the trim."""
    wanted = text.strip().lower()
    if len(wanted) < MIN_DIGEST_PREFIX or any(ch not in "0123456789abcdef" for ch in wanted):
        raise ArchiveError(f"{text[:70]!r} is not an archive digest.",
                           hint=f"at least {MIN_DIGEST_PREFIX} hex digits of a digest from `reprise archive`")
    matches = [entry for entry in entries if entry.digest.startswith(wanted)]
    if len({entry.digest for entry in matches}) > 1:
        raise ArchiveError(f"Archive digest {wanted} is ambiguous; give more digits.")
    if not matches:
        raise NotFoundError(f"No archive entry {wanted} for this session.")
    entry = matches[-1]
    if entry.op == "trim-original" and entry.info.get("records"):
        trims = [e for e in entries if e.op == "trim" and e.digest == entry.info["records"]]
        if trims:
            return trims[-1]
    return entry


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


def _position(items: list[dict], order: list[str], index: int) -> int:
    """Where the record originally at `order[index]` goes: after the nearest present predecessor."""
    where = {item["turn_id"]: position for position, item in enumerate(items)}
    for predecessor in reversed(order[:index]):
        if predecessor in where:
            return where[predecessor] + 1
    return 0


def restored_bytes(current: bytes, entries: list[ArchiveEntry], read) -> tuple[bytes, list[RestoreStep]]:
    """Apply `entries` newest first to `current`; `read(digest)` gives verified archive bytes."""
    steps = []
    for entry in reversed(entries):
        if entry.op == "trim":
            current, step = _undo_trim(current, entry, read)
        elif entry.op in WHOLE_FILE_OPS:
            current, step = _whole_file(current, entry, read)
        else:
            raise ArchiveError(f"Archive entry {entry.digest[:12]} ({entry.op}) cannot be restored.")
        steps.append(step)
    return current, steps


def _undo_trim(current: bytes, entry: ArchiveEntry, read) -> tuple[bytes, RestoreStep]:
    records_bytes = read(entry.digest)
    original_digest = entry.info.get("original_sha256")
    try:
        records = json.loads(records_bytes)
    except ValueError:
        raise ArchiveError(f"Archive entry {entry.digest[:12]} is not a trim record.") from None
    if not isinstance(records, dict) or records.get("format") != RECORDS_FORMAT \
            or records.get("original_sha256") != original_digest:
        raise ArchiveError(f"Archive entry {entry.digest[:12]} does not match its index line.")
    original = read(original_digest)
    forked = bool(entry.info.get("forked_from"))
    if not forked and digest(current) == entry.info.get("result_sha256"):
        return original, RestoreStep(entry.digest, entry.op, "exact")
    data, step = reinsert(json.loads(current), records, entry.digest)
    return encode_data(data), step


def _whole_file(current: bytes, entry: ArchiveEntry, read) -> tuple[bytes, RestoreStep]:
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
        raise ProblemFileError(decoded.problem, hint="the restored file would not load; nothing was written")
    result = RestoreResult(ref, loaded.data, after, steps, False, dry_run)
    if after == loaded.data:
        result.notes.append("the session already holds these bytes; nothing to write")
        return result
    history = decoded.state.history
    if len(history) > FRACTAL_MAX_HISTORY:
        result.beyond_fractal = HistoryBeyondFractal(len(history),
                                                     [entry.turn_id for entry in history[:-FRACTAL_MAX_HISTORY]])
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
