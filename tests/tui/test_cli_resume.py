"""`reprise resume` on a real-shaped Claude Code store (tests/fixtures/claude-store): `--last` as
`claude --continue` takes it, `--workspace` naming a folder that is gone, and the notes said
before the agent takes the terminal."""

from __future__ import annotations

import json
import os
import shutil
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
