"""The demo store's Claude Code and Codex sessions: written in each agent's byte form in the demo's
own Claude root and Codex home, they list beside the demo's Fractal sessions, open and search through
the service, and in the TUI a Codex row resumes (shown), goes to the trash with Codex's note and trims
as a fork."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest
from textual.widgets import Button, Input, Static

from reprise.core import config
from reprise.core.rows import SessionRow
from reprise.core.service import Service
from reprise.core.sources.claude.retention import RetentionPolicy
from reprise.core.sources.claude.samples import claude_root
from reprise.core.sources.codex.samples import codex_root
from reprise.tui.demo import build_demo
from reprise.tui.screens.dialogs import ConfirmDialog
from reprise.tui.screens.trim import TrimDialog
from reprise.tui.widgets.session_list import SessionList

from .conftest import NOW, build_app, settle


@pytest.fixture
def demo_root(tmp_path) -> Path:
    build_demo(tmp_path / "demo", now=NOW)
    return tmp_path / "demo"


def demo_service(root: Path, folder: str = "webapp") -> Service:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_root(root)))
    return Service(config.load(state_dir=str(root / "state"), env=env), workspace=root / "projects" / folder)


def claude_files(root: Path) -> list[Path]:
    return sorted((claude_root(root) / "projects").glob("*/*.jsonl"))


def by_first_message(service: Service, **options):
    listing = service.list_sessions(sources=["claude"], **options)
    service.load_details(listing.rows)
    return {row.fields.first_message: row for row in listing.rows}


def test_the_demo_files_are_in_claude_codes_byte_form(demo_root):
    files = claude_files(demo_root)
    assert len(files) == 5
    entrypoints = []
    for path in files:
        data = path.read_bytes()
        assert data.endswith(b"\n") and path.stem == json.loads(data.splitlines()[0])["sessionId"]
        for line in data.splitlines():
            record = json.loads(line)
            assert json.dumps(record, separators=(",", ":"), ensure_ascii=False).encode() == line
            if "entrypoint" in record:
                entrypoints.append(record["entrypoint"])
    assert entrypoints.count("cli") and set(entrypoints) == {"cli", "sdk-cli"}


def test_the_demo_is_the_same_for_the_same_clock(tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    build_demo(first, now=NOW)
    build_demo(second, now=NOW)
    pairs = zip(claude_files(first), claude_files(second), strict=True)
    for mine, theirs in pairs:
        assert mine.name == theirs.name and mine.stat().st_mtime_ns == theirs.stat().st_mtime_ns
        assert mine.read_bytes().replace(str(first).encode(), str(second).encode()) == theirs.read_bytes()


def test_the_demos_claude_sessions_list_beside_its_fractal_ones(demo_root):
    service = demo_service(demo_root)
    listing = service.list_sessions()
    assert {row.source for row in listing.rows} == {"fractal", "claude"}
    rows = by_first_message(service)
    assert len(rows) == 4
    typed = rows["Add address autocomplete to the checkout form"]
    assert typed.fields.agent_title == "Checkout: address autocomplete" and typed.turns == 3
    assert not typed.hidden_by_agent
    assert all(row.hidden_by_agent for row in rows.values() if row is not typed)
    assert by_first_message(service, hide_agent_hidden=True).keys() == {typed.fields.first_message}
    assert all(row.workspace_path == str((demo_root / "projects" / "webapp").resolve()) for row in rows.values())
    other = by_first_message(demo_service(demo_root, "data-pipeline"))
    assert [row.fields.last_status for row in other.values()] == ["interrupted"]


def test_one_demo_session_is_days_from_claude_codes_cleanup(demo_root):
    policy = RetentionPolicy()
    phrases = sorted(policy.phrase(path.stat().st_mtime, NOW.timestamp()) or "" for path in claude_files(demo_root))
    assert phrases[0] == "deleted by Claude Code in 2 days"
    assert [policy.at_risk(path.stat().st_mtime, NOW.timestamp()) for path in claude_files(demo_root)].count(True) == 1


def test_the_demos_claude_sessions_open_with_tools_thinking_and_compaction(demo_root):
    service = demo_service(demo_root)
    rows = by_first_message(service)
    typed = service.show(rows["Add address autocomplete to the checkout form"].ref).transcript
    assert typed.turns[0].thinking and "debounced" in typed.turns[0].thinking
    bash = typed.turns[2].tool_calls[0]
    assert bash.name == "Bash" and "21 passed" in (bash.result or "")
    assert [command.command for command in typed.turns[2].commands] == ["pnpm test checkout"]
    failing = service.show(rows["Why does the date test fail on CI? Run it and fix it."].ref).transcript
    assert "vi.setSystemTime" in failing.turns[0].reply
    compacted = service.show(rows["Plan the move of the API from REST to tRPC"].ref).transcript
    assert len(compacted.turns) == 4 and len(compacted.compactions) == 1
    compaction = compacted.compactions[0]
    assert compaction.before_turn == 3 and compaction.tokens_before > compaction.tokens_after > 0


def test_the_demos_claude_sessions_are_searched_with_the_fractal_ones(demo_root):
    service = demo_service(demo_root)
    failing = by_first_message(service)["Why does the date test fail on CI? Run it and fix it."]
    assert [(hit.row.file_id, hit.turn, hit.field) for hit in service.search("ELIFECYCLE")] == [
        (failing.file_id, 1, "tool")]
    assert {hit.row.source for hit in service.search("router")} == {"claude"}
    assert "fractal" in {hit.row.source for hit in service.search("refactor")}


def test_the_demos_codex_sessions_list_open_and_search_as_codex_wrote_them(demo_root):
    """Four rollouts in the demo's own CODEX_HOME: compact JSON lines with ordinals from 0; an
    interactive one with a command, one renamed by Codex's session index, `exec` runs hidden by
    Codex's picker, one in another folder."""
    files = sorted((codex_root(demo_root) / "sessions").glob("*/*/*/rollout-*.jsonl"))
    assert len(files) == 4
    for path in files:
        records = [json.loads(line) for line in path.read_bytes().splitlines()]
        assert [record["ordinal"] for record in records] == list(range(len(records)))
        assert all(json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() == line
                   for r, line in zip(records, path.read_bytes().splitlines(), strict=True))
        assert path.name.endswith(f"-{records[0]['payload']['id']}.jsonl")
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_root(demo_root)), CODEX_HOME=str(codex_root(demo_root)))
    service = Service(config.load(state_dir=str(demo_root / "state"), env=env),
                      workspace=demo_root / "projects" / "webapp")
    listing = service.list_sessions(sources=["codex"])
    service.load_details(listing.rows)
    rows = {row.display_title: row for row in listing.rows}
    assert set(rows) == {"The cart total is wrong when a coupon and a sale price both apply",
                         "Orders: page size setting", "List the TODO comments in src/ with their file and line"}
    assert [title for title, row in rows.items() if row.fields.hidden_by_agent] == [
        "List the TODO comments in src/ with their file and line"]
    typed = service.show(rows["The cart total is wrong when a coupon and a sale price both apply"].ref).transcript
    assert [[each.command for each in turn.commands] for turn in typed.turns] == [[], ["pnpm vitest run src/cart"]]
    assert "the 3 new coupon cases" in typed.turns[1].reply
    cart = rows["The cart total is wrong when a coupon and a sale price both apply"]
    assert [(hit.row.file_id, hit.turn, hit.field) for hit in service.search("coupon.test")] == [
        (cart.file_id, 2, "tool")]
    elsewhere = service.list_sessions(sources=["codex"], all_workspaces=True).rows
    assert len(elsewhere) == 4


