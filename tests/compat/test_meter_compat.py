"""The meter counts what Fractal really sends: each counted part appears verbatim in the prompt
Fractal's own code builds for the next turn, and the configured overhead is close to the rest."""

from __future__ import annotations

import pytest

from reprise.core import tokens
from reprise.core.meter import (
    HISTORY_DESC,
    MESSAGE_DESC,
    agents_md_section,
    as_instructions,
    history_text,
    variable_block,
)
from reprise.core.codec import decode
from reprise.core.config import MeterSettings
from reprise.core.meter import Meter
from reprise.core.summary import render_summary
from tests import factories

pytestmark = pytest.mark.compat


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
    result = fractal.one("context", workspace=str(workspace), session_id=session_id, message=message)
    assert result.get("raised") is None, result
    assert result["warnings"] == []
    return "\n".join(m["content"] for m in result["messages"])


def test_every_counted_part_is_verbatim_in_fractals_prompt(fractal, session):
    workspace, session_id, state = session
    message = "Please refactor the parser. " * 80  # longer than the 1,000-character preview
    text = prompt(fractal, workspace, session_id, message)
    agents_section = agents_md_section(workspace)[0]
    assert "[AGENTS.md truncated" in agents_section
    assert agents_section in text
    assert as_instructions(render_summary(state.summary)) in text
    assert variable_block("session_history", "list", HISTORY_DESC, history_text(state)) in text
    assert variable_block("user_message", "str", MESSAGE_DESC, message) in text


def test_configured_overhead_is_within_five_percent_of_fractals_fixed_text(fractal, session):
    workspace, session_id, state = session
    text = prompt(fractal, workspace, session_id, "hello")
    result = Meter(MeterSettings(model="gpt-5")).measure(state, workspace, "hello")
    counted = sum(part.tokens for part in result.parts if part.basis == "counted")
    fixed = tokens.count_tokens(text, "o200k_base") - counted
    overhead = result.part("overhead").tokens
    assert abs(fixed - overhead) / fixed < 0.05, f"Fractal's fixed text is {fixed} tokens, configured {overhead}"
