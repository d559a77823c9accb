from __future__ import annotations

import pytest

from reprise.core.outcome import TurnOutcome
from reprise.core.sources.fractal.codec import encode
from reprise.core.sources.fractal.models import AGENT_STATUSES, agent_status
from reprise.core.sources.fractal.turns import begin_turn, finish_turn

from .test_trim import build_state

NOW = "2026-01-02T00:00:00+00:00"


@pytest.mark.parametrize("status", AGENT_STATUSES)
def test_a_finished_turn_records_the_outcome_status_in_summary_and_history(status):
    state = build_state(2)
    turn_id = begin_turn(state, "next", NOW)
    finish_turn(state, turn_id, TurnOutcome(status, "done", files_read=["a.py"]), NOW)
    assert state.turns[-1].agent.status == status and state.turns[-1].agent.files_read_count == 1
    assert state.history[-1].status == status and state.history[-1].files_read == ["a.py"]


def test_an_outcome_status_fractal_has_no_word_for_is_refused_and_changes_nothing():
    state = build_state(2)
    turn_id = begin_turn(state, "next", NOW)
    before = encode(state)
    with pytest.raises(ValueError, match="'done' is not a turn status Fractal records"):
        finish_turn(state, turn_id, TurnOutcome("done", "reply"), NOW)
    assert encode(state) == before
    assert agent_status("max_iterations") == "max_iterations"
