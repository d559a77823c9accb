"""The trim dialog on a Claude Code session: previewed and applied only as a fork (its own file is never
rewritten), and `u` on the fork moves it to Reprise's trash, the original unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from reprise.tui.screens.trim import TrimDialog
from reprise.tui.widgets.session_list import SessionList

from ..core.claude.test_claude_source import THREE_TURNS, copy_store, service_in
from .conftest import build_app, settle


async def test_a_claude_session_is_trimmed_as_a_fork_and_u_trashes_the_fork(tmp_path, monkeypatch):
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    service = service_in(folders["alpha"])
    original_path = next(claude_root.glob(f"projects/*/{THREE_TURNS}.jsonl"))
    original = original_path.read_bytes()
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        session_list.move_to(next(i for i, r in enumerate(session_list.rows) if r.file_id == THREE_TURNS))
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, TrimDialog) and dialog.fork_only
        await pilot.click("#op-drop")
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        assert dialog.result is not None and dialog.result.plan.changed and dialog.result.forked
        assert dialog.query_one("#apply").disabled and not dialog.query_one("#fork").disabled
        await pilot.click("#fork")
        await settle(pilot)
        forks = [p for p in original_path.parent.glob("*.jsonl") if p.name not in {
            f.name for f in (Path(__file__).parents[1] / "fixtures" / "claude-store" / "projects").glob("*/*.jsonl")}]
        assert len(forks) == 1 and b"MARKsecond" not in forks[0].read_bytes()
        assert original_path.read_bytes() == original
        current = app.screen.query_one(SessionList).current
        assert current is not None and current.file_id == forks[0].stem and current.title.endswith("(trimmed)")
        await pilot.press("u")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert not forks[0].exists() and original_path.read_bytes() == original
