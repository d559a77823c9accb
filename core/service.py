"""The one API the command line and the TUI call: sessions in, models and Reprise errors out.

A `Service` is bound to a state root, a current workspace and the settings; it owns the
store, the archive and the catalog and never hands out paths built from raw strings.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from . import config as config_module
from .agents import TurnRequest, choose_backend, recorded_reply, substitute
from .archive import Archive, ArchiveEntry
from .audit import AuditLog, AuditRecord
from .catalog import Catalog
from .errors import (
    AgentError,
    AmbiguousError,
    ChangedOnDiskError,
    NotFoundError,
    OverWindowError,
    PendingTurnError,
    ProblemFileError,
    RepriseError,
    UsageError,
)
from .liveness import pending_turns as judge_pending
from .liveness import reprise_run, running_turn, stale_turns
from .paths import (
    SessionRef,
    cache_dir,
    guess_workspace_path,
    validate_session_id,
    validate_workspace_key,
    workspace_key,
)
from .problems import Problem
from .retention import PruneOptions, select_prune
from .rows import SessionRow
from .search_index import SearchHit
from .sources.fractal.codec import fractal_would_drop
from .sources.fractal.listing import FractalListing
from .sources.fractal.meter import (
    METER_VERSION,
    Meter,
    MeterResult,
    PreparedMeter,
    agents_md_section,
    spec_for,
)
from .sources.fractal.models import SessionState, TurnUsage, usage_totals, utc_now_iso
from .sources.fractal.restore import (
    RestoreResult,
    find_entry,
    restore_session,
    unrestored_trims,
)
from .sources.fractal.store import SessionMeta, Store
from .sources.fractal.summary import render_summary
from .sources.fractal.transcript import transcript_of
from .sources.fractal.trim import TrimMeter, TrimOptions, TrimResult, trim_session
from .sources.fractal.turns import (
    TurnOutcome,
    begin_turn,
    cap_history,
    finish_turn,
    mark_interrupted,
    outcome_from_saved_turn,
)
from .transcript import Transcript
from .trash import PruneResult, PurgeResult, RelinkResult, Trash, TrashEntry, relink

SORTS = ("updated", "turns", "size", "context", "cost")
MIN_PREFIX = 4
STALE_TEMP_S = 600


@dataclass(slots=True)
class Listing:
    rows: list[SessionRow]
    total: int
    scope: str
    sort: str
    limit: int | None

    def as_dict(self) -> dict:
        return {"sessions": [row.as_dict() for row in self.rows], "shown": len(self.rows), "total": self.total,
                "scope": self.scope, "sort": self.sort}


@dataclass(slots=True)
class SessionDetail:
    ref: SessionRef
    path: Path
    state: SessionState
    meta: SessionMeta
    workspace_path: str | None
    summary_text: str
    totals: TurnUsage
    size: int
    warnings: list[Problem]
    transcript: Transcript

    def as_dict(self) -> dict:
        history = self.state.history
        return {
            "session_id": self.ref.session_id,
            "workspace_key": self.ref.workspace_key,
            "workspace_path": self.workspace_path,
            "path": str(self.path),
            "title": self.meta.title,
            "pinned": self.meta.pinned,
            "size": self.size,
            "turns": len(self.state.turns),
            "summary": self.summary_text,
            "history": [
                {"turn_id": h.turn_id, "status": h.status, "user_message": h.user_message,
                 "files_read": h.files_read, "files_modified": h.files_modified,
                 "commands_run": h.commands_run, "error": h.error,
                 "created_at": h.created_at, "updated_at": h.updated_at}
                for h in history
            ],
            "usage": self.totals.model_dump(mode="json"),
            "warnings": [w.as_dict() for w in self.warnings],
        }


@dataclass(slots=True)
class WorkspaceInfo:
    key: str
    path: str | None
    path_source: str
    sessions: int
    last_activity: str | None

    def as_dict(self) -> dict:
        return {"key": self.key, "path": self.path, "path_source": self.path_source,
                "sessions": self.sessions, "last_activity": self.last_activity}


@dataclass(slots=True)
class DoctorReport:
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems and not self.temp_files

    def as_dict(self) -> dict:
        return {"problems": [p.as_dict() for p in self.problems], "warnings": [w.as_dict() for w in self.warnings],
                "temp_files": self.temp_files, "cleaned": self.cleaned, "notes": self.notes, "ok": self.ok}


@dataclass(slots=True)
class ResumePlan:
    ref: SessionRef
    argv: list[str]
    cwd: str
    notes: list[str]
    snapshot: ArchiveEntry | None = None
    meter: MeterResult | None = None

    @property
    def over_window(self) -> bool:
        return self.meter is not None and self.meter.state == "over"

    def as_dict(self) -> dict:
        return {"session_id": self.ref.session_id, "argv": self.argv, "cwd": self.cwd, "notes": self.notes,
                "snapshot": self.snapshot.digest if self.snapshot else None,
                "resume_cost": self.meter.total if self.meter else None,
                "window": self.meter.window if self.meter else None, "over_window": self.over_window}


def _as_reprise_run(send):
    """Hold a run record (core/liveness.py) while a turn is sent, so that its pending turn counts as
    live exactly while this process runs it."""
    @functools.wraps(send)
    def sending(self: Service, ref: SessionRef, *args, **kwargs):
        with reprise_run(self.store.paths, ref, timeout=self.settings.agent.timeout):
            return send(self, ref, *args, **kwargs)
    return sending


class Service:
    def __init__(self, loaded: config_module.LoadedSettings, *, workspace: Path | None = None,
                 cache: Path | None = None, parallel_scan: bool = False):
        self.loaded = loaded
        self.settings = loaded.settings
        self.store = Store(loaded.state_root)
        self.archive = Archive(self.store.paths)
        self.catalog = Catalog([FractalListing(self.store)], cache or cache_dir(), parallel=parallel_scan)
        self.meter = Meter(self.settings.meter)
        self.audit = AuditLog(self.store.paths)
        self.trash = Trash(self.store, self.audit)
        self.workspace = Path(workspace or os.getcwd()).expanduser().resolve()
        self.workspace_key = workspace_key(self.workspace)
        self._remembered = False

    @classmethod
    def from_environment(cls, *, state_dir: str | None = None, workspace: str | None = None,
                         config_path: Path | None = None, parallel_scan: bool = False) -> Service:
        loaded = config_module.load(state_dir=state_dir, config_path=config_path)
        return cls(loaded, workspace=Path(workspace) if workspace else None, parallel_scan=parallel_scan)

    @property
    def state_root(self) -> Path:
        return self.store.root

    # --- listing ---------------------------------------------------------------------------

    def list_sessions(self, *, all_workspaces: bool = False, sort: str = "updated", limit: int | None = None,
                      key: str | None = None) -> Listing:
        if sort not in SORTS:
            raise UsageError(f"Unknown sort {sort!r}; choose one of {', '.join(SORTS)}.")
        if limit is not None and limit < 1:
            raise UsageError("--limit must be at least 1.")
        keys = None if all_workspaces else [key or self.workspace_key]
        self._remember_current_workspace()
        rows = self.catalog.refresh(keys)
        if sort == "cost":
            self.fill_resume_costs(rows)
        sort_rows(rows, sort)
        scope = "all workspaces" if all_workspaces else f"workspace {key or self.workspace_key}"
        shown = rows if limit is None else rows[:limit]
        return Listing(shown, len(rows), scope, sort, limit)

    def load_details(self, rows: list[SessionRow]) -> None:
        """Read the listing fields of these rows (the ones to show or serialize), in one query."""
        self.catalog.load_details(rows)

    def search(self, query: str, *, all_workspaces: bool = False, key: str | None = None, limit: int = 200,
               should_stop=lambda: False) -> list[SearchHit]:
        """Full-text search over every turn's text of the sessions in scope."""
        keys = None if all_workspaces else [key or self.workspace_key]
        return self.catalog.search(query, keys, limit=limit, should_stop=should_stop)

    def take_notices(self) -> list[str]:
        """One line for each time the catalog cache was rebuilt or bypassed since the last call."""
        return self.catalog.take_notices()

    def _remember_current_workspace(self) -> None:
        """Record the folder behind the current key once its sessions exist (the key cannot be
        reversed, and the folder may move later)."""
        if self._remembered or not self.store.paths.sessions(self.workspace_key).is_dir():
            return
        self._remembered = True
        if self.store.workspace_path(self.workspace_key) != str(self.workspace):
            try:
                self.store.record_workspace(self.workspace_key, self.workspace)
            except (OSError, RepriseError):
                pass  # a store the user may read but not write still lists; the record is a convenience

    def workspaces(self) -> list[WorkspaceInfo]:
        rows = self.catalog.refresh(None)
        by_key: dict[str, list[SessionRow]] = {}
        for row in rows:
            by_key.setdefault(row.workspace_key, []).append(row)
        infos = []
        for key in self.store.workspace_keys():
            path, source = self.workspace_path_of(key)
            members = by_key.get(key, [])
            activities = [activity_time(row) for row in members]
            last = max(activities) if activities else None
            infos.append(WorkspaceInfo(key, path, source, len(members),
                                       time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(last)) if last else None))
        infos.sort(key=lambda info: info.last_activity or "", reverse=True)
        return infos

    def workspace_path_of(self, key: str) -> tuple[str | None, str]:
        if key == self.workspace_key:
            return str(self.workspace), "current directory"
        recorded = self.store.workspace_path(key)
        if recorded:
            return recorded, "recorded"
        guessed = guess_workspace_path(key)
        if guessed:
            return guessed, "recovered from the key"
        return None, "unknown"

    # --- naming sessions -------------------------------------------------------------------

    def resolve(self, text: str) -> SessionRef:
        """A full id or a unique prefix of at least 4 characters: this workspace first, then all."""
        if not isinstance(text, str) or not text:
            raise UsageError("A session id is required.")
        if "/" in text or "\\" in text or text in (".", ".."):
            validate_session_id(text)
        if len(text) > 128:
            validate_session_id(text)
        local = self.catalog.refresh([self.workspace_key])
        for rows in (local, None):
            if rows is None:
                rows = self.catalog.refresh(None)
            exact = [row for row in rows if row.file_id == text]
            if len(exact) == 1:
                return self._ref_of(exact[0])
            if len(exact) > 1:
                raise AmbiguousError(f"Session id {text} exists in {len(exact)} workspaces.",
                                     [f"{r.workspace_key}/{r.file_id}" for r in exact])
            if len(text) >= MIN_PREFIX:
                matches = [row for row in rows if row.file_id.startswith(text)]
                if len(matches) == 1:
                    return self._ref_of(matches[0])
                if len(matches) > 1:
                    raise AmbiguousError(
                        f"{text!r} matches {len(matches)} sessions; type more of the id.",
                        sorted(f"{r.file_id} ({r.workspace_key})" for r in matches)[:20])
        if len(text) < MIN_PREFIX:
            raise NotFoundError(f"No session with id {text!r}; a prefix needs at least {MIN_PREFIX} characters.")
        raise NotFoundError(f"No session matches {text!r} in any workspace.", hint="reprise list --all")

    def _ref_of(self, row: SessionRow) -> SessionRef:
        ref = row.ref
        if ref is None:
            raise UsageError(f"{row.path}: the file name is not a valid session id.", path=row.path)
        return ref

    def last_ref(self) -> SessionRef:
        """The most recently active session of the workspace (pins do not count here)."""
        rows = [row for row in self.list_sessions().rows if row.problem_code is None and row.ref is not None]
        if rows:
            return max(rows, key=lambda row: row.activity_ts).ref
        raise NotFoundError(f"No session in workspace {self.workspace} yet.", hint="reprise new")

    # --- one session ---------------------------------------------------------------------

    def show(self, ref: SessionRef) -> SessionDetail:
        loaded = self.store.load(ref)
        state, size = loaded.state, len(loaded.data)
        loaded.data = b""  # not needed here: a large file's bytes are freed before its summary is rendered
        return SessionDetail(ref, loaded.path, state, self.store.read_meta(ref),
                             self.workspace_path_of(ref.workspace_key)[0], render_summary(state.summary),
                             usage_totals(state), size, loaded.warnings, transcript_of(state))

    def new_session(self, title: str | None = None) -> SessionRef:
        """Write a valid 0-turn session in the current workspace (Fractal resumes it)."""
        ref = SessionRef(self.workspace_key, uuid.uuid4().hex)
        self.store.record_workspace(ref.workspace_key, self.workspace)
        self.store.save(ref, SessionState(session_id=ref.session_id), expected=None)
        self.store.write_meta(ref, SessionMeta(title=clean_title(title), created_at=utc_now_iso()))
        return ref

    def rename(self, ref: SessionRef, title: str) -> SessionMeta:
        self._require_session(ref)
        return self.store.update_meta(ref, lambda meta: setattr(meta, "title", clean_title(title)))

    def set_pinned(self, ref: SessionRef, pinned: bool) -> SessionMeta:
        self._require_session(ref)
        return self.store.update_meta(ref, lambda meta: setattr(meta, "pinned", pinned))

    def _require_session(self, ref: SessionRef) -> None:
        if not self.store.exists(ref):
            raise NotFoundError(f"No session {ref.session_id} in workspace {ref.workspace_key}.")

    # --- handing a session to the agent --------------------------------------------------

    def resume_plan(self, ref: SessionRef, *, for_exec: bool = True) -> ResumePlan:
        """The argv that resumes this session. For a real handoff (`for_exec`), the program must
        exist, and what Fractal's next save would drop is archived first."""
        loaded = self.store.load(ref)
        workspace, source = self.workspace_path_of(ref.workspace_key)
        if workspace is None:
            raise RepriseError(
                f"Reprise does not know the folder of workspace {ref.workspace_key}.",
                hint="run reprise once inside that folder, or `reprise relink` it")
        if not Path(workspace).is_dir():
            raise RepriseError(f"The folder of this session's workspace is gone: {workspace}.",
                               hint=f"if the project moved: reprise relink {workspace} NEW_FOLDER")
        argv = substitute(self.settings.agent.resume, session_id=ref.session_id, workspace=workspace)
        if for_exec and shutil.which(argv[0]) is None:
            raise AgentError(f"The agent program {argv[0]!r} was not found on PATH.",
                             hint="install it, or set [agent] resume in the config file "
                                  f"({self.loaded.config_path})")
        notes = []
        snapshot = None
        dropped = fractal_would_drop(loaded.state)
        if dropped and for_exec:
            snapshot = self.archive.put(ref, loaded.data, op="snapshot", reason="before handing to Fractal",
                                        drops=dropped)
            notes.append(f"Fractal's next save would drop {' and '.join(dropped)}; "
                         f"the file was archived first (reprise restore {ref.session_id} --archive {snapshot.digest[:12]}).")
        elif dropped:
            notes.append(f"Fractal's next save would drop {' and '.join(dropped)}; resuming archives the file first.")
        if for_exec and source in ("current directory", "recorded"):
            with contextlib.suppress(OSError, RepriseError):
                self.store.record_workspace(ref.workspace_key, Path(workspace))
        result = self.meter.measure(loaded.state, Path(workspace))
        if result.state == "over":
            notes.append(f"Its context ({result.total:,} tokens) is over the {result.model} window "
                         f"({result.window:,}); consider `reprise trim {ref.session_id} --fit`.")
        return ResumePlan(ref, argv, workspace, notes, snapshot, result)

    # --- the context meter ---------------------------------------------------------------

    def measure(self, ref: SessionRef, message: str = "", *, model: str | None = None) -> MeterResult:
        state = self.store.load(ref).state  # the file's bytes are not kept while the meter counts
        return self.meter.measure(state, self._meter_workspace(ref), message, model=model)

    def prepare_meter(self, ref: SessionRef, state: SessionState) -> PreparedMeter:
        """The meter of a loaded session, ready to measure messages as they are typed."""
        return self.meter.prepare(state, self._meter_workspace(ref))

    def session_path(self, ref: SessionRef) -> str:
        return str(self.store.paths.session_file(ref))

    def context_window(self, ref: SessionRef, model: str | None = None) -> int:
        """The window of the model the meter counts this session's turns for."""
        name, _ = self.meter.resolve_model(self._meter_workspace(ref) or self.workspace, model)
        return spec_for(name, self.settings.meter.models).window

    def _meter_workspace(self, ref: SessionRef) -> Path | None:
        path = self.workspace_path_of(ref.workspace_key)[0]
        return Path(path) if path else None

    def resume_cost_key(self, key: str, model: str | None = None) -> str:
        """What a cached resume cost depends on besides the file: model, counting and AGENTS.md."""
        path = self.workspace_path_of(key)[0]
        workspace = Path(path) if path else None
        name, _ = self.meter.resolve_model(workspace or self.workspace, model)
        spec = spec_for(name, self.settings.meter.models)
        agents = agents_md_section(workspace)[0] if workspace else ""
        agents_digest = hashlib.blake2b(agents.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
        return f"{METER_VERSION}|{name}|{spec.encoding}|{spec.overhead}|{agents_digest}"

    def fill_resume_costs(self, rows: list[SessionRow], *, should_stop=lambda: False,
                          progress=lambda: None) -> int:
        """Compute and cache the meter total of rows whose cached figure is missing or stale."""
        keys = {}
        done = []
        computed = 0
        for row in rows:
            if row.problem_code or row.ref is None or should_stop():
                continue
            wanted = keys.get(row.workspace_key) or keys.setdefault(row.workspace_key,
                                                                    self.resume_cost_key(row.workspace_key))
            if row.resume_cost is not None and row.resume_cost_key == wanted:
                continue
            try:
                loaded = self.store.load(row.ref)
            except RepriseError:
                continue
            if (loaded.version.size, loaded.version.mtime_ns) != (row.size, row.mtime_ns):
                continue
            cost = self.meter.prepare(loaded.state, self._meter_workspace(row.ref)).base_total
            row.resume_cost, row.resume_cost_key = cost, wanted
            done.append(row)
            computed += 1
            if len(done) >= 50:
                self.catalog.set_resume_costs(done)
                done = []
                progress()
        if done:
            self.catalog.set_resume_costs(done)
        return computed

    # --- turns ---------------------------------------------------------------------------

    def check_sendable(self, ref: SessionRef, message: str, *, confirm_over: bool = False) -> MeterResult:
        """Refuse, with the reason, a turn that should not be sent now; return the estimate."""
        if not message.strip():
            raise UsageError("The message is empty.")
        loaded = self.store.load(ref)
        if loaded.warnings:
            raise ProblemFileError(loaded.warnings[0], hint="Reprise will not rewrite this file; fix it or use Fractal")
        running = running_turn(self.store, loaded, now=time.time())
        if running is not None:
            raise PendingTurnError(f"A turn of session {ref.session_id} is still running ({running.why}).",
                                   hint="wait for it, or interrupt it")
        result = self.meter.measure(loaded.state, self._meter_workspace(ref), message)
        if result.state == "over" and not confirm_over:
            raise OverWindowError(f"The next turn would send {result.total:,} tokens, over the {result.window:,}-token "
                             f"window of {result.model}.", hint="trim the session first, or confirm to send anyway")
        return result

    @_as_reprise_run
    def send_turn(self, ref: SessionRef, message: str, *, agent: str | None = None, confirm_over: bool = False,
                  cancel: threading.Event | None = None, on_begin=lambda turn_id: None) -> SendResult:
        """Run one turn with the chosen backend and record it in Fractal's format."""
        backend = choose_backend(agent, self.settings.agent)
        if backend is None:
            raise AgentError("No agent backend is configured and the fractal program is not installed.",
                             hint="install fractal-rlm, or set [agent] backend = \"command\" with [agent] turn, "
                                  "or pass --agent echo to try Reprise offline")
        cancel = cancel or threading.Event()
        workspace_path = self.workspace_path_of(ref.workspace_key)[0]
        if workspace_path is None or not Path(workspace_path).is_dir():
            raise AgentError(f"The folder of workspace {ref.workspace_key} is unknown or gone.",
                             hint="relink the workspace first")
        estimate = self.check_sendable(ref, message, confirm_over=confirm_over).total
        workspace = Path(workspace_path)
        if backend.writes_session:
            loaded = self.store.load(ref)
            dropped = fractal_would_drop(loaded.state)
            if dropped:
                self.archive.put(ref, loaded.data, op="snapshot", reason="before a Fractal turn", drops=dropped)
            before = len(loaded.state.turns)
            request = TurnRequest(ref.session_id, workspace, message, render_summary(loaded.state.summary),
                                  self.settings.agent.timeout, estimate, self.settings.agent.max_reply_bytes)
            outcome = backend.run(request, cancel)
            turn_id = self._after_agent_wrote(ref, before, outcome)
        else:
            turn_id = self._record(ref, lambda state: self._begin_if_idle(ref, state, message))
            outcome = TurnOutcome("failed", error="Reprise stopped before the agent finished.")
            try:
                on_begin(turn_id)
                state = self.store.load(ref).state
                request = TurnRequest(ref.session_id, workspace, message, render_summary(state.summary),
                                      self.settings.agent.timeout, estimate, self.settings.agent.max_reply_bytes,
                                      self.archive.directory(ref), self.archive.root)
                outcome = recorded_reply(self.archive, ref, turn_id, backend.run(request, cancel))
            except Exception as exc:  # the turn is on disk as pending: it must end, whatever happened
                outcome = TurnOutcome("failed", error=f"{type(exc).__name__}: {exc}")
                if not isinstance(exc, RepriseError):
                    raise
            finally:
                self._record(ref, lambda state: finish_turn(state, turn_id, outcome, utc_now_iso()))
        if turn_id is not None:
            self._remember_estimate(ref, turn_id, estimate)
        return SendResult(ref, backend.name, turn_id, outcome, estimate)

    def _begin_if_idle(self, ref: SessionRef, state: SessionState, message: str) -> str:
        """Under the session's lock: refuse if another turn started since the checks."""
        version = self.store.current_version(self.store.paths.session_file(ref))
        judged = judge_pending(self.store, ref, state, mtime=version.mtime_ns / 1e9 if version else None,
                               now=time.time())
        if any(turn.live for turn in judged):
            raise PendingTurnError("Another turn of this session started a moment ago.", hint="wait for it")
        return begin_turn(state, message, utc_now_iso())

    def _record(self, ref: SessionRef, change):
        """Read, change and write a session under its lock; archive the history it evicts."""
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

    def _after_agent_wrote(self, ref: SessionRef, turns_before: int, outcome: TurnOutcome) -> str | None:
        """The turn the agent saved; an interrupted agent's pending turn is marked interrupted."""
        try:
            state = self.store.load(ref).state
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

    def _remember_estimate(self, ref: SessionRef, turn_id: str, estimate: int) -> None:
        """Keep the estimate made before a turn, to compare with what the agent reports."""
        with contextlib.suppress(RepriseError, OSError):  # a comparison aid: the turn itself is saved
            self.store.update_meta(ref, lambda meta: meta.estimates.__setitem__(turn_id, estimate))

    def record_signal(self, ref: SessionRef, signal_name: str, turn_id: str | None, status: str | None) -> None:
        """The audit line of a turn ended by a signal to Reprise (the only trace when no terminal is left)."""
        with contextlib.suppress(OSError, ValueError):
            self.audit.append(ref.workspace_key, "interrupt", session_id=ref.session_id,
                              options={"signal": signal_name, "turn_id": turn_id}, result=status or "not started")

    def estimates_vs_measured(self, ref: SessionRef) -> list[tuple[int, int, int]]:
        """(turn number, estimate before the turn, context the agent reported) for turns that have both."""
        meta = self.store.read_meta(ref)
        estimates = meta.estimates
        state = self.store.load(ref).state
        pairs = []
        for number, turn in enumerate(state.turns, start=1):
            usage = turn.agent.usage if turn.agent else None
            if usage and usage.context_tokens and turn.turn_id in estimates:
                pairs.append((number, estimates[turn.turn_id], usage.context_tokens))
        return pairs

    def stale_pending(self, ref: SessionRef) -> list[tuple[int, str, str | None]]:
        """(turn number, turn id, created_at) of the pending turns whose agent is gone (liveness.py)."""
        stale = stale_turns(self.store, self.store.load(ref), now=time.time())
        return [(turn.number or 0, turn.turn_id, turn.created_at) for turn in stale]

    def mark_stale_interrupted(self, ref: SessionRef) -> list[str]:
        stale = [turn_id for _, turn_id, _ in self.stale_pending(ref)]

        def mark(state: SessionState) -> list[str]:
            still_pending = {turn.turn_id for turn in state.turns if turn.agent is None}
            marked = [turn_id for turn_id in stale if turn_id in still_pending]  # one may have finished since
            for turn_id in marked:
                mark_interrupted(state, turn_id, utc_now_iso())
            return marked

        return self._record(ref, mark) if stale else []

    # --- trimming and undoing ------------------------------------------------------------

    def trim(self, ref: SessionRef, options: TrimOptions, *, dry_run: bool = False, fork: bool = False,
             force: bool = False, model: str | None = None, expected_sha256: str | None = None) -> TrimResult:
        """Preview, then (unless dry_run) archive and write the trimmed session, in place or as a fork.
        `expected_sha256` applies a previewed plan only to the file it was previewed on."""
        if expected_sha256 is not None and self.store.load(ref).version.sha256 != expected_sha256:
            raise ChangedOnDiskError(f"Session {ref.session_id} changed since the preview; nothing was trimmed.",
                                     hint="open the trim dialog again")
        meter = TrimMeter.from_meter(self.meter, self._meter_workspace(ref), model=model)
        return trim_session(self.store, self.archive, ref, options, meter=meter, dry_run=dry_run, fork=fork,
                            force=force, audit=self.audit)

    def restore(self, ref: SessionRef, *, archive_digest: str | None = None, all_trims: bool = False,
                dry_run: bool = False, force: bool = False) -> RestoreResult:
        return restore_session(self.store, self.archive, ref, digest_text=archive_digest, all_trims=all_trims,
                               dry_run=dry_run, force=force, audit=self.audit)

    def archive_entries(self, ref: SessionRef) -> list[ArchiveEntry]:
        return self.archive.entries(ref)

    def archive_bytes(self, ref: SessionRef, digest_text: str) -> tuple[ArchiveEntry, bytes]:
        """An archive entry named by its digest or a prefix of it, and its verified bytes."""
        prefix = digest_text.strip().lower()
        entry = find_entry([e for e in self.archive.entries(ref) if e.digest.startswith(prefix)], digest_text)
        return entry, self.archive.read(ref, entry.digest)

    def can_undo_trim(self, ref: SessionRef) -> bool:
        """Whether `restore` without options has a trim of this session to undo."""
        loaded = self.store.load(ref)
        return bool(unrestored_trims(self.archive.entries(ref), loaded.version.sha256))

    # --- trash, retention, relink, audit ---------------------------------------------------

    def remove(self, ref: SessionRef, *, force: bool = False) -> TrashEntry:
        return self.trash.remove(ref, force=force)

    def _keys(self, all_workspaces: bool) -> list[str]:
        return self.store.workspace_keys() if all_workspaces else [self.workspace_key]

    def trash_entries(self, *, all_workspaces: bool = False) -> list[TrashEntry]:
        return self.trash.entries(self._keys(all_workspaces))

    def resolve_trashed(self, text: str) -> SessionRef:
        """A trashed session by full id or unique prefix: this workspace first, then all."""
        validate_session_id(text) if ("/" in text or len(text) > 128) else None
        for keys in ([self.workspace_key], self.store.workspace_keys()):
            entries = self.trash.entries(keys)
            exact = [e.ref for e in entries if e.ref.session_id == text]
            matches = exact or ([e.ref for e in entries if e.ref.session_id.startswith(text)]
                                if len(text) >= MIN_PREFIX else [])
            if len(matches) == 1:
                return matches[0]
            if len(matches) > 1:
                raise AmbiguousError(f"{text!r} matches {len(matches)} trashed sessions.",
                                     [f"{r.session_id} ({r.workspace_key})" for r in matches])
        raise NotFoundError(f"No trashed session matches {text!r}.", hint="reprise trash list --all")

    def trash_restore(self, ref: SessionRef) -> TrashEntry:
        return self.trash.restore(ref)

    def purge(self, *, all_workspaces: bool = False, older_than: float | None = None,
              confirmed: bool = False) -> PurgeResult:
        return self.trash.purge(self._keys(all_workspaces), confirmed=confirmed, older_than=older_than)

    def prune(self, options: PruneOptions, *, all_workspaces: bool = False, confirmed: bool = False) -> PruneResult:
        rows = self.catalog.refresh(None if all_workspaces else [self.workspace_key])
        self.catalog.load_details(rows)
        now = time.time()

        def running(ref: SessionRef) -> str | None:
            try:
                turn = running_turn(self.store, self.store.load(ref), now=now)
            except RepriseError:
                return None  # unreadable now: the move itself reports it
            return f"a live pending turn ({turn.turn_id}: {turn.why})" if turn else None

        selection = select_prune(rows, options, now=now, running=running)
        return self.trash.prune(selection, confirmed=confirmed)

    def relink(self, old: str, new_dir: str, *, force: bool = False) -> RelinkResult:
        """Move the sessions of a moved repository to its new folder's key. OLD is a key or the old path."""
        try:
            old_key = validate_workspace_key(old)
        except RepriseError:
            old_key = workspace_key(old)
        return relink(self.store, old_key, new_dir, force=force, audit=self.audit)

    def audit_records(self, *, all_workspaces: bool = True) -> list[AuditRecord]:
        return self.audit.read(self._keys(all_workspaces))

    def audit_problems(self) -> list[Problem]:
        """The lines and logs the last `audit_records` skipped, each named by file and line."""
        return list(self.audit.problems)

    # --- health --------------------------------------------------------------------------

    def doctor(self, *, clean: bool = False) -> DoctorReport:
        report = DoctorReport()
        rows = self.catalog.refresh(None)
        self.catalog.load_details(rows)
        for row in rows:
            if row.problem_code:
                report.problems.append(Problem(row.path, row.problem_code, row.problem_message or "",
                                               row.problem_field))
            elif row.fields.warning:
                report.warnings.append(Problem(row.path, "warning", row.fields.warning, severity="warning"))
        report.problems.extend(self.catalog.scan_problems)
        keys = self.store.workspace_keys()
        self.audit.read(keys)
        report.problems.extend([*self.audit.problems, *self.archive.problems(keys)])
        now = time.time()
        for temp in self.store.temp_files():
            try:
                age = now - self.store.rooted.lstat(temp).st_mtime
            except (OSError, RepriseError):
                continue
            if clean and age > STALE_TEMP_S:
                self.store.rooted.unlink(temp)
                report.cleaned.append(str(temp))
            else:
                report.temp_files.append(str(temp))
        root_mode = _mode(self.store.root)
        if root_mode is not None and root_mode & 0o022:
            report.notes.append(f"The state root {self.store.root} is writable by other users (mode {root_mode:o}).")
        return report

    def config_report(self) -> list[tuple[str, object, str]]:
        return config_module.effective(self.loaded)


@dataclass(slots=True)
class SendResult:
    ref: SessionRef
    backend: str
    turn_id: str | None
    outcome: TurnOutcome
    estimate: int | None

    def as_dict(self) -> dict:
        o = self.outcome
        return {"session_id": self.ref.session_id, "backend": self.backend, "turn_id": self.turn_id,
                "status": o.status, "response": o.response, "files_read": o.files_read,
                "files_modified": o.files_modified, "commands_run": o.commands_run, "error": o.error,
                "usage": o.usage.model_dump(mode="json") if o.usage else None, "estimate_before_turn": self.estimate,
                "notes": o.notes}


def clean_title(title: str | None) -> str | None:
    if title is None:
        return None
    cleaned = " ".join("".join(ch if ch.isprintable() else " " for ch in title).split())
    return cleaned[:200] or None


def activity_time(row: SessionRow) -> float:
    """Seconds since the epoch of a row's last activity (its newest turn time, else the file's mtime)."""
    return max(row.activity_ts, 0.0)


def sort_rows(rows: list[SessionRow], sort: str) -> None:
    """Pinned first, then by the chosen figure, largest or newest first."""
    if sort == "updated":
        rows.sort(key=lambda r: (r.pinned, r.activity_ts), reverse=True)
        return
    keys = {
        "turns": lambda r: r.turns,
        "size": lambda r: r.size,
        "context": lambda r: r.context_tokens,
        "cost": lambda r: r.resume_cost if r.resume_cost is not None else -1,
    }
    figure = keys[sort]
    rows.sort(key=lambda r: (r.pinned, figure(r), r.activity_ts), reverse=True)


def _mode(path: Path) -> int | None:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        return None
