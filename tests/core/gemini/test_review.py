"""A new user's pass over Gemini CLI sessions on the command line (the real client's store): what
each command says names Gemini CLI and its files, never another agent."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parents[2] / "fixtures" / "gemini" / "store-0.61.0" / "home" / ".gemini"
SOLO = "0b721226-5368-4866-8a0c-9350b728f142"


@pytest.fixture
def gemini_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the real client's store, GEMINI_CLI_HOME pointed at it."""
    shutil.copytree(FIXTURE, tmp_path / "home" / ".gemini")
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "home"))
    return tmp_path / "home" / ".gemini"


def test_keep_of_a_gemini_session_names_gemini_cli_s_clean_up(gemini_home: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from reprise.tui import cli

    assert cli.main(["keep", SOLO[:8]]) == 0
    said = capsys.readouterr().out
    assert said.startswith(f"Kept {SOLO}: ") and "Gemini CLI's clean-up cannot reach it." in said
    assert "Claude Code" not in said
