"""The detail pane: Summary, History and Context tabs for the selected session. It is given
finished data (a SessionDetail, a MeterResult) and only draws it; all session text goes
through `safe_text` (bodies) or `safe_line` (ids, paths, one-line notes) into widgets that never
interpret markup."""

from __future__ import annotations

from reprise.core.service import SessionDetail
from reprise.core.meter import MeterResult
from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane, TextArea

from ..format import human_size
from ..text import safe_line, safe_text

LARGE_SESSION_BYTES = 10 * 1024 * 1024
DISPLAY_LINE_CHARS = 20_000


def clip_long_lines(text: str, session_id: str) -> str:
    """Cut lines too long for a text view to wrap quickly (a 10 MB message froze the app);
    the full text stays available from `reprise show`."""
    if len(text) <= DISPLAY_LINE_CHARS:
        return text
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if len(line) > DISPLAY_LINE_CHARS:
            lines[index] = (line[:DISPLAY_LINE_CHARS] + f" … [{len(line) - DISPLAY_LINE_CHARS:,} more characters: "
                            f"reprise show {session_id[:8]} prints them all]")
    return "\n".join(lines)


def history_text(detail: SessionDetail) -> str:
    """The bounded history turn by turn, as plain text."""
    lines: list[str] = []
    turns = detail.transcript.turns
    detailed = [turn for turn in turns if turn.detailed]
    lines.append(f"{len(detailed)} turn(s) kept in the file (the summary has {len(turns)}).")
    for turn in detailed:
        lines.append("")
        lines.append(f"── {safe_line(turn.turn_id)}  [{safe_line(turn.status)}]  {safe_line(turn.started_at or '')} → "
                     f"{safe_line(turn.ended_at or '')}")
        lines.append(f"User: {turn.user_message}")
        for label, items in (("Files read", [f.path for f in turn.files_read]),
                             ("Files modified", [f.path for f in turn.files_modified]),
                             ("Commands", [c.command for c in turn.commands])):
            if items:
                lines.append(f"{label} ({len(items)}):")
                lines.extend(f"  {safe_line(item)}" for item in items)
        if turn.error:
            lines.append(f"Error: {turn.error}")
        usage = turn.usage
        if usage is not None:
            lines.append(f"Usage: {usage.input_tokens:,} in, {usage.output_tokens:,} out, "
                         f"context {usage.context_tokens or 0:,}, {usage.iterations or 0} iterations, "
                         f"{(usage.duration_ms or 0) / 1000:.1f} s, cost {usage.cost or 0.0:.4f}")
    return safe_text("\n".join(lines))


def context_renderable(result: MeterResult | None, note: str = "", width: int = 40,
                       comparisons: list[tuple[int, int, int]] = ()) -> Group | Text:
    """The meter parts as bars against the window, each with its basis and what it covers."""
    if result is None:
        return Text(note or "Counting…", style="dim")
    state_style = {"ok": "green", "warn": "yellow", "over": "bold red"}[result.state]
    kind = ("exact: every part counted with the model's own tokenizer" if result.exact else
            "estimate: a configured part, or a tokenizer that is not the model's own")
    lines: list[Text] = [
        Text.assemble(("Next turn: ", "bold"), f"{result.total:,} of {result.window:,} tokens ",
                      (f"({result.percent:.1f}%, {result.state})", state_style)),
        Text(f"The window is the input budget: what the prompt may hold once the model's reserved output "
             f"is set aside ({safe_line(result.window_source)}).", style="dim"),
        Text(f"{safe_line(result.model)} ({result.model_source}), counted with {result.encoding}: {kind}",
             style="dim"),
        Text(f"The draft adds {result.draft:,} tokens: it enters the summary in full (as the pending turn) "
             "and both previews.", style="dim"),
        Text(""),
    ]
    bar_width = max(width - 2, 10)
    for part in result.parts:
        share = (part.tokens or 0) / result.window
        filled = min(int(round(share * bar_width)), bar_width)
        if part.tokens and not filled:
            filled = 1
        figure = f"{part.tokens:,}" if part.tokens is not None else "failed"
        lines.append(Text.assemble((f"{part.name:<10}", "bold"), f"{figure:>9} ", (part.basis, "italic")))
        lines.append(Text("█" * filled + "░" * (bar_width - filled),
                          style="red" if part.basis == "failed" else "cyan"))
        detail = part.error or part.note or ""
        if part.full_chars is not None and part.name in ("history", "message"):
            detail = f"{part.full_chars:,} characters in full; {detail}".rstrip("; ")
        if detail:
            lines.append(Text(safe_line(detail), style="dim"))
    lines.append(Text(""))
    if result.measured is not None:
        lines.append(Text.assemble(("Measured: ", "bold"), f"{result.measured.tokens:,} tokens (the figures above "
                                   "are the meter's; this one is not), ",
                                   (f"{result.measured.label} (reported by the provider; it includes "
                                    "that turn's own work, so it is not the same quantity)", "dim")))
    else:
        lines.append(Text("Measured: no turn has recorded a context size yet.", style="dim"))
    if comparisons:
        lines.append(Text(""))
        lines.append(Text("Estimate before each turn vs what the agent reported (last call of that turn):",
                          style="bold"))
        for turn, estimate, reported in comparisons[-8:]:
            lines.append(Text(f"  turn {turn:>3}: {estimate:>9,} estimated  {reported:>9,} reported  "
                              f"×{reported / estimate:.2f}" if estimate else f"  turn {turn}: {reported:,} reported"))
        total_estimate = sum(e for _, e, _ in comparisons)
        total_reported = sum(r for _, _, r in comparisons)
        if total_estimate:
            lines.append(Text(f"  running ratio over {len(comparisons)} turns: ×{total_reported / total_estimate:.2f}",
                              style="bold"))
    if note:
        lines.append(Text(note, style="dim"))
    return Group(*lines)


