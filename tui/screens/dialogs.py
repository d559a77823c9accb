"""The modal dialogs and the frame they share: confirm, ask for a line of text, choose one of
several, show a report, show a command to run. Each dismisses with its answer; none calls the
service.

`Dialog` is the one frame: its title in the border, a body that scrolls when it is taller than the
terminal, and the choices row (the buttons, and the keys that choose them, "Enter Apply · Esc
Cancel") docked at the bottom so that it is always in view, down to 80x24.

One way to confirm: every dialog that changes something confirms with Enter and cancels with Esc,
and says so on its choices row (the buttons take no focus, so Enter never presses a Cancel
button). A key that arrives within `ANSWER_GUARD_SECONDS` of the dialog opening is not an answer:
keys typed ahead of a dialog never confirm it. The dialog reads the app's `monotonic` clock, which
the tests replace."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, TypeVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from ..text import clipped, one_line, safe_line, safe_text

ResultT = TypeVar("ResultT")

KEY_NAMES = {"enter": "Enter", "escape": "Esc"}
ANSWER_GUARD_SECONDS = 0.3   # keys this soon after a dialog opens were typed ahead of it: no answer


# The search screen's frame until it moves to `Dialog` (it belongs to another change).
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


def session_name(title: str | None, width: int = 50) -> str:
    """A session as dialogs name it: its title, on one line, made safe and clipped, in quotes."""
    return f"“{one_line(title, width)}”" if title and title.strip() else "an untitled session"


@dataclass(frozen=True, slots=True)
class Choice:
    """One button of a dialog's choices row; `key` names the key that also chooses it."""

    id: str
    label: str
    key: str | None = None
    variant: str = "default"


class Dialog(ModalScreen[ResultT]):
    """The frame of every dialog. A subclass gives `body()` (the widgets above the choices),
    `buttons()` (the choices row) and `chosen(choice_id)`; Esc chooses "cancel", which dismisses with `CANCELLED`."""

    DEFAULT_CSS = """
    Dialog {
        align: center middle;
        background: $background 60%;
    }
    Dialog > #dialog-frame {
        width: 72;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        border-title-style: bold;
        border-title-color: $text;
        background: $surface;
        padding: 0 1;
    }
    Dialog #dialog-body {
        height: auto;
        max-height: 100%;
    }
    Dialog #dialog-choices {
        dock: bottom;
        height: 1;
    }
    Dialog #dialog-keys {
        width: 1fr;
        height: 1;
        color: $text-muted;
    }
    Dialog #dialog-buttons {
        width: auto;
        height: 1;
    }
    Dialog #dialog-buttons Button {
        width: auto;
        min-width: 8;
        margin-left: 1;
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "choose('cancel')", "Cancel", show=False),
                                             Binding("enter", "confirm", "Confirm", show=False)]
    CANCELLED: object = None
    BODY_FOCUSABLE = False   # a report's body takes the focus, to scroll with the keys; else its first field does

    def __init__(self, title: str) -> None:
        super().__init__()
        self.dialog_title = title
        self.opened_at: float | None = None   # by the app's monotonic clock, when the dialog was shown

    @property
    def monotonic(self) -> Callable[[], float]:
        """The clock the guard reads: the app's (a test's fake one), else the system's."""
        clock = getattr(self.app, "monotonic", None)
        return clock if callable(clock) else time.monotonic

    def _on_mount(self, event: events.Mount) -> None:   # Textual's own handler: a subclass's on_mount is free
        super()._on_mount(event)
        self.opened_at = self.monotonic()

    def too_soon(self) -> bool:
        """True for an answer that arrives within the guard of the dialog opening (typed ahead)."""
        return self.opened_at is None or self.monotonic() - self.opened_at < ANSWER_GUARD_SECONDS

    def answer(self, choice_id: str) -> None:
        """Every answer comes here, whatever gave it (a key, a button, a field's Enter)."""
        if not self.too_soon():
            self.chosen(choice_id)

    def body(self) -> Iterable[Widget]:
        return ()

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Cancel", "escape")]

    def chosen(self, choice_id: str) -> None:
        self.dismiss(self.CANCELLED)  # type: ignore[arg-type]  # each subclass's own "no answer"

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog-frame") as frame:
            frame.border_title = Text(clipped(self.dialog_title, 70))
            with VerticalScroll(id="dialog-body") as scroll:
                scroll.can_focus = self.BODY_FOCUSABLE
                yield from self.body()
            with Horizontal(id="dialog-choices"):
                yield Label(self.keys_line(), id="dialog-keys")
                with Horizontal(id="dialog-buttons"):
                    for choice in self.buttons():
                        button = Button(choice.label, id=choice.id, variant=choice.variant,  # type: ignore[arg-type]
                                        compact=True)
                        button.can_focus = False   # Enter is the dialog's: it never presses a focused Cancel
                        yield button

    def keys_line(self) -> Text:
        keys = [f"{KEY_NAMES.get(choice.key, choice.key)} {choice.label}" for choice in self.buttons() if choice.key]
        return Text(" · ".join(keys))

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id:
            self.answer(event.button.id)

    def action_choose(self, choice_id: str) -> None:
        self.answer(choice_id)

    def action_confirm(self) -> None:
        """Enter: the choice the choices row names Enter for, if it is enabled."""
        for choice in self.buttons():
            if choice.key == "enter":
                if not self.query_one(f"#{choice.id}", Button).disabled:
                    self.answer(choice.id)
                return


