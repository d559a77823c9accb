"""The session list: a virtual list that renders only the rows on screen, so ten thousand
sessions paint as fast as ten. Rows come in as attributes; the list posts `Highlighted` and
`Selected` messages up."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import lru_cache
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
from reprise.core.service import sort_key

from ..columns import Layout, agent_mark, cell, layout, title_label

STATUS_MARKS = {
    "succeeded": ("✓", "success"),
    "failed": ("✗", "error"),
    "interrupted": ("‖", "warning"),
    "max_iterations": ("↻", "warning"),
    "pending": ("…", "accent"),
    None: ("·", "muted"),
}


MARKS_WIDTH = 4   # " ", the pin, the status mark, " "
LIST_COLUMNS = ("folder", "branch", "updated", "turns", "size", "context", "next")
NEXT_STYLES = {"warn": "session-list--warn", "over": "session-list--over", "muted": "session-list--muted"}


def marks_width(show_agent: bool) -> int:
    return MARKS_WIDTH + (1 if show_agent else 0)


@lru_cache(maxsize=64)
def list_layout(width: int, sort: str, *, reverse: bool = False, show_agent: bool = False,
                show_folder: bool = False) -> Layout:
    """The columns a list this wide shows (a folder column when the list spans several folders)."""
    wanted = LIST_COLUMNS if show_folder else tuple(key for key in LIST_COLUMNS if key != "folder")
    return layout(width, sort=sort_key(sort), reverse=reverse, fixed=marks_width(show_agent), wanted=wanted)


def header_text(width: int, sort: str, show_agent: bool = False, *, reverse: bool = False,
                show_folder: bool = False) -> str:
    """The column titles for a list of this width, the sorted one marked."""
    shape = list_layout(width, sort, reverse=reverse, show_agent=show_agent, show_folder=show_folder)
    marks = marks_width(show_agent)
    lead = " " * (marks - 2) + "A " if show_agent else " " * marks
    return " ".join([lead + shape.title_cell("TITLE".ljust(shape.title_width)), *shape.header()])


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
        shape = self.layout_for(width)
        status = "pending" if row.fields.pending else row.fields.last_status
        mark, variable = STATUS_MARKS.get(status, STATUS_MARKS[None])
        if row.problem_code:
            mark, variable = "!", "error"
        mark_style = base + Style(color=self.app.theme_variables.get(variable, "white"), bold=True)
        pin = "★" if row.pinned else " "
        title_style = base + (self.get_component_rich_style("session-list--problem") if row.problem_code else Style())
        segments = [Segment(f" {pin}", base), Segment(mark, mark_style)]
        if self.show_agent:
            # A session the agent's own picker hides (`claude -p`) is marked in lower case, muted; one
            # the agent deletes within the week (Claude Code's age sweep) in the warning colour.
            agent_style = base + self.get_component_rich_style("session-list--muted") if row.hidden_by_agent else base
            if row.agent_deletion is not None and row.agent_deletion.at_risk:
                agent_style = base + self.get_component_rich_style("session-list--warn")
            segments.append(Segment(agent_mark(row), agent_style))
        segments.append(Segment(" ", base))
        segments.append(Segment(title_label(row.display_title, shape.title_width), title_style))
        if shape.gap:
            segments.append(Segment(" " * shape.gap, base))
        for column, narrow in shape.columns:
            size = column.width(narrow)
            text, style = cell(column.key, row, narrow, self._now, size)
            text = text.ljust(size) if column.align == "left" else text.rjust(size)
            segments.append(Segment(" ", base))
            segments.append(Segment(text, base + self.get_component_rich_style(NEXT_STYLES[style]) if style else base))
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
