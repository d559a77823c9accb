"""The TUI's background fill of resume costs: the current and on-screen rows go first, and the
header says how far it is until it ends."""

from __future__ import annotations

from reprise.core.resume_costs import CostProgress
from reprise.tui.screens.main import CostsFilled
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
