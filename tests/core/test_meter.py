from __future__ import annotations

import pytest

from reprise.core import meter as meter_module
from reprise.core import tokens
from reprise.core.config import MeterSettings, ModelSpec
from reprise.core.meter import AGENTS_MD_NOTICE, Meter, variable_block
from reprise.core.models import TurnUsage

from .test_store import make_state


@pytest.fixture
def meter():
    return Meter(MeterSettings())


def test_parts_are_named_in_prompt_order_with_their_basis(meter, tmp_path):
    result = meter.measure(make_state(3), tmp_path, "fix the bug")
    assert [p.name for p in result.parts] == ["overhead", "agents_md", "summary", "history", "message"]
    assert [p.basis for p in result.parts] == ["configured", "counted", "counted", "counted", "counted"]
    assert result.part("overhead").tokens == 13_700
    assert result.total == sum(p.tokens for p in result.parts)
    assert result.encoding == "o200k_base" and result.model == "gpt-5" and result.model_source == "default"
    assert result.exact is False  # a configured part is never exact


def test_summary_part_counts_the_rendered_summary(meter, tmp_path):
    state = make_state(2)
    from reprise.core.summary import render_summary

    result = meter.measure(state, tmp_path)
    text = meter_module.as_instructions(render_summary(state.summary))
    assert text.startswith("        ## Session Summary\n        \n        Turn 1 (")
    assert result.part("summary").tokens == tokens.count_tokens(text, "o200k_base")
    assert result.part("summary").chars == len(text)
    empty = meter.measure(make_state(0), tmp_path)
    assert empty.part("summary").tokens == tokens.count_tokens("        No prior Fractal session context.",
                                                               "o200k_base")


def test_agents_md_is_cut_at_20000_characters_with_the_notice(meter, tmp_path):
    (tmp_path / "AGENTS.md").write_text("  \n" + "x" * 25_000 + "\n\n")
    part = meter.measure(make_state(0), tmp_path).part("agents_md")
    assert part.full_chars == 25_000
    assert "cut at 20,000" in part.note
    section, _, _ = meter_module.agents_md_section(tmp_path)
    assert section.endswith("x" * 10 + "\n        \n        " + AGENTS_MD_NOTICE.lstrip("\n"))
    assert section.count("x") == 20_000
    (tmp_path / "AGENTS.md").write_text("short rules\n")
    short = meter_module.agents_md_section(tmp_path)[0]
    assert short.endswith("\n        \n        short rules") and "truncated" not in short


@pytest.mark.parametrize("content,note", [(None, "no AGENTS.md"), (b"\xff\xfe bad", "not UTF-8"), (b"   \n", "empty")])
def test_missing_unreadable_or_empty_agents_md_counts_zero_and_says_why(meter, tmp_path, content, note):
    if content is not None:
        (tmp_path / "AGENTS.md").write_bytes(content)
    part = meter.measure(make_state(0), tmp_path).part("agents_md")
    assert part.tokens == 0 and note in part.note


def test_message_preview_is_first_and_last_500_characters_with_the_full_length():
    long = "a" * 600 + "MIDDLE" + "b" * 600
    block = variable_block("user_message", "str", "desc", long)
    assert "Total length: 1,206 characters" in block
    assert "a" * 500 + "..." + "b" * 500 in block and "MIDDLE" not in block
    short = variable_block("user_message", "str", "desc", "hello")
    assert short.startswith("«««\n    Variable: `user_message`")
    assert short.endswith("Preview:\n    ```\n    hello\n    ```\n»»»")


def test_a_longer_message_beyond_the_preview_adds_no_tokens(meter, tmp_path):
    prepared = meter.prepare(make_state(1), tmp_path)
    ten_k = prepared.with_message("word " * 2_000)
    hundred_k = prepared.with_message("word " * 20_000)
    assert ten_k.part("message").full_chars == 10_000
    assert abs(hundred_k.part("message").tokens - ten_k.part("message").tokens) <= 2
    assert "preview" in ten_k.part("message").note
    assert prepared.with_message("").total < ten_k.total


def test_history_counts_only_its_preview_and_reports_the_full_size(meter, tmp_path):
    state = make_state(20)
    for turn in state.history:
        turn.trace = {"steps": ["z" * 50_000]}
    part = meter.measure(state, tmp_path).part("history")
    assert part.full_chars > 1_000_000
    assert part.tokens < 800
    assert "not in the prompt" in part.note


