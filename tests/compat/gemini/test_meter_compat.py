"""Reprise's Gemini CLI meter (`reprise meter ID --json --via ...`) against the next request the real
Gemini CLI sends (issue 29): every case of meter_cases.py within 1% of the fake server's count of that
request, and the per-version facts the meter relies on checked against the client's requests (the
system instruction and tools of each way a turn is sent, the tools only `--yolo` and the TUI offer,
a resumed history's tool results sent twice, thoughts never sent, the window and compression point).
One store for the module (about two minutes on a busy machine)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from reprise.core.meter import ESTIMATED, MEASURED, RESUME, SEND
from reprise.core.sources.gemini.meter import FIXED_TOKENS, HEADLESS, INTERACTIVE, YOLO
from reprise.core.sources.gemini.next_request import WIDE_TOOLS
from reprise.core.sources.gemini.windows import compacts_at, token_limit

from . import fake_gemini
from .meter_cases import CASES, TOLERANCE, Outcome, run_cases

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def outcomes(gemini_bin: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Outcome]]:
    yield run_cases(gemini_bin, tmp_path_factory.mktemp("gemini-meter"))


def fixed_tokens(body: dict) -> int:
    """The fake's count of a request's system instruction and function declarations."""
    return (fake_gemini.count(fake_gemini.system_text(body))
            + sum(fake_gemini.count(fake_gemini.dumps(d)) + fake_gemini.FRAME for d in fake_gemini.declarations(body)))


def tool_names(body: dict) -> set[str]:
    return {str(declaration.get("name")) for declaration in fake_gemini.declarations(body)}


def find(found: list[Outcome], name: str, via: str) -> Outcome:
    return next(outcome for outcome in found if outcome.case.name == name and outcome.case.via == via)


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.name} ({c.via}, {len(c.draft)})" for c in CASES])
def test_the_meter_read_before_the_turn_is_within_1_percent_of_the_request_the_client_sends(outcomes, index):
    outcome = outcomes[index]
    assert abs(outcome.error) <= TOLERANCE, outcome.row()
    meter = outcome.meter
    assert meter["via"] == outcome.case.via and outcome.part("message")["chars"] == len(outcome.case.draft)
    assert fake_gemini.last_prompt(outcome.request) == outcome.case.draft
    names = [part["name"] for part in meter["parts"]]
    if outcome.case.fork_of is not None:   # its copied usage describes the untrimmed session: none is measured
        assert meter["measured"] is None and outcome.part("fixed")["basis"] == ESTIMATED and "since" not in names
    else:
        assert meter["measured"] is not None and names == ["fixed", "history", "since", "message"]
        assert outcome.part("since")["tokens"] > 0


def test_the_fixed_prompt_of_each_way_of_sending_is_the_clients(outcomes):
    headless = find(outcomes, "one turn", SEND).request
    yolo = find(outcomes, "after a shell tool call", SEND).setup[0]
    interactive = find(outcomes, "one turn", RESUME).request
    measured = {HEADLESS: fixed_tokens(headless), YOLO: fixed_tokens(yolo), INTERACTIVE: fixed_tokens(interactive)}
    # each case's folder and store paths are in its system instruction: they move it by a few tokens
    for mode, tokens in measured.items():
        assert abs(tokens - FIXED_TOKENS[mode]) <= 0.005 * FIXED_TOKENS[mode], (mode, tokens)
    for mode in (YOLO, INTERACTIVE):
        difference = measured[mode] - measured[HEADLESS]
        assert abs(difference - (FIXED_TOKENS[mode] - FIXED_TOKENS[HEADLESS])) <= 10, (mode, difference)
    assert tool_names(yolo) - tool_names(headless) == WIDE_TOOLS
    assert tool_names(interactive) - tool_names(yolo) == {"ask_user"}
    # a measured call of a --yolo turn, sent headless: the fixed part less the tools it no longer offers
    shell = find(outcomes, "after a shell tool call", SEND)
    assert shell.part("fixed")["basis"] == ESTIMATED and shell.part("fixed")["tokens"] == fixed_tokens(shell.request)
    assert find(outcomes, "three turns, a thought", SEND).part("fixed")["basis"] == MEASURED


def test_a_resumed_history_sends_each_earlier_tool_result_twice_and_no_thought(outcomes):
    shell = find(outcomes, "after a shell tool call", SEND).request
    responses = [part for content in shell["contents"] for part in content["parts"] if "functionResponse" in part]
    assert len(responses) == 2 and responses[0] == responses[1]
    thought = find(outcomes, "three turns, a thought", SEND)
    asked = [index for index, body in enumerate(thought.setup) if fake_gemini.last_prompt(body).startswith("THINK")]
    assert asked and asked[0] < len(thought.setup) - 1     # a reply with a thought, and a request after it
    for body in [*thought.setup[asked[0] + 1:], thought.request]:
        assert not any(part.get("thought") for content in body["contents"] for part in content["parts"])
        assert "**Thinking" not in str(body["contents"])


def test_the_window_is_the_clients_token_limit_and_it_compresses_at_half_of_it(outcomes):
    first = find(outcomes, "one turn", SEND)
    model = first.meter["model"]
    assert model.startswith("gemini-") and first.meter["model_source"] == "the session's newest reply"
    assert first.meter["window"] == token_limit(model) == 1_048_576
    assert first.meter["compacts_at"] == compacts_at(model, 0.5) == 524_288
