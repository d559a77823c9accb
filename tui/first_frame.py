"""The main screen's first frame (the browse screen's, or a picker's: `reprise pick`, `reprise
resume` without an id), written to the terminal from the catalog's stored rows before Textual is
imported. Importing Textual and building the app takes longer than everything before it, so a
warm start shows its rows in half the time this way.

The frame is the screen's own, cell for cell, wherever it can be known without Textual: the
header (`header_lines`), a picker's filter prompt, the list's column titles and rows (`list_rows`)
in the list's width, the cursor on the first row, in the default theme's colours; the preview, the
meter line and the footer are blank in their colours. Textual's first frame then replaces it; a test compares the
two. Of the terminal's modes only echo is turned off while the frame waits (keys typed are kept
for the app, not drawn over the frame), and the modes are put back before the app starts (Textual
changes them then); they are noted, to be put back should the process end by a signal before the
app takes the signals."""

from __future__ import annotations

import contextlib
import os
import signal
import termios
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.color import Color, ColorSystem

from reprise.core.rows import SessionRow
from reprise.core.service import Service, sort_rows

from .header_lines import LOADING, PICK_PROMPT, HeaderState, header_parts
from .list_rows import MARK, NARROW_COLUMNS, header_text, list_layout, row_parts

SMALLEST = (40, 8)        # a terminal smaller than this gets no first frame (the list pane's own minimum width)
SORT = "updated"          # the sort a start shows

Look = tuple[str | None, str, bool]   # foreground, background (hex), bold
Line = list[tuple[str, Look]]


# The default theme's colours (textual-dark) as the app draws these parts: `test_first_frame` checks
# each against the app's own first frame.
FOREGROUND = "#e0e0e0"
HEADER_BG = "#1b1b1b"     # $boost over $background
LIST_BG = "#1e1e1e"       # $surface
COLUMNS_LOOK: Look = ("#a0a0a0", "#121212", True)
CURSOR_LOOK: Look = ("#ddedf9", "#0178d4", True)
PICK_CURSOR_LOOK: Look = (FOREGROUND, "#124266", True)   # a list without the focus (a picker's filter has it)
PROMPT_CURSOR: Look = ("#121212", FOREGROUND, False)     # the filter's cursor, on its placeholder's first cell
PROMPT_LOOK: Look = ("#717171", HEADER_BG, False)        # its placeholder
TRACK_BG = "#000000"      # the scrollbar's gutter
PANEL_BG = "#242f38"      # the meter line and the footer
HEADER_STYLES = {          # Rich's style names in `header_lines`, as the app's terminal colours draw them
    "": (FOREGROUND, False), "bold": (FOREGROUND, True), "bold cyan": ("#58d1eb", True), "dim": ("#9d9d9d", False),
    "yellow": ("#fd971f", False), "bold yellow": ("#fd971f", True), "green": ("#98e024", False),
    "red": ("#f4005f", False),
}
MARK_COLOURS = {"success": "#4ebf71", "error": "#b93c5b", "warning": "#fea62b", "accent": "#fea62b",
                "muted": "#c4c5b5"}   # no `muted` theme variable: the list draws it in ANSI white
PART_LOOKS = {"problem": ("#b93c5b", False), "warn": ("#fea62b", True), "over": ("#b93c5b", True),
              "muted": ("#a5a5a5", False)}   # $text-muted: the foreground at 60% over the surface


@dataclass(frozen=True, slots=True)
class Geometry:
    """Where the screen's parts stand in a terminal this size: the list's width, its first row's
    line and how many rows it shows (the rest of the body is the preview's)."""

    width: int
    height: int
    list_width: int
    rows: int
    preview: str | None   # "right", "below" or None (narrow, the preview waiting for ctrl+e)

    @property
    def content_width(self) -> int:
        return max(self.list_width - 2, 0)   # the scrollbar's gutter takes two


