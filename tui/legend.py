"""What the marks of the session list mean, in one set of words: the TUI's F1 screen and `reprise
list`'s legend both show these entries, so the two never say different things.

Each entry is a mark and its meaning; `style` names how the TUI draws the mark (the warn colour,
muted), None for plain. The status glyphs are `columns.STATUS_WORDS`' narrow forms (the list's own
cells), the agent letters each source's spec's `mark` (`columns.agent_marks`)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import NamedTuple

from reprise.core.sources.registry import spec_of

from .columns import STATUS_WORDS, agent_marks

PIN_MARK = "★"
NO_TURN_MARK = "·"   # a session without a turn: no status yet


class Entry(NamedTuple):
    mark: str
    meaning: str
    style: str | None = None   # "warn", "muted" or None: how the TUI draws the mark


# The last turn's status, in the order the legend gives them.
STATUS_MEANINGS = {
    "succeeded": "last turn succeeded",
    "failed": "failed",
    "interrupted": "interrupted",
    "max_iterations": "stopped at the step limit",
    "pending": "running, or left pending",
    "problem": "unreadable (the title says why)",
}
PINNED = "pinned"
NO_TURN = "no turn yet"
HIDDEN = "lower case: hidden by the agent's own picker"
DUE = "in the warn colour: deleted by its agent within the week (ctrl+k or `reprise keep ID` keeps a copy)"
SEPARATOR = "  "
NO_BREAK = "\u00a0"   # a space textwrap does not break at


def status_entries() -> list[Entry]:
    """Each status glyph of the list and what it says about the session."""
    return [Entry(PIN_MARK, PINNED)] + [Entry(STATUS_WORDS[status][1], meaning)
                                        for status, meaning in STATUS_MEANINGS.items()] + [Entry(NO_TURN_MARK, NO_TURN)]


def agent_entries(agents: Mapping[str, str]) -> list[Entry]:
    """The letter of each agent (`agents`: name to label, as the sources name themselves), then what lower
    case and the warn colour say of any of them."""
    marks = agent_marks()
    letters = [marks.get(name, name[:1].upper()) for name in agents]
    notes = [note for name in agents if (note := hidden_note(name))]
    hidden = f"{HIDDEN} ({', '.join(notes)})" if notes else HIDDEN
    return ([Entry(letter, label) for letter, label in zip(letters, agents.values(), strict=True)]
            + [Entry(" ".join(letters).lower(), hidden, "muted"), Entry(" ".join(letters), DUE, "warn")])


def hidden_note(name: str) -> str | None:
    """What the agent `name`'s own picker hides (its spec's `hidden_note`), None when it hides nothing."""
    spec = spec_of(name)
    return None if spec is None else spec.hidden_note


def legend(agents: Mapping[str, str]) -> list[Entry]:
    """Every entry: the status glyphs, then the agent letters (`agents`: name to label)."""
    return status_entries() + agent_entries(agents)


def plain_lines(entries: list[Entry], width: int, lead: str = "Marks: ") -> list[str]:
    """The entries as text without styles, `mark meaning`, two spaces apart, wrapped at `width` after
    `lead`: a line breaks between words, never between a mark and its meaning's first word."""
    glued = SEPARATOR.join(f"{entry.mark} {entry.meaning}".replace(" ", NO_BREAK, 1 + entry.mark.count(" "))
                           for entry in entries)
    wrapped = textwrap.wrap(glued, width, initial_indent=lead, subsequent_indent=" " * len(lead),
                            break_long_words=False, break_on_hyphens=False)
    return [line.replace(NO_BREAK, " ") for line in wrapped]
