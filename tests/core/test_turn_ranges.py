"""The turns a person names for removal: `5-23, 30` and back, and each turn's size and tokens."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reprise.core.errors import UsageError
from reprise.core.transcript import ToolCall, Transcript, Turn
from reprise.core.trimming import parse_turn_ranges, turn_ranges, turn_sizes


def test_ranges_and_single_turns_name_every_turn_once():
    assert parse_turn_ranges("5-7, 30  2,6", 40) == [2, 5, 6, 7, 30]
    assert parse_turn_ranges("", 40) == []


@pytest.mark.parametrize("text", ["0", "41", "3-50", "7-5", "a", "5-", "-5", "5--7"])
def test_what_is_not_a_turn_of_the_session_is_refused(text):
    with pytest.raises(UsageError):
        parse_turn_ranges(text, 40)


@given(st.sets(st.integers(min_value=1, max_value=200)))
def test_written_ranges_read_back_as_the_same_turns(numbers):
    assert parse_turn_ranges(turn_ranges(numbers), 200) == sorted(numbers)


def test_a_turn_counts_its_prompt_reply_and_tool_calls():
    transcript = Transcript("fractal", "s", [
        Turn("a", "héllo", "succeeded", reply="world"),
        Turn("b", "run it", "succeeded", tool_calls=[ToolCall("bash", "ls", "x" * 10)]),
    ])
    sizes = turn_sizes(transcript, lambda text: len(text.split()))
    assert [(s.number, s.turn_id, s.prompt) for s in sizes] == [(1, "a", "héllo"), (2, "b", "run it")]
    assert sizes[0].size == len("héllo\nworld".encode()) and sizes[0].tokens == 2
    assert sizes[1].size == len("run it\nls\n" + "x" * 10) and sizes[1].tokens == 4
