"""Reprise's trash against real Claude Code sessions: `reprise rm` and `reprise trash restore` of
sessions the real client wrote (one with a subagent's sidecar folder) give back byte-identical
files, which the real client then resumes with their whole history (`claude --resume ID -p`)."""

from __future__ import annotations

import json
import shutil
import time
from datetime import datetime
from pathlib import Path

import pytest

from reprise.tui import cli
from tests.core.claude.builder import snapshot

from . import fake_anthropic
from .sessions import JSON_OUT, SESSION_IDS, LiveClaude, Step
from .test_claude_compat import records, reprise, scenario_prompts

pytestmark = pytest.mark.compat

RECENT_S = 300.0   # liveness.RECENT_S: a newer record makes `rm` refuse without --force


def newest_age(path: Path) -> float:
    stamps = [r["timestamp"] for r in records(path) if isinstance(r.get("timestamp"), str)]
    newest = max(datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp() for s in stamps)
    return time.time() - newest


def trash(capsys, session_id: str, path: Path) -> dict:
    """`reprise rm`, which refuses while the newest record is minutes old (the store was made by this
    test run), and then needs --force."""
    if newest_age(path) < RECENT_S - 30:
        status = cli.main(["rm", session_id, "--json"])
        out, err = capsys.readouterr()
        assert status != 0 and "may be writing" in out + err, out + err
        assert path.exists()
        return reprise(capsys, "rm", session_id, "--force")
    return reprise(capsys, "rm", session_id)


def test_trash_and_restore_give_back_files_the_real_client_resumes(claude_store, capsys, monkeypatch, tmp_path,
                                                                   isolated_paths):
    live = LiveClaude(claude_store.live.binary, tmp_path / "copy")
    shutil.rmtree(live.config_dir)
    shutil.copytree(claude_store.config_dir, live.config_dir, symlinks=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(live.config_dir))
    alpha = claude_store.folders["alpha"]
    monkeypatch.chdir(alpha)
    sessions = {name: SESSION_IDS[name] for name in ("three", "agent")}
    paths = {name: next(live.config_dir.glob(f"projects/*/{sid}.jsonl")) for name, sid in sessions.items()}
    assert paths["agent"].with_suffix("").joinpath("subagents").is_dir()   # the sidecar folder moves too
    before = {name: snapshot(path) for name, path in paths.items()}

    for name, session_id in sessions.items():
        entry = trash(capsys, session_id, paths[name])
        assert entry["session_id"] == session_id
        assert not paths[name].exists() and not paths[name].with_suffix("").exists()
    listed = {row["session_id"] for row in reprise(capsys, "list", "--all")["sessions"]}
    assert not listed & set(sessions.values())
    in_trash = {entry["session_id"] for entry in reprise(capsys, "trash", "list", "--all")["trash"]}
    assert in_trash == set(sessions.values())

    for name, session_id in sessions.items():
        assert reprise(capsys, "trash", "restore", session_id)["session_id"] == session_id
        assert snapshot(paths[name]) == before[name], name
    assert reprise(capsys, "trash", "list", "--all")["trash"] == []
    listed = {row["session_id"] for row in reprise(capsys, "list", "--all")["sessions"]}
    assert set(sessions.values()) <= listed

    prompts = {name: f"After the trash MARKback{name}" for name in sessions}
    steps = [Step(["--resume", session_id, "-p", prompts[name], *JSON_OUT], alpha, label=f"resume {name}")
             for name, session_id in sessions.items()]
    results = dict(zip(sessions, live.run(steps), strict=True))
    history = scenario_prompts(claude_store.folders)
    for name, result in results.items():
        assert result.returncode == 0 and result.output.get("is_error") is False, result.describe()
        assert result.output.get("session_id") == sessions[name], result.describe()
        assert result.requests, result.describe()
        main = max(result.requests, key=lambda request: len(request["messages"]))["messages"]
        sent = [fake_anthropic.prompt_text(m) for m in main if m["role"] == "user" and fake_anthropic.prompt_text(m)]
        if name == "three":
            assert sent == [*history["three"], prompts[name]], sent
        else:   # the subagent's own prompts travel in tool results, not as user prompts
            assert sent[0] == history[name][0] and sent[-1] == prompts[name], sent
        assert any(r.get("type") == "user" and prompts[name] in json.dumps(r) for r in records(paths[name]))
