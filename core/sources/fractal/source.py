"""Fractal's store as a session source: everything Reprise does to a Fractal session, reached
through the source protocol (`core/sources/base.py`). Reprise's own files of Fractal sessions
stay where they always were, beside the sessions under Fractal's state root.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from ...archive import Archive, ArchiveEntry
from ...audit import AuditLog
from ...errors import (
    ChangedOnDiskError,
    NotFoundError,
    PendingTurnError,
    ProblemFileError,
    RepriseError,
)
from ...meter import SEND, LiveMeter, MeterResult, spec_for
from ...paths import SessionRef, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, digest, read_regular_file
from ...times import utc_now_iso
from ...transcript import Transcript
from ..base import Handoff, OpenedSession, SessionSource
from ..roles import (
    Creator,
    Diagnosed,
    Forking,
    Live,
    MeterCalibration,
    Metered,
    Recovering,
    Relinking,
    Sender,
    SessionWriter,
    Trashing,
    TrimmingInPlace,
    TurnRecorder,
)
from ..session_writing import WrittenSession, audited
from .listing import FractalListing
from .spec import SPEC
from .store import Loaded, Store

if TYPE_CHECKING:   # what decodes, meters or writes a session imports pydantic: a listing needs none of it
    from ...agents import Backend
    from ...config import Settings
    from ...liveness import PendingTurn
    from ...outcome import TurnOutcome
    from ...retention import PruneSelection
    from ...session_meta import SessionMeta
    from ...trash_results import PruneResult, PurgeResult, RelinkResult, TrashEntry
    from ...trimming import RestoreResult, TrimOptions, TrimResult
    from .meter import Meter
    from .models import SessionState
    from .trash import Trash

T = TypeVar("T")
NAME = "fractal"


class FractalSource(SessionSource, Metered, MeterCalibration, Sender, TurnRecorder, Creator, Forking,
                    TrimmingInPlace, Trashing, Live, Recovering, Relinking, Diagnosed, SessionWriter):
    spec = SPEC
    name = SPEC.name
    label = SPEC.label

    def __init__(self, state_root: Path, settings: Settings):
        self.settings = settings
        self.store = Store(state_root)
        self.own_paths = self.store.paths
        self.listing = FractalListing(self.store)
        self.archive = Archive(self.store.paths)
        self.audit = AuditLog(self.store.paths)

    @functools.cached_property
    def trash(self) -> Trash:
        """Fractal's trash, built on first use (its modules, and the liveness checks', are not a listing's)."""
        from .trash import Trash

        return Trash(self.store, self.audit)

    @functools.cached_property
    def meter(self) -> Meter:
        """Fractal's meter, built on first use (it reads the settings)."""
        from .meter import Meter

        return Meter(self.settings.meter)

    @property
    def root(self) -> Path:
        return self.store.root

    # --- listing and reading ---------------------------------------------------------------

    def workspace_keys(self) -> list[str]:
        return self.store.workspace_keys()

    def has_sessions(self, key: str) -> bool:
        return self.store.paths.sessions(key).is_dir()

    def exists(self, ref: SessionRef) -> bool:
        return self.store.exists(ref)

    def session_path(self, ref: SessionRef) -> Path:
        return self.store.paths.session_file(ref)

    def open(self, ref: SessionRef) -> OpenedSession:
        # The bytes are never held beside the parsed state (the file is hashed again as it is read): the
        # meter opens a session too, and a large file is then held once, as objects.
        from .summary import render_summary
        from .transcript import transcript_of

        loaded = self.store.load(ref, keep_data=False)
        size = loaded.version.size
        state = loaded.state
        return OpenedSession(ref, loaded.path, size, loaded.version.sha256, transcript_of(state),
                             list(loaded.warnings), loaded, summary_text=render_summary(state.summary),
                             history=_history_records(state))

    @staticmethod
    def _loaded(opened: OpenedSession) -> Loaded:
        assert isinstance(opened.native, Loaded)
        return opened.native

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        return self.store.read_meta(ref)

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        if not self.store.exists(ref):
            raise NotFoundError(f"No session {ref.session_id} in {self.store.workspace_name(ref.workspace_key)}.")
        return self.store.update_meta(ref, change)

    def workspace_path(self, key: str) -> str | None:
        return self.store.workspace_path(key)

    def record_workspace(self, key: str, folder: Path) -> None:
        self.store.record_workspace(key, folder)

    # --- handing a session to the agent ----------------------------------------------------

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        from ...agents import substitute

        return substitute(self.settings.agent.resume, session_id=ref.session_id, workspace=workspace or "")

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        """What Fractal's next save would drop, archived first for a real handoff, and the next
        turn's meter, from one read of the file."""
        from .codec import fractal_would_drop

        loaded = self.store.load(ref)
        meter = self.meter.measure(loaded.state, workspace)
        dropped = fractal_would_drop(loaded.state)
        if not dropped:
            return Handoff([], None, meter)
        if not for_exec:
            return Handoff([f"Fractal's next save would drop {' and '.join(dropped)}; resuming archives the file "
                            "first."], None, meter)
        assert loaded.data is not None
        snapshot = self.archive.put(ref, loaded.data, op="snapshot", reason="before handing to Fractal", drops=dropped)
        return Handoff([f"Fractal's next save would drop {' and '.join(dropped)}; the file was archived first "
                        f"(reprise restore {ref.session_id} --archive {snapshot.digest[:12]})."], snapshot, meter)

    # --- the context meter -----------------------------------------------------------------

    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None,
                      via: str = SEND) -> LiveMeter:
        """Fractal's next turn sends the same whichever way it goes: `via` changes nothing."""
        return self.meter.prepare(self._loaded(opened).state, workspace, model=model)

    def context_window(self, workspace: Path, model: str | None = None) -> int:
        name, _ = self.meter.resolve_model(workspace, model)
        return spec_for(name, self.settings.meter.models).input_budget

    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        """What a cached resume cost depends on besides the file: model, counting and AGENTS.md."""
        from .meter import METER_VERSION, agents_md_section

        name, _ = self.meter.resolve_model(workspace or fallback, model)
        spec = spec_for(name, self.settings.meter.models)
        agents = agents_md_section(workspace)[0] if workspace else ""
        agents_digest = hashlib.blake2b(agents.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        return f"{METER_VERSION}|{name}|{spec.encoding}|{spec.overhead}|{agents_digest}"

    def resume_cost(self, ref: SessionRef, workspace: Path | None, size: int, mtime_ns: int,
                    listed_context: int = 0) -> int | None:
        """The meter total of the next turn with an empty draft; None when the file is not the listed version."""
        try:
            loaded = self.store.load(ref, keep_data=False)
        except RepriseError:
            return None
        if (loaded.version.size, loaded.version.mtime_ns) != (size, mtime_ns):
            return None
        return self.meter.prepare(loaded.state, workspace).base_total

    # --- turns -------------------------------------------------------------------------------

    def check_sendable(self, ref: SessionRef, message: str, workspace: Path | None, *,
                       confirm_over: bool) -> MeterResult:
        from .liveness import running_turn

        loaded = self.store.load(ref, keep_data=False)
        if loaded.warnings:
            raise ProblemFileError(loaded.warnings[0], hint="Reprise will not rewrite this file; fix it or use Fractal")
        running = running_turn(self.store, loaded, now=time.time())
        if running is not None:
            raise PendingTurnError(f"A turn of session {ref.session_id} is still running ({running.why}).",
                                   hint="wait for it, or interrupt it")
        result = self.meter.measure(loaded.state, workspace, message)
        return result.sendable(confirm_over=confirm_over)

    def turn_backend(self, ref: SessionRef) -> Backend | None:
        """None: Fractal's turns run on the backend `--agent` or `[agent] backend` chooses (Reprise records
        the turn unless that backend is Fractal's own program, which saves it)."""
        return None

    def before_agent_writes(self, ref: SessionRef) -> tuple[int, str]:
        """Before an agent that saves the session itself runs: archive what it would drop; (turns, summary)."""
        from .codec import fractal_would_drop
        from .summary import render_summary

        loaded = self.store.load(ref)
        dropped = fractal_would_drop(loaded.state)
        if dropped:
            assert loaded.data is not None
            self.archive.put(ref, loaded.data, op="snapshot", reason="before a Fractal turn", drops=dropped)
        return len(loaded.state.turns), render_summary(loaded.state.summary)

    def begin_turn(self, ref: SessionRef, message: str) -> str:
        """Record the message as a pending turn, unless another turn started since the checks."""
        from .liveness import pending_turns
        from .turns import begin_turn

        def begin(state: SessionState) -> str:
            version = self.store.current_version(self.store.paths.session_file(ref))
            judged = pending_turns(self.store, ref, state, mtime=version.mtime_ns / 1e9 if version else None,
                                   now=time.time())
            if any(turn.live for turn in judged):
                raise PendingTurnError("Another turn of this session started a moment ago.", hint="wait for it")
            return begin_turn(state, message, utc_now_iso())
        return self._record(ref, begin)

    def turn_summary(self, ref: SessionRef) -> str:
        from .summary import render_summary

        return render_summary(self.store.load(ref, keep_data=False).state.summary)

    def finish_turn(self, ref: SessionRef, turn_id: str, outcome: TurnOutcome) -> None:
        from .turns import finish_turn

        _as_recorded(outcome)
        self._record(ref, lambda state: finish_turn(state, turn_id, outcome, utc_now_iso()))

    def after_agent_wrote(self, ref: SessionRef, turns_before: int, outcome: TurnOutcome) -> str | None:
        """The turn the agent saved; an interrupted agent's pending turn is marked interrupted."""
        from .turns import mark_interrupted, outcome_from_saved_turn

        _as_recorded(outcome)
        try:
            state = self.store.load(ref, keep_data=False).state
        except RepriseError:
            return None
        if len(state.turns) <= turns_before:
            return None
        newest = state.turns[-1]
        if outcome.unread and newest.agent is not None:
            outcome_from_saved_turn(outcome, state, newest.turn_id)
        if newest.agent is None and outcome.status in ("interrupted", "failed"):
            self._record(ref, lambda s: mark_interrupted(s, newest.turn_id, utc_now_iso()))
        return newest.turn_id

    def _record(self, ref: SessionRef, change: Callable[[SessionState], T]) -> T:
        """Read, change and write a session under its lock; archive the history it evicts."""
        from .turns import cap_history

        with self.store.lock(ref):
            loaded = self.store.load(ref)
            if loaded.warnings:
                raise ProblemFileError(loaded.warnings[0])
            result = change(loaded.state)
            evicted = cap_history(loaded.state, self.settings.history.max_turns)
            if evicted:
                payload = json.dumps({"session_id": ref.session_id,
                                      "history": [turn.model_dump(mode="json") for turn in evicted]}, indent=2)
                self.archive.put(ref, (payload + "\n").encode("ascii"), op="evict",
                                 anchors=[turn.turn_id for turn in evicted], count=len(evicted))
            self.store.save(ref, loaded.state, expected=loaded.version, locked=True)
        return result

    def remember_estimate(self, ref: SessionRef, turn_id: str, estimate: int) -> None:
        """Keep the estimate made before a turn, to compare with what the agent reports."""
        with contextlib.suppress(RepriseError, OSError):  # a comparison aid: the turn itself is saved
            self.store.update_meta(ref, lambda meta: meta.estimates.__setitem__(turn_id, estimate))

    def estimates_vs_measured(self, opened: OpenedSession, meta: SessionMeta) -> list[tuple[int, int, int]]:
        """(turn number, estimate before the turn, context the agent reported) for turns that have both."""
        estimates = meta.estimates
        state = self._loaded(opened).state
        pairs = []
        for number, turn in enumerate(state.turns, start=1):
            usage = turn.agent.usage if turn.agent else None
            if usage and usage.context_tokens and turn.turn_id in estimates:
                pairs.append((number, estimates[turn.turn_id], usage.context_tokens))
        return pairs

    def running(self, ref: SessionRef, *, now: float) -> PendingTurn | None:
        """The session's live pending turn, if any (core/sources/fractal/liveness.py)."""
        from .liveness import running_turn

        return running_turn(self.store, self.store.load(ref, keep_data=False), now=now)

    def stale_pending(self, opened: OpenedSession) -> list[PendingTurn]:
        from .liveness import stale_turns

        return stale_turns(self.store, self._loaded(opened), now=time.time())

    def mark_interrupted(self, ref: SessionRef, turn_ids: list[str]) -> list[str]:
        from .turns import mark_interrupted

        def mark(state: SessionState) -> list[str]:
            still_pending = {turn.turn_id for turn in state.turns if turn.agent is None}
            marked = [turn_id for turn_id in turn_ids if turn_id in still_pending]  # one may have finished since
            for turn_id in marked:
                mark_interrupted(state, turn_id, utc_now_iso())
            return marked
        return self._record(ref, mark)

    # --- new sessions, trimming and undoing ------------------------------------------------------

    def new_session(self, key: str, folder: Path, meta: SessionMeta) -> SessionRef:
        """Write a valid 0-turn session (Fractal resumes it)."""
        from .models import SessionState

        ref = SessionRef(key, uuid.uuid4().hex, "fractal")
        self.store.record_workspace(key, folder)
        self.store.save(ref, SessionState(session_id=ref.session_id), expected=None)
        self.store.write_meta(ref, meta)
        return ref

    def new_argv(self, ref: SessionRef, folder: Path) -> list[str] | None:
        """None: `new_session` wrote the session already; resuming it starts Fractal."""
        return None

    def write_session(self, transcript: Transcript, folder: Path, meta: SessionMeta, *, origin: SessionRef,
                      agent: str, model: str | None, dry_run: bool) -> WrittenSession:
        """Another agent's transcript as a new Fractal session (from_transcript.py). The details of
        the turns beyond Fractal's history of 20 (kept in its summary) are archived with it, in an
        entry a restore of the session reads as an empty trim, which undo (`u`) reaches first: the
        new session goes to the trash, as a fork Reprise wrote does."""
        from .from_transcript import session_of

        ref = SessionRef(workspace_key(folder), uuid.uuid4().hex, "fractal")
        data, beyond, notes = session_of(transcript, session_id=ref.session_id, agent=agent, now=datetime.now(UTC))
        written = WrittenSession(ref, self.store.paths.session_file(ref), data, len(transcript.turns), notes,
                                 sha256=digest(data))
        if beyond:
            notes.append(f"the {len(beyond)} oldest turns are in Fractal's summary only (its history keeps 20): "
                         f"their calls and outputs are archived with it (reprise archive list {ref.session_id})")
        if dry_run:
            return written
        records = {"summary": [], "summary_order": [], "history": [], "digest_turn": False,
                   "continued_turns": [asdict(turn) for turn in beyond]}
        continued = (meta.model_extra or {}).get("continued_from")
        info: dict[str, object] = {
            "forked_from": origin.session_id, "continued_from": continued, "result_sha256": written.sha256,
            "original_sha256": continued.get("sha256") if isinstance(continued, dict) else None}
        with audited(self.audit, written, origin):
            with self.store.lock(ref):
                self.store.record_workspace(ref.workspace_key, folder)
                self.archive.put(ref, json.dumps(records, ensure_ascii=False).encode("utf-8", "replace"),
                                 op="trim", anchors=None, **info)
                self.store.save_bytes(ref, data, expected=None, locked=True)
            self.store.write_meta(ref, meta)
        return written

    def trim_in_place(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
                      force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Trim the session file itself, the dropped records archived first."""
        return self._trim(ref, options, workspace, dry_run=dry_run, fork=False, force=force, model=model,
                          expected_sha256=expected_sha256)

    def fork(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
             force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Write the trimmed session as a new session of the same workspace; the original is unchanged."""
        return self._trim(ref, options, workspace, dry_run=dry_run, fork=True, force=force, model=model,
                          expected_sha256=expected_sha256)

    def _trim(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool, fork: bool,
              force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        if expected_sha256 is not None:
            current = self.store.current_version(self.store.paths.session_file(ref))
            if current is None:
                raise NotFoundError(f"No session {ref.session_id} in {self.store.workspace_name(ref.workspace_key)}.")
            if current.sha256 != expected_sha256:
                raise ChangedOnDiskError(f"Session {ref.session_id} changed since the preview; nothing was trimmed.",
                                         hint="open the trim dialog again")
        from .trim import TrimMeter, trim_session  # trimming's code is loaded by a trim, not by every listing

        meter = TrimMeter.from_meter(self.meter, workspace, model=model)
        return trim_session(self.store, self.archive, ref, options, meter=meter, dry_run=dry_run, fork=fork,
                            force=force, audit=self.audit)

    def restore(self, ref: SessionRef, *, archive_digest: str | None, all_trims: bool, dry_run: bool,
                force: bool) -> RestoreResult:
        """Undo a trim; undoing the trim that wrote a fork moves the fork to the trash (`--archive
        DIGEST` still puts that entry's records back into the fork)."""
        from .restore import fork_undone, restore_session  # loaded by an undo, not by every listing

        if archive_digest is None:
            current = self.store.current_version(self.store.paths.session_file(ref))
            entries = self.archive.checked_entries(ref)
            fork = fork_undone(entries, current.sha256, all_trims=all_trims) if current is not None else None
            if fork is not None and current is not None:
                written = next(entry.info.get("result_sha256") for entry in reversed(entries)
                               if entry.op in ("trim", "restore"))   # the file Reprise last wrote
                return self._trash_fork(ref, fork, changed=current.sha256 != written, dry_run=dry_run, force=force)
        return restore_session(self.store, self.archive, ref, digest_text=archive_digest, all_trims=all_trims,
                               dry_run=dry_run, force=force, audit=self.audit)

    def _trash_fork(self, ref: SessionRef, fork: ArchiveEntry, *, changed: bool, dry_run: bool,
                    force: bool) -> RestoreResult:
        """Move a fork Reprise wrote to the trash (`trash restore` brings it back); its bytes stay in
        its archive, and the session it was trimmed from was never changed. A fork changed since
        Reprise last wrote it (turns added) needs `force`: its new turns go to the trash with it."""
        from ...trimming import RestoreResult, RestoreStep, fork_to_trash

        path = self.store.paths.session_file(ref)
        try:
            data, _ = read_regular_file(path, self.store.root)
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        origin = str(fork.info.get("forked_from"))
        step = RestoreStep(fork.digest, "fork", "trashed")
        notes = [f"the fork is moved to Reprise's trash; {origin} was never changed"]
        why = "the fork changed since Reprise wrote it (its agent added turns)" if changed else None
        decided = fork_to_trash(ref, data, step, notes, why, dry_run=dry_run, force=force, path=path)
        if decided is not None:
            return decided
        self.remove(ref, force=force)
        self.audit.append(ref.workspace_key, "restore", session_id=ref.session_id, digests=[fork.digest],
                          result=f"fork moved to the trash ({origin} unchanged)")
        return RestoreResult(ref, data, b"", [step], True, False, None, notes)

    def can_undo_trim(self, ref: SessionRef) -> bool:
        from .restore import unrestored_trims

        current = self.store.current_version(self.store.paths.session_file(ref))
        return current is not None and bool(unrestored_trims(self.archive.entries(ref), current.sha256))

    # --- trash and moves ----------------------------------------------------------------------------

    def remove(self, ref: SessionRef, *, force: bool) -> TrashEntry:
        return self.trash.remove(ref, force=force)

    def trash_entries(self, keys: Iterable[str]) -> list[TrashEntry]:
        return self.trash.entries(keys)

    def trash_restore(self, ref: SessionRef) -> TrashEntry:
        return self.trash.restore(ref)

    def purge(self, keys: Iterable[str], *, confirmed: bool, older_than: float | None) -> PurgeResult:
        return self.trash.purge(keys, confirmed=confirmed, older_than=older_than)

    def prune(self, selection: PruneSelection, *, confirmed: bool) -> PruneResult:
        return self.trash.prune(selection, confirmed=confirmed)

    def relink(self, old_key: str, new_dir: str, *, force: bool) -> RelinkResult:
        from .trash import relink

        return relink(self.store, old_key, new_dir, force=force, audit=self.audit)

    # --- health --------------------------------------------------------------------------------------

    def health(self, *, clean: bool, stale_after: float) -> tuple[list[Problem], list[str], list[str], list[str]]:
        """(problems of Reprise's own files, leftover temp files, the ones cleaned, notes)."""
        keys = self.store.workspace_keys()
        self.audit.read(keys)
        problems = [*self.audit.problems, *self.archive.problems(keys)]
        temps: list[str] = []
        cleaned: list[str] = []
        now = time.time()
        for temp in self.store.temp_files():
            try:
                age = now - self.store.rooted.lstat(temp).st_mtime
            except (OSError, RepriseError):
                continue
            if clean and age > stale_after:
                self.store.rooted.unlink(temp)
                cleaned.append(str(temp))
            else:
                temps.append(str(temp))
        notes = []
        with contextlib.suppress(OSError):
            mode = self.store.root.stat().st_mode & 0o777
            if mode & 0o022:
                notes.append(f"The state root {self.store.root} is writable by other users (mode {mode:o}).")
        return problems, temps, cleaned, notes


def _history_records(state: SessionState) -> list[dict[str, object]]:
    """The history entries kept in the file, as `show --json` has always printed them."""
    return [{"turn_id": h.turn_id, "status": h.status, "user_message": h.user_message,
             "files_read": h.files_read, "files_modified": h.files_modified, "commands_run": h.commands_run,
             "error": h.error, "created_at": h.created_at, "updated_at": h.updated_at}
            for h in state.history]


def _as_recorded(outcome: TurnOutcome) -> None:
    """The outcome's usage as Fractal records it (every figure, unknown ones kept; None when invalid)."""
    from .turns import usage_model

    model = usage_model(outcome.usage)
    outcome.usage = model.model_dump(mode="json") if model is not None else None
