"""`reprise resume` on a real-shaped Claude Code store (tests/fixtures/claude-store): `--last` as
`claude --continue` takes it, `--workspace` naming a folder that is gone, and the notes said
before the agent takes the terminal."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprise.tui import cli
from reprise.tui.cli import agent_handoff

from ..core.claude.test_claude_source import THREE_TURNS, copy_store


@pytest.fixture
def folders(tmp_path) -> dict[str, Path]:
    return copy_store(Path(os.environ["CLAUDE_CONFIG_DIR"]), tmp_path / "work")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_workspace_naming_a_gone_folder_resumes_from_the_current_folder_and_says_so(folders, capsys, monkeypatch):
    gone = folders["alpha"]
    shutil.rmtree(gone)
    monkeypatch.chdir(folders["beta"])
    status, out, err = run(capsys, "--workspace", str(gone), "resume", "--print", "--json", THREE_TURNS[:8])
    assert status == 0, out
    plan = json.loads(out)
    assert plan["cwd"] == str(folders["beta"])
    assert any("no longer exists" in note and str(gone) in note and f"from {folders['beta']}" in note
               for note in plan["notes"])
    handed = []
    monkeypatch.setattr(agent_handoff, "exec_handoff", lambda argv, cwd: handed.append((argv, cwd)))
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)
    status, _, err = run(capsys, "--workspace", str(gone), "resume", THREE_TURNS[:8])
    assert status == 0, err
    assert handed == [(["claude", "--resume", THREE_TURNS], str(folders["beta"]))]
    assert f"from {folders['beta']}" in err


def test_resume_last_takes_the_newest_session_with_a_turn_and_says_which_empty_ones_it_skipped(
        capsys, isolated_paths, tmp_path, monkeypatch):
    from .test_cli import put

    workspace = tmp_path / "project"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    put(isolated_paths, workspace, "a" * 32, 2)
    status, out, err = run(capsys, "resume", "--last", "--print", "--json")
    assert status == 0 and json.loads(out)["notes"] == [] and "Skipped" not in err
    status, out, _ = run(capsys, "new", "--title", "not started yet", "--json")
    empty = json.loads(out)["session_id"]
    status, out, err = run(capsys, "resume", "--last", "--print", "--json")
    plan = json.loads(out)
    assert status == 0 and plan["argv"][-1] == "a" * 32
    said = f"Skipped 1 newer session with no turn ({empty[:8]})"
    assert said in plan["notes"][0] and said in err and "claude --continue" in err
    status, out, err = run(capsys, "resume", "--last", "--print")
    assert status == 0 and out.split()[-1] == "a" * 32 and said in err


def test_resume_last_with_only_empty_sessions_names_one_to_resume_by_id(capsys, tmp_path, monkeypatch):
    workspace = tmp_path / "project"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    run(capsys, "new")
    status, out, err = run(capsys, "resume", "--last", "--print")
    assert status == 3 and "has a turn yet (1 empty)" in err and "reprise resume " in err


def _fake_claude(tmp_path: Path) -> tuple[Path, Path]:
    """A `claude` on PATH that leaves a mark when it starts: (its folder, the mark)."""
    folder, mark = tmp_path / "bin", tmp_path / "started"
    folder.mkdir()
    program = folder / "claude"
    program.write_text(f"#!/bin/sh\ntouch {mark}\necho AGENT-STARTED\n")
    program.chmod(0o755)
    return folder, mark


@pytest.mark.parametrize(("keys", "starts"), [(b"\r", True), (b"\x04", False)])
def test_resume_notes_wait_on_a_terminal_for_enter_before_the_agent_clears_the_screen(folders, tmp_path, keys,
                                                                                       starts):
    from .test_resume_picker import run_on_a_terminal

    programs, mark = _fake_claude(tmp_path)
    shutil.rmtree(folders["alpha"])   # a note to read: the session's folder is gone
    argv = ["env", f"PATH={programs}:{os.environ['PATH']}", sys.executable, "-m", "reprise.tui.cli", "resume",
            THREE_TURNS[:8]]
    status, written = run_on_a_terminal(argv, folders["beta"], keys, wait_for=b"Press Enter to start claude")
    before, _, after = written.partition(b"Press Enter to start claude")
    assert b"no longer exists" in before and b"AGENT-STARTED" not in before   # the note, then the wait
    assert mark.exists() is starts and (b"AGENT-STARTED" in after) is starts
    assert status == (0 if starts else 1)
    if not starts:
        assert b"claude was not started" in after


def test_resume_notes_do_not_wait_when_stdin_is_not_a_terminal(folders, tmp_path):
    programs, mark = _fake_claude(tmp_path)
    shutil.rmtree(folders["alpha"])
    done = subprocess.run([sys.executable, "-m", "reprise.tui.cli", "resume", THREE_TURNS[:8]], cwd=folders["beta"],
                          env=dict(os.environ, PATH=f"{programs}:{os.environ['PATH']}"), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and mark.exists() and "Press Enter" not in done.stderr
    assert "no longer exists" in done.stderr and done.stdout == "AGENT-STARTED\n"