def test_typing_retokenizes_only_the_message(meter, tmp_path, monkeypatch):
    prepared = meter.prepare(make_state(30), tmp_path)
    seen = []
    original = tokens.count_tokens
    monkeypatch.setattr(tokens, "count_tokens", lambda text, enc: seen.append(len(text)) or original(text, enc))
    for typed in ("h", "he", "hel", "hell", "hello"):
        prepared.with_message(typed)
    assert len(seen) == 5 and all(n < 400 for n in seen)
    seen.clear()
    meter.prepare(make_state(30), tmp_path)  # same texts again: all from the digest cache
    assert seen == []


def test_a_failing_part_is_reported_and_the_others_still_count(meter, tmp_path, monkeypatch):
    def broken(state):
        raise RecursionError("trace too deep")

    monkeypatch.setattr(meter_module, "history_block", broken)
    result = meter.measure(make_state(2), tmp_path, "hi")
    history = result.part("history")
    assert history.basis == "failed" and history.tokens is None and "trace too deep" in history.error
    assert result.part("summary").tokens > 0
    assert result.total == sum(p.tokens for p in result.parts if p.tokens is not None)


def test_hostile_and_huge_messages_count_without_error(meter, tmp_path):
    prepared = meter.prepare(make_state(0), tmp_path)
    for message in ("\ud800 lone \udfff", "nul\x00 and \x1b[31m ansi", "<|endoftext|>", "x" * 10_000_000):
        part = prepared.with_message(message).part("message")
        assert part.basis == "counted" and part.tokens > 0


def test_state_is_ok_warn_or_over_against_the_window(tmp_path):
    base = Meter(MeterSettings(model="m", models=[ModelSpec(pattern="m", window=10**6, overhead=0)]))
    empty_total = base.measure(make_state(0), tmp_path).total

    def state_with(window: int) -> str:
        settings = MeterSettings(model="m", warn=0.8, models=[ModelSpec(pattern="m", window=window, overhead=0)])
        return Meter(settings).measure(make_state(0), tmp_path).state

    assert state_with(empty_total * 2) == "ok"
    assert state_with(int(empty_total / 0.9)) == "warn"
    assert state_with(empty_total) == "warn"
    assert state_with(empty_total - 1) == "over"


def test_model_comes_from_flag_then_config_then_fractal_then_default(tmp_path, monkeypatch):
    workspace = tmp_path / "ws"
    (workspace / ".fractal").mkdir(parents=True)
    xdg = tmp_path / "xdg-config"
    (xdg / "fractal").mkdir(parents=True)
    (xdg / "fractal" / "config.toml").write_text('active_model = "claude-opus-4-1"\n')
    meter = Meter(MeterSettings())
    assert meter.resolve_model(workspace) == ("claude-opus-4-1", "Fractal's configured model")
    (workspace / ".fractal" / "config.toml").write_text('active_model = "openai/gpt-4.1-mini"\n')
    assert meter.resolve_model(workspace)[0] == "openai/gpt-4.1-mini"
    monkeypatch.setenv("FRACTAL_MODEL", "gpt-4o")
    assert meter.resolve_model(workspace)[0] == "gpt-4o"
    assert Meter(MeterSettings(model="o3")).resolve_model(workspace) == ("o3", "[meter] model")
    assert meter.resolve_model(workspace, "gpt-3.5-turbo") == ("gpt-3.5-turbo", "--model")
    monkeypatch.delenv("FRACTAL_MODEL")
    (workspace / ".fractal" / "config.toml").unlink()
    (xdg / "fractal" / "config.toml").unlink()
    assert meter.resolve_model(workspace) == ("gpt-5", "default")


def test_claude_counts_with_o200k_as_an_estimate_and_gpt4_with_cl100k(tmp_path):
    settings = MeterSettings()
    claude = Meter(settings).measure(make_state(1), tmp_path, model="anthropic/claude-sonnet-4-5")
    assert claude.encoding == "o200k_base" and claude.window == 200_000 and not claude.exact
    gpt4 = Meter(settings).measure(make_state(1), tmp_path, model="gpt-4-turbo")
    assert gpt4.encoding == "cl100k_base"
    exact = Meter(MeterSettings(models=[ModelSpec(pattern="*", window=1000, overhead=0, exact=True)]))
    assert exact.measure(make_state(1), tmp_path).exact is True


def test_measured_is_the_newest_recorded_context_with_its_turn(meter, tmp_path):
    state = make_state(4)
    state.turns[1].agent.usage = TurnUsage(context_tokens=5_000)
    state.turns[2].agent.usage = TurnUsage(context_tokens=9_000)
    state.turns[3].agent.usage = TurnUsage(context_tokens=0)
    measured = meter.measure(state, tmp_path).measured
    assert (measured.turn, measured.tokens) == (3, 9_000)
    assert measured.label == "prompt size of the last model call of turn 3"
    assert meter.measure(make_state(2), tmp_path).measured is None
