"""The modal dialogs and the frame they share: confirm, ask for a line of text, choose one of
several (a few, or a long list to filter by typing: the workspaces, the trash), show a report,
show a command to run. Each dismisses with its answer; none calls the service.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import PurePath
from typing import TYPE_CHECKING, ClassVar, TypeVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from reprise.core.retention import format_age
from reprise.core.sources.registry import id_argument

from ..format import relative_time
from ..text import clipped, one_line, safe_line, safe_text
from ..widgets.choice_list import ChoiceList

if TYPE_CHECKING:
    from reprise.core.service import WorkspaceInfo
    from reprise.core.trash_results import TrashEntry

ResultT = TypeVar("ResultT")

KEY_NAMES = {"enter": "Enter", "escape": "Esc"}
ANSWER_GUARD_SECONDS = 0.3   # keys this soon after a dialog opens were typed ahead of it: no answer


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


class BriefDialog(Dialog[str | None]):
    """A brief shown before it starts a session, editable: ctrl+s starts with the text as it stands."""

    DEFAULT_CSS = """
    BriefDialog > #dialog-frame { width: 90; }
    BriefDialog TextArea { height: 14; width: 100%; }
    BriefDialog .brief-facts { color: $text-muted; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [Binding("ctrl+s", "choose('start')", "Start", show=False)]

    def __init__(self, title: str, text: str, facts: str):
        super().__init__(title)
        self.text = text
        self.facts = facts

    def body(self) -> Iterable[Widget]:
        yield Static(Text(safe_line(self.facts)), classes="brief-facts")
        yield TextArea(self.text, soft_wrap=True, show_line_numbers=False, id="brief-text")

    def buttons(self) -> list[Choice]:
        return [Choice("cancel", "Cancel", "escape"), Choice("start", "Start", "ctrl+s", "primary")]

    def keys_line(self) -> Text:
        return Text("Edit it · ctrl+s Start · Esc Cancel")

    def chosen(self, choice_id: str) -> None:
        self.dismiss(self.query_one("#brief-text", TextArea).text if choice_id == "start" else None)


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


@dataclass(frozen=True, slots=True)
class Item:
    """One entry of a `FilterDialog`: the value it answers, its line, the text typing matches, and
    its keys for each of the dialog's orders (by the order's name)."""

    value: str
    label: str
    matched: str
    keys: dict[str, str | float]


@dataclass(frozen=True, slots=True)
class Order:
    """A way to sort a `FilterDialog`'s entries: its name ("name", "activity") and whether the
    largest key comes first."""

    name: str
    newest_first: bool = False


def filtered(items: Iterable[Item], text: str) -> list[Item]:
    """The items whose text holds every word typed, in any case."""
    words = text.lower().split()
    return [item for item in items if all(word in item.matched.lower() for word in words)]


class FilterDialog(Dialog[str | None]):
    """A long list to choose from, with the session list's habits (`ChoiceList`): typing filters it,
    Esc clears the filter and on an empty one closes, the arrows, ctrl+n / ctrl+p, PgUp / PgDn and
    Home / End move, Enter chooses; ctrl+s switches between the orders it offers, and the line under
    the filter says which one is on."""

    DEFAULT_CSS = """
    FilterDialog > #dialog-frame { width: 100; }
    FilterDialog ChoiceList > OptionList { max-height: 16; }
    FilterDialog .dialog-empty, FilterDialog #filter-order { color: $text-muted; }
    """
    BINDINGS = [Binding("ctrl+s", "choose('sort')", "Sort", show=False)]

    def __init__(self, title: str, items: Sequence[Item], *, empty: str, placeholder: str = "type to filter",
                 choose: str = "Choose", orders: Sequence[Order] = ()) -> None:
        super().__init__(title)
        self.items = list(items)
        self.empty = empty
        self.placeholder = placeholder
        self.choose_label = choose
        self.orders = list(orders)
        self.order = 0

    @property
    def choice_list(self) -> ChoiceList:
        return self.query_one(ChoiceList)

    def body(self) -> Iterable[Widget]:
        yield ChoiceList(f"{self.placeholder} · Esc clears")
        if len(self.orders) > 1:
            yield Label(self.order_line(), id="filter-order")
        yield Static(Text(self.empty), classes="dialog-empty", id="filter-empty")

    def order_line(self) -> Text:
        order, following = self.orders[self.order], self.orders[(self.order + 1) % len(self.orders)]
        first = ", newest first" if order.newest_first else ""
        return Text(f"By {order.name}{first} · ctrl+s sorts by {following.name}")

    def on_mount(self) -> None:
        self.show_items()

    def shown(self) -> list[Item]:
        """The items the filter keeps, in the order chosen."""
        items = filtered(self.items, self.choice_list.text)
        if self.orders:
            order = self.orders[self.order]
            items.sort(key=lambda item: item.keys[order.name], reverse=order.newest_first)
        return items

    def show_items(self, highlight: str | None = None) -> None:
        items = self.shown()
        self.choice_list.set_options([Option(Text(safe_line(item.label)), id=item.value) for item in items],
                                     highlight if any(item.value == highlight for item in items) else None)
        empty = self.query_one("#filter-empty", Static)
        empty.display = not items
        if self.items and not items:
            empty.update(Text("Nothing matches the filter; Esc clears it."))

    def buttons(self) -> list[Choice]:
        if not self.items:
            return [Choice("cancel", "Cancel", "escape")]
        return [Choice("cancel", "Cancel", "escape"), Choice("choose", self.choose_label, "enter", "primary")]

    @on(ChoiceList.Changed)
    def on_filter_changed(self, message: ChoiceList.Changed) -> None:
        self.show_items()

    @on(ChoiceList.Chosen)
    def on_chosen(self, message: ChoiceList.Chosen) -> None:
        if message.option_id is not None and not self.too_soon():
            self.dismiss(message.option_id)

    def chosen(self, choice_id: str) -> None:
        if choice_id == "sort":
            if len(self.orders) > 1:
                highlighted = self.choice_list.options.highlighted_option
                self.order = (self.order + 1) % len(self.orders)
                self.show_items(highlighted.id if highlighted else None)
                self.query_one("#filter-order", Label).update(self.order_line())
            return
        if choice_id == "choose":
            highlighted = self.choice_list.options.highlighted_option
            if highlighted is not None and highlighted.id is not None:
                self.dismiss(highlighted.id)
            return
        self.dismiss(None)


def _age(iso: str | None, now: float) -> str:
    if not iso:
        return "-"
    try:
        moment = datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return "-"
    return relative_time(max(now - moment, 0.0))


def workspace_dialog(infos: Iterable[WorkspaceInfo], now: float) -> FilterDialog:
    """The workspace chooser: each workspace's folder name, sessions, newest activity and path,
    filtered by typing (the folder, or the key of a workspace whose folder is unknown), sorted by
    activity (newest first) or by the folder's name."""
    items = []
    for info in infos:
        name = PurePath(info.path).name if info.path else "(folder unknown)"
        label = f"{name[:24]:24} {info.sessions:5} sessions {_age(info.last_activity, now):>8}  {info.path or info.key}"
        items.append(Item(info.key, label, info.path or info.key,
                          {"activity": info.last_activity or "", "name": f"{name.lower()}\0{info.path or info.key}"}))
    return FilterDialog("Choose a workspace", items, empty="No workspaces yet.",
                        placeholder="type to filter: folder or key", choose="List it",
                        orders=(Order("activity", newest_first=True), Order("name")))


def trash_dialog(entries: Sequence[TrashEntry], now: float) -> FilterDialog:
    """The trash: each trashed session's age in the trash, title and id, newest first, filtered by
    typing (title, id or workspace); the answer is the entry's index."""
    items = [Item(str(index), f"{format_age(entry.age(now)):>6} ago  {entry.title or '(untitled)'}  "
                              f"{id_argument(entry.ref.source, entry.ref.session_id)}",
                  f"{entry.title or ''} {entry.ref.session_id} {entry.ref.workspace_key}", {})
             for index, entry in sorted(enumerate(entries), key=lambda pair: pair[1].age(now))]
    return FilterDialog("Trash: choose a session to restore", items, empty="The trash is empty.",
                        placeholder="type to filter: title, id or workspace", choose="Restore")


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
