"""The session list: a virtual list that renders only the rows on screen, so ten thousand
sessions paint as fast as ten. Rows come in as attributes; the list posts `Highlighted` and
`Selected` messages up."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from reprise.core.rows import SessionRow
from reprise.core.service import activity_time

from ..format import human_size, relative_time
from ..text import clipped

STATUS_MARKS = {
    "succeeded": ("✓", "success"),
    "failed": ("✗", "error"),
    "interrupted": ("‖", "warning"),
    "max_iterations": ("↻", "warning"),
    "pending": ("…", "accent"),
    None: ("·", "muted"),
}


@dataclass(frozen=True, slots=True)
class Column:
    key: str
    title: str
    width: int
    align: str = "right"


COLUMNS = (
    Column("updated", "ACTIVE", 9),
    Column("turns", "TURNS", 5),
    Column("size", "SIZE", 8),
    Column("cost", "COST", 8),
)
MARKS_WIDTH = 4
AGENT_MARKS = {"fractal": "F", "claude": "C", "codex": "X"}   # the agent column, shown when the list mixes agents


def marks_width(show_agent: bool) -> int:
    return MARKS_WIDTH + (1 if show_agent else 0)


def header_text(width: int, sort: str, show_agent: bool = False) -> str:
    """The column titles for a list of this width, the sorted one marked."""
    marks = marks_width(show_agent)
    title_width = max(width - marks - sum(c.width + 1 for c in COLUMNS), 8)
    cells = [(" " * (marks - 2) + "A " if show_agent else " " * marks) + "TITLE".ljust(title_width)]
    for column in COLUMNS:
        label = column.title + ("▼" if column.key == sort else "")
        cells.append(label.rjust(column.width))
    return " ".join(cells)


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
    """
    COMPONENT_CLASSES = {"session-list--cursor", "session-list--problem", "session-list--muted"}
    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
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

    def __init__(self, *, clock: Callable[[], float] = time.time, **kwargs):
        super().__init__(**kwargs)
        self.rows: list[SessionRow] = []
        self.cursor = 0
        self.clock = clock
        self._now = clock()
        self._highlighted_path: str | None = None
        self.show_agent = False   # a mark for each row's agent, when the list mixes agents

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
        title_width = max(width - marks_width(self.show_agent) - sum(c.width + 1 for c in COLUMNS), 8)
        status = "pending" if row.fields.pending else row.fields.last_status
        mark, variable = STATUS_MARKS.get(status, STATUS_MARKS[None])
        if row.problem_code:
            mark, variable = "!", "error"
        mark_style = base + Style(color=self.app.theme_variables.get(variable, "white"), bold=True)
        pin = "★" if row.pinned else " "
        title_style = base + (self.get_component_rich_style("session-list--problem") if row.problem_code else Style())
        figures = [
            relative_time(self._now - activity_time(row)),
            str(row.turns) if not row.problem_code else "-",
            human_size(row.size),
            f"{row.resume_cost:,}" if row.resume_cost is not None else "…" if not row.problem_code else "-",
        ]
        segments = [Segment(f" {pin}", base), Segment(mark, mark_style)]
        if self.show_agent:
            # A session the agent's own picker hides (`claude -p`) is marked in lower case, muted; one
            # the agent deletes within the week (Claude Code's age sweep) in the warning colour.
            agent = AGENT_MARKS.get(row.source, "?")
            agent_style = base + self.get_component_rich_style("session-list--muted") if row.hidden_by_agent else base
            if row.agent_deletion is not None and row.agent_deletion.at_risk:
                agent_style = base + Style(color=self.app.theme_variables.get("warning", "yellow"), bold=True)
            segments.append(Segment(agent.lower() if row.hidden_by_agent else agent, agent_style))
        segments.append(Segment(" ", base))
        segments.append(Segment(clipped(row.display_title, title_width).ljust(title_width), title_style))
        for column, figure in zip(COLUMNS, figures, strict=True):
            segments.append(Segment(" " + figure[: column.width].rjust(column.width), base))
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

    def on_click(self, event) -> None:
        index = event.y + int(self.scroll_offset.y)
        if 0 <= index < len(self.rows):
            if index == self.cursor and event.chain >= 2:
                self.action_select()
            self.move_to(index)
