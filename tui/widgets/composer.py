"""The composer: the next message. Enter inserts a newline, ctrl+s sends, Esc goes back to
the list. It only posts messages; the screen decides what sending means."""

from __future__ import annotations

from textual.binding import Binding
from textual.message import Message
from textual.widgets import TextArea


class Composer(TextArea):
    DEFAULT_CSS = """
    Composer {
        height: 5;
        border: tall $panel;
    }
    Composer:focus {
        border: tall $accent;
    }
    """
    BINDINGS = [
        Binding("ctrl+s", "send", "Send", priority=True),
        Binding("escape", "leave", "Back to list", priority=True),
    ]

    class SendRequested(Message):
        def __init__(self, text: str):
            super().__init__()
            self.text = text

    class Left(Message):
        pass

    def __init__(self, **kwargs):
        super().__init__("", soft_wrap=True, show_line_numbers=False, tab_behavior="focus", **kwargs)
        self.border_title = "Message (ctrl+s send, Esc back)"

    def action_send(self) -> None:
        self.post_message(self.SendRequested(self.text))

    def action_leave(self) -> None:
        self.post_message(self.Left())
