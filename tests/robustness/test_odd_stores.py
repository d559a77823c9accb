"""Right answers on odd stores of Claude Code and Codex: a project folder the user cannot enter costs
only its own sessions, the audit log they share is read once, a file rewritten in place at the same
size is read again, and a warm listing finds the kept copies without opening every archive index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from reprise.core.service import Service
from reprise.tui import cli

from ..core.claude.builder import ClaudeFile
from ..core.codex.builder import CodexRollout
from .test_hostile import AS_ROOT, COMMAND_TIMEOUT_S, NOBODY, REPRISE, environment, permissive_base


def slug(folder: Path) -> str:
    return "".join(c if c.isalnum() else "-" for c in str(folder))


def claude_session(claude_root: Path, work: Path, number: int, *, project: str | None = None) -> ClaudeFile:
    session = ClaudeFile(f"5e551011-0000-4000-8000-{number:012d}", cwd=str(work), seed=number)
    session.turn(f"prompt {number}", f"reply {number}")
    session.write(claude_root / "projects" / (project or slug(work)) / f"{session.session_id}.jsonl")
    return session


# --- a project folder the user cannot enter ---------------------------------------------------------

def chown_tree_to_nobody(base: Path) -> None:
    if AS_ROOT:
        for folder, _, names in os.walk(base):
            os.chown(folder, 65534, 65534)
            for name in names:
                os.chown(Path(folder) / name, 65534, 65534)


@pytest.fixture
def shut_project():
    """A Claude Code root whose first project folder (by name) belongs to another user and cannot be
    entered, and a session in a project folder sorted after it; every command runs unprivileged."""
    base = permissive_base("reprise-shut-project-")
    try:
        work = base / "work"
        work.mkdir()
        (base / "home").mkdir()
        (base / "config.toml").write_text("")
        claude_root = base / "claude"
        later = claude_session(claude_root, work, 1, project=f"-zz{slug(work)}")
        claude_session(claude_root, work, 2, project="-aa-other-user")
        chown_tree_to_nobody(base)
        shut = claude_root / "projects" / "-aa-other-user"
        if AS_ROOT:
            os.chown(shut, 0, 0)
        shut.chmod(0o700 if AS_ROOT else 0o000)
        env = environment(base, base / "cache")
        env.update(CLAUDE_CONFIG_DIR=str(claude_root), CODEX_HOME=str(base / "codex"),
                   REPRISE_DATA_DIR=str(base / "data"))
        yield base, work, later.session_id, shut, env
    finally:
        (base / "claude" / "projects" / "-aa-other-user").chmod(0o700)
        shutil.rmtree(base, ignore_errors=True)


def unprivileged(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*NOBODY, str(REPRISE), *args], env=env, cwd=cwd, capture_output=True,
                          timeout=COMMAND_TIMEOUT_S, stdin=subprocess.DEVNULL)


def test_a_project_folder_the_user_cannot_enter_costs_only_its_own_sessions(shut_project):
    base, work, session_id, shut, env = shut_project
    state = ["--state-dir", str(base / "state")]
    listed = unprivileged(["list", "--all", "--json", *state], env, work)
    assert listed.returncode == 0, listed.stderr.decode()
    assert session_id in {row["session_id"] for row in json.loads(listed.stdout)["sessions"]}
    for args in (["show", session_id, "--json"], ["resume", session_id, "--print"], ["keep", session_id],
                 ["rm", session_id, "--force"]):
        result = unprivileged([*args, *state], env, work)
        err = result.stderr.decode()
        assert result.returncode == 0, f"{args}: exit {result.returncode}: {err}"
        assert "Permission denied" not in err and "Traceback" not in err, (args, err)
    assert not (work.parent / "claude" / "projects" / f"-zz{slug(work)}" / f"{session_id}.jsonl").exists()


# --- the audit log Claude Code's and Codex's sources share -------------------------------------------

def test_audit_shows_each_claude_and_codex_operation_once(tmp_path, isolated_paths, capsys, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    claude = claude_session(Path(os.environ["CLAUDE_CONFIG_DIR"]), work, 1)
    codex = CodexRollout(cwd=str(work), seed=7)
    codex.turn("hello", "hi")
    codex.write(Path(os.environ["CODEX_HOME"]))
    service = Service.from_environment(workspace=str(work))
    for session_id in (claude.session_id, codex.session_id):
        service.remove(service.resolve(session_id))
    service.catalog.close()
    assert cli.main(["audit", "--json"]) == 0
    removed = [record["session_id"] for record in json.loads(capsys.readouterr().out)["audit"]
               if record["op"] == "rm"]
    assert sorted(removed) == sorted([claude.session_id, codex.session_id])
