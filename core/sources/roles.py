"""What a source can do, as small roles: a source class inherits the roles it implements.

Every source reads (`Reader`) and resumes (`Resumer`) its sessions; its `listing` is the lister the
catalog uses (`ListingSource`). The rest is optional: metering, sending, starting, forking, trimming
in place, the trash, keeping, liveness, recovery, relinking, health and writing a new session.
A role is nominal: a class has it when the role is among its bases, never because a method of the
same name happens to be there, and each method is abstract, so a class that declares a role and
leaves one of its methods out cannot be built. `roles_of` reads the roles once from the class's
MRO; `Capabilities` is the read-only view of them the front ends grey their actions by.
"""

from __future__ import annotations

import functools
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import RoleMissingError
from ..meter import SEND

if TYPE_CHECKING:   # the role signatures name the sources' models; nothing is needed to run them
    from ..agents import Backend
    from ..liveness import PendingTurn
    from ..meter import LiveMeter, MeterResult
    from ..outcome import TurnOutcome
    from ..paths import SessionRef
    from ..problems import Problem
    from ..retention import PruneSelection
    from ..rows import SessionRow
    from ..session_meta import SessionMeta
    from ..transcript import Transcript
    from ..trash_results import PruneResult, PurgeResult, RelinkResult, TrashEntry
    from ..trimming import RestoreResult, TrimOptions, TrimResult
    from .base import AgentDeletion, Handoff, KeepReport, OpenedSession, SessionSource
    from .session_writing import WrittenSession


@runtime_checkable
class Reader(Protocol):
    """Required: one session read whole, as the neutral transcript."""

    @abstractmethod
    def open(self, ref: SessionRef) -> OpenedSession:
        """The session as a transcript (with the agent's own title, branch, summary and history when
        its format has them); NotFoundError or ProblemFileError when it cannot be read."""

    @abstractmethod
    def exists(self, ref: SessionRef) -> bool:
        """Whether the session is in the store (or kept)."""

    @abstractmethod
    def session_path(self, ref: SessionRef) -> Path:
        """Its file, or where it would be."""


@runtime_checkable
class Resumer(Protocol):
    """Required: the command that continues a session in its own agent."""

    @abstractmethod
    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        """The command that continues this session in its agent."""

    @abstractmethod
    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        """Before the agent resumes the session: notes, the archive entry written first, the next
        turn's meter and who may be writing the session now, all from one read of the file."""


@runtime_checkable
class Metered(Protocol):
    """The next turn's context, counted before it is sent."""

    @abstractmethod
    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None,
                      via: str = SEND) -> LiveMeter:
        """The next turn's meter, ready for any draft, sent `via` the agent's send command or its own TUI."""

    @abstractmethod
    def context_window(self, workspace: Path, model: str | None = None) -> int | None:
        """The input budget of the model the meter counts for; None when it is not known."""

    @abstractmethod
    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        """What a cached resume cost depends on besides the file."""

    @abstractmethod
    def resume_cost(self, ref: SessionRef, workspace: Path | None, size: int, mtime_ns: int,
                    listed_context: int = 0) -> int | None:
        """The next turn's total with an empty draft, for the file version listed (with its listed
        measured context); None when it cannot be had now."""


@runtime_checkable
class MeterCalibration(Protocol):
    """The meter's estimates kept and set against what the agent measured (Fractal)."""

    @abstractmethod
    def remember_estimate(self, ref: SessionRef, turn_id: str, estimate: int) -> None:
        """Keep the estimate made before a turn, to compare with what the agent reports."""

    @abstractmethod
    def estimates_vs_measured(self, opened: OpenedSession, meta: SessionMeta) -> list[tuple[int, int, int]]:
        """(turn number, estimate before the turn, context the agent reported) for turns that have both."""


@runtime_checkable
class Sender(Protocol):
    """A turn sent from Reprise. A sender without `TurnRecorder` returns the backend that saves the
    session itself from `turn_backend`."""

    @abstractmethod
    def check_sendable(self, ref: SessionRef, message: str, workspace: Path | None, *,
                       confirm_over: bool) -> MeterResult | None:
        """Refuse a send that cannot go now (a live writer, a missing parent); the meter when metered."""

    @abstractmethod
    def turn_backend(self, ref: SessionRef) -> Backend | None:
        """The backend that runs every turn of this source's sessions (its own agent, whatever
        `--agent` says); None: the one `--agent` or `[agent] backend` chooses."""

    @abstractmethod
    def before_agent_writes(self, ref: SessionRef) -> tuple[int, str]:
        """Before an agent that saves the session itself runs: (turns now, the summary to send)."""

    @abstractmethod
    def after_agent_wrote(self, ref: SessionRef, turns_before: int, outcome: TurnOutcome) -> str | None:
        """The turn the agent saved, read back into the outcome; None when it saved none."""


