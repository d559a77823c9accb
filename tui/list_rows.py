"""The session list's lines as plain text with style names: its column titles and each row as
the TUI's list draws them. The list widget maps the names to its styles; the first frame, written
before Textual is imported (`first_frame.py`), maps them to the terminal's colours. No Textual here."""

from __future__ import annotations

from functools import lru_cache

from reprise.core.rows import SessionRow
from reprise.core.service import sort_key

from .columns import Layout, agent_mark, cell, layout, title_label
from .legend import PIN_MARK

# A row's status mark and the theme variable it is drawn in.
STATUS_MARKS = {
    "succeeded": ("✓", "success"),
    "failed": ("✗", "error"),
    "interrupted": ("‖", "warning"),
    "max_iterations": ("↻", "warning"),
    "pending": ("…", "accent"),
    None: ("·", "muted"),
}
MARKS_WIDTH = 4   # " ", the pin, the status mark, " "
NARROW_COLUMNS = 100   # the main screen below this: the preview goes under the list (or waits), titles get the width
LIST_COLUMNS = ("folder", "branch", "updated", "turns", "size", "context", "next")

# The style names of a row's parts (`row_parts`): "" (the row's own style), "problem" (the title
# of a row that cannot be read), "muted" or "warn" (the agent's letter, as below), a cell's own
# ("warn", "over", "muted": `columns.cell`), and MARK + the theme variable a status mark is drawn in.
MARK = "mark:"


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


def status_mark(row: SessionRow) -> tuple[str, str]:
    """The row's status mark and the theme variable it is drawn in ("!" in the error colour for a
    row that cannot be read)."""
    if row.problem_code:
        return "!", "error"
    status = "pending" if row.fields.pending else row.fields.last_status
    return STATUS_MARKS.get(status, STATUS_MARKS[None])


def row_parts(row: SessionRow, shape: Layout, now: float, show_agent: bool) -> list[tuple[str, str]]:
    """The row's line as (text, style name) parts: the pin, the status mark, the agent's letter
    when the list mixes agents (a session the agent's own picker hides in lower case, muted; one
    the agent deletes within the week in the warning colour), the title, then each column's cell."""
    mark, variable = status_mark(row)
    parts = [(f" {PIN_MARK if row.pinned else ' '}", ""), (mark, MARK + variable)]
    if show_agent:
        style = "muted" if row.hidden_by_agent else ""
        if row.agent_deletion is not None and row.agent_deletion.at_risk:
            style = "warn"
        parts.append((agent_mark(row), style))
    parts.append((" ", ""))
    parts.append((title_label(row.display_title, shape.title_width), "problem" if row.problem_code else ""))
    if shape.gap:
        parts.append((" " * shape.gap, ""))
    for column, narrow in shape.columns:
        size = column.width(narrow)
        text, look = cell(column.key, row, narrow, now, size)
        parts.append((" ", ""))
        parts.append((text.ljust(size) if column.align == "left" else text.rjust(size), look or ""))
    return parts
