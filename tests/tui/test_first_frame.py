"""The first frame `reprise` writes from the catalog's stored rows before Textual is imported is the
screen's own first frame, cell for cell (each character, its colour, its background, bold), in the
header and the list: compared with the app's first frame, held there while the listing waits, at
several sizes, with rows of every agent, a pinned row, rows the agents' pickers hide and an
unreadable one. Then on a real terminal: written first, replaced by the app, the terminal given back."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import signal
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from bench.terminal import OnTerminal
from reprise.core import config
from reprise.core.service import Service
from reprise.tui import first_frame
from reprise.tui.demo import build_demo_store
from reprise.tui.first_rows import FirstRows
from tests.factories import write_session

from .conftest import NOW, build_app, fixed_clock, hold_listing

Cell = tuple[str, str | None, str | None, bool]


@pytest.fixture
def demo_store(tmp_path) -> tuple[Path, Path, dict[str, str]]:
    """The demo store of every agent, a row pinned and a session file that cannot be read; its
    catalog warm (a listing stored its rows)."""
    root = tmp_path / "demo"
    workspace, environment = build_demo_store(root, now=NOW)
    env = {**os.environ, **environment}
    service = Service(config.load(state_dir=str(root / "state"), env=env), workspace=workspace)
    rows = service.list_sessions().rows
    service.set_pinned(rows[3].ref, True)
    write_session(root / "state", workspace, b'{"session_id": "broken", "history": [', session_id="broken")
    service.list_sessions()
    return root, workspace, env


def _service(demo_store, preview_when_narrow: bool = False) -> Service:
    root, workspace, env = demo_store
    service = Service(config.load(state_dir=str(root / "state"), env=env), workspace=workspace)
    if preview_when_narrow:
        choices = service.ui_choices()
        service.ui_choices = lambda: dataclasses.replace(choices, preview_when_narrow=True)  # type: ignore[method-assign]
    return service


def app_cells(strip) -> list[Cell]:
    cells = []
    for segment in strip:
        style = segment.style
        fg = style.color.triplet.hex if style and style.color and style.color.triplet else None
        bg = style.bgcolor.triplet.hex if style and style.bgcolor and style.bgcolor.triplet else None
        if style and style.reverse:
            fg, bg = bg, fg
        cells += [(char, fg, bg, bool(style and style.bold)) for char in segment.text]
    return cells


def frame_cells(line: first_frame.Line) -> list[Cell]:
    return [(char, fg, bg, bold) for text, (fg, bg, bold) in line for char in text]


@pytest.mark.parametrize(("size", "below", "picking"), [
    ((100, 30), False, False), ((80, 24), False, False), ((137, 30), False, False), ((120, 40), False, False),
    ((80, 24), True, False), ((60, 13), True, False),
    ((100, 30), False, True), ((80, 24), False, True), ((60, 13), True, True), ((45, 10), False, True)])
async def test_the_first_frame_is_the_screens_first_frame_cell_for_cell(demo_store, monkeypatch, size, below,
                                                                        picking):
    """The browse screen's, and a picker's (`reprise pick`: its filter prompt under the header, the
    list's cursor in the colour of a list without the focus, no meter line)."""
    service = _service(demo_store, below)
    first = FirstRows(service)
    rows = first.rows()
    assert len({row.source for row in rows}) >= 3 and any(row.pinned for row in rows)
    assert any(row.hidden_by_agent for row in rows) and any(row.problem_code for row in rows)
    width, height = size
    shape = first_frame.geometry(width, height, below)
    assert shape is not None
    ours = first_frame.frame(service, rows, shape, fixed_clock(), picking=picking)
    assert len(ours) == height and all(len(frame_cells(line)) == width for line in ours)
    drawn = first_frame.view(service, rows)[0][:shape.rows]
    if shape.rows >= 12:   # every kind of row is among those compared
        assert any(row.pinned for row in drawn) and any(row.problem_code for row in drawn)
        assert len({row.source for row in drawn}) >= 3

    reached, opened = hold_listing(monkeypatch)
    app = build_app(service, first_rows=first, mode="pick" if picking else "browse")
    top = 3 if picking else 2   # the column titles' line
    async with app.run_test(size=size) as pilot:
        assert await asyncio.to_thread(reached.wait, 30), "the listing never started"
        await pilot.pause()
        strips = app.screen._compositor.render_strips()
        compared = 0
        for y, (strip, line) in enumerate(zip(strips, ours, strict=True)):
            theirs, mine = app_cells(strip), frame_cells(line)
            if y < top:   # the header, and a picker's filter prompt
                span = width
            elif y == top:   # the list's column titles
                span = shape.list_width
            elif y <= top + shape.rows:   # the rows, not the scrollbar's gutter
                span = shape.content_width
            else:   # the preview, the meter line, the footer: blank in the first frame
                assert {cell[0] for cell in mine} == {" "}
                continue
            assert "".join(c[0] for c in mine[:span]) == "".join(c[0] for c in theirs[:span]), f"line {y}"
            for x in range(span):
                char, fg, bg, bold = theirs[x]
                assert (bg, bold) == mine[x][2:], f"line {y} column {x} {char!r}"
                if char != " ":
                    assert fg == mine[x][1], f"line {y} column {x} {char!r}"
            compared += 1
        assert compared == top + 1 + shape.rows
        opened.set()


def test_no_first_frame_on_a_terminal_narrower_than_the_list_pane_or_too_short():
    assert first_frame.geometry(39, 30, False) is None and first_frame.geometry(80, 7, False) is None
    assert first_frame.geometry(40, 8, False) is not None
    stacked = first_frame.geometry(80, 24, True)
    assert stacked is not None and stacked.rows == 9 and stacked.preview == "below"


def test_colours_follow_the_terminal(monkeypatch):
    assert first_frame.colour_system({"NO_COLOR": "", "COLORTERM": "truecolor"}) is None   # set, even empty
    assert first_frame.colour_system({"TERM": "xterm-kitty"}) == first_frame.ColorSystem.EIGHT_BIT
    look = ("#e0e0e0", "#1e1e1e", True)
    assert first_frame.sgr(first_frame.colour_system({"COLORTERM": "truecolor"}))(look) == \
        "\x1b[0;1;38;2;224;224;224;48;2;30;30;30m"
    assert "38;5;" in first_frame.sgr(first_frame.colour_system({"TERM": "xterm-256color"}))(look)
    assert first_frame.sgr(None)(look) == "\x1b[0;1m"


WAIT = 90.0   # a bound so a hang fails; every wait is for an event


def _reprise_on_terminal(demo_store, size=(100, 30)) -> OnTerminal:
    root, workspace, env = demo_store
    env = {**env, "REPRISE_STATE_DIR": str(root / "state"), "TERM": "xterm-256color"}
    env.pop("PYTHONUNBUFFERED", None)
    return OnTerminal([sys.executable, "-m", "reprise.tui.cli", "--workspace", str(workspace)], size=size,
                      env=env, cwd=str(workspace))


def test_on_a_terminal_the_first_frame_comes_first_and_the_app_replaces_it(demo_store):
    service = _service(demo_store)
    rows, _ = first_frame.view(service, service.stored_rows())
    title = rows[1].display_title[:20].encode()
    terminal = _reprise_on_terminal(demo_store)
    try:
        # the app's footer (its key for the keys' list): Textual has drawn its own frame
        assert terminal.wait_until(lambda: b"Keys" in terminal.output, WAIT), bytes(terminal.output[-2000:])
        written = bytes(terminal.output)
        # the frame's rows come before anything of Textual's: its first write turns on the mouse,
        # which the frame never does; then the app draws the same rows again
        textual = written.index(b"\x1b[?1000h")
        assert written.startswith(b"\x1b[?1049h") and 0 < written.index(title) < textual
        assert title in written[textual:]
        terminal.type(b"\x11")   # ctrl+q
        assert terminal.child.wait(timeout=WAIT) == 0
        terminal.read_to_the_end()
        written = bytes(terminal.output)
        assert written.rfind(b"\x1b[?1049l") > written.rfind(b"\x1b[?1049h")
    finally:
        terminal.end()


def test_a_picker_with_its_output_captured_draws_its_first_frame_on_the_terminal(demo_store, tmp_path):
    """`id=$(reprise pick)`: stdout is not the terminal, yet the picker's first frame (its filter
    prompt, PICK in the header) reaches the terminal before Textual's; Enter picks the row under
    the cursor, and its id goes to the captured stdout."""
    service = _service(demo_store)
    rows, _ = first_frame.view(service, service.stored_rows())
    root, workspace, env = demo_store
    env = {**env, "REPRISE_STATE_DIR": str(root / "state"), "TERM": "xterm-256color"}
    env.pop("PYTHONUNBUFFERED", None)
    captured = tmp_path / "picked"
    command = f"exec {sys.executable} -m reprise.tui.cli --workspace {workspace} pick > {captured}"
    terminal = OnTerminal(["sh", "-c", command], size=(140, 30), env=env, cwd=str(workspace))   # room for PICK
    try:
        assert terminal.wait_until(lambda: b"Keys" in terminal.output, WAIT), bytes(terminal.output[-2000:])
        written = bytes(terminal.output)
        textual = written.index(b"\x1b[?1000h")
        prompt = first_frame.PICK_PROMPT[1:20].encode()
        assert written.startswith(b"\x1b[?1049h") and 0 < written.index(b"PICK") < textual
        assert 0 < written.index(prompt) < textual
        assert 0 < written.index(rows[1].display_title[:20].encode()) < textual
        terminal.type(b"\r")
        assert terminal.child.wait(timeout=WAIT) == 0
        terminal.read_to_the_end()
        written = bytes(terminal.output)
        assert written.rfind(b"\x1b[?1049l") > written.rfind(b"\x1b[?1049h")
        assert captured.read_text().strip() == rows[0].ref.session_id
    finally:
        terminal.end()


def test_keys_typed_over_the_first_frame_are_not_echoed_and_reach_the_app(demo_store, tmp_path):
    """Typed while the picker's first frame waits for Textual: nothing is echoed over the frame, the
    keys wait for the app, whose filter shows them, and the terminal echoes again after it."""
    gate = tmp_path / "gate"
    root, workspace, env = demo_store
    env = {**env, "REPRISE_STATE_DIR": str(root / "state"), "TERM": "xterm-256color",
           "REPRISE_FAULTS": f"tui_first_frame=hold:{gate}"}
    env.pop("PYTHONUNBUFFERED", None)
    command = f"exec {sys.executable} -m reprise.tui.cli --workspace {workspace} pick > {tmp_path / 'picked'}"
    terminal = OnTerminal(["sh", "-c", command], size=(100, 30), env=env, cwd=str(workspace))
    try:
        assert terminal.wait_until(Path(f"{gate}.reached").exists, WAIT), bytes(terminal.output[-2000:])
        echoing = termios.tcgetattr(terminal.leader)[3] | termios.ECHO
        terminal.type(b"xqz")
        gate.touch()
        assert terminal.wait_until(lambda: b"Keys" in terminal.output, WAIT), bytes(terminal.output[-2000:])
        assert terminal.wait_until(lambda: terminal.shows("xqz"), WAIT), bytes(terminal.output[-2000:])
        written = bytes(terminal.output)
        assert b"xqz" not in written[:written.index(b"\x1b[?1000h")]   # not echoed before Textual drew
        terminal.type(b"\x11")   # ctrl+q: nothing picked
        assert terminal.child.wait(timeout=WAIT) == 1
        assert termios.tcgetattr(terminal.leader)[3] == echoing
    finally:
        terminal.end()


def test_a_sigterm_right_after_the_first_frame_gives_the_terminal_back(demo_store):
    terminal = _reprise_on_terminal(demo_store)
    try:
        assert terminal.wait_until(lambda: terminal.shows("sessions shown"), WAIT), bytes(terminal.output[-2000:])
        terminal.child.send_signal(signal.SIGTERM)   # in the first frame, or the app's: either way
        try:
            status = terminal.child.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"reprise still running {WAIT:.0f} s after SIGTERM")
        assert status in (-signal.SIGTERM, 128 + signal.SIGTERM)
        terminal.read_to_the_end()
        written = bytes(terminal.output)
        assert written.rfind(b"\x1b[?1049l") > written.rfind(b"\x1b[?1049h")
        assert written.rfind(b"\x1b[?25h") > written.rfind(b"\x1b[?25l")   # the cursor shown again
    finally:
        terminal.end()


