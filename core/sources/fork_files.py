"""A fork Reprise writes into an agent's store (Claude Code, Codex), and its undoing.

Writing: the original's bytes (what capped text points at) into the original's archive (op
`fork-original`) and shared into the fork's (the same file, linked), so that the fork's markers are
found, and kept, from the fork alone; the fork's bytes into its own (op `fork`), the fork's file as
a new file beside the original (never over one), then Reprise's title "<title> (trimmed)" and
lineage of it (`forked_from`, `fork_sha256`, `fork_size`, `fork_context_estimate`), audited as it
went. A fork that fails before its file is written takes back the archive entries it put. Undoing (`u`): the fork's
file to Reprise's trash when it is as Reprise wrote it; a fork the agent has added turns to (or that
changed) only with `force`. The fork's bytes stay in the archive, and the session it was trimmed
from was never touched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path

from ..archive import Archive, ArchiveEntry
from ..audit import AuditLog, iso_time
from ..errors import RepriseError
from ..own_files import OwnFiles
from ..paths import SessionRef
from ..rooted import Root, write_new
from ..session_files import digest
from ..session_meta import SessionMeta
from ..trimming import RestoreResult, RestoreStep, TrimOptions, TrimPlan, TrimResult, fork_to_trash

TITLE_CHARS = 60


def fork_title(title: str) -> str:
    """The title of the session a fork was trimmed from, on one line and at most TITLE_CHARS long."""
    title = " ".join(title.split())
    return title if len(title) <= TITLE_CHARS else title[:TITLE_CHARS - 1] + "…"


def write_fork(plan: TrimPlan, ref: SessionRef, target: SessionRef, original: bytes, *, title: str,
               options: TrimOptions, force: bool, fork_path: Path, root: Root, own_files: OwnFiles,
               archive: Archive, audit: AuditLog,
               beside: Callable[[], list[str]] | None = None) -> TrimResult:
    """Write the fork `target` of `ref` that `plan` holds as `fork_path` under the agent's `root`
    (`beside`: what else goes with it, such as Claude Code's sidecars; it returns notes)."""
    assert plan.data is not None and plan.records_digest is not None
    options_info = {**options.as_dict(), "fork": target.session_id, "force": force}
    digests = [plan.records_digest, plan.original_digest]
    put: list[tuple[SessionRef, ArchiveEntry]] = []
    try:
        with own_files.lock(target):
            put.append((ref, archive.put(ref, original, op="fork-original", fork_session_id=target.session_id)))
            put.append((target, archive.share(ref, target, plan.original_digest, op="fork-original",
                                              source_session_id=ref.session_id)))
            put.append((target, archive.put(target, plan.data, op="fork", source_session_id=ref.session_id,
                                            original_sha256=plan.original_digest, options=options.as_dict(),
                                            counts=plan.counts())))
            with root.parent(fork_path) as (fd, name):
                write_new(fd, name, plan.data)
            put.clear()   # the fork exists: its archive entries are its own
            if beside is not None:
                plan.notes.extend(beside())
            own_files.write_meta(target, SessionMeta.model_validate({
                "title": f"{fork_title(title)} (trimmed)", "created_at": iso_time(time.time()),
                "forked_from": ref.session_id, "fork_sha256": plan.records_digest, "fork_size": len(plan.data),
                "fork_context_estimate": plan.meter_after}))
    except (RepriseError, OSError) as exc:
        _withdraw(archive, own_files, put)
        audit.append(ref.workspace_key, "trim", session_id=ref.session_id, options=options_info, digests=digests,
                     counts=plan.counts(), result=f"failed: {getattr(exc, 'code', exc)}")
        raise
    audit.append(ref.workspace_key, "trim", session_id=ref.session_id, options=options_info, digests=digests,
                 counts=plan.counts(), result=f"forked to {target.session_id}")
    return TrimResult(plan, ref, target, True, False, True, digests)


def _withdraw(archive: Archive, own_files: OwnFiles, put: list[tuple[SessionRef, ArchiveEntry]]) -> None:
    """Take back the archive entries of a fork that was not written (newest first, each under its
    session's lock); one that cannot be taken back stays, as an entry of bytes that exist."""
    for owner, entry in reversed(put):
        try:
            with own_files.lock(owner):
                archive.withdraw(owner, entry)
        except (OSError, RepriseError):
            continue


def undo_fork(ref: SessionRef, data: bytes, lineage: Mapping[str, object], path: Path, *, agent: str,
              dry_run: bool, force: bool, trash: Callable[[bool], object], audit: AuditLog) -> RestoreResult:
    """Move the fork `ref` (its file `path` holds `data`; `lineage`: Reprise's `forked_from`,
    `fork_sha256` and `fork_size` of it) to the trash with `trash(force)`, then audit."""
    written = str(lineage["fork_sha256"])
    step = RestoreStep(written, "fork", "trashed")
    notes = [f"the fork is moved to Reprise's trash; {lineage['forked_from']} was never changed"]
    unchanged = digest(data) == written
    why = None
    if not unchanged:
        size = lineage.get("fork_size")
        size = size if isinstance(size, int) else 0
        why = (f"the fork has grown since Reprise wrote it ({len(data) - size:,} bytes: {agent} added turns)"
               if len(data) > size else "the fork changed since Reprise wrote it")
    decided = fork_to_trash(ref, data, step, notes, why, dry_run=dry_run, force=force, path=path)
    if decided is not None:
        return decided
    # Into Reprise's trash of the agent's sessions, where `trash restore` finds it. Unchanged since
    # Reprise wrote it, nothing is writing it.
    trash(force or unchanged)
    audit.append(ref.workspace_key, "restore", session_id=ref.session_id, digests=[written],
                 result=f"fork moved to the trash ({lineage['forked_from']} unchanged)")
    return RestoreResult(ref, data, b"", [step], True, False, None, notes)
