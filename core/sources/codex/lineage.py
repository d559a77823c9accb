"""A fork made by Codex (`codex exec fork`, `/fork`): its rollout names the session it was forked
from (`session_meta.forked_from_id`) and holds only the turns after the fork, so its conversation
is the parent's history up to the fork, then its own. The parent's records written before the fork
(its lines below `forked_from_ordinal_exclusive`, or, in older rollouts, those dated before the
fork began) are found by id in the store (a chain of forks is followed, a cycle or a missing rollout
stops it), and a note says what was joined, or that the history before the fork is not there.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from .fields import ListingFold
from .records import Record

MAX_DEPTH = 16


@dataclass(slots=True)
class Lineage:
    """The records a fork inherits (oldest ancestor first), and what a reader should know of them."""

    records: list[Record] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ancestors: list[str] = field(default_factory=list)
    turns: int = 0              # the turns inherited
    gap: str | None = None      # why the history before some fork is missing (also among the notes)


def _fold(records: list[Record]) -> ListingFold:
    fold = ListingFold()
    fold.feed(records)
    return fold


def _before_fork(record: Record, ordinal: int | None, moment: str | None) -> bool:
    """Whether a parent's record was written before the fork: its `ordinal` below the fork's
    `forked_from_ordinal_exclusive` (0.171.0), else (older rollouts) its time not after the fork's start."""
    if ordinal is not None and isinstance(record.get("ordinal"), int):
        return bool(record["ordinal"] < ordinal)
    stamp = record.get("timestamp")
    return moment is None or not isinstance(stamp, str) or stamp <= moment


def inherited(records: list[Record], find: Callable[[str], list[Record] | None]) -> Lineage:
    """What the session of `records` inherits from the sessions it was forked from; `find` gives a
    session's records by id, or None when the store has no rollout of it."""
    return inherited_by(_fold(records), find)


def inherited_by(fold: ListingFold, find: Callable[[str], list[Record] | None]) -> Lineage:
    """What the session whose records `fold` was fed inherits (see `inherited`)."""
    lineage = Lineage()
    seen = {fold.session_id}
    parts: list[list[Record]] = []
    while fold.forked_from is not None:
        parent_id, cut, at = fold.forked_from, fold.started_at, fold.forked_at
        if parent_id in seen or len(parts) >= MAX_DEPTH:
            lineage.gap = (f"The chain of forks loops or runs deeper than {MAX_DEPTH} at {parent_id}; "
                           "the history before it is not shown.")
            lineage.notes.append(lineage.gap)
            break
        seen.add(parent_id)
        found = find(parent_id)
        if found is None:
            lineage.gap = (f"Forked by Codex from session {parent_id}, whose rollout is not in the store: the "
                           "conversation before the fork is not shown (and Codex cannot resume this fork without it).")
            lineage.notes.append(lineage.gap)
            break
        before = [record for record in found if _before_fork(record, at, cut)]
        parts.append(before)
        lineage.ancestors.append(parent_id)
        fold = _fold(before)
        turns = fold.turns
        lineage.turns += turns
        lineage.notes.append(f"Forked by Codex from session {parent_id}: its {turns} turn{'s' if turns != 1 else ''} "
                             "before the fork are shown first.")
    for part in reversed(parts):
        lineage.records.extend(part)
    return lineage
