"""The session list's columns, shared by the TUI's list and `reprise list`: each figure in a wide
and a narrow form, and the order in which they give way as the width shrinks.

The title gets the width first, at every size: it has its goal (40 characters) before any column
but the sorted one, and more only once every column fits in its wide form, so its width never
shrinks as the line widens. The columns fill what the title leaves, in the fewest give-way steps
that fit; what they leave over (less than the next column to come back) is blank after the title.

The sorted column never gives way (it may narrow), and its title carries ▼ (largest or newest
first) or ▲ (reversed). Cells are plain text with a style name ("warn", "over", "muted" or
None) that the caller maps to its own styles."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath

from rich.cells import cell_len, set_cell_size

from reprise.core.rows import SessionRow
from reprise.core.service import activity_time
from reprise.core.sources.registry import registry
from reprise.core.sources.spec import SourceSpec
from reprise.core.sources.workspaces import unmapped_group_name

from .format import human_size, relative_time
from .text import clipped, safe_line

SORTED_MARK, REVERSED_MARK = "▼", "▲"
TITLE_GOAL = 40            # the title width the columns give way for
TITLE_MIN = 8
SUFFIX_MAX = 16            # a parenthesized suffix this short is kept when a title is cut


def agent_marks() -> Mapping[str, str]:
    """The agent column's letter of each registered source, by name: its spec's `mark`."""
    return _marks_of(registry().specs)


@cache
def _marks_of(specs: tuple[SourceSpec, ...]) -> Mapping[str, str]:
    return {spec.name: spec.mark for spec in specs}


def agent_mark(row: SessionRow) -> str:
    """The agent column of a row: its source's letter (the name's first letter for a source that is not
    registered), lower case for a session the agent's own picker hides."""
    mark = agent_marks().get(row.source) or (row.source[:1].upper() or "?")
    return mark.lower() if row.hidden_by_agent else mark


@dataclass(frozen=True, slots=True)
class Column:
    key: str           # the column's name; a sort key when it shows that sort's figure
    title: str
    wide: int
    narrow: int = 0    # the narrow form's width; 0 when the column has none
    narrow_title: str = ""
    align: str = "right"

    def width(self, narrow: bool) -> int:
        return self.narrow if narrow else self.wide

    def heading(self, narrow: bool) -> str:
        return self.narrow_title if narrow and self.narrow_title else self.title


# In the order they stand on a line, after the title.
COLUMNS = {
    "folder": Column("folder", "FOLDER", 20, 14, align="left"),
    "branch": Column("branch", "BRANCH", 14, align="left"),
    "status": Column("status", "STATUS", 11, 2, "ST", align="left"),
    "updated": Column("updated", "ACTIVE", 8, 5, "LAST"),
    "turns": Column("turns", "TURNS", 6),
    "size": Column("size", "SIZE", 9, 5),
    "context": Column("context", "CONTEXT", 8),
    "next": Column("next", "NEXT", 9, 5),
}
# What gives way first, as the width shrinks: ("narrow" | "drop", column).
GIVE_WAY = (
    ("drop", "context"), ("drop", "branch"), ("narrow", "updated"), ("narrow", "size"), ("narrow", "status"),
    ("narrow", "folder"), ("drop", "turns"), ("narrow", "next"), ("drop", "size"), ("drop", "status"),
    ("drop", "updated"), ("drop", "next"), ("drop", "folder"),
)   # the folder column, where there is one, goes last: it is what tells the rows of two projects apart


@dataclass(frozen=True, slots=True)
class Layout:
    """Which columns a line of this width shows, in which form, and what is left for the title."""

    title_width: int
    columns: tuple[tuple[Column, bool], ...]   # (column, narrow) in line order
    sort: str
    reverse: bool
    gap: int = 0   # blank cells after the title: what the columns leave over

    def title_cell(self, label: str) -> str:
        """The title's cells: `label` (already `title_width` wide) and the gap after it."""
        return label + " " * self.gap

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(column.key for column, _ in self.columns)

    def header(self) -> list[str]:
        """Each column's title, padded to its width; the sorted one marked."""
        cells = []
        for column, narrow in self.columns:
            label = column.heading(narrow)
            if column.key == self.sort:
                label += REVERSED_MARK if self.reverse else SORTED_MARK
            width = column.width(narrow)
            cells.append(label.ljust(width) if column.align == "left" else label.rjust(width))
        return cells


def layout(width: int, *, sort: str, reverse: bool = False, fixed: int = 0,
           wanted: Iterable[str] = ("updated", "turns", "size", "context", "next")) -> Layout:
    """The columns of `wanted` that fit beside the title's width (`title_goal`) in a line of `width`
    (`fixed` cells are the marks or the id before the title), each followed by one space."""
    keys = [key for key in COLUMNS if key in set(wanted)]
    narrow: set[str] = set()
    room = max(width - fixed, 0)
    title = title_goal(room, keys, sort)

    def used() -> int:
        return sum(COLUMNS[key].width(key in narrow) + 1 for key in keys)

    for step, key in GIVE_WAY:
        if room - used() >= title:
            break
        if key not in keys:
            continue
        if step == "narrow" and COLUMNS[key].narrow:
            narrow.add(key)
        elif step == "drop" and key != sort:
            keys.remove(key)
    return Layout(title, tuple((COLUMNS[key], key in narrow) for key in keys), sort, reverse,
                  max(room - title - used(), 0))


def title_goal(room: int, keys: Iterable[str], sort: str) -> int:
    """The title's width in `room` cells: all of it but the sorted column's narrow form, up to
    TITLE_GOAL; past that, what every column in its wide form leaves. It never shrinks as the room
    grows (a column that comes back takes the blank the title left, never the title's cells)."""
    keys = list(keys)
    sorted_column = COLUMNS[sort] if sort in keys else None
    least = (sorted_column.width(bool(sorted_column.narrow)) + 1) if sorted_column else 0
    every = sum(COLUMNS[key].wide + 1 for key in keys)
    return max(TITLE_MIN, min(TITLE_GOAL, room - least), room - every)


