"""A rollout as the neutral transcript: prompts, replies, reasoning, tool calls paired by call_id,
commands, errors, usage per turn, compactions, and a Codex fork with and without its parent."""

from __future__ import annotations

from datetime import timedelta

from reprise.core.sources.codex.lineage import inherited
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript
from tests.core.codex.builder import CodexRollout


def transcript_of(rollout: CodexRollout):
    return read_transcript(parse_rollout(rollout.data()).records, rollout.session_id)


def test_turns_hold_the_prompt_the_reply_and_the_reasoning_apart_never_the_injected_text():
    rollout = CodexRollout()
    rollout.turn("explain the parser", "It reads lines.", reasoning="**Reading the parser**")
    transcript, warnings = transcript_of(rollout)
    assert warnings == []
    (turn,) = transcript.turns
    assert transcript.source == "codex" and transcript.session_id == rollout.session_id
    assert turn.user_message == "explain the parser"
    assert turn.reply == "It reads lines."          # the response item, not repeated from agent_message
    assert turn.thinking == "**Reading the parser**"
    assert "environment_context" not in turn.user_message + turn.reply
    assert turn.status == "succeeded"


def test_function_calls_are_paired_with_their_outputs_by_call_id_and_commands_observed():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.prompt("list and fail")
    first = rollout.shell(["bash", "-lc", "ls -la"], "total 0", call_id="call_a", answered=False)
    rollout.shell(["false"], "", exit_code=1, call_id="call_b")
    rollout.item({"type": "function_call_output", "call_id": first, "output": "total 0"})   # answered late
    rollout.patch("*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** End Patch\n")
    rollout.reply("done")
    rollout.tokens(9_000, 30)
    rollout.task_complete()
    (turn,) = transcript_of(rollout)[0].turns
    calls = turn.tool_calls
    assert [(call.name, call.result, call.is_error) for call in calls] == [
        ("shell", "total 0", False), ("shell", "", True), ("apply_patch", "Success.", False)]
    assert [command.command for command in turn.commands] == ["ls -la", "false"]
    assert [touch.path for touch in turn.files_modified] == ["src/app.py"]


def test_a_command_through_the_code_mode_exec_tool_is_a_call_with_its_output_and_a_command():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.prompt("Please RUN: echo hi")
    rollout.reply("I will run it.")
    rollout.command("echo OUTWORD42 && echo second line", "OUTWORD42\nsecond line\n")
    rollout.reply("It printed two lines.")
    rollout.task_complete()
    (turn,) = transcript_of(rollout)[0].turns
    assert turn.user_message == "Please RUN: echo hi"
    (call,) = turn.tool_calls
    assert call.name == "exec" and "tools.exec_command" in call.input
    assert call.result is not None and call.result.endswith("OUTWORD42\nsecond line\n")
    assert [command.command for command in turn.commands] == ["echo OUTWORD42 && echo second line"]
    assert turn.reply == "I will run it.\n\nIt printed two lines."


def test_an_older_rollouts_user_message_and_error_events_make_its_turns():
    rollout = CodexRollout(legacy=True)
    rollout.turn("one", "first reply")
    rollout.task_started()
    rollout.prompt("two")
    rollout.error("stream disconnected")
    rollout.task_complete()
    transcript, _ = transcript_of(rollout)
    assert [(turn.user_message, turn.reply, turn.status) for turn in transcript.turns] == [
        ("one", "first reply", "succeeded"), ("two", "", "failed")]
    assert transcript.turns[1].error == "stream disconnected"


def test_a_failed_call_is_the_error_of_task_complete():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.prompt("fail")
    rollout.task_complete(error='{"error": {"message": "asked to fail"}}')
    (turn,) = transcript_of(rollout)[0].turns
    assert turn.status == "failed" and turn.error == '{"error": {"message": "asked to fail"}}'


def test_a_call_without_output_is_noted_and_an_output_without_call_warned():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.prompt("go")
    rollout.shell(["sleep", "100"], "", answered=False)
    rollout.item({"type": "function_call_output", "call_id": "call_nowhere", "output": "stray"})
    rollout.aborted()
    transcript, warnings = transcript_of(rollout)
    assert transcript.turns[0].status == "interrupted"
    assert transcript.turns[0].tool_calls[0].result is None
    assert any("without a recorded output" in note for note in transcript.notes)
    assert warnings == ["a tool output for a call the rollout does not have"]


