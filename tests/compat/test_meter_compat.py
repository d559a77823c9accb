"""The meter counts what Fractal really sends: each counted part appears verbatim in the prompt
Fractal's own code builds for the next turn (after `add_user_message`, as its runtime does), and
the configured overhead is close to the rest."""

from __future__ import annotations

import uuid

import pytest

from reprise.core import tokens
from reprise.core.config import MeterSettings
from reprise.core.sources.fractal.codec import decode
from reprise.core.sources.fractal.meter import PENDING_TIME, PENDING_TURN_ID, Meter
from tests import factories

pytestmark = pytest.mark.compat

MESSAGES = {
    "long": "Please refactor the parser. " * 80,  # longer than the 1,000-character preview
    "short": "hello",
    "line breaks": "first\r\nsecond\n\n   \n\tindented\u2028after a separator\x0cform feed\n",
    "summary-like": "Turn 9 (turn-x)\nUser: nested\nAgent status: pending\n\n",
}


@pytest.fixture
def session(fractal, tmp_path):
    workspace = tmp_path / "project"
    workspace.mkdir()
    (workspace / "AGENTS.md").write_text("\n  Use pnpm.\n\n" + "Rules. " * 4000 + "\n")
    turns = [{"message": f"question {i} " + "why? " * 50, "status": "succeeded", "response": "answer " * 300,
              "files_read": ["a.py"], "changed_files": [], "commands_run": ["pytest"], "error": None,
              "trace": factories.run_trace(i, steps=2)} for i in range(6)]
    written = fractal.one("write_turns", workspace=str(workspace), turns=turns)
    state = decode(written["data"].encode("latin-1"), path="x", expected_id=written["session_id"]).state
    return workspace, written["session_id"], state


def prompt(fractal, workspace, session_id, message: str) -> str:
    """The first call's messages joined, with the pending turn's random id and times replaced by
    the meter's stand-ins (same shape, so every length in the prompt stays the same)."""
    result = fractal.one("context", workspace=str(workspace), session_id=session_id, message=message, pending=True)
    assert result.get("raised") is None, result
    assert result["warnings"] == []
    text = "\n".join(m["content"] for m in result["messages"])
    pending = result["pending"]
    assert len(pending["created_at"]) == len(PENDING_TIME)
    return text.replace(pending["turn_id"], PENDING_TURN_ID).replace(pending["created_at"], PENDING_TIME)


@pytest.mark.parametrize("kind", list(MESSAGES))
def test_every_counted_part_is_verbatim_in_fractals_prompt_with_the_pending_turn(fractal, session, kind):
    workspace, session_id, state = session
    message = MESSAGES[kind]
    text = prompt(fractal, workspace, session_id, message)
    texts = Meter(MeterSettings(model="gpt-5")).prepare(state, workspace).texts(message)
    assert set(texts) == {"agents_md", "summary", "history", "message"}
    assert "[AGENTS.md truncated" in texts["agents_md"]
    assert f"Turn 7 ({PENDING_TURN_ID})" in texts["summary"]
    assert texts["summary"].endswith("\n        Agent status: pending")
    for name, part in texts.items():
        assert part in text, f"the {name} part is not in Fractal's prompt"


def test_the_pending_turn_on_an_empty_session_replaces_the_no_context_sentence(fractal, tmp_path):
    workspace = tmp_path / "fresh"
    workspace.mkdir()
    session_id = uuid.uuid4().hex
    written = fractal.one("save", workspace=str(workspace), session_id=session_id)  # an empty session's file
    state = decode(written["data"].encode("latin-1"), path="x", expected_id=session_id).state
    text = prompt(fractal, workspace, session_id, "start here")
    texts = Meter(MeterSettings(model="gpt-5")).prepare(state, workspace).texts("start here")
    assert "No prior Fractal session context." not in text
    for name, part in texts.items():
        assert part in text, f"the {name} part is not in Fractal's prompt"


def test_configured_overhead_is_within_five_percent_of_fractals_fixed_text(fractal, session):
    workspace, session_id, state = session
    text = prompt(fractal, workspace, session_id, "hello")
    result = Meter(MeterSettings(model="gpt-5")).measure(state, workspace, "hello")
    counted = sum(part.tokens for part in result.parts if part.basis == "counted")
    fixed = tokens.count_tokens(text, "o200k_base") - counted
    overhead = result.part("overhead").tokens
    assert abs(fixed - overhead) / fixed < 0.05, f"Fractal's fixed text is {fixed} tokens, configured {overhead}"
