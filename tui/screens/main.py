"""The main screen: header, session list, detail tabs, meter line and composer.

It owns the screen's state (rows in scope, filter, sort, selection) and runs every service
call in a thread worker; workers only post results back, never touch widgets.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Static, TabbedContent
from textual.worker import get_current_worker

from reprise.core.errors import OverWindowError, RepriseError
from reprise.core.meter import LiveMeter, MeterResult
from reprise.core.paths import SessionRef
from reprise.core.rows import SessionRow
from reprise.core.search_index import SearchHit
from reprise.core.service import SORTS, ResumePlan, SendResult, SessionDetail, sort_rows

from ..format import human_size, local_now
from ..reports.search import matched_words
from ..text import clipped, safe_line, safe_text
from ..widgets.composer import Composer
from ..widgets.detail import DetailPane, Landing
from ..widgets.meter import MeterBar
from ..widgets.session_list import SessionList, header_text
from ..workers import ReportsWorkerErrors
from .dialogs import ChoiceDialog, ConfirmDialog, TextDialog
from .search import SearchScreen
from .trim import TrimDialog, TrimRequest

if TYPE_CHECKING:
    from ..app import RepriseApp

REFRESH_SECONDS = 1.0
METER_DEBOUNCE_SECONDS = 0.05


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


class RowsLoaded(Message):
    def __init__(self, rows: list[SessionRow], where: str, signature: tuple, select: str | None = None):
        super().__init__()
        self.rows = rows
        self.where = where
        self.signature = signature
        self.select = select


class DetailLoaded(Message):
    def __init__(self, path: str, detail: SessionDetail | None, error: str | None = None,
                 comparisons: list[tuple[int, int, int]] | None = None, stale: list | None = None,
                 window: int | None = None):
        super().__init__()
        self.window = window
        self.path = path
        self.detail = detail
        self.error = error
        self.comparisons = comparisons or []
        self.stale = stale or []


class TurnFinished(Message):
    def __init__(self, path: str, result: SendResult | None, error: Exception | None):
        super().__init__()
        self.path = path
        self.result = result
        self.error = error


@dataclass(slots=True)
class RunningTurn:
    path: str
    ref: SessionRef
    started: float
    cancel: threading.Event


class MeterPrepared(Message):
    def __init__(self, path: str, prepared: LiveMeter | None, error: str | None = None):
        super().__init__()
        self.path = path
        self.prepared = prepared
        self.error = error


class MeterUpdated(Message):
    def __init__(self, path: str | None, message: str, result: MeterResult):
        super().__init__()
        self.path = path
        self.message = message
        self.result = result


class CostsFilled(Message):
    pass


def matches(row: SessionRow, needle: str) -> bool:
    """The `/` filter: title, first and last message, or id prefix."""
    needle = needle.lower()
    return (row.file_id.startswith(needle) or needle in (row.title or row.fields.agent_title or "").lower()
            or needle in row.fields.first_message.lower() or needle in row.fields.last_message.lower()
            or (row.problem_message is not None and needle in row.problem_message.lower()))


class MainScreen(ReportsWorkerErrors, Screen[None]):
    BINDINGS = [
        Binding("enter", "resume", "Resume"),
        Binding("n", "new", "New"),
        Binding("t", "trim", "Trim"),
        Binding("u", "undo", "Undo"),
        Binding("d", "delete", "Trash"),
        Binding("r", "rename", "Rename"),
        Binding("p", "pin", "Pin"),
        Binding("slash", "filter", "Filter"),
        Binding("ctrl+f", "search", "Search"),
        Binding("a", "toggle_scope", "All/here"),
        Binding("w", "choose_workspace", "Workspace"),
        Binding("s", "cycle_sort", "Sort"),
        Binding("g", "cycle_agent", "Agent"),
        Binding("K", "keep", "Keep a copy", show=False),
        Binding("h", "toggle_agent_hidden", "Hide -p"),
        Binding("i,tab", "focus_composer", "Compose"),
        Binding("escape", "back", "Back", show=False),
        Binding("x", "recover", "Mark stale turn interrupted", show=False),
        Binding("1", "show_tab('tab-summary')", "Summary tab", show=False),
        Binding("2", "show_tab('tab-history')", "History tab", show=False),
        Binding("3", "show_tab('tab-context')", "Context tab", show=False),
    ]

    def __init__(self, service, *, mode: str = "browse", agent: str | None = None):
        super().__init__()
        self.service = service
        self.mode = mode
        self.agent = agent
        self.running: RunningTurn | None = None
        self.comparisons: list[tuple[int, int, int]] = []
        self.history_to_end: str | None = None
        self.last_undo: tuple[str, SessionRef] | None = None
        self.sent_text = ""
        self.detail_window: int | None = None
        self.all_rows: list[SessionRow] = []
        self.scope_all = False
        self.scope_key: str | None = None
        self.scope_label = "this workspace"
        self.filter_text = ""
        self.sort = "updated"
        self.agent_filter: str | None = None   # one source's sessions only
        self.hide_agent_hidden = False          # leave out what the agent's own picker hides
        self.detail: SessionDetail | None = None
        self.prepared: LiveMeter | None = None
        self.meter_result: MeterResult | None = None
        self.pending_turn: tuple[str, int] | None = None
        self._meter_timer: Timer | None = None
        self.loaded_once = False
        self.rows_loading = True
        self.rows_signature: tuple = ()
        self.scope_where = f"workspace {service.workspace}"

    # --- layout ----------------------------------------------------------------------------

    @property
    def reprise_app(self) -> RepriseApp:
        """The app this screen runs in, with Reprise's own attributes (clock, follow_disk, report_error)."""
        return cast("RepriseApp", self.app)

    def compose(self) -> ComposeResult:
        yield Static("", id="header")
        yield Input(placeholder="filter: title, messages or id prefix (Enter or Esc to return)", id="filter")
        with Horizontal(id="body"):
            with Vertical(id="list-pane"):
                yield Static("", id="columns")
                yield SessionList(id="sessions", clock=self.reprise_app.clock)
            yield DetailPane(id="detail")
        yield MeterBar(id="meter")
        yield Composer(id="composer")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self.query_one(SessionList).focus()
        self.update_header()
        self.load_rows()
        if self.reprise_app.follow_disk:
            self.set_interval(REFRESH_SECONDS, self._refresh_tick)

    def on_resize(self) -> None:
        self.update_columns()

    # --- header ----------------------------------------------------------------------------

    def update_header(self) -> None:
        visible = len(self.query_one(SessionList).rows)
        total = len(self.all_rows)
        scope = self.scope_where
        counts = Text(no_wrap=True, overflow="ellipsis")
        if self.rows_loading:
            counts.append("loading sessions… ", style="bold yellow")
        counts.append(f"{visible} of {total} sessions shown", style="bold" if visible < total else "")
        text = counts
        if self.filter_text:
            text.append(f" · filter: {safe_line(self.filter_text)}", style="yellow")
        if self.agent_filter:
            text.append(f" · agent: {self.service.sources[self.agent_filter].label}", style="yellow")
        if self.hide_agent_hidden:
            text.append(" · -p runs hidden", style="yellow")
        text.append(f" · sort: {self.sort}")
        problems = sum(1 for row in self.all_rows if row.problem_code)
        if problems:
            text.append(f" · {problems} unreadable", style="red")
        if self.mode == "pick":
            text.append(" · PICK: Enter prints the id, Esc/q cancels", style="bold magenta")
        where_line = Text.assemble(("Reprise ", "bold"), (safe_line(scope), "bold cyan"),
                                   ("  state ", "dim"), (safe_line(self.service.state_root), "dim"))
        where_line.no_wrap, where_line.overflow = True, "ellipsis"
        self.query_one("#header", Static).update(Text("\n", no_wrap=True).join([text, where_line]))
        self.update_columns()

    def update_columns(self) -> None:
        session_list = self.query_one(SessionList)
        width = session_list.content_width or 60
        self.query_one("#columns", Static).update(Text(header_text(max(width, 30), self.sort, session_list.show_agent),
                                                       style="bold"))

    # --- rows ------------------------------------------------------------------------------

    def _refresh_tick(self) -> None:
        if not any(w.group == "rows" and w.is_running for w in self.workers):
            self.load_rows()

    @work(thread=True, exclusive=True, group="rows", exit_on_error=False)
    def load_rows(self, select: str | None = None) -> None:
        """List in a worker; read every row's details here too, so filtering and drawing on the UI
        thread never touch the catalog."""
        scope_all, scope_key = self.scope_all, self.scope_key
        try:
            listing = self.service.list_sessions(all_workspaces=scope_all, key=scope_key)
            key = scope_key or self.service.workspace_key
            where = "all workspaces" if scope_all else f"workspace {self.service.workspace_path_of(key)[0] or key}"
        except RepriseError as exc:
            self.app.call_from_thread(self.reprise_app.report_error, exc)
            return
        for note in self.service.take_notices():  # the catalog was rebuilt or bypassed
            self.app.call_from_thread(self.app.notify, safe_text(note), severity="warning", timeout=10, markup=False)
        signature = (scope_all, scope_key, tuple((row.path, row.size, row.mtime_ns, row.title, row.pinned,
                                                  row.resume_cost) for row in listing.rows))
        if signature != self.rows_signature or select is not None:
            self.service.load_details(listing.rows)
        self.post_message(RowsLoaded(listing.rows, where, signature, select))

    def on_rows_loaded(self, message: RowsLoaded) -> None:
        self.rows_loading = False
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
        self.call_after_refresh(gc.freeze)  # the rows live on: keep full collections from walking them while typing

    def apply_view(self, *, select: str | None = None) -> None:
        wanted = self.filter_text
        rows = [row for row in self.all_rows if matches(row, wanted)] if wanted else list(self.all_rows)
        if self.agent_filter:
            rows = [row for row in rows if row.source == self.agent_filter]
        if self.hide_agent_hidden:
            rows = [row for row in rows if not row.hidden_by_agent]
        sort_rows(rows, self.sort)
        session_list = self.query_one(SessionList)
        session_list.show_agent = len(self.service.sources) > 1
        session_list.set_rows(rows, keep=select)
        self.update_header()

    def show_empty_state(self) -> None:
        root = self.service.state_root
        self.query_one(DetailPane).show_problem(
            f"No sessions here yet.\n\nPress n to start a new session in {safe_line(self.service.workspace)}, "
            "press a to look "
            f"in all workspaces, or run your agent (fractal) in a project folder: its sessions appear here.\n\n"
            f"Sessions live in {safe_line(root)}/workspaces/<workspace>/sessions/. Try `reprise --demo` for a tour.")

    @work(thread=True, exclusive=True, group="costs", exit_on_error=False)
    def fill_costs(self, rows: list[SessionRow], current: str | None) -> None:
        worker = get_current_worker()
        rows.sort(key=lambda row: row.path != current)
        self.service.fill_resume_costs(rows, should_stop=lambda: worker.is_cancelled,
                                       progress=lambda: self.post_message(CostsFilled()))
        self.post_message(CostsFilled())

    def on_costs_filled(self, _: CostsFilled) -> None:
        self.query_one(SessionList).refresh()

    # --- selection and detail --------------------------------------------------------------

    @on(SessionList.Highlighted)
    def on_highlighted(self, message: SessionList.Highlighted) -> None:
        self.detail = None
        self.prepared = None
        self.meter_result = None
        self.refresh_bindings()  # the footer offers the session actions only while a readable row is current
        row = message.row
        if row is None:
            self.query_one(MeterBar).show(None)
            return
        if row.problem_code:
            self.query_one(DetailPane).show_problem(f"{safe_line(row.path)}\n{row.problem_code}: "
                                                    f"{safe_line(row.problem_message)}")
            self.query_one(MeterBar).show(None, status="this file cannot be read")
            return
        self.query_one(DetailPane).show_loading(row.display_title)
        self.query_one(MeterBar).show(None, status="counting…")
        self.load_detail(row)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def load_detail(self, row: SessionRow) -> None:
        worker = get_current_worker()
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
            pane.show_problem(safe_line(message.error or "cannot be read"))
            self.query_one(MeterBar).show(None, status="this file cannot be read")
            return
        self.detail = message.detail
        self.detail_window = message.window
        self.comparisons = message.comparisons
        pane.show_detail(message.detail, stale=message.stale, now=local_now(self.reprise_app.clock()))
        if self.history_to_end == message.path:
            self.history_to_end = None
            pane.scroll_history_to_end()

    def on_meter_prepared(self, message: MeterPrepared) -> None:
        if message.path != self.query_one(SessionList).current_path:
            return
        if message.prepared is None:
            self.query_one(MeterBar).show(None, status=f"meter failed: {message.error}")
            return
        self.prepared = message.prepared
        self.schedule_meter()

    # --- the live meter --------------------------------------------------------------------

    @on(Composer.Changed)
    def on_composer_changed(self, _: Composer.Changed) -> None:
        self.schedule_meter()

    def schedule_meter(self) -> None:
        if self._meter_timer is not None:
            self._meter_timer.stop()
        self._meter_timer = self.set_timer(METER_DEBOUNCE_SECONDS, self._start_meter)

    def _start_meter(self) -> None:
        self._meter_timer = None
        if self.prepared is not None:
            self.measure_message(self.prepared, self.query_one(SessionList).current_path,
                                 self.query_one(Composer).text)

    @work(thread=True, exclusive=True, group="meter", exit_on_error=False)
    def measure_message(self, prepared: LiveMeter, path: str | None, text: str) -> None:
        result = prepared.with_message(text)
        if not get_current_worker().is_cancelled:
            self.post_message(MeterUpdated(path, text, result))

    def on_meter_updated(self, message: MeterUpdated) -> None:
        if message.path != self.query_one(SessionList).current_path:
            return
        if message.message != self.query_one(Composer).text:
            return  # stale: a newer keystroke is on its way
        self.meter_result = message.result
        self.show_meter()
        self.query_one(DetailPane).show_context(message.result, comparisons=self.comparisons)

    def show_meter(self) -> None:
        status = ""
        if self.running is not None:
            status = f"turn running {time.monotonic() - self.running.started:.0f} s · ctrl+c interrupts"
        self.query_one(MeterBar).show(self.meter_result, status=status)

    # --- actions ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        needs_session = {"resume", "trim", "delete", "rename", "pin", "keep"}
        if action in ("cycle_agent", "toggle_agent_hidden"):
            return len(self.service.sources) > 1
        if action in needs_session:
            row = self.query_one(SessionList).current if self.is_mounted else None
            if row is None or (row.problem_code and action != "delete"):
                return None
            if self.mode == "pick" and action not in ("resume",):
                return False
            able = self.service.sources[row.source].capabilities
            if ((action == "trim" and not (able.trim_in_place or able.trim_fork))
                    or (action == "delete" and not able.trash) or (action == "resume" and not able.resume)
                    or (action == "keep" and not able.keep)):
                return None
        if self.mode == "pick" and action in ("new", "focus_composer", "recover", "undo"):
            return False
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
            self.app.exit(Picked(ref, self.service.workspace_path_of(ref.workspace_key)[0]))
            return
        self.plan_resume(ref)

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
                           f"Trimming it first (t) keeps everything in the archive.")
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
        where = f" as a new session {safe_line(result.ref.session_id[:8])}" if result.forked else ""
        before = f"{plan.meter_before:,}" if plan.meter_before is not None else "?"
        after = f"{plan.meter_after:,}" if plan.meter_after is not None else "?"
        self.app.notify(f"Trimmed{where}: {before} → {after} tokens. u undoes it.", markup=False)
        self.load_rows(select=self.service.session_path(result.ref))
        row = self.query_one(SessionList).current
        if row is not None and row.path == self.service.session_path(result.ref):
            self.load_detail(row)

    def action_undo(self) -> None:
        """Undo the last trim or delete: this session's newest trim, else the newest trashed session."""
        last, ref, scope_all = self.last_undo, self.current_ref(), self.scope_all

        def target():
            if last is not None and last[0] == "rm":
                return last
            if ref is not None and self.service.can_undo_trim(ref):
                able = self.service.sources[ref.source].capabilities
                if able.trim_fork and not able.trim_in_place:   # a fork: undoing moves it to the trash
                    return ("fork", ref, self.service.restore(ref, dry_run=True))
                return ("trim", ref)
            entries = self.service.trash_entries(all_workspaces=scope_all)
            return ("rm", entries[0].ref) if entries else None

        self.run_service(target, self._confirm_undo)

    def _confirm_undo(self, target) -> None:
        if target is None:
            self.app.notify("Nothing to undo: this session has no trim and the trash is empty.")
            return
        kind, ref, *preview = target
        if kind == "fork":
            grown = any("needs --force" in note for note in preview[0].notes)
            question = (f"Move the fork {safe_line(ref.session_id[:8])} to Reprise's trash? The session it was "
                        "trimmed from is unchanged." + ("\n\nIt has grown since Reprise wrote it: its new turns go "
                                                        "to the trash with it." if grown else ""))
            call, done = (lambda: self.service.restore(ref, force=grown)), "The fork is in the trash."
        elif kind == "trim":
            question = f"Undo the last trim of session {safe_line(ref.session_id[:8])}? The archived text goes back."
            call, done = (lambda: self.service.restore(ref)), "Trim undone."
        else:
            question = f"Restore session {safe_line(ref.session_id[:8])} from the trash?"
            call, done = (lambda: self.service.trash_restore(ref)), "Restored from the trash."

        def answered(yes: bool | None) -> None:
            if yes:
                self.last_undo = None
                path = self.service.session_path(ref)
                self.run_service(call, lambda result: self._after_undo(path, getattr(result, "notes", None)), done)

        self.app.push_screen(ConfirmDialog(question, yes="Undo"), answered)

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
        question = (f"Move {self.describe(row)} to the trash?\n\nIt can be restored with u, or with "
                    f"`reprise trash restore {safe_line(ref.session_id[:8])}`.")

        def answered(yes: bool | None) -> None:
            if yes:
                self.run_service(lambda: self.service.remove(ref), lambda _: self._after_delete(ref),
                                 "Moved to the trash. u undoes it.")

        self.app.push_screen(ConfirmDialog(question, yes="Move to trash", danger=True), answered)

    def _after_delete(self, ref: SessionRef) -> None:
        self.last_undo = ("rm", ref)
        self.load_rows()

    def action_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.display = True
        field.focus()

    @on(Input.Changed, "#filter")
    def on_filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.apply_view()

    @on(Input.Submitted, "#filter")
    def on_filter_submitted(self, _: Input.Submitted) -> None:
        self.action_back()

    def action_back(self) -> None:
        field = self.query_one("#filter", Input)
        if self.mode == "pick" and not field.display and isinstance(self.focused, SessionList):
            self.app.exit(None)  # Esc cancels the picker
            return
        if not field.value:
            field.display = False
        self.query_one(SessionList).focus()

    def action_show_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = tab

    def action_focus_composer(self) -> None:
        self.query_one(Composer).focus()

    @on(Composer.Left)
    def on_composer_left(self, _: Composer.Left) -> None:
        self.query_one(SessionList).focus()

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
        self.sent_text = text
        self.running = RunningTurn(path, ref, time.monotonic(), threading.Event())
        self._tick = self.set_interval(1.0, self.show_meter)
        self.show_meter()
        self.send_turn(self.running, text, confirm_over)

    @work(thread=True, group="turn", exit_on_error=False)
    def send_turn(self, running: RunningTurn, text: str, confirm_over: bool) -> None:
        try:
            result = self.service.send_turn(running.ref, text, agent=self.agent, confirm_over=confirm_over,
                                            cancel=running.cancel)
        except Exception as exc:  # whatever happens, the running state must end
            self.post_message(TurnFinished(running.path, None, exc))
            return
        self.post_message(TurnFinished(running.path, result, None))

    def on_turn_finished(self, message: TurnFinished) -> None:
        text = self.query_one(Composer).text
        ref = self.running.ref if self.running else None
        self.running = None
        self._tick.stop()
        if message.error is not None:
            error = message.error
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
        composer = self.query_one(Composer)
        if composer.text == self.sent_text:  # a draft typed while the turn ran stays
            composer.clear()
        if outcome.status == "succeeded":
            self.app.notify(f"Turn finished ({sent.backend}).")
        else:
            self.app.notify(safe_text(f"Turn {outcome.status}: {outcome.error or 'no error text'}"),
                            severity="error", timeout=10, markup=False)
        self.query_one(DetailPane).show_tab("tab-history")
        self.history_to_end = message.path
        self.load_rows(select=message.path)
        row = self.query_one(SessionList).current
        if row is not None and row.path == message.path:
            self.load_detail(row)

    def interrupt_turn(self) -> bool:
        """ctrl+c while a turn runs interrupts it instead of quitting; pressed again, it quits."""
        if self.running is None or self.running.cancel.is_set():
            return False
        self.running.cancel.set()
        self.app.notify("Interrupting the turn…")
        return True

    def action_recover(self) -> None:
        ref = self.current_ref()
        if ref is None:
            return
        self.run_service(lambda: self.service.mark_stale_interrupted(ref),
                         lambda marked: self._after_recover(marked))

    def _after_recover(self, marked: list[str]) -> None:
        self.app.notify(f"Marked {len(marked)} stale turn(s) interrupted." if marked else "No stale pending turn.")
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

    def action_cycle_sort(self) -> None:
        self.sort = SORTS[(SORTS.index(self.sort) + 1) % len(SORTS)]
        self.apply_view()

    def action_cycle_agent(self) -> None:
        """Every agent's sessions, then each agent's in turn."""
        names = [None, *self.service.sources]
        self.agent_filter = names[(names.index(self.agent_filter) + 1) % len(names)]
        self.apply_view()

    def action_toggle_agent_hidden(self) -> None:
        self.hide_agent_hidden = not self.hide_agent_hidden
        self.apply_view()

    def action_choose_workspace(self) -> None:
        self.run_service(self.service.workspaces, self._show_workspaces)

    def _show_workspaces(self, infos) -> None:
        choices = [(info.key, f"{info.sessions:5} sessions  {info.path or '(folder unknown) ' + info.key}")
                   for info in infos]

        def chosen(key: str | None) -> None:
            if key:
                self.workers.cancel_group(self, "costs")
                self.scope_all = False
                self.scope_key = key
                self.scope_where = f"workspace {key}"
                self.rows_loading = True
                self.load_rows()
                self.update_header()

        self.app.push_screen(ChoiceDialog("Choose a workspace", choices, "No workspaces yet."), chosen)

    def action_search(self) -> None:
        label = "all workspaces" if self.scope_all else "this workspace"

        def chosen(hit: SearchHit | None) -> None:
            if hit is not None:
                self.open_at_turn(hit)

        self.app.push_screen(SearchScreen(self.service, all_workspaces=self.scope_all, key=self.scope_key,
                                          scope_label=label), chosen)

    def open_at_turn(self, hit: SearchHit) -> None:
        """Select the hit's session and open its conversation with the match's line at the top."""
        self.filter_text = ""
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
        return f"{clipped(row.display_title, 60)} ({row.turns} turns, {human_size(row.size)})"