def test_errors_fail_the_turn_and_usage_is_the_change_in_the_totals_over_each_turn():
    rollout = CodexRollout()
    rollout.turn("one", "ok", tokens=(10_000, 40))
    rollout.task_started()
    rollout.prompt("two")
    rollout.tokens(11_000, 20, cached=9_000)
    rollout.tokens(11_500, 25, cached=11_000)
    rollout.error("unexpected status 500")
    rollout.task_complete()
    transcript, _ = transcript_of(rollout)
    first, second = transcript.turns
    assert first.usage is not None and first.usage.input_tokens == 10_000 and first.usage.iterations == 1
    assert second.status == "failed" and second.error == "unexpected status 500"
    assert second.usage is not None
    assert (second.usage.input_tokens, second.usage.cache_read_tokens, second.usage.output_tokens) == (
        22_500 - 20_000, 20_000, 45)
    assert second.usage.context_tokens == 11_500 and second.usage.iterations == 2


def test_an_auto_compaction_at_a_turns_start_is_before_that_turn_and_its_summary_is_no_reply():
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    rollout.task_started()
    rollout.reply("SUMMARY of the work")   # the compaction request's answer
    rollout.compacted("Another language model started to solve this problem… SUMMARY of the work")
    rollout.prompt("two")
    rollout.reply("the reply")
    rollout.task_complete()
    transcript, _ = transcript_of(rollout)
    assert [turn.reply for turn in transcript.turns] == ["ok", "the reply"]
    assert [compaction.before_turn for compaction in transcript.compactions] == [1]


def test_a_compaction_is_marked_before_the_next_turn():
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    rollout.task_started()
    rollout.prompt("two")
    rollout.compacted("Summary of the work so far.")
    rollout.reply("ok")
    rollout.task_complete()
    rollout.turn("three", "ok")
    transcript, _ = transcript_of(rollout)
    assert len(transcript.turns) == 3
    assert [compaction.before_turn for compaction in transcript.compactions] == [2]


def test_a_fork_shows_its_parents_history_before_the_fork_when_the_parent_exists():
    parent = CodexRollout(seed=1)
    parent.turn("parent one", "p1")
    parent.turn("parent two", "p2")
    fork = CodexRollout(forked_from=parent.session_id, start=parent.clock, seed=2)
    parent.turn("after the fork", "p3")   # the parent went on: not part of the fork
    fork.turn("fork one", "f1", first=False)
    records = {parent.session_id: parse_rollout(parent.data()).records}
    own = parse_rollout(fork.data()).records
    lineage = inherited(own, records.get)
    transcript, _ = read_transcript(lineage.records + own, fork.session_id)
    assert [turn.user_message for turn in transcript.turns] == ["parent one", "parent two", "fork one"]
    assert lineage.ancestors == [parent.session_id]
    assert lineage.notes == [f"Forked by Codex from session {parent.session_id}: its 2 turns before the fork are "
                             "shown first."]


def test_a_fork_takes_the_parents_lines_below_its_fork_ordinal():
    parent = CodexRollout(seed=1)
    parent.turn("parent one", "p1")
    later = parent.clock + timedelta(hours=1)   # its clock ahead of the parent's: only the ordinals tell
    fork = CodexRollout(forked_from=parent.session_id, forked_at=parent.ordinal, seed=2, start=later)
    parent.turn("parent two, after the fork", "p2")
    fork.turn("fork one", "f1", first=False)
    records = {parent.session_id: parse_rollout(parent.data()).records}
    own = parse_rollout(fork.data()).records
    lineage = inherited(own, records.get)
    transcript, _ = read_transcript(lineage.records + own, fork.session_id)
    assert [turn.user_message for turn in transcript.turns] == ["parent one", "fork one"]


def test_a_fork_whose_parent_is_missing_says_so_and_shows_its_own_turns():
    fork = CodexRollout(forked_from="019a0000-0000-7000-8000-00000000dead")
    fork.turn("fork one", "f1", first=False)
    own = parse_rollout(fork.data()).records
    lineage = inherited(own, lambda _: None)
    transcript, _ = read_transcript(lineage.records + own, fork.session_id)
    assert [turn.user_message for turn in transcript.turns] == ["fork one"]
    assert "whose rollout is not in the store" in lineage.notes[0]


def test_unknown_record_types_are_counted_in_a_warning():
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    rollout.record("future_thing", {"x": 1})
    _, warnings = transcript_of(rollout)
    assert warnings == ["1 record of a type Reprise does not know (future_thing) skipped"]
