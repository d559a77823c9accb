"""The reports the CLI prints and the TUI shows, written once (doctor, audit, a session's
conversation and history, search hits, the meter's parts): each turns core's results into
`Line`s of (text, style) spans.

The CLI prints a line's `plain` text; the TUI applies the styles (Rich style names) through
`styled.py`. Every piece of session or store text is made terminal-safe here, with
`tui/text.py`, so neither front end has to remember to. No Rich import: the CLI does not load it.
"""

from __future__ import annotations

from dataclasses import dataclass

Span = tuple[str, str]   # (text, style): a Rich style name, "" for the default


@dataclass(frozen=True, slots=True)
class Line:
    spans: tuple[Span, ...] = ()

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)


def line(*parts: str | Span, style: str = "") -> Line:
    """A line of strings (in `style`) and (text, style) spans, in order."""
    return Line(tuple((part, style) if isinstance(part, str) else part for part in parts))


def plain_text(lines: list[Line]) -> str:
    """The lines' text, one per line, without styles."""
    return "\n".join(each.plain for each in lines)
