"""Full-text search over every turn (and the title) of the sessions in scope, hits grouped by
session with "N more"; choosing a hit opens that session with the match at the top of its
conversation. The search runs in a worker through the service, once per pause in typing."""

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

from reprise.core import faults
from reprise.core.errors import RepriseError
from reprise.core.search_index import HIT_END, HIT_START, SearchHit

from ..debounce import Debouncer
from ..reports.search import HITS_PER_SESSION, HitGroup, grouped, sessions_phrase, where
from ..text import clipped, safe_line, safe_text
from ..workers import ReportsWorkerErrors
from .dialogs import DIALOG_CSS

TYPING_PAUSE = 0.3   # seconds of no typing before a search starts


def group_heading(group: HitGroup) -> Text:
    """A session's heading: its title and how many of its turns matched."""
    count = len(group.hits)
    text = Text(clipped(group.row.display_title, 80), style="bold")
    text.append(f"  {count} hit{'s' if count != 1 else ''}", style="dim")
    return text


def hit_text(hit: SearchHit, width: int) -> Text:
    """One result line, at most `width` wide: where it matched ("title", "turn 30 reply"), then
    the snippet with the matches highlighted."""
    text = Text(f"  {where(hit):17} ", style="dim")
    snippet = " ".join(hit.snippet.split())
    for index, piece in enumerate(snippet.replace(HIT_END, HIT_START).split(HIT_START)):
        text.append(safe_text(piece), style="reverse" if index % 2 else "")
    text.truncate(max(width, 30), overflow="ellipsis")
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
        self.query_text = ""
        self.expanded: set[str] = set()   # the sessions whose every hit is listed
        self.focus_results = False
        self.typing: Debouncer[str] = Debouncer(self, TYPING_PAUSE, self._search)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(f"Search all text of the sessions in {self.scope_label}", style="bold"))
            yield Input(placeholder="words to find (titles, messages, replies, errors, files, commands)",
                        id="search-input")
            yield Label("", id="search-status")
            yield OptionList(id="search-results")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        if query:
            status = self.query_one("#search-status", Label)
            status.update(Text(f"Searching for {safe_line(query)}… (first search indexes)"))
            self.focus_results = True
            self.typing.now(query)

    def on_input_changed(self, event: Input.Changed) -> None:
        if len(event.value.strip()) >= 3:
            self.typing.poke(event.value.strip())
        else:
            self.typing.cancel()

    def _search(self, query: str, generation: int) -> None:
        self.run_search(query, generation)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: str, generation: int) -> None:
        worker = get_current_worker()
        faults.point("tui_search")
        try:
            hits = self.service.search(query, all_workspaces=self.all_workspaces, key=self.key,
                                       should_stop=lambda: worker.is_cancelled)
            self.service.load_details([hit.row for hit in hits])   # shown with their session's title
        except RepriseError as exc:
            self.app.call_from_thread(self._show_error, str(exc), generation)
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_hits, query, hits, generation)

    def _show_error(self, message: str, generation: int) -> None:
        if self.typing.is_current(generation):
            self.query_one("#search-status", Label).update(Text(safe_line(message), style="red"))

    def _show_hits(self, query: str, hits: list[SearchHit], generation: int) -> None:
        if not self.typing.is_current(generation):
            return
        self.hits, self.query_text, self.expanded = hits, query, set()
        self._list_hits()
        if hits and self.focus_results:
            self.focus_results = False
            self.action_results()
        self.query_one("#search-status", Label).update(
            Text(f"{sessions_phrase(hits)} for {safe_line(query)}" + (" (first 200)" if len(hits) >= 200 else "")))

    def _list_hits(self, keep: str | None = None) -> None:
        """A heading per session, its best hits, and "… N more" (Enter lists them all)."""
        results = self.query_one("#search-results", OptionList)
        results.clear_options()
        index = {id(hit): number for number, hit in enumerate(self.hits)}
        width = results.scrollable_content_region.width - 2 or 100   # one line per hit: no wrapping
        options: list[Option] = []
        for group in grouped(self.hits):
            path = group.row.path
            options.append(Option(group_heading(group), disabled=True))
            shown = group.hits if path in self.expanded else group.hits[:HITS_PER_SESSION]
            options += [Option(hit_text(hit, width), id=str(index[id(hit)])) for hit in shown]
            if len(shown) < len(group.hits):
                options.append(Option(Text(f"  … {len(group.hits) - len(shown)} more in this session",
                                           style="italic"), id=f"more:{path}"))
        results.add_options(options)
        if keep is not None:
            results.highlighted = results.get_option_index(keep)

    def action_results(self) -> None:
        results = self.query_one("#search-results", OptionList)
        if results.option_count:
            results.focus()
            if results.highlighted is None:
                results.action_first()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        chosen = event.option.id or ""
        if chosen.startswith("more:"):
            path = chosen.removeprefix("more:")
            self.expanded.add(path)
            group = next(group for group in grouped(self.hits) if group.row.path == path)
            first_more = group.hits[HITS_PER_SESSION]
            self._list_hits(keep=str(next(i for i, hit in enumerate(self.hits) if hit is first_more)))
            return
        self.dismiss(self.hits[int(chosen)])

    def action_cancel(self) -> None:
        self.dismiss(None)
