"""The session list at any width: the title keeps the width, columns give way in their order,
a fork stays distinguishable from its original, NEXT is coloured by the meter's own rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual.app import App, ComposeResult

from reprise.core.meter import ContextLimit
from reprise.core.rows import SessionRow
from reprise.core.sources.base import ListingFields
from reprise.tui.columns import GIVE_WAY, cell, folder_label, layout, short_size, short_tokens, title_label
from reprise.tui.list_rows import LIST_COLUMNS, header_text, list_layout, marks_width
from reprise.tui.screens.main.rows import matches
from reprise.tui.widgets.session_list import SessionList

NOW = 1_800_000_000.0
LONG = "Dark mode for the settings page, with a toggle that follows the system theme"
LIMIT = ContextLimit(200_000, 0.8)


def row(n: int, title: str, *, cost: int | None = 41_000, limit: ContextLimit | None = LIMIT,
        folder: str = "/home/ada/code/webapp", source: str = "fractal", hidden: bool = False) -> SessionRow:
    file_id = f"{n:032x}"
    fields = ListingFields(session_id=file_id, workspace_key="w", turns=3, last_status="succeeded")
    return SessionRow(source, "w", file_id, 1_234_567, 0, NOW - 7200, 3, 38_000, None, None, None, cost, None, None,
                      f"/s/{file_id}.json", title=title, details=fields, limit=limit, folder=folder,
                      hidden_by_agent=hidden)


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
@pytest.mark.parametrize("folder", [False, True])
def test_the_title_gets_the_width_first_at_any_width(width, folder):
    shape = list_layout(width, "updated", show_agent=True, show_folder=folder)
    line = header_text(width, "updated", True, show_folder=folder)
    assert len(line) == width   # every cell accounted for: marks, title, gap, columns, one space each
    promised = {40: 28, 60: 40, 80: 40, 120: 40, 200: 40}[width]
    assert shape.title_width >= promised
    assert ("folder" in shape.keys) is (folder and width >= 80)   # the folder column goes last


def test_at_80_columns_the_title_has_40_characters_and_wide_lists_show_every_column():
    at_80 = list_layout(80, "updated", show_agent=True)
    assert at_80.title_width == 40 and "next" in at_80.keys
    at_120 = list_layout(120, "updated", show_agent=True)
    assert at_120.keys == ("branch", "updated", "turns", "size", "context", "next")
    assert not any(narrow for _, narrow in at_120.columns) and at_120.title_width > 40 and at_120.gap == 0
    with_folder = list_layout(140, "updated", show_agent=True, show_folder=True)
    assert with_folder.keys == ("folder", "branch", "updated", "turns", "size", "context", "next")
    assert not any(narrow for _, narrow in with_folder.columns) and with_folder.title_width >= 40


def test_columns_give_way_in_their_order_as_the_width_shrinks():
    """Each width keeps a subset of the columns the next wider width keeps, and the first to go is
    CONTEXT, then BRANCH, then TURNS, then SIZE (the order of GIVE_WAY)."""
    wanted = ("branch", "updated", "turns", "size", "context", "next")
    dropped_order = [key for step, key in GIVE_WAY if step == "drop" and key in wanted and key != "updated"]
    assert dropped_order[:2] == ["context", "branch"]
    previous: tuple[str, ...] = wanted
    for width in range(250, 30, -1):
        keys = layout(width, sort="updated", fixed=5, wanted=wanted).keys
        assert set(keys) <= set(previous), width
        gone = [key for key in dropped_order if key not in keys]
        assert gone == dropped_order[: len(gone)], (width, gone)
        previous = keys
    assert layout(60, sort="updated", fixed=5, wanted=wanted).keys == ("updated", "next")
    assert layout(40, sort="updated", fixed=5, wanted=wanted).keys == ("updated",)


LAYOUTS = st.fixed_dictionaries({
    "sort": st.sampled_from(["updated", "turns", "size", "context", "next"]), "reverse": st.booleans(),
    "fixed": st.sampled_from([4, 5, 11, 13]),
    "wanted": st.sampled_from([LIST_COLUMNS[1:], LIST_COLUMNS, ("status", "updated", "turns", "size", "context",
                                                               "next", "folder", "branch")]),
})


@given(LAYOUTS, st.lists(st.integers(40, 250), min_size=2, max_size=8))
def test_the_title_never_narrows_as_the_line_widens(options, widths):
    """At any two widths from 40 to 250, the wider line's title is at least as wide, at least as wide
    as at 80 from 80 on, and the line is exactly as wide as asked (title, gap, columns)."""
    at_80 = layout(80, **options).title_width
    shapes = [(width, layout(width, **options)) for width in sorted(widths)]
    for (_, narrower), (wider_width, wider) in zip(shapes, shapes[1:], strict=False):
        assert wider.title_width >= narrower.title_width, (options, widths)
        if wider_width >= 80:
            assert wider.title_width >= at_80
    for width, shape in shapes:
        used = sum(column.width(narrow) + 1 for column, narrow in shape.columns)
        assert options["fixed"] + shape.title_width + shape.gap + used == width, (width, shape)
        assert options["sort"] in shape.keys


@pytest.mark.parametrize("sort", ["turns", "size", "context", "next", "cost"])
def test_the_sorted_column_never_gives_way_and_is_marked(sort):
    for width in (40, 60, 80):
        shape = list_layout(width, sort, show_agent=True)
        wanted = "next" if sort == "cost" else sort
        assert wanted in shape.keys, (width, sort)
        assert any(cell.strip().endswith("▼") for cell in shape.header())
        assert any(cell.strip().endswith("▲") for cell in list_layout(width, sort, reverse=True).header())


def test_a_cut_fork_title_keeps_its_suffix():
    original, fork = title_label(LONG, 40), title_label(f"{LONG} (trimmed)", 40)
    assert original != fork and fork.endswith("… (trimmed)") and len(fork) == 40
    assert original == LONG[:39] + "…"
    assert title_label("short (trimmed)", 40) == "short (trimmed)".ljust(40)
    assert title_label("x" * 500 + " (trimmed)", 40).endswith("x… (trimmed)")   # a huge title keeps it too


def test_a_title_of_wide_characters_takes_exactly_its_cells():
    from rich.cells import cell_len

    for title in ("日本語のタイトルとても長いセッションの名前です",
                  "Émoji 👩‍💻 session with a long name for sure", "tab\there"):
        for width in (8, 13, 40):
            assert cell_len(title_label(title, width)) == width, (title, width)


def test_narrow_forms_fit_their_columns():
    assert [short_size(n) for n in (512, 8_704, 41_000, 1_258_291, 5 << 30)] == ["512B", "8.5K", "40K", "1.2M",
                                                                               "5.0G"]
    assert [short_tokens(n) for n in (850, 8_500, 41_000, 999_400, 1_200_000)] == ["850", "8.5k", "41k", "999k",
                                                                                 "1.2M"]
    assert folder_label("/home/ada/code/webapp", 14) == "code/webapp"
    assert folder_label("/home/ada/code/a-very-long-project-name", 14) == "a-very-long-p…"
    assert folder_label(None, 14) == "?"


class ListApp(App):
    def __init__(self, rows: list[SessionRow], **attributes):
        super().__init__()
        self.rows, self.attributes = rows, attributes

    def compose(self) -> ComposeResult:
        yield SessionList(clock=lambda: NOW)

    def on_mount(self) -> None:
        session_list = self.query_one(SessionList)
        for name, value in self.attributes.items():
            setattr(session_list, name, value)
        session_list.set_rows(self.rows)


def lines_of(session_list: SessionList, count: int) -> list[str]:
    return [session_list.render_line(y).text for y in range(count)]


@pytest.mark.parametrize("width", [40, 60, 80, 120, 200])
async def test_a_fork_and_its_original_differ_at_every_width(width):
    rows = [row(1, LONG), row(2, f"{LONG} (trimmed)")]
    app = ListApp(rows, show_agent=True)
    async with app.run_test(size=(width, 10)):
        session_list = app.query_one(SessionList)
        original, fork = lines_of(session_list, 2)
        assert original != fork and "(trimmed)" in fork
        title_width = list_layout(session_list.content_width, "updated", show_agent=True).title_width
        assert LONG[: min(title_width, 40) - 1] in original


async def test_rows_show_the_agent_letter_folder_and_next_with_its_share():
    rows = [row(1, "Fractal one", cost=42_000), row(2, "Claude one", source="claude", hidden=True),
            row(3, "Codex one", source="codex", folder="/srv/tools")]
    app = ListApp(rows, show_agent=True, show_folder=True)
    async with app.run_test(size=(120, 10)):
        fractal, claude, codex = lines_of(app.query_one(SessionList), 3)
        assert fractal[marks_width(True) - 2] == "F" and claude[marks_width(True) - 2] == "c"
        assert codex[marks_width(True) - 2] == "X"
        assert "code/webapp" in fractal and "tools" in codex
        assert "42k 21%" in fractal and "2h ago" in fractal and "1.2 MB" in fractal


async def test_a_next_figure_is_never_cut_its_share_gives_way_and_an_unknown_window_shows_the_figure():
    rows = [row(1, "huge", cost=2_100_000), row(2, "unknown", cost=90_000, limit=ContextLimit(None, 0.8))]
    app = ListApp(rows)
    async with app.run_test(size=(120, 10)):
        huge, unknown = lines_of(app.query_one(SessionList), 2)
        assert huge.rstrip().endswith(" 2.1M") and "1050%" not in huge   # "2.1M 1050%" is wider than NEXT
        assert unknown.rstrip().endswith(" 90k")


def next_style(session_list: SessionList, y: int, figure: str):
    for segment in session_list.render_line(y):
        if figure in segment.text:
            return segment.style
    raise AssertionError(f"{figure} not on line {y}")


async def test_next_is_coloured_at_warn_and_over_by_the_meter_rule():
    rows = [row(1, "ok", cost=100_000), row(2, "warn", cost=170_000), row(3, "over", cost=230_000),
            row(4, "counting", cost=None)]
    app = ListApp(rows)
    async with app.run_test(size=(120, 10)):
        session_list = app.query_one(SessionList)
        session_list.move_to(3)   # the cursor's own style off the rows looked at
        ok, warn, over = (next_style(session_list, y, figure) for y, figure in
                          ((0, "100k 50%"), (1, "170k 85%"), (2, "230k 115%")))
        theme = app.theme_variables
        assert ok.color is None or ok.color.name not in (theme["warning"], theme["error"])
        assert warn.color is not None and warn.color.triplet.hex == theme["warning"].lower()
        assert over.color is not None and over.color.triplet.hex == theme["error"].lower()
        assert "…" in lines_of(session_list, 4)[3]


async def test_the_all_workspaces_view_shows_each_rows_folder_not_its_key(service):
    from .conftest import build_app, settle

    app = build_app(service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "FOLDER" not in str(app.screen.query_one("#columns").render())
        await pilot.press("ctrl+a")
        await settle(pilot)
        assert "FOLDER" in str(app.screen.query_one("#columns").render())
        session_list = app.screen.query_one(SessionList)
        lines = lines_of(session_list, len(session_list.rows))
        keys = {row.workspace_key for row in session_list.rows}
        assert len(keys) > 1 and not any(key in line for key in keys for line in lines)
        shape = session_list.layout_for(session_list.content_width)
        width = next(column.width(narrow) for column, narrow in shape.columns if column.key == "folder")
        for row_, line in zip(session_list.rows, lines, strict=True):
            assert row_.folder and folder_label(row_.folder, width) in line, line


def test_a_folder_the_agent_s_map_does_not_name_shows_the_agent_s_own_name_for_it():
    """Not a bare "?": the unknown folder's key carries the agent's name for the group (a Gemini CLI
    project's slug and root), shown after the "?", and the list's filter finds it."""
    from reprise.core.sources.workspaces import unmapped_key

    unknown = row(1, "t", folder=None)   # type: ignore[arg-type]
    unknown.workspace_key = unmapped_key("alpha in /home/u/.gemini")
    text, _ = cell("folder", unknown, False, NOW, 20)
    assert text.startswith("?alpha-in-home-u") and len(text) <= 20
    assert matches(unknown, "alpha") and not matches(unknown, "beta")   # typing what the column shows finds it
    assert cell("folder", row(2, "t"), False, NOW, 20)[0] == folder_label("/home/ada/code/webapp", 20)
    assert folder_label(None, 20) == "?"

