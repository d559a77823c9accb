"""The main screen: header, session list, detail tabs, the running turn's line, meter line and
composer; in pick mode a list, a one-line prompt and the preview on demand.

Its state that decides what is shown (filter, sort, agent, the current row, a running turn, the
layout) is reactive, with watchers; what decides which keys work is `bindings=True`, so the footer
follows it. Every service call runs in a thread worker that only posts a message back
(`tui/messages.py`). Its keys come from `tui/actions.py`.
"""

from __future__ import annotations

import gc
import re
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.reactive import var
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input, Static, TabbedContent, TextArea
from textual.worker import get_current_worker

from reprise.core import faults
from reprise.core.errors import OverWindowError, RepriseError
from reprise.core.meter import LiveMeter, MeterResult
from reprise.core.paths import SessionRef, id_argument
from reprise.core.rows import SessionRow
from reprise.core.search_index import SearchHit
from reprise.core.service import SORTS, ResumePlan, SessionDetail, sort_key, sort_rows

from ..actions import COMPOSER, LIST, PICK, SCREEN_MODES, bindings
from ..debounce import Debouncer
from ..format import counted, human_size, local_now
from ..messages import CostsFilled, DetailLoaded, FilesRead, MeterPrepared, MeterUpdated, RowsLoaded, TurnFinished
from ..reports.search import matched_words
from ..text import safe_line, safe_text
from ..widgets.composer import Composer
from ..widgets.detail import DetailPane, Landing
from ..widgets.filter_prompt import FilterPrompt, PickPrompt
from ..widgets.meter import MeterBar
from ..widgets.running_turn import RunningTurnLine
from ..widgets.session_list import SessionList
from ..workers import ReportsWorkerErrors
from .dialogs import ChoiceDialog, CommandDialog, ConfirmDialog, TextDialog, session_name
from .help import KeysScreen
from .search import SearchScreen
from .trim import TrimDialog, TrimRequest

if TYPE_CHECKING:
    from reprise.core.progress import Progress

    from ..app import RepriseApp

REFRESH_SECONDS = 1.0
METER_DEBOUNCE_SECONDS = 0.05
KEEP_DUE_DAYS = 7   # the palette's "keep every session due": what `reprise keep --due` keeps by default
NARROW_COLUMNS = 100   # below this the preview goes under the list, so titles get the full width
# the actions that need a readable session; greyed on a row whose file or detail cannot be read
NEEDS_READABLE = frozenset({"resume", "pick", "trim", "rename", "pin", "keep", "copy_command"})
NEEDS_ROW = NEEDS_READABLE | {"delete", "copy_id"}


@dataclass(frozen=True, slots=True)
class Handoff:
    """What the app exits with when the user resumes: the command line does the exec."""

    argv: list[str]
    cwd: str
    notes: list[str]


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


def matches(row: SessionRow, needle: str) -> bool:
    """The `/` filter: title, first and last message, or id prefix."""
    needle = needle.lower()
    return (row.file_id.startswith(needle) or needle in (row.title or row.fields.agent_title or "").lower()
            or needle in row.fields.first_message.lower() or needle in row.fields.last_message.lower()
            or (row.problem_message is not None and needle in row.problem_message.lower()))


WORD_START = re.compile(r"\w+")


def match_rank(row: SessionRow, needle: str) -> int:
    """How well a row that passes the filter matches it, best first: its title starts with the text
    (0), a word of its title does (1), the title holds it (2), its id starts with it (3), else its
    messages hold it (4). The best-ranked row is selected; a tie goes to the higher row."""
    needle = needle.lower()
    title = row.display_title.lower()
    if title.startswith(needle):
        return 0
    if any(title.startswith(needle, word.start()) for word in WORD_START.finditer(title)):
        return 1
    if needle in title:
        return 2
    return 3 if row.file_id.startswith(needle) else 4


class MainScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS = bindings("screen")

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

    def __init__(self, service, *, mode: str = "browse", agent: str | None = None):
        super().__init__()
        self.service = service
        self.mode = mode
        self.agent = agent
        self.comparisons: list[tuple[int, int, int]] = []
        self.history_to_end: str | None = None
        self.last_undo: tuple[str, SessionRef] | None = None
        self.trashed_titles: dict[SessionRef, str] = {}   # titles of rows moved to the trash here
        self.sent_text = ""
        self.cleared_draft = ""   # what ctrl+c cleared; ctrl+z brings it back
        self.detail_window: int | None = None
        self.all_rows: list[SessionRow] = []
        self.scope_all = False
        self.scope_key: str | None = None
        self.scope_label = "this workspace"
        self.detail: SessionDetail | None = None
        self.prepared: LiveMeter | None = None
        self.meter_result: MeterResult | None = None
        self.meter_runs = Debouncer(self, METER_DEBOUNCE_SECONDS, self._measure)
        self.loaded_once = False
        self.frozen_once = False
        self.costs_progress: str | None = None  # "costs 1,200/4,000" while the background fill runs
        self.read_progress: str | None = None   # "reading 1,200/4,000 sessions…" while the rows load
        self._progress_posted = 0.0
        self.rows_signature: tuple = ()
        self.scope_where = f"workspace {service.workspace}"

    @property
    def interaction_mode(self) -> str:
        """pick (the picker), composer (writing a message) or list: which keys are offered."""
        if self.mode == "pick":
            return PICK
        return COMPOSER if isinstance(self.focused, Composer) else LIST

    # --- layout ----------------------------------------------------------------------------

    @property
    def reprise_app(self) -> RepriseApp:
        """The app this screen runs in, with Reprise's own attributes (clock, follow_disk, report_error)."""
        return cast("RepriseApp", self.app)

    def compose(self) -> ComposeResult:
        picking = self.mode == "pick"
        yield Static("", id="header")
        if picking:
            yield PickPrompt(placeholder="type to filter: title, messages or id prefix · Enter picks · Esc cancels",
                             id="filter", classes="-prompt")
        else:
            yield FilterPrompt(placeholder="filter: title, messages or id prefix (Enter or Esc to return)",
                               id="filter")
        with Horizontal(id="body"):
            with Vertical(id="list-pane"):
                yield Static("", id="columns")
                yield SessionList(id="sessions", clock=self.reprise_app.clock)
            yield DetailPane(id="detail")
        yield RunningTurnLine(id="running")
        if not picking:   # a picker is a list, a prompt and a preview: nothing is composed there
            yield MeterBar(id="meter")
            yield Composer(id="composer")
        yield Footer()

    def on_mount(self) -> None:
        field = self.query_one("#filter", Input)
        if self.mode == "pick":
            self.set_focus(field)   # every letter goes to the filter at once
        else:
            field.display = False
            field.can_focus = False   # what is typed on the list goes to it; the list keeps the focus
            self.set_focus(self.query_one(SessionList))
        self._fit_width()
        self.update_header()
        self.service.hear_progress(self._files_read)
        self.load_rows()
        if self.reprise_app.follow_disk:
            self.set_interval(REFRESH_SECONDS, self._refresh_tick)

    def on_resize(self) -> None:
        self._fit_width()
        self.update_header()   # it updates the columns too

    def _fit_width(self) -> None:
        self.narrow = self.size.width < NARROW_COLUMNS

    def watch_narrow(self, narrow: bool) -> None:
        """lazygit's habit: on a narrow terminal the preview goes under the list. The picker, fzf's
        habit: its preview waits for ctrl+e there."""
        self.query_one("#body").set_class(narrow, "-stacked")
        if self.mode == "pick":
            self.preview_shown = not narrow

    def watch_preview_shown(self, shown: bool) -> None:
        self.query_one(DetailPane).display = shown
        self.call_after_refresh(self.update_columns)

    # --- header ----------------------------------------------------------------------------

    def update_header(self) -> None:
        visible = len(self.query_one(SessionList).rows)
        total = len(self.all_rows)
        scope = self.scope_where
        counts = Text(no_wrap=True, overflow="ellipsis")
        if self.rows_loading:
            counts.append(f"{self.read_progress or 'loading sessions…'} ", style="bold yellow")
        counts.append(f"{visible:,} of {total:,} sessions shown", style="bold" if visible < total else "")
        text = counts
        if self.filter_text:
            text.append(f" · filter: {safe_line(self.filter_text)}", style="yellow")
        if self.agent_filter:
            text.append(f" · agent: {self.service.sources[self.agent_filter].label}", style="yellow")
        if self.hide_agent_hidden:
            text.append(" · -p runs hidden", style="yellow")
        text.append(f" · sort: {self.sort}" + (" reversed" if self.sort_reverse else ""))
        if self.costs_progress:
            text.append(f" · {self.costs_progress}", style="dim")
        problems = sum(1 for row in self.all_rows if row.problem_code)
        if problems:
            text.append(f" · {problems} unreadable", style="red")
        if self.mode == "pick":
            text.append(" · PICK", style="bold")
        where_line = Text.assemble(("Reprise ", "bold"), (safe_line(scope), "bold cyan"),
                                   ("  state ", "dim"), (safe_line(self.service.state_root), "dim"))
        header = self.query_one("#header", Static)
        width = header.size.width or self.size.width or 80
        for part in (where_line, text):   # one line each, cut with an ellipsis (Static would wrap them)
            part.truncate(width, overflow="ellipsis")
        header.update(Text("\n").join([where_line, text]))
        self.update_columns()

    def update_columns(self) -> None:
        """The list's header for its width: the sorted column marked, a folder column when the
        scope is wider than one folder."""
        session_list = self.query_one(SessionList)
        session_list.sort, session_list.reverse = self.sort, self.sort_reverse
        session_list.show_folder = self.scope_all
        self.query_one("#columns", Static).update(Text(session_list.header(), style="bold"))

    # --- rows ------------------------------------------------------------------------------

    def _refresh_tick(self) -> None:
        if not any(w.group == "rows" and w.is_running for w in self.workers):
            self.load_rows()

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def load_rows(self, select: str | None = None) -> None:
        """List in a worker; read every row's details here too, so filtering and drawing on the UI
        thread never touch the catalog."""
        scope_all, scope_key = self.scope_all, self.scope_key
        faults.point("tui_load_rows")
        try:
            listing = self.service.list_sessions(all_workspaces=scope_all, key=scope_key)
            key = scope_key or self.service.workspace_key
            where = "all workspaces" if scope_all else f"workspace {self.service.workspace_path_of(key)[0] or key}"
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        for note in self.service.take_notices():  # the catalog was rebuilt or bypassed
            self.app.call_from_thread(self.app.notify, safe_text(note), severity="warning", timeout=10, markup=False)
        # Resume costs are not part of what changed: while the fill stores them, every refresh would
        # otherwise read all the rows' details again, redraw the list and restart the fill.
        signature = (scope_all, scope_key, tuple((row.path, row.size, row.mtime_ns, row.title, row.pinned)
                                                 for row in listing.rows))
        if signature != self.rows_signature or select is not None:
            self.service.load_details(listing.rows)
        else:  # the same rows: take the figures another process (`reprise list --sort cost`) stored
            stored = {row.path: row for row in listing.rows if row.resume_cost is not None}
            for row in self.all_rows:
                found = stored.get(row.path)
                if row.resume_cost is None and found is not None:
                    row.resume_cost, row.resume_cost_key = found.resume_cost, found.resume_cost_key
        self.post_message(RowsLoaded(listing.rows, where, signature, select))

    def _files_read(self, progress: Progress) -> None:
        """The catalog's progress, heard in the worker that reads: posted at most ten times a second."""
        now = time.monotonic()
        if progress.finished or now - self._progress_posted >= 0.1:
            self._progress_posted = now
            self.post_message(FilesRead(progress))

    def on_files_read(self, message: FilesRead) -> None:
        self.read_progress = message.label
        self.update_header()

    def on_rows_loaded(self, message: RowsLoaded) -> None:
        self.rows_loading = False
        self.read_progress = None
        self.scope_where = message.where
        if message.signature == self.rows_signature and message.select is None:
            self.update_header()
            return  # nothing changed on disk: keep the rows already drawn
        self.rows_signature = message.signature
        session_list = self.query_one(SessionList)
        previous = {row.path: row for row in self.all_rows}
        self.all_rows = message.rows
        changed_current = False
        current = session_list.current
        if current is not None:
            fresh = next((row for row in message.rows if row.path == current.path), None)
            changed_current = fresh is not None and (fresh.size, fresh.mtime_ns) != (current.size, current.mtime_ns)
        for row in self.all_rows:  # keep costs computed since the last refresh
            old = previous.get(row.path)
            if (old is not None and row.resume_cost is None and old.resume_cost is not None
                    and (old.size, old.mtime_ns) == (row.size, row.mtime_ns)):
                row.resume_cost, row.resume_cost_key = old.resume_cost, old.resume_cost_key
        self.apply_view(select=message.select)
        if changed_current:
            self.load_detail(session_list.current)
        if not self.loaded_once:
            self.loaded_once = True
            if not self.all_rows:
                self.show_empty_state()
        if any(row.resume_cost is None and not row.problem_code for row in self.all_rows):
            self.fill_costs(list(self.all_rows), self.query_one(SessionList).current_path)
        if not self.frozen_once:
            # One decision: freeze once, after the first listing is drawn. What exists then (modules,
            # Textual's widgets, the first rows) mostly lives until exit, and full collections stop
            # walking it while typing (2,000 rows with the app imported: 71k tracked objects, a full
            # collection 47 ms, 0 ms frozen). Frozen rows a later listing drops are still freed by
            # their reference counts. It used to run on every row change and was never undone, so
            # every listing's cycles were kept for good; later listings are now collected as usual.
            self.frozen_once = True
            self.call_after_refresh(gc.freeze)

    def apply_view(self, *, select: str | None = None, best_match: bool = False) -> None:
        """Filter and sort the rows in scope into the list; with `best_match`, select the row that
        matches the filter best (`match_rank`)."""
        wanted = self.filter_text
        rows = [row for row in self.all_rows if matches(row, wanted)] if wanted else list(self.all_rows)
        if self.agent_filter:
            rows = [row for row in rows if row.source == self.agent_filter]
        if self.hide_agent_hidden:
            rows = [row for row in rows if not row.hidden_by_agent]
        sort_rows(rows, self.sort, reverse=self.sort_reverse)
        if best_match and wanted and rows and select is None:
            select = min(rows, key=lambda row: match_rank(row, wanted)).path   # min keeps the first of a tie
        session_list = self.query_one(SessionList)
        session_list.show_agent = len(self.service.sources) > 1
        session_list.set_rows(rows, keep=select)
        self.update_header()

    def watch_filter_text(self) -> None:
        if self.is_mounted:
            self.apply_view(best_match=True)

    def watch_sort(self) -> None:
        if self.is_mounted:
            self.apply_view()

    def watch_sort_reverse(self) -> None:
        if self.is_mounted:
            self.apply_view()

    def watch_agent_filter(self) -> None:
        if self.is_mounted:
            self.apply_view()

    def watch_hide_agent_hidden(self) -> None:
        if self.is_mounted:
            self.apply_view()

    def watch_rows_loading(self, loading: bool) -> None:
        if loading:
            self.read_progress = None   # none left over from a search's indexing that was stopped
        if self.is_mounted:
            self.update_header()

    def show_empty_state(self) -> None:
        root = self.service.state_root
        self.query_one(DetailPane).show_problem(
            f"No sessions here yet.\n\nPress ctrl+o to start a new session in {safe_line(self.service.workspace)}, "
            "press ctrl+a to look "
            f"in all workspaces, or run your agent (fractal) in a project folder: its sessions appear here.\n\n"
            f"Sessions live in {safe_line(root)}/workspaces/<workspace>/sessions/. Try `reprise --demo` for a tour.")

    def fill_costs(self, rows: list[SessionRow], current: str | None) -> None:
        """Fill the missing resume costs in a worker started once the rows are painted: the rows on
        screen first (the current one ahead), then the rest of the list, then the rows a filter hides."""
        session_list = self.query_one(SessionList)
        top = int(session_list.scroll_offset.y)
        shown = session_list.rows
        on_screen = shown[top:top + max(session_list.size.height, 1)]
        first = [row for row in on_screen if row.path == current] + on_screen + shown

        def fill() -> None:
            worker = get_current_worker()
            self.service.fill_resume_costs(rows, first=first, should_stop=lambda: worker.is_cancelled,
                                           progress=lambda progress: self.post_message(CostsFilled(progress)))
            self.post_message(CostsFilled(None))

        # After the next paint: the fill's first step loads the tokenizer, which holds the GIL for a
        # while; the rows it was started for are drawn first.
        self.call_after_refresh(self.run_worker, fill, thread=True, exclusive=True, group="costs",
                                exit_on_error=False)

    def on_costs_filled(self, message: CostsFilled) -> None:
        self.costs_progress = message.label
        self.update_header()
        self.query_one(SessionList).refresh()

    # --- selection and detail --------------------------------------------------------------

    @on(SessionList.Highlighted)
    def on_highlighted(self, message: SessionList.Highlighted) -> None:
        self.detail = None
        self.prepared = None
        self.meter_result = None
        self.meter_runs.cancel()
        row = message.row
        if row is None or row.path != self.history_to_end:
            self.history_to_end = None
        self.current_row = row        # the footer offers the session actions only while a readable row is current
        self.detail_failed = False
        if row is None:
            self.show_meter_status(None)
            return
        if row.problem_code:
            self.query_one(DetailPane).show_problem(f"{safe_line(row.path)}\n{row.problem_code}: "
                                                    f"{safe_line(row.problem_message)}")
            self.show_meter_status("this file cannot be read")
            return
        self.query_one(DetailPane).show_loading(row.display_title)
        self.show_meter_status("counting…")
        self.load_detail(row)

    def show_meter_status(self, status: str | None) -> None:
        """The meter line without a result: nothing selected (None), or why there is none yet."""
        for bar in self.query(MeterBar):   # none in pick mode
            bar.show(None, status=status or "")

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self, row: SessionRow) -> None:
        worker = get_current_worker()
        faults.point("tui_load_detail")
        ref = row.ref
        if ref is None:
            self.post_message(DetailLoaded(row.path, None, "the file name is not a valid session id"))
            return
        try:
            detail = self.service.show(ref)
            comparisons = self.service.estimates_vs_measured(detail)
            stale = self.service.stale_pending(detail)
            window = self.service.context_window(ref)
        except RepriseError as exc:
            self.post_message(DetailLoaded(row.path, None, str(exc)))
            return
        if worker.is_cancelled:
            return
        self.post_message(DetailLoaded(row.path, detail, comparisons=comparisons, stale=stale, window=window))
        try:
            prepared = self.service.prepare_meter(detail)
        except Exception as exc:  # the meter reports per part; anything else is shown, not raised
            self.post_message(MeterPrepared(row.path, None, f"{type(exc).__name__}: {exc}"))
            return
        if not worker.is_cancelled:
            self.post_message(MeterPrepared(row.path, prepared))

    def on_detail_loaded(self, message: DetailLoaded) -> None:
        if message.path != self.query_one(SessionList).current_path:
            return
        pane = self.query_one(DetailPane)
        if message.detail is None:
            self.detail_failed = True
            pane.show_problem(safe_line(message.error or "cannot be read"))
            self.show_meter_status("this file cannot be read")
            return
        self.detail = message.detail
        self.detail_window = message.window
        self.comparisons = message.comparisons
        pane.show_detail(message.detail, stale=message.stale, now=local_now(self.reprise_app.clock()))
        if self.history_to_end == message.path:   # kept: a second reload (the list's refresh) scrolls too
            pane.scroll_history_to_end()

    def on_meter_prepared(self, message: MeterPrepared) -> None:
        if message.path != self.query_one(SessionList).current_path:
            return
        if message.prepared is None:
            self.show_meter_status(f"meter failed: {message.error}")
            return
        self.prepared = message.prepared
        self.meter_runs.now(self.draft_text)

    # --- the live meter --------------------------------------------------------------------

    @property
    def draft_text(self) -> str:
        composers = self.query(Composer)
        return composers.first().text if composers else ""

    @on(Composer.Changed, "#composer")
    def on_composer_changed(self, event: Composer.Changed) -> None:
        """Only the composer's edits (not the detail's text areas, also TextAreas): one meter run
        per pause in typing."""
        self.meter_runs.poke(event.text_area.text)

    def _measure(self, text: str, generation: int) -> None:
        if self.prepared is not None:
            self.measure_message(self.prepared, self.query_one(SessionList).current_path, text, generation)

    @work(thread=True, exclusive=True, group="meter", exit_on_error=False)
    def measure_message(self, prepared: LiveMeter, path: str | None, text: str, generation: int) -> None:
        faults.point("tui_measure")
        result = prepared.with_message(text)
        if not get_current_worker().is_cancelled:
            self.post_message(MeterUpdated(path, text, result, generation))

    def on_meter_updated(self, message: MeterUpdated) -> None:
        if message.path != self.query_one(SessionList).current_path:
            return
        if not self.meter_runs.is_current(message.generation):
            return  # stale: a newer keystroke is on its way
        self.meter_result = message.result
        self.show_meter()
        self.query_one(DetailPane).show_context(message.result, comparisons=self.comparisons)

    def show_meter(self) -> None:
        for bar in self.query(MeterBar):   # none in pick mode
            bar.show(self.meter_result)

    # --- actions ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        """False hides a key (not in this mode), None greys it (this row cannot take it)."""
        if action == "wide":   # a footer copy of an action, shown on wide terminals only
            return False if self.narrow else self.check_action(parameters[0], ())
        modes = SCREEN_MODES.get(action)
        if modes is not None and self.interaction_mode not in modes:
            return False
        return self.available(action)

    def available(self, action: str) -> bool | None:
        """Whether the action can run now, whatever the mode (the palette asks this): False where it
        never can, None while the current row cannot take it."""
        modes = SCREEN_MODES.get(action)
        if self.mode == "pick" and modes is not None and PICK not in modes:
            return False   # the picker only picks
        focused = self.focused
        if action == "focus_composer" and (
                isinstance(focused, Input) or (isinstance(focused, TextArea) and not focused.read_only)):
            return False   # a priority key: in a field one types in, Tab is the field's
        if action in ("cycle_agent", "toggle_agent_hidden"):
            return len(self.service.sources) > 1
        if action == "keep_due":
            return any(source.capabilities.keep for source in self.service.sources.values())
        if action == "restore_draft":
            return bool(self.cleared_draft) or None
        if action in NEEDS_ROW:
            row = self.current_row
            if row is None or (action in NEEDS_READABLE and (row.problem_code or self.detail_failed)):
                return None
            able = self.service.sources[row.source].capabilities
            if ((action == "trim" and not (able.trim_in_place or able.trim_fork))
                    or (action == "delete" and not able.trash)
                    or (action in ("resume", "pick", "copy_command") and not able.resume)
                    or (action == "keep" and not able.keep)):
                return None
        return True

    def current_ref(self) -> SessionRef | None:
        row = self.query_one(SessionList).current
        return row.ref if row is not None and not row.problem_code else None

    def action_resume(self) -> None:
        if self.focused is not None and not isinstance(self.focused, SessionList):
            return
        ref = self.current_ref()
        if ref is None:
            return
        if self.mode == "pick":
            self.action_pick()
            return
        self.plan_resume(ref)

    async def action_wide(self, action: str) -> None:
        await self.run_action(action)

    def action_pick(self) -> None:
        ref = self.current_ref()
        if ref is not None and not self.detail_failed:
            self.app.exit(Picked(ref, self.service.workspace_path_of(ref.workspace_key)[0]))

    @work(thread=True, exclusive=True, group="resume", exit_on_error=False)
    def plan_resume(self, ref: SessionRef) -> None:
        try:
            plan = self.service.resume_plan(ref)
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        self.app.call_from_thread(self._confirm_resume, plan)

    def _confirm_resume(self, plan: ResumePlan) -> None:
        handoff = Handoff(plan.argv, plan.cwd, plan.notes)
        if self.reprise_app.demo:
            self.app.push_screen(CommandDialog(
                "What Enter would run", "This is the demo: nothing is run. Outside it, Enter hands the terminal "
                "to the session's agent with this command, in the session's folder:", plan.argv, plan.cwd,
                plan.notes))
            return
        if plan.program_missing is not None:
            missing = plan.program_missing
            self.app.push_screen(CommandDialog(
                f"{plan.argv[0]} is not installed", f"{missing.message} To resume the session, {missing.hint}; "
                "or copy the command and run it where the agent is:", plan.argv, plan.cwd, plan.notes))
            return
        if not plan.over_window and plan.writer is None:
            self.app.exit(handoff)
            return
        worries = []
        if plan.writer is not None:
            worries.append(f"This session may be being written by its agent now ({safe_line(plan.writer)}): "
                           "resuming it as well would interleave two conversations in one file.")
        result = plan.meter
        if plan.over_window and result is not None:
            worries.append(f"This session's next turn would send {result.total:,} tokens, over the "
                           f"{result.window:,}-token window of {safe_line(result.model)}. "
                           f"Trimming it first (ctrl+t) keeps everything in the archive.")
        question = "\n\n".join(worries) + "\n\nResume anyway?"

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.exit(handoff)

        self.app.push_screen(ConfirmDialog(question, yes="Resume anyway", danger=True), answered)

    @on(SessionList.Selected)
    def on_selected(self, _: SessionList.Selected) -> None:
        self.action_resume()

    def action_new(self) -> None:
        """A new session; which agent's is asked when more than one can start one."""
        able = [source for source in self.service.sources.values() if source.capabilities.new]
        if len(able) <= 1:
            self._new_titled(able[0].name if able else "fractal")
            return

        def chosen(name: str | None) -> None:
            if name is not None:
                self._new_titled(name)

        self.app.push_screen(ChoiceDialog("A new session of which agent?",
                                          [(source.name, source.label) for source in able]), chosen)

    def _new_titled(self, agent: str) -> None:
        def create(title: str | None) -> None:
            if title is not None:
                self.run_service(lambda: self.service.new_session(title or None, source=agent), self._started)

        self.app.push_screen(TextDialog("Title of the new session (optional):", placeholder="untitled"), create)

    def _started(self, ref: SessionRef) -> None:
        """Fractal's new session is written: select it. Any other agent writes its own on its first
        turn: hand the terminal to it (the command line runs it, as for a resume)."""
        argv = self.service.new_argv(ref)
        if argv is None:
            self.app.notify("New session created")
            self.load_rows(select=self.service.session_path(ref))
            return
        label = self.service.source(ref).label
        self.app.exit(Handoff(argv, str(self.service.workspace), [f"new {label} session {ref.session_id}"]))

    def action_rename(self) -> None:
        ref = self.current_ref()
        row = self.query_one(SessionList).current
        if ref is None or row is None:
            return

        def rename(title: str | None) -> None:
            if title is not None:
                self.run_service(lambda: self.service.rename(ref, title), lambda _: self.load_rows(), "Renamed")

        note = self.service.source(ref).rename_note
        self.app.push_screen(TextDialog(f"New title:{f' ({note})' if note else ''}", value=row.title or ""), rename)

    def action_keep(self) -> None:
        ref = self.current_ref()
        if ref is None:
            return
        self.run_service(lambda: self.service.keep(ref), lambda _: self.load_rows(),
                         "Kept a copy in Reprise's archive")

    def action_keep_due(self) -> None:
        """Every session its agent deletes within a week, counted and sized in a question first."""
        def counted(due: list[SessionRow]) -> None:
            if not due:
                self.app.notify(f"No session is deleted by its agent within {KEEP_DUE_DAYS} days.")
                return
            agents = " and ".join(sorted({self.service.sources[row.source].label for row in due}))
            question = (f"Keep a copy of {len(due):,} session{'' if len(due) == 1 else 's'} "
                        f"({human_size(sum(row.size for row in due))}) that {agents} deletes within "
                        f"{KEEP_DUE_DAYS} days, in every folder?")

            def answered(yes: bool | None) -> None:
                if yes:
                    self.run_service(lambda: self.service.keep_due(due), kept)

            self.app.push_screen(ConfirmDialog(question, yes="Keep them", title="Keep"), answered)

        def kept(result: tuple[list, list]) -> None:
            reports, problems = result
            self.load_rows()
            message = f"Kept {len(reports):,} session{'' if len(reports) == 1 else 's'} in Reprise's archive"
            if problems:
                message += f"; {len(problems):,} could not be kept: {safe_line(problems[0].message)}"
            self.app.notify(message, severity="warning" if problems else "information")

        self.run_service(lambda: self.service.due(KEEP_DUE_DAYS), counted)

    def action_pin(self) -> None:
        ref = self.current_ref()
        row = self.query_one(SessionList).current
        if ref is None or row is None:
            return
        pinned = not row.pinned
        self.run_service(lambda: self.service.set_pinned(ref, pinned), lambda _: self.load_rows(),
                         "Pinned" if pinned else "Unpinned")

    def action_trim(self) -> None:
        ref = self.current_ref()
        row = self.query_one(SessionList).current
        if ref is None or row is None:
            return
        window = self.detail_window

        def chosen(request: TrimRequest | None) -> None:
            if request is None:
                return
            self.run_service(lambda: self.service.trim(ref, request.options, fork=request.fork,
                                                       expected_sha256=request.original_sha256),
                             self._after_trim)

        self.app.push_screen(TrimDialog(self.service, ref, row.display_title, window), chosen)

    def _after_trim(self, result) -> None:
        plan = result.plan
        self.last_undo = ("trim", result.ref)
        where = " as a new session" if result.forked else ""
        before = f"{plan.meter_before:,}" if plan.meter_before is not None else "?"
        after = f"{plan.meter_after:,}" if plan.meter_after is not None else "?"
        undo = "ctrl+z moves the new session to the trash" if result.forked else "ctrl+z undoes it"
        self.app.notify(f"Trimmed{where}: {before} → {after} tokens. {undo}.", markup=False)
        self.load_rows(select=self.service.session_path(result.ref))
        row = self.query_one(SessionList).current
        if row is not None and row.path == self.service.session_path(result.ref):
            self.load_detail(row)

    def action_undo(self) -> None:
        """Undo the last trim or delete: this session's newest trim (a fork Reprise wrote goes to the
        trash), else the newest trashed session."""
        last, ref, scope_all = self.last_undo, self.current_ref(), self.scope_all
        row = self.query_one(SessionList).current
        title = row.display_title if row is not None else None

        def target():
            if last is not None and last[0] == "rm":
                trashed = [e for e in self.service.trash_entries(all_workspaces=True) if e.ref == last[1]]
                return ("rm", last[1], (trashed[0].title if trashed else None) or self.trashed_titles.get(last[1]))
            if ref is not None and self.service.can_undo_trim(ref):
                preview = self.service.restore(ref, dry_run=True)
                if any(step.mode == "trashed" for step in preview.steps):   # a fork: undoing trashes it
                    return ("fork", ref, title, preview)
                return ("trim", ref, title)
            entries = self.service.trash_entries(all_workspaces=scope_all)
            if not entries:
                return None
            return ("rm", entries[0].ref, entries[0].title or self.trashed_titles.get(entries[0].ref))

        self.run_service(target, self._confirm_undo)

    def _confirm_undo(self, target) -> None:
        if target is None:
            self.app.notify("Nothing to undo: this session has no trim and the trash is empty.")
            return
        kind, ref, title, *preview = target
        name = session_name(title)
        if kind == "fork":
            grown = any("needs --force" in note for note in preview[0].notes)
            question = (f"Undo the trim that made {name} by moving it to Reprise's trash? The session it was "
                        "trimmed from is unchanged, and the trash can bring this one back "
                        f"(`reprise trash restore {safe_line(id_argument(ref.source, ref.session_id))}`)."
                        + ("\n\nIt has grown since Reprise wrote it: its new turns go to the trash with it."
                           if grown else ""))
            call, done, yes = (lambda: self.service.restore(ref, force=grown)), "The trimmed copy is in the trash.", \
                "Move to trash"
        elif kind == "trim":
            question = f"Undo the last trim of {name}? What it removed comes back from the archive."
            call, done, yes = (lambda: self.service.restore(ref)), "Trim undone.", "Undo the trim"
        else:
            question = f"Restore {name} from the trash?"
            call, done, yes = (lambda: self.service.trash_restore(ref)), "Restored from the trash.", "Restore"

        def answered(answer: bool | None) -> None:
            if answer:
                self.last_undo = None
                path = self.service.session_path(ref)
                self.run_service(call, lambda result: self._after_undo(path, getattr(result, "notes", None)), done)

        self.app.push_screen(ConfirmDialog(question, yes=yes, title="Undo"), answered)

    def _after_undo(self, path: str, notes: list[str] | None = None) -> None:
        for note in notes or []:  # e.g. history beyond what Fractal keeps, and where it is archived
            self.app.notify(safe_text(note), severity="warning", timeout=15, markup=False)
        self.load_rows(select=path)
        row = self.query_one(SessionList).current
        if row is not None and row.path == path:
            self.load_detail(row)

    def action_delete(self) -> None:
        row = self.query_one(SessionList).current
        ref = row.ref if row is not None else None
        if ref is None or row is None:
            return
        question = (f"Move {self.describe(row)} to the trash?\n\nIt can be restored with ctrl+z, or with "
                    f"`reprise trash restore {safe_line(id_argument(ref.source, ref.session_id))}`.")
        note = self.service.source(ref).trash_note   # what the agent does meanwhile (Codex cannot resume it)
        if note:
            question += f"\n\n{note}."

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_service(lambda: self.service.remove(ref),
                                 lambda _: self._after_delete(ref, row.display_title, note))

        self.app.push_screen(ConfirmDialog(question, yes="Move to trash", danger=True), answered)

    def _after_delete(self, ref: SessionRef, title: str, note: str | None = None) -> None:
        """Say what moved (by title) and, for an agent that does something about it, what it does."""
        self.last_undo = ("rm", ref)
        self.trashed_titles[ref] = title
        self.app.notify(f"Moved {session_name(title, 40)} to the trash. ctrl+z undoes it.", markup=False)
        if note:
            self.app.notify(f"{note}.", severity="warning", timeout=12, markup=False)
        self.load_rows()

    # --- the filter: what is typed on the list --------------------------------------------

    def on_key(self, event: events.Key) -> None:
        """On the list, a printable character goes to the filter (shown once it holds one) and
        Backspace edits it: fzf's and the agents' pickers' habit. The list keeps the focus, so the
        keys of the table work while a filter is typed. The picker's prompt has the focus instead."""
        if self.mode == "pick" or not isinstance(self.focused, SessionList):
            return
        field = self.query_one("#filter", Input)
        if event.is_printable and event.character:
            self.type_into_filter(field.value + event.character)
        elif event.key == "backspace" and field.value:
            self.type_into_filter(field.value[:-1])
        else:
            return
        event.stop()
        event.prevent_default()

    def on_paste(self, event: events.Paste) -> None:
        """Pasted on the list, the first line goes to the filter."""
        if self.mode != "pick" and isinstance(self.focused, SessionList) and event.text.strip():
            event.stop()
            field = self.query_one("#filter", Input)
            self.type_into_filter(field.value + event.text.strip().splitlines()[0])

    def type_into_filter(self, value: str) -> None:
        field = self.query_one("#filter", Input)
        field.display = bool(value)
        field.value = value
        field.cursor_position = len(value)
        self.filter_text = value.strip()   # at once: the next key's action (Enter) sees the filtered list

    @on(Input.Changed, "#filter")
    def on_filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()

    @on(Input.Submitted, "#filter")
    def on_filter_submitted(self, _: Input.Submitted) -> None:
        if self.mode == "pick":
            self.action_pick()

    @on(FilterPrompt.Move)
    def on_filter_move(self, message: FilterPrompt.Move) -> None:
        session_list = self.query_one(SessionList)
        if message.ends:
            session_list.move_to(0 if message.ends < 0 else len(session_list.rows) - 1)
            return
        page = max(session_list.size.height - 1, 1)
        session_list.move_to(session_list.cursor + message.rows + message.pages * page)

    def action_back(self) -> None:
        """Esc on the list: the filter is cleared; on an empty one, nothing happens."""
        if self.query_one("#filter", Input).value:
            self.type_into_filter("")

    def action_cancel(self) -> None:
        """Esc in the picker: a filter is cleared first, then the picker is left with nothing picked."""
        field = self.query_one("#filter", Input)
        if field.value:
            field.value = ""
            self.set_focus(field)
            return
        self.app.exit(None)

    def action_keys(self) -> None:
        self.app.push_screen(KeysScreen())

    def action_help(self) -> None:
        self.action_keys()

    def action_show_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = tab

    # --- moving in the list and the preview ------------------------------------------------

    def action_scroll_preview(self, direction: int) -> None:
        """Scroll the preview's open tab by half its height, the list keeping focus."""
        pane = self.query_one(DetailPane)
        tab = pane.query_one("#detail-tabs", TabbedContent).active
        view: Widget = (pane.query_one("#summary-view" if pane.raw else "#conversation") if tab == "tab-summary"
                        else pane.query_one("#history-view", TextArea) if tab == "tab-history"
                        else pane.query_one("#tab-context").query_one(VerticalScroll))
        view.scroll_relative(y=direction * max(view.size.height // 2, 1), animate=False)

    def action_raw(self) -> None:
        self.query_one(DetailPane).action_toggle_raw()

    def action_ids(self) -> None:
        self.query_one(DetailPane).action_toggle_ids()

    def action_toggle_preview(self) -> None:
        self.preview_shown = not self.preview_shown

    def action_preview(self) -> None:
        self.action_toggle_preview()

    # --- copying ---------------------------------------------------------------------------

    def action_copy_id(self) -> None:
        row = self.current_row
        if row is not None:
            self.copy(row.file_id, "the id")

    def action_copy_command(self) -> None:
        """The command `reprise pick --command` prints: `cd DIR && ARGV`."""
        ref = self.current_ref()
        if ref is not None:
            self.run_service(lambda: self.service.resume_plan(ref, for_exec=False),
                             lambda plan: self.copy(plan.command_line, "the resume command"))

    def copy(self, text: str, what: str) -> None:
        """OSC 52, and the text shown: no terminal answers whether the clipboard took it."""
        self.app.copy_to_clipboard(text)
        self.app.notify(f"Copied {what}: {safe_line(text)}", title="Clipboard", markup=False, timeout=8)

    # --- the composer and turns ------------------------------------------------------------

    def action_focus_composer(self) -> None:
        self.set_focus(self.query_one(Composer))

    def on_descendant_focus(self) -> None:
        self.refresh_bindings()   # the footer shows the keys of the mode (list, composer)

    @on(Composer.Left)
    def on_composer_left(self, _: Composer.Left) -> None:
        self.set_focus(self.query_one(SessionList))

    def clear_draft(self) -> bool:
        """ctrl+c with a draft: it is cleared, kept for ctrl+z. False when there is none."""
        composers = self.query(Composer)
        if not composers or not composers.first().text.strip():
            return False
        composer = composers.first()
        self.cleared_draft = composer.text
        composer.clear()
        self.refresh_bindings()
        back = "ctrl+z" if isinstance(self.focused, Composer) else "Tab, then ctrl+z,"
        self.app.notify(f"ctrl+c cleared the draft · {back} brings it back", timeout=6)
        return True

    def action_restore_draft(self) -> None:
        composer = self.query_one(Composer)
        if self.cleared_draft:
            composer.load_text(self.cleared_draft + composer.text)
            self.cleared_draft = ""
            self.set_focus(composer)
            composer.move_cursor(composer.document.end)

    def put_back_draft(self, text: str) -> None:
        """A turn that did not succeed gives its message back to the composer, before anything typed since."""
        composer = self.query_one(Composer)
        if text and text not in composer.text:
            composer.load_text(text + ("\n\n" + composer.text if composer.text.strip() else ""))

    @on(Composer.SendRequested)
    def on_send_requested(self, message: Composer.SendRequested) -> None:
        row = self.query_one(SessionList).current
        if row is None or row.ref is None or row.problem_code:
            self.app.notify("Select a readable session first.", severity="warning")
            return
        if self.running is not None:
            self.app.notify("A turn is already running; wait for it or press ctrl+c.", severity="warning")
            return
        if not message.text.strip():
            self.app.notify("The message is empty.", severity="warning")
            return
        self.start_turn(row.path, row.ref, message.text, confirm_over=False)

    def start_turn(self, path: str, ref: SessionRef, text: str, *, confirm_over: bool) -> None:
        """The message leaves the composer while its turn runs; it comes back if the turn fails."""
        self.sent_text = text
        composer = self.query_one(Composer)
        if composer.text == text:
            composer.clear()
        self.running = RunningTurn(path, ref, time.monotonic(), threading.Event())
        self.send_turn(self.running, text, confirm_over)

    def watch_running(self, running: RunningTurn | None) -> None:
        self.query_one(RunningTurnLine).started = running.started if running is not None else None

    @work(thread=True, group="turn", exit_on_error=False)
    def send_turn(self, running: RunningTurn, text: str, confirm_over: bool) -> None:
        try:
            result = self.service.send_turn(running.ref, text, agent=self.agent, confirm_over=confirm_over,
                                            cancel=running.cancel)
        except Exception as exc:  # whatever happens, the running state must end
            self.post_message(TurnFinished(running.path, None, exc))
            return
        finally:
            running.done.set()
        self.post_message(TurnFinished(running.path, result, None))

    def on_turn_finished(self, message: TurnFinished) -> None:
        ref = self.running.ref if self.running else None
        self.running = None
        text = self.sent_text
        if message.error is not None:
            error = message.error
            self.put_back_draft(text)
            if isinstance(error, OverWindowError) and ref is not None:
                def answered(yes: bool | None) -> None:
                    if yes:
                        self.start_turn(message.path, ref, text, confirm_over=True)
                self.app.push_screen(ConfirmDialog(f"{safe_line(error.message)}\n\nSend anyway?", yes="Send anyway",
                                                   danger=True), answered)
            else:
                self.reprise_app.report_error(error)
            self.show_meter()
            return
        sent = message.result
        assert sent is not None  # a turn ends with a result or an error
        outcome = sent.outcome
        if outcome.status == "succeeded":
            self.app.notify(f"Turn finished ({sent.backend}).")
        else:
            self.put_back_draft(text)
            self.app.notify(safe_text(f"Turn {outcome.status}: {outcome.error or 'no error text'} · "
                                      "the message is back in the composer"),
                            severity="error", timeout=10, markup=False)
        self.query_one(DetailPane).show_tab("tab-history")
        self.history_to_end = message.path   # the new turn and its reply are on screen once the detail reloads
        self.load_rows(select=message.path)
        row = self.query_one(SessionList).current
        if row is not None and row.path == message.path:
            self.load_detail(row)

    def interrupt_turn(self) -> bool:
        """ctrl+c while a turn runs interrupts it instead of quitting; pressed again, it quits."""
        if self.running is None or self.running.cancel.is_set():
            return False
        self.running.cancel.set()
        self.query_one(RunningTurnLine).stopping = True
        self.app.notify("Interrupting the turn…")
        return True

    def action_recover(self) -> None:
        ref = self.current_ref()
        if ref is None:
            return
        self.run_service(lambda: self.service.mark_stale_interrupted(ref),
                         lambda marked: self._after_recover(marked))

    def _after_recover(self, marked: list[str]) -> None:
        self.app.notify(f"Marked {counted(len(marked), 'stale turn')} interrupted." if marked
                        else "No stale pending turn.")
        self.load_rows()
        row = self.query_one(SessionList).current
        if row is not None:
            self.load_detail(row)

    def action_toggle_scope(self) -> None:
        self.workers.cancel_group(self, "costs")
        self.scope_all = not self.scope_all
        self.scope_key = None
        self.scope_where = "all workspaces" if self.scope_all else f"workspace {self.service.workspace}"
        self.rows_loading = True
        self.load_rows()
        self.update_header()

    def action_cycle_sort(self, flip: bool = False) -> None:
        """The next sort, largest or newest first; after the last, each again reversed. With
        `flip`, the same sort the other way round. The watchers apply the view."""
        if flip:
            self.sort_reverse = not self.sort_reverse
            return
        position = SORTS.index(sort_key(self.sort)) + 1
        if position == len(SORTS):
            position = 0
            self.set_reactive(MainScreen.sort_reverse, not self.sort_reverse)
        self.sort = SORTS[position]

    def action_cycle_agent(self) -> None:
        """Every agent's sessions, then each agent's in turn."""
        names = [None, *self.service.sources]
        self.agent_filter = names[(names.index(self.agent_filter) + 1) % len(names)]

    def action_toggle_agent_hidden(self) -> None:
        self.hide_agent_hidden = not self.hide_agent_hidden

    def action_choose_workspace(self) -> None:
        self.run_service(self.service.workspaces, self._show_workspaces)

    def _show_workspaces(self, infos) -> None:
        from .dialogs import workspace_dialog  # here while main.py is split (issue 26): move it to the imports

        def chosen(key: str | None) -> None:
            if key:
                self.workers.cancel_group(self, "costs")
                self.scope_all = False
                self.scope_key = key
                self.scope_where = f"workspace {key}"
                self.rows_loading = True
                self.load_rows()
                self.update_header()

        self.app.push_screen(workspace_dialog(infos, self.reprise_app.clock()), chosen)

    def action_search(self) -> None:
        label = "all workspaces" if self.scope_all else "this workspace"

        def chosen(hit: SearchHit | None) -> None:
            if hit is not None:
                self.open_at_turn(hit)

        self.app.push_screen(SearchScreen(self.service, all_workspaces=self.scope_all, key=self.scope_key,
                                          scope_label=label), chosen)

    def open_at_turn(self, hit: SearchHit) -> None:
        """Select the hit's session and open its conversation with the match's line at the top."""
        self.set_reactive(MainScreen.filter_text, "")   # the view is applied below, with the hit selected
        self.query_one("#filter", Input).value = ""
        landing = Landing(hit.turn, matched_words(hit.snippet), hit.field)
        self.query_one(DetailPane).land_when_shown(hit.row.path, landing)
        self.apply_view(select=hit.row.path)

    # --- service calls from actions --------------------------------------------------------

    def run_service(self, call, then=None, success: str | None = None) -> None:
        """Run a service call in a worker; report errors in one place; continue on the UI thread."""
        self._run_service(call, then, success)

    @work(thread=True, group="action", exit_on_error=False)
    def _run_service(self, call, then, success) -> None:
        try:
            result = call()
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        if success:
            self.app.call_from_thread(self.app.notify, success)
        if then is not None:
            self.app.call_from_thread(then, result)

    def describe(self, row: SessionRow) -> str:
        return f"{session_name(row.display_title, 60)} ({counted(row.turns, 'turn')}, {human_size(row.size)})"
