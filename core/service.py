"""The one API the command line and the TUI call: sessions in, models and Reprise errors out.

A `Service` is bound to a state root, a current workspace and the settings; it owns the
store, the archive and the catalog and never hands out paths built from raw strings.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shlex
import shutil
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar, cast

from . import config as config_module
from .catalog import Catalog
from .errors import (
    AgentError,
    AmbiguousError,
    ForkOnlyError,
    NotFoundError,
    RepriseError,
    RoleMissingError,
    UsageError,
)
from .gc_pauses import no_gc_pauses
from .meter import SEND, ContextLimit, LiveMeter, MeterResult, spec_for
from .paths import (
    SessionRef,
    cache_dir,
    data_dir,
    guess_workspace_path,
    validate_session_id,
    validate_workspace_key,
    workspace_key,
)
from .problems import Problem
from .progress import Progress as Progress
from .progress import ProgressSink, no_progress
from .resume_costs import CostProgress as CostProgress
from .resume_costs import in_priority_order
from .rows import SessionRow
from .run_folder import exact_folder_gone, exact_new_folder_gone, folder_is_gone, runs_anywhere, runs_only_there
from .sources import make_sources
from .sources.base import AgentDeletion, KeepReport, OpenedSession, SessionSource
from .sources.registry import LoadFailure, missed_by_scan, registry
from .sources.roles import (
    Creator,
    Diagnosed,
    Forking,
    Keeping,
    Live,
    MeterCalibration,
    Metered,
    Recovering,
    Relinking,
    Sender,
    Swept,
    Trashing,
    TrimmingInPlace,
    UndoingTrims,
    missing_role,
)
from .times import utc_now_iso
from .tokens import count_tokens
from .transcript import Transcript, Usage

if TYPE_CHECKING:   # what a listing or a search never uses: imported by the methods that do
    from . import ui_state, undo
    from .archive import ArchiveEntry
    from .audit import AuditLog, AuditRecord
    from .retention import PruneCandidate, PruneOptions, PruneSelection
    from .search_build import BuildResult
    from .search_engine import SearchUpdate, UpdateSink
    from .search_index import SearchHit
    from .sending import SendResult
    from .session_meta import SessionMeta
    from .trash_results import PruneResult, PurgeResult, RelinkResult, TrashEntry
    from .trimming import RestoreResult, TrimOptions, TrimResult, TurnSize

if TYPE_CHECKING:   # only `continue_in` and `show` build them, importing their modules then
    from .brief import Brief
    from .continuation import Continuation, Earlier
    from .session_links import SessionLink

P = ParamSpec("P")
R = TypeVar("R")
RoleT = TypeVar("RoleT")
SORTS = ("updated", "turns", "size", "context", "next")
SORT_ALIASES = {"cost": "next"}   # the names a sort had before: still accepted
MIN_PREFIX = 4
STALE_TEMP_S = 600
DEFAULT_ENCODING = "o200k_base"   # counting for a source without a meter
# `keep_before_sweep`: what one listing keeps at most of what the agents' sweeps delete within SWEEP_DAYS.
SWEEP_DAYS = 7.0
SWEEP_KEEP_SESSIONS = 50
SWEEP_KEEP_BYTES = 500 * 1024 * 1024
SWEEP_RECHECK_S = 600.0   # once nothing is left to keep, the next look at every folder waits this long


@dataclass(slots=True)
class Listing:
    rows: list[SessionRow]
    total: int                # the sessions in scope, the ones the agent's picker hides included
    scope: str
    sort: str                 # as asked (an alias stays an alias)
    limit: int | None
    hidden_left_out: int = 0  # sessions the agent's own picker hides, filtered out on request
    sources: tuple[str, ...] = ()
    reverse: bool = False     # smallest or oldest first
    all_workspaces: bool = False   # the scope spans every workspace's folder
    kept_before_sweep: SweepKeeping | None = None   # what this listing kept of what sweeps delete soon


@dataclass(frozen=True, slots=True)
class SweepKeeping:
    """What one listing kept (`keep_before_sweep`) of the sessions their agents delete within the week: the
    soonest first, within the listing's share; the rest are left for the next listing."""

    kept: list[KeepReport]
    problems: list[Problem]   # sessions that could not be kept (not tried again by this process)
    left: int                 # due sessions over this listing's share
    agents: tuple[str, ...]   # the agents whose sweeps these are, as they are named to people

    @property
    def size(self) -> int:
        return sum(report.size for report in self.kept)

    @property
    def note(self) -> str | None:
        """One sentence for people, None when the listing kept nothing and nothing failed."""
        if not self.kept and not self.problems:
            return None
        count = len(self.kept)
        said = (f"Kept {count} session{'' if count == 1 else 's'} ({self.size / (1 << 20):.1f} MB) that "
                f"{' and '.join(self.agents)} delete{'s' if len(self.agents) == 1 else ''} within the week, "
                f"in Reprise's archive (keep_before_sweep)")
        if self.left:
            said += f"; {self.left} more at the next listing"
        if self.problems:
            said += f"; {len(self.problems)} could not be kept (`reprise keep --due` says why)"
        return said + "."


@dataclass(slots=True)
class SessionDetail:
    """One session read once: the neutral transcript, and for sources that have them the agent's own
    rendered summary and history records (None otherwise)."""

    ref: SessionRef
    path: Path
    meta: SessionMeta
    workspace_path: str | None
    size: int
    warnings: list[Problem]
    transcript: Transcript
    summary_text: str | None
    history: list[dict[str, object]] | None
    opened: OpenedSession = field(repr=False)
    agent_title: str | None = None   # the title the agent keeps (Claude Code's custom or AI title)
    agent_label: str = "Agent"       # how the agent is named to people ("Claude Code")
    cost_label: str = "cost"
    deletion: str | None = None      # when the agent deletes the file by age, or that Reprise keeps a copy
    deletion_soon: bool = False      # within the week, or due
    keepable: bool = False           # a copy of the file as it is could still be kept (`keep`)
    branch: str | None = None        # the git branch the agent recorded, when it records one
    refused: list[str] = field(default_factory=list)   # a sentence for each action its source does not offer
    links: list[SessionLink] = field(default_factory=list)   # to sessions of other agents (`Service.link_line`)

    @property
    def title(self) -> str | None:
        """Reprise's own title, else the agent's."""
        return self.meta.title or self.agent_title

    @property
    def totals(self) -> Usage:
        return self.transcript.totals()


@dataclass(slots=True)
class WorkspaceInfo:
    key: str
    path: str | None
    path_source: str
    sessions: int
    last_activity: str | None


@dataclass(slots=True)
class IndexState:
    """The full-text index as `doctor` shows it: its bytes, the session files it holds, its cap in
    bytes (None: none) and whether indexing is on."""

    size: int
    sessions: int
    cap: int | None
    enabled: bool


@dataclass(slots=True)
class DoctorReport:
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    cleaned: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    search_index: IndexState | None = None

    @property
    def ok(self) -> bool:
        return not self.problems and not self.temp_files


@dataclass(slots=True)
class ResumePlan:
    ref: SessionRef
    argv: list[str]
    cwd: str
    notes: list[str]
    snapshot: ArchiveEntry | None = None
    meter: MeterResult | None = None
    writer: str | None = None   # why the session counts as being written now (resuming it would interleave)
    program_missing: AgentError | None = None   # a plan to run whose program is not on PATH: why, and the fix

    @property
    def over_window(self) -> bool:
        return self.meter is not None and self.meter.state == "over"

    @property
    def command_line(self) -> str:
        """The resume as one shell line, `cd DIR && ARGV` (`reprise pick --command`, the TUI's `Y`)."""
        return f"cd {shlex.quote(self.cwd)} && {shlex.join(self.argv)}"


@dataclass(frozen=True, slots=True)
class LastSession:
    """The session `--last` takes, and the newer sessions without a turn passed over on the way."""

    ref: SessionRef
    skipped: list[SessionRef]

    @property
    def note(self) -> str | None:
        """What to tell people when empty sessions were passed over."""
        if not self.skipped:
            return None
        count = len(self.skipped)
        return (f"Skipped {count} newer session{'' if count == 1 else 's'} with no turn "
                f"({', '.join(ref.session_id[:8] for ref in self.skipped[:3])}{', …' if count > 3 else ''}): "
                f"--last takes the newest with at least one turn, as `claude --continue` does.")


