"""Search hits for people, grouped by session (newest session first, as the search finds them), a
few hits each and "N more": what `reprise search` prints (a session as soon as the search is past
it, `HitPrinter`) and the search screen lists.
Each session says its agent, folder and age as the session list does; each hit shows the stretch
of its text the width holds, centred on the matched words. A hit on a session's title (turn 0,
field `title`) says "title", never "turn 0"."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reprise.core.rows import SessionRow
from reprise.core.search_index import SearchHit
from reprise.core.search_snippet import char_cells
from reprise.core.sources.registry import short_id

if TYPE_CHECKING:
    from reprise.core.search_engine import SearchUpdate
    from reprise.core.service import Service

from ..columns import agent_mark, cell
from ..text import clipped, safe_line
from . import Line, line

HITS_PER_SESSION = 3
FIELD_NAMES = {"user": "prompt", "response": "reply", "tool": "tool call"}


@dataclass(slots=True)
class HitGroup:
    """One session's hits, in order (its title, then by turn)."""

    hits: list[SearchHit]

    @property
    def row(self) -> SessionRow:
        return self.hits[0].row


def grouped(hits: list[SearchHit]) -> list[HitGroup]:
    """The hits by session, each session where its first hit is."""
    groups: dict[str, HitGroup] = {}
    for hit in hits:
        group = groups.get(hit.row.path)
        if group is None:
            groups[hit.row.path] = HitGroup([hit])
        else:
            group.hits.append(hit)
    return list(groups.values())


def where(hit: SearchHit) -> str:
    """Which text matched: "title", or "turn 30 reply"."""
    if hit.turn == 0 and hit.field == "title":
        return "title"
    field = FIELD_NAMES.get(hit.field, hit.field)
    return f"turn {hit.turn} {field}" if hit.turn else field


def shown_cells(ch: str) -> int:
    """The terminal cells a character of a snippet takes as shown (a control character escaped)."""
    return sum(char_cells(each) for each in safe_line(ch))


def snippet_pieces(hit: SearchHit, width: int, cells: Callable[[str], int] = shown_cells) -> list[tuple[str, bool]]:
    """The hit's text on one line, `width` cells wide at most, centred on the matched words, an
    ellipsis where text is left out, each piece made safe: (text, is a match)."""
    return [(safe_line(text), matched) for text, matched in hit.excerpt.around(width, cells).pieces()]


def snippet_text(hit: SearchHit, width: int) -> str:
    """The snippet on one line with the matches in [brackets], the brackets within the width."""
    shown = hit.excerpt.around(width, shown_cells)
    if shown.spans:
        shown = hit.excerpt.around(width - 2 * len(shown.spans), shown_cells)
    return "".join(f"[{safe_line(text)}]" if matched else safe_line(text) for text, matched in shown.pieces())


def session_facts(row: SessionRow, now: float) -> tuple[str, str, str]:
    """The agent's letter, the folder and the age of a session, as the session list shows them."""
    return agent_mark(row), cell("folder", row, False, now, 20)[0], cell("updated", row, False, now, 8)[0]


def hits_phrase(count: int) -> str:
    return f"{count} hit{'s' if count != 1 else ''}"


def sessions_phrase(hits: list[SearchHit]) -> str:
    groups = len({hit.row.path for hit in hits})
    return (f"{len(hits)} matching turn{'s' if len(hits) != 1 else ''} "
            f"in {groups} session{'s' if groups != 1 else ''}")


def group_lines(group: HitGroup, *, per_session: int = HITS_PER_SESSION, width: int = 100,
                now: float) -> list[Line]:
    """One session's heading (id, agent, title, its number of hits, folder and age), its first hits
    and "… N more in this session"."""
    row = group.row
    count = len(group.hits)
    agent, folder, age = session_facts(row, now)
    facts = f"  ({hits_phrase(count)}) · {folder} · {age}"
    lines = [line((clipped(short_id(row.source, row.id), 9).ljust(9), ""), f"  {agent} ",
                  (clipped(row.display_title, max(width - 13 - len(facts), 20)), "bold"), (facts, "dim"))]
    for hit in group.hits[:per_session]:
        place = where(hit)
        lines.append(line(f"  {place:17} {snippet_text(hit, max(width - 20, 20))}"))
    if count > per_session:
        lines.append(line(f"  … {count - per_session} more in this session "
                          f"(`reprise search --json` lists every hit)", style="dim"))
    return lines


def total_line(hits: list[SearchHit], limit: int | None) -> Line:
    """The count of hits and sessions, and whether the limit cut the list."""
    total = sessions_phrase(hits)
    if limit is not None and len(hits) >= limit:
        total += f" (the first {limit}: --limit shows more)"
    return line(total)


def search_lines(hits: list[SearchHit], *, limit: int | None = None, per_session: int = HITS_PER_SESSION,
                 width: int = 100, now: float | None = None) -> list[Line]:
    """`reprise search` at once: each session's lines (`group_lines`), then the count. Ages are
    counted from `now` (the clock's time when not given)."""
    now = time.time() if now is None else now
    lines = [each for group in grouped(hits) for each in group_lines(group, per_session=per_session, width=width,
                                                                      now=now)]
    return [*lines, total_line(hits, limit)]


class HitPrinter:
    """`reprise search` as the hits come: a session's lines once the search is past it (its hits are
    all in: they come newest session first, each session's together), the count and the notes at
    the end. Each session is named by its title: its details are loaded as it is printed."""

    def __init__(self, service: Service, *, limit: int, width: int, now: float):
        self.service = service
        self.limit = limit
        self.width = width
        self.now = now
        self.printed = 0   # sessions printed

    def ready(self, hits: list[SearchHit], complete: bool) -> list[Line]:
        """The lines of the sessions not printed yet whose hits are all in (all of them once complete)."""
        groups = grouped(hits)
        done = groups[self.printed:] if complete else groups[self.printed:-1]
        if not done:
            return []
        self.printed += len(done)
        self.service.load_details([hit.row for group in done for hit in group.hits])
        return [each for group in done for each in group_lines(group, width=self.width, now=self.now)]

    def closing_lines(self, hits: list[SearchHit], update: SearchUpdate | None) -> list[Line]:
        """The count, then what the search could not look at: outputs cut for the index, unreadable files."""
        lines = [total_line(hits, self.limit)]
        if update is not None:
            note = update.cut_note
            if note:
                lines.append(line(f"Note: {note}.", style="dim"))
            lines += [line(f"Could not search {safe_line(problem.path)}: {safe_line(problem.message)}", style="yellow")
                      for problem in update.problems]
        return lines
