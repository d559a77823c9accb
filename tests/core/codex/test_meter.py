"""Codex's meter: the measured context against the window Codex recorded, the draft estimated with
o200k_base, Codex's fixed prompt estimated before anything is measured, a compaction's estimate."""

from __future__ import annotations

from reprise.core.config import MeterSettings
from reprise.core.meter import CONFIGURED, COUNTED, MEASURED, TokenCounter
from reprise.core.sources.codex.meter import CHARS_PER_TOKEN, FIXED_CHARS, CodexMeter, ContextNow


def meter(context: ContextNow, **extra) -> CodexMeter:
    return CodexMeter(MeterSettings(), TokenCounter(), context, **extra)


def test_the_measured_context_and_the_draft_make_the_next_turn_against_codex_s_window():
    result = meter(ContextNow(15_601, 3, 475_000, "gpt-6.2-sol")).with_message("one two three")
    measured, draft = result.part("measured"), result.part("message")
    assert (measured.tokens, measured.basis) == (15_601, MEASURED)
    assert draft.basis == COUNTED and draft.tokens == TokenCounter().count("one two three", "o200k_base")
    assert result.total == 15_601 + (draft.tokens or 0)
    assert result.window == 475_000 and result.model == "gpt-6.2-sol"
    assert result.measured is not None and (result.measured.turn, result.measured.tokens) == (3, 15_601)


def test_another_model_asked_for_is_measured_against_its_table_window():
    result = meter(ContextNow(15_601, 3, 475_000, "gpt-6.2-sol"), model="gpt-4o").with_message("")
    assert result.model_source == "--model"
    assert result.window != 475_000 and "model table" in result.window_source


def test_before_any_call_codex_s_fixed_prompt_is_estimated():
    result = meter(ContextNow(None, 0, None, None)).with_message("")
    part = result.part("overhead")
    assert (part.tokens, part.basis) == (FIXED_CHARS // CHARS_PER_TOKEN, CONFIGURED)
    assert result.measured is None and result.model_source.startswith("default")


def test_right_after_a_compaction_the_part_says_it_is_codex_s_estimate():
    part = meter(ContextNow(14_814, 3, 475_000, "gpt-6.2-sol", "compaction")).with_message("").part("measured")
    assert part.tokens == 14_814 and "after the compaction" in (part.note or "")
