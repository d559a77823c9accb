"""The meter tells the truth: on a 0-, 5- and 60-turn session, with a short message and a
14,000-character one, `reprise meter` is within 1% of the first request a real Fractal turn
sends (counted with o200k_base and OpenAI's chat framing)."""

from __future__ import annotations

import pytest

from reprise.core.config import DEFAULT_OVERHEAD

from . import meter_compare

pytestmark = [pytest.mark.compat, pytest.mark.slow]


def test_the_meter_is_within_one_percent_of_what_a_live_fractal_turn_sends(fractal, live):
    rows = meter_compare.measure(fractal, live)
    print("\n" + meter_compare.table(rows))
    assert [(row.turns, row.message_chars > 10_000) for row in rows] == [
        (0, False), (0, True), (5, False), (5, True), (60, False), (60, True)]
    for row in rows:
        assert abs(row.gap) < 0.01, f"{row}: the meter is {row.gap:+.2%} off the real request"
    # the long draft reaches the prompt in full: the real request grows by more than its length in tokens
    assert rows[1].real - rows[0].real > 2_500
    # the configured overhead is the fixed text measured on the 0-turn short-message turn
    assert abs(rows[0].fixed - DEFAULT_OVERHEAD) <= 20, f"measured fixed text {rows[0].fixed}"
