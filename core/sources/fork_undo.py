"""Undoing a fork Reprise wrote into an agent's store (Claude Code, Codex): `u` moves the fork's file
to Reprise's trash when it is as Reprise wrote it (its digest in Reprise's lineage of it); a fork the
agent has added turns to (or that changed) is moved only with `force`. The fork's bytes stay in the
archive, and the session it was trimmed from was never touched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from ..audit import AuditLog
from ..errors import ChangedOnDiskError
from ..paths import SessionRef
from ..session_files import digest
from ..trimming import RestoreResult, RestoreStep


def undo_fork(ref: SessionRef, data: bytes, lineage: Mapping[str, object], path: Path, *, agent: str,
              dry_run: bool, force: bool, trash: Callable[[bool], object], audit: AuditLog) -> RestoreResult:
    """Move the fork `ref` (its file `path` holds `data`; `lineage`: Reprise's `forked_from`,
    `fork_sha256` and `fork_size` of it) to the trash with `trash(force)`, then audit."""
    written = str(lineage["fork_sha256"])
    step = RestoreStep(written, "fork", "trashed")
    notes = [f"the fork is moved to Reprise's trash; {lineage['forked_from']} was never changed"]
    unchanged = digest(data) == written
    if not unchanged:
        size = lineage.get("fork_size")
        size = size if isinstance(size, int) else 0
        why = (f"the fork has grown since Reprise wrote it ({len(data) - size:,} bytes: {agent} added turns)"
               if len(data) > size else "the fork changed since Reprise wrote it")
        if not force:
            if dry_run:
                notes.append(f"{why}; undoing needs --force")
                return RestoreResult(ref, data, b"", [step], False, True, None, notes)
            raise ChangedOnDiskError(f"{why[0].upper()}{why[1:]}; nothing was moved.",
                                     hint="--force moves it to the trash anyway (its new turns go with it)", path=path)
        notes.append(why)
    if dry_run:
        return RestoreResult(ref, data, b"", [step], False, True, None, notes)
    # Into Reprise's trash of the agent's sessions, where `trash restore` finds it. Unchanged since
    # Reprise wrote it, nothing is writing it.
    trash(force or unchanged)
    audit.append(ref.workspace_key, "restore", session_id=ref.session_id, digests=[written],
                 result=f"fork moved to the trash ({lineage['forked_from']} unchanged)")
    return RestoreResult(ref, data, b"", [step], True, False, None, notes)
