"""The meter's parts for people: the table `reprise meter` prints and the TUI's Context tab
(each part as a bar against the window). Both say the same of each part: its figure, its
basis, and what it covers (its full size, its note, its error)."""

from __future__ import annotations

from collections.abc import Sequence

from reprise.core.meter import MeterResult, Part

from ..text import safe_line
from . import Line, line

STATE_STYLE = {"ok": "green", "warn": "yellow", "over": "bold red", "unknown": "dim"}
VIA = {"send": "sent by the agent's send command (the composer, `reprise send`)",
       "resume": "typed into the agent's own terminal UI (Enter, `reprise resume`)"}
FULL_SIZE_PARTS = ("history", "message")   # the parts counted as a preview of a longer text


def part_detail(part: Part) -> str:
    """What a part covers: its full size when only a preview is counted, its note, its error."""
    extra = []
    if part.full_chars is not None and part.name in FULL_SIZE_PARTS:
        extra.append(f"{part.full_chars:,} characters in full")
    if part.note:
        extra.append(safe_line(part.note))
    if part.error:
        extra.append(f"error: {safe_line(part.error)}")
    return "; ".join(extra)


def _counted_with(result: MeterResult) -> str:
    return f"{safe_line(result.model)} ({result.model_source}), counted with {result.encoding}"


def window_phrase(result: MeterResult) -> str:
    """The total against the window (its share and state), or that the window is unknown."""
    if result.window is None or result.percent is None:
        return f"window unknown for {safe_line(result.model)} ({safe_line(result.window_source)})"
    return f"of {result.window:,} ({result.percent:.1f}%), {result.state}"


def how_lines(result: MeterResult) -> list[tuple[str, str, str]]:
    """(name, figure, what): how the next turn goes, when the agent compacts on its own, and the
    calibration factor of the calibrated parts."""
    lines = [("via", result.via, VIA.get(result.via, result.via))]
    if result.compacts_at is not None:
        share = f" ({100 * result.compacts_at / result.window:.0f}% of the window)" if result.window else ""
        lines.append(("compacts", f"{result.compacts_at:,}", f"the agent compacts the session on its own at this "
                                                              f"total{share}"))
    if result.calibration is not None:
        lines.append(("calibrated", f"×{result.calibration:.3f}",
                      "the provider's count of a request the session file holds over Reprise's own count of it"))
    return lines


def meter_lines(session_id: str, result: MeterResult, *, with_draft: bool) -> list[Line]:
    """`reprise meter`: a row per part, the total against the window, the draft's share (when
    a message was given) and the provider's measured figure."""
    lines = [line(f"Next turn of {safe_line(session_id)} with {_counted_with(result)}: "
                  f"{'exact' if result.exact else 'estimate'}")]
    for part in result.parts:
        figure = f"{part.tokens:>9,}" if part.tokens is not None else "   failed"
        lines.append(line(f"  {part.name:10} {figure}  {part.basis:10} {part_detail(part)}"))
    window_source = "" if result.window is None else f"; the window is the input budget ({result.window_source})"
    lines.append(line(f"  {'total':10} {result.total:>9,}  {window_phrase(result)}{window_source}"))
    lines += [line(f"  {name:10} {figure:>9}  {text}") for name, figure, text in how_lines(result)]
    if with_draft:
        lines.append(line(f"  {'draft':10} {result.draft:>+9,}  the total with this message minus the total with none"))
    if result.measured:
        lines.append(line(f"  measured   {result.measured.tokens:>9,}  {result.measured.label} "
                          "(reported by the provider)"))
    return lines


def context_lines(result: MeterResult | None, note: str = "", width: int = 40,
                  comparisons: Sequence[tuple[int, int, int]] = ()) -> list[Line]:
    """The Context tab: the total and how it was counted, then each part as a bar `width` wide,
    the measured figure, and the meter's estimates against what the agent reported."""
    if result is None:
        return [line(safe_line(note or "Counting…"), style="dim")]
    kind = ("exact: every part counted with the model's own tokenizer" if result.exact else
            "estimate: a configured part, or a tokenizer that is not the model's own")
    if result.window is None or result.percent is None:
        head = line(("Next turn: ", "bold"), f"{result.total:,} tokens ", ("(window unknown)", STATE_STYLE["unknown"]))
        source = line(f"No window is known for {safe_line(result.model)} ({safe_line(result.window_source)}): "
                      "add a [[meter.models]] entry to set one.", style="dim")
    else:
        head = line(("Next turn: ", "bold"), f"{result.total:,} of {result.window:,} tokens ",
                    (f"({result.percent:.1f}%, {result.state})", STATE_STYLE[result.state]))
        source = line(f"The window is the input budget: what the prompt may hold once the model's reserved output "
                      f"is set aside ({safe_line(result.window_source)}).", style="dim")
    lines = [
        head,
        source,
        line(f"{_counted_with(result)}: {kind}", style="dim"),
        *(line(f"{name}: {figure}, {text}", style="dim") for name, figure, text in how_lines(result)),
        line(f"The draft adds {result.draft:,} tokens: " + (
            "it enters the summary in full (as the pending turn) and both previews."
            if any(part.name == "summary" for part in result.parts) else "the message the next turn sends."),
            style="dim"),
        line(),
    ]
    bar_width = max(width - 2, 10)
    scale = result.window or max(result.total, 1)   # no window known: the bars share the total
    for part in result.parts:
        share = (part.tokens or 0) / scale
        filled = min(round(share * bar_width), bar_width)
        if part.tokens and not filled:
            filled = 1
        figure = f"{part.tokens:,}" if part.tokens is not None else "failed"
        lines.append(line((f"{part.name:<10}", "bold"), f"{figure:>9} ", (part.basis, "italic")))
        lines.append(line("█" * filled + "░" * (bar_width - filled), style="red" if part.basis == "failed" else "cyan"))
        detail = part_detail(part)
        if detail:
            lines.append(line(detail, style="dim"))
    lines.append(line())
    if result.measured is not None:
        figure = f"{result.measured.tokens:,} tokens (the figures above are the meter's; this one is not), "
        label = (f"{result.measured.label} (reported by the provider; it includes that turn's own work, so it is "
                 "not the same quantity)")
        lines.append(line(("Measured: ", "bold"), figure, (label, "dim")))
    else:
        lines.append(line("Measured: no turn has recorded a context size yet.", style="dim"))
    if comparisons:
        lines += _comparison_lines(comparisons)
    if note:
        lines.append(line(safe_line(note), style="dim"))
    return lines


def _comparison_lines(comparisons: Sequence[tuple[int, int, int]]) -> list[Line]:
    lines = [line(), line("Estimate before each turn vs what the agent reported (last call of that turn):",
                          style="bold")]
    for turn, estimate, reported in comparisons[-8:]:
        lines.append(line(f"  turn {turn:>3}: {estimate:>9,} estimated  {reported:>9,} reported  "
                          f"×{reported / estimate:.2f}" if estimate else f"  turn {turn}: {reported:,} reported"))
    total_estimate = sum(e for _, e, _ in comparisons)
    total_reported = sum(r for _, _, r in comparisons)
    if total_estimate:
        lines.append(line(f"  running ratio over {len(comparisons)} turns: ×{total_reported / total_estimate:.2f}",
                          style="bold"))
    return lines
