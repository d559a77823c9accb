"""What every source of another agent's store (Claude Code, Codex) does alike: each session file
names its own folder, so there is no workspace to record, and Reprise's metadata of a session lives
in Reprise's own files (`OwnFiles`), never in the agent's.

`AgentStoreSource` also holds what such a source does around the agent's files the same way whatever
their format: the moves into Reprise's trash (refused while the agent may be writing the session),
prune and purge; the lineage of a fork Reprise wrote (its estimate until its first turn, and its
undoing into the trash); what a send reads back once the agent saved its turn. A source gives the
hooks: where a session's file is (`_locate`), its root (`_root_path`), its bytes (`_read`), who may
be writing it (`writer`), its trash (`_trash`) and the context its agent measured (`_measured`).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from ..audit import AuditLog
from ..errors import ChangedOnDiskError, ConflictError, NotFoundError, RepriseError, UsageError
from ..meter import RESUME, SEND, LiveMeter, MeterResult, TokenCounter, spec_for
from ..own_files import OwnFiles
from ..paths import SessionRef
from ..rooted import Root, write_new
from ..session_files import digest
from ..transcript import Turn
from .base import Handoff, OpenedSession, SessionSource
from .jsonl_listing import HasPath, JsonlListing
from .roles import Metered
from .session_writing import WrittenSession, audited

if TYPE_CHECKING:  # retention and the trash results name rows, which name listing fields
    from ..config import Settings
    from ..liveness import PendingTurn
    from ..outcome import TurnOutcome
    from ..retention import PruneSelection
    from ..session_meta import SessionMeta
    from ..trash_results import PruneResult, PurgeResult, TrashEntry
    from ..trimming import RestoreResult, TrimOptions, TrimPlan, TrimResult


class StoreTrash(Protocol):
    """Reprise's trash of one agent's session files (the moves, restore and purge)."""

    def remove(self, ref: SessionRef, session_file: Path, root: Path, /, *, force: bool = False) -> TrashEntry: ...

    def entries(self, keys: Iterable[str], /) -> list[TrashEntry]: ...

    def restore(self, ref: SessionRef, roots: Sequence[Path], /) -> TrashEntry: ...

    def purge(self, keys: Iterable[str], /, *, confirmed: bool, older_than: float | None = None) -> PurgeResult: ...


def recorded_folder(value: str | None) -> str | None:
    """The folder an agent recorded for a session, when it is one: an absolute path without a NUL.
    Agents record absolute folders, so anything else (`..`, ``, `a\\0b`) is an unknown folder, never
    resolved against the folder Reprise runs in."""
    if not value or "\0" in value or not value.startswith("/"):
        return None
    return value


def odd_folder_note(value: str) -> str:
    """A listing's warning for a recorded folder `recorded_folder` refused."""
    shown = value[:80].encode("unicode_escape").decode("ascii")
    return f"the folder it records ({shown!r}) is not an absolute path: its folder is unknown"


