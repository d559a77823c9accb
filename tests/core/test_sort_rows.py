"""The list's sorts: each figure largest or newest first, reversed on request, pins on top either
way, and the old name of a sort still accepted."""

from __future__ import annotations

import pytest

from reprise.core.errors import UsageError
from reprise.core.rows import SessionRow
from reprise.core.service import SORT_ALIASES, SORTS, sort_key, sort_rows


def row(n: int, *, turns=0, size=0, context=0, cost=None, activity=0.0, pinned=False) -> SessionRow:
    return SessionRow("fractal", "w", f"{n:032x}", size, 0, activity, turns, context, None, None, None, cost, None,
                      None, f"/s/{n}.json", pinned=pinned)


ROWS = [row(1, turns=5, size=10, context=300, cost=9_000, activity=30.0),
        row(2, turns=1, size=30, context=100, cost=None, activity=20.0),
        row(3, turns=9, size=20, context=200, cost=4_000, activity=10.0, pinned=True),
        row(4, turns=3, size=40, context=400, cost=7_000, activity=40.0)]
ORDER = {"updated": [3, 4, 1, 2], "turns": [3, 1, 4, 2], "size": [3, 4, 2, 1], "context": [3, 4, 1, 2],
         "next": [3, 1, 4, 2]}


def numbers(rows: list[SessionRow]) -> list[int]:
    return [int(r.file_id, 16) for r in rows]


@pytest.mark.parametrize("sort", SORTS)
def test_each_sort_puts_pins_first_then_the_largest_or_newest_and_reverses(sort):
    rows = list(ROWS)
    sort_rows(rows, sort)
    assert numbers(rows) == ORDER[sort]
    sort_rows(rows, sort, reverse=True)
    assert numbers(rows) == [3, *reversed(ORDER[sort][1:])]   # the pin stays on top


def test_cost_is_the_old_name_of_next_and_unknown_sorts_are_refused():
    assert SORT_ALIASES == {"cost": "next"} and sort_key("cost") == "next" and sort_key("turns") == "turns"
    by_cost, by_next = list(ROWS), list(ROWS)
    sort_rows(by_cost, "cost", reverse=True)
    sort_rows(by_next, "next", reverse=True)
    assert by_cost == by_next
    with pytest.raises(UsageError, match="choose one of updated, turns, size, context, next"):
        sort_key("price")
