"""What undo undoes (ctrl+z in the TUI), decided in one place for every front end.

The policy, in order: the session this front end last moved to the trash (it comes back);
else the current session's newest trim (what it removed comes back from the archive; a trim
Reprise wrote as a new session, a fork, goes to the trash instead, its source untouched);
else the newest session in the trash, in the scope on screen. `UndoLog` remembers the last
change made through the service; the front end asks for a step, says what it will do, and
runs it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .paths import SessionRef

if TYPE_CHECKING:
    from .service import Service

TRASHED, TRIMMED, FORKED = "trashed", "trimmed", "forked"


@dataclass(frozen=True, slots=True)
class UndoStep:
    """One undo: `kind` is TRASHED (restore the session from the trash), TRIMMED (undo its last
    trim from the archive) or FORKED (move the trimmed copy Reprise wrote to the trash)."""

    kind: str
    ref: SessionRef
    title: str | None
    grown: bool = False   # a fork that grew since Reprise wrote it: its new turns go to the trash with it


@dataclass(slots=True)
class UndoLog:
    """The last change made through one service that undo can take back: a move to the trash
    (with the title it had, for the question) or a trim. An undo clears it."""

    kind: str | None = None
    ref: SessionRef | None = None
    title: str | None = None

    def note(self, kind: str, ref: SessionRef, title: str | None = None) -> None:
        self.kind, self.ref, self.title = kind, ref, title

    def clear(self) -> None:
        self.kind = self.ref = self.title = None


def next_step(service: Service, current: SessionRef | None, current_title: str | None, *,
              all_workspaces: bool) -> UndoStep | None:
    """The step undo takes now, or None when there is nothing to undo (no trim of the current
    session, an empty trash)."""
    log = service.undo_log
    if log.kind == TRASHED and log.ref is not None:
        trashed = [entry for entry in service.trash_entries(all_workspaces=True) if entry.ref == log.ref]
        return UndoStep(TRASHED, log.ref, (trashed[0].title if trashed else None) or log.title)
    if current is not None and service.can_undo_trim(current):
        preview = service.restore(current, dry_run=True)
        if any(step.mode == "trashed" for step in preview.steps):
            grown = any("needs --force" in note for note in preview.notes)
            return UndoStep(FORKED, current, current_title, grown=grown)
        return UndoStep(TRIMMED, current, current_title)
    entries = service.trash_entries(all_workspaces=all_workspaces)
    if not entries:
        return None
    return UndoStep(TRASHED, entries[0].ref, entries[0].title)


def take(service: Service, step: UndoStep) -> list[str]:
    """Undo `step`; the notes it leaves (e.g. history beyond what Fractal keeps, and where it is
    archived). The log is cleared: a second undo takes the next step of the policy."""
    service.undo_log.clear()
    if step.kind == TRASHED:
        service.trash_restore(step.ref)
        return []
    return list(service.restore(step.ref, force=step.grown).notes)
