"""The app driven as a person would, asserting on state, files on disk and what it exits with."""

from __future__ import annotations

import asyncio
import shutil

from reprise.core import config
from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.tui.screens.dialogs import ConfirmDialog, TextDialog
from reprise.tui.screens.main import Handoff, MainScreen, Picked
from reprise.tui.screens.search import SearchScreen
from reprise.tui.widgets.composer import Composer
from reprise.tui.widgets.meter import MeterBar
from reprise.tui.widgets.session_list import SessionList

from ..core.test_store import make_state
from .conftest import build_app, settle


def header(app) -> str:
    return str(app.screen.query_one("#header").render())


def titles(app) -> list[str]:
    return [row.display_title for row in app.screen.query_one(SessionList).rows]


async def test_opens_on_the_current_workspace_with_n_of_m_and_the_first_session(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "5 of 5 sessions shown" in header(app)
        assert titles(app)[0] == "Dark mode"  # pinned first
        detail = app.screen.detail
        assert detail is not None and detail.meta.title == "Dark mode"
        summary = app.screen.query_one("#summary-view").text
        assert summary.startswith("## Session Summary")


async def test_moving_the_cursor_loads_that_sessions_detail_and_meter(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        big = next(i for i, row in enumerate(session_list.rows) if row.turns == 60)
        for _ in range(big):
            await pilot.press("down")
        await settle(pilot)
        assert app.screen.detail.ref.session_id == session_list.rows[big].file_id
        result = app.screen.meter_result
        assert result is not None and result.part("summary").tokens > 50_000
        assert "Next turn" in str(app.screen.query_one(MeterBar).render())


async def test_typing_updates_the_meter_with_the_messages_share_and_keeps_typing_free(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = app.screen.meter_result.total
        await pilot.press("tab")
        assert isinstance(app.focused, Composer)
        await pilot.press(*"please write the migration guide for version two")
        await settle(pilot)
        after = app.screen.meter_result
        assert after.part("message").full_chars == len("please write the migration guide for version two")
        assert after.total > before
        line = str(app.screen.query_one(MeterBar).render())
        assert f"draft +{after.total - before}" in line and after.draft == after.total - before
        assert "o200k_base" not in line and "estimate" not in line  # those are on the Context tab
        await pilot.press("enter")
        assert "\n" in app.screen.query_one(Composer).text  # Enter is a newline in the composer
        await pilot.press("escape")
        assert isinstance(app.focused, SessionList)


async def test_filter_shows_n_of_m_and_matches_titles_messages_and_id_prefix(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*"refactor")   # typed on the list: it filters
        await settle(pilot)
        assert titles(app) == ["Big refactor (60 turns)"]
        assert "1 of 5 sessions shown" in header(app) and "filter: refactor" in header(app)
        assert isinstance(app.focused, SessionList)
        prefix = app.screen.query_one(SessionList).rows[0].file_id[:6]
        await pilot.press(*["backspace"] * 8, *prefix)
        await settle(pilot)
        assert [r.file_id[:6] for r in app.screen.query_one(SessionList).rows] == [prefix]


async def test_scope_toggles_between_this_workspace_and_all_and_problem_files_show_with_reason(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+a")
        await settle(pilot)
        assert "10 of 10 sessions shown" in header(app) and "all workspaces" in header(app)
        rows = app.screen.query_one(SessionList).rows
        broken = [row for row in rows if row.problem_code]
        assert len(broken) == 1 and broken[0].problem_code == "invalid_json"
        assert "1 unreadable" in header(app)
        await pilot.press("ctrl+a")
        await settle(pilot)
        assert "5 of 5" in header(app)


async def test_sort_cycles_through_every_column(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        seen = []
        for _ in range(5):
            await pilot.press("ctrl+s")
            await settle(pilot)
            seen.append((app.screen.sort, app.screen.sort_reverse))
        # After NEXT, each sort again, reversed (smallest or oldest first), marked ▲ in the header.
        assert seen == [("turns", False), ("size", False), ("context", False), ("next", False), ("updated", True)]
        await pilot.press("ctrl+s")
        await settle(pilot)
        rows = app.screen.query_one(SessionList).rows
        unpinned = [r.turns for r in rows if not r.pinned]
        assert unpinned == sorted(unpinned)
        assert "TURNS▲" in str(app.screen.query_one("#columns").render())


async def test_pin_rename_and_new_change_the_files_on_disk(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        await pilot.press("down")
        await settle(pilot)
        target = session_list.current.ref
        await pilot.press("ctrl+b")
        await settle(pilot)
        assert service.sources["fractal"].store.read_meta(target).pinned is True
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert isinstance(app.screen, TextDialog)
        await pilot.press(*"Renamed here", "enter")
        await settle(pilot)
        assert service.sources["fractal"].store.read_meta(target).title == "Renamed here"
        assert "Renamed here" in titles(app)
        await pilot.press("ctrl+o")
        await pilot.pause()
        await pilot.press(*"Fresh start", "enter")
        await settle(pilot)
        current = session_list.current
        assert current.title == "Fresh start" and current.turns == 0
        assert service.sources["fractal"].store.exists(current.ref)


async def test_enter_resumes_by_exiting_with_the_agent_argv(service, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        ref = app.screen.query_one(SessionList).current.ref
        await pilot.press("enter")
        await settle(pilot)
    assert isinstance(app.return_value, Handoff)
    assert app.return_value.argv == ["fractal", "--workspace", str(service.workspace), "--resume", ref.session_id]
    assert app.return_value.cwd == str(service.workspace)


async def test_resuming_over_the_window_asks_first(demo, tmp_path, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    (tmp_path / "config.toml").write_text('[meter]\nmodel = "m"\n[[meter.models]]\npattern = "m"\nwindow = 1000\n')
    state, workspace = demo
    service = Service(config.load(state_dir=str(state)), workspace=workspace)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen) and app.return_value is None
        await pilot.press("enter")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
    assert isinstance(app.return_value, Handoff)




async def test_pick_mode_exits_with_the_selection_or_nothing(service):
    app = build_app(service, mode="pick")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
    assert isinstance(app.return_value, Picked)
    assert app.return_value.workspace == str(service.workspace)
    app = build_app(service, mode="pick")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert not app.is_running
    assert app.return_value is None


async def test_full_text_search_finds_a_word_only_in_turn_30_and_opens_it_there(service):
    ref = next(r.ref for r in service.list_sessions().rows if r.turns == 60)
    loaded = service.sources["fractal"].store.load(ref)
    loaded.state.turns[29].agent.response += " The quixotic flux capacitor was recalibrated."
    service.sources["fractal"].store.save(ref, loaded.state, expected=loaded.version)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*"quixotic", "enter")
        await settle(pilot)
        hits = app.screen.hits
        assert [(h.row.file_id, h.turn, h.field) for h in hits] == [(ref.session_id, 30, "response")]
        await pilot.press("down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.query_one(SessionList).current.file_id == ref.session_id
        landed = app.screen.query_one("#conversation-from")   # the matching line at the top of the view
        assert "quixotic flux" in landed.content.plain.split("\n")[0]
        scroll = app.screen.query_one("#conversation")
        assert scroll.scroll_y > 0 and landed.region.y == scroll.content_region.y


async def test_the_list_follows_the_disk_keeping_selection_and_composer_text(service):
    app = build_app(service, follow_disk=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        await pilot.press("down", "down")
        await settle(pilot)
        selected = session_list.current.path
        await pilot.press("tab", *"draft text")
        ref = SessionRef(service.workspace_key, "f" * 32, "fractal")
        service.sources["fractal"].store.save(ref, make_state(2, ref.session_id), expected=None)
        for _ in range(30):
            await asyncio.sleep(0.1)
            if len(session_list.rows) == 6:
                break
        await settle(pilot)
        assert len(session_list.rows) == 6
        assert session_list.current.path == selected
        assert app.screen.query_one(Composer).text == "draft text"


async def test_empty_store_shows_how_to_start_and_where_data_lives(tmp_path):
    service = Service(config.load(state_dir=str(tmp_path / "empty")), workspace=tmp_path)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        empty = str(app.screen.query_one("#empty-state").render())
        assert "ctrl+o starts a new session" in empty and str(tmp_path / "empty") in empty
        assert "0 of 0 sessions shown" in header(app)


async def test_a_large_session_opens_in_a_worker_with_a_warning(service):
    ref = SessionRef(service.workspace_key, "e" * 32, "fractal")
    state = make_state(30, ref.session_id)
    for turn in state.history:
        turn.trace = {"steps": ["x" * 400_000]}
    service.sources["fractal"].store.save(ref, state, expected=None)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*"eeee")
        await settle(pilot)
        assert app.screen.query_one(SessionList).current.file_id == "e" * 32
        assert "large session" in str(app.screen.query_one("#detail-banner").render())


async def test_hostile_text_is_shown_literally(service):
    ref = SessionRef(service.workspace_key, "d" * 32, "fractal")
    state = make_state(1, ref.session_id)
    hostile = "[bold red]boom[/] [link=https://x.test]x[/link] \x1b[31mred\x1b[0m \x07bell"
    state.turns[0].user.message = hostile
    state.turns[0].agent.response = hostile
    service.sources["fractal"].store.save(ref, state, expected=None)
    store = service.sources["fractal"].store
    store.write_meta(ref, store.read_meta(ref).model_copy(update={"title": "[b]title[/b]"}))
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*"dddd")
        await settle(pilot)
        summary = app.screen.query_one("#summary-view").text
        assert "[bold red]boom[/] [link=https://x.test]x[/link]" in summary
        assert "\x1b" not in summary and "␛[31mred" in summary
        assert app.screen.query_one(SessionList).current.display_title == "[b]title[/b]"


async def test_doctor_view_lists_the_corrupt_file(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await app.run_action("show_doctor")
        await settle(pilot)
        body = str(app.screen.query_one("#report-body").render())
        assert "invalid_json" in body


async def test_trim_dialog_previews_then_applies_and_u_undoes_it_exactly(service):
    from reprise.tui.screens.trim import TrimDialog

    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        session_list.move_to(next(i for i, r in enumerate(session_list.rows) if r.turns == 60))
        await settle(pilot)
        ref = session_list.current.ref
        original = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
        await pilot.press("ctrl+t")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, TrimDialog)
        await pilot.press("ctrl+u", *"60000")
        await settle(pilot)
        plan = dialog.result.plan
        assert plan.meter_before > 60_000 >= plan.meter_after
        assert "→" in str(dialog.query_one("#trim-preview").render())
        path = service.sources["fractal"].store.paths.session_file(ref)
        assert path.read_bytes() == original  # preview writes nothing
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and path.read_bytes() == original   # asked first
        await pilot.click("#yes")
        await settle(pilot)
        trimmed = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
        assert len(trimmed) < len(original)
        assert any(e.op == "trim" for e in service.archive_entries(ref))
        await pilot.press("ctrl+z")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original


async def test_trim_dialog_can_fork_leaving_the_original_untouched(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        ref = app.screen.query_one(SessionList).current.ref
        original = service.sources["fractal"].store.paths.session_file(ref).read_bytes()
        await pilot.press("ctrl+t")
        await settle(pilot)
        await pilot.click("#op-drop")
        await settle(pilot)
        await pilot.press(*"1")
        await settle(pilot)
        await pilot.click("#fork")
        await settle(pilot)
        assert service.sources["fractal"].store.paths.session_file(ref).read_bytes() == original
        titles_now = titles(app)
        assert "Dark mode (trimmed)" in titles_now
        fork = next(r for r in app.screen.query_one(SessionList).rows if r.title == "Dark mode (trimmed)")
        assert fork.turns == 2


async def test_d_moves_to_the_trash_after_confirming_and_u_brings_it_back(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        ref = app.screen.query_one(SessionList).current.ref
        await pilot.press("ctrl+x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press("escape")
        await settle(pilot)
        assert service.sources["fractal"].store.exists(ref)
        await pilot.press("ctrl+x")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert not service.sources["fractal"].store.exists(ref)
        assert service.sources["fractal"].store.paths.trash_file(ref).exists()
        assert "4 of 4" in header(app)
        await pilot.press("ctrl+z")
        await settle(pilot)
        await pilot.click("#yes")
        await settle(pilot)
        assert service.sources["fractal"].store.exists(ref) and "5 of 5" in header(app)


async def test_palette_views_for_trash_and_audit(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        ref = app.screen.query_one(SessionList).current.ref
        service.remove(ref)
        await app.run_action("show_audit")
        await settle(pilot)
        assert "rm" in str(app.screen.query_one("#report-body").render())
        await pilot.press("escape")
        await app.run_action("show_trash")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert service.sources["fractal"].store.exists(ref)
