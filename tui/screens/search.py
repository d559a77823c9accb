"""Full-text search over every turn (and the title) of the sessions in scope, hits grouped by
session (its agent, title, folder and age) with "N more", each hit the stretch of its text that
the width holds, centred on the match; choosing a hit opens that session with the match at the top
of its conversation. The search runs in a worker through the service, once per pause in typing.

The list keeps the session list's habits (`ChoiceList`): what is typed is the query, Esc clears
it and on an empty one closes, the arrows, ctrl+n / ctrl+p, PgUp / PgDn and Home / End move
through the hits, and Enter opens the highlighted one (or searches at once while the hits shown
are not yet those of the words typed).

The dialog is never blank while a search runs: the hits are listed as they are found (newest
session first) with the count so far and how far the search is ("searching 300/2,500 sessions"),
also while the app's first listing of a cold cache runs (the search scans the files without it).
After a search that met sessions the index does not hold, the app indexes them in the background
(`tui/indexing.py`: "indexing 812/2,500 sessions", shown here while the dialog is open), and goes on
after the dialog closes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from reprise.core import faults
from reprise.core.errors import RepriseError
from reprise.core.progress import Progress
from reprise.core.search_engine import SearchUpdate
from reprise.core.search_index import SearchHit
from reprise.core.service import Service

from ..debounce import Debouncer
from ..indexing import IndexesInBackground, IndexStatus, progress_phrase
from ..reports.search import (
    HITS_PER_SESSION,
    HitGroup,
    grouped,
    hits_phrase,
    session_facts,
    sessions_phrase,
    snippet_pieces,
    where,
)
from ..text import clipped, safe_line
from ..widgets.choice_list import ChoiceList
from ..workers import ReportsWorkerErrors
from .dialogs import Choice, Dialog

TYPING_PAUSE = 0.3   # seconds of no typing before a search starts
WHERE_CELLS = 20     # "  turn 30 reply      " before each snippet


def shown_cells(ch: str) -> int:
    """The cells a character of a snippet takes on the screen, made safe as it is shown."""
    return cell_len(safe_line(ch))


def group_heading(group: HitGroup, width: int, now: float) -> Text:
    """A session's heading: its agent's letter, its title, then its folder, age and number of hits."""
    agent, folder, age = session_facts(group.row, now)
    facts = f"  {folder} · {age} · {hits_phrase(len(group.hits))}"
    text = Text(f"{agent} ", style="bold")
    text.append(clipped(group.row.display_title, max(width - len(facts) - 2, 20)), style="bold")
    text.append(facts, style="dim")
    return text


def hit_text(hit: SearchHit, width: int) -> Text:
    """One result line, at most `width` wide: where it matched ("title", "turn 30 reply"), then
    the stretch of the text around the match, the matched words highlighted."""
    text = Text(f"  {where(hit):17} ", style="dim")
    for piece, matched in snippet_pieces(hit, max(width - WHERE_CELLS, 10), shown_cells):
        text.append(piece, style="reverse" if matched else "")
    text.truncate(max(width, 30), overflow="ellipsis")
    return text


@dataclass(frozen=True, slots=True)
class Found:
    """How far one search is: its hits so far (their rows' details loaded), sessions searched of all."""

    query: str
    hits: list[SearchHit]
    searched: int
    total: int
    complete: bool
    note: str | None = None


class SearchScreen(ReportsWorkerErrors, Dialog[SearchHit | None]):
    DEFAULT_CSS = """
    SearchScreen > #dialog-frame { width: 110; height: 90%; }
    SearchScreen #dialog-body { height: 1fr; }
    SearchScreen ChoiceList { height: 1fr; }
    SearchScreen ChoiceList > OptionList { height: 1fr; max-height: 100%; }
    SearchScreen #search-status { color: $text-muted; width: 100%; height: auto; max-height: 4; }
    """

    def __init__(self, service: Service, *, all_workspaces: bool, key: str | None, scope_label: str) -> None:
        super().__init__(f"Search all text of the sessions in {scope_label}")
        self.service = service
        self.all_workspaces = all_workspaces
        self.key = key
        self.hits: list[SearchHit] = []
        self.query_text = ""           # the query of the hits shown
        self.expanded: set[str] = set()   # the sessions whose every hit is listed
        self.typing: Debouncer[str] = Debouncer(self, TYPING_PAUSE, self._search)
        self.searching = ""   # the status of the search: its count so far and how far it is
        self.indexing = ""    # the status of the index built in the background (`tui/indexing.py`)
        self.note = ""        # what the search could not look at (outputs cut for the index), on a line of its own
        self.index_started = False

    class Searched(Message):
        """A search's hits so far, from its worker (each replaces the one before)."""

        def __init__(self, found: Found, generation: int) -> None:
            super().__init__()
            self.found = found
            self.generation = generation

    def body(self) -> Iterable[Widget]:
        yield ChoiceList("words to find (titles, messages, replies, errors, files, commands) · Esc clears",
                         id="search-list")
        yield Label("", id="search-status")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Close", "escape"), Choice("open", "Open", "enter", "primary")]

    @property
    def choice_list(self) -> ChoiceList:
        return self.query_one(ChoiceList)

    @property
    def results(self) -> OptionList:
        """The list of the hits."""
        return self.choice_list.options

    @on(ChoiceList.Changed)
    def on_query_changed(self, message: ChoiceList.Changed) -> None:
        query = message.text.strip()
        if len(query) >= 3:
            self.typing.poke(query)
            return
        self.typing.cancel()
        if not query:   # cleared (Esc): the hits go too, and the next Esc closes
            self.hits, self.query_text, self.searching, self.note = [], "", "", ""
            self._list_hits()
            self._show_status()

    @on(ChoiceList.Chosen)
    def on_chosen(self, message: ChoiceList.Chosen) -> None:
        self.open(message.option_id)

    def chosen(self, choice_id: str) -> None:
        if choice_id == "open":
            highlighted = self.results.highlighted_option
            self.open(highlighted.id if highlighted else None)
        else:
            self.dismiss(None)

    def open(self, option_id: str | None) -> None:
        """Enter: search at once while the hits shown are not those of the words typed; else open
        the highlighted hit, or list every hit of its session ("… N more")."""
        query = self.choice_list.text.strip()
        if query and (query != self.query_text or self.typing.pending):
            self.searching, self.note = f"Searching for {safe_line(query)}…", ""
            self._show_status()
            self.typing.now(query)
            return
        if option_id is None or self.too_soon():
            return
        if option_id.startswith("more:"):
            path = option_id.removeprefix("more:")
            self.expanded.add(path)
            group = next(group for group in grouped(self.hits) if group.row.path == path)
            first_more = group.hits[HITS_PER_SESSION]
            self._list_hits(keep=str(next(i for i, hit in enumerate(self.hits) if hit is first_more)))
            return
        self.dismiss(self.hits[int(option_id)])

    def _search(self, query: str, generation: int) -> None:
        self.searching, self.note = f"Searching for {safe_line(query)}…", ""
        self._show_status()
        self.run_search(query, generation)

    def _take_hits(self, query: str, hits: list[SearchHit]) -> None:
        """List these hits: more of the same search keep the highlight where it is (the hits before
        keep their place), another search's start at the top."""
        same = query == self.query_text
        if same and hits == self.hits:
            return
        highlighted = self.results.highlighted_option if same else None
        if not same:
            self.expanded = set()
        self.hits, self.query_text = hits, query
        self._list_hits(keep=highlighted.id if highlighted is not None else None)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def run_search(self, query: str, generation: int) -> None:
        worker = get_current_worker()
        faults.point("tui_search")

        def heard(update: SearchUpdate) -> None:
            if worker.is_cancelled or not self.typing.is_current(generation):
                return
            hits = list(update.hits)
            self._load_details(hits)   # shown with their session's title
            self.post_message(self.Searched(Found(query, hits, update.searched, update.total, update.complete,
                                                  update.cut_note), generation))

        try:
            hits = self.service.search(query, all_workspaces=self.all_workspaces, key=self.key,
                                       should_stop=lambda: worker.is_cancelled, on_update=heard)
            self._load_details(hits)
        except RepriseError as exc:
            self.app.call_from_thread(self._show_error, str(exc), generation)
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._searched, query, hits, generation)

    def _load_details(self, hits: list[SearchHit]) -> None:
        """The listing fields of the hits' rows that have none yet: a first search on a cold cache
        reads them with its hits, and never waits for the catalog a cold listing holds."""
        missing = [hit.row for hit in hits if hit.row.details is None]
        if missing:
            self.service.load_details(missing)

    def _show_error(self, message: str, generation: int) -> None:
        if self.typing.is_current(generation):
            self.query_one("#search-status", Label).update(Text(safe_line(message), style="red"))

    @on(Searched)
    def on_searched(self, message: Searched) -> None:
        """The hits so far, listed at once (never a blank dialog), with how far the search is."""
        found = message.found
        if not self.typing.is_current(message.generation):
            return
        self._take_hits(found.query, found.hits)
        counted = f"{sessions_phrase(found.hits)} for {safe_line(found.query)}"
        if found.complete:
            self.searching = counted + (" (first 200)" if len(found.hits) >= 200 else "")
            self.note = safe_line(found.note) if found.note else ""
        else:
            self.searching = f"{counted} so far · {progress_phrase(Progress('searching', found.searched, found.total))}"
        self._show_status()

    def _searched(self, query: str, hits: list[SearchHit], generation: int) -> None:
        """The search is done: its final hits, then the sessions it met unindexed are indexed."""
        if not self.typing.is_current(generation):
            return
        self._take_hits(query, hits)
        if not self.index_started:
            self.index_started = True
            self._index_in_background()

    def on_mount(self) -> None:
        if isinstance(self.app, IndexesInBackground):
            self.indexing = self.app.index_status   # a build a search before this dialog started
            self._show_status()

    def _index_in_background(self) -> None:
        """The sessions this search met unindexed, indexed by the app (it goes on once this closes)."""
        if isinstance(self.app, IndexesInBackground):
            self.app.index_in_background(all_workspaces=self.all_workspaces, key=self.key)

    @on(IndexStatus)
    def on_index_status(self, message: IndexStatus) -> None:
        self.indexing = message.text
        self._show_status()

    def _show_status(self) -> None:
        """How far the search and the indexing are on one line (wrapped where the width is short),
        then the search's note on its own."""
        status = " · ".join(part for part in (self.searching, self.indexing) if part)
        self.query_one("#search-status", Label).update(Text(status + (f"\n{self.note}" if self.note else "")))

    def _list_hits(self, keep: str | None = None) -> None:
        """A heading per session, its best hits, and "… N more" (Enter lists them all)."""
        width = self.results.scrollable_content_region.width - 2 or 100   # one line per hit: no wrapping
        now = self.service.clock()
        index = {id(hit): number for number, hit in enumerate(self.hits)}
        options: list[Option] = []
        for group in grouped(self.hits):
            path = group.row.path
            options.append(Option(group_heading(group, width, now), disabled=True))
            shown = group.hits if path in self.expanded else group.hits[:HITS_PER_SESSION]
            options += [Option(hit_text(hit, width), id=str(index[id(hit)])) for hit in shown]
            if len(shown) < len(group.hits):
                options.append(Option(Text(f"  … {len(group.hits) - len(shown)} more in this session",
                                           style="italic"), id=f"more:{path}"))
        self.choice_list.set_options(options, keep)
