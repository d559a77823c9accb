"""What every part of the main screen shares: its reactive state, the service, the app, the
current row and the one way to run a service call from a key."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast

from textual import work
from textual.reactive import var
from textual.screen import Screen

from reprise.core.errors import RepriseError
from reprise.core.meter import LiveMeter, MeterResult
from reprise.core.paths import SessionRef
from reprise.core.rows import SessionRow
from reprise.core.service import SessionDetail

from ...actions import COMPOSER, LIST, PICK
from ...debounce import Debouncer
from ...widgets.composer import Composer
from ...widgets.session_list import SessionList
from ...workers import ReportsWorkerErrors

if TYPE_CHECKING:
    from reprise.core.progress import Progress
    from reprise.core.service import Service

    from ...app import RepriseApp

T = TypeVar("T")
METER_DEBOUNCE_SECONDS = 0.05


@dataclass(frozen=True, slots=True)
class Handoff:
    """What the app exits with when the user resumes: the command line does the exec."""

    argv: list[str]
    cwd: str
    notes: list[str]   # read before the agent starts: on a terminal the command line waits for Enter
    said: list[str] = field(default_factory=list)   # printed before the agent starts, with no wait


@dataclass(frozen=True, slots=True)
class Picked:
    ref: SessionRef
    workspace: str | None


@dataclass(slots=True)
class RunningTurn:
    path: str
    ref: SessionRef
    started: float
    cancel: threading.Event
    done: threading.Event = field(default_factory=threading.Event)   # the turn's worker has returned


class ScreenBase(ReportsWorkerErrors, Screen[None]):
    """The main screen's state. Its parts (`rows`, `preview`, `composing`, `session_actions`) each
    add one job's handlers; `screen.MainScreen` puts them together with the layout."""

    current_row: var[SessionRow | None] = var(None, bindings=True)
    detail_failed: var[bool] = var(False, bindings=True)      # the current row's detail could not be read
    running: var[RunningTurn | None] = var(None, bindings=True)
    filter_text: var[str] = var("")
    sort: var[str] = var("updated")
    sort_reverse: var[bool] = var(False)          # smallest or oldest first
    agent_filter: var[str | None] = var(None)     # one source's sessions only
    hide_agent_hidden: var[bool] = var(False)     # leave out what the agent's own picker hides
    rows_loading: var[bool] = var(True)
    narrow: var[bool] = var(False, bindings=True)   # the preview is stacked under the list, the footer short
    preview_shown: var[bool] = var(True, bindings=True)

    def __init__(self, service: Service, *, mode: str = "browse", agent: str | None = None):
        super().__init__()
        self.service = service
        self.mode = mode
        self.agent = agent
        self.comparisons: list[tuple[int, int, int]] = []
        self.history_to_end: str | None = None
        self.sent_text = ""
        self.cleared_draft = ""   # what ctrl+c cleared; ctrl+z brings it back
        self.detail_window: int | None = None
        self.all_rows: list[SessionRow] = []
        self.scope_all = False
        self.scope_key: str | None = None
        self.detail: SessionDetail | None = None
        self.prepared: LiveMeter | None = None
        self.meter_result: MeterResult | None = None
        self.meter_runs = Debouncer(self, METER_DEBOUNCE_SECONDS, self._measure)
        self.loaded_once = False
        self.frozen_once = False
        self.costs_progress: str | None = None  # "costs 1,200/4,000" while the background fill runs
        self.read_progress: str | None = None   # "reading 1,200/4,000 sessions…" while the rows load
        self.kept_before_sweep = 0   # sessions kept by this run's listings before their agent's sweep
        self.hidden_count = 0        # of the rows in scope: those the agents' own pickers hide
        self.problem_count = 0       # ...and those that cannot be read
        self._progress_posted = 0.0
        self._read_so_far: Progress | None = None   # the newest progress the listing's worker heard
        self.rows_signature: tuple[object, ...] = ()
        self.rows_streamed = False   # rows read during the listing going on were shown (RowsRead)
        self.first_shown: list[SessionRow] | None = None   # the stored rows drawn at mount (`FirstRows`)
        self.scope_where = f"workspace {service.workspace}"
        choices = service.ui_choices()   # remembered across runs (core/ui_state.py)
        self.preview_when_narrow = choices.preview_when_narrow
        self.set_reactive(ScreenBase.hide_agent_hidden, not choices.show_agent_hidden)

    @property
    def interaction_mode(self) -> str:
        """pick (the picker), composer (writing a message) or list: which keys are offered."""
        if self.mode == "pick":
            return PICK
        return COMPOSER if isinstance(self.focused, Composer) else LIST

    @property
    def reprise_app(self) -> RepriseApp:
        """The app this screen runs in, with Reprise's own attributes (clock, follow_disk, report_error)."""
        return cast("RepriseApp", self.app)

    def _measure(self, text: str, generation: int) -> None:
        """Meter the draft (the composing part does it); the debouncer calls this."""
        raise NotImplementedError

    def update_header(self) -> None:
        """Redraw the header and the list's column titles (the screen does it)."""
        raise NotImplementedError

    def place_toasts(self) -> None:
        """Keep notifications off the lines at the bottom (the screen does it)."""
        raise NotImplementedError

    def load_rows(self, select: str | None = None) -> None:
        """List the sessions in scope again (the rows part does it)."""
        raise NotImplementedError

    def load_detail(self, row: SessionRow) -> None:
        """Read a row's detail and meter (the preview part does it)."""
        raise NotImplementedError

    def current_ref(self) -> SessionRef | None:
        row = self.query_one(SessionList).current
        return row.ref if row is not None and not row.problem_code else None

    def action_pick(self) -> None:
        """The picker's Enter: the app exits with the session picked."""
        ref = self.current_ref()
        if ref is not None and not self.detail_failed:
            self.app.exit(Picked(ref, self.service.workspace_path_of(ref.workspace_key)[0]))

    def remember(self, **choices: bool) -> None:
        """Keep a screen choice for the next run, in a worker; a failure is reported, the choice kept for this run."""
        self.run_service(lambda: self.service.remember(**choices))

    def reload_current(self, path: str) -> None:
        """List again with `path` selected, and read its detail again when it is the current row."""
        self.load_rows(select=path)
        row = self.query_one(SessionList).current
        if row is not None and row.path == path:
            self.load_detail(row)

    # --- service calls from keys -----------------------------------------------------------

    def run_service(self, call: Callable[[], T], then: Callable[[T], object] | None = None,
                    success: str | None = None) -> None:
        """Run a service call in a worker; report errors in one place; continue on the UI thread."""
        self._run_service(call, then, success)

    @work(thread=True, group="action", exit_on_error=False)
    def _run_service(self, call: Callable[[], Any], then: Callable[[Any], object] | None,
                     success: str | None) -> None:
        try:
            result = call()
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        if success:
            self.app.call_from_thread(self.app.notify, success)
        if then is not None:
            self.app.call_from_thread(then, result)
