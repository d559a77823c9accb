"""How far a long read is (a cold listing, the first search's indexing), for whoever shows it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Progress:
    """`done` of `total` sessions, and what is being done to them ("reading", "indexing")."""

    doing: str
    done: int
    total: int

    @property
    def finished(self) -> bool:
        return self.done >= self.total


ProgressSink = Callable[[Progress], object]


def no_progress(_: Progress) -> None:
    """The sink of a caller that shows nothing."""
