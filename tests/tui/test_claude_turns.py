"""The TUI with Claude Code sessions (issue 14): the composer sends a Claude row's turn through
`[sources.claude] send` (the fake `claude` of tests/core/claude records it), and `n` asks which
agent when two can start a session, handing the terminal to Claude Code for a Claude one."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.tui.screens.dialogs import ChoiceDialog, TextDialog
from reprise.tui.screens.main import Handoff
from reprise.tui.widgets.session_list import SessionList

from ..core.claude.test_claude_send import fake  # noqa: F401  (a fixture)
from ..core.claude.test_claude_source import copy_store
from .conftest import build_app, settle, show_agent_hidden, until
from .test_turns import type_and_send


@pytest.fixture
def alpha(tmp_path) -> Path:
    show_agent_hidden()   # the fixture's sessions were run by the SDK, which Claude Code's picker hides
    return copy_store(Path(os.environ["CLAUDE_CONFIG_DIR"]), tmp_path / "work")["alpha"]


async def test_the_composer_sends_a_claude_rows_turn_through_claude(alpha, fake):  # noqa: F811
    app = build_app(Service.from_environment(workspace=str(alpha)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        row = app.screen.query_one(SessionList).current
        assert row is not None and row.source == "claude"
        await type_and_send(pilot, "from the composer")
        await until(pilot, lambda: app.screen.running is None and app.screen.detail is not None
                       and len(app.screen.detail.transcript.turns) == row.turns + 1)
        await settle(pilot)
        [call] = fake()
        assert call["argv"] == ["--resume", row.file_id, "-p", "--output-format", "json"]
        assert call["stdin"] == "from the composer"
        assert app.screen.detail.transcript.turns[-1].reply == "Fake reply to: from the composer"
        assert any("Turn finished (claude)" in n.message for n in app._notifications)


async def test_n_asks_which_agent_and_hands_the_terminal_to_claude_code(alpha):
    service = Service.from_environment(workspace=str(alpha))
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, ChoiceDialog)
        assert [value for value, _ in app.screen.choices] == ["fractal", "claude"]
        app.screen.dismiss("claude")
        await pilot.pause()
        assert isinstance(app.screen, TextDialog)
        app.screen.dismiss("From the TUI")
        await until(pilot, lambda: not app.is_running)
    handoff = app.return_value
    assert isinstance(handoff, Handoff)
    assert handoff.argv[:2] == ["claude", "--session-id"] and handoff.cwd == str(alpha)
    # said before the agent starts, with nothing to read first: no wait for Enter
    assert handoff.notes == [] and handoff.said == [f"new Claude Code session {handoff.argv[2]}"]
    ref = SessionRef(service.workspace_key, handoff.argv[2], "claude")
    assert service.sources["claude"].read_meta(ref).title == "From the TUI"