@runtime_checkable
class TurnRecorder(Protocol):
    """Reprise records the turn when the backend does not save the session (Fractal)."""

    @abstractmethod
    def begin_turn(self, ref: SessionRef, message: str) -> str:
        """Record the message as a pending turn; its id."""

    @abstractmethod
    def turn_summary(self, ref: SessionRef) -> str:
        """The summary sent with the turn."""

    @abstractmethod
    def finish_turn(self, ref: SessionRef, turn_id: str, outcome: TurnOutcome) -> None:
        """Record the outcome of the pending turn."""


@runtime_checkable
class Creator(Protocol):
    """A new session of the agent."""

    @abstractmethod
    def new_session(self, key: str, folder: Path, meta: SessionMeta) -> SessionRef:
        """A new session of the workspace, with Reprise's title and pin."""

    @abstractmethod
    def new_argv(self, ref: SessionRef, folder: Path) -> list[str] | None:
        """The command that starts a session `new_session` named (None: the session is written already)."""


@runtime_checkable
class UndoingTrims(Protocol):
    """What both kinds of trim share (not a role of its own): a trim Reprise made is undone."""

    @abstractmethod
    def can_undo_trim(self, ref: SessionRef) -> bool:
        """Whether the session has a trim Reprise can undo (or is a fork Reprise wrote)."""

    @abstractmethod
    def restore(self, ref: SessionRef, *, archive_digest: str | None, all_trims: bool, dry_run: bool,
                force: bool) -> RestoreResult:
        """Undo: a trim in place gets the archived bytes back in place; a fork Reprise wrote goes to the trash."""


