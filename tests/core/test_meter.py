from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core import contract, tokens
from reprise.core.config import DEFAULT_OVERHEAD, ConfigError, MeterSettings, ModelSpec
from reprise.core.errors import OverWindowError
from reprise.core.meter import ContextLimit, MeterResult, Part, user_spec
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.sources.fractal import meter as meter_module
from reprise.core.sources.fractal.meter import (
    AGENTS_MD_NOTICE,
    PENDING_TIME,
    PENDING_TURN_ID,
    Meter,
    variable_block,
)
from reprise.core.sources.fractal.models import (
    AgentTurn,
    HistoryTurn,
    SummaryTurn,
    TurnUsage,
    UserTurn,
)
from reprise.core.sources.fractal.summary import render_summary

from .test_store import make_state


@pytest.fixture
def meter():
    return Meter(MeterSettings())


def test_parts_are_named_in_prompt_order_with_their_basis(meter, tmp_path):
    result = meter.measure(make_state(3), tmp_path, "fix the bug")
    assert [p.name for p in result.parts] == ["overhead", "agents_md", "summary", "history", "message"]
    assert [p.basis for p in result.parts] == ["configured", "counted", "counted", "counted", "counted"]
    assert result.part("overhead").tokens == DEFAULT_OVERHEAD
    assert result.total == sum(p.tokens for p in result.parts)
    assert result.encoding == "o200k_base" and result.model == "gpt-5" and result.model_source == "default"
    assert result.exact is False  # a configured part is never exact


def test_summary_part_counts_the_rendered_summary_ending_with_the_draft_as_the_pending_turn(meter, tmp_path):
    state = make_state(2)
    result = meter.measure(state, tmp_path, "fix the bug")
    pending = state.model_copy(deep=True)
    pending.summary.turns.append(SummaryTurn(turn_id=PENDING_TURN_ID, user=UserTurn(message="fix the bug")))
    text = meter_module.as_instructions(render_summary(pending.summary))
    assert text.endswith(f"        Turn 3 ({PENDING_TURN_ID})\n"
                         "        User: fix the bug\n        Agent status: pending")
    assert result.part("summary").tokens == tokens.count_tokens(text, "o200k_base")
    assert result.part("summary").chars == len(text)
    empty = meter.prepare(make_state(0), tmp_path).texts("hi")["summary"]
    assert empty == f"        ## Session Summary\n        \n        Turn 1 ({PENDING_TURN_ID})\n        User: hi\n" \
                    "        Agent status: pending"


summary_text = st.lists(st.sampled_from(list("ab .,:!?-_#\t\r\n\x0c\u2028é1") + ["\r\n", "  ", "...", "Turn"]),
                        max_size=30).map("".join)


@settings(max_examples=150, deadline=None)
@given(responses=st.lists(summary_text, max_size=3), errors=st.lists(summary_text, max_size=3), draft=summary_text)
def test_the_summary_counted_in_two_pieces_equals_counting_it_whole(responses, errors, draft):
    """The keystroke path counts the summary's head once and only the pending turn per keystroke;
    the split is where the tokenizer never merges, for any text on either side."""
    state = make_state(0)
    for index, (response, error) in enumerate(zip(responses, errors, strict=False)):
        state.summary.turns.append(SummaryTurn(turn_id=f"turn-{index:032x}", user=UserTurn(message=response),
                                               agent=AgentTurn(status="failed", response=response, error=error)))
    for encoding_model in ("gpt-5", "gpt-4"):
        prepared = Meter(MeterSettings(model=encoding_model)).prepare(state, None)
        whole = prepared.texts(draft)["summary"]
        assert prepared.with_message(draft).part("summary").tokens == tokens.count_tokens(whole, prepared.spec.encoding)


def test_instruction_text_is_cleaned_as_the_prompt_adapter_cleans_it():
    text = "a\tb\r\nc\n   \n\td\u2028e\x0cf\n"
    assert meter_module.as_instructions(text) == "\n".join(
        "        " + line for line in ["a       b", "c", "", "        d", "e", "f"])


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
        turn.trace = {"steps": ["z" * 55_000]}
    part = meter.measure(state, tmp_path).part("history")
    assert part.full_chars > 1_000_000
    assert part.tokens < 800
    assert "not in the prompt" in part.note


