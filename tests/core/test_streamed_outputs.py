"""Outputs that Reprise now builds as streams (so a huge session is not copied whole) are the
same bytes and texts as the one-piece versions they replace."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core import tokens
from reprise.core.sources.fractal import meter as meter
from reprise.core.sources.fractal.codec import (
    UnencodableError,
    decode,
    encode,
    join_ascii,
)
from reprise.core.sources.fractal.meter import history_json
from reprise.core.sources.fractal.models import SessionState
from reprise.core.sources.fractal.summary import EMPTY_SUMMARY, render_summary
from reprise.core.sources.fractal.trim import TrimOptions, plan_trim
from tests.factories import session_bytes, session_dict


def one_piece_encode(state: SessionState) -> bytes:
    return (json.dumps(state.model_dump(mode="python"), indent=2, allow_nan=False) + "\n").encode("ascii")


def one_piece_summary(state: SessionState) -> str:
    if not state.turns:
        return EMPTY_SUMMARY
    blocks = []
    for number, turn in enumerate(state.turns, start=1):
        lines = [f"Turn {number} ({turn.turn_id})", f"User: {turn.user.message}"]
        if turn.agent is None:
            lines.append("Agent status: pending")
        else:
            lines.append(f"Agent status: {turn.agent.status}")
            if turn.agent.response:
                lines.append(f"Agent response: {turn.agent.response}")
            lines += [f"files_read_count: {turn.agent.files_read_count}",
                      f"files_changed_count: {turn.agent.files_changed_count}",
                      f"commands_run_count: {turn.agent.commands_run_count}"]
            if turn.agent.error:
                lines.append(f"Error: {turn.agent.error}")
        blocks.append("\n".join(lines))
    return "## Session Summary" + "".join("\n\n" + block for block in blocks)


def states() -> list[SessionState]:
    shapes = [{"turns": 0}, {"turns": 3}, {"turns": 7, "pending_last": True, "unicode": True},
              {"turns": 5, "unknown_fields": True, "response_chars": 300_000},
              {"turns": 25, "history_limit": None, "unicode": True, "unknown_fields": True}]
    found = []
    for index, shape in enumerate(shapes):
        decoded = decode(session_bytes(f"{index:032x}", seed=index, **shape), path="t", expected_id=None)
        found.append(decoded.state)
    big = session_dict("f" * 32, turns=2, seed=9)
    big["history"][0]["trace"]["steps"][0]["output"] = "x\u00e9\"\\\n" * 100_000  # one long escaped chunk
    big["history"][1]["trace"]["steps"] = big["history"][1]["trace"]["steps"] * 400  # many small chunks
    found.append(decode((json.dumps(big, indent=2) + "\n").encode("ascii"), path="t", expected_id=None).state)
    return found


STATES = states()


@pytest.mark.parametrize("state", STATES, ids=range(len(STATES)))
def test_encode_gives_the_bytes_of_the_one_piece_dump(state):
    assert encode(state) == one_piece_encode(state)


def test_a_file_encodes_back_to_its_own_bytes():
    data = session_bytes("a" * 32, turns=6, unicode=True, seed=3)
    assert encode(decode(data, path="t", expected_id=None).state) == data


def test_encode_still_refuses_a_non_finite_float():
    data = session_bytes("b" * 32, turns=2).replace(b'"iterations": ', b'"overflow": 1e999, "iterations": ', 1)
    state = decode(data, path="t", expected_id=None).state
    with pytest.raises(UnencodableError, match="cannot be written back as JSON"):
        encode(state)


@pytest.mark.parametrize("state", STATES, ids=range(len(STATES)))
def test_the_kept_history_ends_are_the_ends_of_the_whole_history_json(state):
    for kept in (state.history[-19:], state.history[-1:]):
        if kept:
            assert meter._open_list_ends(kept) == meter._ends(history_json(kept)[:-2] + ",")


def test_the_kept_history_ends_write_a_non_finite_float_as_pydantic_does():
    data = session_bytes("c" * 32, turns=2).replace(b'"iterations": ', b'"overflow": 1e999, "iterations": ', 1)
    state = decode(data, path="t", expected_id=None).state
    full = history_json(state.history)
    assert "Infinity" not in full
    assert meter._open_list_ends(state.history) == meter._ends(full[:-2] + ",")


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(["a", "x", "\t", " ", "\n", "\r", "\u2028", "\x0c", "é"]), max_size=60),
       st.integers(min_value=1, max_value=8))
def test_instructions_made_a_slice_at_a_time_are_the_whole_texts(text, chunk):
    def whole(text: str) -> str:
        lines = meter._WHITESPACE_ONLY_LINE.sub("", text.expandtabs()).splitlines()
        return "\n".join(meter.INSTRUCTION_INDENT + line for line in lines or [""])

    saved = meter._INSTRUCTION_CHUNK
    try:
        meter._INSTRUCTION_CHUNK = chunk
        assert meter.as_instructions(text) == whole(text)
    finally:
        meter._INSTRUCTION_CHUNK = saved


@pytest.mark.parametrize("state", STATES, ids=range(len(STATES)))
def test_the_summary_is_the_one_piece_rendering(state):
    assert render_summary(state.summary) == one_piece_summary(state)


@pytest.mark.parametrize("text", ["", "hello world", "<|endoftext|> and <|fim_prefix|>", "lone \ud800 \udfff",
                                  "é→😀 中文 " * 2000, "a" * 50_000])
def test_counting_from_the_token_buffer_gives_the_length_of_the_token_list(text):
    for name in tokens.ENCODINGS:
        expected = tokens.get_encoding(name).encode(tokens._fix_surrogates(text), allowed_special=set(),
                                                    disallowed_special=())
        assert tokens.count_tokens(text, name) == len(expected)


def test_trim_records_are_the_compact_dump_of_the_removed_turns():
    data = session_bytes("d" * 32, turns=8, unicode=True, unknown_fields=True, response_chars=3000, seed=4)
    state = decode(data, path="t", expected_id=None).state
    plan = plan_trim(data, TrimOptions(cap_replies=100, keep_history=2, spare=0), state=state)
    records = json.loads(plan.records)
    assert plan.records == (json.dumps(records, ensure_ascii=True, separators=(",", ":")) + "\n").encode("ascii")
    assert [r["turn"] for r in records["history"]] == [t.model_dump(mode="json") for t in state.history[:-2]]
    assert [r["turn"] for r in records["summary"]] == [state.turns[r["index"]].model_dump(mode="json")
                                                       for r in records["summary"]]
    assert plan.data == one_piece_encode(plan.state)
    again = plan_trim(data, TrimOptions(cap_replies=100, keep_history=2, spare=0))
    assert (again.data, again.records) == (plan.data, plan.records)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=st.characters(codec="ascii"), max_size=70_000), max_size=40),
       st.integers(min_value=1, max_value=50))
def test_join_ascii_is_the_plain_join(chunks, batch):
    assert join_ascii(chunks, end="\n", batch=batch) == ("".join(chunks) + "\n").encode("ascii")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["\n", "\n\n", "\r\n", " ", "  ", "\t", "a", "Bc", "x'", "'s", "’", ".", "…", "/",
                                 "123", "4", "é", "中文", "😀", "<|endoftext|>", "\u0301", "_", "-"]), max_size=120),
       st.integers(min_value=1, max_value=30))
def test_counting_a_text_in_slices_gives_the_count_of_the_whole(pieces, size):
    text = "".join(pieces)
    slices = list(tokens._slices(text, size))
    assert "".join(slices) == text
    for name in tokens.ENCODINGS:
        encoding = tokens.get_encoding(name)
        whole = len(encoding.encode(text, allowed_special=set(), disallowed_special=()))
        assert sum(len(encoding.encode(piece, allowed_special=set(), disallowed_special=())) for piece in slices) \
            == whole


def test_a_long_summary_counts_the_same_in_slices():
    from bench import stores

    text = "\n".join(stores._corpus(11, chars=3 << 20).split(" ")[:200_000])
    for name in tokens.ENCODINGS:
        encoding = tokens.get_encoding(name)
        assert tokens.count_tokens(text, name) == len(encoding.encode(text, allowed_special=set(),
                                                                      disallowed_special=()))


def test_the_summary_head_is_joined_from_pieces_as_the_whole_rendering():
    from reprise.core.sources.fractal.summary import render_summary_head

    for state in STATES:
        if state.turns:
            assert render_summary_head(state.summary) == render_summary(state.summary)
