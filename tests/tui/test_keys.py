"""Type to find, and one way to confirm (issue 26): what is typed on the list only filters it, the
keys of the table do what it says, and a dialog that changes something takes Enter and Esc, never a
key typed ahead of it."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest
from textual import events
from textual.command import CommandPalette
from textual.keys import key_to_character
from textual.widgets import Input

from reprise.tui.actions import COMMANDS, LIST
from reprise.tui.screens.dialogs import ConfirmDialog, Dialog, TextDialog
from reprise.tui.screens.help import KeysScreen
from reprise.tui.screens.main import MainScreen
from reprise.tui.screens.search import SearchScreen
from reprise.tui.screens.trim import TrimDialog
from reprise.tui.widgets.composer import Composer
from reprise.tui.widgets.detail import DetailPane
from reprise.tui.widgets.session_list import SessionList

from .conftest import FakeMonotonic, build_app, settle
from .test_demo import codex_demo_service, demo_root, to_row  # noqa: F401 (demo_root is a fixture)

WORDS_FILE = Path(__file__).parent / "data" / "words.txt"
CLAUDE_TITLE = "Checkout: address autocomplete"   # a Claude Code row: it can be kept, trimmed, trashed


def words() -> list[str]:
    return [line for line in WORDS_FILE.read_text(encoding="utf-8").splitlines()
            if line and not line.startswith("# ")]


def printable_or_alt(key: str) -> bool:
    """A key that types a character (`a`, `A`, `question_mark`, `space`), or an alt chord (a terminal
    sends alt+x as Esc then x)."""
    if "alt+" in key or "meta+" in key:
        return True
    character = key_to_character(key.removeprefix("shift+"))
    return character is not None and character.isprintable()


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under the demo (sessions of the three agents, metadata, trash, archive), by its hash."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*")) if path.is_file()}


def test_the_table_binds_no_printable_key_and_no_alt_chord_on_the_list():
    for command in COMMANDS:
        if LIST in command.modes and command.where in ("screen", "app"):
            for key in command.keys.split(","):
                assert not key or not printable_or_alt(key.strip()), command


async def test_the_list_really_binds_no_printable_key_and_no_alt_chord(demo_root):  # noqa: F811
    app = build_app(codex_demo_service(demo_root))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.focused, SessionList)
        bound = app.screen.active_bindings   # the chain from the list up to the app, hidden ones left out
        assert "ctrl+t" in bound and "enter" in bound   # it is the list's chain
        assert [key for key in bound if printable_or_alt(key)] == []
        await pilot.press(*"cart")   # with a filter typed, the same
        await settle(pilot)
        assert app.screen.filter_text == "cart"
        assert [key for key in app.screen.active_bindings if printable_or_alt(key)] == []


async def test_a_hundred_words_typed_on_the_list_change_nothing_and_open_nothing_but_the_filter(
        demo_root, monkeypatch):  # noqa: F811
    sample = random.Random(26).sample(words(), 100)
    assert len(set(words())) == 300
    app = build_app(codex_demo_service(demo_root))
    pushed: list[object] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = tree_digest(demo_root)
        original_push = app.push_screen

        def push_screen(screen, *args, **kwargs):
            pushed.append(screen)
            return original_push(screen, *args, **kwargs)

        monkeypatch.setattr(app, "push_screen", push_screen)
        screen = app.screen
        field = screen.query_one("#filter", Input)
        for word in sample:
            await pilot.press(*word)
            await settle(pilot)
            assert field.value == word and screen.filter_text == word.strip() and field.display, word
            assert app.screen is screen and isinstance(app.focused, SessionList), word
            await pilot.press("escape")
            await settle(pilot)
            assert field.value == "" and not field.display and screen.filter_text == "", word
        await pilot.press("escape")   # on an empty filter: nothing
        await settle(pilot)
        assert app.screen is screen and app.is_running
        assert pushed == []   # no dialog opened, even for a moment
        assert screen.query_one(DetailPane).display and not screen.scope_all and screen.sort == "updated"
        assert tree_digest(demo_root) == before


async def test_backspace_edits_the_filter_and_esc_clears_it(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*"refactorx")
        await settle(pilot)
        assert len(app.screen.query_one(SessionList).rows) == 0
        await pilot.press("backspace")
        await settle(pilot)
        assert app.screen.filter_text == "refactor" and len(app.screen.query_one(SessionList).rows) == 1
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.filter_text == "" and len(app.screen.query_one(SessionList).rows) == 5


# Each key of the table on the list, and the action it runs there.
LIST_KEYS = [
    ("enter", "resume"), ("tab", "focus_composer"), ("ctrl+r", "rename"), ("ctrl+a", "toggle_scope"),
    ("ctrl+w", "choose_workspace"), ("ctrl+f", "search"), ("ctrl+e", "toggle_preview"), ("ctrl+o", "new"),
    ("ctrl+t", "trim"), ("ctrl+x", "delete"), ("ctrl+z", "undo"), ("ctrl+b", "pin"), ("ctrl+k", "keep"),
    ("ctrl+y", "copy_command"), ("ctrl+s", "cycle_sort"), ("ctrl+g", "cycle_agent"), ("f1", "keys"),
]


@pytest.mark.parametrize(("key", "action"), LIST_KEYS)
async def test_each_key_of_the_list_runs_its_action(demo_root, monkeypatch, key, action):  # noqa: F811
    """Pressed on a Claude Code row (it can take every action), the key runs the table's action and
    no other (every action of the screen is watched)."""
    ran: list[str] = []
    for name in {command.action.split("(")[0] for command in COMMANDS if command.where == "screen"}:
        monkeypatch.setattr(MainScreen, f"action_{name}", lambda self, *args, name=name: ran.append(name))
    app = build_app(codex_demo_service(demo_root))
    async with app.run_test(size=(120, 40)) as pilot:
        await to_row(pilot, CLAUDE_TITLE)
        await pilot.press(key)
        await settle(pilot)
    assert ran == [action]


async def test_the_moved_keys_do_what_the_table_says(demo_root):  # noqa: F811
    service = codex_demo_service(demo_root)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        row = await to_row(pilot, CLAUDE_TITLE)
        screen = app.screen
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert not screen.query_one(DetailPane).display
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert screen.query_one(DetailPane).display
        await pilot.press("ctrl+g")
        await settle(pilot)
        assert screen.agent_filter is not None
        assert {r.source for r in screen.query_one(SessionList).rows} == {screen.agent_filter}
        screen.agent_filter = None
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert screen.sort == "turns"
        await pilot.press("ctrl+a")
        await settle(pilot)
        assert screen.scope_all
        await pilot.press("ctrl+a")
        await settle(pilot)
        assert not screen.scope_all
        row = await to_row(pilot, CLAUDE_TITLE)
        await pilot.press("ctrl+b")
        await settle(pilot)
        assert next(r for r in screen.query_one(SessionList).rows if r.path == row.path).pinned
        await pilot.press("ctrl+k")
        await settle(pilot)
        assert any("Kept a copy" in n.message for n in app._notifications)
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.clipboard.endswith(f"claude --resume {row.file_id}")
        await pilot.press("ctrl+w")
        await settle(pilot)
        assert isinstance(app.screen, Dialog) and "workspace" in app.screen.dialog_title
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+f")
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        assert isinstance(app.screen, KeysScreen)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("tab")
        await settle(pilot)
        assert isinstance(app.focused, Composer)
        await pilot.press("escape", "f2")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("ctrl+q")
        await settle(pilot)
    assert app.return_value is None and not app.is_running


async def test_ctrl_x_asks_then_moves_to_the_trash_and_ctrl_z_brings_it_back(demo_root):  # noqa: F811
    service = codex_demo_service(demo_root)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        row = await to_row(pilot, CLAUDE_TITLE)
        await pilot.press("ctrl+x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and Path(row.path).exists()
        await pilot.press("enter")
        await settle(pilot)
        assert not Path(row.path).exists() and [e.ref for e in service.trash_entries()] == [row.ref]
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and "from the trash" in app.screen.question
        await pilot.press("enter")
        await settle(pilot)
        assert Path(row.path).exists() and service.trash_entries() == []


# --- one way to confirm ----------------------------------------------------------------------

# The dialogs that change something, the key that opens each on a Claude Code row, and its kind.
CHANGING_DIALOGS = [("ctrl+x", ConfirmDialog), ("ctrl+r", TextDialog), ("ctrl+o", TextDialog),
                    ("ctrl+t", TrimDialog)]


@pytest.mark.parametrize(("key", "kind"), CHANGING_DIALOGS)
async def test_every_changing_dialog_says_enter_and_esc_and_esc_cancels_it(demo_root, key, kind):  # noqa: F811
    service = codex_demo_service(demo_root)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_row(pilot, CLAUDE_TITLE)
        before = tree_digest(demo_root)
        await pilot.press(key)
        await settle(pilot)
        if key == "ctrl+o":   # more than one agent starts sessions: which one is asked first
            await pilot.press("enter")
            await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, kind)
        keys = str(dialog.query_one("#dialog-keys").render())
        assert keys.startswith("Esc Cancel · Enter "), keys
        assert not any(button.can_focus for button in dialog.query("#dialog-buttons Button"))
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and tree_digest(demo_root) == before


async def test_a_key_within_300_ms_of_a_dialog_opening_is_no_answer(demo_root):  # noqa: F811
    clock = FakeMonotonic(step=0.0)
    service = codex_demo_service(demo_root)
    app = build_app(service, monotonic=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        row = await to_row(pilot, CLAUDE_TITLE)
        await pilot.press("ctrl+x")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ConfirmDialog)
        clock.now += 0.299
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is dialog and Path(row.path).exists()   # typed ahead: no answer
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is dialog   # nor is Esc
        clock.now += 0.002
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and not Path(row.path).exists()


async def test_keys_typed_ahead_of_a_dialog_in_one_burst_never_confirm_it(demo_root):  # noqa: F811
    """ctrl+x and Enter delivered in one read: the Enter reaches the dialog at once, on a clock that
    has not moved, so the session stays; the same for a rename's Enter (its letter went to the
    filter or the field: either way nothing is written)."""
    clock = FakeMonotonic(step=0.0)
    service = codex_demo_service(demo_root)
    app = build_app(service, monotonic=clock)
    async with app.run_test(size=(120, 40)) as pilot:
        row = await to_row(pilot, CLAUDE_TITLE)
        before = tree_digest(demo_root)
        for key, character in (("ctrl+x", None), ("enter", "\r"), ("enter", "\r")):
            app.post_message(events.Key(key, character))
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and Path(row.path).exists()
        clock.now += 1
        await pilot.press("escape")
        await settle(pilot)
        for key, character in (("ctrl+r", None), ("x", "x"), ("enter", "\r")):
            app.post_message(events.Key(key, character))
        await settle(pilot)
        assert isinstance(app.screen, TextDialog)
        clock.now += 1
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and tree_digest(demo_root) == before


async def test_ctrl_g_visits_each_agent_with_a_session_in_view_then_all(demo_root):  # noqa: F811
    """An agent with no session in this folder is passed over: no press shows an empty list."""
    service = codex_demo_service(demo_root)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_row(pilot, CLAUDE_TITLE)
        screen = app.screen
        screen.all_rows = [row for row in screen.all_rows if row.source != "codex"]   # a folder without Codex
        screen.apply_view()
        await settle(pilot)
        present = {row.source for row in screen.all_rows}
        assert present == set(service.sources) - {"codex"}
        seen = []
        for _ in range(len(present) + 1):
            await pilot.press("ctrl+g")
            await settle(pilot)
            seen.append(screen.agent_filter)
            assert screen.agent_filter is None or screen.query_one(SessionList).rows
        assert seen[-1] is None and set(seen[:-1]) == present

