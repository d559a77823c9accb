"""The detail pane: a banner (the full title, agent, folder, git branch, when, status), then the
Conversation, History and Context tabs of the selected session. It is given finished data (a
SessionDetail, a MeterResult) and only draws it, from the report lines of `tui/reports` (the
ones the CLI prints); all session text goes through `tui/text.py` into widgets that never
interpret markup.

The Conversation tab opens at the newest turn; `v` swaps it for the raw text (Fractal's own
rendered summary, exactly what the meter counts; the whole transcript for other agents), `I`
shows the ids. A search lands with the matching line at the top and the match highlighted."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static, TabbedContent, TabPane, TextArea

from reprise.core.meter import MeterResult
from reprise.core.service import SessionDetail
from reprise.core.session_links import described
from reprise.core.sources.registry import id_argument
from reprise.core.times import parse_time

from ..format import human_size, human_time, local_now, session_folder
from ..reports import Line, line, plain_text
from ..reports.conversation import (
    STATUS_ROLES,
    STATUS_WORDS,
    conversation_blocks,
    full_conversation_lines,
    turn_time,
)
from ..reports.history import history_lines
from ..reports.meter import context_lines
from ..reports.styled import Roles, styled_group, styled_text
from ..text import safe_line, safe_text, short_line
from .end_view import EndView

LARGE_SESSION_BYTES = 10 * 1024 * 1024
DISPLAY_LINE_CHARS = 20_000
TURNS_SHOWN = 200   # the newest turns the Conversation tab draws (more are in the raw view and `reprise show`)
ROLES = ("heading", "muted", "you", "agent", "ok", "warning", "error", "match")


def clip_long_lines(text: str, id_text: str) -> str:
    """Cut lines too long for a text view to wrap quickly (a 10 MB message froze the app);
    the full text stays available from `reprise show`."""
    if len(text) <= DISPLAY_LINE_CHARS:
        return text
    lines = text.split("\n")
    for index, each in enumerate(lines):
        if len(each) > DISPLAY_LINE_CHARS:
            lines[index] = (each[:DISPLAY_LINE_CHARS] + f" … [{len(each) - DISPLAY_LINE_CHARS:,} more characters: "
                            f"reprise show {id_text} prints them all]")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class Landing:
    """Where a search hit opens the conversation: its turn (from 1; 0 for a title hit) and the
    words it matched."""

    turn: int
    words: tuple[str, ...]
    field: str = ""   # the search record's field ("user", "response", "files"...): where in the turn to look


FIELD_MARKS = {"user": ("You: ",), "error": ("Error: ",), "commands": ("  $ ",), "files": ("  read ", "  changed ")}
NEAR_LINE_START = 160   # a match this near the start of its line lands with the whole line on top


def banner_lines(detail: SessionDetail, now: datetime, *, show_ids: bool = False) -> list[Line]:
    """The title in full (the widget wraps it), then agent, folder, git branch, when, the last
    status, size."""
    turns = detail.transcript.turns
    title = detail.title or (short_line(turns[0].user_message, 200) if turns else "") or "(untitled)"
    facts = [detail.agent_label, session_folder(detail.workspace_path, detail.ref.workspace_key)]
    if detail.branch:
        facts.append(f"branch {short_line(detail.branch, 60)}")
    times = [at for at in (turn_time(turn) for turn in turns[-3:]) if at is not None]
    if times:
        facts.append(human_time(max(times), now))
    figures: list[str | tuple[str, str]] = [safe_line(" · ".join(facts))]
    if turns:
        status = turns[-1].status
        figures += [" · ", (STATUS_WORDS.get(status, status), STATUS_ROLES.get(status, ""))]
    figures.append(f" · {len(turns)} turn{'s' if len(turns) != 1 else ''} · {human_size(detail.size)}")
    if show_ids:
        figures.append(f" · {safe_line(detail.ref.session_id)}")
    return [line((safe_line(title), "heading")), line(*figures, style="muted")]


def deletion_note(detail: SessionDetail) -> str:
    return safe_line(detail.deletion or "") + ("; ctrl+k copies it out of reach." if detail.keepable else "")


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
    DetailPane #detail-tabs, DetailPane #detail-tabs > ContentSwitcher, DetailPane TabPane {
        height: 1fr;
    }
    DetailPane #conversation {
        height: 1fr;
        padding: 0 1;
        scrollbar-gutter: stable;   /* the text keeps its width when the scrollbar comes: no reflow after scrolling */
    }
    DetailPane #conversation-from {
        display: none;
    }
    DetailPane #conversation-from.-landed {
        display: block;
    }
    DetailPane #summary-view {
        display: none;
    }
    DetailPane.-raw #summary-view {
        display: block;
    }
    DetailPane.-raw #conversation {
        display: none;
    }
    DetailPane #context-view {
        padding: 0 1;
    }
    DetailPane > .detail--heading { text-style: bold; color: $text; }
    DetailPane > .detail--muted { color: $text-muted; }
    DetailPane > .detail--you { text-style: bold; color: $accent; }
    DetailPane > .detail--agent { text-style: bold; color: $text-primary; }   /* $secondary was dark blue on black */
    DetailPane > .detail--ok { color: $success; }
    DetailPane > .detail--warning { color: $warning; }
    DetailPane > .detail--error { color: $error; }
    DetailPane > .detail--match { background: $warning 50%; color: $text; text-style: bold; }
    """
    COMPONENT_CLASSES = {f"detail--{role}" for role in ROLES}
    BINDINGS = [
        Binding("R", "toggle_raw", "Raw text"),
        Binding("I", "toggle_ids", "Ids"),
    ]

    raw: reactive[bool] = reactive(False)
    show_ids: reactive[bool] = reactive(False)

    def __init__(self, *, id: str | None = None) -> None:   # noqa: A002 (Textual's own name)
        super().__init__(id=id)
        self._detail: SessionDetail | None = None
        self._stale: Sequence[tuple[int, str, str | None]] = ()
        self._now = local_now()
        self._landing: Landing | None = None
        self._awaited: tuple[str, Landing] | None = None   # a landing for a session not drawn yet

    def compose(self) -> ComposeResult:
        yield Static("Select a session.", id="detail-banner", markup=False)
        with TabbedContent(id="detail-tabs"):
            with TabPane("Conversation", id="tab-summary"):
                with EndView(id="conversation"):
                    yield Static("", id="conversation-before", markup=False)
                    yield Static("", id="conversation-from", markup=False)
                yield TextArea("", read_only=True, soft_wrap=True, id="summary-view", show_line_numbers=False)
            with TabPane("History", id="tab-history"):
                yield TextArea("", read_only=True, soft_wrap=True, id="history-view", show_line_numbers=False)
            with TabPane("Context", id="tab-context"):
                with VerticalScroll():
                    yield Static(Text("Counting…", style="dim"), id="context-view")

    def roles(self) -> Roles:
        return {role: self.get_component_rich_style(f"detail--{role}", partial=True) for role in ROLES}

    def show_loading(self, title: str) -> None:
        banner = self.query_one("#detail-banner", Static)
        banner.remove_class("-warning")
        banner.update(Text(f"Loading {safe_line(title)}…"))

    def show_problem(self, message: str) -> None:
        self._detail = None
        banner = self.query_one("#detail-banner", Static)
        banner.add_class("-warning")
        banner.update(Text(safe_text(message)))
        self.query_one("#conversation-before", Static).update("")
        self.query_one("#conversation-from", Static).update("")
        self.query_one("#summary-view", TextArea).load_text("")
        self.query_one("#history-view", TextArea).load_text("")
        self.query_one("#context-view", Static).update(Text("No context: the file cannot be read.", style="dim"))

    def show_detail(self, detail: SessionDetail, stale: Sequence[tuple[int, str, str | None]] = (), *,
                    now: datetime | None = None, landing: Landing | None = None) -> None:
        """Draw a session; the conversation opens at its newest turn, or where `landing` says
        (and stays where the reader scrolled when the same session is drawn again)."""
        if landing is None and self._awaited is not None and self._awaited[0] == str(detail.path):
            landing = self._awaited[1]
        self._awaited = None
        same = (self._detail is not None and self._detail.path == detail.path and landing is None)
        self._detail, self._stale, self._landing = detail, stale, landing
        self._now = now or local_now()
        self._draw_banner()
        session_id = id_argument(detail.ref.source, detail.ref.session_id)
        raw = (safe_text(detail.summary_text) if detail.summary_text is not None
               else plain_text(full_conversation_lines(detail.transcript, detail.agent_label)))
        self.query_one("#summary-view", TextArea).load_text(clip_long_lines(raw, session_id))
        self._draw_history()
        self._draw_conversation(keep_place=same)

    def _draw_banner(self) -> None:
        detail = self._detail
        if detail is None:
            return
        banner = self.query_one("#detail-banner", Static)
        warnings = [safe_line(w.message) for w in detail.warnings]
        for number, _turn_id, created in self._stale:
            since = human_time(parse_time(created), self._now) if parse_time(created) else "an unknown time"
            warnings.append(f"turn {number} started {since} and is still pending: "
                            "its agent is gone; F2 \"Mark interrupted\" marks it so")
        if detail.size > LARGE_SESSION_BYTES:
            warnings.insert(0, f"large session ({human_size(detail.size)}): resuming it may be slow")
        lines = banner_lines(detail, self._now, show_ids=self.show_ids)
        if detail.deletion and detail.deletion_soon:   # a later deletion is said above the conversation
            warnings.insert(0, deletion_note(detail))
        if warnings:
            lines.append(line("⚠ " + "; ".join(warnings), style="warning"))
        banner.set_class(bool(warnings), "-warning")
        text = styled_text(lines, self.roles())
        if self._landing is not None and self._landing.turn == 0 and self._landing.words:   # a title hit
            text.highlight_words(self._landing.words, self.roles()["match"], case_sensitive=False)
        banner.update(text)

    def _draw_history(self) -> None:
        if self._detail is None:
            return
        history = plain_text(history_lines(self._detail.transcript, self._now, show_ids=self.show_ids))
        shown_id = id_argument(self._detail.ref.source, self._detail.ref.session_id)
        self.query_one("#history-view", TextArea).load_text(clip_long_lines(history, shown_id))

    def _draw_conversation(self, *, keep_place: bool = False) -> None:
        """The newest turns (from the landing's turn when it is older), split where the landing's
        match is so that its line can be scrolled to the top."""
        detail = self._detail
        if detail is None:
            return
        transcript = detail.transcript
        landing = self._landing if self._landing is not None and self._landing.turn > 0 else None
        first = max(len(transcript.turns) - TURNS_SHOWN, 0)
        if landing is not None:
            first = min(first, max(landing.turn - 1, 0))
        roles = self.roles()
        lines = [line(safe_line(described(link)), style="muted") for link in detail.links]
        lines += [line(safe_line(note), style="muted") for note in transcript.notes]
        lines += [line(safe_line(refused), style="muted") for refused in detail.refused]   # greyed actions' why
        if detail.deletion and not detail.deletion_soon:
            lines.append(line(deletion_note(detail), style="muted"))
        if first:
            shown_id = safe_line(id_argument(detail.ref.source, detail.ref.session_id))
            lines.append(line(f"Turns 1–{first} are left out here: v shows the raw text, "
                              f"`reprise show {shown_id}` every turn.", style="muted"))
        if not transcript.turns:
            lines.append(line("No turns yet.", style="muted"))
        before = styled_text(lines, roles) if lines else Text()
        after = Text()
        blocks = conversation_blocks(transcript, self._now, detail.agent_label, show_ids=self.show_ids,
                                     whole_turn=landing.turn if landing else None, first=first)
        for block in blocks:
            text = styled_text(block.lines, roles)
            if landing is None or block.number < landing.turn:
                before = _joined(before, text)
            elif block.number > landing.turn:
                after = _joined(after, text)
            else:
                if landing.words:
                    text.highlight_words(landing.words, roles["match"], case_sensitive=False)
                marks = FIELD_MARKS.get(landing.field, ())
                if landing.field == "response":
                    marks = (f"{detail.agent_label}: ",)
                cut = landing_cut(text, landing.words, marks)
                if cut:
                    before = _joined(before, text[:cut - 1])   # its line ends where the landed part starts
                after = _joined(after, text[cut:])
        scroll = self.query_one("#conversation", EndView)
        place = scroll.scroll_y
        self.query_one("#conversation-before", Static).update(before)
        landed = self.query_one("#conversation-from", Static)
        landed.update(after)
        landed.set_class(landing is not None, "-landed")
        if landing is not None:
            scroll.stop_following()
            self.call_after_refresh(self._scroll_to_landed)
        elif keep_place and not scroll.following and place < scroll.max_scroll_y:
            scroll.stop_following()
            self.call_after_refresh(lambda: scroll.scroll_to(y=place, animate=False))
        else:
            scroll.follow_end()   # at the newest turn however late the new text is laid out

    def _scroll_to_landed(self, tries: int = 10) -> None:
        """Put the landed part at the top once it is laid out: a landing drawn while the search
        screen still covers this one is laid out only when this screen shows again."""
        landed = self.query_one("#conversation-from", Static)
        if landed.virtual_region.height == 0 and tries > 0:
            self.call_after_refresh(self._scroll_to_landed, tries - 1)
            return
        self.query_one("#conversation", VerticalScroll).scroll_to_widget(landed, top=True, animate=False)

    def watch_raw(self, raw: bool) -> None:
        focused = self.screen.focused if self.is_mounted else None
        self.set_class(raw, "-raw")
        if focused is not None and focused in (self.query_one("#conversation"), self.query_one("#summary-view")):
            self.query_one("#summary-view" if raw else "#conversation").focus()   # the reader stays in the text

    def watch_show_ids(self) -> None:
        self._draw_banner()
        self._draw_history()
        self._draw_conversation(keep_place=True)

    def action_toggle_raw(self) -> None:
        self.raw = not self.raw
        self.show_tab("tab-summary")

    def action_toggle_ids(self) -> None:
        self.show_ids = not self.show_ids

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

    def land_when_shown(self, path: str, landing: Landing) -> None:
        """Open the conversation of the session at `path` where a search hit is: now when it is the
        one shown, else when it is next drawn."""
        self.raw = False
        self.show_tab("tab-summary")
        if self._detail is not None and str(self._detail.path) == path:
            self._landing, self._awaited = landing, None
            self._draw_banner()
            self._draw_conversation()
        else:
            self._awaited = (path, landing)


def _joined(first: Text, second: Text) -> Text:
    if not first.plain:
        return second
    if not second.plain:
        return first
    return Text("\n").join((first, second))


def landing_cut(text: Text, words: tuple[str, ...], marks: tuple[str, ...]) -> int:
    """Where the landed part starts: the line holding the first of the words, looked for from the
    matched field's mark on (past the turn's heading, so a match in the heading keeps the heading
    on top); at the word itself when its line starts far before it (a long paragraph). 0 when no
    word is found."""
    plain = text.plain.casefold()
    start = plain.find("\n") + 1
    starts = [at for at in (plain.find(mark.casefold(), start) for mark in marks) if at >= 0]
    start = min(starts) if starts else start
    found = [at for at in (plain.find(word.casefold(), start) for word in words if word) if at >= 0]
    if not found:
        return 0
    match = min(found)
    line_start = plain.rfind("\n", 0, match) + 1
    if match - line_start <= NEAR_LINE_START:
        return line_start
    space = plain.rfind(" ", line_start, match)
    return space + 1 if space >= 0 else match
