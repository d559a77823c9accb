"""Resume costs kept in the catalog: the meter's total for the next turn of each session, valid while
the file is the one it was computed on and its cost key (model, counting, AGENTS.md) is unchanged.
Computing one reads and counts the whole session, so a figure outlives a re-read of unchanged bytes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from .rows import SessionRow


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
