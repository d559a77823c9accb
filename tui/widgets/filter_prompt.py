"""The filter, and the picker's one-line prompt: an input whose arrow keys, ctrl+n/ctrl+p and
ctrl+j/ctrl+k move the session list (fzf's habit) instead of doing nothing, so the hands stay on
the prompt; in the picker Home/End go to the first and last session too (ctrl+a still moves in
the text; ctrl+e shows the preview, as on the browse screen). It posts `Move`; the screen moves the
list. On the browse screen the list keeps the focus and the screen types into the filter."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input


class FilterPrompt(Input):
    DEFAULT_CSS = """
    FilterPrompt, FilterPrompt:focus {
        border: none;
        padding: 0 1;
        background: $boost;
    }
    """
    BINDINGS = [
        Binding("enter", "submit", "Done"),
        Binding("down,ctrl+n,ctrl+j", "move(1)", "Next", show=False),
        Binding("up,ctrl+p,ctrl+k", "move(-1)", "Previous", show=False),
        Binding("pagedown", "move_page(1)", "Page down", show=False),
        Binding("pageup", "move_page(-1)", "Page up", show=False),
    ]

    @dataclass
    class Move(Message):
        rows: int = 0
        pages: int = 0
        ends: int = 0   # -1 the first row, 1 the last

    def action_move(self, rows: int) -> None:
        self.post_message(self.Move(rows=rows))

    def action_move_page(self, pages: int) -> None:
        self.post_message(self.Move(pages=pages))


class PickPrompt(FilterPrompt):
    """The picker's prompt: one line, and Enter picks."""

    BINDINGS = [
        Binding("enter", "submit", "Pick"),
        Binding("home", "move_end(-1)", "First", show=False),   # letters are the filter's: Home/End move the list
        Binding("end", "move_end(1)", "Last", show=False),
    ]

    def action_move_end(self, direction: int) -> None:
        self.post_message(self.Move(ends=direction))
