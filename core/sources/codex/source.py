"""Codex CLI's stores as a session source: list, read, search, meter and resume its sessions.

Reprise reads rollouts only: it never writes into a Codex root and never opens Codex's SQLite files
(a read-only open of a WAL database can still create files beside it). Its own files of Codex
sessions (titles, pins) live in Reprise's data folder, under `codex/` folders (`OwnPaths`).
"""

from __future__ import annotations

import hashlib
import os
import time
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
    UsageError,
)
from ...meter import RESUME, SEND, LiveMeter, MeterResult, user_spec
from ...paths import OwnPaths, SessionRef, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, read_regular_file
from ...times import parse_time
from ...transcript import Transcript, Turn
from ..agent_store import AgentStoreSource
from ..base import Handoff, OpenedSession
from ..roles import Creator, Diagnosed, Forking, Live, Metered, Sender, SessionWriter, Trashing
from ..session_writing import WrittenSession
from .fields import CodexFields, ListingFold
from .layout import IMPORTS_LEDGER, CodexRoot, check_session_id
from .listing import NAME, CodexListing
from .records import Record
from .retention import NO_SWEEP
from .spec import SPEC
from .transcript import read_transcript
from .windows import Configs, catalog_window

CLAUDE = "claude"   # the agent whose sessions Codex imports (its ledger names their files)

# What only metering, forking, sending or starting a session needs is imported there, and so are the
# agents' runs, the liveness checks and the trash: a listing never loads them.
if TYPE_CHECKING:
    from ...agents import Backend
    from ...config import Settings
    from ...outcome import TurnOutcome
    from ...session_links import SessionLink
    from ...session_meta import SessionMeta
    from ...trimming import TrimOptions, TrimResult
    from .meter import CodexLimits, ContextNow
    from .next_request import NextRequest
    from .trash import CodexTrash

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


