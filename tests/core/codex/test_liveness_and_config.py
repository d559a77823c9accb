"""Codex's liveness (a recent record, or a process holding the rollout open for writing; a child
process ended by its pid), its retention note, and `[sources.codex]` in the settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from reprise.core import config
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.codex.liveness import writer_of
from tests.core.codex.builder import CodexRollout

needs_proc = pytest.mark.skipif(not os.path.isdir(f"/proc/{os.getpid()}/fd"), reason="no /proc on this system")


def test_a_rollout_with_a_record_a_minute_old_is_being_written(tmp_path):
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"{}\n")
    now = time.time()
    assert writer_of(path, now - 60, now) is not None
    assert writer_of(path, now - 3600, now) is None


@needs_proc
def test_a_process_holding_the_rollout_open_for_writing_is_its_writer(tmp_path):
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(b"{}\n")
    code = f"f = open({str(path)!r}, 'ab')\nprint('ready', flush=True)\nimport time\ntime.sleep(60)\n"
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "ready"
        found = writer_of(path, None, time.time())
        assert found is not None and found.pid == child.pid
    finally:
        os.kill(child.pid, signal.SIGTERM)
        child.wait(10)
        assert child.stdout is not None
        child.stdout.close()


def test_a_session_written_now_gets_a_note_before_a_resume(tmp_path):
    root = tmp_path / "codex"
    rollout = CodexRollout(cwd=str(tmp_path), source="cli", start=datetime.now(UTC))
    rollout.turn("hi", "ok")
    rollout.write(root)
    service = Service.from_environment(workspace=str(tmp_path))
    ref = SessionRef(workspace_key(tmp_path), rollout.session_id, "codex")
    plan = service.resume_plan(ref, for_exec=False)
    assert plan.writer is not None and any("Codex may be writing" in note for note in plan.notes)
    assert service.sources["codex"].running(ref, now=time.time()) is not None


def test_doctor_says_codex_keeps_rollouts_until_the_user_removes_them(tmp_path):
    CodexRollout(cwd=str(tmp_path)).write(tmp_path / "codex")
    report = Service.from_environment(workspace=str(tmp_path)).doctor()
    assert any("Codex does not delete rollouts by age" in note for note in report.notes)


def test_the_defaults_follow_codex_home_and_the_real_clients_argv(tmp_path):
    (tmp_path / "home" / ".codex" / "sessions").mkdir(parents=True)
    env = {"HOME": str(tmp_path / "home"), "REPRISE_CONFIG": str(tmp_path / "none.toml")}
    loaded = config.load(env=env)
    choice = loaded.choices["codex"]
    assert choice.enabled and choice.roots == (tmp_path / "home" / ".codex",) and "~/.codex" in choice.why
    codex = loaded.settings.sources.codex
    assert codex.resume == ["codex", "resume", "{session_id}"]
    assert codex.new == ["codex", "resume", "{session_id}"]   # on the rollout Reprise starts (codex/new.py)
    assert codex.send == ["codex", "exec", "--json", "--skip-git-repo-check", "resume", "{session_id}", "-"]
    elsewhere = config.load(env={**env, "CODEX_HOME": str(tmp_path / "other")})
    assert not elsewhere.choices["codex"].enabled and "CODEX_HOME" in elsewhere.choices["codex"].why
    keys = {key for key, _, _ in config.effective(loaded)}
    assert {"sources.codex.resume", "sources.codex.send", "sources.codex.new", "sources.codex.roots"} <= keys


def test_the_config_file_sets_roots_and_can_turn_codex_off(tmp_path):
    (tmp_path / "store" / "sessions").mkdir(parents=True)
    path = tmp_path / "config.toml"
    path.write_text(f'[sources.codex]\nroots = ["{tmp_path / "store"}"]\nresume = ["codex", "resume", "--last"]\n')
    loaded = config.load(env={"REPRISE_CONFIG": str(path), "HOME": str(tmp_path)})
    assert loaded.choices["codex"].roots == (tmp_path / "store",) and loaded.choices["codex"].enabled
    assert loaded.settings.sources.codex.resume == ["codex", "resume", "--last"]
    path.write_text("[sources.codex]\nenabled = false\n")
    off = config.load(env={"REPRISE_CONFIG": str(path), "HOME": str(tmp_path)})
    assert not off.choices["codex"].enabled and "enabled = false" in off.choices["codex"].why
