"""Resume costs kept in the catalog: the meter's total for the next turn of each session, valid while
the file is the one it was computed on and its cost key (model, counting, AGENTS.md) is unchanged.
Computing one reads and counts the whole session, so a figure outlives a re-read of unchanged bytes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .rows import SessionRow


@dataclass(frozen=True, slots=True)
class CostProgress:
    """How far a fill of resume costs is: `done` of the `total` rows that needed a figure."""

    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.done >= self.total


def in_priority_order(rows: Sequence[SessionRow], first: Iterable[SessionRow]) -> list[SessionRow]:
    """`rows` with those of `first` (the rows on screen) ahead, in the order `first` gives; each row once."""
    ahead = {id(row) for row in rows}
    front = []
    for row in first:
        if id(row) in ahead:
            front.append(row)
            ahead.discard(id(row))
    return front + [row for row in rows if id(row) in ahead]


def carry_resume_cost(row: SessionRow, old: SessionRow | None) -> None:
    """A re-read file whose bytes did not change keeps the resume cost computed on them."""
    if old is not None and old.content_digest is not None and old.content_digest == row.content_digest:
        row.resume_cost, row.resume_cost_key = old.resume_cost, old.resume_cost_key


def store_resume_costs(db: sqlite3.Connection, rows: Iterable[SessionRow]) -> None:
    """Store each row's resume cost and cost key, only where the file is still the one the row read
    (inside the caller's transaction)."""
    db.executemany("UPDATE files SET resume_cost = ?, resume_cost_key = ? "
                   "WHERE source = ? AND grp = ? AND file_id = ? AND size = ? AND mtime_ns = ?",
                   [(row.resume_cost, row.resume_cost_key, row.source, row.group, row.file_id, row.size,
                     row.mtime_ns) for row in rows])