def _as_reprise_run(send: Callable[Concatenate[Service, SessionRef, P], R]
                    ) -> Callable[Concatenate[Service, SessionRef, P], R]:
    """Hold a run record (core/liveness.py) while a turn is sent, so that its pending turn counts as
    live exactly while this process runs it."""
    @functools.wraps(send)
    def sending(self: Service, ref: SessionRef, /, *args: P.args, **kwargs: P.kwargs) -> R:
        from .liveness import reprise_run

        with reprise_run(self.source(ref).own_paths, ref, timeout=self.settings.agent.timeout):
            return send(self, ref, *args, **kwargs)
    return sending


class Service:
    def __init__(self, loaded: config_module.LoadedSettings, *, workspace: Path | None = None,
                 cache: Path | None = None, parallel_scan: bool = False, progress: ProgressSink = no_progress):
        """`progress` hears how far a long read is: new or changed files listed, the first search's indexing."""
        self.loaded = loaded
        sources = make_sources(loaded)
        self.sources: dict[str, SessionSource] = sources
        self.load_failures: list[LoadFailure] = sources.failures   # each said once: CLI start, config, doctor, TUI
        self.catalog = Catalog([source.listing for source in self.sources.values()], cache or cache_dir(),
                               parallel=parallel_scan, progress=progress)
        if loaded.from_file:   # else the catalog's own defaults are `[search]`'s (a test holds them equal)
            self.catalog.index_enabled = self.settings.search.index
            self.catalog.index_cap = self.settings.search.max_bytes
        for name, source in self.sources.items():
            source.cataloged = functools.partial(self.catalog.paths_of, name)
        self.workspace = Path(workspace or os.getcwd()).expanduser().resolve()
        self.workspace_key = workspace_key(self.workspace)
        self.clock: Callable[[], float] = time.time   # what "now" is for ages told to people (the TUI's clock)
        self._remembered = False
        self._ui_state: ui_state.UiState | None = None
        self._not_kept: set[tuple[str, int, int]] = set()   # (path, size, mtime) a sweep's keep failed on
        self._sweep_clear_until = 0.0   # (monotonic) the last look left nothing due: none before this
        self._notices: list[str] = []

    @classmethod
    def from_environment(cls, *, state_dir: str | None = None, workspace: str | None = None,
                         config_path: Path | None = None, parallel_scan: bool = False,
                         progress: ProgressSink = no_progress) -> Service:
        loaded = config_module.load(state_dir=state_dir, config_path=config_path)
        return cls(loaded, workspace=Path(workspace) if workspace else None, parallel_scan=parallel_scan,
                   progress=progress)

    @property
    def state_root(self) -> Path:
        return self.loaded.state_root

    @property
    def settings(self) -> config_module.Settings:
        """The settings (without a config file, built when first read: a listing reads none)."""
        return self.loaded.settings

    def source(self, ref: SessionRef) -> SessionSource:
        """The source a session belongs to."""
        return self.sources[ref.source]

    def role(self, ref: SessionRef, role: Callable[..., RoleT], phrase: str | None = None) -> RoleT:
        """The session's source as `role`; RoleMissingError "<label> sessions cannot be <phrase> by
        Reprise." when its class does not have the role."""
        source = self.source(ref)
        if role not in source.roles:
            raise missing_role(source, cast(type, role), phrase)
        return cast(RoleT, source)

    def sources_with(self, role: Callable[..., RoleT]) -> list[RoleT]:
        """The sources that have `role`, in the registry's order."""
        return [cast(RoleT, source) for source in self.sources.values() if role in source.roles]

    def can(self, source_name: str, role: type) -> bool:
        """Whether that source has `role` (what the front ends grey an action by); False for a source
        that is off."""
        source = self.sources.get(source_name)
        return source is not None and role in source.roles

    # --- listing ---------------------------------------------------------------------------

    def list_sessions(self, *, all_workspaces: bool = False, sort: str = "updated", limit: int | None = None,
                      key: str | None = None, sources: list[str] | None = None,
                      hide_agent_hidden: bool = False, reverse: bool = False, for_people: bool = True,
                      rows_read: Callable[[list[SessionRow]], object] | None = None) -> Listing:
        """The sessions of a workspace (or all), of these sources (all that are on when None), without
        the ones the agent's own picker hides when asked (`claude -p` runs can flood a list). Rows
        `for_people` carry their folder and their window (`mark_folders_and_limits`); JSON needs neither.
        `rows_read` hears the rows of new or changed files in scope as they are read, newest first,
        their details loaded (a first start shows them before the listing ends)."""
        figure = sort_key(sort)
        if limit is not None and limit < 1:
            raise UsageError("--limit must be at least 1.")
        chosen = self.chosen_sources(sources)
        keys = None if all_workspaces else [key or self.workspace_key]
        self._remember_current_workspace()
        kept = self._keep_before_sweeps()   # before the marks: a session kept now is marked kept
        heard = None if rows_read is None else functools.partial(_rows_of_sources, rows_read, set(chosen))
        with no_gc_pauses() as pause:   # the rows, their marks, their order: no collections in between
            rows = self.catalog.refresh(keys, rows_read=heard)
            if len(chosen) < len(self.sources):
                rows = [row for row in rows if row.source in chosen]
            self._mark_agent_deletions(rows)
            rows = self._imports_counted_once(rows)
            total = len(rows)
            if hide_agent_hidden:
                rows = [row for row in rows if not row.hidden_by_agent]
            if figure == "next":
                with pause.resumed():   # metering sessions makes garbage of its own
                    self.fill_resume_costs(rows)
            sort_rows(rows, figure, reverse=reverse)
            scope = "all workspaces" if all_workspaces else f"workspace {self.folder_name(key or self.workspace_key)}"
            shown = rows if limit is None else rows[:limit]
            if for_people:
                self.mark_folders_and_limits(shown)
        return Listing(shown, total, scope, sort, limit, total - len(rows), tuple(chosen), reverse, all_workspaces,
                       kept)

    def _imports_counted_once(self, rows: list[SessionRow]) -> list[SessionRow]:
        """The rows without the older of each pair an agent imported itself (a Codex thread made from a
        Claude Code file): one conversation is listed once, the newer copy, which links to the other
        (`session_links`); the other is still found by its id."""
        pairs: dict[tuple[str, str], str] = {}
        for name, source in self.sources.items():
            with contextlib.suppress(OSError, RepriseError):
                pairs.update(((name, session_id), path) for session_id, path in source.imported_files().items())
        if not pairs:
            return rows
        paths = set(pairs.values())
        by_path = {row.path: row for row in rows if row.path in paths or os.path.realpath(row.path) in paths}
        by_path.update({os.path.realpath(path): row for path, row in list(by_path.items())})
        folded: set[int] = set()
        for row in rows:
            other = by_path.get(pairs.get((row.source, row.id), ""))
            if other is not None and other is not row:
                folded.add(id(other) if row.activity_ts >= other.activity_ts else id(row))
        return [row for row in rows if id(row) not in folded] if folded else rows

    def stored_rows(self, *, all_workspaces: bool = False, key: str | None = None) -> list[SessionRow]:
        """The rows of the workspace (or all) as the catalog last stored them, no file looked at,
        their details loaded and their folders and windows marked: a first frame to show while
        `list_sessions` looks at the disk (an empty list before the first listing)."""
        rows = self.catalog.stored_rows(None if all_workspaces else [key or self.workspace_key])
        self.catalog.load_details(rows)
        self.mark_folders_and_limits(rows)
        return rows

    def mark_folders_and_limits(self, rows: list[SessionRow]) -> None:
        """Each row's project folder for people (the path, never the workspace key) and the window its
        next turn is measured against: the one the agent recorded for the session (its meter uses it
        too, unless a model is pinned), else the source's, looked up once per workspace where a folder's own settings
        can change it and once per source where they cannot."""
        self.mark_folders(rows)
        # {source: {workspace key: limit}} for a source whose folders can set the window, {source: limit}
        # for the others, {window: limit} for the windows the agents recorded.
        by_folder: dict[str, dict[str, ContextLimit | None]] = {
            name: {} for name, source in self.sources.items() if source.window_per_folder}
        by_source: dict[str, ContextLimit | None] = {}
        recorded_limits: dict[int, ContextLimit | None] = {}
        warn = self.settings.meter.warn
        pinned = self.settings.meter.model is not None   # a model pinned in the settings: its window, as the meter
        for row in rows:
            recorded = None if pinned else row.context_window
            if recorded is not None:
                if recorded not in recorded_limits:
                    recorded_limits[recorded] = ContextLimit(recorded, warn) if self.can(row.source, Metered) else None
                row.limit = recorded_limits[recorded]
            elif row.source in by_folder:
                limits = by_folder[row.source]
                if row.workspace_key not in limits:
                    limits[row.workspace_key] = self._context_limit(row)
                row.limit = limits[row.workspace_key]
            else:
                if row.source not in by_source:
                    by_source[row.source] = self._context_limit(row)
                row.limit = by_source[row.source]

    def mark_folders(self, rows: Iterable[SessionRow]) -> None:
        """Each row's project folder for people (the path, never the workspace key), looked up once
        per workspace."""
        folders: dict[str, str | None] = {}
        for row in rows:
            if row.folder is None:
                folder = row.workspace_path
                if folder is None:
                    key = row.workspace_key
                    if key not in folders:
                        folders[key] = self.workspace_path_of(key)[0]
                    folder = folders[key]
                row.folder = folder

    def _context_limit(self, row: SessionRow) -> ContextLimit | None:
        source = self.sources.get(row.source)
        if source is None or Metered not in source.roles:
            return None
        folder = row.folder or row.workspace_path
        try:
            window = cast(Metered, source).context_window(Path(folder) if folder else self.workspace)
        except RepriseError:
            return None
        return ContextLimit(window, self.settings.meter.warn)

    def folder_name(self, key: str) -> str:
        """A workspace as people know it: its folder's path, else a phrase that says it is unknown."""
        return self.workspace_path_of(key)[0] or "(folder unknown)"

    def _mark_agent_deletions(self, rows: list[SessionRow]) -> None:
        """Each row the agent deletes by age says when, unless Reprise keeps its file as it is."""
        swept = [source for source in self.sources.values() if Swept in source.roles]
        if not swept:
            return
        now = self.clock()
        for source in swept:
            name = source.name
            kept = ({(ref.workspace_key, ref.session_id): version
                     for ref, version in cast(Keeping, source).kept_versions().items()}
                    if Keeping in source.roles else {})
            listed = mine = [row for row in rows if row.source == name]
            if kept:
                for row in mine:
                    version = kept.get((row.workspace_key, row.id))
                    row.kept = version is not None and (version == (row.size, row.mtime_ns) or row.group == "kept")
                mine = [row for row in mine if not row.kept]
            for row, deletion in zip(mine, cast(Swept, source).deletions(mine, listed, now), strict=True):
                row.agent_deletion = deletion

    def keep(self, ref: SessionRef) -> KeepReport:
        """Copy a session (and its sidecar files) into Reprise's archive, out of its agent's clean-up."""
        return self.role(ref, Keeping).keep(ref)

    def due(self, days: float) -> list[SessionRow]:
        """Every session, in every folder, that its agent deletes by age within `days` and that Reprise
        does not keep as it is: the soonest first."""
        if days < 0:
            raise UsageError("--due takes a number of days, 0 or more.")
        return self._due(days, list(self.sources))

    def _due(self, days: float, sources: list[str]) -> list[SessionRow]:
        """`due` for these sources, read from the catalog (not a listing: a listing may keep some first)."""
        horizon = self.clock() + days * 86400
        with no_gc_pauses():
            rows = [row for row in self.catalog.refresh(None) if row.source in sources]
            self._mark_agent_deletions(rows)
        due = [row for row in rows if row.ref is not None and _due_by(row.agent_deletion, horizon)]
        return sorted(due, key=lambda row: row.agent_deletion.at or 0.0 if row.agent_deletion else 0.0)

    def _keep_before_sweeps(self) -> SweepKeeping | None:
        """For each source that has a sweep and whose settings say `keep_before_sweep`, keep (as `keep --due`
        does) the sessions its agent deletes within the week: the soonest first, at most SWEEP_KEEP_SESSIONS
        or SWEEP_KEEP_BYTES in all (the rest at the next listing); one that fails is not tried again by this
        process. Once nothing is left, the next SWEEP_RECHECK_S keep nothing without looking. None when no
        source asks for it."""
        names = [name for name, source in self.sources.items() if Keeping in source.roles
                 and self.loaded.from_file and self.settings.sources.keeps_before_sweep(source.name)]
        if not names:
            return None
        agents = tuple(self.sources[name].label for name in names)
        if time.monotonic() < self._sweep_clear_until:   # the TUI lists every second
            return SweepKeeping([], [], 0, agents)
        due = [row for row in self._due(SWEEP_DAYS, names) if (row.path, row.size, row.mtime_ns) not in self._not_kept]
        chosen: list[SessionRow] = []
        size = 0
        for row in due:
            if len(chosen) == SWEEP_KEEP_SESSIONS or size + row.size > SWEEP_KEEP_BYTES:
                break
            chosen.append(row)
            size += row.size
        reports, problems = self.keep_due(chosen)
        failed = {problem.path for problem in problems}
        self._not_kept |= {(row.path, row.size, row.mtime_ns) for row in chosen if row.path in failed}
        keeping = SweepKeeping(reports, problems, len(due) - len(chosen), agents)
        if not keeping.left:
            self._sweep_clear_until = time.monotonic() + SWEEP_RECHECK_S
        if keeping.note:
            self._notices.append(keeping.note)
        return keeping

    def keep_due(self, rows: list[SessionRow]) -> tuple[list[KeepReport], list[Problem]]:
        """Keep each of these sessions; one that cannot be kept is a problem naming its file, and the
        rest are still kept."""
        reports, problems = [], []
        for row in rows:
            ref = row.ref
            if ref is None:
                continue
            try:
                reports.append(self.keep(ref))
            except RepriseError as exc:
                problems.append(Problem(row.path, "keep", str(exc)))
        return reports, problems

    def chosen_sources(self, names: list[str] | None) -> list[str]:
        """The sources a listing is narrowed to; a UsageError naming why for one that is off or unknown."""
        if not names:
            return list(self.sources)
        for name in names:
            if name not in self.sources:
                choice = self.loaded.choices.get(name)
                if choice is None:
                    failure = registry().failure(name)
                    raise UsageError(failure.line[:1].upper() + failure.line[1:] + "." if failure else
                                     f"Unknown source {name!r}; the sources are {', '.join(self.loaded.choices)}.")
                spec = registry().get(name)
                where = f"; set [sources.{name}] roots in the config file" if spec and spec.location else ""
                raise UsageError(f"The {name} source is off: {choice.why}.", hint=f"see `reprise config`{where}")
        return [name for name in self.sources if name in names]

    def load_details(self, rows: list[SessionRow]) -> None:
        """Read the listing fields of these rows (the ones to show or serialize), in one query."""
        self.catalog.load_details(rows)

    def search(self, query: str, *, all_workspaces: bool = False, key: str | None = None, limit: int = 200,
               should_stop: Callable[[], bool] = lambda: False, on_update: UpdateSink | None = None,
               index: bool = True) -> list[SearchHit]:
        """Full-text search over every turn's text (and title) of the sessions in scope, newest session
        first. `on_update` hears the hits as they are found and how far the search is, the last time
        with `complete` (the cut note and the files that could not be read come with it); `index`
        False searches without the index (every file scanned, nothing written), as the setting
        `[search] index = false` does."""
        keys = None if all_workspaces else [key or self.workspace_key]

        def heard(update: SearchUpdate) -> None:
            self.mark_folders(hit.row for hit in update.hits)
            if on_update is not None:
                on_update(update)

        hits = self.catalog.search(query, keys, limit=limit, should_stop=should_stop, on_update=heard,
                                   indexing=index)
        self.mark_folders(hit.row for hit in hits)   # each hit says its session's folder
        return hits

    def build_index(self, *, all_workspaces: bool = False, key: str | None = None,
                    should_stop: Callable[[], bool] = lambda: False, progress: ProgressSink = no_progress
                    ) -> BuildResult:
        """Index the sessions in scope the search index does not hold yet (as they are on disk), in the
        background of a search: newest first, a batch at a time, stopped between batches by
        `should_stop` (what was written stays), up to the `[search] max_mb` cap; nothing when
        `[search] index` is off."""
        keys = None if all_workspaces else [key or self.workspace_key]
        return self.catalog.build_index(keys, should_stop=should_stop, progress=progress)

    def index_state(self) -> IndexState:
        """The search index's size, the sessions it holds, its cap and whether it is on (`doctor`)."""
        return IndexState(self.catalog.index_bytes(), self.catalog.index_files(), self.settings.search.max_bytes,
                          self.settings.search.index)

    def hear_progress(self, progress: ProgressSink) -> None:
        """From now on `progress` hears how far a long read is (what the constructor's `progress`
        hears): for a front end that exists only once the service does."""
        self.catalog.progress = progress

    def take_notices(self) -> list[str]:
        """One line for each time the catalog cache was rebuilt or bypassed, for each listing that kept
        sessions before their agent's sweep, and when the remembered screen choices could not be read,
        since the last call."""
        notices, self._notices = [*self.catalog.take_notices(), *self._notices], []
        return notices

    @functools.cached_property
    def undo_log(self) -> undo.UndoLog:
        """The last trim or trash made here, for `undo_step` (`core/undo.py`, imported by the first)."""
        from . import undo

        return undo.UndoLog()

    def ui_choices(self) -> ui_state.UiState:
        """The screen choices remembered across runs (`core/ui_state.py`), read once."""
        from . import ui_state

        if self._ui_state is None:
            self._ui_state, problem = ui_state.load(data_dir())
            self._notices += [problem] if problem else []
        return self._ui_state

    def remember(self, **choices: bool) -> None:
        """Keep screen choices for the next run (`preview_when_narrow=True`, `show_agent_hidden=...`)."""
        from . import ui_state

        state = self.ui_choices()
        for name, value in choices.items():
            if name not in ui_state.KNOWN:
                raise UsageError(f"{name!r} is not a screen choice Reprise remembers.")
            setattr(state, name, value)
        try:
            ui_state.save(data_dir(), state)
        except (OSError, RepriseError) as exc:
            raise RepriseError(f"The choice is used for this run but could not be remembered: {exc}",
                               path=data_dir() / ui_state.FILE_NAME) from None

    def _remember_current_workspace(self) -> None:
        """Record the folder behind the current key once its sessions exist (the key cannot be
        reversed, and the folder may move later)."""
        if self._remembered:
            return
        for source in self.sources.values():
            rule = source.listing.workspaces
            if rule.kind != "group" or not source.has_sessions(self.workspace_key):
                continue   # only a store that names its groups by key keeps a record of their folders
            self._remembered = True
            if rule.folder_of(self.workspace_key) != str(self.workspace):
                with contextlib.suppress(OSError, RepriseError):  # a store the user may only read still lists
                    source.record_workspace(self.workspace_key, self.workspace)

    def _workspace_keys(self) -> list[str]:
        return self.catalog.workspace_keys()

    def workspaces(self) -> list[WorkspaceInfo]:
        rows = self.catalog.refresh(None)
        by_key: dict[str, list[SessionRow]] = {}
        for row in rows:
            by_key.setdefault(row.workspace_key, []).append(row)
        infos = []
        for key in self._workspace_keys():
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
        for source in self.sources.values():
            recorded = source.listing.workspaces.folder_of(key)
            if recorded:
                return recorded, "recorded"
        named = self.catalog.workspace_folder(key)
        if named:
            return named, "recorded in the session files"
        guessed = guess_workspace_path(key)
        if guessed:
            return guessed, "recovered from the key"
        return None, "unknown"

    # --- naming sessions -------------------------------------------------------------------

    def resolve(self, text: str) -> SessionRef:
        """A full id or a unique prefix or suffix of at least 4 characters: this workspace first, then all."""
        if not isinstance(text, str) or not text:
            raise UsageError("A session id is required.")
        if "/" in text or "\\" in text or text in (".", "..") or len(text) > 128:
            validate_session_id(text)
        for keys in ([self.workspace_key], None):
            rows = self.catalog.refresh(keys)
            ref = _matching_ref([(row.ref, row.id, row.workspace_key, row.path) for row in rows], text,
                                "sessions", self.folder_name)
            if ref is not None:
                return ref
        if len(text) < MIN_PREFIX:
            raise NotFoundError(f"No session with id {text!r}; a prefix or suffix needs at least "
                                f"{MIN_PREFIX} characters.")
        raise NotFoundError(f"No session matches {text!r} in any workspace.", hint="reprise list --all")

    def last_session(self) -> LastSession:
        """The most recently active session of the workspace with at least one turn, as `claude --continue`
        takes it (pins do not count here), and the newer ones without a turn it passed over."""
        rows = sorted((row for row in self.list_sessions().rows if row.problem_code is None and row.ref is not None),
                      key=lambda row: row.activity_ts, reverse=True)
        empty = [row.ref for row in itertools.takewhile(lambda row: row.turns == 0, rows) if row.ref is not None]
        if len(empty) < len(rows):
            ref = rows[len(empty)].ref
            assert ref is not None
            return LastSession(ref, empty)
        if rows:
            raise NotFoundError(f"No session in workspace {self.workspace} has a turn yet ({len(rows)} empty).",
                                hint=f"resume one by its id: reprise resume {rows[0].id[:8]}")
        raise NotFoundError(f"No session in workspace {self.workspace} yet.", hint="reprise new")

    # --- one session ---------------------------------------------------------------------

    def show(self, ref: SessionRef) -> SessionDetail:
        """The session read once: every view of it (detail pane, history, meter) works from this."""
        source = self.source(ref)
        opened = source.open(ref)
        meta = source.read_meta(ref)
        return SessionDetail(ref, opened.path, meta, self.workspace_path_of(ref.workspace_key)[0],
                             opened.size, opened.warnings, opened.transcript, opened.summary_text,
                             opened.history, opened, opened.agent_title, source.label,
                             source.cost_label, *self._deletion_note(source, ref, opened.path),
                             branch=opened.branch, refused=self.refusals(source.name),
                             links=self.session_links(ref, meta, opened.path))

    def session_links(self, ref: SessionRef, meta: SessionMeta, path: Path) -> list[SessionLink]:
        """The sessions of other agents this one is linked to: the continuations Reprise's metadata
        records, and the imports an agent made itself (its source's own record of them)."""
        from .session_links import links_of

        links = links_of(meta)
        for source in self.sources.values():
            with contextlib.suppress(OSError, RepriseError):
                links.extend(source.import_links(ref, path))
        return links

    def refusals(self, source_name: str) -> list[str]:
        """A sentence for each action on a session that its source does not offer ("Codex sessions cannot
        be moved to the trash by Reprise."), for the front ends to say beside the greyed action. The
        meter is said where its figure would be, and keeping only by a source whose agent deletes."""
        source = self.sources[source_name]
        roles = source.roles
        absent: list[tuple[type, str | None]] = [(role, None) for role in (Sender, Trashing) if role not in roles]
        if Forking not in roles and TrimmingInPlace not in roles:
            absent.insert(1, (Forking, "trimmed"))
        return [self.refusal(source_name, role, phrase) for role, phrase in absent]

    def refusal(self, source_name: str, role: type, phrase: str | None = None) -> str:
        """The sentence that refuses an action of `role` on that source's sessions."""
        return missing_role(self.sources[source_name], role, phrase).message

    def _deletion_note(self, source: SessionSource, ref: SessionRef, path: Path) -> tuple[str | None, bool, bool]:
        """When the agent deletes the session's file by age, whether that is within the week and whether
        a copy could be kept; or that Reprise keeps a copy of it. Each front end names its own way to keep."""
        roles = source.roles
        if Swept not in roles:
            return None, False, False
        try:
            info = path.stat()
        except OSError:
            return None, False, False
        keeping = Keeping in roles
        kept = cast(Keeping, source).kept_versions().get(ref) if keeping else None
        version = self._listed_version(source, ref, (info.st_size, info.st_mtime_ns))
        if kept == version:
            return (f"Reprise keeps a copy of this session as it is, out of reach of {source.label}'s clean-up.",
                    False, False)
        deletion = cast(Swept, source).deletion(str(path), version[1], self.clock())
        if deletion is None:
            return None, False, False
        older = " (an older copy is kept)" if kept is not None else ""
        return f"{deletion.phrase}{older}", deletion.at_risk, keeping

    def _listed_version(self, source: SessionSource, ref: SessionRef, own: tuple[int, int]) -> tuple[int, int]:
        """The session's (size, mtime_ns) as its row has it, the version its list row is kept and swept by
        (a session of several files: the newest mtime of them all); the file's `own` stat when the last
        listing saw another version of the file, or none."""
        try:
            listed = self.catalog.listed_stat(source.name, ref.workspace_key, ref.session_id)
        except RepriseError:
            return own   # the catalog is a cache: without it, the file's own stat
        if listed is None or listed[0] != own[0] or listed[1] < own[1]:
            return own
        return listed

    def new_session(self, title: str | None = None, *, source: str | None = None) -> SessionRef:
        """Start a session in the current workspace: a valid 0-turn one of the agent `source` (None: the
        one `new_agent` chooses)."""
        from .session_meta import SessionMeta

        name = source or self.new_agent()
        creator = self._creator(name)
        if runs_only_there(self.sources[name]) and not self.workspace.is_dir():
            raise exact_new_folder_gone(self.sources[name], self.workspace)
        return creator.new_session(self.workspace_key, self.workspace,
                                   SessionMeta(title=clean_title(title), created_at=utc_now_iso()))

    def _creator(self, name: str) -> Creator:
        """The source of that name as a `Creator`; RoleMissingError when it cannot start a session."""
        source = self.sources[name]
        if Creator not in source.roles:
            raise RoleMissingError(f"Reprise cannot start {source.label} sessions.", source=name,
                                   role=Creator.__name__)
        return cast(Creator, source)

    def new_agent(self, name: str | None = None) -> str:
        """The agent `new` starts a session of: the one named, else `[sources] new_agent`, else the
        only enabled agent that can; a UsageError when that leaves a choice to make."""
        able = [name for name, source in self.sources.items() if Creator in source.roles]
        wanted = name or self.settings.sources.new_agent
        if wanted is not None:
            if wanted not in self.sources:
                choice = self.loaded.choices.get(wanted)
                raise UsageError(f"The {wanted} agent is not enabled" + (f" ({choice.why})." if choice else "."))
            self._creator(wanted)
            return wanted
        if len(able) == 1:
            return able[0]
        raise UsageError(f"Which agent should the new session be for? {' and '.join(able)} are enabled.",
                         hint=f"pass --agent {'|'.join(able)}, or set [sources] new_agent in the config file")

    def new_argv(self, ref: SessionRef) -> list[str] | None:
        """The command that starts a session `new_session` named, run in the current workspace (None:
        the session is written already, as Fractal's are)."""
        return self.role(ref, Creator).new_argv(ref, self.workspace)

    def continue_in(self, ref: SessionRef, agent: str, *, dry_run: bool = False, brief: bool = False,
                    budget: int | None = None, brief_text: str | None = None, fresh: bool = False) -> Continuation:
        """Write the session as a new session of `agent` in its own store (`core/continuation.py`), in
        the session's folder: its history, or (`brief`, `brief_text`: one edited by hand) a session whose
        first message is its brief within `budget` tokens; with the command that resumes it and the
        target's meter of its next turn. Continued in that agent before (and that session still there),
        the new one is written on top of it with only the turns since, unless `fresh`."""
        from .continuation import continue_session

        source = self.source(ref)
        if agent not in self.sources:
            choice = self.loaded.choices.get(agent)
            raise UsageError(f"The {agent} agent is not enabled" + (f" ({choice.why})." if choice else "."),
                             hint=f"continue in one of: {', '.join(self.sources)}")
        folder, _ = self.workspace_path_of(ref.workspace_key)
        if folder is None:
            raise UsageError(f"The folder of session {ref.session_id} is not known, so the new session would "
                             "have no folder to run in.", hint="run reprise relink first")
        rows = [row for row in self.catalog.refresh([ref.workspace_key]) if row.ref == ref]
        self.load_details(rows)
        fields = rows[0].details if rows else None
        opened = source.open(ref)
        first = opened.transcript.turns[0].user_message if opened.transcript.turns else None
        meta = source.read_meta(ref)
        earlier = None if fresh else self._earlier(meta, agent, folder)
        since = earlier.through if earlier is not None else 0
        made = self._brief(opened, source.label, agent, folder, budget, brief_text, since) \
            if brief or brief_text is not None else None
        result = continue_session(source, opened, self.sources[agent], Path(folder),
                                  title=meta.title or opened.agent_title or first,
                                  model=fields.model if fields else None, dry_run=dry_run, brief=made,
                                  earlier=earlier)
        new = result.written.ref
        if result.written.written:
            result.resume_argv = self.sources[agent].resume_argv(new, folder)
            if Metered in self.sources[agent].roles:
                try:
                    measured = self.measure(new)
                except RepriseError as exc:
                    result.meter_note = f"not metered: {exc}"
                else:
                    result.context_tokens, result.context_window = measured.total, measured.window
        return result

    def _earlier(self, meta: SessionMeta, agent: str, folder: str) -> Earlier | None:
        """The newest continuation of this session in `agent` that is still there, opened."""
        from .continuation import Earlier
        from .session_links import links_of

        target = self.sources[agent]
        for link in reversed(links_of(meta)):
            if link.direction != "in" or link.how != "continued" or link.source != agent:
                continue
            earlier = SessionRef(workspace_key(folder), link.session_id, agent)
            with contextlib.suppress(RepriseError, OSError):
                if target.exists(earlier):
                    return Earlier(target.open(earlier), link.through_turn or 0)
        return None

    def _brief(self, opened: OpenedSession, label: str, agent: str, folder: str, budget: int | None,
               text: str | None, since: int = 0) -> Brief:
        """The brief of an opened session for `agent`, within `budget` tokens (default: `default_budget`
        of the target's window), counted with the target's encoding; `text`: one edited by hand."""
        from .brief import MIN_BUDGET, Brief, Receipt, build_brief, default_budget
        from .file_facts import check_files, touched_files

        target = self.sources[agent]
        window = cast(Metered, target).context_window(Path(folder)) if Metered in target.roles else None
        limit = budget if budget is not None else default_budget(window)
        if limit < MIN_BUDGET:
            raise UsageError(f"A brief's budget must be at least {MIN_BUDGET} tokens (its receipt alone takes "
                             f"about half of that), not {limit}.")
        encoding = spec_for(self.settings.meter.model or agent, self.settings.meter.models).encoding

        def count(part: str) -> int:
            return count_tokens(part, encoding)

        transcript = opened.transcript
        if text is not None:
            tokens = count(text)
            over = [f"it is {tokens - limit:,} tokens over the budget of {limit:,}"] if tokens > limit else []
            return Brief(text, tokens, limit, len(transcript.turns), over)
        last = transcript.turns[-1] if transcript.turns else None
        receipt = Receipt(label, opened.ref.session_id, folder, opened.branch,
                          (last.ended_at or last.started_at) if last is not None else None, opened.sha256)
        facts = check_files(touched_files(transcript), transcript, folder)
        return build_brief(transcript, receipt, facts, count=count, budget=limit, since=since)

    def rename(self, ref: SessionRef, title: str) -> SessionMeta:
        return self.source(ref).update_meta(ref, lambda meta: setattr(meta, "title", clean_title(title)))

    def set_pinned(self, ref: SessionRef, pinned: bool) -> SessionMeta:
        return self.source(ref).update_meta(ref, lambda meta: setattr(meta, "pinned", pinned))

    # --- handing a session to the agent --------------------------------------------------

    def resume_plan(self, ref: SessionRef, *, for_exec: bool = True) -> ResumePlan:
        """The argv that resumes this session. For a real handoff (`for_exec`), what the agent's next
        save would drop is archived first, and a program not on PATH is told (`program_missing`),
        nothing archived then."""
        source = self.source(ref)   # every source resumes (`Resumer` is required)
        if not source.exists(ref):
            raise NotFoundError(f"No session {ref.session_id} in workspace {self.folder_name(ref.workspace_key)}.",
                                path=source.session_path(ref))
        workspace, where = self.workspace_path_of(ref.workspace_key)
        moved: list[str] = []
        if runs_only_there(source) and folder_is_gone(workspace):
            raise exact_folder_gone(source, ref.session_id, workspace)
        if runs_anywhere(source) and folder_is_gone(workspace):
            # Claude Code finds a session by its id from any folder (checked with the real client),
            # and records the folder it was resumed in from then on.
            here = self.existing_folder()
            gone = f"its folder {workspace} no longer exists" if workspace else "its folder is unknown"
            moved.append(f"This {source.label} session's {gone.removeprefix('its ')}; {source.label} resumes it "
                         f"from {here} and records that folder in it from now on.")
            workspace, where = str(here), "current directory"
        if workspace is None:
            raise RepriseError(
                f"Reprise does not know the folder of session {ref.session_id}'s workspace.",
                hint="run reprise once inside that folder, or `reprise relink` it")
        if not Path(workspace).is_dir():
            raise RepriseError(f"The folder of this session's workspace is gone: {workspace}.",
                               hint=f"if the project moved: reprise relink {workspace} NEW_FOLDER")
        argv = source.resume_argv(ref, workspace)
        missing = None
        if for_exec and shutil.which(argv[0]) is None:   # each front end says it its own way
            missing = AgentError(f"The agent program {argv[0]!r} was not found on PATH.",
                                 hint=f"install it, or set {source.resume_setting} in the config file "
                                      f"({self.loaded.config_path})")
        handoff = source.before_handoff(ref, Path(workspace), for_exec=for_exec and missing is None)
        notes, snapshot, result = moved + handoff.notes, handoff.snapshot, handoff.meter
        if for_exec and where in ("current directory", "recorded"):
            with contextlib.suppress(OSError, RepriseError):
                source.record_workspace(ref.workspace_key, Path(workspace))
        if result is not None and result.state == "over":
            notes.append(f"Its context ({result.total:,} tokens) is over the {result.model} window "
                         f"({result.window:,}); consider `reprise trim {ref.session_id} --fit`.")
        return ResumePlan(ref, argv, workspace, notes, snapshot, result, handoff.writer, missing)

    def existing_folder(self) -> Path:
        """Where a session whose own folder is gone runs, for an agent that finds it by id from any folder:
        the workspace, or the folder Reprise runs in when the workspace named (`--workspace`) is gone too."""
        if self.workspace.is_dir():
            return self.workspace
        try:
            return Path(os.getcwd())
        except FileNotFoundError:
            raise RepriseError(f"Neither the workspace {self.workspace} nor the folder Reprise runs in exists.",
                               hint="run Reprise from a folder that exists") from None

    # --- the context meter ---------------------------------------------------------------

    def measure(self, ref: SessionRef, message: str = "", *, model: str | None = None,
                via: str = SEND) -> MeterResult:
        """The next turn's meter with this draft, sent `via` the agent's send command (the composer,
        `reprise send`) or its own terminal UI (`resume`)."""
        meter = self.role(ref, Metered)
        opened = self.source(ref).open(ref)
        result = meter.prepare_meter(opened, self._meter_workspace(ref), model=model, via=via).with_message(message)
        return result if result.via == via else replace(result, via=via)

    def prepare_meter(self, detail: SessionDetail, *, via: str = SEND) -> LiveMeter:
        """The meter of a shown session, ready to measure messages as they are typed."""
        return self.role(detail.ref, Metered).prepare_meter(detail.opened, self._meter_workspace(detail.ref), via=via)

    def session_path(self, ref: SessionRef) -> str:
        return str(self.source(ref).session_path(ref))

    def context_window(self, ref: SessionRef, model: str | None = None) -> int | None:
        """The window of the model the meter counts this session's turns for; None when not known."""
        return self.role(ref, Metered).context_window(self._meter_workspace(ref) or self.workspace, model)

    def _meter_workspace(self, ref: SessionRef) -> Path | None:
        path = self.workspace_path_of(ref.workspace_key)[0]
        return Path(path) if path else None

    def resume_cost_key(self, key: str, model: str | None = None, *, source: str) -> str:
        """What a cached resume cost depends on besides the file: model, counting and AGENTS.md."""
        path = self.workspace_path_of(key)[0]
        chosen = self.sources[source]
        if Metered not in chosen.roles:
            raise missing_role(chosen, Metered)
        return cast(Metered, chosen).resume_cost_key(Path(path) if path else None, self.workspace, model)

    def fill_resume_costs(self, rows: list[SessionRow], *, first: Iterable[SessionRow] = (),
                          should_stop: Callable[[], bool] = lambda: False,
                          progress: Callable[[CostProgress], object] = lambda _: None) -> int:
        """Compute and cache the meter total of rows whose cached figure is missing or stale, the rows
        of `first` (those on screen) before the rest; `progress` hears how far it is every 50 rows and
        at the end. One session is read at a time and nothing of it is kept but its figure."""
        keys: dict[tuple[str, str], str] = {}
        needed: list[tuple[SessionRow, SessionRef, Metered, str]] = []
        for row in in_priority_order(rows, first):
            ref = row.ref
            if row.problem_code or ref is None:
                continue
            if Metered not in self.source(ref).roles:
                continue
            wanted = keys.get((ref.source, ref.workspace_key)) or keys.setdefault(
                (ref.source, ref.workspace_key), self.resume_cost_key(ref.workspace_key, source=ref.source))
            if row.resume_cost is None or row.resume_cost_key != wanted:
                needed.append((row, ref, cast(Metered, self.source(ref)), wanted))
        done: list[SessionRow] = []
        computed = 0
        for index, (row, ref, meter, wanted) in enumerate(needed, 1):
            if should_stop():
                break
            cost = meter.resume_cost(ref, self._meter_workspace(ref), row.size, row.mtime_ns, row.context_tokens)
            if cost is not None:
                row.resume_cost, row.resume_cost_key = cost, wanted
                done.append(row)
                computed += 1
            if index % 50 == 0 or index == len(needed):
                if done:
                    self.catalog.set_resume_costs(done)
                    done = []
                progress(CostProgress(index, len(needed)))
        if done:
            self.catalog.set_resume_costs(done)
        return computed

    # --- turns ---------------------------------------------------------------------------

    def check_sendable(self, ref: SessionRef, message: str, *, confirm_over: bool = False) -> MeterResult | None:
        """Refuse, with the reason, a turn that should not be sent now; return the estimate (None for a
        source without a meter)."""
        if not message.strip():
            raise UsageError("The message is empty.")
        sender = self.role(ref, Sender)
        return sender.check_sendable(ref, message, self._meter_workspace(ref), confirm_over=confirm_over)

    @_as_reprise_run
    def send_turn(self, ref: SessionRef, message: str, *, agent: str | None = None, confirm_over: bool = False,
                  cancel: threading.Event | None = None,
                  on_begin: Callable[[str], object] = lambda turn_id: None) -> SendResult:
        """Run one turn with the chosen backend and record it in the session's format."""
        from .sending import send_turn

        return send_turn(self, ref, message, agent=agent, confirm_over=confirm_over, cancel=cancel,
                         on_begin=on_begin)

    def record_signal(self, ref: SessionRef, signal_name: str, turn_id: str | None, status: str | None) -> None:
        """The audit line of a turn ended by a signal to Reprise (the only trace when no terminal is left)."""
        with contextlib.suppress(OSError, ValueError):
            self.source(ref).audit.append(ref.workspace_key, "interrupt", session_id=ref.session_id,
                                          options={"signal": signal_name, "turn_id": turn_id},
                                          result=status or "not started")

    def estimates_vs_measured(self, session: SessionRef | SessionDetail) -> list[tuple[int, int, int]]:
        """(turn number, estimate before the turn, context the agent reported) for turns that have both.
        Given a shown session, nothing is read again."""
        ref, opened = self._opened(session)
        source = self.source(ref)
        if MeterCalibration not in source.roles:
            return []
        meta = session.meta if isinstance(session, SessionDetail) else source.read_meta(ref)
        return cast(MeterCalibration, source).estimates_vs_measured(opened, meta)

    def stale_pending(self, session: SessionRef | SessionDetail) -> list[tuple[int, str, str | None]]:
        """(turn number, turn id, created_at) of the pending turns whose agent is gone (its liveness rule)."""
        ref = session.ref if isinstance(session, SessionDetail) else session
        source = self.source(ref)
        if Recovering not in source.roles:
            return []
        opened = self._opened(session)[1]
        return [(turn.number or 0, turn.turn_id, turn.created_at)
                for turn in cast(Recovering, source).stale_pending(opened)]

    def _opened(self, session: SessionRef | SessionDetail) -> tuple[SessionRef, OpenedSession]:
        if isinstance(session, SessionDetail):
            return session.ref, session.opened
        return session, self.source(session).open(session)

    def mark_stale_interrupted(self, ref: SessionRef) -> list[str]:
        stale = [turn_id for _, turn_id, _ in self.stale_pending(ref)]
        return self.role(ref, Recovering, "recovered").mark_interrupted(ref, stale) if stale else []

    # --- trimming and undoing ------------------------------------------------------------

    def trim(self, ref: SessionRef, options: TrimOptions, *, dry_run: bool = False, fork: bool = False,
             force: bool = False, model: str | None = None, expected_sha256: str | None = None) -> TrimResult:
        """Preview, then (unless dry_run) archive and write the trimmed session, in place or as a fork.
        `expected_sha256` applies a previewed plan only to the file it was previewed on."""
        source = self.source(ref)
        # A preview of a source that only forks shows the fork it would write (nothing is written either way).
        if fork or (dry_run and TrimmingInPlace not in source.roles and Forking in source.roles):
            trim = self.role(ref, Forking, "trimmed as a fork").fork
        elif TrimmingInPlace in source.roles:
            trim = cast(TrimmingInPlace, source).trim_in_place
        elif Forking in source.roles:
            raise ForkOnlyError(f"{source.label}'s own {source.spec.session_files} are never rewritten: use --fork.",
                                hint=f"reprise trim {ref.session_id} --fork ...")
        else:
            raise missing_role(source, TrimmingInPlace, "trimmed")
        result = trim(ref, options, self._meter_workspace(ref), dry_run=dry_run, force=force, model=model,
                      expected_sha256=expected_sha256)
        if not dry_run:
            from . import undo

            self.undo_log.note(undo.TRIMMED, result.ref)
        return result

    def turn_sizes(self, ref: SessionRef) -> list[TurnSize]:
        """Each turn with its size and tokens (counted with the meter's encoding), to choose turns to remove."""
        from .trimming import turn_sizes

        opened = self.source(ref).open(ref)
        encoding = self.measure(ref).encoding if Metered in self.source(ref).roles else DEFAULT_ENCODING
        return turn_sizes(opened.transcript, lambda text: count_tokens(text, encoding))

    def restore(self, ref: SessionRef, *, archive_digest: str | None = None, all_trims: bool = False,
                dry_run: bool = False, force: bool = False) -> RestoreResult:
        return self._undoer(ref, "restored").restore(ref, archive_digest=archive_digest, all_trims=all_trims,
                                                     dry_run=dry_run, force=force)

    def _undoer(self, ref: SessionRef, phrase: str) -> UndoingTrims:
        """The session's source as the one that undoes its trims (either kind of trim does)."""
        source = self.source(ref)
        if TrimmingInPlace in source.roles:
            return cast(TrimmingInPlace, source)
        return self.role(ref, Forking, phrase)

    def archive_entries(self, ref: SessionRef) -> list[ArchiveEntry]:
        return self.source(ref).archive.entries(ref)

    def archive_bytes(self, ref: SessionRef, digest_text: str) -> tuple[ArchiveEntry, bytes]:
        """An archive entry named by its digest or a prefix of it, and its verified bytes."""
        from .archive import find_entry

        archive = self.source(ref).archive
        prefix = digest_text.strip().lower()
        entry = find_entry([e for e in archive.entries(ref) if e.digest.startswith(prefix)], digest_text)
        return entry, archive.read(ref, entry.digest)

    def can_undo_trim(self, ref: SessionRef) -> bool:
        """Whether `restore` without options has a trim of this session to undo."""
        roles = self.source(ref).roles
        return (TrimmingInPlace in roles or Forking in roles) and self._undoer(ref, "restored").can_undo_trim(ref)

    def undo_step(self, current: SessionRef | None, current_title: str | None = None, *,
                  all_workspaces: bool = False) -> undo.UndoStep | None:
        """What undo would take back now (`core/undo.py` has the policy), or None."""
        from . import undo

        return undo.next_step(self, current, current_title, all_workspaces=all_workspaces)

    def undo(self, step: undo.UndoStep) -> list[str]:
        """Take back `step`; the notes it leaves."""
        from . import undo

        return undo.take(self, step)

    # --- trash, retention, relink, audit ---------------------------------------------------

    def remove(self, ref: SessionRef, *, force: bool = False, title: str | None = None) -> TrashEntry:
        """Move a session to the trash; `title` is what undo's question calls it when the trash has none."""
        from . import undo

        entry = self.role(ref, Trashing).remove(ref, force=force)
        self.undo_log.note(undo.TRASHED, ref, entry.title or title)
        return entry

    def _keys(self, all_workspaces: bool) -> list[str]:
        return self._workspace_keys() if all_workspaces else [self.workspace_key]

    def trash_entries(self, *, all_workspaces: bool = False) -> list[TrashEntry]:
        keys = self._keys(all_workspaces)
        return [entry for source in self.sources_with(Trashing) for entry in source.trash_entries(keys)]

    def resolve_trashed(self, text: str) -> SessionRef:
        """A trashed session by full id or unique prefix: this workspace first, then all."""
        if "/" in text or len(text) > 128:
            validate_session_id(text)
        for all_workspaces in (False, True):
            entries = self.trash_entries(all_workspaces=all_workspaces)
            ref = _matching_ref([(e.ref, e.ref.session_id, e.ref.workspace_key, None) for e in entries], text,
                                "trashed sessions", self.folder_name)
            if ref is not None:
                return ref
        raise NotFoundError(f"No trashed session matches {text!r}.", hint="reprise trash list --all")

    def trash_restore(self, ref: SessionRef) -> TrashEntry:
        return self.role(ref, Trashing, "restored from the trash").trash_restore(ref)

    def purge(self, *, all_workspaces: bool = False, older_than: float | None = None,
              confirmed: bool = False) -> PurgeResult:
        keys = self._keys(all_workspaces)
        return _merged_purges([source.purge(keys, confirmed=confirmed, older_than=older_than)
                               for source in self.sources_with(Trashing)])

    def prune(self, options: PruneOptions, *, all_workspaces: bool = False, confirmed: bool = False) -> PruneResult:
        from .retention import select_prune

        rows = self.catalog.refresh(None if all_workspaces else [self.workspace_key])
        self.catalog.load_details(rows)
        self._mark_agent_deletions(rows)   # those the agent deletes soon: offered to keep instead
        now = time.time()

        def running(ref: SessionRef) -> str | None:
            source = self.source(ref)
            if Live not in source.roles:
                return None   # no liveness rule: nothing tells a session being written
            try:
                turn = cast(Live, source).running(ref, now=now)
            except RepriseError:
                return None  # unreadable now: the move itself reports it
            return f"a live pending turn ({turn.turn_id}: {turn.why})" if turn else None

        trashing = {name: cast(Trashing, source) for name, source in self.sources.items() if Trashing in source.roles}
        trashable = [row for row in rows if row.ref is None or row.ref.source in trashing]
        selection = select_prune(trashable, options, now=now, running=running)
        return _pruned_per_source(selection, trashing, confirmed=confirmed)

    def relink(self, old: str, new_dir: str, *, force: bool = False) -> RelinkResult:
        """Move the sessions of a moved repository to its new folder's key. OLD is a key or the old path."""
        try:
            old_key = validate_workspace_key(old)
        except RepriseError:
            old_key = workspace_key(old)
        relinking = [source for source in self.sources.values() if Relinking in source.roles]
        if not relinking:
            raise RoleMissingError("None of the enabled sources keeps its sessions by workspace: there is "
                                   "nothing to relink.", source="", role=Relinking.__name__)
        holder = next((source for source in relinking if cast(Relinking, source).has_sessions(old_key)), relinking[0])
        return cast(Relinking, holder).relink(old_key, new_dir, force=force)

    def audit_records(self, *, all_workspaces: bool = True) -> list[AuditRecord]:
        keys = self._keys(all_workspaces)
        logs = self._audit_logs()
        records = [record for log in logs for record in log.read(keys)]
        return records if len(logs) == 1 else sorted(records, key=lambda record: record.time)

    def audit_problems(self) -> list[Problem]:
        """The lines and logs the last `audit_records` skipped, each named by file and line."""
        return [problem for log in self._audit_logs() for problem in log.problems]

    def _audit_logs(self) -> list[AuditLog]:
        """Each audit log once: sources whose own files share a root (Claude Code's and Codex's, in
        Reprise's data folder) write to the same `audit.jsonl`, and reading it per source showed
        every one of their operations twice."""
        logs: dict[Path, AuditLog] = {}
        for source in self.sources.values():
            logs.setdefault(source.audit.paths.root, source.audit)
        return list(logs.values())

    # --- health --------------------------------------------------------------------------

    def doctor(self, *, clean: bool = False) -> DoctorReport:
        report = DoctorReport()
        rows = self.catalog.refresh(None)
        self.catalog.load_details(rows)
        for row in rows:
            if row.problem_code:
                report.problems.append(Problem(row.path, row.problem_code, row.problem_message or "",
                                               row.problem_field, next_step=self._repair_step(row)))
            elif row.fields.warning:
                step = f"look at it before a trim rewrites it: reprise show {row.id}"
                report.warnings.append(Problem(row.path, "warning", row.fields.warning, severity="warning",
                                               next_step=step))
        report.problems.extend(self.catalog.scan_problems)
        report.problems.extend(Problem(failure.origin, "source_not_loaded", failure.line)
                               for failure in self.load_failures)
        report.problems.extend(Problem(entry.origin, "source_not_loaded", f'the source "{entry.name}" ({entry.origin}) '
                                       "is installed where Reprise's start does not look for sources; it is not loaded")
                               for entry in missed_by_scan())
        report.search_index = self.index_state()
        for source in self.sources_with(Diagnosed):
            problems, temps, cleaned, notes = source.health(clean=clean, stale_after=STALE_TEMP_S)
            report.problems.extend(problems)
            report.temp_files.extend(temps)
            report.cleaned.extend(cleaned)
            report.notes.extend(notes)
        return report

    def _repair_step(self, row: SessionRow) -> str:
        """What to do about a session file that cannot be read: open it; move it aside; and where
        Reprise kept copies of it (its archive, a copy in the trash)."""
        steps = [f"open the file: {row.path}"]
        ref = row.ref
        if ref is not None and self.can(ref.source, Trashing):
            steps.append(f"or move it to the trash: `reprise rm {ref.session_id}`")
        if ref is not None:
            with contextlib.suppress(RepriseError, OSError):
                if self.source(ref).archive.entries(ref):
                    steps.append(f"earlier copies are in the archive: `reprise archive list {ref.session_id}`")
            with contextlib.suppress(RepriseError, OSError):
                if any(entry.ref == ref for entry in self.trash_entries(all_workspaces=True)):
                    steps.append(f"a copy is in the trash: `reprise trash restore {ref.session_id}` "
                                 "(after moving this one aside)")
        return "; ".join(steps)

    def config_report(self) -> list[tuple[str, object, str]]:
        return config_module.effective(self.loaded)

    def source_choices(self) -> list[config_module.SourceChoice]:
        """Each source, whether it is on, its roots and why (`reprise config`); a registered source
        that did not load or start is off, and says why."""
        failed = {failure.name: failure for failure in self.load_failures if failure.name}
        choices = [config_module.SourceChoice(choice.name, False, choice.roots, failed.pop(choice.name).line)
                   if choice.name in failed else choice for choice in self.loaded.choices.values()]
        return choices + [config_module.SourceChoice(name, False, (), failure.line) for name, failure in failed.items()]


