"""The search dialog is never blank while a search runs: it says what it searches for at once, lists
the hits as they are found with how far the search is ("searching 1/10 sessions"), then shows the
background indexing ("indexing 3/10 sessions") until it is done. The service is driven step by step
by the test (each step waits for an event the test sets), never by time."""

from __future__ import annotations

import threading
from collections.abc import Callable

from reprise.core.progress import Progress
from reprise.core.search_build import BuildResult
from reprise.core.search_engine import SearchUpdate
from reprise.core.search_index import SearchHit
from reprise.core.service import Service
from reprise.tui.screens.search import SearchScreen

from .conftest import build_app, settle, until

GUARD_S = 30.0   # an event never set is a deadlock in the test, not a slow machine


class Stepped:
    """The service's search and indexing, each update held until the test lets it go."""

    def __init__(self, service: Service) -> None:
        self.search_for = service.search
        self.first, self.rest, self.indexed = threading.Event(), threading.Event(), threading.Event()
        self.index_started = threading.Event()
        service.search = self.search   # type: ignore[method-assign]
        service.build_index = self.build_index   # type: ignore[method-assign]

    def search(self, query: str, *, on_update: Callable[[SearchUpdate], object] | None = None,
               **options: object) -> list[SearchHit]:
        hits = self.search_for(query, **options)   # type: ignore[arg-type]
        assert on_update is not None and len(hits) > 1
        assert self.first.wait(GUARD_S)
        on_update(SearchUpdate(query, hits[:2], searched=1, total=10))
        assert self.rest.wait(GUARD_S)
        on_update(SearchUpdate(query, hits, searched=10, total=10, complete=True))
        return hits

    def build_index(self, *, progress: Callable[[Progress], object], should_stop: Callable[[], bool],
                    **options: object) -> BuildResult:
        progress(Progress("indexing", 3, 10))
        self.index_started.set()
        assert self.indexed.wait(GUARD_S)
        if should_stop():   # cancelled between two batches, as the catalog's build stops
            return BuildResult(added=3, total=10, stopped=True)
        progress(Progress("indexing", 10, 10))
        return BuildResult(added=10, total=10)


def status(app) -> str:
    return str(app.screen.query_one("#search-status").render())


async def search_for_jitter(pilot) -> None:
    """The main screen settled, the search dialog opened and "jitter" searched at once."""
    await settle(pilot)
    await pilot.press("ctrl+f")
    await pilot.pause()
    await pilot.press(*"jitter", "enter")


def listed(app) -> int:
    return sum(1 for option in app.screen.results.options if option.id and option.id.isdigit())


async def test_the_dialog_shows_hits_as_they_come_and_how_far_the_search_and_the_indexing_are(service):
    stepped = Stepped(service)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"jitter", "enter")
        await until(pilot, lambda: "Searching for jitter…" in status(app))   # at once: never a blank dialog
        assert listed(app) == 0
        stepped.first.set()
        await until(pilot, lambda: "searching 1/10 sessions" in status(app))
        assert "2 matching turns in 2 sessions for jitter so far" in status(app)
        assert listed(app) == 2 and app.screen.hits[0].field == "response"
        stepped.rest.set()
        await until(pilot, lambda: "searching" not in status(app) and len(app.screen.hits) == 8)
        assert "8 matching turns in 2 sessions for jitter" in status(app)
        await until(pilot, lambda: "indexing 3/10 sessions" in status(app))
        assert stepped.index_started.is_set() and len(app.screen.hits) == 8   # the hits stay while it indexes
        assert listed(app) == 4   # a session's first three hits and "… N more"
        stepped.indexed.set()
        await until(pilot, lambda: "indexed 10 of 10 sessions" in status(app))
        await settle(pilot)


async def test_more_hits_of_the_same_search_keep_the_highlight_where_it_is(service):
    stepped = Stepped(service)
    stepped.indexed.set()
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await search_for_jitter(pilot)
        stepped.first.set()
        await until(pilot, lambda: listed(app) == 2)
        await pilot.press("down")
        highlighted = app.screen.results.highlighted_option
        assert highlighted is not None and highlighted.id == "1"
        stepped.rest.set()
        await until(pilot, lambda: len(app.screen.hits) == 8)
        highlighted = app.screen.results.highlighted_option
        assert highlighted is not None and highlighted.id == "1"
        await settle(pilot)


async def test_the_indexing_goes_on_after_the_dialog_closes_and_a_new_dialog_shows_it(service):
    stepped = Stepped(service)
    stepped.first.set()
    stepped.rest.set()
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await search_for_jitter(pilot)
        await until(pilot, lambda: "indexing 3/10 sessions" in status(app))
        await pilot.press("escape", "escape")   # the first clears the query, the second closes
        await until(pilot, lambda: not isinstance(app.screen, SearchScreen))
        stepped.indexed.set()   # the build was not cancelled by the close: it finishes
        await until(pilot, lambda: app.index_status == "indexed 10 of 10 sessions")
        await pilot.press("ctrl+f")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen))
        assert "indexed 10 of 10 sessions" in status(app)
        await settle(pilot)


async def test_a_search_while_the_cold_listing_runs_shows_how_far_it_is_and_its_hits(service, monkeypatch):
    """On a cold cache the main screen's first listing holds the catalog; a search started meanwhile
    scans the files without it: its progress and its hits are shown before the listing ends."""
    from reprise.core import catalog as catalog_module

    monkeypatch.setattr(catalog_module, "COLD_FILES", 1)   # the demo store holds a few files
    holding, release = threading.Event(), threading.Event()
    listing = service.list_sessions

    def held_listing(**options: object):
        with service.catalog._lock:   # as a cold listing holds it while it reads every file
            holding.set()
            release.wait(4 * GUARD_S)
            holding.clear()
        return listing(**options)   # type: ignore[arg-type]

    service.list_sessions = held_listing   # type: ignore[method-assign]
    heard: list[SearchScreen.Searched] = []
    app = build_app(service)
    async with app.run_test(size=(120, 40), message_hook=lambda message: heard.append(message)
                            if isinstance(message, SearchScreen.Searched) else None) as pilot:
        await until(pilot, holding.is_set)
        await pilot.press("ctrl+f")
        await until(pilot, lambda: isinstance(app.screen, SearchScreen))
        await pilot.press(*"jitter", "enter")
        await until(pilot, lambda: bool(heard) and heard[-1].found.complete)
        assert holding.is_set()   # the listing still holds the catalog
        found = heard[-1].found
        assert found.hits and found.searched == found.total > 1
        assert any(not message.found.complete and message.found.searched < found.total for message in heard)
        await until(pilot, lambda: f"{len(found.hits)} matching turn" in status(app) and listed(app) > 0)
        assert all(hit.row.details is not None for hit in found.hits)   # its sessions' titles, read with them
        release.set()
        await settle(pilot)