def codex_demo_service(root: Path) -> Service:
    env = dict(os.environ, CLAUDE_CONFIG_DIR=str(claude_root(root)), CODEX_HOME=str(codex_root(root)),
               REPRISE_DATA_DIR=str(root / "data"))
    return Service(config.load(state_dir=str(root / "state"), env=env), workspace=root / "projects" / "webapp")


async def to_row(pilot, title: str) -> SessionRow:
    await settle(pilot)
    listed = pilot.app.screen.query_one(SessionList)
    listed.move_to(next(i for i, row in enumerate(listed.rows) if row.display_title == title))
    await settle(pilot)
    return listed.current


async def test_in_the_demo_a_codex_row_opens_resumes_and_goes_to_the_trash_with_codexs_note(demo_root):
    service = codex_demo_service(demo_root)
    app = build_app(service, demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        row = await to_row(pilot, "The cart total is wrong when a coupon and a sale price both apply")
        assert row.source == "codex"
        await pilot.press("enter")
        await settle(pilot)
        shown = str(app.screen.query_one("#command-line", Static).render())
        assert f"codex resume {row.ref.session_id}" in shown and "projects/webapp" in shown
        await pilot.press("escape")
        await pilot.press("ctrl+x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog)
        question = app.screen.question
        assert "The cart total is wrong" in question and "no rollout found" in question
        assert f"reprise trash restore {row.file_id[-8:]}" in question   # the end: the start is a timestamp
        await pilot.press("enter")
        await settle(pilot)
        said = [n.message for n in app._notifications]
        assert any(m.startswith("Moved “The cart total is wrong") for m in said)
        assert any("Codex cannot resume it" in m for m in said)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmDialog) and "“The cart total is wrong" in app.screen.question


async def trim_the_cart_session(pilot) -> TrimDialog:
    """The trim dialog of the demo's small Codex session, its first preview settled."""
    await to_row(pilot, "The cart total is wrong when a coupon and a sale price both apply")
    await pilot.press("ctrl+t")
    await settle(pilot)
    await settle(pilot)
    dialog = pilot.app.screen
    assert isinstance(dialog, TrimDialog)
    return dialog


async def test_the_trim_dialog_of_a_small_codex_session_opens_on_something_it_would_do(demo_root):
    service = codex_demo_service(demo_root)
    app = build_app(service, demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await trim_the_cart_session(pilot)
        assert dialog.fork_only
        assert dialog.operation == "keep" and dialog.query_one("#trim-value", Input).value == "1"
        assert "already fits in" in str(dialog.query_one("#trim-help", Static).render())
        assert dialog.result is not None and dialog.result.plan.changed
        assert not dialog.query_one("#fork", Button).disabled


async def test_a_fractal_session_that_already_fits_is_told_why_nothing_would_change(demo_root):
    """Fractal's dialog keeps its default (fit); when that already fits, the preview says the size
    of the next turn against the figure, and what would change something."""
    app = build_app(codex_demo_service(demo_root), demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await to_row(pilot, "Dark mode")
        await pilot.press("ctrl+t")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, TrimDialog) and not dialog.fork_only and dialog.operation == "fit"
        text = str(dialog.query_one("#trim-preview", Static).render())
        assert "Nothing to trim: the next turn is " in text and "already within the" in text
        assert "a smaller N, or another choice above, would change something" in text


def test_a_title_renamed_in_the_agent_is_found_by_search(demo_root):
    """Codex's thread name (a rename in Codex) and Claude Code's own titles are searched like
    Reprise's renames: the hit is the title, not a turn."""
    service = codex_demo_service(demo_root)
    hits = service.search("page size")
    assert [(hit.row.source, hit.turn, hit.field, hit.row.display_title) for hit in hits] == [
        ("codex", 0, "title", "Orders: page size setting")]


def test_a_demo_run_removes_its_store_when_it_ends(tmp_path):
    import subprocess
    import sys

    env = dict(os.environ, TMPDIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-m", "reprise.tui.cli", "--demo", "list", "--all", "--json"],
                          capture_output=True, text=True, env=env, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["sessions"]) >= 10
    root = done.stderr.split("demo store in ", 1)[1].split(" (removed when this run ends)")[0]
    assert Path(root).parent == tmp_path and not Path(root).exists()
    assert not list(tmp_path.glob("reprise-demo-*"))


def test_the_preview_of_a_session_due_for_deletion_names_the_key_that_keeps_it(demo_root):
    from reprise.tui.actions import COMMANDS, key_text
    from reprise.tui.widgets.detail import deletion_note

    service = demo_service(demo_root)
    service.clock = NOW.timestamp
    due = next(row for row in service.list_sessions().rows
               if row.agent_deletion is not None and row.agent_deletion.at_risk)
    assert due.ref is not None
    note = deletion_note(service.show(due.ref))
    keep = next(command for command in COMMANDS if command.action == "keep")
    assert note.startswith("deleted by Claude Code in 2 days") and f"; {key_text(keep.keys)} copies it" in note


async def test_the_trim_dialog_opens_on_keep_when_its_turns_arrive_after_the_first_preview(demo_root, monkeypatch):
    """On a busy machine the dialog's first preview can come back before its turns are read: the
    switch to "keep" is then made when the turns arrive."""
    service = codex_demo_service(demo_root)
    previewed = threading.Event()
    real_sizes, real_show = service.turn_sizes, TrimDialog._show_preview

    def late_sizes(ref):
        assert previewed.wait(60), "the first preview never came"
        return real_sizes(ref)

    def show_preview(dialog, result, generation):
        real_show(dialog, result, generation)
        previewed.set()

    service.turn_sizes = late_sizes
    monkeypatch.setattr(TrimDialog, "_show_preview", show_preview)
    app = build_app(service, demo=True)
    async with app.run_test(size=(120, 40)) as pilot:
        dialog = await trim_the_cart_session(pilot)
        assert dialog.turns is not None
        assert dialog.operation == "keep" and "already fits in" in str(dialog.query_one("#trim-help", Static).render())