class CodexSource(AgentStoreSource, Metered, Sender, Creator, Forking, Trashing, Live, Diagnosed, SessionWriter):
    spec = SPEC
    name = SPEC.name
    label = SPEC.label
    trash_note = SPEC.trash_note
    cost_label = SPEC.cost_label
    resume_setting = SPEC.resume_setting
    rename_note = SPEC.rename_note
    file_noun = "rollout"

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.roots: list[CodexRoot] = [CodexRoot(Path(root)) for root in roots]
        self.configs = Configs()
        self.codex_listing = CodexListing(roots, OwnPaths(data, NAME))
        super().__init__(settings, self.codex_listing)

    # --- finding and reading -----------------------------------------------------------------

    def _locate(self, ref: SessionRef) -> Path | None:
        return self.codex_listing.locate(check_session_id(ref.session_id))

    def exists(self, ref: SessionRef) -> bool:
        return self._locate(ref) is not None

    def _new_path(self, ref: SessionRef) -> Path:
        return self.roots[0].sessions / ref.session_id if self.roots else Path(ref.session_id)

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
        """What `doctor` says of Codex's store: what its ledger of imports has wrong (the listing and
        the links pass over a bad record), and that Codex deletes no session by age."""
        from .imports import imported_sessions

        ledgers = [root.path for root in self.roots if (root.path / IMPORTS_LEDGER).exists()]
        return [problem for root in ledgers for problem in imported_sessions(root).problems], [], [], [NO_SWEEP]

    # --- resuming ----------------------------------------------------------------------------

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        from ...agents import substitute

        return substitute(self.settings.sources.codex.resume, session_id=ref.session_id, workspace=workspace or "")

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool) -> Handoff:
        opened = self.open(ref)
        notes = []
        if self._session(opened).lineage_gap is not None:
            notes.append(f"{self._session(opened).lineage_gap} Resuming it will fail.")
        return self._handoff(ref, opened, workspace, notes, one="rollout")

    def writer(self, ref: SessionRef, opened: OpenedSession | None = None, *, now: float | None = None) -> str | None:
        """Why the session counts as being written now (a recent record, a process holding it), or None
        (None too when it could not be read: `opened` is None)."""
        from .liveness import writer_of

        if opened is None:
            return None
        newest = self._session(opened).fields.last_activity
        moment = parse_time(newest) if newest else None
        written = writer_of(opened.path, moment.timestamp() if moment else None, time.time() if now is None else now)
        return written.why if written is not None else None

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

    # --- writes (issue 16) ---

    def _trash(self) -> CodexTrash:
        from .trash import CodexTrash

        return CodexTrash(self.own_paths, self.audit, self.own_files.lock)

    def _root_path(self, path: Path) -> Path:
        return self.codex_listing.root_of(path).path

    def _read(self, path: Path) -> bytes:
        return read_regular_file(path, self.codex_listing.root_of(path).path)[0]

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
        from ..file_writers import process_writing

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

    def _turn_usage(self, newest: Turn, outcome: TurnOutcome) -> None:
        usage = newest.usage
        if usage is not None:
            outcome.usage = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                             "cache_read_tokens": usage.cache_read_tokens, "cache_creation_tokens": 0, "cost": 0.0,
                             "duration_ms": usage.duration_ms or 0, "iterations": usage.iterations or 0,
                             "context_tokens": 0}

    def _measured(self, opened: OpenedSession) -> tuple[int | None, int]:
        context = self._session(opened).context
        return context.tokens, context.turn

    def fork(self, ref: SessionRef, options: TrimOptions, workspace: Path | None, *, dry_run: bool,
             force: bool, model: str | None, expected_sha256: str | None) -> TrimResult:
        """Preview or write a trimmed copy of the session as a new rollout in its date folder (Codex's
        own rollout is never rewritten), archived (op `fork`; the original's bytes in the
        original's archive, op `fork-original`), titled "<title> (trimmed)" with lineage. A fork Codex
        made is written self-contained (fork.py)."""
        from .fork import fork_name, new_thread_id, plan_fork
        from .meter import DEFAULT_MODEL

        opened = self.open(ref)
        session = self._session(opened)
        if session.lineage_gap is not None:
            raise UsageError(f"{session.lineage_gap} A trim would lose that history, so it is not made.",
                             hint="restore the parent's rollout first")
        data = self._read(opened.path)
        self._refuse_changed(ref, data, expected_sha256, opened.path)
        inherited = None
        if session.fields.forked_from is not None:
            inherited = self.codex_listing.transcript_records(session.records)[1].records
        fork_id = new_thread_id()
        plan = plan_fork(data, options, fork_id=fork_id, context_before=session.fields.context_tokens,
                         count=self._counting(model, session.fields.model, DEFAULT_MODEL), inherited=inherited)
        return self._fork_result(ref, plan, data, fork_id, self.writer(ref, opened), options=options, dry_run=dry_run,
                                 force=force, title=session.title or session.fields.first_message
                                 or f"session {ref.session_id[-8:]}", path=opened.path,
                                 fork_path=opened.path.parent / fork_name(opened.path.name, fork_id))

    def new_session(self, key: str, folder: Path, meta: SessionMeta) -> SessionRef:
        """A new thread on an id Reprise chose (new.py: its first line written in the first root), with
        Reprise's title of it; `new_argv` starts Codex on it."""
        from .fork import new_thread_id
        from .new import start_rollout

        if not self.roots:
            raise NotFoundError("No Codex root to start a session in.", hint="set [sources.codex] roots")
        ref = SessionRef(key, new_thread_id(), NAME)
        start_rollout(self.roots[0], ref.session_id, folder)
        return self._titled(ref, meta)

    def imported_files(self) -> dict[str, str]:
        ledgers = [root.path for root in self.roots if (root.path / IMPORTS_LEDGER).exists()]
        if not ledgers:   # every listing asks: without a ledger, nothing is imported or read
            return {}
        from .imports import imported_sessions

        return {session.thread_id: session.source_path for root in ledgers
                for session in imported_sessions(root).sessions}

    def import_links(self, ref: SessionRef, path: Path) -> list[SessionLink]:
        """Codex's own imports of Claude Code sessions (imports.py: its ledger under each root): the
        Claude Code session a thread was imported from, or the threads a Claude Code file became."""
        from ...session_links import SessionLink
        from .imports import imported_sessions

        if ref.source not in (NAME, CLAUDE):
            return []
        links = []
        for root in self.roots:
            found = imported_sessions(root.path)
            if ref.source == NAME and (origin := found.source_of(ref.session_id)) is not None:
                links.append(SessionLink("from", CLAUDE, origin.source_session_id or origin.source_path, None,
                                         "imported"))
            elif ref.source == CLAUDE and (thread := found.thread_of(os.path.realpath(path))) is not None:
                links.append(SessionLink("in", NAME, thread, None, "imported"))
        return links

    def write_session(self, transcript: Transcript, folder: Path, meta: SessionMeta, *, origin: SessionRef,
                      agent: str, model: str | None, dry_run: bool) -> WrittenSession:
        """The transcript as a new rollout in today's date folder of the first root (from_transcript.py),
        for the Codex the store was last written by."""
        from .fork import new_thread_id
        from .from_transcript import rollout_of, rollout_path
        from .new import known_cli_version

        if not self.roots:
            raise NotFoundError("No Codex root to write a session in.", hint="set [sources.codex] roots")
        ref = SessionRef(workspace_key(folder), new_thread_id(), NAME)
        now = datetime.now(UTC)
        data, notes = rollout_of(transcript, session_id=ref.session_id, folder=str(folder),
                                 cli_version=known_cli_version(self.roots[0]), agent=agent, now=now)
        written = WrittenSession(ref, rollout_path(self.roots[0], ref.session_id, now), data, len(transcript.turns),
                                 notes)
        return self._write_new(written, meta, origin, dry_run=dry_run)

    def new_argv(self, ref: SessionRef, folder: Path) -> list[str] | None:
        from ...agents import substitute

        return substitute(self.settings.sources.codex.new, session_id=ref.session_id, workspace=str(folder))
