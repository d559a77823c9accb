"""A source whose session spans several files and whose agent runs a session only in its very folder
(the test SQLite agent: `file_is_session` False, `resume_folder = "exact"`), in the TUI: its rows are
its sessions (one row for a session of two records), found, filtered and copied by the session's id,
never a file's; and the resume key on a session whose folder is gone says which folder and how to go
on, running nothing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from reprise.core.service import Service
from reprise.core.sources.samples import SampleSet
from reprise.tui.screens.main.rows import match_rank, matches
from reprise.tui.widgets.session_list import SessionList
from tests.sources.sqlite_store import sqlite_samples

from .conftest import build_app, settle, until


@pytest.fixture
def sqlite_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SampleSet]:
    with sqlite_samples(tmp_path, monkeypatch) as written:
        yield written


async def test_rows_are_sessions_found_and_copied_by_the_sessions_id(sqlite_store):
    resumed = sqlite_store.sessions[2]
    app = build_app(Service.from_environment(workspace=str(resumed.folder)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        rows = [row for row in app.screen.query_one(SessionList).rows if row.source == "sqlite-test"]
        assert [row.id for row in rows] == [resumed.session_id]   # two records, one row
        row = rows[0]
        assert row.file_id != row.id and row.turns == len(resumed.prompts)
        assert matches(row, resumed.session_id[:6]) and match_rank(row, resumed.session_id[:6]) == 3
        assert not matches(row, row.file_id[:6])   # a record's id is not the session's
        await app.screen.run_action("copy_id")
        assert app.clipboard == resumed.session_id


async def test_the_resume_key_on_a_session_whose_folder_is_gone_says_how_to_go_on(sqlite_store):
    sample = sqlite_store.sessions[0]
    app = build_app(Service.from_environment(workspace=str(sample.folder)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        session_list.move_to(next(i for i, row in enumerate(session_list.rows) if row.id == sample.session_id))
        await settle(pilot)
        shutil.rmtree(sample.folder)
        await pilot.press("enter")
        await until(pilot, lambda: any("only in the folder it ran in" in str(n.message) for n in app._notifications))
        said = next(str(n.message) for n in app._notifications if "only in the folder it ran in" in str(n.message))
        assert f"which is gone: {sample.folder}." in said and f"mkdir -p {sample.folder}" in said
        assert f"reprise show {sample.session_id}" in said
        assert app.return_value is None   # no handoff: the agent was not run
