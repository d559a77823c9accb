"""A rollout's listing fields: turns, prompts, title source, status, branch, model and the measured context."""

from __future__ import annotations

from reprise.core.sources.codex.fields import ListingFold
from reprise.core.sources.codex.records import parse_rollout
from tests.core.codex.builder import CodexRollout


def fields_of(rollout: CodexRollout):
    fold = ListingFold()
    parsed = parse_rollout(rollout.data())
    fold.feed(parsed.records)
    return fold.result()


def test_turns_run_from_task_started_and_prompts_are_the_user_messages_only():
    rollout = CodexRollout(cwd="/work/alpha", branch="feature/x", model="gpt-5.1-codex")
    rollout.turn("fix the bug", "fixed")
    rollout.turn("now the tests", "done")
    found = fields_of(rollout)
    assert found.turns == 2
    assert found.first_message == "fix the bug"   # never the environment or permissions text
    assert found.last_message == "now the tests"
    assert (found.cwd, found.branch, found.model) == ("/work/alpha", "feature/x", "gpt-5.1-codex")
    assert found.last_status == "succeeded"


def test_a_message_typed_while_a_turn_runs_is_not_a_new_turn():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.prompt("first")
    rollout.prompt("and also this")
    rollout.reply("ok")
    rollout.task_complete()
    found = fields_of(rollout)
    assert (found.turns, found.first_message, found.last_message) == (1, "first", "first")


def test_the_last_status_is_interrupted_after_an_abort_and_failed_after_an_error():
    aborted = CodexRollout()
    aborted.turn("one", "ok")
    aborted.task_started()
    aborted.prompt("two")
    aborted.aborted()
    assert fields_of(aborted).last_status == "interrupted"
    failed = CodexRollout()
    failed.task_started()
    failed.prompt("one")
    failed.task_complete(error="unexpected status 400")   # 0.171.0: the error is in task_complete
    assert fields_of(failed).last_status == "failed"
    older = CodexRollout(legacy=True)
    older.task_started()
    older.prompt("one")
    older.error("stream disconnected before completion")   # older versions: an error event first
    older.task_complete()
    assert fields_of(older).last_status == "failed" and fields_of(older).first_message == "one"


def test_a_turn_left_open_by_the_next_task_started_is_interrupted_and_the_next_one_counts():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.prompt("cut off")
    rollout.turn("again", "ok", first=False)
    found = fields_of(rollout)
    assert (found.turns, found.last_status, found.last_message) == (2, "succeeded", "again")


def test_the_context_is_the_newest_calls_input_never_the_cumulative_total():
    rollout = CodexRollout()
    rollout.turn("one", "ok", tokens=(11_000, 50))
    rollout.turn("two", "ok", tokens=(12_500, 60), cached=11_000)
    found = fields_of(rollout)
    assert found.context_tokens == 12_500          # last_token_usage.input_tokens
    assert found.context_turn == 2
    assert found.context_window == 258_400
    assert found.usage.input_tokens + found.usage.cache_read_tokens == 23_500   # the total is the session's usage
    assert found.usage.cache_read_tokens == 11_000
    assert found.usage.output_tokens == 110


def test_right_after_a_compaction_the_context_is_codex_s_estimate_of_the_new_history():
    rollout = CodexRollout()
    rollout.turn("one", "ok", tokens=(120_000, 10))
    rollout.task_started()
    rollout.compacted("Summary.")
    rollout.event({"type": "token_count", "info": {
        "total_token_usage": {"input_tokens": 120_000, "output_tokens": 10, "total_tokens": 120_010},
        "last_token_usage": {"input_tokens": 0, "cached_input_tokens": 0, "output_tokens": 0, "total_tokens": 14_814},
        "model_context_window": 258_400}})
    found = fields_of(rollout)
    assert (found.context_tokens, found.context_basis) == (14_814, "compaction")
    rollout.prompt("two")
    rollout.reply("ok")
    rollout.tokens(15_600, 10)
    rollout.task_complete()
    assert (fields_of(rollout).context_tokens, fields_of(rollout).context_basis) == (15_600, "call")


def test_exec_and_other_non_interactive_sessions_are_hidden_by_the_agent():
    assert fields_of(CodexRollout(source="exec")).hidden_by_agent
    assert fields_of(CodexRollout(source={"subagent": "review"})).hidden_by_agent
    assert not fields_of(CodexRollout(source="cli")).hidden_by_agent
    assert not fields_of(CodexRollout(source="vscode")).hidden_by_agent


def test_an_older_rollout_without_task_events_counts_a_turn_per_user_message():
    rollout = CodexRollout(ordinals=False, legacy=True)
    for text in ("one", "two", "three"):
        rollout.prompt(text)
        rollout.reply("ok")
    found = fields_of(rollout)
    assert (found.turns, found.last_message, found.last_status) == (3, "three", "succeeded")


def test_the_fold_fed_in_chunks_and_stored_between_them_equals_one_fed_whole():
    rollout = CodexRollout()
    rollout.turn("one", "ok")
    rollout.turn("two", "ok")
    records = parse_rollout(rollout.data()).records
    whole = ListingFold()
    whole.feed(records)
    first = ListingFold()
    first.feed(records[:7])
    resumed = ListingFold.from_bytes(first.to_bytes())
    resumed.feed(records[7:])
    assert resumed == whole
    assert resumed.result() == whole.result()
