"""The search results, the workspace chooser and the trash view keep the session list's habits
(issue 26): typing filters, Esc clears the filter and on an empty one closes, the arrows, ctrl+n /
ctrl+p, PgUp / PgDn and Home / End move, Enter chooses; the chooser sorts by name or activity;
each search hit says its session's agent, folder and age and shows its text centred on the match."""

from __future__ import annotations

from pathlib import PurePath

import pytest

from reprise.tui.columns import agent_mark, folder_label
from reprise.tui.format import relative_time
from reprise.tui.reports.search import search_lines
from reprise.tui.screens.dialogs import FilterDialog
from reprise.tui.screens.main import MainScreen
from reprise.tui.screens.search import SearchScreen
from reprise.tui.widgets.detail import DetailPane
from reprise.tui.widgets.session_list import SessionList

from .conftest import NOW, build_app, settle
from .test_demo import claude_files, demo_root, demo_service  # noqa: F401  (demo_root: a fixture)

WORD = "quixotic"
LONG_REPLY = ("I read the module and its callers, then ran the tests again to be sure. " * 40
              + f"The {WORD} flux capacitor was recalibrated. " + "Then I cleaned up. " * 30)


def prompts(dialog) -> list[str]:
    options = dialog.choice_list.options
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def names(dialog: FilterDialog) -> list[str]:
    return [prompt.split()[0] for prompt in prompts(dialog)]


async def open_workspaces(pilot) -> FilterDialog:
    await settle(pilot)
    await pilot.press("ctrl+w")
    await settle(pilot)
    dialog = pilot.app.screen
    assert isinstance(dialog, FilterDialog)
    return dialog


# --- the workspace chooser -------------------------------------------------------------------------

