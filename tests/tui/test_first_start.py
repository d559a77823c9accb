"""A first start: the rows a cold listing reads are shown while it reads, newest first, with the
header saying how far it is; the listing's end replaces them. The read is held at a gate after the
first batch, so what is on screen before the end is known without any timing."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from reprise.core import catalog as catalog_module
from reprise.core import config
from reprise.core.service import Service
from reprise.tui.first_rows import FirstRows
from reprise.tui.widgets.session_list import SessionList
from tests.factories import session_bytes, session_id_for, write_session
from tests.tui.conftest import build_app, hold_listing, settle, until

SESSIONS = 40   # the serial read reports every SERIAL_BATCH (16) files


class Gate:
    """Holds the catalog's read of the file after the first `before` files until opened."""

    def __init__(self, before: int):
        self.before = before
        self.count = 0
        self.reached = threading.Event()
        self.opened = threading.Event()

    def wrap(self, read_file):
        def gated(source, file, now_ns):
            self.count += 1
            if self.count == self.before + 1:
                self.reached.set()
                self.opened.wait(30)
            return read_file(source, file, now_ns)
        return gated


@pytest.fixture
def store(tmp_path):
    """SESSIONS Fractal sessions in one folder, the n-th written n minutes after the first."""
    state, workspace = tmp_path / "state", tmp_path / "work"
    workspace.mkdir()
    for index in range(SESSIONS):
        session_id = session_id_for(f"session-{index}")
        path = write_session(state, workspace, session_bytes(session_id, turns=1, seed=index))
        os.utime(path, ns=(1_700_000_000_000_000_000 + index * 60 * 10**9,) * 2)
    return state, workspace


async def _gated_start(store, monkeypatch, gate: Gate):
    monkeypatch.setattr(catalog_module, "_read_file", gate.wrap(catalog_module._read_file))
    state, workspace = store
    service = Service(config.load(state_dir=str(state)), workspace=workspace)
    return build_app(service)


async def _first_batch_shown(pilot, gate: Gate):
    """Once the read waits at the gate, until the rows read before it are on the list: the main
    screen and its list."""
    assert await asyncio.to_thread(gate.reached.wait, 30), "the read never reached the gate"
    screen = pilot.app.main_screen
    session_list = screen.query_one(SessionList)
    await until(pilot, lambda: len(session_list.rows) == catalog_module.SERIAL_BATCH)
    return screen, session_list


@pytest.mark.parametrize("size", [(120, 30)])
async def test_rows_appear_while_a_cold_listing_reads_newest_first(store, monkeypatch, size):
    gate = Gate(before=catalog_module.SERIAL_BATCH)
    app = await _gated_start(store, monkeypatch, gate)
    async with app.run_test(size=size) as pilot:
        screen, session_list = await _first_batch_shown(pilot, gate)
        assert screen.rows_loading   # the listing has not ended: these rows came while it read
        shown = {row.file_id for row in session_list.rows}
        newest = {session_id_for(f"session-{index}") for index in range(SESSIONS - catalog_module.SERIAL_BATCH,
                                                                          SESSIONS)}
        assert shown == newest
        header = str(screen.query_one("#header").render())
        assert f"reading {catalog_module.SERIAL_BATCH}/{SESSIONS} sessions" in header
        assert f"{catalog_module.SERIAL_BATCH} of {catalog_module.SERIAL_BATCH} sessions shown" in header
        gate.opened.set()
        await settle(pilot)
        assert not screen.rows_loading and len(session_list.rows) == SESSIONS
        assert "reading" not in str(screen.query_one("#header").render())


async def test_the_cursor_stays_on_the_session_the_user_moved_to_while_rows_come_in(store, monkeypatch):
    gate = Gate(before=catalog_module.SERIAL_BATCH)
    app = await _gated_start(store, monkeypatch, gate)
    async with app.run_test(size=(120, 30)) as pilot:
        screen, session_list = await _first_batch_shown(pilot, gate)
        await pilot.press("down", "down")
        chosen = session_list.current
        assert chosen is not None and session_list.cursor == 2
        gate.opened.set()
        await settle(pilot)
        assert len(session_list.rows) == SESSIONS and session_list.current is not None
        assert session_list.current.path == chosen.path