class AgentStoreSource(SessionSource):
    own_files: OwnFiles
    roots: Sequence[HasPath]
    window_per_folder = False   # the agent's window comes from its settings and the session, not the folder
    file_noun: ClassVar[str] = "session file"   # what one session's file is called in a sentence

    def __init__(self, settings: Settings, listing: JsonlListing[Any]):
        """The parts every such source has, around its listing (which holds Reprise's own files of it)."""
        self.settings = settings
        self.listing = listing
        self.own_paths = listing.own_paths
        self.own_files = listing.own_files
        self.archive = listing.archive
        self.audit = AuditLog(self.own_paths)
        self.counter = TokenCounter()

    # --- the hooks a source gives ------------------------------------------------------------

    @abstractmethod
    def _locate(self, ref: SessionRef) -> Path | None:
        """The session's file in the agent's store, or None."""

    @abstractmethod
    def _root_path(self, path: Path) -> Path:
        """The agent's root a session file is under (RepriseError when it is under none)."""

    @abstractmethod
    def _read(self, path: Path) -> bytes:
        """A session file's bytes, read within its root."""

    @abstractmethod
    def writer(self, ref: SessionRef, opened: OpenedSession | None = None, *, now: float | None = None) -> str | None:
        """Why the session counts as being written now (a recent record, a live agent), or None;
        `opened`: the session as just read (None: it could not be read)."""

    @abstractmethod
    def _trash(self) -> StoreTrash:
        """Reprise's trash of this agent's sessions."""

    @abstractmethod
    def _measured(self, opened: OpenedSession) -> tuple[int | None, int]:
        """The context the agent measured last, and the turn (counted from 1) it measured it after."""

    @abstractmethod
    def _new_path(self, ref: SessionRef) -> Path:
        """Where the file of a session the store does not hold would be."""

    @abstractmethod
    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None,
                      via: str = SEND) -> LiveMeter: ...

    def _missing_note(self, ref: SessionRef) -> str:
        """What to add when the session has no file to move (" (…)"), or ""."""
        return ""

    def _protected_reason(self, ref: SessionRef, refusal: ConflictError) -> str:
        """Why prune left out a session the agent may be writing."""
        return refusal.message

    def _turn_usage(self, newest: Turn, outcome: TurnOutcome) -> None:
        """Put the usage the agent recorded of the turn it just saved into the outcome (when it records one)."""

    # --- finding and reading ------------------------------------------------------------------

    def session_path(self, ref: SessionRef) -> Path:
        path = self._locate(ref)
        return self._new_path(ref) if path is None else path

    def _handoff(self, ref: SessionRef, opened: OpenedSession, workspace: Path, notes: list[str], *,
                 one: str) -> Handoff:
        """What to say before the agent resumes the session: these notes, and that the agent may be
        writing it now (two conversations would interleave in `one` file), with the next turn's meter."""
        writer = self.writer(ref, opened)
        if writer is not None:
            notes.append(f"{self.label} may be writing this session now ({writer}); resuming it as well would "
                         f"interleave two conversations in one {one}.")
        return Handoff(notes, None, self.prepare_meter(opened, workspace, via=RESUME).with_message(""), writer)

    # --- workspaces and Reprise's metadata ---------------------------------------------------

    def has_sessions(self, key: str) -> bool:
        return False   # nothing to record: each file names its own folder

    def workspace_path(self, key: str) -> str | None:
        return None

    def record_workspace(self, key: str, folder: Path) -> None:
        return None

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        return self.own_files.read_meta(ref)

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        if not self.exists(ref):
            raise NotFoundError(f"No {self.label} session {ref.session_id}.")
        return self.own_files.update_meta(ref, change)

    def _titled(self, ref: SessionRef, meta: SessionMeta) -> SessionRef:
        """A new session's ref, with Reprise's title of it (and when it was made) kept."""
        def given(kept: SessionMeta) -> None:
            kept.title, kept.created_at = meta.title, meta.created_at
        self.own_files.update_meta(ref, given)
        return ref

    # --- liveness and the meter --------------------------------------------------------------

    def running(self, ref: SessionRef, *, now: float) -> PendingTurn | None:
        try:
            opened = self.open(ref)
        except RepriseError:
            return None
        from ..liveness import PendingTurn

        why = self.writer(ref, opened, now=now)
        return None if why is None else PendingTurn("", None, None, True, why)

    def measure(self, ref: SessionRef, workspace: Path | None, message: str = "", *,
                model: str | None = None, via: str = SEND) -> MeterResult:
        return self.prepare_meter(self.open(ref), workspace, model=model, via=via).with_message(message)

    def resume_cost(self, ref: SessionRef, workspace: Path | None, size: int, mtime_ns: int,
                    listed_context: int = 0) -> int | None:
        """The next turn with an empty draft, resumed in the agent's own terminal UI (a fork's estimate
        until its first turn); the measured context the listing read when the file cannot be read now;
        None when the file is no longer the version listed."""
        forked = self.fork_estimate(ref, size)
        if forked:
            return forked
        try:
            opened = self.open(ref)
        except RepriseError:
            return listed_context or None
        if opened.size != size:
            return None
        meter = cast(Metered, self)   # each agent store that is asked for a resume cost is metered
        return meter.prepare_meter(opened, workspace, via=RESUME).with_message("").total or listed_context or None

    # --- the trash and prune -----------------------------------------------------------------

    def _refuse_if_written(self, ref: SessionRef, *, force: bool, action: str) -> None:
        """Refuse while the agent may be writing the session (`writer`), unless forced."""
        if force:
            return
        try:
            opened: OpenedSession | None = self.open(ref)
        except RepriseError:
            opened = None   # an unreadable file: the move itself reports it
        why = self.writer(ref, opened)
        if why is not None:
            raise ConflictError(f"{self.label} may be writing session {ref.session_id} now ({why}); it was not "
                                f"{action}.", hint=f"wait until {self.label} is done with it, or use --force")

    def remove(self, ref: SessionRef, *, force: bool = False) -> TrashEntry:
        """`reprise rm`: the session's file (and what the agent keeps beside it) into Reprise's trash."""
        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No {self.label} {self.file_noun} {ref.session_id} to move to the trash"
                                f"{self._missing_note(ref)}.")
        root = self._root_path(path)
        with self.own_files.lock(ref):
            self._refuse_if_written(ref, force=force, action="moved to the trash")
            return self._trash().remove(ref, path, root, force=force)

    def trash_entries(self, keys: Iterable[str]) -> list[TrashEntry]:
        return self._trash().entries(keys)

    def trash_restore(self, ref: SessionRef) -> TrashEntry:
        with self.own_files.lock(ref):
            return self._trash().restore(ref, [root.path for root in self.roots])

    def purge(self, keys: Iterable[str], *, confirmed: bool, older_than: float | None) -> PurgeResult:
        return self._trash().purge(keys, confirmed=confirmed, older_than=older_than)

    def prune(self, selection: PruneSelection, *, confirmed: bool) -> PruneResult:
        """Move the selected sessions to the trash; one the agent may be writing is protected instead
        (unless forced). Without `confirmed` only the selection is reported."""
        from ..trash_results import apply_prune

        force = selection.options.force
        for candidate in list(selection.selected):
            try:
                self._refuse_if_written(candidate.ref, force=force, action="pruned")
            except ConflictError as exc:
                selection.selected.remove(candidate)
                selection.protected.append(replace(candidate, reason=self._protected_reason(candidate.ref, exc)))
        return apply_prune(self.audit, selection, lambda ref: self.remove(ref, force=force), confirmed=confirmed)

    # --- sending: what the agent saved ---------------------------------------------------------

    def before_agent_writes(self, ref: SessionRef) -> tuple[int, str]:
        """Before the agent appends the turn: the number of turns now (it needs no summary)."""
        return len(self.open(ref).transcript.turns), ""

    def after_agent_wrote(self, ref: SessionRef, turns_before: int, outcome: TurnOutcome) -> str | None:
        """The id of the turn the agent saved: the usage it records of it (`_turn_usage`) and the measured
        context after it go into the outcome, and a reply too long to read from stdout is taken from the file."""
        try:
            opened = self.open(ref)
        except RepriseError:
            return None
        turns = opened.transcript.turns
        if len(turns) <= turns_before:
            return None
        newest = turns[-1]
        if outcome.unread:
            outcome.response, outcome.unread = newest.reply, False
        self._turn_usage(newest, outcome)
        tokens, turn = self._measured(opened)
        if tokens and turn == len(turns):
            if outcome.usage is not None:
                outcome.usage["context_tokens"] = tokens
            outcome.notes.append(f"Context after this turn: {tokens:,} tokens (measured by {self.label}).")
        return newest.turn_id

    # --- forks: a trimmed copy written beside the session --------------------------------------

    def _refuse_changed(self, ref: SessionRef, data: bytes, expected_sha256: str | None, path: Path) -> None:
        """Refuse a fork of bytes other than those its preview showed (`expected_sha256`)."""
        if expected_sha256 is not None and digest(data) != expected_sha256:
            raise ChangedOnDiskError(f"Session {ref.session_id} changed since the preview; nothing was written.",
                                     hint="open the trim dialog again", path=path)

    def _counting(self, model: str | None, recorded: str | None, default: str) -> Callable[[str], int]:
        """How a fork counts the tokens of a text: with the tokenizer of the model chosen (given, else
        recorded, else configured, else the agent's default)."""
        encoding = spec_for(model or recorded or self.settings.meter.model or default,
                            self.settings.meter.models).encoding
        return lambda text: self.counter.count(text, encoding)

    def _fork_result(self, ref: SessionRef, plan: TrimPlan, data: bytes, fork_id: str, writer: str | None, *,
                     options: TrimOptions, dry_run: bool, force: bool, title: str, path: Path, fork_path: Path,
                     beside: Callable[[Root], list[str]] | None = None) -> TrimResult:
        """A fork's plan (of the bytes `data` of the file `path`) previewed, or written at `fork_path`
        (`fork_files.write_fork`) titled after Reprise's title of the session, else `title`; `beside`
        writes what goes with the fork's file, within its root."""
        from ..trimming import TrimResult
        from .fork_files import write_fork

        target = SessionRef(ref.workspace_key, fork_id, self.name)
        if writer is not None:
            plan.notes.append(f"{self.label} may be writing this session now ({writer}); the fork holds the turns "
                              "written so far")
        if dry_run or not plan.changed:
            return TrimResult(plan, ref, target, False, dry_run, True)
        assert plan.data is not None and plan.records_digest is not None
        root = Root(self._root_path(path), f"{self.label} root")
        return write_fork(plan, ref, target, data, title=self.read_meta(ref).title or title, options=options,
                          force=force, fork_path=fork_path, root=root, own_files=self.own_files, archive=self.archive,
                          audit=self.audit, beside=(lambda: beside(root)) if beside is not None else None)

    # --- a new session written from another agent's transcript ---------------------------------

    def _write_new(self, written: WrittenSession, meta: SessionMeta, origin: SessionRef, *, dry_run: bool
                   ) -> WrittenSession:
        """Put a session `write_session` planned into the store: its bytes archived first (op
        `continue`, so undoing it into the trash loses nothing), then its file, new (never over one),
        then Reprise's meta of it with the lineage undo reads (`forked_from`, `fork_sha256`,
        `fork_size`), audited either way."""
        from ..session_meta import SessionMeta


        written.sha256 = digest(written.data)
        if dry_run:
            return written
        ref = written.ref
        info = {"source": origin.source, "session_id": origin.session_id}
        root = Root(self._root_path(written.path), f"{self.label} root")
        with audited(self.audit, written, origin), self.own_files.lock(ref):
            entry = self.archive.put(ref, written.data, op="continue", continued_from=info)
            try:
                with root.parent(written.path, create=True) as (fd, name):
                    write_new(fd, name, written.data)
            except (OSError, RepriseError):
                self.archive.withdraw(ref, entry)
                raise
            lineage = {"forked_from": origin.session_id, "fork_sha256": written.sha256,
                       "fork_size": len(written.data)}
            self.own_files.write_meta(ref, SessionMeta.model_validate({**meta.model_dump(), **lineage}))
        return written

    # --- the lineage of a fork Reprise wrote ---------------------------------------------------

    def _fork_meta(self, ref: SessionRef) -> dict[str, object] | None:
        """Reprise's lineage of a fork it wrote (`forked_from`, `fork_sha256`, ...), when it is one."""
        extra = self.own_files.read_meta(ref).model_extra or {}
        return extra if isinstance(extra.get("forked_from"), str) and isinstance(extra.get("fork_sha256"), str) \
            else None

    def fork_context(self, ref: SessionRef, sha256: str, size: int | None = None) -> int | None:
        """The context estimate of a fork unchanged since Reprise wrote it (its copied usage records
        describe the untrimmed session): told by its digest, or by its size when given; else None."""
        extra = self._fork_meta(ref)
        if extra is None:
            return None
        estimate = extra.get("fork_context_estimate")
        same = extra.get("fork_size") == size if size is not None else extra["fork_sha256"] == sha256
        return estimate if same and isinstance(estimate, int) and not isinstance(estimate, bool) else None

    def fork_estimate(self, ref: SessionRef, size: int) -> int | None:
        """A fork Reprise wrote, before its first turn: the next turn's estimate kept with it."""
        return self.fork_context(ref, "", size)

    def can_undo_trim(self, ref: SessionRef) -> bool:
        """Whether this session is a fork Reprise wrote whose file is still there."""
        return self._fork_meta(ref) is not None and self._locate(ref) is not None

    def restore(self, ref: SessionRef, *, archive_digest: str | None, all_trims: bool, dry_run: bool,
                force: bool) -> RestoreResult:
        """Undo a fork: move the fork's file to Reprise's trash (`remove`), when it is as Reprise wrote it
        (a fork the agent has added turns to needs `force`). Its bytes stay in the archive; the original
        was never touched."""
        from .fork_files import undo_fork

        extra = self._fork_meta(ref)
        path = self._locate(ref)
        if extra is None or path is None:
            raise UsageError(f"Session {ref.session_id} is not a fork Reprise wrote; there is no trim to undo.",
                             hint=f"a {self.label} session itself is never trimmed in place")
        return undo_fork(ref, self._read(path), extra, path, agent=self.label, dry_run=dry_run, force=force,
                         trash=lambda forced: self.remove(ref, force=forced), audit=self.audit)
