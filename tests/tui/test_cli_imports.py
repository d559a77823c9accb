"""A listing or a search from the command line imports what it needs and no more: no Textual or
Rich (the TUI's), no tokenizer, and no process pool when nothing is read cold. Each check runs the
command in a fresh interpreter and looks at `sys.modules`; no timing."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.factories import session_bytes, session_id_for, write_session

# The table for people measures titles with `rich.cells`, and only that of Rich.
NOT_FOR_A_LISTING = {"textual", "tiktoken", "multiprocessing", "concurrent", "rich.console", "rich.text"}


def _imported_by_command(argv: list[str], cwd: str, statuses: tuple[str, ...] = ("0",)) -> set[str]:
    code = ("import contextlib, io, sys\nfrom reprise.tui.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n    status = main({argv!r})\n"
            "print(status, ','.join(sorted(name for name, module in sys.modules.items()\n"
            "                               if type(module).__name__ != '_LazyModule')))")   # imported, not only named
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=cwd)
    status, modules = result.stdout.split()
    assert status in statuses, result.stderr
    return {name.split(".")[0] for name in modules.split(",")} | set(modules.split(","))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A folder with two sessions in the state root the tests point at."""
    folder = tmp_path / "work"
    folder.mkdir()
    for name in ("one", "two"):
        session_id = session_id_for(name)
        write_session(tmp_path / "state", folder, session_bytes(session_id, turns=2, seed=len(name)))
    return folder


@pytest.mark.parametrize("argv", [["list", "--all", "--json"], ["list"], ["list", "--all"]])
def test_a_listing_imports_neither_the_tui_nor_the_tokenizer_nor_a_pool(workspace, argv):
    imported = _imported_by_command(argv, str(workspace))
    assert not imported & NOT_FOR_A_LISTING
    assert "reprise.tui.app" not in imported and "reprise.core.catalog" in imported
    if "--json" in argv:
        assert "rich" not in imported
    # Only the module of the command's group: the others (trash, trims, turns...) are not imported.
    commands = {name for name in imported if name.startswith("reprise.tui.cli.")}
    assert commands <= {"reprise.tui.cli.listing", "reprise.tui.cli.arguments", "reprise.tui.cli.entry",
                        "reprise.tui.cli.output", "reprise.tui.cli.parser", "reprise.tui.cli.tui_runs",
                        "reprise.tui.cli.agent_handoff"}
    assert "reprise.tui.cli.listing" in commands


def test_a_search_imports_neither_the_tui_nor_the_tokenizer(workspace):
    imported = _imported_by_command(["search", "--json", "anything"], str(workspace), ("0", "1"))   # 1: no hit
    assert not imported & {"textual", "rich", "tiktoken"}
    assert "reprise.core.contract" not in imported   # its document printed as data, as a listing's


def test_the_check_sees_the_tui_when_a_command_imports_it(workspace):
    """The check itself: a command that builds the TUI's app is seen doing so."""
    code_argv = ["list", "--json"]
    imported = _imported_by_command(code_argv, str(workspace))
    assert "reprise.tui.cli.listing" in imported   # the command ran
    imported_app = subprocess.run([sys.executable, "-c", "import sys, reprise.tui.app; print(','.join(sys.modules))"],
                                  capture_output=True, text=True, check=True).stdout
    assert "textual" in imported_app.split(",")


# A warm listing as data or search reads no session file: nothing it does needs the settings' models, the
# decoding of a file or Reprise's metadata of a session, all of them pydantic's (80 ms of a 0.25 s listing).
# (The table for people shows each row's window, which the meter's settings decide: it reads them.)
PYDANTIC = {"pydantic", "pydantic_core", "annotated_types"}


@pytest.mark.parametrize("argv", [["list", "--all", "--json"], ["list", "--json"],
                                  ["search", "--all", "--limit", "50", "message"],
                                  ["search", "--all", "--limit", "50", "--json", "nowhere"]])
def test_a_warm_listing_or_search_does_not_import_pydantic(workspace, argv):
    _settled(workspace.parent / "state")
    statuses = ("0", "1")   # 1: a search without a hit
    _imported_by_command(argv, str(workspace), statuses)   # cold: the files are read (and the index built)
    assert not _imported_by_command(argv, str(workspace), statuses) & PYDANTIC


def test_a_warm_listing_of_claude_code_sessions_does_not_import_their_line_decoder(workspace):
    """msgspec decodes the lines a listing reads (`claude/listing_records`): a warm listing reads none."""
    from reprise.core.sources.claude.layout import slug
    from tests.core.claude.builder import ClaudeFile

    session = ClaudeFile(cwd=str(workspace))
    session.turn("hello", "hi")
    session.write(workspace.parent / "claude" / "projects" / slug(str(workspace)) / f"{session.session_id}.jsonl")
    _settled(workspace.parent / "claude")
    cold = _imported_by_command(["list", "--json"], str(workspace))
    assert "msgspec" in cold   # the check sees it
    warm = _imported_by_command(["list", "--json"], str(workspace))
    assert "reprise.core.sources.claude.records" in warm and "msgspec" not in warm


def _settled(root):
    """Every file under `root` dated a minute ago: a file written within seconds is read again by each listing."""
    moment = time.time() - 60
    for path in root.rglob("*"):
        os.utime(path, (moment, moment))


def test_the_pydantic_check_sees_a_command_that_reads_a_file(workspace):
    """The check itself: a cold listing decodes Fractal's files, which imports pydantic."""
    assert PYDANTIC <= _imported_by_command(["list", "--all", "--json"], str(workspace))


# What a warm listing never does: run or look for an agent's process (ctypes, subprocess), trash, prune or
# sweep, search, undo, or show a conversation. The modules that do are imported by the methods that use
# them (issue 27: a warm `list --all --json` imported 270 modules).
NOT_FOR_A_WARM_LISTING = {
    "ctypes", "subprocess", "tempfile", "reprise.core.agents", "reprise.core.processes", "reprise.core.liveness",
    "reprise.core.retention", "reprise.core.trash_results",
    "reprise.core.sources.file_trash", "reprise.core.sources.file_writers",
    "reprise.core.search_build", "reprise.core.search_cold", "reprise.core.search_engine",
    "reprise.core.search_index", "reprise.core.search_match",
    "reprise.core.undo", "reprise.core.session_links",
    "reprise.tui.reports.conversation", "reprise.tui.reports.history",
}


@pytest.mark.parametrize("argv", [["list", "--all", "--json"], ["list", "--all"]])
def test_a_warm_listing_imports_no_process_trash_or_search_module(workspace, argv):
    _settled(workspace.parent / "state")
    _imported_by_command(argv, str(workspace))   # cold: the files are read
    assert not _imported_by_command(argv, str(workspace)) & NOT_FOR_A_WARM_LISTING


def test_the_warm_listing_check_sees_a_search_import_the_search_modules(workspace):
    """The check itself: a warm search imports the modules a listing leaves out (and neither the cold
    search's nor the index build's: nothing is cold)."""
    _settled(workspace.parent / "state")
    argv = ["search", "--all", "--json", "nowhere"]
    _imported_by_command(argv, str(workspace), ("0", "1"))
    warm = _imported_by_command(argv, str(workspace), ("0", "1"))
    assert {"reprise.core.search_engine", "reprise.core.search_index", "reprise.core.search_match"} <= warm
    assert not {"reprise.core.search_cold", "reprise.core.search_build"} & warm