async def test_a_filter_typed_while_rows_come_in_applies_to_the_later_rows(store, monkeypatch):
    gate = Gate(before=catalog_module.SERIAL_BATCH)
    app = await _gated_start(store, monkeypatch, gate)
    async with app.run_test(size=(120, 30)) as pilot:
        screen, session_list = await _first_batch_shown(pilot, gate)
        oldest = session_id_for("session-0")   # not read yet: behind the gate
        screen.type_into_filter(oldest[:12])
        await pilot.pause()
        assert session_list.rows == []
        gate.opened.set()
        await settle(pilot)
        assert [row.file_id for row in session_list.rows] == [oldest]


async def test_the_first_frame_shows_the_stored_rows_before_the_disk_is_looked_at(store, monkeypatch):
    state, workspace = store
    Service(config.load(state_dir=str(state)), workspace=workspace).list_sessions()   # a warm catalog
    reached, opened = hold_listing(monkeypatch)
    app = build_app(Service(config.load(state_dir=str(state)), workspace=workspace))
    async with app.run_test(size=(120, 30)) as pilot:
        assert await asyncio.to_thread(reached.wait, 30), "the listing never started"
        screen = app.main_screen
        session_list = screen.query_one(SessionList)
        await until(pilot, lambda: len(session_list.rows) == SESSIONS)
        assert screen.rows_loading   # drawn from the stored rows: the listing has not looked yet
        assert session_list.rows[0].file_id == session_id_for(f"session-{SESSIONS - 1}")
        assert session_list.rows[0].fields.first_message
        opened.set()
        await settle(pilot)
        assert not screen.rows_loading and len(session_list.rows) == SESSIONS


def _gated_listing(monkeypatch, seen: list[int], screen_rows) -> tuple[threading.Event, threading.Event]:
    """Service.list_sessions held until opened; `seen` gets how many rows the list held when it began."""
    return hold_listing(monkeypatch, lambda: seen.append(screen_rows()))


async def test_rows_read_since_the_process_started_are_in_the_first_frame(store, monkeypatch):
    state, workspace = store
    Service(config.load(state_dir=str(state)), workspace=workspace).list_sessions()   # a warm catalog
    service = Service(config.load(state_dir=str(state)), workspace=workspace)
    first = FirstRows(service)
    expected = [row.path for row in first.rows()]   # read before the app starts, as `reprise` does
    calls: list[int] = []
    stored = Service.stored_rows
    monkeypatch.setattr(Service, "stored_rows", lambda self, **options: calls.append(1) or stored(self, **options))
    app = build_app(service, first_rows=first)
    seen: list[int] = []
    reached, opened = _gated_listing(monkeypatch, seen, lambda: len(app.main_screen.query_one(SessionList).rows))
    async with app.run_test(size=(120, 30)) as pilot:
        assert await asyncio.to_thread(reached.wait, 30), "the listing never started"
        screen = app.main_screen
        session_list = screen.query_one(SessionList)
        # drawn at mount, before the listing began (it waits for the first frame), not read again
        assert seen == [SESSIONS] and calls == [] and screen.rows_loading
        assert session_list.cursor == 0 and session_list.rows[0].file_id == session_id_for(f"session-{SESSIONS - 1}")
        assert sorted(row.path for row in session_list.rows) == sorted(expected)
        assert "loading sessions…" in str(screen.query_one("#header").render())
        opened.set()
        await settle(pilot)
        assert not screen.rows_loading and len(session_list.rows) == SESSIONS and session_list.cursor == 0
        assert app.first_rows is None and calls == []


async def test_rows_still_being_read_at_mount_are_waited_for_by_the_listing(store, monkeypatch):
    state, workspace = store
    Service(config.load(state_dir=str(state)), workspace=workspace).list_sessions()
    service = Service(config.load(state_dir=str(state)), workspace=workspace)
    held, calls = threading.Event(), []
    stored = Service.stored_rows

    def slow(self, **options):
        calls.append(1)
        held.wait(30)
        return stored(self, **options)

    monkeypatch.setattr(Service, "stored_rows", slow)
    first = FirstRows(service)   # its thread waits at `held`
    app = build_app(service, first_rows=first)
    seen: list[int] = []
    reached, opened = _gated_listing(monkeypatch, seen, lambda: len(app.main_screen.query_one(SessionList).rows))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = app.main_screen
        session_list = screen.query_one(SessionList)
        assert not first.ready() and session_list.rows == [] and not reached.is_set()
        held.set()
        assert await asyncio.to_thread(reached.wait, 30), "the listing never started"
        await until(pilot, lambda: len(session_list.rows) == SESSIONS)
        assert screen.rows_loading and calls == [1]   # the rows of the thread, not a second read
        opened.set()
        await settle(pilot)
        assert not screen.rows_loading and len(session_list.rows) == SESSIONS and calls == [1]