def test_typing_retokenizes_only_the_draft_and_the_previews_never_the_whole_summary(meter, tmp_path, monkeypatch):
    state = make_state(30)
    prepared = meter.prepare(state, tmp_path)
    summary_chars = prepared.with_message("").part("summary").chars
    seen = []
    original = tokens.count_tokens
    monkeypatch.setattr(tokens, "count_tokens", lambda text, enc: seen.append(len(text)) or original(text, enc))
    for typed in ("h", "he", "hel", "hell", "hello"):
        prepared.with_message(typed)
    assert len(seen) == 5 * 3  # the pending turn, the history preview, the message preview
    assert max(seen) < 1_600 < summary_chars
    seen.clear()
    meter.prepare(make_state(30), tmp_path)  # same texts again: all from the digest cache
    assert seen == []


def test_a_failing_part_is_reported_and_the_others_still_count(meter, tmp_path, monkeypatch):
    def broken(state):
        raise RecursionError("trace too deep")

    monkeypatch.setattr(meter_module, "history_json", broken)
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
    assert claude.encoding == "o200k_base" and claude.window == 200_000 - 32_000 and not claude.exact
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


def test_the_history_preview_ends_with_the_pending_entry_and_keeps_fractals_last_20(meter, tmp_path):
    state = make_state(20)
    result = meter.measure(state, tmp_path, "add a test")
    entries = [*state.history[1:], HistoryTurn(turn_id=PENDING_TURN_ID, user_message="add a test", status="pending",
                                                created_at=PENDING_TIME, updated_at=PENDING_TIME)]
    full = meter_module.history_json(entries)
    assert result.part("history").full_chars == len(full)
    block = meter_module.variable_block("session_history", "list", meter_module.HISTORY_DESC, full)
    assert meter.prepare(state, tmp_path).texts("add a test")["history"] == block
    assert '"user_message": "add a test"' in block and "turn-" + "0" * 32 not in block  # turn 1 left the 20
    one = meter.prepare(make_state(0), tmp_path).texts("x")["history"]
    assert one == meter_module.variable_block("session_history", "list", meter_module.HISTORY_DESC,
                                              meter_module.history_json(entries[-1:]).replace("add a test", "x"))


def test_draft_is_the_total_with_the_draft_minus_the_total_with_an_empty_composer(meter, tmp_path):
    prepared = meter.prepare(make_state(3), tmp_path)
    empty = prepared.with_message("")
    assert empty.draft == 0 and empty.part("message").tokens > 40  # the empty wrapper is not typed text
    typed = prepared.with_message("please fix the failing parser test")
    assert typed.draft == typed.total - empty.total == typed.total - prepared.base_total
    assert 0 < typed.draft < 40
    ref = SessionRef(workspace_key(tmp_path), "a" * 32, "fractal")
    assert contract.dump(contract.meter(ref, typed))["draft"] == typed.draft


def test_a_long_draft_reaches_the_prompt_in_full_through_the_summary(meter, tmp_path):
    prepared = meter.prepare(make_state(1), tmp_path)
    long = ("the quick brown fox jumps over the lazy dog " * 300).strip()
    result = prepared.with_message(long)
    assert result.draft > tokens.count_tokens(long, "o200k_base")
    assert result.part("summary").tokens - prepared.with_message("").part("summary").tokens >= \
        tokens.count_tokens(long, "o200k_base")


def test_the_window_is_the_input_budget_context_minus_reserved_output(tmp_path):
    result = Meter(MeterSettings()).measure(make_state(1), tmp_path, model="gpt-5-mini")
    assert result.window == 400_000 - 128_000
    derived = ModelSpec(pattern="m", context_window=100_000, max_output=10_000)
    assert derived.window == 90_000
    assert ModelSpec(pattern="m", window=50_000).window == 50_000  # a window written before keeps its meaning
    for bad in ({}, {"context_window": 1000}, {"context_window": 1000, "max_output": 1000},
                {"window": 2000, "context_window": 1000}):
        with pytest.raises(ValueError):
            ModelSpec(pattern="m", **bad)


def test_a_window_the_session_states_wins_over_the_table(meter, tmp_path):
    result = meter.measure(make_state(1), tmp_path, stated_window=258_400)
    assert (result.window, result.window_source) == (258_400, "stated in the session file")
    assert meter.measure(make_state(1), tmp_path).window_source == "model table, pattern gpt-5*"


def test_meter_models_in_the_config_file_take_context_window_and_max_output(tmp_path):
    from reprise.core import config

    path = tmp_path / "config.toml"
    path.write_text('[[meter.models]]\npattern = "big-*"\ncontext_window = 300000\nmax_output = 50000\n'
                    '[[meter.models]]\npattern = "old-*"\nwindow = 120000\n')
    models = config.load(config_path=path, env={}).settings.meter.models
    assert [m.window for m in models] == [250_000, 120_000]
    path.write_text('[[meter.models]]\npattern = "big-*"\ncontext_window = 300000\n')
    with pytest.raises(ConfigError, match="meter.models"):
        config.load(config_path=path, env={})