def geometry(width: int, height: int, preview_when_narrow: bool) -> Geometry | None:
    """The main screen's layout (app.tcss: a 3fr list beside a 2fr preview from 100 columns, else the
    list alone or above the preview, each half the body) for a browse screen with no turn running
    and the composer closed, or a picker; None for a terminal too small to draw."""
    if width < SMALLEST[0] or height < SMALLEST[1]:
        return None
    body = height - 4   # two header lines above; the meter line and the footer below (a picker: its
    # filter prompt above, the footer alone below)
    if width >= NARROW_COLUMNS:
        return Geometry(width, height, width * 3 // 5, body - 1, "right")
    if preview_when_narrow:
        return Geometry(width, height, width, body // 2 - 1, "below")
    return Geometry(width, height, width, body - 1, None)


def view(service: Service, rows: list[SessionRow]) -> tuple[list[SessionRow], int]:
    """The rows the list shows at the start, in its order, and how many the agents' own pickers
    hide that are left out (the screen's `apply_view` with no filter and its first sort)."""
    shown = list(rows)
    hidden = 0
    if not service.ui_choices().show_agent_hidden:
        shown = [row for row in rows if not row.hidden_by_agent]
        hidden = len(rows) - len(shown)
    sort_rows(shown, SORT)
    return shown, hidden


def frame(service: Service, rows: list[SessionRow], shape: Geometry, now: float, *,
          picking: bool = False) -> list[Line]:
    """The first frame, line by line, each line's parts with their looks (`picking`: a picker's)."""
    shown, hidden = view(service, rows)
    state = HeaderState(f"workspace {service.workspace}", str(service.state_root), len(shown), len(rows),
                        LOADING, SORT, hidden=hidden, problems=sum(1 for row in rows if row.problem_code),
                        picking=picking)
    edge = (" ", (None, HEADER_BG, False))
    lines: list[Line] = [[edge, *_fit([(text, _header_look(style)) for text, style in parts], shape.width - 2, True),
                          edge] for parts in header_parts(state)]
    if picking:   # the filter prompt, its cursor on the placeholder's first cell
        prompt = _fit([(PICK_PROMPT[:1], PROMPT_CURSOR), (PICK_PROMPT[1:], PROMPT_LOOK)], shape.width - 2, False,
                      pad=(FOREGROUND, HEADER_BG, False))
        lines.append([edge, *prompt, edge])
    cursor_look = PICK_CURSOR_LOOK if picking else CURSOR_LOOK
    show_agent = len(service.sources) > 1
    content = shape.content_width
    titles = header_text(content, SORT, show_agent)   # the list is 40 columns or wider (SMALLEST)
    beside = [(" " * (shape.width - shape.list_width), (None, LIST_BG, False))] if shape.preview == "right" else []
    padding = (" ", (None, COLUMNS_LOOK[1], False))
    lines.append([*_fit([(titles, COLUMNS_LOOK)], shape.list_width - 1, False), padding, *beside])
    layout = list_layout(content, SORT, show_agent=show_agent)
    gutter = (" " * (shape.list_width - content), (None, TRACK_BG, False))
    for index in range(shape.rows):
        if index < len(shown):
            cursor = index == 0
            parts = [(text, _row_look(name, cursor_look if cursor else None))
                     for text, name in row_parts(shown[index], layout, now, show_agent)]
            line = _fit(parts, content, False, pad=cursor_look if cursor else (FOREGROUND, LIST_BG, False))
        else:
            line = [(" " * content, (None, LIST_BG, False))]
        lines.append([*line, gutter, *beside])
    below = 1 if picking else 2   # the footer; the browse screen's meter line above it
    while len(lines) < shape.height - below:   # the preview below the list
        lines.append([(" " * shape.width, (None, LIST_BG, False))])
    return lines + [[(" " * shape.width, (None, PANEL_BG, False))]] * below


def _header_look(style: str) -> Look:
    colour, bold = HEADER_STYLES.get(style, (FOREGROUND, False))
    return colour, HEADER_BG, bold


def _row_look(name: str, cursor: Look | None) -> Look:
    """A row part's look: the cursor's row (`cursor`: its look) is in one colour but for its status
    mark and a coloured part (the colour taken, the row's bold kept)."""
    if name.startswith(MARK):
        colour, bold = MARK_COLOURS.get(name.removeprefix(MARK), FOREGROUND), True
    else:
        colour, bold = PART_LOOKS.get(name, (FOREGROUND, False))
    if cursor is not None:
        return (colour if name else cursor[0]), cursor[1], True
    return colour, LIST_BG, bold


def _fit(parts: Line, width: int, ellipsis: bool, pad: Look | None = None) -> Line:
    """The parts cut to `width` cells (with "…" in the last cell, as Rich truncates, if `ellipsis`),
    or padded to it in `pad`'s look (the first part's background when not given)."""
    fitted: Line = []
    used = 0
    total = sum(cell_len(text) for text, _ in parts)
    room = width - 1 if ellipsis and total > width else width
    for text, look in parts:
        size = cell_len(text)
        if used + size > room:
            fitted.append((set_cell_size(text, room - used), look))
            used = room
            break
        fitted.append((text, look))
        used += size
    if used < width:
        if ellipsis and total > width:
            fitted.append(("…", fitted[-1][1] if fitted else (FOREGROUND, LIST_BG, False)))
        else:
            fill = pad or (None, parts[0][1][1] if parts else LIST_BG, False)
            fitted.append((" " * (width - used), fill))
    return fitted


def encoded(lines: list[Line], colours: Callable[[Look], str]) -> bytes:
    """The frame as the terminal's bytes: into the alternate screen, the cursor hidden, each line
    placed at its row (nothing is left to wrapping)."""
    out = ["\x1b[?1049h\x1b[?25l\x1b[H"]
    for row, line in enumerate(lines):
        out.append(f"\x1b[{row + 1};1H")
        for text, look in line:
            out.append(colours(look) + text)
        out.append("\x1b[0m")
    return "".join(out).encode("utf-8", "replace")


def sgr(system: ColorSystem | None) -> Callable[[Look], str]:
    """The escape that sets a look, in the colours this terminal takes (as Rich downgrades them)."""
    cache: dict[Look, str] = {}

    def colours(look: Look) -> str:
        found = cache.get(look)
        if found is None:
            fg, bg, bold = look
            codes = ["0", *(["1"] if bold else [])]
            if system is not None:
                if fg is not None:
                    codes += Color.parse(fg).downgrade(system).get_ansi_codes(foreground=True)
                codes += Color.parse(bg).downgrade(system).get_ansi_codes(foreground=False)
            found = cache[look] = f"\x1b[{';'.join(codes)}m"
        return found

    return colours


def colour_system(env: dict[str, str] | os._Environ[str]) -> ColorSystem | None:
    """What Textual and Rich would use: none where NO_COLOR is set (even empty), 24-bit where
    COLORTERM says so, else by TERM's last part (256 colours for `-256color` and `-kitty`)."""
    if "NO_COLOR" in env:
        return None
    if env.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return ColorSystem.TRUECOLOR
    suffix = env.get("TERM", "").rsplit("-", 1)[-1]
    return ColorSystem.EIGHT_BIT if suffix in ("256color", "kitty") else ColorSystem.STANDARD


class Shown:
    """A first frame on the terminal until the app has ended. While it is the only thing on screen,
    keys typed are not echoed over it (they wait, unread, for the app: its filter or its list).
    A SIGTERM or SIGHUP before the app takes the signals (and after it gives them back) first gives
    the terminal back: out of the alternate screen, the cursor shown, its modes as they were before
    the frame (Textual's driver may have changed them already)."""

    SIGNALS = (signal.SIGTERM, signal.SIGHUP)

    def __init__(self, fd: int):
        self.fd = fd
        self._modes: list[Any] | None = None
        with contextlib.suppress(OSError, termios.error):
            self._modes = termios.tcgetattr(0)
            quiet = list(self._modes)
            quiet[3] &= ~termios.ECHO
            termios.tcsetattr(0, termios.TCSANOW, quiet)
        self._previous: dict[int, Any] = {}
        if threading.current_thread() is threading.main_thread():   # only there can signals be taken
            for sig in self.SIGNALS:
                if signal.getsignal(sig) is signal.SIG_DFL:   # a handler of the embedding program's is kept
                    self._previous[sig] = signal.signal(sig, self._ended)

    def _ended(self, signum: int, _frame: object) -> None:
        self.withdraw()
        os.kill(os.getpid(), signum)   # its default action now: the process ends with the signal

    def app_starts(self) -> None:
        """The terminal's modes as they were before the frame, echo on again, for the app to take:
        Textual notes them as it starts and puts them back at its end."""
        if self._modes is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(0, termios.TCSANOW, self._modes)

    def hand_over(self) -> None:
        """The signals go back to what they were (the app has ended, or a handoff follows)."""
        for sig, previous in self._previous.items():
            with contextlib.suppress(ValueError):
                signal.signal(sig, previous)
        self._previous.clear()

    def withdraw(self) -> None:
        """The app did not start or did not end as it should: the terminal given back as it was
        before the frame, the signals too."""
        self.hand_over()
        with contextlib.suppress(OSError):
            os.write(self.fd, b"\x1b[0m\x1b[?25h\x1b[?1049l")
        if self._modes is not None:
            with contextlib.suppress(OSError, termios.error):
                termios.tcsetattr(0, termios.TCSADRAIN, self._modes)


def paint(service: Service, rows: list[SessionRow], fd: int = 1, *, picking: bool = False) -> Shown | None:
    """Write the first frame (`picking`: a picker's) to `fd` when it is a terminal that Textual will
    take over (not a dumb one) and there are rows to show (a start before any listing has none)."""
    term = os.environ.get("TERM", "")
    if not rows or not term or term == "dumb" or not os.isatty(fd) or not os.isatty(0):
        return None
    try:
        size = os.get_terminal_size(fd)
    except OSError:
        return None
    shape = geometry(size.columns, size.lines, service.ui_choices().preview_when_narrow)
    if shape is None:
        return None
    data = encoded(frame(service, rows, shape, time.time(), picking=picking), sgr(colour_system(os.environ)))
    shown = Shown(fd)
    try:
        while data:
            data = data[os.write(fd, data):]
    except BaseException as exc:   # a full or closed terminal, ctrl+c while it writes
        shown.withdraw()
        if isinstance(exc, OSError):
            return None
        raise
    return shown