def _due_by(deletion: AgentDeletion | None, horizon: float) -> bool:
    """Whether an agent deletes a session by `horizon`: a time at or before it, or no time (a count's
    rule) but due already."""
    if deletion is None:
        return False
    return deletion.at_risk if deletion.at is None else deletion.at <= horizon


def _matching_ref(candidates: list[tuple[SessionRef | None, str, str, str | None]], text: str,
                  what: str, folder_name: Callable[[str], str]) -> SessionRef | None:
    """The one candidate whose id is `text`, else the one whose id starts with it, else the one whose
    id ends with it (at least MIN_PREFIX characters); None when none does; AmbiguousError when several
    do. Each candidate is (ref, id, workspace key, path): a file whose name is not a valid id has no ref.
    The candidates an AmbiguousError lists name their folder (`folder_name` of the key), never the key.
    Candidates of one session (the files of a store that keeps a session in several) count once."""
    candidates = _one_per_session(candidates)
    exact = [c for c in candidates if c[1] == text]
    if len(exact) > 1:
        raise AmbiguousError(f"Session id {text} exists in {len(exact)} workspaces.",
                             [f"{name} in {folder_name(key)}" for _, name, key, _ in exact])
    # A part of an id is its start, else its end (a Codex id's first characters are its time, shared by
    # months of sessions; its last ones are random), without the ellipsis a shortened id is shown with.
    part = text.strip("…")
    matches = exact
    if not matches and len(part) >= MIN_PREFIX:
        matches = [c for c in candidates if c[1].startswith(part)] or [c for c in candidates if c[1].endswith(part)]
    if len(matches) > 1:
        raise AmbiguousError(f"{text!r} matches {len(matches)} {what}; type more of the id.",
                             sorted(f"{name} ({folder_name(key)})" for _, name, key, _ in matches)[:20])
    if not matches:
        return None
    ref, _, _, path = matches[0]
    if ref is None:
        raise UsageError(f"{path}: the file name is not a valid session id.", path=path)
    return ref


