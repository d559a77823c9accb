"""The one-line context meter above the composer: what the next turn will send, what the
draft adds to it, the percentage of the input budget, coloured by state."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from reprise.core.meter import MeterResult

from ..format import tokens
from ..text import safe_line


def meter_line(result: MeterResult | None, *, status: str = "") -> Text:
    """Total, window share and the draft's own cost; the tokenizer and how exact the figure is
    are on the Context tab."""
    if result is None:
        return Text(safe_line(status) or "Context: select a session", style="dim")
    message = result.part("message")
    state_style = {"ok": "green", "warn": "bold yellow", "over": "bold red", "unknown": "dim"}[result.state]
    share = (f"{result.total:,} / {tokens(result.window)} ", (f"{result.percent:.1f}% {result.state}", state_style)) \
        if result.window is not None and result.percent is not None else \
        (f"{result.total:,} ", ("window unknown", state_style))
    text = Text.assemble(
        ("Next turn ", "bold"),
        *share,
        (f" · compacts at {100 * result.compacts_at / result.window:.0f}%"
         if result.compacts_at is not None and result.window else "", "dim"),
        f" · draft +{tokens(result.draft)}",
        (f" ({message.full_chars:,} chars)" if message.full_chars else "", "dim"),
    )
    if result.measured is not None:
        text.append(f" · last measured {tokens(result.measured.tokens)} (turn {result.measured.turn})", style="dim")
    if status:
        text.append(f" · {safe_line(status)}", style="italic")
    return text


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

    def show(self, result: MeterResult | None, *, status: str = "") -> None:
        self.set_class(result is not None and result.state == "warn", "-warn")
        self.set_class(result is not None and result.state == "over", "-over")
        self.update(meter_line(result, status=status))
