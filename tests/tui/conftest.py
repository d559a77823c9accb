"""A demo store at a fixed clock, and the app built by the same factory the CLI uses."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from reprise.core import config
from reprise.core.service import Service
from reprise.tui.app import make_app
from reprise.tui.demo import build_demo

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
SETTLE_ROUNDS = 400


def fixed_clock() -> float:
    return NOW.timestamp()


@pytest.fixture
def demo(tmp_path):
    """(state root, main workspace folder) of a freshly built demo store."""
    workspace = build_demo(tmp_path / "demo", now=NOW)
    return tmp_path / "demo" / "state", workspace


@pytest.fixture
def service(demo):
    state, workspace = demo
    return Service(config.load(state_dir=str(state)), workspace=workspace)


class FakeMonotonic:
    """The monotonic clock the dialogs read (their guard against keys typed ahead of them). Each
    read is `step` seconds after the one before, so by default every key a test presses lands well
    after the dialog opened; a test of the guard sets `step` to 0 and moves `now` itself."""

    def __init__(self, step: float = 1.0):
        self.now = 1000.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def build_app(service: Service, **kwargs):
    kwargs.setdefault("clock", fixed_clock)
    kwargs.setdefault("monotonic", FakeMonotonic())
    kwargs.setdefault("follow_disk", False)
    return make_app(service, **kwargs)


async def settle(pilot) -> None:
    """Let workers finish and their messages land, and a dialog waiting for a pause in typing run:
    until three rounds in a row find no worker unfinished. A worker started after the next paint
    (the resume costs' fill) or by the message of another's end comes a round or more later on a
    busy machine. The bound guards against a loop; it measures nothing."""
    app = pilot.app
    quiet = 0
    for _ in range(SETTLE_ROUNDS):
        await pilot.pause()
        busy = any(not worker.is_finished for worker in app.workers)
        await app.workers.wait_for_complete()
        while any(getattr(screen, "debouncing", False) for screen in app.screen_stack):
            busy = True
            await pilot.pause(0.05)
            await app.workers.wait_for_complete()
            await pilot.pause()
        quiet = 0 if busy else quiet + 1
        if quiet == 3:
            break
    else:
        raise AssertionError("the app's workers never settled")
    await pilot.pause()


async def until(pilot, predicate: Callable[[], bool], seconds: float = 30.0) -> None:
    """Let the app run until `predicate` holds: layout and scrolling land a frame or more after
    the messages that cause them, later on a busy machine. The bound is a deadlock guard, never a
    measure of speed."""
    for _ in range(int(seconds / 0.05)):
        await pilot.pause()
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("condition not reached")


async def trim_dialog_dropping(pilot, file_id: str, turn: str):
    """The trim dialog of the listed session `file_id`, on "drop turns" with turn `turn` ticked, its
    preview settled; it must offer a fork only (another agent's session)."""
    from reprise.tui.screens.trim import TrimDialog
    from reprise.tui.widgets.session_list import SessionList

    await settle(pilot)
    session_list = pilot.app.screen.query_one(SessionList)
    session_list.move_to(next(i for i, row in enumerate(session_list.rows) if row.file_id == file_id))
    await settle(pilot)
    await pilot.press("ctrl+t")
    await settle(pilot)
    dialog = pilot.app.screen
    assert isinstance(dialog, TrimDialog) and dialog.fork_only
    await pilot.click("#op-drop")
    await settle(pilot)
    await pilot.press(turn)
    await settle(pilot)
    return dialog


def show_agent_hidden(data_dir: str | None = None) -> None:
    """As a user who turned on the sessions the agents' own pickers hide (`claude -p`, SDK, `codex
    exec`; hidden by default): for tests that work on those sessions."""
    from pathlib import Path

    from reprise.core import ui_state

    ui_state.save(Path(data_dir or os.environ["REPRISE_DATA_DIR"]), ui_state.UiState(show_agent_hidden=True))


def hold_listing(monkeypatch, on_start: Callable[[], None] = lambda: None) -> tuple[threading.Event, threading.Event]:
    """`Service.list_sessions` held until the second event is set; the first is set once a listing
    began (after `on_start` ran), so a test sees the screen as it was before the disk was looked at."""
    reached, opened = threading.Event(), threading.Event()
    listed = Service.list_sessions

    def held(self, **options):
        on_start()
        reached.set()
        opened.wait(30)
        return listed(self, **options)

    monkeypatch.setattr(Service, "list_sessions", held)
    return reached, opened