def _one_per_session(candidates: list[tuple[SessionRef | None, str, str, str | None]]
                     ) -> list[tuple[SessionRef | None, str, str, str | None]]:
    """The candidates, a session named by several of them (one per file) once."""
    seen: set[SessionRef] = set()
    kept = []
    for candidate in candidates:
        ref = candidate[0]
        if ref is None or ref not in seen:
            kept.append(candidate)
        if ref is not None:
            seen.add(ref)
    return kept


def _pruned_per_source(selection: PruneSelection, sources: dict[str, Trashing], *,
                       confirmed: bool) -> PruneResult:
    """Each source moves its own selected sessions (and may protect more: a live one); one result."""
    from .retention import PruneSelection
    from .trash_results import PruneResult

    everyone = selection.selected + selection.protected + selection.skipped
    result = PruneResult(selection, confirmed)
    lists: dict[str, list[PruneCandidate]] = {"selected": [], "protected": [], "skipped": []}
    for name in sorted({c.ref.source for c in everyone}):
        part = PruneSelection(selection.options, *([c for c in getattr(selection, bucket) if c.ref.source == name]
                                                   for bucket in lists))
        done = sources[name].prune(part, confirmed=confirmed)
        for bucket, found in lists.items():
            found.extend(getattr(part, bucket))
        result.moved.extend(done.moved)
        result.failed.extend(done.failed)
    selection.selected, selection.protected, selection.skipped = lists["selected"], lists["protected"], lists["skipped"]
    return result


