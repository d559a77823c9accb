"""Snapshots of the main screens at 120x40, built with the CLI's factory on a demo store (its
Fractal, Claude Code and Codex sessions) in a fixed folder at a fixed clock, so every pixel is deterministic."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from textual.widgets import Input

from reprise.core import config
from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.tui.demo import build_demo, claude_root
from reprise.tui.demo_codex import codex_root

from ..core.test_store import make_state
from .conftest import NOW, build_app, settle

SIZE = (120, 40)


@pytest.fixture
def snap_service():
    """The demo in its fixed folder (its path is in every picture), held under a lock for the whole
    test: two test runs on one machine (two checkouts) would otherwise rebuild it under each other."""
    root = Path(tempfile.gettempdir()) / "reprise-snapshot-demo"
    with open(f"{root}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        shutil.rmtree(root, ignore_errors=True)
        workspace = build_demo(root, now=NOW)
        env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_root(root)), CODEX_HOME=str(codex_root(root)))
        loaded = config.load(state_dir=str(root / "state"), env=env)
        service = Service(loaded, workspace=workspace, cache=root / "cache")
        yield service
        shutil.rmtree(root, ignore_errors=True)


TABS = ["show_tab('tab-summary')", "show_tab('tab-history')", "show_tab('tab-context')"]   # the palette's


def settled(*keys: str):
    """Press the keys in turn; a key written as an action (`show_tab(...)`) runs it, as the palette does."""
    async def run_before(pilot) -> None:
        await settle(pilot)
        for key in keys:
            if "(" in key:
                await pilot.app.screen.run_action(key)
            else:
                await pilot.press(key)
            await settle(pilot)
        await steady_cursors(pilot)
    return run_before


async def steady_cursors(pilot) -> None:
    """A blinking cursor is caught on or off by chance (off more often on a busy machine): every
    field's cursor is drawn steady before the picture is taken."""
    for screen in pilot.app.screen_stack:
        for field in screen.query(Input):
            field.cursor_blink = False
    await settle(pilot)


def test_main_screen(snap_compare, snap_service):
    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=settled())


@pytest.mark.parametrize("tab", TABS, ids=["summary", "history", "context"])
def test_each_detail_tab(snap_compare, snap_service, tab):
    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=settled("down", "down", tab))


@pytest.mark.parametrize("tab", TABS, ids=["summary", "history", "context"])
def test_each_detail_tab_of_a_claude_session(snap_compare, snap_service, tab):
    """The demo's Claude Code session from the terminal UI: thinking folded, a Bash call and its output."""
    keys = ["down", "down", "down", tab]
    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=settled(*keys))


def test_filtered_list_says_n_of_m(snap_compare, snap_service):
    keys = [*"refactor"]   # typed on the list
    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=settled(*keys))


def test_empty_state(snap_compare, tmp_path):
    root = Path(tempfile.gettempdir()) / "reprise-snapshot-empty"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    service = Service(config.load(state_dir=str(root / "state")), workspace=root, cache=root / "cache")
    try:
        assert snap_compare(build_app(service), terminal_size=SIZE, run_before=settled())
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_hostile_text_renders_literally(snap_compare, snap_service):
    ref = SessionRef(snap_service.workspace_key, "d" * 32, "fractal")
    state = make_state(1, ref.session_id)
    hostile = "[bold red]NOT BOLD[/] [link=https://evil.test]no link[/link] \x1b[2J\x1b[31mnot red\x1b[0m \x07"
    state.turns[0].user.message = hostile
    state.turns[0].agent.response = hostile
    state.history[0].user_message = hostile
    state.history[0].files_read = ["[i]not italic[/i].py"]
    snap_service.sources["fractal"].store.save(ref, state, expected=None)
    keys = [*"dddd"]
    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=settled(*keys))


def test_small_terminal_is_usable(snap_compare, snap_service):
    assert snap_compare(build_app(snap_service), terminal_size=(80, 24), run_before=settled())


def test_trim_dialog(snap_compare, snap_service):
    keys = ["down"] * 5 + ["ctrl+t"]   # the 60-turn Fractal session, below the demo's newer Claude Code ones

    async def run_before(pilot) -> None:
        await settled(*keys)(pilot)

    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=run_before)


def test_trim_dialog_removing_turns_at_80x24(snap_compare, snap_service):
    """The smallest terminal: the operations, the turns ticked from a typed range, the preview and
    every choice with its keys."""
    keys = ["down"] * 5 + ["ctrl+t"]

    async def run_before(pilot) -> None:
        await settled(*keys)(pilot)
        await pilot.click("#op-drop")
        await settle(pilot)
        for key in "2-4, 7":
            await pilot.press(key)
        await steady_cursors(pilot)

    assert snap_compare(build_app(snap_service), terminal_size=(80, 24), run_before=run_before)


def test_a_codex_sessions_conversation(snap_compare, snap_service):
    """The demo's interactive Codex session: its prompts, replies and the command it ran."""
    keys = ["down"] * 7   # below the demo's newer Fractal and Claude Code sessions
    assert snap_compare(build_app(snap_service), terminal_size=SIZE, run_before=settled(*keys))


SIZES = pytest.mark.parametrize("size", [(80, 24), SIZE], ids=["80x24", "120x40"])


async def searched_for_jitter(pilot) -> None:
    """The search screen with the hits of "jitter": the query set at once and searched at once (typed
    key by key, a slow machine's pause between two keys would start a search of the first letters)."""
    await settle(pilot)
    await pilot.press("ctrl+f")
    await settle(pilot)
    screen = pilot.app.screen
    screen.choice_list.prompt.value = "jitter"
    screen.typing.now("jitter")
    await settle(pilot)
    await steady_cursors(pilot)


@SIZES
def test_search_hits_with_agent_folder_age_and_the_match_centred(snap_compare, snap_service, size):
    assert snap_compare(build_app(snap_service), terminal_size=size, run_before=searched_for_jitter)


@SIZES
def test_workspace_chooser_sorted_by_activity(snap_compare, snap_service, size):
    assert snap_compare(build_app(snap_service), terminal_size=size, run_before=settled("ctrl+w"))
