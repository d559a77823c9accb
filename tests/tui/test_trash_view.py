"""The Trash view restores a session of any agent: a Claude Code session and a Codex session moved to
Reprise's trash from the list come back from the view, each to its own path with its own bytes (the
view restores the entry's ref as the trash listed it, with its source)."""

from __future__ import annotations

import os
from pathlib import Path

from reprise.core import config
from reprise.core.service import Service
from reprise.tui.demo import build_demo_store
from reprise.tui.screens.dialogs import ConfirmDialog, FilterDialog
from reprise.tui.widgets.session_list import SessionList

from .conftest import NOW, build_app, settle, show_agent_hidden


def _mixed_service(tmp_path: Path, monkeypatch) -> tuple[Service, Path]:
    """The demo's three stores, with Claude Code and Codex on as `reprise --demo` sets them."""
    root = tmp_path / "demo"
    workspace, environment = build_demo_store(root, now=NOW)
    for name, value in environment.items():   # each agent's store in the demo, as `reprise --demo` sets them
        monkeypatch.setenv(name, value)
    show_agent_hidden()   # every session of the demo, those the agents' own pickers hide too
    service = Service(config.load(state_dir=str(root / "state"), env=dict(os.environ)), workspace=workspace,
                      cache=root / "cache")
    return service, root


async def test_the_trash_view_restores_a_claude_code_and_a_codex_session_byte_for_byte(tmp_path, monkeypatch):
    service, root = _mixed_service(tmp_path, monkeypatch)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        originals: dict[str, tuple[str, Path, bytes]] = {}
        for source in ("claude", "codex"):
            index = next(i for i, row in enumerate(session_list.rows) if row.source == source)
            row = session_list.rows[index]
            path = Path(row.path)
            originals[source] = (row.file_id, path, path.read_bytes())
            session_list.move_to(index)
            await settle(pilot)
            await pilot.press("ctrl+x")
            await settle(pilot)
            assert isinstance(app.screen, ConfirmDialog)
            await pilot.click("#yes")
            await settle(pilot)
            assert not path.exists(), source
            assert all(r.file_id != row.file_id for r in session_list.rows)
        assert {entry.ref.source for entry in service.trash_entries(all_workspaces=True)} >= {"claude", "codex"}

        for source, (file_id, path, data) in originals.items():
            await app.run_action("show_trash")
            await settle(pilot)
            dialog = app.screen
            assert isinstance(dialog, FilterDialog)
            await pilot.press(*file_id[-12:])   # the filter keeps this one entry
            await settle(pilot)
            assert len(dialog.shown()) == 1
            await pilot.press("enter")
            await settle(pilot)
            assert not isinstance(app.screen, FilterDialog)
            assert path.read_bytes() == data, source
            assert any(r.source == source and r.file_id == file_id for r in session_list.rows), source
        assert not any(entry.ref.session_id in {file_id for file_id, _, _ in originals.values()}
                       for entry in service.trash_entries(all_workspaces=True))