class ConfirmDialog(Dialog[bool]):
    """A yes-or-no question: Enter answers yes, Esc no, a dangerous one's yes in the error colour."""

    CANCELLED = False

    def __init__(self, question: str, *, yes: str = "Yes", danger: bool = False, title: str = "Are you sure?"):
        super().__init__(title)
        self.question = question
        self.yes = yes
        self.danger = danger

    def body(self) -> Iterable[Widget]:
        yield Static(Text(safe_text(self.question)), classes="question")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Cancel", "escape"),
                Choice("yes", self.yes, "enter", "error" if self.danger else "primary")]

    def chosen(self, choice_id: str) -> None:
        self.dismiss(choice_id == "yes")


class TextDialog(Dialog[str | None]):
    """One line of text; Enter accepts (an empty line too), Esc cancels (None).

    A value holding hidden characters (bidi controls, zero-width, escapes) is offered escaped, as
    it is shown everywhere else: Enter saves what the field shows, never characters it hides."""

    DEFAULT_CSS = """
    TextDialog .dialog-warning { color: $warning; }
    """

    def __init__(self, prompt: str, value: str = "", placeholder: str = "", *, title: str = "", save: str = "Save"):
        super().__init__(title or prompt.rstrip(":"))
        self.prompt = prompt
        self.value = safe_line(value)
        self.placeholder = placeholder
        self.escaped = self.value != value
        self.save = save

    def body(self) -> Iterable[Widget]:
        yield Label(Text(safe_text(self.prompt)))
        if self.escaped:
            yield Static(Text("It holds hidden characters, shown escaped; Enter saves the text as shown."),
                         classes="dialog-warning")
        yield Input(self.value, placeholder=self.placeholder, id="text-input")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Cancel", "escape"), Choice("save", self.save, "enter", "primary")]

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.answer("save")

    def chosen(self, choice_id: str) -> None:
        self.dismiss(self.query_one("#text-input", Input).value if choice_id == "save" else None)


class ChoiceDialog(Dialog[str | None]):
    """Pick one of several labelled values (workspaces, archive entries, trash entries)."""

    DEFAULT_CSS = """
    ChoiceDialog OptionList { height: auto; max-height: 24; }
    ChoiceDialog .dialog-empty { color: $text-muted; }
    """

    def __init__(self, title: str, choices: list[tuple[str, str]], empty: str = "Nothing to choose from."):
        super().__init__(title)
        self.choices = choices
        self.empty = empty

    def body(self) -> Iterable[Widget]:
        if self.choices:
            yield OptionList(*[Option(Text(clipped(label, 200)), id=value) for value, label in self.choices])
        else:
            yield Static(Text(self.empty), classes="dialog-empty")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Cancel", "escape")]

    def keys_line(self) -> Text:
        return Text("Enter Choose · Esc Cancel" if self.choices else "Esc Cancel")

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if not self.too_soon():
            self.dismiss(event.option.id)


class ReportScreen(Dialog[None]):
    """A read-only report (doctor problems, audit log) in a scrollable box."""

    DEFAULT_CSS = """
    ReportScreen > #dialog-frame { width: 110; }
    """
    BINDINGS = [Binding("q", "choose('cancel')", "Close", show=False)]
    BODY_FOCUSABLE = True

    def __init__(self, title: str, body: Text):
        super().__init__(title)
        self.report = body

    def body(self) -> Iterable[Widget]:
        yield Static(self.report, id="report-body")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Close", "escape")]

    def on_mount(self) -> None:
        self.query_one("#dialog-body").focus()


class CommandDialog(Dialog[None]):
    """A command that is not run here, and the folder it runs in: in the demo, what Enter would run;
    elsewhere, a command whose program is not installed. "Copy" puts it on the clipboard (OSC 52),
    and it stays on screen for a terminal that does not answer."""

    DEFAULT_CSS = """
    CommandDialog .command-line { background: $panel; padding: 0 1; margin: 1 0; }
    CommandDialog .command-note { color: $text-muted; }
    """

    BINDINGS = [Binding("c", "choose('copy')", "Copy", show=False)]

    def __init__(self, title: str, why: str, argv: list[str], folder: str, notes: Iterable[str] = ()):
        super().__init__(title)
        self.why = why
        self.command = f"cd {shlex.quote(folder)} && {shlex.join(argv)}"
        self.folder = folder
        self.notes = list(notes)

    def body(self) -> Iterable[Widget]:
        yield Static(Text(safe_text(self.why)))
        yield Static(Text(safe_line(self.command)), classes="command-line", id="command-line")
        yield Static(Text(f"Folder: {safe_line(self.folder)}"), classes="command-note")
        for note in self.notes:
            yield Static(Text(safe_line(note)), classes="command-note")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Close", "escape"), Choice("copy", "Copy the command", "c", "primary")]

    def chosen(self, choice_id: str) -> None:
        if choice_id != "copy":
            self.dismiss(None)
            return
        self.app.copy_to_clipboard(self.command)
        self.app.notify("Copied the command (if the terminal lets programs set the clipboard); it is shown here "
                        "too.", markup=False)
