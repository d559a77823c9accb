"""The F1 screen: every key of `tui/actions.py`, grouped by where it works, then what the list's marks
mean (`tui/legend.py`, the words `reprise list` prints too), in a scrolling window that fits 80x24.
Esc or F1 closes it."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from ..actions import COMMANDS, COMPOSER, LIST, PALETTE_KEY, PICK, Command, key_text
from ..legend import Entry, legend

KEY_WIDTH = 16
SECTIONS = (
    ("The session list: what you type filters it", lambda c: LIST in c.modes and c.where in ("screen", "app", "list")),
    ("The picker's prompt (reprise pick)", lambda c: c.where == "filter"),
    ("Writing a message", lambda c: c.where == "composer" or (COMPOSER in c.modes and c.where == "app")),
    ("The picker (reprise pick): letters go to the prompt",
     lambda c: PICK in c.modes and c.where in ("screen", "app") and LIST not in c.modes),
)


def _keys_table() -> Table:
    """Two columns: the keys (bold), then what they do, wrapped in its own column."""
    table = Table.grid(padding=(0, 1))
    table.add_column(width=KEY_WIDTH, style="bold")
    table.add_column(ratio=1)
    return table


def key_list(commands: tuple[Command, ...] = COMMANDS) -> Group:
    """Each section's title on its own line, then its keys, one per row: the keys, then what they
    do (wrapped in its own column)."""
    parts: list[RenderableType] = []
    for title, belongs in SECTIONS:
        table = _keys_table()
        seen: set[tuple[str, str]] = set()
        for command in commands:
            entry = (command.keys, command.description)
            if belongs(command) and command.keys and entry not in seen:   # no key: the palette names it
                seen.add(entry)
                table.add_row(key_text(command.keys), command.description)
        parts += [Text(title, style="bold underline"), table, Text("")]
    palette = _keys_table()
    palette.add_row(key_text(PALETTE_KEY), Text("the command palette: every action and view by name, those with no "
                                                "key too", style="italic"))
    return Group(*parts, palette)


def legend_list(entries: list[Entry], styles: Mapping[str, Style]) -> Group:
    """What each mark of the list means: the mark drawn as the list draws it (`styles`: an entry's style
    name to a Rich style), then its meaning."""
    table = _keys_table()
    for entry in entries:
        table.add_row(Text(entry.mark, style=styles.get(entry.style or "", "")), entry.meaning)
    return Group(Text(""), Text("Marks in the list", style="bold underline"), table)


class KeysScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    KeysScreen {
        align: center middle;
        background: $background 60%;
    }
    KeysScreen > Vertical {
        width: 96;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        border-title-align: left;
        border-subtitle-align: right;
        background: $surface;
    }
    KeysScreen VerticalScroll {
        height: auto;
        max-height: 100%;
        padding: 0 1;
    }
    KeysScreen > .keys--warn {
        color: $warning;
        text-style: bold;
    }
    KeysScreen > .keys--muted {
        color: $text-muted;
    }
    """
    COMPONENT_CLASSES = {"keys--warn", "keys--muted"}
    BINDINGS = [Binding("escape,f1,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = "Keys and marks"
            box.border_subtitle = "↑↓ scroll · Esc closes"
            with VerticalScroll():
                yield Static(key_list(), id="keys-body")
                yield Static(legend_list(legend(self._agents()), self._styles()), id="legend-body")

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

    def _agents(self) -> dict[str, str]:
        """The agents whose sessions the app lists, by name, as they name themselves."""
        from ..app import RepriseApp

        if not isinstance(self.app, RepriseApp):
            return {}
        return {name: source.label for name, source in self.app.service.sources.items()}

    def _styles(self) -> dict[str, Style]:
        """The list's colours for the legend's marks (the same theme variables): the warn colour, muted."""
        styles = {name: self.get_component_rich_style(f"keys--{name}", partial=False) for name in ("warn", "muted")}
        return {name: Style(color=style.color, bold=style.bold) for name, style in styles.items()}   # no background

    def action_close(self) -> None:
        self.dismiss(None)
