"""The git branch a session ran on (Claude Code's `gitBranch`, Codex's `session_meta.git.branch`;
Fractal records none): in the preview's banner, as a BRANCH column where there is room (the TUI's
list and `reprise list`), and in what the list's filter matches. And the title's width on the real
screen, which never shrinks as the terminal widens (the preview moves beside the list at 100)."""

from __future__ import annotations

import os

import pytest

from reprise.core import config
from reprise.core.rows import SessionRow
from reprise.core.service import Service
from reprise.core.sources.base import ListingFields
from reprise.core.sources.claude.samples import claude_root
from reprise.core.sources.codex.samples import codex_root
from reprise.tui import cli
from reprise.tui.demo import build_demo
from reprise.tui.screens.main import match_rank, matches
from reprise.tui.widgets.session_list import SessionList

from .conftest import NOW, build_app, settle, until


@pytest.fixture
def demo_env(tmp_path, monkeypatch):
    """The demo store with its Claude Code and Codex roots on, as `reprise --demo` sets them."""
    root = tmp_path / "demo"
    workspace = build_demo(root, now=NOW)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_root(root)))
    monkeypatch.setenv("CODEX_HOME", str(codex_root(root)))
    monkeypatch.setenv("REPRISE_STATE_DIR", str(root / "state"))
    return root, workspace


@pytest.fixture
def mixed_service(demo_env):
    root, workspace = demo_env
    return Service(config.load(state_dir=str(root / "state"), env=dict(os.environ)), workspace=workspace,
                   cache=root / "cache")


def listed(n: int, *, title: str = "Checkout flow", branch: str | None = None, folder: str = "/home/ada/webapp",
           first: str = "Fix the checkout") -> SessionRow:
    file_id = f"{n:032x}"
    fields = ListingFields(session_id=file_id, workspace_key="w", turns=1, first_message=first, branch=branch)
    return SessionRow("claude", "w", file_id, 100, 0, 0.0, 1, 0, None, None, None, None, None, None,
                      f"/s/{file_id}.jsonl", title=title, details=fields, folder=folder)


def test_the_filter_matches_the_branch_and_the_folders_name_not_the_path_above_it():
    on_branch = listed(1, branch="feature/dynamo-cache")
    assert matches(on_branch, "dynamo") and matches(on_branch, "FEATURE/")
    assert not matches(listed(2, branch="main"), "dynamo") and not matches(listed(3), "dynamo")
    assert matches(listed(4, folder="/home/ada/payments-api"), "payments")
    assert not matches(listed(5, folder="/home/ada/webapp"), "ada")   # every row of /home/ada would match
    # a title match ranks above a branch match, which ranks above a message match
    by_title = listed(6, title="Dynamo cache warm-up")
    by_message = listed(7, first="move the dynamo table")
    ranks = [match_rank(row, "dynamo") for row in (by_title, on_branch, by_message)]
    assert ranks == sorted(ranks) and len(set(ranks)) == 3


async def test_the_preview_names_the_branch_and_typing_it_filters_the_list(mixed_service):
    app = build_app(mixed_service)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        rows = list(session_list.rows)
        claude = next(index for index, row in enumerate(rows) if row.source == "claude")
        fractal = next(index for index, row in enumerate(rows) if row.source == "fractal")
        banner = app.screen.query_one("#detail-banner")
        session_list.move_to(claude)
        await until(pilot, lambda: "Claude Code" in str(banner.render()))
        assert "branch main" in str(banner.render())
        session_list.move_to(fractal)
        await until(pilot, lambda: "Fractal" in str(banner.render()))
        assert "branch" not in str(banner.render())

        for key in "main":
            await pilot.press(key)
        await settle(pilot)
        shown = session_list.rows
        assert shown and len(shown) < len(rows)
        assert all(row.fields.branch == "main" for row in shown)
        assert {row.source for row in shown} == {"claude", "codex"}
        assert any("main" not in f"{row.display_title} {row.fields.first_message} {row.fields.last_message}".lower()
                   for row in shown)   # found by its branch alone


async def test_the_branch_column_shows_where_there_is_room(mixed_service):
    app = build_app(mixed_service)
    async with app.run_test(size=(99, 30)) as pilot:
        await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        header = str(app.screen.query_one("#columns").render())
        assert "BRANCH" in header
        at = header.index("BRANCH")
        lines = [session_list.render_line(y).text for y in range(len(session_list.rows))]
        for row, line in zip(session_list.rows, lines, strict=True):
            assert line[at:at + 14].strip() == (row.fields.branch or "-"), line
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        assert "BRANCH" not in str(app.screen.query_one("#columns").render())   # the title keeps its 40


WIDTHS = [60, 80, 90, 99, 100, 101, 120, 140, 160, 200, 250]


@pytest.mark.parametrize("everywhere", [False, True])
async def test_on_the_real_screen_the_title_never_narrows_as_the_terminal_widens(mixed_service, everywhere):
    """At 100 columns the preview moves beside the list, which then has some 60 columns of the
    100: the title still has at least what it had at 99 and at 80."""
    app = build_app(mixed_service)
    async with app.run_test(size=(WIDTHS[0], 30)) as pilot:
        await settle(pilot)
        if everywhere:
            await pilot.press("ctrl+a")
            await settle(pilot)
        session_list = app.screen.query_one(SessionList)
        titles: dict[int, int] = {}
        for width in WIDTHS:
            await pilot.resize_terminal(width, 30)
            await settle(pilot)
            await until(pilot, lambda width=width: app.screen.size.width == width)
            assert session_list.show_folder is everywhere
            titles[width] = session_list.layout_for(session_list.content_width).title_width
        widths = sorted(titles)
        assert all(titles[a] <= titles[b] for a, b in zip(widths, widths[1:], strict=False)), titles
        assert all(titles[width] >= titles[80] >= 40 for width in widths if width >= 80), titles


def test_reprise_list_shows_the_branch_column_when_a_session_has_one(demo_env, capsys, monkeypatch):
    root, workspace = demo_env
    monkeypatch.setenv("COLUMNS", "140")
    assert cli.main(["list", "--workspace", str(workspace)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0]
    assert "BRANCH" in header
    at = header.index("BRANCH")
    claude = [line for line in lines[1:] if " C " in line[:14]]
    assert claude and all(line[at:].startswith("main ") for line in claude)

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root / "absent"))
    monkeypatch.setenv("CODEX_HOME", str(root / "absent"))
    assert cli.main(["list", "--workspace", str(workspace)]) == 0
    assert "BRANCH" not in capsys.readouterr().out.splitlines()[0]   # Fractal records no branch
