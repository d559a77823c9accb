"""The session list: a virtual list that renders only the rows on screen, so ten thousand
sessions paint as fast as ten. Rows come in as attributes; the list posts `Highlighted` and
`Selected` messages up."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from reprise.core.rows import SessionRow

from ..columns import Layout
from ..list_rows import MARK, header_text, list_layout, row_parts

# The component class of each style name of `row_parts` but a status mark's.
PART_STYLES = {"problem": "session-list--problem", "warn": "session-list--warn", "over": "session-list--over",
               "muted": "session-list--muted"}


class SessionList(ScrollView, can_focus=True):
    """Rows of sessions with a cursor; only visible lines are rendered."""

    DEFAULT_CSS = """
    SessionList {
        background: $surface;
        scrollbar-gutter: stable;
    }
    SessionList > .session-list--cursor {
        background: $primary 40%;
        text-style: bold;
    }
    SessionList:focus > .session-list--cursor {
        background: $primary;
        color: $text;
    }
    SessionList > .session-list--problem {
        color: $error;
    }
    SessionList > .session-list--muted {
        color: $text-muted;
    }
    SessionList > .session-list--warn {
        color: $warning;
        text-style: bold;
    }
    SessionList > .session-list--over {
        color: $error;
        text-style: bold;
    }
    """
    COMPONENT_CLASSES = {"session-list--cursor", "session-list--problem", "session-list--muted",
                         "session-list--warn", "session-list--over"}
    BINDINGS = [
        # no letters: what is typed on the list goes to the filter; ctrl+p moves up, as in fzf
        Binding("up,ctrl+p", "cursor(-1)", "Up", show=False),
        Binding("down,ctrl+n", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(-1)", "Last", show=False),
    ]

    class Highlighted(Message):
        def __init__(self, row: SessionRow | None):
            super().__init__()
            self.row = row

    class Selected(Message):
        def __init__(self, row: SessionRow):
            super().__init__()
            self.row = row

    def __init__(self, *, clock: Callable[[], float] = time.time, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.rows: list[SessionRow] = []
        self.cursor = 0
        self.clock = clock
        self._now = clock()
        self._highlighted_path: str | None = None

    show_agent = reactive(False)    # a mark for each row's agent, when the list mixes agents
    show_folder = reactive(False)   # a folder column, when the list spans several folders
    sort = reactive("updated")      # the sorted column, marked in the header
    reverse = reactive(False)       # smallest or oldest first

    def layout_for(self, width: int) -> Layout:
        return list_layout(width, self.sort, reverse=self.reverse, show_agent=self.show_agent,
                           show_folder=self.show_folder)

    def header(self) -> str:
        """The column titles of this list as wide as it is now."""
        return header_text(max(self.content_width, 20) if self.is_mounted else 60, self.sort,
                           self.show_agent, reverse=self.reverse, show_folder=self.show_folder)

    # --- attributes down -------------------------------------------------------------------

    def set_rows(self, rows: list[SessionRow], *, keep: str | None = None) -> None:
        """Show these rows, keeping the cursor on the same session (by path) when it is still there."""
        wanted = keep if keep is not None else self.current_path
        self.rows = rows
        self._now = self.clock()
        index = self.cursor  # a row that left the list leaves the cursor where it was
        if wanted is not None:
            for position, row in enumerate(rows):
                if row.path == wanted:
                    index = position
                    break
        self.cursor = min(index, max(len(rows) - 1, 0))
        self.virtual_size = Size(self.content_width, len(rows))
        self._scroll_cursor_into_view()
        self.refresh()
        self._announce()

    @property
    def current(self) -> SessionRow | None:
        return self.rows[self.cursor] if 0 <= self.cursor < len(self.rows) else None

    @property
    def current_path(self) -> str | None:
        row = self.current
        return row.path if row else None

    # --- rendering -------------------------------------------------------------------------

    @property
    def content_width(self) -> int:
        """Columns left for text once the scrollbar gutter is taken."""
        return self.scrollable_content_region.width

    def on_resize(self) -> None:
        self.virtual_size = Size(self.content_width, len(self.rows))

    def render_line(self, y: int) -> Strip:
        index = y + int(self.scroll_offset.y)
        width = self.content_width
        if index >= len(self.rows):
            return Strip.blank(width, self.rich_style)
        row = self.rows[index]
        base = self.rich_style
        if index == self.cursor:
            base = base + self.get_component_rich_style("session-list--cursor")
        segments = self._cells(row, width, base)
        return Strip(segments).adjust_cell_length(width, base).crop(0, width)

    def _cells(self, row: SessionRow, width: int, base: Style) -> list[Segment]:
        segments = []
        for text, name in row_parts(row, self.layout_for(width), self._now, self.show_agent):
            if not name:
                style = base
            elif name.startswith(MARK):
                style = base + Style(color=self.app.theme_variables.get(name.removeprefix(MARK), "white"), bold=True)
            else:   # the part's colour and weight; the row's background kept (the cursor's, on its row)
                part = self.get_component_rich_style(PART_STYLES[name])
                style = base + Style(color=part.color, bold=part.bold)
            segments.append(Segment(text, style))
        return segments

    # --- cursor ----------------------------------------------------------------------------

    def _scroll_cursor_into_view(self) -> None:
        height = max(self.size.height, 1)
        top = int(self.scroll_offset.y)
        if self.cursor < top:
            self.scroll_to(y=self.cursor, animate=False, immediate=True)
        elif self.cursor >= top + height:
            self.scroll_to(y=self.cursor - height + 1, animate=False, immediate=True)

    def move_to(self, index: int) -> None:
        if not self.rows:
            return
        self.cursor = max(0, min(index, len(self.rows) - 1))
        self._scroll_cursor_into_view()
        self.refresh()
        self._announce()

    def _announce(self) -> None:
        path = self.current_path
        if path != self._highlighted_path:
            self._highlighted_path = path
            self.post_message(self.Highlighted(self.current))

    def action_cursor(self, delta: int) -> None:
        self.move_to(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        self.move_to(self.cursor + direction * max(self.size.height - 1, 1))

    def action_jump(self, index: int) -> None:
        self.move_to(index if index >= 0 else len(self.rows) - 1)

    def action_select(self) -> None:
        row = self.current
        if row is not None:
            self.post_message(self.Selected(row))

    def on_click(self, event: events.Click) -> None:
        index = event.y + int(self.scroll_offset.y)
        if 0 <= index < len(self.rows):
            if index == self.cursor and event.chain >= 2:
                self.action_select()
            self.move_to(index)
