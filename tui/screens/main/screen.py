"""The main screen: header, session list, detail tabs, the running turn's line, meter line and
composer; in pick mode a list, a one-line prompt and the preview on demand.

Its state that decides what is shown (filter, sort, agent, the current row, a running turn, the
layout) is reactive, with watchers (`base.ScreenBase`); what decides which keys work is
`bindings=True`, so the footer follows it. Every service call runs in a thread worker that only
posts a message back (`tui/messages.py`). Its keys come from `tui/actions.py`. Each job is one
part: the list (`rows`), the preview and meter (`preview`), the composer and turns
(`composing`), the actions and their dialogs (`session_actions`); this module lays them out.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Input, Static, TabbedContent

from ...actions import bindings
from ...header_lines import FILTERED_BY, LOADING, PICK_PROMPT, HeaderState, header_parts
from ...list_rows import NARROW_COLUMNS
from ...widgets.composer import Composer
from ...widgets.detail import DetailPane
from ...widgets.filter_prompt import FilterPrompt, PickPrompt
from ...widgets.meter import MeterBar
from ...widgets.running_turn import RunningTurnLine
from ...widgets.session_list import SessionList
from .composing import ComposingPart
from .rows import REFRESH_SECONDS, RowsPart
from .session_actions import SessionActionsPart


class MainScreen(SessionActionsPart, ComposingPart, RowsPart):
    BINDINGS = bindings("screen")

    # --- layout ----------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        picking = self.mode == "pick"
        yield Static("", id="header")
        if picking:
            yield PickPrompt(placeholder=PICK_PROMPT,
                             id="filter", classes="-prompt")
        else:
            yield FilterPrompt(placeholder=f"filter: {FILTERED_BY} (Enter or Esc to return)", id="filter")
        with Horizontal(id="body"):
            with Vertical(id="list-pane"):
                yield Static("", id="columns")
                yield SessionList(id="sessions", clock=self.reprise_app.clock)
                yield Static("", id="empty-state")
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
            self.query_one(Composer).display = False   # Tab opens it; until then the footer says so
            self.set_focus(self.query_one(SessionList))
        self._fit_width()
        self.update_header()
        self.service.hear_progress(self._files_read)
        if self.show_first_rows():   # drawn in the first frame: the disk is looked at once it is painted
            self.call_after_refresh(self.load_rows)
        else:
            self.load_rows()
        if self.reprise_app.follow_disk:
            self.set_interval(REFRESH_SECONDS, self._refresh_tick)

    def on_resize(self) -> None:
        self._fit_width()
        self.update_header()   # it updates the columns too
        self.call_after_refresh(self.place_toasts)

    def place_toasts(self) -> None:
        """Notifications stand above the meter line, the composer and the running turn's line,
        never over them."""
        below = sum(widget.outer_size.height for widget in self.query("RunningTurnLine, MeterBar, Composer, Footer")
                    if widget.display)
        for rack in self.query("#textual-toastrack"):
            rack.styles.margin = (0, 0, below, 0)

    def _fit_width(self) -> None:
        self.narrow = self.size.width < NARROW_COLUMNS

    def watch_narrow(self, narrow: bool) -> None:
        """A picker's habit (fzf, the agents' own): below 100 columns the list takes the screen and
        the preview waits for ctrl+e, which is remembered; opened there, it goes under the list
        (lazygit's habit)."""
        self.query_one("#body").set_class(narrow, "-stacked")
        self.preview_shown = not narrow or self.preview_when_narrow

    def watch_preview_shown(self, shown: bool) -> None:
        self.query_one(DetailPane).display = shown and not self.query_one("#empty-state").display
        self.call_after_refresh(self.update_columns)

    # --- header ----------------------------------------------------------------------------

    def update_header(self) -> None:
        state = HeaderState(
            scope=self.scope_where, state_root=str(self.service.state_root),
            visible=len(self.query_one(SessionList).rows), total=len(self.all_rows),
            loading=(self.read_progress or LOADING) if self.rows_loading else None,
            sort=self.sort, reverse=self.sort_reverse, filter_text=self.filter_text,
            agent_label=self.service.sources[self.agent_filter].label if self.agent_filter else None,
            hidden=self.hidden_count if self.hide_agent_hidden else 0, kept_before_sweep=self.kept_before_sweep,
            costs=self.costs_progress, problems=self.problem_count, picking=self.mode == "pick")
        header = self.query_one("#header", Static)
        width = header.size.width or self.size.width or 80
        lines = []
        for parts in header_parts(state):   # one line each, cut with an ellipsis (Static would wrap them)
            line = Text.assemble(*parts, no_wrap=True, overflow="ellipsis")
            line.truncate(width, overflow="ellipsis")
            lines.append(line)
        header.update(Text("\n").join(lines))
        self.update_columns()

    def update_columns(self) -> None:
        """The list's header for its width: the sorted column marked, a folder column when the
        scope is wider than one folder."""
        session_list = self.query_one(SessionList)
        session_list.sort, session_list.reverse = self.sort, self.sort_reverse
        session_list.show_folder = self.scope_all
        self.query_one("#columns", Static).update(Text(session_list.header(), style="bold"))


    def action_keys(self) -> None:
        from ..help import KeysScreen  # not before the first frame

        self.app.push_screen(KeysScreen())

    def action_help(self) -> None:
        self.action_keys()

    def action_show_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = tab