# --- the cells -------------------------------------------------------------------------------

def short_age(seconds: float) -> str:
    """`relative_time` without " ago": "now", "5m", "2h", "3d"."""
    return relative_time(seconds).removesuffix(" ago")


def short_size(size: int) -> str:
    """A size in at most four characters: "512B", "8.5K", "41K", "1.2M"."""
    if size < 0:
        return "?"
    value = float(size)
    for unit in ("B", "K", "M", "G"):
        if value < 999.5 or unit == "G":
            if unit == "B":
                return f"{int(value)}B"
            return f"{value:.1f}{unit}" if value < 9.95 else f"{value:.0f}{unit}"
        value /= 1024
    return f"{size}B"


def short_tokens(count: int) -> str:
    """A token count in at most four characters: "850", "8.5k", "41k", "1.2M"."""
    if count < 1000:
        return str(count)
    value = count / 1000
    if value < 9.95:
        return f"{value:.1f}k"
    if value < 999.5:
        return f"{value:.0f}k"
    value /= 1000
    return f"{value:.1f}M" if value < 9.95 else f"{value:.0f}M"


def unmapped_folder_name(row: SessionRow) -> str | None:
    """The agent's own name for a row's folder that its map does not name (a Gemini CLI project's slug
    and root, as its unknown folder's key holds it); None for a row with a folder, or none to say."""
    return None if row.folder is not None else unmapped_group_name(row.workspace_key)


def folder_label(folder: str | None, width: int) -> str:
    """A folder's last path parts that fit the width ("code/reprise", else "reprise"), never a key."""
    if not folder:
        return "?"
    parts = PurePath(folder).parts
    shown = parts[-1] if parts else folder
    for start in range(len(parts) - 2, max(len(parts) - 4, 0), -1):
        longer = "/".join(parts[start:])
        if len(safe_line(longer)) > width:
            break
        shown = longer
    return clipped(shown, width)


def title_label(title: str, width: int) -> str:
    """The title in exactly `width` terminal cells (a wide character takes two), cut with an
    ellipsis; a short suffix in parentheses ("(trimmed)", the mark a fork's title carries) is kept,
    so that a fork and its original still differ when both are cut."""
    limit = 2 * width + SUFFIX_MAX   # every character takes a cell or more: the rest cannot show
    line = safe_line(title if len(title) <= limit else title[:limit] + title[-SUFFIX_MAX:])
    if cell_len(line) <= width:
        return set_cell_size(line, width)
    opening = line.rfind(" (", max(len(line) - SUFFIX_MAX, 0))
    suffix = line[opening:] if line.endswith(")") and opening > 0 else ""
    if width - cell_len(suffix) < TITLE_MIN:
        suffix = ""
    head = width - cell_len(suffix) - 1
    return set_cell_size(line[:opening] if suffix else line, head) + "…" + suffix


def next_state(row: SessionRow) -> str | None:
    """The meter's own rule (ok, warn, over) for the row's next turn, when its window is known."""
    if row.resume_cost is None or row.limit is None:
        return None
    return row.limit.state(row.resume_cost)


def cell(key: str, row: SessionRow, narrow: bool, now: float, width: int, *,
         uncounted: str = "…") -> tuple[str, str | None]:
    """One column's text for a row (at most `width` characters) and its style name; `uncounted`
    stands for a next turn not counted yet ("…" where it is being counted, else "-")."""
    text: str
    style: str | None = None
    if key == "folder":
        unmapped = unmapped_folder_name(row)
        return (folder_label(row.folder, width) if unmapped is None else clipped(f"?{unmapped}", width)), None
    if key == "branch":
        return clipped(row.fields.branch or "-", width), None
    if key == "status":
        status = "problem" if row.problem_code else "pending" if row.fields.pending else row.fields.last_status
        return (STATUS_WORDS.get(status or "", ("-", "-"))[1 if narrow else 0])[:width], None
    if key == "updated":
        age = now - activity_time(row)
        text = short_age(age) if narrow else relative_time(age)
    elif key == "turns":
        text = "-" if row.problem_code else str(row.turns)
    elif key == "size":
        text = short_size(row.size) if narrow else human_size(row.size)
    elif key == "context":
        text = short_tokens(row.context_tokens) if row.context_tokens else "-"
    elif key == "next":
        text, style = _next_cell(row, narrow, uncounted, width)
    else:
        raise KeyError(key)
    return text[-width:], style


STATUS_WORDS = {
    "succeeded": ("succeeded", "✓"), "failed": ("failed", "✗"), "interrupted": ("interrupted", "‖"),
    "max_iterations": ("max turns", "↻"), "pending": ("running", "…"), "problem": ("PROBLEM", "!"),
}


def _next_cell(row: SessionRow, narrow: bool, uncounted: str, width: int) -> tuple[str, str | None]:
    """The next turn's tokens, and their share of the window where it is known and fits: a figure
    is never cut (`2.1M 1255%` is `2.1M`, never `.1M 1255%`)."""
    if row.resume_cost is None:
        return ("-" if row.problem_code or row.limit is None else uncounted), "muted"
    state = next_state(row)
    style = state if state in ("warn", "over") else None
    figure = short_tokens(row.resume_cost)
    share = None if row.limit is None else row.limit.share(row.resume_cost)
    if narrow or share is None:   # no window known for the model: the figure alone
        return figure, style
    both = f"{figure} {round(100 * share)}%"
    return (both if len(both) <= width else figure), style
