"""The conversation's view follows its end through later layouts until the reader scrolls up
(tui/widgets/end_view.py)."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from reprise.tui.widgets.end_view import EndView

from .conftest import until


class Viewer(App):
    def compose(self) -> ComposeResult:
        with EndView():
            yield Static("\n".join(f"line {n}" for n in range(5)), id="text")


def text(lines: int) -> str:
    return "\n".join(f"line {n}" for n in range(lines))


async def opened_at_end(app: Viewer, pilot) -> EndView:
    """The view over a text taller than it, sent to its end."""
    view = app.query_one(EndView)
    app.query_one("#text", Static).update(text(100))
    view.follow_end()
    await until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
    return view


async def test_the_view_follows_its_end_when_the_text_grows_after_it_was_sent_there():
    app = Viewer()
    async with app.run_test(size=(40, 10)) as pilot:
        view = app.query_one(EndView)
        view.follow_end()   # the text still fits: nothing to scroll
        await pilot.pause()
        assert view.scroll_y == 0
        app.query_one("#text", Static).update(text(100))   # laid out only after the scroll was asked for
        await until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
        app.query_one("#text", Static).update(text(200))
        await until(pilot, lambda: view.max_scroll_y > 150 and view.scroll_y == view.max_scroll_y)


async def test_a_text_shorter_than_the_view_starts_at_its_top():
    app = Viewer()
    async with app.run_test(size=(40, 10)) as pilot:
        view = await opened_at_end(app, pilot)
        app.query_one("#text", Static).update(text(3))
        await until(pilot, lambda: view.max_scroll_y == 0)
        assert view.scroll_y == 0 and view.following
        assert app.query_one("#text", Static).region.y == 0   # no blank rows above it


async def test_once_the_reader_scrolls_up_the_view_stays_where_they_put_it():
    app = Viewer()
    async with app.run_test(size=(40, 10)) as pilot:
        view = await opened_at_end(app, pilot)
        view.scroll_to(y=view.scroll_y - 5, animate=False)
        await until(pilot, lambda: not view.following)
        place = view.scroll_y
        app.query_one("#text", Static).update(text(200))
        await until(pilot, lambda: view.max_scroll_y > 150)
        await pilot.pause()
        assert view.scroll_y == place
