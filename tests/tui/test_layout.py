"""A picker's layout (issue 26): at 80x24 the list takes the screen (the preview waits for ctrl+e,
remembered across runs; the composer folds into the footer's Tab), the sessions an agent's own
picker hides are out of the list by default and counted, toasts stay off the meter line, the empty
state names every agent, a rename shows in the preview, the agent's label is readable."""

from __future__ import annotations

import json
import os
from pathlib import Path

from rich.color import Color
from textual.widgets import Static
from textual.widgets._toast import Toast

from reprise.core import config
from reprise.core.service import Service
from reprise.core.sources.registry import registry
from reprise.tui.widgets.composer import Composer
from reprise.tui.widgets.detail import DetailPane
from reprise.tui.widgets.meter import MeterBar
from reprise.tui.widgets.session_list import SessionList

from .. import factories
from .conftest import build_app, settle, until
from .test_demo import codex_demo_service, demo_root  # noqa: F401 (a fixture)


def many_sessions(tmp_path: Path, count: int = 30) -> Service:
    folder = tmp_path / "project"
    folder.mkdir()
    for n in range(count):
        factories.write_session(tmp_path / "state", folder, factories.session_bytes(f"layout-{n:02}", turns=2))
    return Service(config.load(state_dir=str(tmp_path / "state")), workspace=folder)


def rows_on_screen(app) -> int:
    session_list = app.screen.query_one(SessionList)
    return min(session_list.size.height, len(session_list.rows))


async def test_at_80x24_the_list_shows_at_least_18_sessions_and_the_preview_waits_for_ctrl_e(tmp_path):
    service = many_sessions(tmp_path)
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert rows_on_screen(app) >= 18
        assert not screen.query_one(DetailPane).display and not screen.query_one(Composer).display
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert screen.query_one(DetailPane).display
    remembered = json.loads((Path(os.environ["REPRISE_DATA_DIR"]) / "ui-state.json").read_text())
    assert remembered["preview_when_narrow"] is True

    again = build_app(many_sessions_again(tmp_path))   # the next run remembers the open preview
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert again.screen.query_one(DetailPane).display


def many_sessions_again(tmp_path: Path) -> Service:
    return Service(config.load(state_dir=str(tmp_path / "state")), workspace=tmp_path / "project")


async def test_at_120x40_the_preview_is_beside_the_list(tmp_path):
    app = build_app(many_sessions(tmp_path))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(DetailPane)
        assert pane.display and pane.region.x > app.screen.query_one(SessionList).region.x


