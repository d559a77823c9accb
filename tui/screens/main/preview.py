"""The main screen's preview: the current row's detail read in a worker, its meter prepared and
run again on every pause in typing, and the keys that move in the preview while the list keeps
the focus."""

from __future__ import annotations

from textual import on, work
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import TabbedContent, TextArea
from textual.worker import get_current_worker

from reprise.core import faults
from reprise.core.errors import RepriseError
from reprise.core.meter import LiveMeter
from reprise.core.rows import SessionRow
from reprise.core.sources.roles import Metered

from ...format import local_now
from ...messages import DetailLoaded, MeterPrepared, MeterUpdated
from ...text import safe_line
from ...widgets.composer import Composer
from ...widgets.detail import DetailPane
from ...widgets.meter import MeterBar
from ...widgets.session_list import SessionList
from .base import ScreenBase


class PreviewPart(ScreenBase):
    """The current session's detail, context tab and meter line."""

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
        self.show_meter_status("counting…" if self.service.can(row.source, Metered) else self.not_metered(row.source))
        self.load_detail(row)

    def not_metered(self, source: str) -> str:
        """What the meter line says of a session whose source has no meter."""
        return f"Reprise does not meter {self.service.sources[source].label} sessions"

    def show_meter_status(self, status: str | None) -> None:
        """The meter line without a result: nothing selected (None), or why there is none yet."""
        for bar in self.query(MeterBar):   # none in pick mode
            bar.show(None, status=status or "")

    def load_detail(self, row: SessionRow) -> None:
        self._load_detail(row)

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _load_detail(self, row: SessionRow) -> None:
        worker = get_current_worker()
        faults.point("tui_load_detail")
        ref = row.ref
        if ref is None:
            self.post_message(DetailLoaded(row.path, None, "the file name is not a valid session id"))
            return
        metered = self.service.can(ref.source, Metered)   # a source without a meter still shows its sessions
        try:
            detail = self.service.show(ref)
            comparisons = self.service.estimates_vs_measured(detail)
            stale = self.service.stale_pending(detail)
            window = self.service.context_window(ref) if metered else None
        except RepriseError as exc:
            self.post_message(DetailLoaded(row.path, None, str(exc)))
            return
        if worker.is_cancelled:
            return
        self.post_message(DetailLoaded(row.path, detail, comparisons=comparisons, stale=stale, window=window))
        if not metered:
            return
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
        source = message.detail.ref.source
        if not self.service.can(source, Metered):
            self.show_meter_status(self.not_metered(source))
            pane.show_context(None, f"{self.not_metered(source)}: no context is counted.")
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
        """Show or hide the preview; below 100 columns the choice is remembered for the next run."""
        self.preview_shown = not self.preview_shown
        if self.narrow:
            self.preview_when_narrow = self.preview_shown
            self.remember(preview_when_narrow=self.preview_shown)

    def action_preview(self) -> None:
        self.action_toggle_preview()