async def test_the_workspace_chooser_sorts_by_activity_or_by_name_and_says_which(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_workspaces(pilot)
        newest_first = sorted(service.workspaces(), key=lambda info: info.last_activity or "", reverse=True)
        by_activity = [PurePath(info.path).name for info in newest_first]
        assert names(dialog) == by_activity and sorted(by_activity) != by_activity   # the demo tells them apart
        order = dialog.query_one("#filter-order")
        assert str(order.render()) == "By activity, newest first · ctrl+s sorts by name"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert names(dialog) == sorted(by_activity)
        assert str(order.render()) == "By name · ctrl+s sorts by activity"
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert names(dialog) == by_activity


async def test_the_workspace_chooser_filters_as_you_type_and_esc_clears_then_closes(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_workspaces(pilot)
        await pilot.press(*"pipe")
        await pilot.pause()
        assert names(dialog) == ["data-pipeline"]
        await pilot.press(*"zz")
        await pilot.pause()
        assert names(dialog) == [] and dialog.query_one("#filter-empty").display
        await pilot.press("backspace", "backspace")
        await pilot.pause()
        assert names(dialog) == ["data-pipeline"]
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is dialog and dialog.choice_list.text == "" and len(names(dialog)) == 3
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_the_workspace_chooser_moves_with_the_list_keys_and_enter_lists_the_one_chosen(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        dialog = await open_workspaces(pilot)
        options = dialog.choice_list.options
        moves = [("down", 1), ("ctrl+n", 2), ("down", 2), ("ctrl+p", 1), ("up", 0), ("up", 0), ("end", 2),
                 ("home", 0), ("pagedown", 2), ("pageup", 0)]   # the list does not wrap at its ends
        assert options.highlighted == 0
        for key, expected in moves:
            await pilot.press(key)
            await pilot.pause()
            assert options.highlighted == expected, key
        chosen = names(dialog)[1]
        key = next(info.key for info in service.workspaces() if info.path and PurePath(info.path).name == chosen)
        await pilot.press("down", "enter")
        await settle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen) and main.scope_key == key
        rows = main.query_one(SessionList).rows
        assert rows and {row.workspace_key for row in rows} == {key}


# --- the trash view --------------------------------------------------------------------------------

async def test_the_trash_view_filters_as_you_type_and_restores_the_chosen_session_of_any_agent(demo_root):  # noqa: F811
    service = demo_service(demo_root)
    listing = service.list_sessions()
    service.load_details(listing.rows)
    fractal = next(row for row in listing.rows if row.source == "fractal" and row.turns)
    claude = next(row for row in listing.rows if row.source == "claude")
    before = claude_files(demo_root)
    service.remove(fractal.ref)
    service.remove(claude.ref)
    assert claude.path not in [str(path) for path in claude_files(demo_root)]
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.run_action("show_trash")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, FilterDialog) and len(prompts(dialog)) == 2
        await pilot.press(*claude.file_id[:8])
        await pilot.pause()
        assert [claude.file_id[:8] in prompt for prompt in prompts(dialog)] == [True]
        await pilot.press("escape")
        await pilot.pause()
        assert len(prompts(dialog)) == 2
        await pilot.press(*claude.file_id[:8], "enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
    assert claude_files(demo_root) == before   # the Claude Code session is back where it was
    assert [entry.ref for entry in service.trash_entries(all_workspaces=True)] == [fractal.ref]


async def test_esc_on_the_trash_views_empty_filter_closes_it(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await app.run_action("show_trash")
        await settle(pilot)
        assert isinstance(app.screen, FilterDialog)
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


# --- the search screen -----------------------------------------------------------------------------

def put_word_deep_in_a_long_reply(service):
    """The word a long way into turn 30's reply of the 60-turn session."""
    ref = next(r.ref for r in service.list_sessions().rows if r.turns == 60)
    loaded = service.sources["fractal"].store.load(ref)
    loaded.state.turns[29].agent.response = LONG_REPLY
    service.sources["fractal"].store.save(ref, loaded.state, expected=loaded.version)
    return ref


async def search_for(pilot, words: str) -> SearchScreen:
    await settle(pilot)
    await pilot.press("ctrl+f")
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen)
    await pilot.press(*words, "enter")
    await settle(pilot)
    return screen


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_a_hit_deep_in_a_long_turn_shows_the_word_highlighted_within_the_line(service, size):
    ref = put_word_deep_in_a_long_reply(service)
    app = build_app(service)
    async with app.run_test(size=size) as pilot:
        screen = await search_for(pilot, WORD)
        assert [(hit.row.file_id, hit.turn) for hit in screen.hits] == [(ref.session_id, 30)]
        line = screen.results.get_option_at_index(1).prompt
        width = screen.results.scrollable_content_region.width
        assert WORD in line.plain and line.cell_len <= width
        assert line.plain.split(" reply ")[1].strip().startswith("…") and line.plain.endswith("…")
        start = line.plain.index(WORD)
        assert any(span.style == "reverse" and span.start <= start and span.end >= start + len(WORD)
                   for span in line.spans)


async def test_each_session_of_the_hits_says_its_agent_folder_and_age(service):
    ref = put_word_deep_in_a_long_reply(service)
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await search_for(pilot, WORD)
        row = screen.hits[0].row
        heading = screen.results.get_option_at_index(0).prompt.plain
        age = relative_time(NOW.timestamp() - row.activity_ts)
        folder = folder_label(service.workspace_path_of(ref.workspace_key)[0], 20)
        assert heading == f"{agent_mark(row)} {row.display_title}  {folder} · {age} · 1 hit"
        assert heading.startswith("F Big refactor") and "projects/webapp" in heading and age.endswith(" ago")


async def test_in_the_search_typing_is_the_query_esc_clears_it_then_closes(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await search_for(pilot, "retries")
        assert screen.hits and screen.results.option_count
        screen.results.focus()   # after a click on the list: a letter still goes to the query
        await pilot.press("x")
        await pilot.pause()
        assert screen.choice_list.text == "retriesx" and screen.choice_list.prompt.has_focus
        await pilot.press("backspace")
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and screen.choice_list.text == "" and not screen.hits
        assert screen.results.option_count == 0
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


async def test_in_the_search_the_list_keys_move_over_the_hits_and_enter_opens_the_one_highlighted(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await search_for(pilot, "retries")
        results = screen.results
        chosen = [i for i in range(results.option_count) if not results.get_option_at_index(i).disabled]
        assert len(chosen) >= 4 and results.highlighted == chosen[0]   # the first hit, not a heading
        await pilot.press("down", "ctrl+n")
        await pilot.pause()
        assert results.highlighted == chosen[2]   # a session's heading is passed over
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert results.highlighted == chosen[1]
        await pilot.press("end")
        await pilot.pause()
        assert results.highlighted == chosen[-1]
        await pilot.press("home")
        await pilot.pause()
        assert results.highlighted == chosen[0]
        await pilot.press("down")
        await pilot.pause()
        hit = screen.hits[int(results.get_option_at_index(chosen[1]).id)]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.query_one(SessionList).current.path == hit.row.path
        assert app.screen.query_one(DetailPane).display   # at 80 columns too, where the preview waits for ctrl+e


# --- `reprise search` ------------------------------------------------------------------------------

def test_reprise_search_lines_show_a_deep_hit_within_80_columns_with_agent_folder_and_age(service):
    ref = put_word_deep_in_a_long_reply(service)
    hits = service.search(WORD)
    service.load_details([hit.row for hit in hits])
    lines = [line.plain for line in search_lines(hits, width=80, now=NOW.timestamp())]
    heading, hit_line = lines[0], lines[1]
    row = hits[0].row
    assert heading.startswith(f"{ref.session_id[:8]}…  F Big refactor")
    folder = folder_label(service.workspace_path_of(ref.workspace_key)[0], 20)
    assert folder.endswith("projects/webapp")
    assert heading.endswith(f"(1 hit) · {folder} · {relative_time(NOW.timestamp() - row.activity_ts)}")
    assert f"[{WORD}]" in hit_line and len(hit_line) <= 80 and hit_line.endswith("…")