def test_hostile_text_reaches_the_terminal_as_plain_characters(demo_store):
    """A title or a folder holding escapes, bells and line breaks is drawn as the list draws it:
    the frame's bytes hold no escape but its own (colours, places) and no control character."""
    service = _service(demo_store)
    rows = service.stored_rows()
    hostile = "\x1b]0;owned\x07\x1b[2J\r\nrm -rf ~\x9b31m"
    rows[0] = dataclasses.replace(rows[0], title=hostile, folder="/tmp/\x1b[5m")
    shape = first_frame.geometry(100, 30, False)
    assert shape is not None
    data = first_frame.encoded(first_frame.frame(service, rows, shape, fixed_clock()),
                               first_frame.sgr(first_frame.colour_system({"COLORTERM": "truecolor"})))
    text = data.decode()
    assert "owned" in text and "rm -rf" in text   # the words are shown, as text
    ours = re.compile(r"\x1b\[(?:\?1049h|\?25l|H|\d+;1H|[\d;]*m)")
    assert not re.search(r"[\x00-\x1f\x7f-\x9f]", ours.sub("", text))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_while_the_first_frame_waits_for_textual_gives_the_terminal_back(demo_store, tmp_path, sig):
    """Held at the point after the frame (Textual not imported yet), the signal ends `reprise` with
    the terminal out of the alternate screen, the cursor shown and its modes as they were."""
    gate = tmp_path / "gate"
    root, workspace, env = demo_store
    env = {**env, "REPRISE_STATE_DIR": str(root / "state"), "TERM": "xterm-256color",
           "REPRISE_FAULTS": f"tui_first_frame=hold:{gate}"}
    env.pop("PYTHONUNBUFFERED", None)
    terminal = OnTerminal([sys.executable, "-m", "reprise.tui.cli", "--workspace", str(workspace)], size=(100, 30),
                          env=env, cwd=str(workspace))
    try:
        assert terminal.wait_until(Path(f"{gate}.reached").exists, WAIT), bytes(terminal.output[-2000:])
        modes_in_frame = termios.tcgetattr(terminal.leader)
        assert not modes_in_frame[3] & termios.ECHO   # keys typed over the frame are not echoed
        modes_in_frame[3] |= termios.ECHO   # the modes before the frame
        terminal.child.send_signal(sig)
        try:
            status = terminal.child.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            pytest.fail(f"reprise still running {WAIT:.0f} s after {sig.name}")
        assert status == -sig
        terminal.read_to_the_end()
        written = bytes(terminal.output)
        assert b"sessions shown" in written and b"\x1b[?1000h" not in written   # the frame only: no Textual
        assert written.rfind(b"\x1b[?1049l") > written.rfind(b"\x1b[?1049h") > -1
        assert written.rfind(b"\x1b[?25h") > written.rfind(b"\x1b[?25l")
        assert termios.tcgetattr(terminal.leader) == modes_in_frame
    finally:
        terminal.end()
