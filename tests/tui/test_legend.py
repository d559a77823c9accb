"""The legend: F1 and `reprise list` explain every mark of the session list in the same words, and
those words are written once, in tui/legend.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from reprise.tui import legend
from reprise.tui.list_rows import STATUS_MARKS
from reprise.tui.screens.help import KeysScreen, legend_list

from .conftest import build_app, settle

AGENTS = {"fractal": "Fractal", "claude": "Claude Code", "codex": "Codex", "gemini": "Gemini CLI"}
TUI = Path(legend.__file__).resolve().parent


def flat(text: str) -> str:
    """Text with every run of spaces and line breaks (and the box's borders) as one space."""
    return re.sub(r"[\s█▀▄▁▔]+", " ", text)


def rendered(renderable: object) -> str:
    console = Console(width=90, record=True, color_system=None)
    console.print(renderable)
    return console.export_text()


def test_the_legend_has_every_status_glyph_the_list_draws_and_every_agent_letter():
    marks = [entry.mark for entry in legend.legend(AGENTS)]
    for status, (glyph, _) in STATUS_MARKS.items():
        assert glyph in marks, status   # the TUI list's glyphs, none left unexplained
    assert legend.NO_TURN_MARK == STATUS_MARKS[None][0] and legend.PIN_MARK in marks
    assert {"F", "C", "X", "G", "f c x g", "F C X G"} <= set(marks)
    styles = {entry.mark: entry.style for entry in legend.legend(AGENTS)}
    assert styles["f c x g"] == "muted" and styles["F C X G"] == "warn"


def test_the_letters_are_the_specs_marks_and_a_new_source_brings_its_own(monkeypatch):
    from reprise.core.rows import SessionRow
    from reprise.core.sources.registry import Registry, registry
    from reprise.core.sources.spec import SourceSpec
    from reprise.tui import columns

    assert columns.agent_marks() == {spec.name: spec.mark for spec in registry().specs}
    toy = SourceSpec(name="toy", label="Toy Agent", mark="Q", order=90, id_pattern=r"[0-9a-f]{8}",
                     factory="toy.source:Toy", listing_module="toy.listing")
    monkeypatch.setattr(columns, "registry", lambda: Registry((*registry().specs, toy), (), {}))
    marks = [entry.mark for entry in legend.legend({**AGENTS, "toy": "Toy Agent"})]
    assert {"Q", "f c x g q", "F C X G Q"} <= set(marks)

    def row(source: str, hidden: bool) -> SessionRow:
        return SessionRow(source, "w", "0" * 8, 1, 0, 0.0, 1, 0, None, None, None, None, None, None, "/s",
                          hidden_by_agent=hidden)

    assert [columns.agent_mark(row("toy", False)), columns.agent_mark(row("toy", True))] == ["Q", "q"]
    assert columns.agent_mark(row("zed", False)) == "Z"   # not registered: its name's first letter


def test_the_words_are_written_once_in_the_legend_module():
    phrases = [legend.HIDDEN, legend.DUE, *(m for m in legend.STATUS_MEANINGS.values() if len(m) > 12)]
    for path in TUI.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        for phrase in phrases:
            assert (phrase in text) == (path.name == "legend.py"), (path, phrase)


def test_the_f1_legend_renders_every_entry_as_mark_then_meaning():
    entries = legend.legend(AGENTS)
    text = flat(rendered(legend_list(entries, {})))
    for entry in entries:
        assert f"{entry.mark} {entry.meaning}" in text


async def test_f1_shows_the_legend_for_the_agents_the_app_lists(service):
    app = build_app(service)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, KeysScreen)
        text = flat(rendered(app.screen.query_one("#legend-body").content))
        for entry in legend.legend({name: source.label for name, source in service.sources.items()}):
            assert f"{entry.mark} {entry.meaning}" in text
        styles = app.screen._styles()
        assert styles["warn"].color != styles["muted"].color and styles["warn"].bold


def test_reprise_list_prints_every_entry_of_the_legend():
    done = subprocess.run([sys.executable, "-m", "reprise.tui.cli", "--demo", "list"], capture_output=True,
                          text=True, env=dict(os.environ, COLUMNS="80"), timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert all(len(line) <= 80 for line in out.splitlines() if line.startswith(("Marks:", "A:", "       ")))
    text = flat(out)
    for entry in legend.legend(AGENTS):
        assert f"{entry.mark} {entry.meaning}" in text