async def test_the_composer_folds_into_the_footer_until_tab_and_stays_open_with_a_draft(tmp_path):
    app = build_app(many_sessions(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        composer = app.screen.query_one(Composer)
        offered = [(key.key_display, key.description) for key in app.screen.query("FooterKey")]
        assert ("Tab", "Write") in offered and not composer.display
        await pilot.press("tab")
        await settle(pilot)
        assert composer.display and composer.has_focus
        await pilot.press("escape")
        await settle(pilot)
        assert not composer.display   # empty: folded again
        await pilot.press("tab", "h", "i", "escape")
        await settle(pilot)
        assert composer.display and composer.text == "hi"   # a draft keeps its line
        drawn = "".join(strip.text for strip in composer.render_lines(composer.region.reset_offset))
        assert "hi" in drawn and composer.placeholder not in drawn


async def test_sessions_the_agents_pickers_hide_are_out_by_default_counted_and_the_toggle_remembered(demo_root):  # noqa: F811
    service = codex_demo_service(demo_root)
    app = build_app(service, demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        hidden = [row for row in screen.all_rows if row.hidden_by_agent]
        shown = screen.query_one(SessionList).rows
        assert hidden and not any(row.hidden_by_agent for row in shown)
        assert len(shown) == len(screen.all_rows) - len(hidden)
        header = str(screen.query_one("#header", Static).render())
        assert f"{len(shown)} of {len(screen.all_rows)} sessions shown · {len(hidden)} -p/exec runs hidden" in header
        await app.run_action("screen.toggle_agent_hidden")
        await settle(pilot)
        assert len(screen.query_one(SessionList).rows) == len(screen.all_rows)
    state = json.loads((Path(os.environ["REPRISE_DATA_DIR"]) / "ui-state.json").read_text())
    assert state["show_agent_hidden"] is True
    again = build_app(codex_demo_service(demo_root), demo=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert len(again.screen.query_one(SessionList).rows) == len(again.screen.all_rows)


async def test_a_ui_state_file_of_wrong_types_gives_the_defaults_and_says_which_file(tmp_path):
    service = many_sessions(tmp_path, 3)
    data = Path(os.environ["REPRISE_DATA_DIR"])
    data.mkdir(parents=True, exist_ok=True)
    (data / "ui-state.json").write_text('{"preview_when_narrow": "yes", "from_a_newer_reprise": [1]}')
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one(DetailPane).display
        said = [n.message for n in app._notifications]
        assert any("ui-state.json" in m and "preview_when_narrow" in m for m in said)
        await pilot.press("ctrl+e")
        await settle(pilot)
    kept = json.loads((data / "ui-state.json").read_text())
    assert kept["from_a_newer_reprise"] == [1] and kept["preview_when_narrow"] is True   # unknown keys kept


async def test_toasts_stand_above_the_meter_line_and_the_open_composer(tmp_path):
    app = build_app(many_sessions(tmp_path, 3))
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(pilot)
        for composing in (False, True):
            if composing:
                await pilot.press("tab")
            app.notify("A long notification that takes a few lines of the screen to say what happened here.")
            await until(pilot, lambda: bool(app.screen.query(Toast)))
            await settle(pilot)
            lowest = max(toast.region.bottom for toast in app.screen.query(Toast))
            covered = [app.screen.query_one(MeterBar)] + ([app.screen.query_one(Composer)] if composing else [])
            assert all(lowest <= widget.region.y for widget in covered)
            app.clear_notifications()
            await settle(pilot)


async def test_the_empty_state_names_every_agent_read_and_shows_no_tabs(tmp_path, monkeypatch):
    folder = tmp_path / "empty-project"
    folder.mkdir()
    (tmp_path / "claude" / "projects").mkdir(parents=True)   # Claude Code's store exists: its source is on
    (tmp_path / "codex" / "sessions").mkdir(parents=True)   # and Codex's
    service = Service(config.load(state_dir=str(tmp_path / "state")), workspace=folder)
    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        empty = app.screen.query_one("#empty-state", Static)
        text = str(empty.render())
        labels = [source.label for source in service.sources.values()]
        assert empty.display and not app.screen.query_one(DetailPane).display
        assert len(labels) > 1 and all(label in text for label in labels)
        # One sentence per source, from its spec, saying where its sessions live.
        assert {"claude", "codex"} <= set(service.sources)
        assert f"Claude Code's sessions live in {tmp_path / 'claude'}/projects/<project>/." in text
        assert f"Codex's sessions live in {tmp_path / 'codex'}/sessions/<year>/<month>/<day>/." in text
        for name in service.sources:
            spec = registry().get(name)
            assert spec is not None and spec.where_sessions_live, name


async def test_a_rename_shows_in_the_preview_at_once(tmp_path):
    app = build_app(many_sessions(tmp_path, 2))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+r")
        await settle(pilot)
        for key in ("ctrl+a", "ctrl+k"):   # select the old title, delete it
            await pilot.press(key)
        await pilot.press(*"Renamed here")
        await pilot.press("enter")
        await settle(pilot)
        await settle(pilot)
        assert app.screen.query_one(SessionList).current.display_title == "Renamed here"
        assert app.screen.detail is not None and app.screen.detail.title == "Renamed here"


def contrast(one: Color, two: Color) -> float:
    def luminance(color: Color) -> float:
        def channel(value: int) -> float:
            c = value / 255
            return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
        r, g, b = color.get_truecolor()
        return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)
    high, low = sorted((luminance(one), luminance(two)), reverse=True)
    return (high + 0.05) / (low + 0.05)


async def test_the_speaker_labels_are_readable_on_the_preview(tmp_path):
    app = build_app(many_sessions(tmp_path, 1))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        pane = app.screen.query_one(DetailPane)
        background = pane.styles.background.rich_color
        for role in ("you", "agent"):
            color = pane.get_component_rich_style(f"detail--{role}").color
            assert color is not None and contrast(color, background) >= 4.5, role


async def test_a_new_sort_moves_to_the_top(tmp_path):
    app = build_app(many_sessions(tmp_path, 12))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        session_list.move_to(7)
        for _ in range(3):
            await pilot.press("ctrl+s")
            await settle(pilot)
            assert session_list.cursor == 0 and session_list.current is session_list.rows[0]


async def test_a_search_hit_in_a_session_the_agents_picker_hides_is_shown_and_selected(demo_root):  # noqa: F811
    service = codex_demo_service(demo_root)
    app = build_app(service, demo=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        hidden = next(row for row in screen.all_rows if row.hidden_by_agent)
        hits = service.search(hidden.fields.first_message.split()[0])
        hit = next(hit for hit in hits if hit.row.path == hidden.path)
        screen.open_at_turn(hit)
        await settle(pilot)
        assert screen.query_one(SessionList).current.path == hidden.path
        assert screen.query_one(DetailPane).display
    again = build_app(codex_demo_service(demo_root), demo=True)   # the remembered choice did not change
    async with again.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert not any(row.hidden_by_agent for row in again.screen.query_one(SessionList).rows)
