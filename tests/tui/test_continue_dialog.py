"""ctrl+l on a Claude Code session: which agent (those that can write one, not its own), a preview of
what would be written, then the new session written, selected and titled "(from Claude Code)", the
original unchanged; ctrl+z on it moves it to the trash. On a row no other agent can take, the key is
greyed."""

from __future__ import annotations

import os
from pathlib import Path

from textual.widgets import OptionList, TextArea

from reprise.tui.screens.dialogs import BriefDialog, ChoiceDialog, ConfirmDialog
from reprise.tui.widgets.session_list import SessionList

from ..core.claude.test_claude_source import THREE_TURNS, copy_store, service_in
from .conftest import build_app, settle, show_agent_hidden


async def choose(pilot, app, value: str) -> None:
    """Pick `value` in the choice dialog on screen."""
    dialog = app.screen
    assert isinstance(dialog, ChoiceDialog)
    options = dialog.query_one(OptionList)
    options.highlighted = [option.id for option in options.options].index(value)
    await pilot.press("enter")
    await settle(pilot)


def three_turns_app(tmp_path: Path):
    """The app on the Claude Code fixture store (and an empty Codex one) in its folder `alpha`."""
    folders = copy_store(Path(os.environ["CLAUDE_CONFIG_DIR"]), tmp_path / "work")
    (Path(os.environ["CODEX_HOME"]) / "sessions").mkdir(parents=True)
    show_agent_hidden()   # the fixture's sessions were run by the SDK
    return build_app(service_in(folders["alpha"]))


async def on_three_turns(pilot, app) -> None:
    """The three-turn session selected."""
    await settle(pilot)
    session_list = app.screen.query_one(SessionList)
    session_list.move_to(next(i for i, r in enumerate(session_list.rows) if r.file_id == THREE_TURNS))
    await settle(pilot)


async def test_ctrl_l_continues_a_claude_session_in_codex_after_a_preview(tmp_path):
    app = three_turns_app(tmp_path)
    original_path = next(Path(os.environ["CLAUDE_CONFIG_DIR"]).glob(f"projects/*/{THREE_TURNS}.jsonl"))
    original = original_path.read_bytes()
    async with app.run_test(size=(120, 40)) as pilot:
        await on_three_turns(pilot, app)
        await pilot.press("ctrl+l")
        await settle(pilot)
        choice = app.screen
        assert isinstance(choice, ChoiceDialog)
        offered = [option.id for option in choice.query_one(OptionList).options]
        assert "codex" in offered and "claude" not in offered
        choice.query_one(OptionList).highlighted = offered.index("codex")
        await pilot.press("enter")
        await settle(pilot)
        await choose(pilot, app, "history")
        preview = app.screen
        assert isinstance(preview, ConfirmDialog)
        assert "Write its 3 turns as a new Codex session" in preview.question
        await pilot.click("#yes")
        await settle(pilot)
        rollouts = list(Path(os.environ["CODEX_HOME"]).glob("sessions/*/*/*/*.jsonl"))
        assert len(rollouts) == 1 and b"MARKsecond" in rollouts[0].read_bytes()
        current = app.screen.query_one(SessionList).current
        assert current is not None and current.source == "codex" and current.title.endswith("(from Claude Code)")
        assert original_path.read_bytes() == original
        await pilot.press("ctrl+z")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert not rollouts[0].exists() and original_path.read_bytes() == original


async def test_ctrl_l_with_a_brief_shows_it_editable_and_starts_the_session_with_the_edited_text(tmp_path):
    app = three_turns_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await on_three_turns(pilot, app)
        await pilot.press("ctrl+l")
        await settle(pilot)
        await choose(pilot, app, "codex")
        await choose(pilot, app, "brief")
        dialog = app.screen
        assert isinstance(dialog, BriefDialog)
        area = dialog.query_one(TextArea)
        assert area.text.startswith("These are hints from an earlier session") and "MARKfirst" in area.text
        area.text = area.text + "\nAlso: MARKedited by hand."
        await pilot.press("ctrl+s")
        await settle(pilot)
        [rollout] = list(Path(os.environ["CODEX_HOME"]).glob("sessions/*/*/*/*.jsonl"))
        assert b"MARKedited by hand." in rollout.read_bytes()
        current = app.screen.query_one(SessionList).current
        assert current is not None and current.title.endswith("(brief from Claude Code)")


async def test_continued_there_before_ctrl_l_offers_the_turns_since_or_the_whole_history_again(tmp_path):
    app = three_turns_app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        for way, written in (("history", 1), ("fresh", 2)):
            await on_three_turns(pilot, app)
            await pilot.press("ctrl+l")
            await settle(pilot)
            await choose(pilot, app, "codex")
            offered = [option.id for option in app.screen.query_one(OptionList).options]
            assert offered == (["history", "brief"] if written == 1 else ["history", "fresh", "brief"])
            await choose(pilot, app, way)
            await pilot.click("#yes")
            await settle(pilot)
            assert len(list(Path(os.environ["CODEX_HOME"]).glob("sessions/*/*/*/*.jsonl"))) == written
