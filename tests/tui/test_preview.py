"""The preview as a person reads it: the conversation opens at the newest turn, `v` shows the raw
text the meter counts, `I` the ids, and a search lands with the match at the top, highlighted."""

from __future__ import annotations

from textual.widgets import Static

from reprise.tui.screens.main import MainScreen
from reprise.tui.screens.search import SearchScreen
from reprise.tui.widgets.detail import DetailPane
from reprise.tui.widgets.session_list import SessionList

from .conftest import build_app, settle

WORD = "quixotic"


def select(app, turns: int) -> None:
    session_list = app.screen.query_one(SessionList)
    session_list.move_to(next(i for i, row in enumerate(session_list.rows) if row.turns == turns))


def put_word_in_turn_30(service):
    ref = next(r.ref for r in service.list_sessions().rows if r.turns == 60)
    loaded = service.sources["fractal"].store.load(ref)
    loaded.state.turns[29].agent.response += "\nline two\nline three\nline four\nline five\n" \
                                             "The quixotic flux was recalibrated."
    service.sources["fractal"].store.save(ref, loaded.state, expected=loaded.version)
    return ref


async def test_search_lands_with_the_matching_line_at_the_top_of_the_conversation_and_highlighted(service):
    ref = put_word_in_turn_30(service)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*WORD, "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.query_one(SessionList).current.file_id == ref.session_id
        landed = app.screen.query_one("#conversation-from", Static)
        text = landed.content
        assert text.plain.startswith("The quixotic flux was recalibrated.")   # its line is cut apart
        match = text.plain.index(WORD)
        styles = [span for span in text.spans if span.start <= match and span.end >= match + len(WORD)]
        assert any(app.screen.query_one(DetailPane).roles()["match"] == span.style for span in styles)
        scroll = app.screen.query_one("#conversation")
        assert scroll.scroll_y > 0 and landed.region.y == scroll.content_region.y   # at the top of the view
