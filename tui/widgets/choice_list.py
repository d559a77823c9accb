"""A list to choose from with its filter line above it, with the session list's habits (fzf's and
the agents' pickers'): what is typed goes to the filter line, Backspace edits it, Esc clears it
(Esc on an empty filter is left to the screen, which closes); arrows, ctrl+n / ctrl+p, PgUp /
PgDn and Home / End move the highlight, and Enter chooses. The search screen, the workspace
chooser and the trash view are built on it.

The owner fills the list (`set_options`) and hears `Changed` (the filter's text) and `Chosen`
(an option's id); the widget filters nothing itself, so a filter may be a full-text search."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual import events, on
from textual.actions import SkipAction
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, OptionList
from textual.widgets.option_list import Option

from .filter_prompt import FilterPrompt, PickPrompt


class ChoiceList(Vertical):
    DEFAULT_CSS = """
    ChoiceList { height: auto; }
    ChoiceList > PickPrompt { height: 1; }
    ChoiceList > OptionList {
        height: auto; max-height: 20; border: none; padding: 0; text-wrap: nowrap; text-overflow: ellipsis;
    }
    ChoiceList > OptionList:focus { border: none; }
    """
    BINDINGS = [Binding("escape", "clear", "Clear", show=False)]

    @dataclass
    class Changed(Message):
        """The filter's text changed."""

        choice_list: ChoiceList
        text: str

    @dataclass
    class Chosen(Message):
        """An option was chosen (Enter, or a click); None: Enter with no option highlighted."""

        choice_list: ChoiceList
        option_id: str | None

    def __init__(self, placeholder: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        # A letter typed on the list is added to the filter, never typed over it: no selection on focus.
        yield PickPrompt(placeholder=self.placeholder, id="choice-filter", select_on_focus=False)
        yield OptionList(id="choice-options")

    def on_mount(self) -> None:
        self.prompt.focus()

    @property
    def prompt(self) -> Input:
        return self.query_one("#choice-filter", Input)

    @property
    def options(self) -> OptionList:
        return self.query_one("#choice-options", OptionList)

    @property
    def text(self) -> str:
        return self.prompt.value

    def set_options(self, options: Iterable[Option], highlight: str | None = None) -> None:
        """The list's options; the highlight on the one with the id `highlight`, else the first
        that can be chosen."""
        option_list = self.options
        option_list.clear_options()
        option_list.add_options(list(options))
        if highlight is not None:
            option_list.highlighted = option_list.get_option_index(highlight)
        else:
            self._move_to(0, 1)

    def _move_to(self, index: int, direction: int) -> bool:
        """The highlight on the first option that can be chosen from `index` on in `direction`
        (the list does not wrap: past an end the highlight stays); False when there is none."""
        option_list = self.options
        while 0 <= index < option_list.option_count:
            if not option_list.get_option_at_index(index).disabled:
                option_list.highlighted = index
                return True
            index += direction
        return False

    @on(FilterPrompt.Move)
    def on_move(self, message: FilterPrompt.Move) -> None:
        message.stop()
        option_list = self.options
        last = option_list.option_count - 1
        if message.ends:
            self._move_to(0 if message.ends < 0 else last, -message.ends)
            return
        direction = 1 if message.rows + message.pages >= 0 else -1
        if option_list.highlighted is None:
            self._move_to(0, 1)
            return
        page = max(option_list.scrollable_content_region.height - 1, 1)
        target = min(max(option_list.highlighted + message.rows + message.pages * page, 0), last)
        if not self._move_to(target, direction) and message.pages:   # a page past the end: the last one
            self._move_to(target, -direction)

    @on(Input.Changed, "#choice-filter")
    def on_filter_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(self.Changed(self, event.value))

    @on(Input.Submitted, "#choice-filter")
    def on_filter_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self.options.highlighted is None:
            self.post_message(self.Chosen(self, None))
        else:
            self.options.action_select()

    @on(OptionList.OptionSelected, "#choice-options")
    def on_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(self, event.option.id))

    def on_key(self, event: events.Key) -> None:
        """A letter typed while the list has the focus (after a click) goes to the filter too."""
        if self.prompt.has_focus:
            return
        if event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            self.prompt.focus()
            self.prompt.insert_text_at_cursor(event.character)
        elif event.key == "backspace":
            event.stop()
            self.prompt.focus()
            self.prompt.action_delete_left()

    def action_clear(self) -> None:
        """Esc: the filter is cleared; an empty one leaves Esc to the screen (which closes)."""
        if not self.prompt.value:
            raise SkipAction()
        self.prompt.value = ""
        self.prompt.focus()
