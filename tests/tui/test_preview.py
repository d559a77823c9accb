"""The preview as a person reads it: the conversation opens at the newest turn, `v` shows the raw
text the meter counts, `I` the ids, and a search lands with the match at the top, highlighted."""

from __future__ import annotations

import re

import pytest
from rich.text import Text
from textual.widgets import Static, TextArea

from reprise.core.sources.fractal.store import Store
from reprise.tui.screens import search as search_screen
from reprise.tui.screens.main import MainScreen
from reprise.tui.screens.search import SearchScreen
from reprise.tui.widgets.detail import DetailPane, landing_cut
from reprise.tui.widgets.session_list import SessionList

from . import test_cli
from .conftest import build_app, settle, until
from .test_cli import put, run

WORD = "quixotic"
workspace = test_cli.workspace  # the fixture: a project folder, the current directory


def select(app, turns: int) -> None:
    session_list = app.screen.query_one(SessionList)
    session_list.move_to(next(i for i, row in enumerate(session_list.rows) if row.turns == turns))


def put_word_in_turn_30(service):
    ref = next(r.ref for r in service.list_sessions().rows if r.turns == 60)
    loaded = service.sources["fractal"].store.load(ref)
    loaded.state.turns[29].agent.response += "\nline two\nline three\nline four\nline five\n" \
                                             "The quixotic flux was recalibrated."
    service.sources["fractal"].store.save(ref, loaded.state, expected=loaded.version)
    return ref


