"""Codex CLI's stores as a session source: list, read, search, meter and resume its sessions.

Reprise reads rollouts only: it never writes into a Codex root and never opens Codex's SQLite files
(a read-only open of a WAL database can still create files beside it). Its own files of Codex
sessions (titles, pins) live in Reprise's data folder, under `codex/` folders (`OwnPaths`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...agents import Backend, substitute
from ...audit import AuditLog
from ...config import Settings
from ...errors import (
    ChangedOnDiskError,
    ConflictError,
    NotFoundError,
    PendingTurnError,
    ProblemFileError,
    RepriseError,
    UsageError,
)
from ...liveness import PendingTurn
from ...meter import RESUME, SEND, LiveMeter, MeterResult, TokenCounter, spec_for, user_spec
from ...outcome import TurnOutcome
from ...own_files import SessionMeta
from ...paths import OwnPaths, SessionRef
from ...problems import Problem
from ...retention import PruneSelection
from ...rooted import Root
from ...session_files import ReadProblem, digest
from ...times import parse_time
from ...trash_results import PruneResult, PurgeResult, TrashEntry, apply_prune
from ...trimming import RestoreResult, TrimOptions, TrimResult
from ..agent_store import AgentStoreSource
from ..base import Handoff, OpenedSession
from ..claude.liveness import process_writing
from ..roles import Creator, Diagnosed, Forking, Live, Metered, Sender, Trashing
from .fields import CodexFields, ListingFold
from .layout import CodexRoot, check_session_id
from .listing import NAME, CodexListing
from .liveness import writer_of
from .records import Record
from .retention import NO_SWEEP
from .spec import SPEC
from .transcript import read_transcript
from .trash import CodexTrash
from .windows import Configs, catalog_window

# What only metering, forking, sending or starting a session needs is imported there: a listing never
# loads it.
if TYPE_CHECKING:
    from .meter import CodexLimits, ContextNow
    from .next_request import NextRequest

METER_VERSION = "codex-2"


@dataclass(slots=True)
class CodexSession:
    """What Reprise read of one rollout (the source's own model)."""

    records: list[Record]
    fields: CodexFields
    context: ContextNow
    request: NextRequest
    title: str | None
    lineage_gap: str | None   # why the history before a fork is missing (its parent's rollout is not there)


class CodexSource(AgentStoreSource, Metered, Sender, Creator, Forking, Trashing, Live, Diagnosed):
    spec = SPEC
    name = SPEC.name
    label = SPEC.label
    trash_note = SPEC.trash_note
    resumes_from_any_folder = SPEC.resume_folder == "any"   # `codex resume ID` finds a rollout by id, indexed or not
    cost_label = SPEC.cost_label
    resume_setting = SPEC.resume_setting
    rename_note = SPEC.rename_note

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.settings = settings
        self.roots = [CodexRoot(Path(root)) for root in roots]
        self.configs = Configs()
        self.own_paths = OwnPaths(data, NAME)
        self.codex_listing = CodexListing(roots, self.own_paths)
        self.listing = self.codex_listing
        self.own_files = self.codex_listing.own_files
        self.archive = self.codex_listing.archive
        self.audit = AuditLog(self.own_paths)
        self.counter = TokenCounter()

    # --- finding and reading -----------------------------------------------------------------

    def _locate(self, ref: SessionRef) -> Path | None:
        return self.codex_listing.locate(check_session_id(ref.session_id))

    def exists(self, ref: SessionRef) -> bool:
        return self._locate(ref) is not None

    def session_path(self, ref: SessionRef) -> Path:
        path = self._locate(ref)
        if path is None:
            return self.roots[0].sessions / ref.session_id if self.roots else Path(ref.session_id)
        return path

    def open(self, ref: SessionRef) -> OpenedSession:
        from .meter import ContextNow
        from .next_request import next_request

        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Codex session {ref.session_id} in any root "
                                f"({', '.join(str(root.path) for root in self.roots)}).")
        try:
            data, records, skipped, end = self.codex_listing.read_records(path)
        except FileNotFoundError:
            raise NotFoundError(f"The Codex rollout {path} disappeared.", path=path) from None
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        joined, lineage = self.codex_listing.transcript_records(records)
        transcript, notes = read_transcript(joined, ref.session_id)
        transcript.notes[:0] = lineage.notes
        warnings = [Problem(str(path), "skipped_line", warning) for warning in skipped]
        if end < len(data):
            warnings.append(Problem(str(path), "truncated_line", f"the last line ({len(data) - end:,} bytes) "
                                    "is incomplete, probably being written; it was skipped"))
        warnings.extend(Problem(str(path), "note", note) for note in notes)
        fold = ListingFold()
        fold.feed(records)
        found = fold.result()
        inherited_turns = len(transcript.turns) - found.turns
        sha256 = hashlib.sha256(data).hexdigest()
        estimate = self.fork_context(ref, sha256)   # a fork Reprise wrote, unchanged: its estimate
        context = ContextNow(found.context_tokens, found.context_turn + inherited_turns, found.context_window,
                             found.model, found.context_basis) if estimate is None else \
            ContextNow(estimate, found.context_turn, found.context_window, found.model, "estimate")
        title = self.codex_listing.title_of(path, ref.session_id)
        return OpenedSession(ref, path, len(data), sha256, transcript, warnings,
                             CodexSession(records, found, context, next_request(joined), title, lineage.gap),
                             agent_title=title, branch=found.branch)

    @staticmethod
    def _session(opened: OpenedSession) -> CodexSession:
        assert isinstance(opened.native, CodexSession)
        return opened.native

    def health(self, *, clean: bool, stale_after: float) -> tuple[list[Problem], list[str], list[str], list[str]]:
        return [], [], [], [NO_SWEEP]

    # --- resuming ----------------------------------------------------------------------------

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        return substitute(self.settings.sources.codex.resume, session_id=ref.session_id, workspace=workspace or "")

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        opened = self.open(ref)
        notes = []
        if self._session(opened).lineage_gap is not None:
            notes.append(f"{self._session(opened).lineage_gap} Resuming it will fail.")
        writer = self.writer(opened)
        if writer is not None:
            notes.append(f"Codex may be writing this session now ({writer}); resuming it as well would "
                         "interleave two conversations in one rollout.")
        return Handoff(notes, None, self.prepare_meter(opened, workspace, via=RESUME).with_message(""), writer)

    def writer(self, opened: OpenedSession, *, now: float | None = None) -> str | None:
        """Why the session counts as being written now (a recent record, a process holding it), or None."""
        newest = self._session(opened).fields.last_activity
        moment = parse_time(newest) if newest else None
        written = writer_of(opened.path, moment.timestamp() if moment else None, time.time() if now is None else now)
        return written.why if written is not None else None

    def running(self, ref: SessionRef, *, now: float) -> PendingTurn | None:
        try:
            opened = self.open(ref)
        except RepriseError:
            return None
        why = self.writer(opened, now=now)
        return None if why is None else PendingTurn("", None, None, True, why)

    # --- the meter ---------------------------------------------------------------------------

    def _limits(self, opened: OpenedSession, via: str) -> CodexLimits:
        """Codex's config.toml of the session's root and the command line the turn goes through."""
        from .meter import CodexLimits

        root = self.codex_listing.root_of(opened.path).path
        codex = self.settings.sources.codex
        return CodexLimits(self.configs.of(root), tuple(codex.send if via == SEND else codex.resume))

    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None,
                      via: str = SEND) -> LiveMeter:
        from .meter import CodexMeter

        session = self._session(opened)
        return CodexMeter(self.settings.meter, self.counter, session.context, session.request, model=model, via=via,
                          limits=self._limits(opened, via))

    def context_window(self, workspace: Path, model: str | None = None) -> int | None:
        """A user's `[[meter.models]]` window, else Codex's catalog's (95% of it), else unknown."""
        from .meter import DEFAULT_MODEL

        chosen = model or self.settings.meter.model or DEFAULT_MODEL
        spec = user_spec(chosen, self.settings.meter.models)
        return spec.input_budget if spec is not None else catalog_window(chosen)

    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        return f"{METER_VERSION}|{RESUME}"

    def fork_estimate(self, ref: SessionRef, size: int) -> int | None:
        return self.fork_context(ref, "", size)

    # --- writes (issue 16) ---

    def _trash(self) -> CodexTrash:
        return CodexTrash(self.own_paths, self.audit, self.own_files.lock)

    def _refuse_if_written(self, ref: SessionRef, *, force: bool, action: str) -> None:
        """Refuse while Codex may be writing the session (a recent record, a process holding it), unless forced."""
        if force:
            return
        try:
            opened = self.open(ref)
        except RepriseError:
            return   # an unreadable rollout: the move itself reports it
        why = self.writer(opened)
        if why is not None:
            raise ConflictError(f"Codex may be writing session {ref.session_id} now ({why}); it was not {action}.",
                                hint="wait until Codex is done with it, or use --force")

    def remove(self, ref: SessionRef, *, force: bool = False) -> TrashEntry:
        """`reprise rm`: the rollout into Reprise's trash (trash.py); Codex's SQLite is not touched."""
        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Codex rollout {ref.session_id} to move to the trash.")
        root = self.codex_listing.root_of(path).path
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
        """Move the selected sessions to the trash; one Codex may be writing is protected instead
        (unless forced). Without `confirmed` only the selection is reported."""
        force = selection.options.force
        for candidate in list(selection.selected):
            try:
                self._refuse_if_written(candidate.ref, force=force, action="pruned")
            except ConflictError as exc:
                selection.selected.remove(candidate)
                selection.protected.append(replace(candidate, reason=exc.message))
        return apply_prune(self.audit, selection, lambda ref: self.remove(ref, force=force), confirmed=confirmed)

    def turn_backend(self, ref: SessionRef) -> Backend | None:
        """Every turn of a Codex session runs `[sources.codex] send`, whatever `--agent` says."""
        from .turns import CodexSendBackend

        path = self._locate(ref)
        root = self.codex_listing.root_of(path).path if path is not None else self.roots[0].path
        return CodexSendBackend(self.settings.sources.codex.send, root)

    def check_sendable(self, ref: SessionRef, message: str, workspace: Path | None, *,
                       confirm_over: bool) -> MeterResult:
        """The meter with the message; refused when the rollout is gone, when a process holds it open
        (a Codex running it), when a Codex fork's parent is missing (Codex cannot resume it), or over
        the window unless confirmed. A record written a moment ago alone does not refuse: it is the
        previous turn Reprise sent."""
        if self._locate(ref) is None:
            raise NotFoundError(f"No Codex rollout {ref.session_id}, so no turn can be sent to it.")
        opened = self.open(ref)
        running = process_writing(opened.path)
        if running is not None:
            raise PendingTurnError(f"Codex may be running session {ref.session_id} now ({running.why}).",
                                   hint="finish or leave that Codex first")
        gap = self._session(opened).lineage_gap
        if gap is not None:
            raise ConflictError(gap, hint="restore the parent's rollout first")
        return self.prepare_meter(opened, workspace).with_message(message).sendable(confirm_over=confirm_over)

    def before_agent_writes(self, ref: SessionRef) -> tuple[int, str]:
        """Before Codex appends the turn: the number of turns now (it needs no summary)."""
        return len(self.open(ref).transcript.turns), ""

    def after_agent_wrote(self, ref: SessionRef, turns_before: int, outcome: TurnOutcome) -> str | None:
        """The turn Codex saved (its `turn_id`): its usage and the measured context after it go into the
        outcome, and a reply too long to read from stdout is taken from the rollout."""
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
        context = self._session(opened).context
        usage = newest.usage
        if usage is not None:
            outcome.usage = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                             "cache_read_tokens": usage.cache_read_tokens, "cache_creation_tokens": 0, "cost": 0.0,
                             "duration_ms": usage.duration_ms or 0, "iterations": usage.iterations or 0,
                             "context_tokens": 0}
        if context.tokens and context.turn == len(turns):
            if outcome.usage is not None:
                outcome.usage["context_tokens"] = context.tokens
            outcome.notes.append(f"Context after this turn: {context.tokens:,} tokens (measured by Codex).")
        return newest.turn_id

    def fork(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
             force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Preview or write a trimmed copy of the session as a new rollout in its date folder (Codex's
        own rollout is never rewritten), archived (op `fork`; the original's bytes in the
        original's archive, op `fork-original`), titled "<title> (trimmed)" with lineage. A fork Codex
        made is written self-contained (fork.py)."""
        from ..fork_files import write_fork
        from .fork import ForkState, fork_name, new_thread_id, plan_fork
        from .meter import DEFAULT_MODEL

        opened = self.open(ref)
        session = self._session(opened)
        if session.lineage_gap is not None:
            raise UsageError(f"{session.lineage_gap} A trim would lose that history, so it is not made.",
                             hint="restore the parent's rollout first")
        data, _, _, _ = self.codex_listing.read_records(opened.path)
        if expected_sha256 is not None and digest(data) != expected_sha256:
            raise ChangedOnDiskError(f"Session {ref.session_id} changed since the preview; nothing was written.",
                                     hint="open the trim dialog again", path=opened.path)
        inherited = None
        if session.fields.forked_from is not None:
            inherited = self.codex_listing.transcript_records(session.records)[1].records
        encoding = spec_for(model or session.fields.model or self.settings.meter.model or DEFAULT_MODEL,
                            self.settings.meter.models).encoding
        fork_id = new_thread_id()
        plan = plan_fork(data, options, fork_id=fork_id, context_before=session.fields.context_tokens,
                         count=lambda text: self.counter.count(text, encoding), inherited=inherited)
        target = SessionRef(ref.workspace_key, fork_id, NAME)
        writer = self.writer(opened)
        if writer is not None:
            plan.notes.append(f"Codex may be writing this session now ({writer}); the fork holds the turns written "
                              "so far")
        if dry_run or not plan.changed:
            return TrimResult(plan, ref, target, False, dry_run, True)
        assert plan.data is not None and plan.records_digest is not None and isinstance(plan.state, ForkState)
        return write_fork(plan, ref, target, data, title=self.read_meta(ref).title or session.title
                          or session.fields.first_message or f"session {ref.session_id[-8:]}", options=options,
                          force=force, fork_path=opened.path.parent / fork_name(opened.path.name, fork_id),
                          root=Root(self.codex_listing.root_of(opened.path).path, "Codex root"),
                          own_files=self.own_files, archive=self.archive, audit=self.audit)

    def _fork_meta(self, ref: SessionRef) -> dict[str, object] | None:
        """Reprise's lineage of a fork it wrote (`forked_from`, `fork_sha256`, ...), when it is one."""
        extra = self.own_files.read_meta(ref).model_extra or {}
        return extra if isinstance(extra.get("forked_from"), str) and isinstance(extra.get("fork_sha256"), str) \
            else None

    def fork_context(self, ref: SessionRef, sha256: str, size: int | None = None) -> int | None:
        """The context estimate of a fork unchanged since Reprise wrote it (its copied token counts
        describe the untrimmed session), else None."""
        extra = self._fork_meta(ref)
        if extra is None:
            return None
        estimate = extra.get("fork_context_estimate")
        same = extra.get("fork_size") == size if size is not None else extra["fork_sha256"] == sha256
        return estimate if same and isinstance(estimate, int) and not isinstance(estimate, bool) else None

    def can_undo_trim(self, ref: SessionRef) -> bool:
        """Whether this session is a fork Reprise wrote whose rollout is still there."""
        return self._fork_meta(ref) is not None and self._locate(ref) is not None

    def restore(self, ref: SessionRef, *, archive_digest: str | None, all_trims: bool, dry_run: bool,
                force: bool) -> RestoreResult:
        """Undo a fork: move the fork's rollout to Reprise's trash, when it is as Reprise wrote it (a
        fork Codex has added turns to needs `force`). Its bytes stay in the archive; the original was
        never touched."""
        from ..fork_files import undo_fork

        extra = self._fork_meta(ref)
        path = self._locate(ref)
        if extra is None or path is None:
            raise UsageError(f"Session {ref.session_id} is not a fork Reprise wrote; there is no trim to undo.",
                             hint="a Codex session itself is never trimmed in place")
        data, _, _, _ = self.codex_listing.read_records(path)
        return undo_fork(ref, data, extra, path, agent="Codex", dry_run=dry_run, force=force,
                         trash=lambda forced: self.remove(ref, force=forced), audit=self.audit)

    def new_session(self, key: str, folder: Path, meta: SessionMeta) -> SessionRef:
        """A new thread on an id Reprise chose (new.py: its first line written in the first root), with
        Reprise's title of it; `new_argv` starts Codex on it."""
        from .fork import new_thread_id
        from .new import start_rollout

        if not self.roots:
            raise NotFoundError("No Codex root to start a session in.", hint="set [sources.codex] roots")
        ref = SessionRef(key, new_thread_id(), NAME)
        start_rollout(self.roots[0], ref.session_id, folder)

        def given(kept: SessionMeta) -> None:
            kept.title, kept.created_at = meta.title, meta.created_at
        self.own_files.update_meta(ref, given)
        return ref

    def new_argv(self, ref: SessionRef, folder: Path) -> list[str] | None:
        return substitute(self.settings.sources.codex.new, session_id=ref.session_id, workspace=str(folder))
