"""The conversation view's parts, at a fixed clock: turn rendering, the reply cut, the counts
sentence, relative times, money and tokens, and hostile text made safe."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from reprise.core.sources.fractal.transcript import transcript_of
from reprise.core.transcript import Command, Compaction, FileTouch, Transcript, Turn, Usage
from reprise.tui.format import human_time, money, short_tokens
from reprise.tui.reports import plain_text
from reprise.tui.reports.conversation import (
    conversation_blocks,
    conversation_lines,
    cut_text,
    facts_sentence,
    turn_lines,
)

from ..core.test_store import make_state

NOW = datetime(2026, 6, 10, 15, 30, tzinfo=UTC)   # a Wednesday


@pytest.mark.parametrize(("ago", "shown"), [
    (timedelta(seconds=20), "just now"), (timedelta(minutes=5), "5 min ago"), (timedelta(hours=2), "2h ago"),
    (timedelta(hours=25, minutes=25), "yesterday 14:05"), (timedelta(days=3), "Sun 15:30"),
    (timedelta(days=40), "1 May 15:30"), (timedelta(days=400), "6 May 2025"), (timedelta(minutes=-10), "10 Jun 15:40"),
])
def test_times_are_said_relative_to_now(ago, shown):
    assert human_time(NOW - ago, NOW) == shown


def test_a_time_is_shown_in_the_readers_time_zone():
    paris = timezone(timedelta(hours=2))
    assert human_time(datetime(2026, 6, 9, 12, 5, tzinfo=UTC), NOW.astimezone(paris)) == "yesterday 14:05"


@pytest.mark.parametrize(("amount", "shown"), [(0.1, "$0.10"), (0.004, "<$0.01"), (0.0, "$0"), (1234.5, "$1,234.50")])
def test_money_has_its_unit_and_cents(amount, shown):
    assert money(amount) == shown


@pytest.mark.parametrize(("count", "shown"), [(850, "850"), (1_234, "1.2k"), (2_000, "2k"), (41_234, "41k"),
                                              (1_320_000, "1.3M")])
def test_tokens_are_short(count, shown):
    assert short_tokens(count) == shown


def test_a_reply_is_cut_to_its_first_lines_with_how_many_more():
    assert cut_text("one\ntwo\nthree\nfour\nfive\nsix\n", 4) == ("one\ntwo\nthree\nfour", "2 more lines")
    assert cut_text("one\ntwo", 4) == ("one\ntwo", "")
    shown, left = cut_text("x" * 1_000, 4)
    assert shown == "x" * 240 + "…" and left == "760 more characters"


def test_hostile_text_in_a_cut_reply_is_shown_not_interpreted():
    shown, _ = cut_text("\x1b[31mred\x1b[0m \u202eevil", 4)
    assert "\x1b" not in shown and "␛[31mred" in shown and "\u202e" not in shown


@pytest.mark.parametrize(("counts", "sentence"), [
    ((3, 1, 0), "read 3 files, changed 1"), ((1, 0, 2), "read 1 file, ran 2 commands"),
    ((0, 2, 1), "changed 2 files, ran 1 command"), ((0, 0, 0), ""),
])
def test_what_a_turn_touched_is_a_sentence(counts, sentence):
    assert facts_sentence(*counts) == sentence


def worked_turn() -> Turn:
    return Turn("turn-" + "ab" * 16, "fix the \x1b[2Jlogin test", "failed",
                reply="\n".join(f"line {i}" for i in range(9)),
                error="the model gave up", started_at="2026-06-09T14:05:00+00:00",
                usage=Usage(input_tokens=40_000, output_tokens=1_234, cost=0.1, duration_ms=8_000),
                files_read=[FileTouch(f"src/{n}.py", "observed") for n in "abc"],
                files_modified=[FileTouch("src/a.py", "reported")],
                commands=[Command(f"pytest -q {n}", "observed") for n in range(5)])


def test_a_turn_shows_its_heading_prompt_reply_start_counts_commands_and_error():
    assert plain_text(turn_lines(7, worked_turn(), NOW, "Fractal")) == (
        "Turn 7 · failed · yesterday 14:05 · 41k tokens · $0.10 · 8 s\n"
        "You: fix the ␛[2Jlogin test\n"
        "Fractal: line 0\nline 1\nline 2\nline 3\n  … 5 more lines\n"
        "Read 3 files, changed 1, ran 5 commands\n"
        "  $ pytest -q 0\n  $ pytest -q 1\n  $ pytest -q 2\n  … 2 more commands\n"
        "Error: the model gave up")


def test_ids_are_shown_only_when_asked_for():
    turn = worked_turn()
    assert turn.turn_id not in plain_text(turn_lines(1, turn, NOW))
    assert plain_text(turn_lines(1, turn, NOW, show_ids=True)).startswith(
        f"Turn 1 · failed · yesterday 14:05 · 41k tokens · $0.10 · 8 s · {turn.turn_id}\n")


def test_the_turn_a_search_landed_on_is_shown_whole():
    transcript = Transcript("fractal", "s", [worked_turn(), worked_turn()])
    first, second = conversation_blocks(transcript, NOW, whole_turn=2)
    assert "line 8" not in plain_text(first.lines) and "more lines" in plain_text(first.lines)
    assert "line 8" in plain_text(second.lines) and "more lines" not in plain_text(second.lines)


def test_a_compaction_shows_where_it_happened():
    transcript = Transcript("claude", "s", [Turn("a", "one", "succeeded"), Turn("b", "two", "succeeded")],
                            compactions=[Compaction(1, tokens_before=150_000, tokens_after=12_000)])
    assert "── context compacted here (150k → 12k tokens) ──\n\nTurn 2 · succeeded" in plain_text(
        conversation_lines(transcript, NOW))


def test_fractals_older_turns_count_what_they_touched_from_the_summary():
    state = make_state(2, "a" * 32)
    state.turns[0].agent.files_read_count, state.turns[0].agent.commands_run_count = 3, 2
    del state.history[0]   # Fractal keeps the details of its newest turns only
    transcript = transcript_of(state)
    assert transcript.turns[0].fact_counts == (3, 0, 2) and transcript.turns[1].fact_counts is None
    lines = plain_text(conversation_lines(transcript, NOW, "Fractal"))
    assert "Turn 1 · succeeded\nYou: message 0\nFractal: reply 0\nRead 3 files, ran 2 commands\n" in lines
