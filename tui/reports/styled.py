"""Report lines (`tui/reports`) as Rich text for the TUI's widgets: each span in its style, a
role (`heading`, `error`, ...) in the style the widget's theme gives it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from rich.console import Group
from rich.style import Style
from rich.text import Text

from . import Line

Roles = Mapping[str, Style]


def styled_line(each: Line, roles: Roles | None = None) -> Text:
    roles = roles or {}
    return Text.assemble(*((text, roles.get(style, style) or "") for text, style in each.spans))


def styled_text(lines: Iterable[Line], roles: Roles | None = None) -> Text:
    """One text, a line per report line (for a `Static`)."""
    return Text("\n").join(styled_line(each, roles) for each in lines)


def styled_group(lines: Iterable[Line]) -> Group:
    """A line per report line, each wrapped on its own."""
    return Group(*(styled_line(each) for each in lines))
