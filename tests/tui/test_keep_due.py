"""The palette's "keep every session due": a question with the count and the size, then every
session its agent deletes within a week kept (issue 26's keep in bulk)."""

from __future__ import annotations

import os
from pathlib import Path

from reprise.core.service import Service
from reprise.tui.screens.dialogs import ConfirmDialog

from ..core.claude.test_claude_source import BASH, THREE_TURNS, copy_store
from .conftest import build_app, fixed_clock, settle, until
from .test_habits import palette_prompts

OFFERED = "Keep a copy of every session its agent deletes within a week, in every folder"


def _age(path: Path, days: float) -> None:
    moment = fixed_clock() - days * 86400   # the app's clock
    os.utime(path, (moment, moment))


async def test_keep_every_session_due_asks_with_the_count_and_size_then_keeps_them(tmp_path):
    folders = copy_store(Path(os.environ["CLAUDE_CONFIG_DIR"]), tmp_path / "work")
    service = Service.from_environment(workspace=str(folders["alpha"]))
    due = Path(service.session_path(service.resolve(THREE_TURNS)))
    _age(due, 27.5)    # Claude Code deletes it in 2.5 days
    _age(Path(service.session_path(service.resolve(BASH))), 10)   # in 20 days: not due
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert any(prompt.startswith(OFFERED) for prompt in await palette_prompts(pilot))
        await pilot.press("escape")
        await settle(pilot)
        await app.screen.run_action("keep_due")
        await until(pilot, lambda: isinstance(app.screen, ConfirmDialog))
        question = app.screen.question
        assert question.startswith("Keep a copy of 1 session (")
        assert "that Claude Code deletes within 7 days" in question
        await pilot.press("enter")
        await until(pilot, lambda: any("Kept 1 session" in str(n.message) for n in app._notifications))
    kept = {row.file_id: row.kept for row in service.list_sessions().rows}
    assert kept[THREE_TURNS] and not kept[BASH]