class DetailPane(Vertical):
    DEFAULT_CSS = """
    DetailPane {
        background: $surface;
    }
    DetailPane #detail-banner {
        height: auto;
        padding: 0 1;
        color: $text-muted;
    }
    DetailPane #detail-banner.-warning {
        color: $warning;
    }
    DetailPane TextArea {
        border: none;
        padding: 0 1;
    }
    DetailPane #context-view {
        padding: 0 1;
    }
    """

    def compose(self) -> ComposeResult:
        yield Static("Select a session.", id="detail-banner", markup=False)
        with TabbedContent(id="detail-tabs"):
            with TabPane("Summary", id="tab-summary"):
                yield TextArea("", read_only=True, soft_wrap=True, id="summary-view", show_line_numbers=False)
            with TabPane("History", id="tab-history"):
                yield TextArea("", read_only=True, soft_wrap=True, id="history-view", show_line_numbers=False)
            with TabPane("Context", id="tab-context"):
                with VerticalScroll():
                    yield Static(Text("Counting…", style="dim"), id="context-view")

    def show_loading(self, title: str) -> None:
        banner = self.query_one("#detail-banner", Static)
        banner.remove_class("-warning")
        banner.update(Text(f"Loading {safe_line(title)}…"))

    def show_problem(self, message: str) -> None:
        banner = self.query_one("#detail-banner", Static)
        banner.add_class("-warning")
        banner.update(Text(safe_text(message)))
        self.query_one("#summary-view", TextArea).load_text("")
        self.query_one("#history-view", TextArea).load_text("")
        self.query_one("#context-view", Static).update(Text("No context: the file cannot be read.", style="dim"))

    def show_detail(self, detail: SessionDetail, stale: list = ()) -> None:
        banner = self.query_one("#detail-banner", Static)
        parts = [safe_line(detail.ref.session_id[:12]), human_size(detail.size), f"{len(detail.transcript.turns)} turns",
                 safe_line(detail.workspace_path or detail.ref.workspace_key)]
        text = " · ".join(parts)
        warnings = [safe_line(w.message) for w in detail.warnings]
        for number, _turn_id, created in stale:
            warnings.append(f"turn {number} has been pending since {safe_line(created or 'an unknown time')}: "
                            "its agent is "
                            "gone; press x to mark it interrupted")
        if detail.size > LARGE_SESSION_BYTES:
            warnings.insert(0, f"large session ({human_size(detail.size)}): resuming it may be slow")
        banner.set_class(bool(warnings), "-warning")
        banner.update(Text(text + ("\n⚠ " + "; ".join(warnings) if warnings else "")))
        session_id = detail.ref.session_id
        self.query_one("#summary-view", TextArea).load_text(clip_long_lines(safe_text(detail.summary_text or ""), session_id))
        self.query_one("#history-view", TextArea).load_text(clip_long_lines(history_text(detail), session_id))

    def show_context(self, result: MeterResult | None, note: str = "",
                     comparisons: list[tuple[int, int, int]] = ()) -> None:
        view = self.query_one("#context-view", Static)
        view.update(context_renderable(result, note, width=view.size.width or 40, comparisons=comparisons))

    def scroll_history_to_end(self) -> None:
        area = self.query_one("#history-view", TextArea)
        area.move_cursor((area.document.line_count - 1, 0))
        area.scroll_end(animate=False)

    def show_tab(self, tab: str) -> None:
        self.query_one("#detail-tabs", TabbedContent).active = tab

    def scroll_summary_to_turn(self, turn_number: int) -> None:
        """Put the rendered summary's `Turn N (` line at the top of the Summary tab."""
        area = self.query_one("#summary-view", TextArea)
        marker = f"Turn {turn_number} ("
        for index, line in enumerate(area.text.split("\n")):
            if line.startswith(marker):
                area.move_cursor((index, 0), center=True)  # the view soft-wraps: scroll by the cursor
                break
        self.query_one("#detail-tabs", TabbedContent).active = "tab-summary"