def test_an_echo_turn_records_no_measured_context(tmp_path):
    from reprise.core.agents import EchoBackend, TurnRequest

    outcome = EchoBackend().run(TurnRequest("a" * 32, tmp_path, "hello there", "", 5.0, estimate=14_000),
                                threading.Event())
    assert outcome.status == "succeeded" and outcome.usage["context_tokens"] == 0
    state = make_state(1)
    state.turns[0].agent.usage = TurnUsage.model_validate(outcome.usage)
    assert Meter(MeterSettings()).measure(state, tmp_path).measured is None


@settings(max_examples=300, deadline=None)
@given(first=st.text(max_size=2_500), second=st.text(max_size=2_500))
def test_the_history_preview_ends_are_those_of_the_joined_text(first, second):
    """The keystroke path never joins the kept history (megabytes) to the pending entry: it
    derives the joined text's length and ends from the kept text's ends."""
    assert meter_module._joined_ends(meter_module._ends(first), second) == meter_module._ends(first + second)


draft_text = st.lists(st.sampled_from(["word", " ", "  ", ".", "/", "\n", "\n\n", "\r\n", "\t", "\u00a0", "\u2028",
                                       "  \n", "é", "1234", "'s", "```", "\x0b"]), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(draft=draft_text)
def test_instruction_text_split_at_token_boundaries_counts_as_the_whole(draft):
    text = meter_module.as_instructions(f"Turn 3 ({PENDING_TURN_ID})\nUser: {draft}\nAgent status: pending")
    pieces = meter_module.split_at_token_boundaries(text)
    assert "".join(pieces) == text
    for encoding in ("o200k_base", "cl100k_base"):
        assert sum(tokens.count_tokens(piece, encoding) for piece in pieces) == tokens.count_tokens(text, encoding)


def test_a_keystroke_in_a_long_draft_tokenizes_only_the_line_it_changes(meter, tmp_path, monkeypatch):
    prepared = meter.prepare(make_state(5), tmp_path)
    draft = "\n".join(f"line {i}: " + "the parser reports the column of a bad token " * 4 for i in range(60))
    prepared.with_message(draft)
    seen = []
    original = tokens.count_tokens
    monkeypatch.setattr(tokens, "count_tokens", lambda text, enc: seen.append(len(text)) or original(text, enc))
    result = prepared.with_message(draft + "x")
    assert max(seen) < 1_600 < len(draft)  # the changed line and the two previews, never the whole draft
    fresh = Meter(MeterSettings()).prepare(make_state(5), tmp_path).with_message(draft + "x")
    assert result.total == fresh.total


# --- the window may be unknown; how the turn goes (issue 25) ---------------------------------------

def _result(window: int | None, total: int, **extra) -> MeterResult:
    return MeterResult("claude-x", "test", "o200k_base", (Part("measured", total, "measured"),),
                       window=window, warn_at=0.8, measured=None, exact=False, **extra)


def test_an_unknown_window_has_no_share_no_warning_and_is_never_over():
    assert ContextLimit(None, 0.8).share(10**9) is None
    assert ContextLimit(None, 0.8).state(10**9) == "unknown"
    result = _result(None, 10**9)
    assert (result.percent, result.state) == (None, "unknown")
    assert result.sendable(confirm_over=False) is result
    document = contract.meter(SessionRef(workspace_key("/w"), "s", "fractal"), result)
    assert (document.window, document.percent, document.state) == (None, None, "unknown")
    with pytest.raises(OverWindowError):
        _result(1_000, 1_001).sendable(confirm_over=False)


def test_the_meter_document_says_how_the_turn_goes_when_the_agent_compacts_and_the_calibration():
    result = _result(200_000, 1_000, via="resume", compacts_at=167_000, calibration=1.149_96)
    document = contract.meter(SessionRef(workspace_key("/w"), "s", "fractal"), result)
    assert (document.via, document.compacts_at, document.calibration) == ("resume", 167_000, 1.15)


def test_a_users_model_entry_wins_and_the_default_table_never_counts_as_the_users():
    defaults = MeterSettings().models
    assert user_spec("claude-opus-5-5", defaults) is None
    assert user_spec("gpt-5", defaults) is None
    mine = ModelSpec(pattern="claude-opus-*", window=900_000)
    assert user_spec("claude-opus-5-5", [*defaults, mine]) is mine
    assert user_spec("anthropic/claude-opus-5-5", [mine]) is mine
    assert user_spec("claude-sonnet-5-5", [*defaults, mine]) is None
