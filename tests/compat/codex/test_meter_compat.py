"""Reprise's Codex meter (`reprise meter ID --json --via ...`) against the next request the real
Codex CLI sends (issue 25): every case of meter_cases.py within 1% of the fake server's count of
that request, and the per-version facts the meter relies on checked against the client (the TUI's
tool message, the recorded window, the auto-compaction point). One store for the module (about
100 s: the TUI runs wait for a quiet screen)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprise.core.meter import MEASURED, RESUME, SEND
from reprise.core.sources.codex.next_request import DEFERRED_TEXT, REMOVED_TEXT
from reprise.core.sources.codex.windows import catalog_window, compacts_at

from . import fake_openai
from .meter_cases import CASES, TOLERANCE, Outcome, run_cases
from .sessions import COUNTING_CONFIG, EXEC, LiveCodex, Step, make_root, remove_root

pytestmark = pytest.mark.compat


@pytest.fixture(scope="module")
def outcomes(codex_bin) -> Iterator[tuple[Path, list[Outcome]]]:
    root = make_root()
    try:
        yield root, run_cases(codex_bin, root)
    finally:
        remove_root(root)


def developer_texts(body: dict) -> list[str]:
    return [fake_openai.message_text(item) for item in body["input"]
            if item.get("type") == "message" and item.get("role") == "developer"]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[f"{c.name} ({c.via}, {len(c.draft)})" for c in CASES])
def test_the_meter_read_before_the_turn_is_within_1_percent_of_the_request_the_client_sends(outcomes, index):
    _, found = outcomes
    outcome = found[index]
    assert abs(outcome.error) <= TOLERANCE, outcome.row()
    meter = outcome.meter
    assert meter["via"] == outcome.case.via and outcome.part("message")["chars"] == len(outcome.case.draft)
    assert fake_openai.last_prompt(outcome.request) == outcome.case.draft
    names = [part["name"] for part in meter["parts"]]
    if outcome.case.compact_in_tui:     # no call measured the kept history: it is counted, never "measured"
        assert "measured" not in names and meter["measured"] is None and {"fixed", "history"} <= set(names)
    else:
        assert outcome.part("measured")["basis"] == MEASURED and outcome.part("reply")["tokens"]


def test_a_long_last_reply_and_reasoning_are_in_the_next_request_but_not_in_the_measured_call(outcomes):
    _, found = outcomes
    long_reply = next(o for o in found if o.case.name.startswith("4,000") and o.case.via == SEND)
    assert long_reply.part("reply")["chars"] >= fake_openai.LONG_REPLY_CHARS
    thinking = next(o for o in found if o.case.name.startswith("reasoning"))
    sent = [item for item in thinking.request["input"] if item.get("type") == "reasoning"]
    # every call of both turns reasoned (turn 2: the command's call and the answer after its output)
    assert len(sent) == 3 and all(item["encrypted_content"] and item["summary"] for item in sent)


def test_the_client_part_is_the_developer_message_each_way_of_sending_adds(outcomes):
    _, found = outcomes
    typed = next(o for o in found if o.case.via == RESUME and not o.case.compact_in_tui)
    assert developer_texts(typed.request)[-1] == DEFERRED_TEXT and typed.part("client")["tokens"]
    after_tui = next(o for o in found if o.case.compact_in_tui and o.case.via == SEND)
    assert developer_texts(after_tui.request)[-1] == REMOVED_TEXT and after_tui.part("client")["tokens"]
    again = next(o for o in found if o.case.compact_in_tui and o.case.via == RESUME)
    assert DEFERRED_TEXT not in developer_texts(again.request) and again.part("client")["tokens"] == 0
    plain = next(o for o in found if o.case.via == SEND and not o.case.compact_in_tui)
    assert not any(text.startswith("<tools>") for text in developer_texts(plain.request))


def test_the_window_is_the_recorded_one_and_codex_compacts_at_90_percent_of_the_whole_window(outcomes, codex_bin):
    root, found = outcomes
    first = found[0]
    assert first.meter["window"] == 475_000 == catalog_window("gpt-6.2-sol")
    assert first.meter["compacts_at"] == 450_000
    # the auto-compaction point, from the client: its last call's total against 90% of a configured window
    rollout = next((root / "home" / ".codex" / "sessions").rglob(f"rollout-*-{first.session_id}.jsonl"))
    usage = [json.loads(line)["payload"]["info"]["last_token_usage"] for line in rollout.read_text().splitlines()
             if '"token_count"' in line and '"last_token_usage"' in line][-1]
    total = usage["total_tokens"]
    roomy, tight = (total * 10 + 8) // 9 + 20, (total * 10) // 9 - 20   # 90% of them: just over / under the total
    compacted = {}
    for window in (roomy, tight):
        live = LiveCodex(codex_bin, root / f"window-{window}", config=COUNTING_CONFIG)
        shutil.copytree(rollout.parent.parents[2], live.sessions)
        work = live.root / "work"
        work.mkdir()
        result = live.one(Step([*EXEC, "-c", f"model_context_window={window}", "resume", first.session_id,
                                "Probe MARKprobe"], work))
        assert result.returncode == 0, result.describe()
        compacted[window] = [fake_openai.request_kind(body) for body in result.responses][0] == "summary"
        recorded = [json.loads(line)["payload"]["info"]["model_context_window"]
                    for line in live.rollout(first.session_id).read_text().splitlines()
                    if '"token_count"' in line and '"model_context_window"' in line][-1]
        assert abs(recorded - window * 0.95) < 1
        limit = compacts_at({}, (), recorded, "gpt-6.2-sol")[0]
        # `recorded` is 95% of the window as a whole number: taken back to 90% of the window, that
        # rounding is off by up to 0.9/0.95 of a token, plus the limit's own rounding
        assert limit is not None and abs(limit - window * 0.9) < 2
    assert compacted == {roomy: False, tight: True}
