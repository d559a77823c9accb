"""Report lines (`tui/reports`) as Rich text for the TUI's widgets: each span in its style."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Group
from rich.text import Text

from . import Line


def styled_line(each: Line) -> Text:
    return Text.assemble(*((text, style or "") for text, style in each.spans))


def styled_text(lines: Iterable[Line]) -> Text:
    """One text, a line per report line (for a `Static`)."""
    return Text("\n").join(styled_line(each) for each in lines)


def styled_group(lines: Iterable[Line]) -> Group:
    """A line per report line, each wrapped on its own."""
    return Group(*(styled_line(each) for each in lines))
