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

