"""Whole turns from the composer: ctrl+s sends, the response lands in History, the composer
clears, the meter recomputes; failures and interrupts are shown and nothing closes."""

from __future__ import annotations

import sys

from reprise.core import config
from reprise.core.service import Service
from reprise.tui.widgets.composer import Composer
from reprise.tui.widgets.session_list import SessionList

from ..core.test_agents import RECORDER
from .conftest import build_app, settle, until


def command_agent_service(demo, tmp_path, monkeypatch, *, mode: str) -> Service:
    """The demo store with the command backend running the recording fake agent in `mode`."""
    script = tmp_path / "agent.py"
    script.write_text(RECORDER)
    monkeypatch.setenv("RECORD_TO", str(tmp_path / "record.json"))
    monkeypatch.setenv("AGENT_MODE", mode)
    (tmp_path / "config.toml").write_text(f'[agent]\nbackend = "command"\nturn = ["{sys.executable}", "{script}"]\n')
    state, workspace = demo
    return Service(config.load(state_dir=str(state)), workspace=workspace)


async def type_and_send(pilot, text: str) -> None:
    await pilot.press("tab", *text, "ctrl+s")


async def test_an_echo_turn_lands_in_history_clears_the_composer_and_updates_the_meter(service):
    app = build_app(service, agent="echo")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        row = app.screen.query_one(SessionList).current
        before_total = app.screen.meter_result.total
        await type_and_send(pilot, "tell me about the cache")
        await until(pilot, lambda: app.screen.running is None and app.screen.detail is not None
                       and len(app.screen.detail.transcript.turns) == row.turns + 1)
        await settle(pilot)
        assert app.screen.query_one(Composer).text == ""
        history = app.screen.query_one("#history-view").text
        assert "User: tell me about the cache" in history
        assert app.screen.meter_result.total > before_total
        # echo is not a provider: its turn has no measured context, so nothing to compare with
        assert app.screen.detail.transcript.turns[-1].usage.context_tokens is None
        assert all(turn != row.turns + 1 for turn, _, _ in app.screen.comparisons)
        assert app.is_running


async def test_a_failed_command_turn_shows_its_error_and_keeps_the_app(demo, tmp_path, monkeypatch):
    service = command_agent_service(demo, tmp_path, monkeypatch, mode="fail")
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "do the thing")
        await until(pilot, lambda: app.screen.running is None and any(
            "failed" in n.message for n in app._notifications))
        await settle(pilot)
        assert any("something broke" in n.message for n in app._notifications)
        assert app.screen.detail.transcript.turns[-1].status == "failed"
        assert app.is_running


async def test_ctrl_c_interrupts_a_running_turn_instead_of_quitting(demo, tmp_path, monkeypatch):
    service = command_agent_service(demo, tmp_path, monkeypatch, mode="sleep")
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_and_send(pilot, "long task")
        await until(pilot, lambda: app.screen.running is not None)
        await until(pilot, lambda: (tmp_path / "record.json").exists())
        assert "running" in str(app.screen.query_one("#running").render())
        assert "ctrl+c stops" in str(app.screen.query_one("#running").render())
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.screen.running is None)
        await settle(pilot)
        assert app.is_running
        assert app.screen.detail.transcript.turns[-1].status == "interrupted"


async def test_sending_is_refused_with_a_reason_on_a_broken_row(service):
    app = build_app(service, agent="echo")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+a")
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        broken = next(i for i, row in enumerate(session_list.rows) if row.problem_code)
        session_list.move_to(broken)
        await settle(pilot)
        await type_and_send(pilot, "hello")
        await settle(pilot)
        assert any("readable session" in n.message for n in app._notifications)