def _merged_purges(results: list[PurgeResult]) -> PurgeResult:
    from .trash_results import PurgeResult

    merged = PurgeResult()
    for result in results:
        for name in ("purged", "kept", "archives_deleted", "failed", "leftovers", "finished", "notes"):
            getattr(merged, name).extend(getattr(result, name))
    return merged


def _rows_of_sources(rows_read: Callable[[list[SessionRow]], object], sources: set[str],
                     rows: list[SessionRow]) -> None:
    """Pass on the rows of these sources, if any."""
    rows = [row for row in rows if row.source in sources]
    if rows:
        rows_read(rows)


def clean_title(title: str | None) -> str | None:
    if title is None:
        return None
    cleaned = " ".join("".join(ch if ch.isprintable() else " " for ch in title).split())
    return cleaned[:200] or None


def activity_time(row: SessionRow) -> float:
    """Seconds since the epoch of a row's last activity (its newest turn time, else the file's mtime)."""
    return max(row.activity_ts, 0.0)


def sort_key(name: str) -> str:
    """The sort a name asks for (an old name gives its new one); UsageError for any other name."""
    key = SORT_ALIASES.get(name, name)
    if key not in SORTS:
        raise UsageError(f"Unknown sort {name!r}; choose one of {', '.join(SORTS)}.")
    return key


_FIGURES: dict[str, Callable[[SessionRow], float]] = {
    "updated": lambda r: r.activity_ts,
    "turns": lambda r: r.turns,
    "size": lambda r: r.size,
    "context": lambda r: r.context_tokens,
    "next": lambda r: r.resume_cost if r.resume_cost is not None else -1,
}


_BY_ACTIVITY = attrgetter("activity_ts")
_PINNED = attrgetter("pinned")


def sort_rows(rows: list[SessionRow], sort: str, *, reverse: bool = False) -> None:
    """Pinned first, then by the chosen figure, largest or newest first (smallest or oldest first
    when reversed); ties by activity in the same direction. An alias of a sort sorts as it."""
    name = sort_key(sort)
    figure = _FIGURES[name]
    # By activity, the tie-break is the figure itself: the attribute alone sorts the same, without a tuple a row.
    by_figure = _BY_ACTIVITY if name == "updated" else lambda r: (figure(r), r.activity_ts)
    rows.sort(key=by_figure, reverse=not reverse)
    if any(map(_PINNED, rows)):
        rows.sort(key=_PINNED, reverse=True)   # stable: each part keeps the order above
