"""The trim dialog on a Claude Code session: previewed and applied only as a fork (its own file is never
rewritten), and `u` on the fork moves it to Reprise's trash, the original unchanged."""

from __future__ import annotations

import os
from pathlib import Path

from reprise.tui.screens.trim import TrimDialog
from reprise.tui.widgets.session_list import SessionList

from ..core.claude.test_claude_source import THREE_TURNS, copy_store, service_in
from .conftest import build_app, settle, show_agent_hidden, trim_dialog_dropping


async def test_a_claude_session_is_trimmed_as_a_fork_and_u_trashes_the_fork(tmp_path, monkeypatch):
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    service = service_in(folders["alpha"])
    show_agent_hidden()   # the fixture's sessions were run by the SDK
    original_path = next(claude_root.glob(f"projects/*/{THREE_TURNS}.jsonl"))
    original = original_path.read_bytes()
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await trim_dialog_dropping(pilot, THREE_TURNS, "2")
        assert dialog.result is not None and dialog.result.plan.changed and dialog.result.forked
        assert not dialog.query("#apply") and not dialog.query_one("#fork").disabled   # no in-place choice
        await pilot.click("#fork")
        await settle(pilot)
        forks = [p for p in original_path.parent.glob("*.jsonl") if p.name not in {
            f.name for f in (Path(__file__).parents[1] / "fixtures" / "claude-store" / "projects").glob("*/*.jsonl")}]
        assert len(forks) == 1 and b"MARKsecond" not in forks[0].read_bytes()
        assert original_path.read_bytes() == original
        current = app.screen.query_one(SessionList).current
        assert current is not None and current.file_id == forks[0].stem and current.title.endswith("(trimmed)")
        await pilot.press("ctrl+z")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert not forks[0].exists() and original_path.read_bytes() == original


async def test_the_trim_dialog_shows_its_buttons_at_80x24(tmp_path, isolated_paths):
    """Every choice of the dialog is on screen in the smallest terminal Reprise supports, for a Fractal
    session (trim in place or as a fork) and a Claude Code one (a fork only)."""
    from textual.containers import Vertical
    from textual.widgets import Button, Input

    from tests import factories

    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    factories.write_session(isolated_paths, folders["alpha"], factories.session_bytes("fractal-trim", turns=60,
                                                                                             response_chars=6000))
    show_agent_hidden()   # the fixture's Claude Code sessions were run by the SDK
    app = build_app(service_in(folders["alpha"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        for file_id in ("fractal-trim", THREE_TURNS):
            session_list.move_to(next(i for i, r in enumerate(session_list.rows) if r.file_id == file_id))
            await settle(pilot)
            await pilot.press("ctrl+t")
            await settle(pilot)
            dialog = app.screen
            assert isinstance(dialog, TrimDialog)
            if file_id == "fractal-trim":   # a plan that changes things: the longest preview
                dialog.query_one("#trim-value", Input).value = "20000"
                await settle(pilot)
                assert dialog.result is not None and dialog.result.plan.changed
            shown = dialog.query_one(Vertical).region   # the dialog's box, clipped to the screen
            assert dialog.region.contains_region(shown)
            for button in dialog.query(Button):
                assert shown.contains_region(button.region), (file_id, button.id, button.region, shown)
            await pilot.press("escape")
            await settle(pilot)
