"""The composer: the next message. Folded away until Tab opens it (the main screen keeps it open
while it holds a draft): five rows while it has focus, one line with the draft after.
Enter inserts a newline, ctrl+s sends, Esc goes back to the list. It only posts messages; the
screen decides what sending means."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea

PLACEHOLDER = "Your message to this session"


class Composer(TextArea):
    DEFAULT_CSS = """
    Composer {
        height: 1;
        border: none;
        padding: 0 1;
        background: $panel;
    }
    Composer:focus {
        height: 5;
        border: tall $accent;
        padding: 0;
    }
    """
    BINDINGS = [
        Binding("ctrl+s", "send", "Send", priority=True),
        Binding("escape", "leave", "Back to list", priority=True, key_display="Esc"),
    ]

    @dataclass
    class SendRequested(Message):
        text: str

    @dataclass
    class Left(Message):
        pass

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", soft_wrap=True, show_line_numbers=False, tab_behavior="focus",
                         placeholder=PLACEHOLDER, **kwargs)
        self.border_title = "Message (ctrl+s send, Esc back)"

    def action_send(self) -> None:
        self.post_message(self.SendRequested(self.text))

    def action_leave(self) -> None:
        self.post_message(self.Left())