@pytest.mark.parametrize("shown_before", [False, True], ids=["another session", "the session shown"])
async def test_search_lands_with_the_matching_line_at_the_top_of_the_conversation_and_highlighted(service,
                                                                                                 shown_before):
    ref = put_word_in_turn_30(service)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if shown_before:
            select(app, 60)
            await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        assert isinstance(app.screen, SearchScreen)
        await pilot.press(*WORD, "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, MainScreen)
        assert app.screen.query_one(SessionList).current.file_id == ref.session_id
        landed = app.screen.query_one("#conversation-from", Static)
        text = landed.content
        assert text.plain.startswith("The quixotic flux was recalibrated.")   # its line is cut apart
        match = text.plain.index(WORD)
        styles = [span for span in text.spans if span.start <= match and span.end >= match + len(WORD)]
        assert any(app.screen.query_one(DetailPane).roles()["match"] == span.style for span in styles)
        scroll = app.screen.query_one("#conversation")
        assert scroll.scroll_y > 0 and landed.region.y == scroll.content_region.y   # at the top of the view


# --- the same view in the CLI ---------------------------------------------------------------------

def put_search_store(state_root, folder) -> None:
    """Session a: five turns that say "message"; session b: two, and a title that says it too."""
    put(state_root, folder, "a" * 32, 5)
    ref = put(state_root, folder, "b" * 32, 2)
    store = Store(state_root)
    store.write_meta(ref, store.read_meta(ref).model_copy(update={"title": "The message board"}))


def test_search_prints_hits_grouped_by_session_with_n_more_and_title_hits(capsys, workspace, isolated_paths):
    put_search_store(isolated_paths, workspace)
    status, out, err = run(capsys, "search", "message")
    assert (status, err) == (0, "")
    lines = out.splitlines()
    headings = sorted(text for text in lines if not text.startswith(" "))
    assert headings[0] == "8 matching turns in 2 sessions"
    # each session: its id, agent, title, number of hits, folder and age, as the session list shows them
    heading_a, heading_b = headings[1:]
    assert re.fullmatch("a" * 8 + r"…  F message 0  \(5 hits\) · project · (\w+ ago|now)", heading_a)
    assert re.fullmatch("b" * 8 + r"…  F The message board  \(3 hits\) · project · (\w+ ago|now)", heading_b)
    assert lines[-1] == "8 matching turns in 2 sessions"
    group_a = lines[lines.index(heading_a) + 1:][:4]
    assert all(text.startswith("  turn ") and " prompt " in text and "[message]" in text for text in group_a[:3])
    assert group_a[3] == "  … 2 more in this session (`reprise search --json` lists every hit)"
    group_b = lines[lines.index(heading_b) + 1:][:3]
    assert "  title             The [message] board" in group_b
    assert "turn 0" not in out


def test_search_says_when_the_limit_cut_the_list(capsys, workspace, isolated_paths):
    put_search_store(isolated_paths, workspace)
    status, out, _ = run(capsys, "search", "message", "--limit", "4")
    assert status == 0 and out.splitlines()[-1].startswith("4 matching turns in ")
    assert out.splitlines()[-1].endswith(" (the first 4: --limit shows more)")


# --- the TUI ----------------------------------------------------------------------------------------

async def test_the_conversation_opens_at_the_newest_turn(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        select(app, 60)
        await settle(pilot)
        scroll = app.screen.query_one("#conversation")
        # The scroll to the end lands a frame or more after the text (later on a busy machine).
        await until(pilot, lambda: scroll.max_scroll_y > 0 and scroll.scroll_y == scroll.max_scroll_y)
        assert "Turn 60 · succeeded" in app.screen.query_one("#conversation-before", Static).content.plain


async def test_R_shows_the_raw_text_the_meter_counts_and_back_and_I_shows_the_ids(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        detail = app.screen.detail
        conversation = app.screen.query_one("#conversation")
        raw = app.screen.query_one("#summary-view", TextArea)
        assert conversation.display and not raw.display
        conversation.focus()
        await pilot.press("R")
        await settle(pilot)
        assert raw.display and not conversation.display and app.screen.focused is raw
        assert raw.text == detail.summary_text   # Fractal's own render, exactly
        await pilot.press("R")
        await settle(pilot)
        assert conversation.display and app.screen.focused is conversation
        banner = str(app.screen.query_one("#detail-banner").render())
        turn_id = detail.transcript.turns[-1].turn_id
        assert detail.ref.session_id not in banner and turn_id not in conversation.query_one(Static).content.plain
        await pilot.press("I")
        await settle(pilot)
        assert detail.ref.session_id in str(app.screen.query_one("#detail-banner").render())
        assert turn_id in app.screen.query_one("#conversation-before", Static).content.plain


async def test_the_banner_repeats_the_full_title_with_agent_time_and_status(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("ctrl+e")   # the preview, closed by default below 100 columns
        await settle(pilot)
        title = "A very long title that no list column at eighty columns could ever hold whole, repeated here"
        ref = app.screen.detail.ref
        store = service.sources["fractal"].store
        store.write_meta(ref, store.read_meta(ref).model_copy(update={"title": title}))
        app.screen.load_detail(app.screen.query_one(SessionList).current)
        await settle(pilot)
        banner = app.screen.query_one("#detail-banner", Static)
        first, second = str(banner.render()).split("\n")[:2]
        assert first == title and banner.size.height > 3   # wrapped, not cut
        assert second.startswith("Fractal · ") and " ago · succeeded · 3 turns · " in second


async def test_the_search_screen_groups_hits_by_session_with_n_more_and_title_hits(service):
    ref = next(r.ref for r in service.list_sessions().rows if r.turns == 60)
    store = service.sources["fractal"].store
    store.write_meta(ref, store.read_meta(ref).model_copy(update={"title": "Refactor of the modules"}))
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        await pilot.press(*"module", "enter")
        await settle(pilot)
        results = app.screen.results
        prompts = [str(results.get_option_at_index(i).prompt) for i in range(results.option_count)]
        heading = next(n for n, text in enumerate(prompts) if text.startswith("F Refactor of the modules  "))
        group = prompts[heading + 1:heading + 5]
        assert sorted(text.split()[0] for text in group[:3]) == ["title", "turn", "turn"]   # "title", not "turn 0"
        more = group[3]
        assert more.startswith("  … ") and more.endswith(" more in this session")
        hidden = int(more.split()[1])
        results.highlighted = heading + 4
        await pilot.press("enter")
        await settle(pilot)
        expanded = [str(results.get_option_at_index(i).prompt) for i in range(results.option_count)]
        group = expanded[heading:heading + hidden + 4]
        assert len(expanded) == len(prompts) + hidden - 1 and not any("more in this session" in t for t in group)
        assert all("turn 0" not in text for text in expanded)


async def test_a_burst_of_typing_in_the_search_starts_no_search_until_its_pause_or_enter(service, monkeypatch):
    monkeypatch.setattr(search_screen, "TYPING_PAUSE", 30.0)   # the pause never ends within the test
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+f")
        await pilot.pause()
        screen = app.screen
        await pilot.press(*"refactor")
        await settle(pilot)
        assert screen.typing.runs == 0 and screen.typing.pending and not screen.hits
        await pilot.press("enter")
        await settle(pilot)
        assert screen.typing.runs == 1 and not screen.typing.pending and screen.hits


def test_a_landing_starts_at_the_matching_line_of_the_matched_field_or_at_the_word_in_a_long_paragraph():
    turn = Text("Turn 3 · succeeded · module\nYou: fix module\nFractal: short\nmodule here\n  $ make module")
    assert turn.plain[landing_cut(turn, ("module",), ("You: ",)):].startswith("You: fix module")
    assert turn.plain[landing_cut(turn, ("MODULE",), ("Fractal: ",)):].startswith("module here")   # any case
    assert turn.plain[landing_cut(turn, ("module",), ("  $ ",)):].startswith("  $ make module")
    assert landing_cut(turn, ("absent",), ()) == 0   # the turn's heading stays on top
    paragraph = Text("Turn 1 · succeeded\nFractal: " + "word " * 100 + "needle and more")
    assert paragraph.plain[landing_cut(paragraph, ("needle",), ("Fractal: ",)):].startswith("needle and more")


async def test_raw_text_and_ids_work_from_the_list_by_the_palette_the_letters_filtering(service):
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen.focused, SessionList)
        raw = app.screen.query_one("#summary-view", TextArea)
        assert not raw.display
        await pilot.press("R")   # typed on the list: a letter of the filter, not the raw view
        await settle(pilot)
        assert not raw.display and app.screen.filter_text == "R"
        await pilot.press("escape")
        await settle(pilot)
        await app.screen.run_action("raw")
        await settle(pilot)
        assert raw.display and isinstance(app.screen.focused, SessionList)
        await app.screen.run_action("ids")
        await settle(pilot)
        assert app.screen.detail.ref.session_id in str(app.screen.query_one("#detail-banner").render())
