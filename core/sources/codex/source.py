"""Codex CLI's stores as a session source: list, read, search, meter and resume its sessions.

Reprise reads rollouts only: it never writes into a Codex root and never opens Codex's SQLite files
(a read-only open of a WAL database can still create files beside it). Its own files of Codex
sessions (titles, pins) live in Reprise's data folder, under `codex/` folders (`OwnPaths`).
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...agents import substitute
from ...audit import AuditLog
from ...config import Settings
from ...errors import NotFoundError, ProblemFileError, RepriseError
from ...liveness import PendingTurn
from ...meter import LiveMeter, MeterResult, TokenCounter, spec_for
from ...own_files import SessionMeta
from ...paths import OwnPaths, SessionRef
from ...problems import Problem
from ...session_files import ReadProblem
from ...times import parse_time
from ..base import Capabilities, Handoff, OpenedSession, SessionSource
from .fields import CodexFields, ListingFold
from .layout import CodexRoot, check_session_id
from .listing import NAME, CodexListing
from .liveness import writer_of
from .meter import DEFAULT_MODEL, CodexMeter, ContextNow
from .records import Record
from .retention import NO_SWEEP
from .transcript import read_transcript

METER_VERSION = "codex-1"


@dataclass(slots=True)
class CodexSession:
    """What Reprise read of one rollout (the source's own model)."""

    records: list[Record]
    fields: CodexFields
    context: ContextNow
    title: str | None
    lineage_gap: str | None   # why the history before a fork is missing (its parent's rollout is not there)


class CodexSource(SessionSource):
    name = NAME
    label = "Codex"
    capabilities = Capabilities(list=True, search=True, meter=True, resume=True)
    resumes_from_any_folder = True   # `codex resume ID` finds a rollout by id, indexed or not
    cost_label = "cost"
    resume_setting = "[sources.codex] resume"
    rename_note = "Titles and pins are Reprise's own: Codex's own picker does not show them."

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.settings = settings
        self.roots = [CodexRoot(Path(root)) for root in roots]
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
        context = ContextNow(found.context_tokens, found.context_turn + inherited_turns, found.context_window,
                             found.model, found.context_basis)
        title = self.codex_listing.title_of(path, ref.session_id)
        return OpenedSession(ref, path, len(data), hashlib.sha256(data).hexdigest(), transcript, warnings,
                             CodexSession(records, found, context, title, lineage.gap))

    @staticmethod
    def _session(opened: OpenedSession) -> CodexSession:
        assert isinstance(opened.native, CodexSession)
        return opened.native

    def agent_title(self, opened: OpenedSession) -> str | None:
        return self._session(opened).title

    def has_sessions(self, key: str) -> bool:
        return False   # nothing to record: each rollout names its own folder

    def workspace_path(self, key: str) -> str | None:
        return None

    def record_workspace(self, key: str, folder: Path) -> None:
        return None

    def read_meta(self, ref: SessionRef) -> SessionMeta:
        return self.own_files.read_meta(ref)

    def update_meta(self, ref: SessionRef, change: Callable[[SessionMeta], object]) -> SessionMeta:
        if not self.exists(ref):
            raise NotFoundError(f"No Codex session {ref.session_id}.")
        return self.own_files.update_meta(ref, change)

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
        return Handoff(notes, None, self.prepare_meter(opened, workspace).with_message(""), writer)

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

    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None) -> LiveMeter:
        return CodexMeter(self.settings.meter, self.counter, self._session(opened).context, model=model)

    def measure(self, ref: SessionRef, workspace: Path | None, message: str = "", *,
                model: str | None = None) -> MeterResult:
        return CodexMeter(self.settings.meter, self.counter, self._session(self.open(ref)).context,
                          model=model).with_message(message)

    def context_window(self, workspace: Path, model: str | None = None) -> int:
        return spec_for(model or self.settings.meter.model or DEFAULT_MODEL, self.settings.meter.models).input_budget

    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        return f"{METER_VERSION}|measured"

    def resume_cost(self, ref: SessionRef, workspace: Path | None, size: int, mtime_ns: int,
                    listed_context: int = 0) -> int | None:
        """The next turn with an empty draft: the measured context the listing read."""
        return listed_context or None
