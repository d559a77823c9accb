"""The detail pane: Summary, History and Context tabs for the selected session. It is given
finished data (a SessionDetail, a MeterResult) and only draws it: the History and Context tabs
show the report lines of `tui/reports` (the ones the CLI prints); all session text goes through
`safe_text` (bodies) or `safe_line` (ids, paths, one-line notes) into widgets that never
interpret markup."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static, TabbedContent, TabPane, TextArea

from reprise.core.meter import MeterResult
from reprise.core.service import SessionDetail

from ..format import human_size
from ..reports import plain_text
from ..reports.conversation import conversation_lines
from ..reports.history import history_lines
from ..reports.meter import context_lines
from ..reports.styled import styled_group
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

    def show_detail(self, detail: SessionDetail, stale: Sequence[tuple[int, str, str | None]] = ()) -> None:
        banner = self.query_one("#detail-banner", Static)
        parts = [safe_line(detail.ref.session_id[:12]), human_size(detail.size),
                 f"{len(detail.transcript.turns)} turns",
                 safe_line(detail.workspace_path or detail.ref.workspace_key)]
        text = " · ".join(parts)
        warnings = [safe_line(w.message) for w in detail.warnings]
        for number, _turn_id, created in stale:
            warnings.append(f"turn {number} has been pending since {safe_line(created or 'an unknown time')}: "
                            "its agent is "
                            "gone; press x to mark it interrupted")
        if detail.size > LARGE_SESSION_BYTES:
            warnings.insert(0, f"large session ({human_size(detail.size)}): resuming it may be slow")
        if detail.deletion:
            deletion = safe_line(detail.deletion) + ("; K copies it out of reach." if detail.keepable else "")
            (warnings.insert(0, deletion) if detail.deletion_soon else parts.append(deletion))
            text = " · ".join(parts)
        banner.set_class(bool(warnings), "-warning")
        banner.update(Text(text + ("\n⚠ " + "; ".join(warnings) if warnings else "")))
        session_id = detail.ref.session_id
        summary = (safe_text(detail.summary_text) if detail.summary_text is not None
                   else plain_text(conversation_lines(detail.transcript, detail.agent_label)))
        self.query_one("#summary-view", TextArea).load_text(clip_long_lines(summary, session_id))
        history = plain_text(history_lines(detail.transcript))
        self.query_one("#history-view", TextArea).load_text(clip_long_lines(history, session_id))

    def show_context(self, result: MeterResult | None, note: str = "",
                     comparisons: Sequence[tuple[int, int, int]] = ()) -> None:
        view = self.query_one("#context-view", Static)
        lines = context_lines(result, note, width=view.size.width or 40, comparisons=comparisons)
        view.update(styled_group(lines))

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
