"""The one-line context meter above the composer: what the next turn will send, what the
draft adds to it, the percentage of the input budget, coloured by state."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from reprise.core.meter import MeterResult

from ..format import tokens
from ..text import safe_line

BAR_CELLS = 10
EIGHTHS = " ▏▎▍▌▋▊▉"


def share_bar(percent: float, cells: int = BAR_CELLS) -> tuple[str, str]:
    """The window's share as a bar of `cells` cells, in eighths of a cell: (the filled part, the
    rest). Over the window it is full."""
    eighths = max(0, min(cells * 8, round(percent / 100 * cells * 8)))
    full, part = divmod(eighths, 8)
    filled = "█" * full + (EIGHTHS[part] if part else "")
    return filled, "░" * (cells - len(filled))


def meter_line(result: MeterResult | None, *, status: str = "", width: int | None = None) -> Text:
    """Total, window share and the draft's own cost; the tokenizer and how exact the figure is
    are on the Context tab. A bar pictures the share of the window in the state's colour (none when
    the window is unknown). Given a `width`, the least important pieces give way first (the last
    measured figure, the draft's length, the compaction point, the bar, the draft, the status), so
    a figure is never cut: the total and its share stay."""
    if result is None:
        return Text(safe_line(status) or "Context: select a session", style="dim")
    message = result.part("message")
    state_style = {"ok": "green", "warn": "bold yellow", "over": "bold red", "unknown": "dim"}[result.state]
    share = [(f"{result.total:,} / {tokens(result.window)} ", None),
             (f"{result.percent:.1f}% {result.state}", state_style)] \
        if result.window is not None and result.percent is not None else \
        [(f"{result.total:,} ", None), ("window unknown", state_style)]
    # (spans, importance): the lowest importance gives way first, a piece whole
    pieces: list[tuple[list[tuple[str, str]], int]] = [([("Next turn ", "bold")], 9)]
    if result.window is not None and result.percent is not None:   # no window known: no picture of a share
        filled, empty = share_bar(result.percent)
        pieces.append(([(filled, state_style.replace("bold ", "")), (empty + " ", "dim")], 4))
    pieces += [([(text, style or "")], 9) for text, style in share]
    if result.compacts_at is not None and result.window:
        pieces.append(([(f" · compacts at {100 * result.compacts_at / result.window:.0f}%", "dim")], 3))
    pieces.append(([(f" · draft +{tokens(result.draft)}", "")], 5))
    if message.full_chars:
        pieces.append(([(f" ({message.full_chars:,} chars)", "dim")], 2))
    if result.measured is not None:
        pieces.append(([(f" · last measured {tokens(result.measured.tokens)} (turn {result.measured.turn})", "dim")],
                       1))
    if status:
        pieces.append(([(f" · {safe_line(status)}", "italic")], 6))
    if width is not None:
        while (sum(len(text) for spans, _ in pieces for text, _ in spans) > width
               and min(rank for _, rank in pieces) < 9):
            weakest = min(range(len(pieces)), key=lambda index: (pieces[index][1], -index))
            del pieces[weakest]
    return Text.assemble(*(span for spans, _ in pieces for span in spans))

class MeterBar(Static):
    DEFAULT_CSS = """
    MeterBar {
        height: 1;
        padding: 0 1;
        background: $panel;
    }
    MeterBar.-warn {
        background: $warning 30%;
    }
    MeterBar.-over {
        background: $error 40%;
    }
    """

    shown: tuple[MeterResult | None, str] | None = None   # what `show` was last given

    def show(self, result: MeterResult | None, *, status: str = "") -> None:
        self.shown = (result, status)
        self.set_class(result is not None and result.state == "warn", "-warn")
        self.set_class(result is not None and result.state == "over", "-over")
        self._draw()

    def on_resize(self) -> None:
        if self.shown is not None:
            self._draw()

    def _draw(self) -> None:
        assert self.shown is not None
        result, status = self.shown
        width = self.content_region.width or None   # none yet before the first layout: the whole line
        self.update(meter_line(result, status=status, width=width))
