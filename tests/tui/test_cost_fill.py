"""The TUI's background fill of resume costs: the current and on-screen rows go first, and the
header says how far it is until it ends; and how far the read of the files is while the rows load."""

from __future__ import annotations

import os

from reprise.core.progress import Progress
from reprise.core.resume_costs import CostProgress
from reprise.tui.messages import CostsFilled
from reprise.tui.widgets.session_list import SessionList

from .conftest import build_app, settle


def _header(app) -> str:
    return str(app.screen.query_one("#header").render())


async def test_the_fill_starts_with_the_current_row_then_the_rows_on_screen(service, monkeypatch):
    calls = []
    real = service.fill_resume_costs

    def recording(rows, **kwargs):
        calls.append((list(rows), list(kwargs["first"])))
        return real(rows, **kwargs)

    monkeypatch.setattr(service, "fill_resume_costs", recording)
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        assert calls, "no fill ran"
        rows, first = calls[0]
        assert first[0].path == session_list.rows[0].path  # the cursor's row
        assert [row.path for row in first[1:len(session_list.rows) + 1]] == [row.path for row in session_list.rows]
        assert all(row.resume_cost is not None for row in session_list.rows if not row.problem_code)


async def test_the_header_shows_the_fills_progress_until_it_ends(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "costs" not in _header(app)
        app.screen.post_message(CostsFilled(CostProgress(1_200, 4_000)))
        await pilot.pause()
        assert "costs 1,200/4,000" in _header(app)
        app.screen.post_message(CostsFilled(CostProgress(4_000, 4_000)))
        await pilot.pause()
        assert "costs" not in _header(app)


async def test_a_refresh_after_the_fill_reads_no_details_and_restarts_no_fill(demo, service, monkeypatch):
    # Files written seconds ago are read again by the next listing (a rewrite in the same clock tick
    # could keep their stat), and a re-read past the store's digest window keeps no cost: the demo's
    # files are dated an hour back, as a store's are, so the refresh reads the catalog's figures.
    files = list((demo[0] / "workspaces").glob("*/sessions/*.json"))
    assert files
    for path in files:
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns - 3_600 * 10**9, stat.st_mtime_ns - 3_600 * 10**9))
    counts = {"details": 0, "fills": 0}
    details, fill = service.load_details, service.fill_resume_costs

    def counting_details(rows):
        counts["details"] += 1
        return details(rows)

    def counting_fill(rows, **kwargs):
        counts["fills"] += 1
        return fill(rows, **kwargs)

    monkeypatch.setattr(service, "load_details", counting_details)
    monkeypatch.setattr(service, "fill_resume_costs", counting_fill)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        rows = app.screen.query_one(SessionList).rows
        assert all(row.resume_cost is not None for row in rows if not row.problem_code)
        before = dict(counts)
        rows[0].resume_cost = None   # as if the fill had not reached it: another process stored it
        app.screen.load_rows()
        await settle(pilot)
        assert counts == before   # the stored costs changed, the rows did not
        assert rows[0].resume_cost is not None  # the figure the catalog holds is taken


async def test_a_stopped_fill_leaves_no_figure_in_the_header(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.post_message(CostsFilled(CostProgress(50, 4_000)))
        await pilot.pause()
        assert "costs 50/4,000" in _header(app)
        app.screen.post_message(CostsFilled(None))   # cancelled by a change of scope
        await pilot.pause()
        assert "costs" not in _header(app)


async def test_while_the_rows_load_the_header_says_how_many_files_are_read(service):
    # a cold listing of thousands of Claude Code and Codex files takes minutes: the count, not only "loading"
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        screen.rows_loading = True
        screen._files_read(Progress("reading", 1_200, 4_000))
        await pilot.pause()
        assert "reading 1,200/4,000 sessions…" in _header(app)
        screen._files_read(Progress("reading", 4_000, 4_000))   # the end is always posted
        await pilot.pause()
        assert "reading" not in _header(app) and "loading sessions…" in _header(app)
        screen.load_rows()
        await settle(pilot)
        assert "loading" not in _header(app)
