"""Codex's meter: the newest call's measured input, plus what the next request sends that it did not
(the call's reply with its reasoning, tool outputs after it, the TUI's or exec's tool message, the
draft with its framing); a compaction's kept history counted; the window and auto-compaction point
Codex uses (tests/compat/codex/test_meter_compat.py checks each against the real client)."""

from __future__ import annotations

from typing import Any

from reprise.core.config import MeterSettings, ModelSpec
from reprise.core.meter import CONFIGURED, COUNTED, ESTIMATED, MEASURED, RESUME, SEND, TokenCounter
from reprise.core.sources.agent_meter import CHARS_PER_TOKEN
from reprise.core.sources.codex.meter import (
    FIXED_CHARS,
    ITEM_FRAME,
    CodexLimits,
    CodexMeter,
    ContextNow,
)
from reprise.core.sources.codex.next_request import DEFERRED_TEXT, REMOVED_TEXT, next_request
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.windows import compacts_at

from .builder import CodexRollout

COUNTER = TokenCounter()
NOW = ContextNow(15_601, 3, 475_000, "gpt-6.2-sol")


def count(text: str) -> int:
    return COUNTER.count(text, "o200k_base")


def framed(text: str) -> int:
    return count(text) + ITEM_FRAME


def meter_of(rollout: CodexRollout, context: ContextNow = NOW, **extra: Any) -> CodexMeter:
    request = next_request(parse_rollout(rollout.data()).records)
    return CodexMeter(MeterSettings(), COUNTER, context, request, **extra)


def usage_record(rollout: CodexRollout, input_tokens: int, reasoning: int = 0) -> None:
    rollout.record("token_usage_record", {"usage": {"input_tokens": input_tokens, "cached_input_tokens": 0,
                                                    "output_tokens": 10, "reasoning_output_tokens": reasoning}})


def world_state(rollout: CodexRollout, tools: Any, *, full: bool = False) -> None:
    rollout.record("world_state", {"full": full, "state": {"tools": tools}})


def test_the_next_request_is_the_measured_call_plus_its_reply_and_reasoning_and_the_framed_draft():
    rollout = CodexRollout()
    rollout.turn("first", "a short reply", tokens=(12_000, 40))
    rollout.task_started()
    rollout.prompt("think then answer")
    rollout.reasoning("**Planning**")
    rollout.reply("x " * 2_000)
    usage_record(rollout, 15_601, reasoning=103)
    rollout.tokens(15_601, 1_200, cached=15_000)
    result = meter_of(rollout).with_message("one two three")
    measured, reply, since = result.part("measured"), result.part("reply"), result.part("since")
    assert (measured.tokens, measured.basis) == (15_601, MEASURED)   # input only: cached input is part of it
    assert reply.basis == COUNTED and reply.tokens == framed("**Planning**") + 103 + framed("x " * 2_000)
    assert since.tokens == 0 and result.part("client").tokens == 0
    assert result.part("message").tokens == framed("one two three") and result.draft == framed("one two three")
    assert result.total == 15_601 + reply.tokens + framed("one two three")
    assert result.window == 475_000 and result.via == SEND
    assert result.measured is not None and (result.measured.turn, result.measured.tokens) == (3, 15_601)


def test_tool_outputs_recorded_after_the_newest_call_s_usage_are_since_and_its_calls_are_reply():
    rollout = CodexRollout()
    rollout.turn("first", "ok")
    rollout.task_started()
    rollout.prompt("run it")
    call = {"type": "custom_tool_call", "call_id": "c1", "name": "exec", "input": "print('y' * 10000)"}
    rollout.item(call)
    usage_record(rollout, 13_000)            # 0.171.0: the usage record, then the output, then token_count
    rollout.item({"type": "custom_tool_call_output", "call_id": "c1",
                  "output": [{"type": "input_text", "text": "y" * 10_000}]})
    rollout.tokens(13_000, 30)
    result = meter_of(rollout).with_message("")
    assert result.part("reply").tokens == framed("exec\nprint('y' * 10000)")
    assert result.part("since").tokens == framed("y" * 10_000) and result.part("since").chars == 10_000
    assert result.part("message").tokens == 0 and result.total == 13_000 + result.part("reply").tokens \
        + framed("y" * 10_000)


