"""Small modal dialogs: confirm, ask for a line of text, choose a workspace. Each dismisses
with its answer; none calls the service."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from ..text import clipped, safe_line, safe_text

DIALOG_CSS = """
{name} {{
    align: center middle;
    background: $background 60%;
}}
{name} > Vertical {{
    width: 72;
    max-width: 95%;
    height: auto;
    max-height: 90%;
    border: thick $primary;
    background: $surface;
    padding: 1 2;
}}
{name} .dialog-buttons {{
    height: auto;
    margin-top: 1;
    align-horizontal: right;
}}
{name} Button {{
    margin-left: 1;
}}
"""


class ConfirmDialog(ModalScreen[bool]):
    DEFAULT_CSS = DIALOG_CSS.format(name="ConfirmDialog")
    BINDINGS = [Binding("escape", "answer(False)", "Cancel"), Binding("y", "answer(True)", "Yes", show=False)]

    def __init__(self, question: str, *, yes: str = "Yes", danger: bool = False):
        super().__init__()
        self.question = question
        self.yes = yes
        self.danger = danger

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text(safe_text(self.question)), classes="question")
            with Horizontal(classes="dialog-buttons"):
                yield Button("Cancel", id="no")
                yield Button(self.yes, id="yes", variant="error" if self.danger else "primary")

    def on_mount(self) -> None:
        self.query_one("#no" if self.danger else "#yes", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class TextDialog(ModalScreen[str | None]):
    """One line of text; Enter accepts (an empty line too), Esc cancels (None).

    A value holding hidden characters (bidi controls, zero-width, escapes) is offered escaped, as
    it is shown everywhere else: Enter saves what the field shows, never characters it hides."""

    DEFAULT_CSS = DIALOG_CSS.format(name="TextDialog")
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, prompt: str, value: str = "", placeholder: str = ""):
        super().__init__()
        self.prompt = prompt
        self.value = safe_line(value)
        self.placeholder = placeholder
        self.escaped = self.value != value

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(safe_text(self.prompt)))
            if self.escaped:
                yield Static(Text("It holds hidden characters, shown escaped; Enter saves the text as shown.",
                                  style="yellow"))
            yield Input(self.value, placeholder=self.placeholder, id="text-input")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoiceDialog(ModalScreen[str | None]):
    """Pick one of several labelled values (workspaces, archive entries, trash entries)."""

    DEFAULT_CSS = DIALOG_CSS.format(name="ChoiceDialog") + """
    ChoiceDialog OptionList { height: auto; max-height: 24; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]], empty: str = "Nothing to choose from."):
        super().__init__()
        self.title_text = title
        self.choices = choices
        self.empty = empty

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(safe_line(self.title_text), style="bold"))
            if self.choices:
                yield OptionList(*[Option(Text(clipped(label, 200)), id=value) for value, label in self.choices])
            else:
                yield Static(Text(self.empty, style="dim"))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ReportScreen(ModalScreen[None]):
    """A read-only report (doctor problems, audit log) in a scrollable box."""

    DEFAULT_CSS = DIALOG_CSS.format(name="ReportScreen") + """
    ReportScreen > Vertical { width: 110; }
    ReportScreen #report-body { height: auto; max-height: 30; overflow-y: auto; }
    """
    BINDINGS = [Binding("escape,q", "close", "Close")]

    def __init__(self, title: str, body: Text):
        super().__init__()
        self.title_text = title
        self.body = body

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(safe_line(self.title_text), style="bold"))
            yield Static(self.body, id="report-body")

    def action_close(self) -> None:
        self.dismiss(None)
