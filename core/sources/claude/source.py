"""Claude Code's stores as a session source: list, read, search, meter and resume its sessions.

Reprise never writes into a Claude Code root. Its own files of Claude sessions (titles, pins, the
archive of kept copies) live in Reprise's data folder, under `claude/` folders (`OwnPaths`).
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import (
    ConflictError,
    NotFoundError,
    PendingTurnError,
    ProblemFileError,
    RepriseError,
)
from ...meter import RESUME, SEND, LiveMeter, MeterResult
from ...paths import OwnPaths, SessionRef, workspace_key
from ...problems import Problem
from ...rooted import Root, write_new
from ...session_files import ReadProblem, read_regular_file
from ...times import parse_time
from ...transcript import Transcript
from ..agent_store import AgentStoreSource, recorded_folder
from ..base import AgentDeletion, Handoff, KeepReport, OpenedSession
from ..kept_listing import KEPT
from ..roles import Creator, Diagnosed, Forking, Keeping, Live, Metered, Sender, SessionWriter, Swept, Trashing
from ..session_writing import WrittenSession
from .fields import ClaudeFields, ListingFold
from .keep import keep, kept_path, kept_session, kept_sessions, read_kept
from .layout import SUFFIX, ClaudeRoot, check_session_id, slug
from .listing import NAME, ClaudeListing, folder_guess
from .records import Record, parse_lines
from .retention import RetentionPolicy
from .spec import SPEC
from .transcript import read_transcript
from .windows import MODEL_WINDOWS

# What only metering, forking or sending needs is imported there, and so are the agents' runs, the
# liveness checks and the trash: a listing never loads them.
if TYPE_CHECKING:
    from ...agents import Backend
    from ...config import Settings
    from ...session_meta import SessionMeta
    from ...trimming import TrimOptions, TrimPlan, TrimResult
    from .fork import ForkState
    from .meter import ContextNow, MeterInputs
    from .trash import ClaudeTrash

METER_VERSION = "claude-2"
MAX_SIDECAR_BYTES = 1 << 30


@dataclass(slots=True)
class ClaudeSession:
    """What Reprise read of one Claude Code session file (the source's own model)."""

    records: list[Record]
    context: ContextNow
    fields: ClaudeFields
    meter: MeterInputs


def _fields_of(records: list[Record]) -> ClaudeFields:
    return _fold_of(records).result()


def _fold_of(records: list[Record]) -> ListingFold:
    fold = ListingFold()
    fold.feed(records)
    return fold


class ClaudeSource(AgentStoreSource, Metered, Sender, Creator, Forking, Trashing, Swept, Keeping, Live, Diagnosed,
                   SessionWriter):
    spec = SPEC
    name = SPEC.name
    label = SPEC.label
    cost_label = SPEC.cost_label
    resume_setting = SPEC.resume_setting
    rename_note = SPEC.rename_note

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.roots: list[ClaudeRoot] = [ClaudeRoot(Path(root)) for root in roots]
        self.claude_listing = ClaudeListing(roots, OwnPaths(data, NAME))
        super().__init__(settings, self.claude_listing)
        self._policies: dict[Path, tuple[RetentionPolicy, Problem | None]] = {}
        self._sweeps: dict[str, RetentionPolicy | None] = {}   # {folder of session files: its root's policy}

    # --- finding and reading -----------------------------------------------------------------

    def _candidates(self, session_id: str) -> list[Path]:
        """The session files named by this id: where the catalog's rows of it say, else (a file the
        last listing did not see) looked for in every project folder, skipping one that cannot be
        entered (the listing names it): it holds no file that can be read anyway."""
        check_session_id(session_id)
        if self.cataloged is not None:
            found = [Path(path) for path in self.cataloged(session_id)
                     if not Path(path).is_relative_to(self.own_paths.root) and _is_file(path)]
            if found:
                return found
        return [path for group in self.claude_listing.groups()
                if group != KEPT and _is_file(path := Path(group) / f"{session_id}{SUFFIX}")]

    def _locate(self, ref: SessionRef) -> Path | None:
        """The session's file: the one named by its id whose records name the ref's folder."""
        candidates = self._candidates(ref.session_id)
        if len(candidates) <= 1:
            return candidates[0] if candidates else None
        for path in candidates:   # the same id under two roots or projects: the folder tells them apart
            try:
                data, _ = read_regular_file(path, self.claude_listing.root_of(path))
            except (OSError, ReadProblem, RepriseError):
                continue
            # the folder the listing keyed it by: the one it records, else the one its project folder suggests
            folder = recorded_folder(_fields_of(parse_lines(data, 0).records).cwd) or folder_guess(str(path.parent))
            if workspace_key(folder) == ref.workspace_key:
                return path
        return candidates[0]

    def exists(self, ref: SessionRef) -> bool:
        return self._locate(ref) is not None or kept_session(self.archive, ref) is not None

    def _new_path(self, ref: SessionRef) -> Path:
        return self.roots[0].projects / f"{ref.session_id}{SUFFIX}" if self.roots else Path(ref.session_id)

    def open(self, ref: SessionRef) -> OpenedSession:
        return self._open_at(ref, self._locate(ref))

    def _open_at(self, ref: SessionRef, path: Path | None) -> OpenedSession:
        """The session read from its file at `path` (as `_locate` found it), or from its kept copy."""
        from .meter import ContextNow, meter_inputs

        kept_note: list[Problem] = []
        if path is None:
            kept = kept_session(self.archive, ref)
            if kept is None:
                raise NotFoundError(f"No Claude Code session {ref.session_id} in any root "
                                    f"({', '.join(str(root.path) for root in self.roots)}).")
            path = kept_path(self.archive, ref)
            data = read_kept(self.archive, ref)
            kept_note.append(Problem(str(kept.original), "deleted_by_agent",
                                     f"Claude Code deleted {kept.original}; this is the copy Reprise kept at "
                                     f"{kept.kept_at}", severity="warning"))
        else:
            data = self._read(path)
        parsed = parse_lines(data, 0)
        subagents = self._subagent_count(path)
        transcript, notes = read_transcript(parsed.records, subagents=subagents)
        warnings = kept_note + [Problem(str(path), "skipped_line", warning) for warning in parsed.warnings]
        if parsed.end < len(data):
            warnings.append(Problem(str(path), "truncated_line", f"the last line ({len(data) - parsed.end:,} bytes) "
                                    "is incomplete, probably being written; it was skipped"))
        warnings.extend(Problem(str(path), "note", note) for note in notes)
        sha256 = hashlib.sha256(data).hexdigest()
        size = len(data)
        fold = _fold_of(parsed.records)
        found = fold.result()
        inputs = meter_inputs(data, parsed.records, found.version, fold.chain)
        del data
        transcript.recorded_cost = found.usage.cost
        context = self._fork_context(ref, sha256, ContextNow(
            found.context_tokens, found.turns, "compaction" if found.context_basis == "compact_boundary" else "reply",
            found.model))
        return OpenedSession(ref, path, size, sha256, transcript, warnings,
                             ClaudeSession(parsed.records, context, found, inputs), branch=found.branch,
                             agent_title=found.title if found.title_source in ("custom-title", "ai-title") else None)

    def _read(self, path: Path) -> bytes:
        try:
            data, _ = read_regular_file(path, self.claude_listing.root_of(path))
        except FileNotFoundError:
            raise NotFoundError(f"The Claude Code session file {path} disappeared.", path=path) from None
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        return data

    @staticmethod
    def _subagent_count(path: Path) -> int:
        folder = path.with_suffix("") / "subagents"
        try:
            return sum(1 for child in folder.iterdir() if child.name.endswith(SUFFIX))
        except OSError:
            return 0

    # --- resuming ----------------------------------------------------------------------------

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        from ...agents import substitute

        return substitute(self.settings.sources.claude.resume, session_id=ref.session_id, workspace=workspace or "")

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        path = self._locate(ref)
        if path is None:
            kept = kept_session(self.archive, ref)
            where = f" Reprise's copy of it is {kept_path(self.archive, ref)}" if kept is not None else ""
            original = f" to {kept.original}" if kept is not None else ""
            raise RepriseError(f"Claude Code deleted this session's file, so it cannot resume it.{where}.",
                               hint=f"copy the kept file back{original} to resume it")
        return self._handoff(ref, self._open_at(ref, path), workspace, [], one="file")

    def writer(self, ref: SessionRef, opened: OpenedSession | None = None, *, now: float | None = None) -> str | None:
        """Why the session counts as being written now (a recent record, a live Claude Code), or None."""
        from .liveness import writer_of

        if opened is not None:   # the file it was read from (a kept copy is nobody's to write)
            path: Path | None = None if opened.path.is_relative_to(self.own_paths.root) else opened.path
        else:
            path = self._locate(ref)
        if path is None:
            return None
        found = self._session(opened).fields if opened is not None else None
        newest = parse_time(found.last_activity) if found is not None and found.last_activity else None
        written = writer_of(path, newest.timestamp() if newest else None, time.time() if now is None else now,
                            session_id=ref.session_id, claude_root=self.claude_listing.root_of(path))
        return written.why if written is not None else None

    # --- Claude Code's age sweep, and keeping a copy out of its reach ---------------------------

    def policy(self, root: Path) -> tuple[RetentionPolicy, Problem | None]:
        if root not in self._policies:
            self._policies[root] = RetentionPolicy.read(root)
        return self._policies[root]

    def deletion(self, path: str, mtime_ns: int, now: float) -> AgentDeletion | None:
        policy = self._sweep_of(path)
        return None if policy is None else policy.deletion(mtime_ns / 1e9, now)

    def _sweep_of(self, path: str) -> RetentionPolicy | None:
        """The policy of the sweep that reaches the file (None: none does), looked up once a folder."""
        folder = path.rpartition("/")[0]
        if folder not in self._sweeps:
            try:
                root = self.claude_listing.root_of(path)
            except RepriseError:
                root = None
            # A kept copy (under Reprise's own root) is out of the sweep's reach.
            self._sweeps[folder] = None if root is None or root == self.own_paths.root else self.policy(root)[0]
        return self._sweeps[folder]

    def keep(self, ref: SessionRef) -> KeepReport:
        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Claude Code session file {ref.session_id} to keep (it may only be kept already).")
        root = self.claude_listing.root_of(path)
        with self.own_files.lock(ref):
            result = keep(self.archive, ref, path, root)
        return KeepReport(ref, result.session.digest, result.session.size, [f.part for f in result.added],
                          [f.part for f in result.unchanged], result.problems)

    def kept_versions(self) -> dict[SessionRef, tuple[int, int]]:
        return {kept.ref: (kept.session.size, kept.session.mtime_ns or -1)
                for kept in kept_sessions(self.own_paths).sessions}

    def health(self, *, clean: bool, stale_after: float) -> tuple[list[Problem], list[str], list[str], list[str]]:
        """Retention settings that cannot be read, damaged keep records, and the sessions Claude Code's
        sweep deletes within the week (not kept)."""
        problems: list[Problem] = []
        notes: list[str] = []
        now = time.time()
        kept = {(kept.ref.session_id, kept.session.size, kept.session.mtime_ns)
                for kept in kept_sessions(self.own_paths).sessions}
        for root in self.roots:
            policy, problem = self.policy(root.path)
            if problem is not None:
                problems.append(problem)
            at_risk = []
            for group in self.claude_listing.groups():
                if group == KEPT or not group.startswith(f"{root.projects}/"):
                    continue
                for session_id, (size, mtime_ns) in self.claude_listing.file_stats(group).stats.items():
                    if mtime_ns > 0 and (session_id, size, mtime_ns) not in kept \
                            and policy.at_risk(mtime_ns / 1e9, now):
                        at_risk.append(f"{session_id} ({policy.phrase(mtime_ns / 1e9, now)})")
            if at_risk:
                notes.append(f"{len(at_risk)} Claude Code session(s) under {root.path} are deleted by Claude Code "
                             f"within a week ({policy.days} days after their last change, {policy.origin}); "
                             f"`reprise keep ID` copies one out of its reach: " + ", ".join(sorted(at_risk)[:20])
                             + (" …" if len(at_risk) > 20 else ""))
        problems.extend(self.claude_listing.kept_problems)
        return problems, [], [], notes

    # --- the meter ---------------------------------------------------------------------------

    @staticmethod
    def _session(opened: OpenedSession) -> ClaudeSession:
        assert isinstance(opened.native, ClaudeSession)
        return opened.native

    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None,
                      via: str = SEND) -> LiveMeter:
        from .meter import ClaudeMeter

        session = self._session(opened)
        return ClaudeMeter(self.settings.meter, self.counter, session.context, session.meter, model=model, via=via)

    def context_window(self, workspace: Path, model: str | None = None) -> int | None:
        from .meter import ClaudeMeter, ContextNow

        return ClaudeMeter(self.settings.meter, self.counter, ContextNow(None, 0, "reply", None),
                           model=model).with_message("").window

    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        return f"{METER_VERSION}|{RESUME}|{len(MODEL_WINDOWS)}"

    # --- trash and prune (issue 14) ---------------------------------------------------------------

    def _trash(self) -> ClaudeTrash:
        from .trash import ClaudeTrash

        return ClaudeTrash(self.own_paths, self.audit, self.own_files.lock)

    def _root_path(self, path: Path) -> Path:
        return self.claude_listing.root_of(path)

    def _missing_note(self, ref: SessionRef) -> str:
        return " (Reprise keeps only a copy of it: Claude Code deleted its file)" \
            if kept_session(self.archive, ref) is not None else ""

    def _protected_reason(self, ref: SessionRef, refusal: ConflictError) -> str:
        return f"Claude Code may be writing it ({self.writer(ref)})"

    # --- new and send (issue 14) ---

    def turn_backend(self, ref: SessionRef) -> Backend | None:
        """Every turn of a Claude Code session runs `[sources.claude] send`, whatever `--agent` says."""
        from .turns import ClaudeSendBackend

        path = self._locate(ref)
        root = self.claude_listing.root_of(path) if path is not None else self.roots[0].path
        return ClaudeSendBackend(self.settings.sources.claude.send, root)

    def check_sendable(self, ref: SessionRef, message: str, workspace: Path | None, *,
                       confirm_over: bool) -> MeterResult:
        """The meter with the message; refused when the file is gone, when a Claude Code process is
        running the session (an interactive one, or another send), or over the window unless confirmed.
        A record written a moment ago alone does not refuse: it is the previous turn Reprise sent."""
        from .liveness import scan_processes

        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"Claude Code deleted session {ref.session_id}'s file, so no turn can be sent to it.",
                                hint="copy the kept file back to its folder to continue it")
        opened = self.open(ref)
        scan = scan_processes(roots=[self.claude_listing.root_of(path)])
        running = scan.writer(path, session_id=ref.session_id)
        if running is not None:
            raise PendingTurnError(f"Claude Code may be running session {ref.session_id} now ({running.why}).",
                                   hint="finish or leave that Claude Code first")
        result = self.prepare_meter(opened, workspace).with_message(message)
        return result.sendable(confirm_over=confirm_over)

    def _measured(self, opened: OpenedSession) -> tuple[int | None, int]:
        context = self._session(opened).context
        return context.tokens, context.turn

    def new_session(self, key: str, folder: Path, meta: SessionMeta) -> SessionRef:
        """A session id for Claude Code to start (`new_argv`), with Reprise's title of it kept ahead
        of the file Claude Code writes on its first turn."""
        return self._titled(self._fresh_ref(key), meta)

    def new_argv(self, ref: SessionRef, folder: Path) -> list[str] | None:
        from .turns import new_argv

        return new_argv(self.settings.sources.claude.new, ref.session_id, folder)

    # --- a session of another agent written as Claude Code's (issue 30) ------------------------

    def write_session(self, transcript: Transcript, folder: Path, meta: SessionMeta, *, origin: SessionRef,
                      agent: str, model: str | None, dry_run: bool) -> WrittenSession:
        """The transcript as a new session file in the folder's project folder of the first root."""
        from .from_transcript import session_file_of

        ref = self._fresh_ref(workspace_key(folder))
        path = self.roots[0].session_file(slug(str(folder)), ref.session_id)
        data, notes = session_file_of(transcript, session_id=ref.session_id, folder=str(folder),
                                      model=model or "unknown", agent=agent, now=datetime.now(UTC))
        written = WrittenSession(ref, path, data, len(transcript.turns), notes)
        return self._write_new(written, meta, origin, dry_run=dry_run)

    def _fresh_ref(self, key: str) -> SessionRef:
        """A new session id no root holds yet."""
        for _ in range(8):
            ref = SessionRef(key, str(uuid.uuid4()), NAME)
            if not self._candidates(ref.session_id):
                return ref
        raise RepriseError("Could not choose a new Claude Code session id.")   # pragma: no cover - 8 uuid4 clashes

    # --- trim as a fork (issue 14) -------------------------------------------------------------

    def fork(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
             force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Preview or write a trimmed copy of the session as a new session beside it (Claude Code's own
        file is never rewritten), archived (op `fork`; the original's bytes, which
        capped text points at, in the original's archive, op `fork-original`), titled "<title> (trimmed)"
        with lineage."""
        from .fork import new_fork_id, plan_fork

        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Claude Code session file {ref.session_id} to fork (a kept copy is not forked).")
        data = self._read(path)
        self._refuse_changed(ref, data, expected_sha256, path)
        found = _fields_of(parse_lines(data, 0).records)
        fork_id = new_fork_id()
        plan = plan_fork(data, options, fork_id=fork_id, context_before=found.context_tokens,
                         count=self._counting(model, found.model, "claude"))
        fork_path = path.parent / f"{fork_id}{SUFFIX}"
        return self._fork_result(ref, plan, data, fork_id, self.writer(ref), options=options, dry_run=dry_run,
                                 force=force, title=found.title or f"session {ref.session_id[:8]}", path=path,
                                 fork_path=fork_path,
                                 beside=lambda root: self._copy_sidecars(root, path, fork_path, _fork_state(plan)))

    @staticmethod
    def _copy_sidecars(root: Root, path: Path, fork_path: Path, state: ForkState) -> list[str]:
        """The kept turns' subagent transcripts (with the fork's sessionId) and `tool-results/` files,
        copied into the fork's own sidecar folder; what could not be copied, as notes."""
        from .fork import rewrite_subagent

        old, new = path.with_suffix(""), fork_path.with_suffix("")
        wanted: list[tuple[Path, Path, bool]] = []
        for agent_id in state.agent_ids:
            for suffix, rewrite in ((SUFFIX, True), (".meta.json", False)):
                name = f"agent-{agent_id}{suffix}"
                wanted.append((old / "subagents" / name, new / "subagents" / name, rewrite))
        wanted += [(old / "tool-results" / name, new / "tool-results" / name, False) for name in state.tool_results]
        notes = []
        for source, target, rewrite in wanted:
            try:
                data = root.read(source, MAX_SIDECAR_BYTES)
            except FileNotFoundError:
                continue   # a kept turn names it, Claude Code did not keep it
            except (OSError, RepriseError) as exc:
                notes.append(f"the sidecar {source} could not be read ({exc}); the fork has none")
                continue
            if rewrite:
                data = rewrite_subagent(data, state.fork_id)
            with root.parent(target, create=True) as (fd, name):
                write_new(fd, name, data)
        return notes

    def _fork_context(self, ref: SessionRef, sha256: str, context: ContextNow) -> ContextNow:
        """A fork unchanged since Reprise wrote it: its copied usage records describe the untrimmed
        session, so its context is the estimate made when it was written."""
        from .meter import ContextNow

        estimate = self.fork_context(ref, sha256)
        return context if estimate is None else ContextNow(estimate, context.turn, "estimate", context.model)


def _fork_state(plan: TrimPlan) -> ForkState:
    """The Claude Code fork a written plan holds."""
    from .fork import ForkState

    assert isinstance(plan.state, ForkState)
    return plan.state


def _is_file(path: str | Path) -> bool:
    """Whether a regular file is at `path`; False when its folder cannot be entered."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False