def test_without_a_usage_record_the_token_count_event_is_the_call_s_end():
    rollout = CodexRollout()
    rollout.turn("first", "the reply", tokens=(9_000, 12))
    result = meter_of(rollout).with_message("")
    assert result.part("measured").tokens == 9_000 and result.part("reply").tokens == framed("the reply")


def test_via_resume_adds_the_tui_s_tool_message_once_and_via_send_its_removal_after_a_tui_turn():
    rollout = CodexRollout()
    rollout.turn("first", "ok")
    assert meter_of(rollout, via=RESUME).with_message("").part("client").tokens == framed(DEFERRED_TEXT)
    assert meter_of(rollout, via=SEND).with_message("").part("client").tokens == 0
    rollout.task_started()
    rollout.item({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": DEFERRED_TEXT}]})
    world_state(rollout, {"mcp__codex_tui": ""})
    rollout.prompt("typed in the TUI")
    rollout.reply("ok")
    rollout.tokens(12_500, 5)
    assert meter_of(rollout, via=RESUME).with_message("").part("client").tokens == 0
    assert meter_of(rollout, via=SEND).with_message("").part("client").tokens == framed(REMOVED_TEXT)
    world_state(rollout, None)                   # exec's turn took it away again
    assert meter_of(rollout, via=SEND).with_message("").part("client").tokens == 0


def test_after_a_compaction_no_call_measured_the_kept_history_is_counted_as_fixed_and_history():
    rollout = CodexRollout()
    rollout.turn("first", "ok", tokens=(30_000, 10))
    tools = {"type": "additional_tools", "role": "developer", "tools": [{"type": "function", "name": "shell"}]}
    kept = [tools, {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "first"}]},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "SUMMARY: all done"}]}]
    rollout.record("compacted", {"message": "SUMMARY: all done", "replacement_history": kept})
    rollout.tokens(0, 0)                         # Codex's own estimate (total_tokens 0 here): never shown as measured
    result = meter_of(rollout, ContextNow(4_321, 1, 475_000, "gpt-6.2-sol", "compaction")).with_message("")
    names = [part.name for part in result.parts]
    assert "measured" not in names and result.measured is None
    fixed, history = result.part("fixed"), result.part("history")
    assert fixed.basis == history.basis == COUNTED
    tool = count('{"name":"shell","type":"function"}') + ITEM_FRAME
    assert fixed.tokens == ITEM_FRAME + tool + framed("Be brief.")
    assert history.tokens == framed("first") + framed("SUMMARY: all done")
    # the next call measures again
    rollout.task_started()
    rollout.prompt("go on")
    rollout.reply("done")
    rollout.tokens(2_000, 3)
    assert meter_of(rollout).with_message("").part("measured").tokens == 2_000


def test_a_compaction_recorded_without_its_history_leaves_codex_s_estimate_labelled_estimated():
    rollout = CodexRollout()
    rollout.turn("first", "ok", tokens=(30_000, 10))
    rollout.compacted("SUMMARY")
    rollout.event({"type": "token_count", "info": {"last_token_usage": {"input_tokens": 0, "output_tokens": 0,
                                                                        "total_tokens": 4_321}}})
    part = meter_of(rollout).with_message("").part("history")
    assert (part.tokens, part.basis) == (4_321, ESTIMATED) and "estimate" in (part.note or "")