@runtime_checkable
class Forking(UndoingTrims, Protocol):
    """A trim written as a new session beside the original, which is never changed."""

    @abstractmethod
    def fork(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
             force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Preview or write a trimmed copy of the session as a new session."""


@runtime_checkable
class TrimmingInPlace(UndoingTrims, Protocol):
    """A trim that rewrites the session file itself, its dropped bytes archived first (Fractal)."""

    @abstractmethod
    def trim_in_place(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
                      force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Preview or write the trimmed session in place."""


@runtime_checkable
class Trashing(Protocol):
    """Reprise's trash: a session moved out of the agent's sight and back, byte for byte."""

    @abstractmethod
    def remove(self, ref: SessionRef, *, force: bool) -> TrashEntry:
        """Move the session into Reprise's trash."""

    @abstractmethod
    def trash_entries(self, keys: Iterable[str]) -> list[TrashEntry]:
        """What is in the trash of these workspaces."""

    @abstractmethod
    def trash_restore(self, ref: SessionRef) -> TrashEntry:
        """Back where it was, byte for byte."""

    @abstractmethod
    def purge(self, keys: Iterable[str], *, confirmed: bool, older_than: float | None) -> PurgeResult:
        """Delete trashed sessions for good."""

    @abstractmethod
    def prune(self, selection: PruneSelection, *, confirmed: bool) -> PruneResult:
        """Move a selection of sessions to the trash."""


@runtime_checkable
class Swept(Protocol):
    """The agent deletes sessions by itself (Claude Code's age sweep)."""

    @abstractmethod
    def deletion(self, path: str, mtime_ns: int, now: float) -> AgentDeletion | None:
        """When the agent itself will delete this file; None if never."""

    def deletions(self, rows: Sequence[SessionRow], listed: Sequence[SessionRow], now: float
                  ) -> list[AgentDeletion | None]:
        """When the agent deletes each of these rows' sessions (as `deletion`), from what their reads
        stored where the sweep can tell from that; `listed`: every row of the source in the listing,
        these among them (a sweep that ranks a folder's sessions counts the others)."""
        return [self.deletion(row.path, row.mtime_ns, now) for row in rows]


@runtime_checkable
class Keeping(Protocol):
    """A copy of a session kept out of the agent's own clean-up."""

    @abstractmethod
    def keep(self, ref: SessionRef) -> KeepReport:
        """Copy the session into Reprise's archive, digest-verified."""

    @abstractmethod
    def kept_versions(self) -> dict[SessionRef, tuple[int, int]]:
        """{session: (size, mtime_ns) of the file its newest kept copy was taken from}."""


@runtime_checkable
class Live(Protocol):
    """A liveness rule: whether an agent is writing a session now."""

    @abstractmethod
    def running(self, ref: SessionRef, *, now: float) -> PendingTurn | None:
        """The turn an agent is writing now, if any."""


@runtime_checkable
class Recovering(Protocol):
    """Pending turns whose agent is gone, found and marked interrupted (Fractal)."""

    @abstractmethod
    def stale_pending(self, opened: OpenedSession) -> list[PendingTurn]:
        """Pending turns whose agent is gone: what recover may mark interrupted."""

    @abstractmethod
    def mark_interrupted(self, ref: SessionRef, turn_ids: list[str]) -> list[str]:
        """Mark these turns interrupted; the ones that still were pending."""


@runtime_checkable
class Relinking(Protocol):
    """A store keyed by workspace, which records each workspace's folder (Fractal)."""

    @abstractmethod
    def relink(self, old_key: str, new_dir: str, *, force: bool) -> RelinkResult:
        """Move a workspace's sessions to the key of a new folder."""

    @abstractmethod
    def has_sessions(self, key: str) -> bool:
        """Whether this store holds any session of the workspace."""

    @abstractmethod
    def record_workspace(self, key: str, folder: Path) -> None:
        """Record the folder behind a workspace key."""


@runtime_checkable
class Diagnosed(Protocol):
    """What `doctor` checks of Reprise's own files of the source."""

    @abstractmethod
    def health(self, *, clean: bool, stale_after: float) -> tuple[list[Problem], list[str], list[str], list[str]]:
        """(problems of Reprise's own files, leftover temp files, the ones cleaned, notes)."""


@runtime_checkable
class SessionWriter(Protocol):
    """A new session of this agent written from a neutral transcript (`reprise continue`, the native way)."""

    @abstractmethod
    def write_session(self, transcript: Transcript, folder: Path, meta: SessionMeta, *, origin: SessionRef,
                      agent: str, model: str | None, dry_run: bool) -> WrittenSession:
        """A new session of this agent in its own store and byte form holding the transcript's turns
        (of `origin`, a session of the agent labelled `agent`, its replies by `model`), never over an
        existing file, with Reprise's `meta` of it (title, lineage); the origin's files are never
        touched. A dry run writes nothing."""


# The optional roles, in the order a role list is shown; the required ones every source has.
REQUIRED: tuple[type, ...] = (Reader, Resumer)
OPTIONAL: tuple[type, ...] = (Metered, MeterCalibration, Sender, TurnRecorder, Creator, Forking, TrimmingInPlace,
                              Trashing, Swept, Keeping, Live, Recovering, Relinking, Diagnosed, SessionWriter)
ROLES: tuple[type, ...] = REQUIRED + OPTIONAL

# What a source without the role cannot be, in "<label> sessions cannot be <phrase> by Reprise.".
REFUSED: dict[type, str] = {
    Metered: "metered", MeterCalibration: "metered", Sender: "sent a turn", TurnRecorder: "sent a turn",
    Creator: "created", Forking: "trimmed", TrimmingInPlace: "trimmed", Trashing: "moved to the trash",
    Swept: "swept", Keeping: "kept", Live: "watched", Recovering: "recovered", Relinking: "relinked",
    Diagnosed: "checked", SessionWriter: "written from another agent's session",
}


# The actions of the roles, as the hint of a refusal lists what a source does.
DOES: dict[type, str] = {Metered: "meter", Sender: "send", Creator: "new", Forking: "fork",
                         TrimmingInPlace: "trim in place", Trashing: "trash", Keeping: "keep"}


def missing_role(source: SessionSource, role: type, phrase: str | None = None) -> RoleMissingError:
    """The refusal of an action `source` lacks `role` for: "<label> sessions cannot be <phrase> by
    Reprise.", with the source's own word on why when its spec has one (`role_hints`), else what
    Reprise does with its sessions."""
    hints = getattr(getattr(source, "spec", None), "role_hints", None) or {}
    roles = roles_of(type(source))
    does = ["list", "search", "show", "resume", *(action for held, action in DOES.items() if held in roles)]
    hint = hints.get(role.__name__) or f"what Reprise does with {source.label} sessions: {', '.join(does)}"
    return RoleMissingError(f"{source.label} sessions cannot be {phrase or REFUSED[role]} by Reprise.",
                            source=source.name, role=role.__name__, hint=hint)


@functools.cache
def roles_of(cls: type) -> frozenset[type]:
    """The roles a source class declares: those among its bases (read once per class)."""
    mro = cls.__mro__
    return frozenset(role for role in ROLES if role in mro)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a source can do, derived from its roles (`capabilities_of`): the flags the front ends
    grey their actions by. Never declared beside the roles."""

    meter: bool = False
    resume: bool = True
    new: bool = False
    send: bool = False
    trim_in_place: bool = False
    trim_fork: bool = False
    trash: bool = False
    keep: bool = False   # copy a session where the agent's own clean-up cannot reach it
    relink: bool = False
    write_session: bool = False


@functools.cache
def capabilities_of(roles: frozenset[type]) -> Capabilities:
    """The capabilities these roles give."""
    return Capabilities(meter=Metered in roles, resume=Resumer in roles, new=Creator in roles,
                        send=Sender in roles, trim_in_place=TrimmingInPlace in roles,
                        trim_fork=Forking in roles, trash=Trashing in roles, keep=Keeping in roles,
                        relink=Relinking in roles, write_session=SessionWriter in roles)
