"""The habits people bring (fzf, the agents' pickers), pinned with Pilot: list keys, copying,
the key list, the palette's order, the picker, ctrl+c's order, the footer's greying, the meter's
one run per pause in typing, the narrow layout."""

from __future__ import annotations

import asyncio

from textual import events
from textual.command import CommandList, CommandPalette
from textual.widgets import Input, TextArea

from reprise.tui.messages import DetailLoaded
from reprise.tui.screens.help import KeysScreen
from reprise.tui.screens.main import MainScreen, Picked, match_rank
from reprise.tui.widgets.composer import Composer
from reprise.tui.widgets.detail import DetailPane
from reprise.tui.widgets.filter_prompt import FilterPrompt
from reprise.tui.widgets.session_list import SessionList

from .conftest import build_app, settle, until
from .test_turns import command_agent_service


def session_list(app) -> SessionList:
    return app.screen.query_one(SessionList)


def notes(app) -> list[str]:
    return [n.message for n in app._notifications]


async def test_end_home_pages_and_ctrl_n_ctrl_p_move_the_list(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+a")   # all workspaces: 10 rows, more than the stacked list shows
        await settle(pilot)
        listed = session_list(app)
        assert len(listed.rows) == 10
        await pilot.press("end")
        assert listed.cursor == 9
        await pilot.press("home")
        assert listed.cursor == 0
        await pilot.press("ctrl+n", "ctrl+n", "down")
        assert listed.cursor == 3
        await pilot.press("ctrl+p", "up")   # ctrl+p moves up, as in fzf: the palette is F2's
        assert listed.cursor == 1 and isinstance(app.screen, MainScreen)
        page = listed.size.height - 1   # a page keeps one row of the last in view
        assert page >= 17   # at 80x24 the list has the screen: 18 rows and more
        await pilot.press("pagedown")
        assert listed.cursor == min(1 + page, 9)
        await pilot.press("pageup")
        assert listed.cursor == max(listed.cursor - page, 0) == 0


async def test_the_palette_copies_the_id_and_ctrl_y_the_whole_resume_command_and_both_are_shown(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        row = session_list(app).current
        await app.screen.run_action("copy_id")
        await settle(pilot)
        assert app.clipboard == row.file_id
        assert any(row.file_id in note and "Copied the id" in note for note in notes(app))
        await pilot.press("ctrl+y")
        await settle(pilot)
        command = f"cd {service.workspace} && fractal --workspace {service.workspace} --resume {row.file_id}"
        assert app.clipboard == command
        assert any(command in note for note in notes(app))


async def test_f1_opens_the_key_list_that_fits_80x24_and_scrolls(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)
        box = app.screen.query_one("KeysScreen > Vertical").region
        assert box.x >= 0 and box.y >= 0 and box.right <= 80 and box.bottom <= 24
        body = app.screen.query_one("#keys-body")
        assert body.size.height > box.height   # more keys than fit: it scrolls
        scroller = app.screen.query_one("KeysScreen VerticalScroll")
        await pilot.press("down", "down")
        assert scroller.scroll_y > 0
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def palette_prompts(pilot) -> list[str]:
    """Open the command palette and read what it lists before anything is typed."""
    app = pilot.app
    await pilot.press("f2")
    await settle(pilot)
    for _ in range(20):
        await asyncio.sleep(0.05)
        await pilot.pause()
        if app.screen.query_one(CommandList).option_count > 5:
            break
    assert isinstance(app.screen, CommandPalette)
    commands = app.screen.query_one(CommandList)
    return [str(commands.get_option_at_index(i).prompt) for i in range(commands.option_count)]


async def test_the_empty_palette_lists_doctor_trash_and_audit_first_with_plain_words(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("tab")   # opened from the composer, it still offers the list's actions
        prompts = await palette_prompts(pilot)
        assert any(prompt.startswith("Trim the selected session") for prompt in prompts)
        assert prompts[0].startswith("Doctor:") and prompts[1].startswith("Trash:") and prompts[2].startswith("Audit")
        assert prompts[3].startswith("Resume the selected session")
        assert any(prompt.startswith("Quit") for prompt in prompts[4:])   # Textual's own come after


async def test_the_pickers_palette_offers_no_action_that_changes_a_session(service):
    app = build_app(service, mode="pick")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        prompts = await palette_prompts(pilot)
        assert prompts[0].startswith("Doctor:")
        assert not any(prompt.startswith(("Trim", "Rename", "Start a new", "Move the selected")) for prompt in prompts)


async def test_pick_mode_letters_go_to_the_filter_and_keys_move_the_list_from_it(service):
    app = build_app(service, mode="pick")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert isinstance(app.focused, FilterPrompt)
        assert not app.screen.query(Composer) and not app.screen.query("#meter")
        listed = session_list(app)
        await pilot.press("down", "ctrl+n", "ctrl+j")
        assert listed.cursor == 3
        await pilot.press("ctrl+k", "up")
        assert listed.cursor == 1
        await pilot.press("end")
        assert listed.cursor == len(listed.rows) - 1
        await pilot.press("home")
        assert listed.cursor == 0
        await pilot.press(*"qdtanr")   # would be quit, trash, trim, all, new, rename on the list
        await settle(pilot)
        assert app.screen.query_one("#filter").value == "qdtanr" and app.is_running
        await pilot.press("escape")    # clears the filter...
        await settle(pilot)
        assert app.screen.query_one("#filter").value == "" and app.is_running
        assert len(listed.rows) == 5
        await pilot.press("escape")    # ...then cancels
        await settle(pilot)
    assert app.return_value is None


async def test_pick_mode_selects_the_best_match_and_enter_picks_it(service):
    app = build_app(service, mode="pick")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        listed = session_list(app)
        await pilot.press(*"re")   # "Big refactor" (a word starts with it) beats titles that only hold it
        await settle(pilot)
        best = min(listed.rows, key=lambda row: match_rank(row, "re"))
        assert match_rank(listed.current, "re") == 1 and listed.current is best
        await pilot.press(*"f")
        await settle(pilot)
        picked = listed.current
        assert picked.display_title == "Big refactor (60 turns)"
        await pilot.press("enter")
        await settle(pilot)
    assert isinstance(app.return_value, Picked)
    assert app.return_value.ref.session_id == picked.file_id


async def test_ctrl_c_clears_a_draft_that_ctrl_z_brings_back_then_quits_on_the_second_press(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("tab", *"half a thought")
        await pilot.press("ctrl+c")
        composer = app.screen.query_one(Composer)
        assert composer.text == "" and app.is_running
        assert any("ctrl+c cleared the draft" in note and "ctrl+z" in note for note in notes(app))
        await pilot.press("ctrl+z")   # the composer's undo
        assert composer.text == "half a thought"
        await pilot.press("ctrl+c", "escape")
        assert composer.text == ""
        await app.screen.run_action("restore_draft")   # from the list: the palette's (ctrl+z undoes a trim there)
        assert composer.text == "half a thought"
        await pilot.press("escape")
        composer.clear()
        await pilot.press("ctrl+c")
        assert app.is_running and any("again to quit" in note for note in notes(app))
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_value is None and not app.is_running


async def test_ctrl_c_interrupts_a_running_turn_first_and_the_draft_comes_back(demo, tmp_path, monkeypatch):
    service = command_agent_service(demo, tmp_path, monkeypatch, mode="sleep")
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("tab", *"long task", "ctrl+s")
        await until(pilot, lambda: app.screen.running is not None)
        await until(pilot, lambda: (tmp_path / "record.json").exists())
        composer = app.screen.query_one(Composer)
        assert composer.text == ""   # the message left with its turn
        line = app.screen.query_one("#running")
        assert line.display and line.region.width <= 80 and "ctrl+c stops" in str(line.render())
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.screen.running is None)
        await settle(pilot)
        assert app.is_running and not line.display
        assert composer.text == "long task"


async def test_a_failed_turn_puts_the_draft_back_in_the_composer(demo, tmp_path, monkeypatch):
    service = command_agent_service(demo, tmp_path, monkeypatch, mode="fail")
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("tab", *"do the thing", "ctrl+s")
        await until(pilot, lambda: app.screen.running is None and any("failed" in n for n in notes(app)))
        await settle(pilot)
        assert app.screen.query_one(Composer).text == "do the thing"


def footer_greyed(app, action: str) -> bool:
    return next(key for key in app.screen.query("FooterKey") if key.action == action).has_class("-disabled")


async def test_the_footer_greys_resume_on_an_unreadable_row_and_the_actions_say_so(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert not footer_greyed(app, "resume")
        await pilot.press("ctrl+a")
        await settle(pilot)
        listed = session_list(app)
        listed.move_to(next(i for i, row in enumerate(listed.rows) if row.problem_code))
        await settle(pilot)
        for action in ("resume", "trim", "rename", "pin", "copy_command"):
            assert screen.check_action(action, ()) is None, action
        assert screen.check_action("delete", ()) is True   # a broken file can still go to the trash
        assert footer_greyed(app, "resume")
        for wide in ("wide('trim')", "wide('rename')", "wide('pin')"):   # shown from 100 columns up
            assert footer_greyed(app, wide), wide
        listed.move_to(0)
        await settle(pilot)
        assert not footer_greyed(app, "resume") and not footer_greyed(app, "wide('trim')")
        # a row whose file lists fine but whose detail fails to read is unreadable too
        screen.post_message(DetailLoaded(listed.current_path, None, "it vanished"))
        await settle(pilot)
        assert screen.check_action("trim", ()) is None and footer_greyed(app, "resume")


async def test_the_footer_shows_the_keys_of_the_mode(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = {key.action for key in app.screen.query("FooterKey")}
        assert {"resume", "search", "toggle_scope", "keys", "quit_app"} <= shown
        assert all(key.region.right <= 80 for key in app.screen.query("FooterKey"))
        assert "trim" not in str(shown)   # Trim, Rename and Pin join the footer from 100 columns
        await pilot.press("tab")
        await settle(pilot)
        shown = {key.action for key in app.screen.query("FooterKey")}
        assert "send" in shown and "resume" not in shown and "toggle_scope" not in shown


async def test_one_meter_run_per_composer_change_and_none_for_the_detail_text_areas(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        runs = app.screen.meter_runs
        before = runs.runs
        await app.screen.run_action("show_tab('tab-summary')")
        area = app.screen.query_one("#summary-view", TextArea)
        area.focus()
        await pilot.press("down", "down", "down", "down")
        area.load_text("the detail's text changed")
        await settle(pilot)
        assert runs.runs == before
        await pilot.press("tab")
        for key in "abc":
            await pilot.press(key)
            await asyncio.sleep(0.1)   # a pause in typing after each key
            await settle(pilot)
        assert runs.runs == before + 3
        composer = app.screen.query_one(Composer)
        for key in "defgh":   # a burst, faster than the pause: five changes, one run
            composer.insert(key)
        await asyncio.sleep(0.1)
        await settle(pilot)
        assert runs.runs == before + 4
        assert app.screen.meter_result.part("message").full_chars == len("abcdefgh")


async def test_at_80_columns_the_list_has_the_screen_and_ctrl_e_puts_the_preview_under_it(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        listed, detail = session_list(app), app.screen.query_one(DetailPane)
        composer = app.screen.query_one(Composer)
        assert listed.region.width >= 78 and listed.region.height >= 18
        assert not detail.display and not composer.display
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert detail.display and detail.region.y > listed.region.bottom - 1   # under the list
        await pilot.press("tab")
        await settle(pilot)
        assert composer.region.height == 5
        await pilot.press("escape", "ctrl+e")
        await settle(pilot)
        assert not detail.display
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        listed, detail = session_list(app), app.screen.query_one(DetailPane)
        assert detail.region.x >= listed.region.right   # side by side when wide


async def test_shift_down_scrolls_the_preview_while_the_list_keeps_focus(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        listed = session_list(app)
        listed.move_to(next(i for i, row in enumerate(listed.rows) if row.turns == 60))
        await settle(pilot)
        view = app.screen.query_one("#conversation")
        # the conversation opens at its newest turn, once its text is laid out
        await until(pilot, lambda: view.max_scroll_y > 0 and view.scroll_y == view.max_scroll_y)
        bottom = view.scroll_y
        await pilot.press("shift+up", "shift+up")
        await until(pilot, lambda: view.scroll_y < bottom)
        assert isinstance(app.focused, SessionList)
        await pilot.press("shift+down", "shift+down")
        await until(pilot, lambda: view.scroll_y == bottom)


async def test_letters_typed_in_a_burst_go_to_the_filter_and_after_tab_to_the_composer(service):
    """A terminal delivers a fast typist's keys in one read: 'prt' on the list filters it, and
    after Tab the letters go to the composer, never to the list behind it."""
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pinned = [row.pinned for row in session_list(app).rows]
        for key in "prt":
            app.post_message(events.Key(key, key))   # all queued before the first is handled
        await settle(pilot)
        assert app.screen.query_one("#filter", Input).value == "prt"
        assert isinstance(app.screen, MainScreen)   # no rename or trim dialog opened
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_one("#filter", Input).value == "" and app.screen.filter_text == ""
        assert [row.pinned for row in session_list(app).rows] == pinned
        for key, character in (("tab", "\t"), ("p", "p"), ("t", "t")):
            app.post_message(events.Key(key, character))
        await settle(pilot)
        assert app.screen.query_one(Composer).text == "pt"
        assert isinstance(app.screen, MainScreen)
        await pilot.press("slash", "i")
        assert app.screen.query_one(Composer).text.startswith("pt/i")
        await pilot.press("escape", "a", "slash", "i")
        await settle(pilot)
        assert app.screen.query_one("#filter", Input).value == "a/i"