def test_before_any_call_the_recorded_items_are_counted_and_with_none_codex_s_fixed_prompt_is_estimated():
    rollout = CodexRollout()
    rollout.task_started()
    rollout.injected()
    rollout.prompt("never answered")
    result = meter_of(rollout, ContextNow(None, 0, None, None)).with_message("")
    assert result.part("fixed").tokens and result.part("history").tokens == framed("never answered")
    empty = CodexMeter(MeterSettings(), COUNTER, ContextNow(None, 0, None, None)).with_message("")
    part = empty.part("overhead")
    assert (part.tokens, part.basis) == (FIXED_CHARS // CHARS_PER_TOKEN, CONFIGURED)
    assert empty.measured is None and empty.model_source.startswith("default")


def test_a_fork_reprise_wrote_keeps_its_estimate_until_its_first_turn():
    rollout = CodexRollout()
    rollout.turn("first", "ok", tokens=(30_000, 10))
    result = meter_of(rollout, ContextNow(21_000, 1, 475_000, "gpt-6.2-sol", "estimate")).with_message("")
    assert [part.name for part in result.parts][:1] == ["measured"] and result.part("measured").basis == ESTIMATED
    assert result.part("measured").tokens == 21_000 and result.measured is None


def test_windows_recorded_else_codex_s_catalog_else_unknown_and_a_user_s_entry_wins():
    assert CodexMeter(MeterSettings(), COUNTER, NOW).with_message("").window == 475_000
    other = CodexMeter(MeterSettings(), COUNTER, NOW, model="gpt-6-astra").with_message("")
    assert other.window == 258_400 and "catalog" in other.window_source
    unknown = CodexMeter(MeterSettings(), COUNTER, ContextNow(15_601, 3, None, "my-local-model")).with_message("")
    assert unknown.window is None and unknown.percent is None and unknown.state == "unknown"
    mine = MeterSettings(models=[ModelSpec(pattern="gpt-6.2-*", encoding="o200k_base", context_window=100_000,
                                           max_output=10_000), *MeterSettings().models])
    chosen = CodexMeter(mine, COUNTER, NOW).with_message("")
    assert chosen.window == mine.models[0].input_budget and "meter.models" in chosen.window_source


def test_codex_compacts_at_its_limit_from_the_command_line_or_config_else_90_percent_of_the_whole_window():
    assert compacts_at({}, (), 475_000, "gpt-6.2-sol") == (450_000,
                                                           "Codex's default: 90% of the model's context window")
    assert compacts_at({}, (), 13_585, "fake")[0] == 12_870          # -c model_context_window=14300, as recorded
    assert compacts_at({"model_context_window": 14_300}, (), None, "x")[0] == 12_870
    assert compacts_at({"model_auto_compact_token_limit": 5_000}, (), 475_000, "gpt-6.2-sol")[0] == 5_000
    argv = ("codex", "exec", "-c", "model_auto_compact_token_limit=7_000", "resume", "{session_id}")
    assert compacts_at({"model_auto_compact_token_limit": 5_000}, argv, 475_000, "gpt-6.2-sol")[0] == 7_000
    assert compacts_at({}, (), None, "my-local-model") == (None, "unknown")
    result = CodexMeter(MeterSettings(), COUNTER, NOW, limits=CodexLimits({"model_auto_compact_token_limit": 9_000}))
    assert result.with_message("").compacts_at == 9_000


def test_a_roots_config_is_read_again_only_when_it_changes(tmp_path):
    from reprise.core.sources.codex.windows import Configs

    configs = Configs()
    assert configs.of(tmp_path) == {}
    config = tmp_path / "config.toml"
    config.write_text("model_auto_compact_token_limit = 5000\n")
    assert configs.of(tmp_path) == {"model_auto_compact_token_limit": 5000}
    first = configs.of(tmp_path)
    assert configs.of(tmp_path) is first   # the same stat: not read again
    config.write_text("model_auto_compact_token_limit = 70000\n")
    assert configs.of(tmp_path) == {"model_auto_compact_token_limit": 70000}
