"""Claude Code's stores as a session source: list, read, search, meter and resume its sessions.

Reprise never writes into a Claude Code root. Its own files of Claude sessions (titles, pins, the
archive of kept copies) live in Reprise's data folder, under `claude/` folders (`OwnPaths`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ...agents import substitute
from ...archive import Archive, ArchiveEntry
from ...audit import AuditLog
from ...config import Settings
from ...errors import NotFoundError, ProblemFileError, RepriseError
from ...meter import LiveMeter, MeterResult, TokenCounter, spec_for
from ...own_files import SessionMeta
from ...paths import OwnPaths, SessionRef, workspace_key
from ...problems import Problem
from ...session_files import ReadProblem, read_regular_file
from ..base import Capabilities, OpenedSession, SessionSource
from .fields import ClaudeFields, ListingFold
from .layout import SUFFIX, ClaudeRoot, check_session_id
from .listing import NAME, ClaudeListing
from .meter import ClaudeMeter, ContextNow
from .records import Record, parse_lines
from .transcript import read_transcript

METER_VERSION = "claude-1"


@dataclass(slots=True)
class ClaudeSession:
    """What Reprise read of one Claude Code session file (the source's own model)."""

    records: list[Record]
    context: ContextNow
    fields: ClaudeFields


def _fields_of(records: list[Record]) -> ClaudeFields:
    fold = ListingFold()
    fold.feed(records)
    return fold.result()


class ClaudeSource(SessionSource):
    name = NAME
    label = "Claude Code"
    capabilities = Capabilities(list=True, search=True, meter=True, resume=True)
    resumes_from_any_folder = True
    cost_label = "API-equivalent cost (subscription users pay no such sum)"

    def __init__(self, roots: Sequence[Path], settings: Settings, data: Path):
        self.settings = settings
        self.roots = [ClaudeRoot(Path(root)) for root in roots]
        self.own_paths = OwnPaths(data, NAME)
        self.claude_listing = ClaudeListing(roots, self.own_paths)
        self.listing = self.claude_listing
        self.own_files = self.claude_listing.own_files
        self.archive = Archive(self.own_paths)
        self.audit = AuditLog(self.own_paths)
        self.counter = TokenCounter()

    # --- finding and reading -----------------------------------------------------------------

    def _candidates(self, session_id: str) -> list[Path]:
        check_session_id(session_id)
        found = []
        for group in self.claude_listing.groups():
            path = Path(group) / f"{session_id}{SUFFIX}"
            if path.is_file():
                found.append(path)
        return found

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
            cwd = _fields_of(parse_lines(data, 0).records).cwd
            if cwd is not None and workspace_key(cwd) == ref.workspace_key:
                return path
        return candidates[0]

    def exists(self, ref: SessionRef) -> bool:
        return self._locate(ref) is not None

    def session_path(self, ref: SessionRef) -> Path:
        path = self._locate(ref)
        if path is None:
            return self.roots[0].projects / f"{ref.session_id}{SUFFIX}" if self.roots else Path(ref.session_id)
        return path

    def open(self, ref: SessionRef) -> OpenedSession:
        path = self._locate(ref)
        if path is None:
            raise NotFoundError(f"No Claude Code session {ref.session_id} in any root "
                                f"({', '.join(str(root.path) for root in self.roots)}).")
        try:
            data, _ = read_regular_file(path, self.claude_listing.root_of(path))
        except FileNotFoundError:
            raise NotFoundError(f"The Claude Code session file {path} disappeared.", path=path) from None
        except ReadProblem as exc:
            raise ProblemFileError(Problem(str(path), exc.code, exc.message)) from None
        parsed = parse_lines(data, 0)
        subagents = self._subagent_count(path)
        transcript, notes = read_transcript(parsed.records, subagents=subagents)
        warnings = [Problem(str(path), "skipped_line", warning) for warning in parsed.warnings]
        if parsed.end < len(data):
            warnings.append(Problem(str(path), "truncated_line", f"the last line ({len(data) - parsed.end:,} bytes) "
                                    "is incomplete, probably being written; it was skipped"))
        warnings.extend(Problem(str(path), "note", note) for note in notes)
        sha256 = hashlib.sha256(data).hexdigest()
        size = len(data)
        del data
        found = _fields_of(parsed.records)
        context = ContextNow(found.context_tokens, found.turns,
                             "compaction" if found.context_basis == "compact_boundary" else "reply", found.model)
        return OpenedSession(ref, path, size, sha256, transcript, warnings,
                             ClaudeSession(parsed.records, context, found))

    def agent_title(self, opened: OpenedSession) -> str | None:
        found = self._session(opened).fields
        return found.title if found.title_source in ("custom-title", "ai-title") else None

    @staticmethod
    def _subagent_count(path: Path) -> int:
        folder = path.with_suffix("") / "subagents"
        try:
            return sum(1 for child in folder.iterdir() if child.name.endswith(SUFFIX))
        except OSError:
            return 0

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
            raise NotFoundError(f"No Claude Code session {ref.session_id}.")
        return self.own_files.update_meta(ref, change)

    # --- resuming ----------------------------------------------------------------------------

    def resume_argv(self, ref: SessionRef, workspace: str | None) -> list[str]:
        return substitute(self.settings.sources.claude.resume, session_id=ref.session_id, workspace=workspace or "")

    def before_handoff(self, ref: SessionRef, workspace: Path, *, for_exec: bool
                       ) -> tuple[list[str], ArchiveEntry | None, MeterResult | None]:
        opened = self.open(ref)
        return [], None, self.prepare_meter(opened, workspace).with_message("")

    # --- the meter ---------------------------------------------------------------------------

    @staticmethod
    def _session(opened: OpenedSession) -> ClaudeSession:
        assert isinstance(opened.native, ClaudeSession)
        return opened.native

    def prepare_meter(self, opened: OpenedSession, workspace: Path | None, *, model: str | None = None) -> LiveMeter:
        return ClaudeMeter(self.settings.meter, self.counter, self._session(opened).context, model=model)

    def measure(self, ref: SessionRef, workspace: Path | None, message: str = "", *,
                model: str | None = None) -> MeterResult:
        opened = self.open(ref)
        return ClaudeMeter(self.settings.meter, self.counter, self._session(opened).context,
                           model=model).with_message(message)

    def context_window(self, workspace: Path, model: str | None = None) -> int:
        return spec_for(model or self.settings.meter.model or "claude", self.settings.meter.models).input_budget

    def resume_cost_key(self, workspace: Path | None, fallback: Path, model: str | None = None) -> str:
        return f"{METER_VERSION}|measured"

    def resume_cost(self, ref: SessionRef, workspace: Path | None, size: int, mtime_ns: int,
                    listed_context: int = 0) -> int | None:
        """The next turn with an empty draft: the measured context the listing read."""
        return listed_context or None

