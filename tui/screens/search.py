"""Full-text search over every turn of the sessions in scope; choosing a hit opens that
session at that turn. The search itself runs in a worker through the service."""

from __future__ import annotations

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from reprise.core.errors import RepriseError
from reprise.core.search_index import HIT_END, HIT_START, SearchHit

from ..text import clipped, safe_line, safe_text
from ..workers import ReportsWorkerErrors
from .dialogs import DIALOG_CSS


def hit_text(hit: SearchHit) -> Text:
    """One result line: session title, turn and field, then the snippet with matches highlighted."""
    text = Text(clipped(hit.row.display_title, 40), style="bold")
    text.append(f"  turn {hit.turn} · {hit.field}  ", style="dim")
    snippet = " ".join(hit.snippet.split())
    for index, piece in enumerate(snippet.replace(HIT_END, HIT_START).split(HIT_START)):
        text.append(safe_text(piece), style="reverse" if index % 2 else "")
    return text


class SearchScreen(ReportsWorkerErrors, ModalScreen[SearchHit | None]):
    DEFAULT_CSS = DIALOG_CSS.format(name="SearchScreen") + """
    SearchScreen > Vertical { width: 110; height: 80%; }
    SearchScreen OptionList { height: 1fr; }
    SearchScreen #search-status { color: $text-muted; }
    """
    BINDINGS = [Binding("escape", "cancel", "Close"), Binding("down", "results", "Results", show=False)]

    def __init__(self, service, *, all_workspaces: bool, key: str | None, scope_label: str):
        super().__init__()
        self.service = service
        self.all_workspaces = all_workspaces
        self.key = key
        self.scope_label = scope_label
        self.hits: list[SearchHit] = []
        self.focus_results = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Search all text of the sessions in {self.scope_label}", style="bold"))
            yield Input(placeholder="words to find (messages, responses, errors, files, commands)", id="search-input")
            yield Label("", id="search-status")
            yield OptionList(id="search-results")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if query:
            status = self.query_one("#search-status", Label)
            status.update(Text(f"Searching for {safe_line(query)}… (first search indexes)"))
            self.focus_results = True
            self.run_search(query)

    def on_input_changed(self, event: Input.Changed) -> None:
        if len(event.value.strip()) >= 3:
            self.run_search(event.value.strip())

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: str) -> None:
        worker = get_current_worker()
        try:
            hits = self.service.search(query, all_workspaces=self.all_workspaces, key=self.key,
                                       should_stop=lambda: worker.is_cancelled)
            self.service.load_details([hit.row for hit in hits])   # shown with their session's title
        except RepriseError as exc:
            self.app.call_from_thread(self._show_error, str(exc))
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_hits, query, hits)

    def _show_error(self, message: str) -> None:
        self.query_one("#search-status", Label).update(Text(safe_line(message), style="red"))

    def _show_hits(self, query: str, hits: list[SearchHit]) -> None:
        self.hits = hits
        results = self.query_one("#search-results", OptionList)
        results.clear_options()
        results.add_options([Option(hit_text(hit), id=str(i)) for i, hit in enumerate(hits)])
        if hits and self.focus_results:
            self.focus_results = False
            self.action_results()
        sessions = len({hit.row.path for hit in hits})
        self.query_one("#search-status", Label).update(
            Text(f"{len(hits)} matching turns in {sessions} sessions for {safe_line(query)}"
                 + (" (first 200)" if len(hits) >= 200 else "")))

    def action_results(self) -> None:
        results = self.query_one("#search-results", OptionList)
        if results.option_count:
            results.focus()
            if results.highlighted is None:
                results.highlighted = 0

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self.hits[int(event.option.id or 0)])

    def action_cancel(self) -> None:
        self.dismiss(None)
