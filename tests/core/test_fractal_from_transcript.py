"""A new Fractal session written from another agent's transcript: bytes Reprise's Fractal codec loads
without a warning and Reprise's Fractal reader reads back with the same prompts, replies, statuses,
files, commands and tool calls; the newest 20 turns in the history, the others handed back."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript as read_claude
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript as read_codex
from reprise.core.sources.fractal.codec import decode, encode, fractal_would_drop
from reprise.core.sources.fractal.from_transcript import OUTPUT_SHOWN, session_of, turn_id_for
from reprise.core.sources.fractal.models import SessionState
from reprise.core.sources.fractal.summary import render_summary
from reprise.core.sources.fractal.transcript import transcript_of
from reprise.core.sources.session_writing import MARK
from reprise.core.transcript import Command, Compaction, FileTouch, ToolCall, Transcript, Turn, Usage

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE = FIXTURES / "claude-store" / "projects" / "-tmp-reprise-claude-fixture-work-alpha"
CODEX = sorted((FIXTURES / "codex-store" / "sessions").rglob("rollout-*.jsonl"))
SESSION_ID = "0123456789abcdef0123456789abcdef"
NOW = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
TURN_ID = re.compile(r"turn-[0-9a-f]{32}")


def claude(name: str) -> Transcript:
    path = next(CLAUDE.glob(f"{name}*.jsonl"))
    transcript, warnings = read_claude(parse_lines(path.read_bytes(), 0).records)
    assert warnings == []
    return transcript


def codex(path: Path) -> Transcript:
    transcript, warnings = read_codex(parse_rollout(path.read_bytes()).records, path.stem[-36:])
    assert warnings == []
    return transcript


def written(transcript: Transcript, agent: str = "Claude Code") -> tuple[SessionState, bytes, list[Turn], list[str]]:
    """The session written, decoded as Reprise loads a Fractal file (no problem, no warning, re-encodes the same)."""
    data, left_over, notes = session_of(transcript, session_id=SESSION_ID, agent=agent, now=NOW)
    decoded = decode(data, path="new.json", expected_id=SESSION_ID)
    assert decoded.problem is None and decoded.warnings == []
    assert decoded.state is not None and encode(decoded.state) == data
    assert fractal_would_drop(decoded.state) == []   # every trace a valid RunTrace, nothing Fractal drops
    return decoded.state, data, left_over, notes


def assert_read_back(source: Transcript, state: SessionState) -> Transcript:
    """Reprise's Fractal reader gives back the source's prompts, replies, statuses, files and commands."""
    back = transcript_of(state)
    assert [t.user_message for t in back.turns] == [t.user_message for t in source.turns]
    assert [t.reply for t in back.turns] == [t.reply for t in source.turns]
    assert [t.status for t in back.turns] == [t.status for t in source.turns]
    assert [t.error for t in back.turns] == [t.error for t in source.turns]
    for mine, theirs in zip(back.turns[-20:], source.turns[-20:], strict=True):
        assert [c.command for c in mine.commands] == [c.command for c in theirs.commands]
        assert [f.path for f in mine.files_read] == [f.path for f in theirs.files_read]
        assert [f.path for f in mine.files_modified] == [f.path for f in theirs.files_modified]
        assert [c.result for c in mine.tool_calls] == [c.result for c in theirs.tool_calls]
    return back


# --- real transcripts ------------------------------------------------------------------------------

def test_a_claude_bash_call_becomes_its_command_and_a_trace_step_with_the_output():
    source = claude("5555")
    state, _, left_over, notes = written(source)
    back = assert_read_back(source, state)
    [turn] = back.turns
    assert [c.command for c in turn.commands] == ["echo OUTWORD$((6*7)) && echo second line"]
    [step] = turn.tool_calls
    assert step.input == f"{MARK} Claude Code ran a shell command:\necho OUTWORD$((6*7)) && echo second line"
    assert step.result == "OUTWORD42\nsecond line" and not step.is_error
    assert state.turns[0].agent.commands_run_count == 1
    assert left_over == []
    assert "kept as marked text in the traces of their turns: 1 tool call of Claude Code (Fractal did not run them)" \
        in notes


def test_claude_read_and_write_calls_keep_their_files_and_their_tool_text():
    source = claude("2222")
    state, _, _, _ = written(source)
    back = assert_read_back(source, state)
    assert back.turns[0].files_read[0].path == "/tmp/reprise-claude-fixture/work/alpha/notes.txt"
    assert back.turns[1].files_modified[0].path == "/tmp/reprise-claude-fixture/work/alpha/written.txt"
    assert [call.input.splitlines()[0] for turn in back.turns for call in turn.tool_calls] == [
        f"{MARK} Claude Code tool call `Read`:", f"{MARK} Claude Code tool call `Write`:"]
    assert json.loads(back.turns[0].tool_calls[0].input.split("\n", 1)[1]) == json.loads(
        source.turns[0].tool_calls[0].input)
    assert [(t.agent.files_read_count, t.agent.files_changed_count) for t in state.turns] == [(1, 0), (0, 1)]


def test_three_claude_turns_are_three_summary_and_history_turns_with_fractal_ids_and_times():
    source = claude("3333")
    state, data, _, _ = written(source)
    assert_read_back(source, state)
    ids = [turn.turn_id for turn in state.turns]
    assert ids == [entry.turn_id for entry in state.history] == [turn_id_for(SESSION_ID, i) for i in range(3)]
    assert len(set(ids)) == 3 and all(TURN_ID.fullmatch(turn_id) for turn_id in ids)
    assert state.history[0].created_at == "2026-12-01T16:32:33.297000+00:00"
    assert state.history[0].updated_at == "2026-12-01T16:32:33.392000+00:00"
    assert all(entry.trace is None for entry in state.history)   # no tool calls: no REPL work to record
    assert data == session_of(source, session_id=SESSION_ID, agent="Claude Code", now=NOW)[0]   # pure


def test_the_rendered_summary_fractal_prompts_with_holds_every_prompt_and_reply():
    source = claude("3333")
    state, _, _, _ = written(source)
    rendered = render_summary(state.summary)
    for turn in source.turns:
        assert f"User: {turn.user_message}\nAgent status: succeeded\nAgent response: {turn.reply}\n" in rendered


def test_claude_usage_is_recorded_as_fractal_counts_it_without_the_context_size():
    source = claude("5555")
    state, _, _, notes = written(source)
    usage = source.turns[0].usage
    recorded = state.turns[0].agent.usage
    assert recorded.input_tokens == usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens
    assert (recorded.output_tokens, recorded.iterations, recorded.cost, recorded.context_tokens) == (
        usage.output_tokens, usage.iterations, 0.0, 0)
    assert "the context sizes Claude Code measured are left out: they measure Claude Code's prompts, not " \
           "Fractal's" in notes


@pytest.mark.parametrize("path", CODEX, ids=lambda path: path.stem[-12:])
def test_every_codex_fixture_rollout_reads_back_the_same(path):
    source = codex(path)
    state, _, left_over, _ = written(source, agent="Codex")
    assert_read_back(source, state)
    assert left_over == [] and len(state.history) == len(source.turns)


def test_a_codex_exec_call_becomes_its_command_and_output_and_a_failed_or_interrupted_turn_keeps_its_status():
    transcripts = [codex(path) for path in CODEX]
    by_status = {transcript.turns[-1].status: transcript for transcript in transcripts}
    state, _, _, _ = written(next(t for t in transcripts if t.turns[0].commands), agent="Codex")
    step = state.history[0].trace["steps"][0]
    assert step["code"] == f"{MARK} Codex ran a shell command:\necho OUTWORD$((6*7)) && echo second line"
    assert "OUTWORD42" in step["output"] and state.history[0].commands_run == [
        "echo OUTWORD$((6*7)) && echo second line"]
    for status in ("failed", "interrupted"):
        state, _, _, _ = written(by_status[status], agent="Codex")
        assert state.turns[0].agent.status == state.history[0].status == status


# --- the history of 20 ------------------------------------------------------------------------------

def made_turn(index: int, **fields) -> Turn:
    return Turn(turn_id=f"source-{index}", user_message=f"prompt {index}", status="succeeded", reply=f"reply {index}",
                started_at=f"2026-11-30T10:{index:02d}:00Z", ended_at=f"2026-11-30T10:{index:02d}:30Z",
                tool_calls=[ToolCall("Bash", '{"command": "make"}', f"built {index}", shell="make")],
                files_read=[FileTouch(f"src/{index}.py", "observed")], commands=[Command("make", "observed")],
                **fields)


def test_twenty_five_turns_keep_all_in_the_summary_the_newest_twenty_in_the_history_and_hand_back_five():
    source = Transcript("claude", "s", [made_turn(i) for i in range(25)])
    state, _, left_over, notes = written(source)
    assert len(state.turns) == 25 and len(state.history) == 20
    assert [entry.user_message for entry in state.history] == [f"prompt {i}" for i in range(5, 25)]
    assert [entry.turn_id for entry in state.history] == [turn.turn_id for turn in state.turns[5:]]
    assert left_over == source.turns[:5]
    assert all(t.agent.commands_run_count == 1 and t.agent.files_read_count == 1 for t in state.turns)
    back = assert_read_back(source, state)
    assert [t.detailed for t in back.turns] == [False] * 5 + [True] * 20
    assert "the oldest 5 turns keep only their message, reply, status and counts: Fractal keeps the files, " \
           "commands and tool calls of its newest 20" in notes
    assert "kept as marked text in the traces of their turns: 20 tool calls of Claude Code (Fractal did not run " \
           "them)" in notes


def test_exactly_twenty_turns_hand_nothing_back():
    state, _, left_over, notes = written(Transcript("codex", "s", [made_turn(i) for i in range(20)]))
    assert len(state.history) == 20 and left_over == []
    assert not any("oldest" in note for note in notes)


# --- what changes on the way ------------------------------------------------------------------------

def test_a_pending_turn_is_written_as_interrupted_and_thinking_and_compactions_are_noted():
    turns = [made_turn(0, thinking="secret plan"), made_turn(1)]
    turns[1].status = "pending"
    turns[1].ended_at = None
    source = Transcript("claude", "s", turns, compactions=[Compaction(1)])
    state, _, _, notes = written(source)
    assert state.turns[1].agent.status == state.history[1].status == "interrupted"
    assert state.history[1].updated_at == state.history[1].created_at == "2026-11-30T10:01:00+00:00"
    assert "secret plan" not in json.dumps(state.model_dump())
    assert "1 turn Claude Code had not finished are written as interrupted" in notes
    assert any(note.startswith("the thinking of 1 turn is left out") for note in notes)
    assert any(note.startswith("Claude Code compacted this session 1 time") for note in notes)


def test_a_turn_without_times_takes_the_given_time_and_odd_usage_is_clamped():
    turn = Turn("t", "hi", "succeeded", usage=Usage(input_tokens=-3, output_tokens=5, cost=float("nan"),
                                                     duration_ms=None, iterations=None))
    state, _, _, _ = written(Transcript("gemini", "s", [turn]), agent="Gemini CLI")
    assert state.history[0].created_at == state.history[0].updated_at == "2026-12-07T09:30:00+00:00"
    usage = state.turns[0].agent.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cost, usage.duration_ms, usage.iterations) == (0, 5, 0.0,
                                                                                                          0, 0)


def test_a_failed_call_without_a_result_and_a_long_output_are_kept_as_predict_rlm_keeps_outputs():
    long = "x" * (OUTPUT_SHOWN + 10)
    turn = made_turn(0, error="exit 1")
    turn.status = "failed"
    turn.tool_calls = [ToolCall("Grep", '{"pattern": "a"}', None, is_error=True), ToolCall("Read", "{}", long)]
    state, _, _, _ = written(Transcript("claude", "s", [turn]))
    trace = state.history[0].trace
    assert trace["status"] == "error" and trace["iterations"] == 2
    first, second = trace["steps"]
    assert first["code"].startswith(f"{MARK} Claude Code tool call `Grep` (failed):") and first["error"] is True
    assert first["output"] == f"{MARK} no result was recorded."
    assert second["untruncated_output"] == long
    assert second["output"] == "x" * OUTPUT_SHOWN + f"\n... (truncated to {OUTPUT_SHOWN}/{len(long):,} chars)"
    assert state.turns[0].agent.error == state.history[0].error == "exit 1"


HOSTILE = ("\x00\x1b[2J\r\n\"quoted\" \\back\\slash\u2028\u2029 \U0001f680 \u202eevil\u202c </script>"
           "{\"summary\": {\"turns\": []}} \ud800 lone \udfff end")


MENDED = HOSTILE.replace("\ud800", "\ufffd").replace("\udfff", "\ufffd")


def hostile_turn(text: str) -> Turn:
    return Turn(text, text, "succeeded", reply=text, error=text, tool_calls=[ToolCall(text, text, text, shell=text)],
                files_read=[FileTouch(text, "observed")], files_modified=[FileTouch(text, "reported")],
                commands=[Command(text, "observed")], started_at="not a time", ended_at=text)


def test_hostile_text_in_every_field_comes_back_with_only_unpaired_surrogates_mended_and_the_file_is_ascii():
    source = Transcript("claude", "s", [hostile_turn(HOSTILE), made_turn(1)])
    state, data, _, notes = written(source, agent=HOSTILE)
    assert data.isascii()
    back = assert_read_back(Transcript("claude", "s", [hostile_turn(MENDED), made_turn(1)]), state)
    mine = back.turns[0]
    assert mine.tool_calls[0].input == f"{MARK} {MENDED} ran a shell command:\n{MENDED}"
    assert (mine.files_read[0].path, mine.files_modified[0].path) == (MENDED, MENDED)
    assert mine.started_at == "2026-12-07T09:30:00+00:00"   # unreadable times: the given time
    assert TURN_ID.fullmatch(mine.turn_id)
    assert "unpaired surrogates in the text of 1 turn are replaced by U+FFFD: Fractal cannot put them in a " \
           "prompt" in notes
    assert source.turns[0].user_message == HOSTILE   # the transcript itself is left as it was


def test_text_without_unpaired_surrogates_is_written_as_it_is():
    paired = "\U0001f680 \u202e \x00"
    state, _, _, notes = written(Transcript("claude", "s", [hostile_turn(paired)]))
    assert state.turns[0].user.message == paired and state.history[0].commands_run == [paired]
    assert not any("surrogates" in note for note in notes)


def test_no_turns_is_an_empty_session_fractal_loads():
    state, data, left_over, notes = written(Transcript("claude", "s", []))
    assert state.turns == [] and state.history == [] and left_over == [] and notes == []
    assert data == encode(SessionState(session_id=SESSION_ID))
