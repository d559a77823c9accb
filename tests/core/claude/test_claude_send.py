"""New and send for Claude Code sessions, with a fake `claude` on PATH (fake_claude.py) that records
its argv and stdin and appends a turn the way the real client does: the message goes on stdin only,
the turn runs in the session's folder, the JSON result becomes the reply (denials shown, errors as
failures), the measured context after it is read from the file, and `new` names an id Reprise chose."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from reprise.core.errors import PendingTurnError, UsageError
from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.sources.claude.turns import denial_line, parse_result
from reprise.tui import cli
from reprise.tui.cli import agent_handoff

from .test_claude_source import THREE_TURNS, copy_store

FAKE = Path(__file__).with_name("fake_claude.py")
SEND_ARGV = ["claude", "--resume", THREE_TURNS, "-p", "--output-format", "json"]


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake `claude` first on PATH; returns the log of its runs."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "claude"
    program.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    program.chmod(0o755)
    log = tmp_path / "fake-claude.log"
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_CLAUDE_LOG", str(log))
    monkeypatch.setenv("FAKE_CLAUDE_STARTED", str(tmp_path / "fake-started"))

    def runs() -> list[dict]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return runs


@pytest.fixture
def store(tmp_path, monkeypatch):
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    folders = copy_store(claude_root, tmp_path / "work")
    monkeypatch.chdir(folders["alpha"])
    return claude_root, folders


def session_file(claude_root: Path, session_id: str) -> Path:
    return next(claude_root.glob(f"projects/*/{session_id}.jsonl"))


def run(capsys, *argv: str) -> tuple[int, str, str]:
    status = cli.main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("message", ["-p --dangerously-skip-permissions", "/compact now", "x" * 300_000],
                         ids=["option", "slash", "long"])
def test_send_puts_the_message_on_stdin_only_and_adds_the_turn_claude_wrote(store, fake, capsys, monkeypatch,
                                                                           message):
    claude_root, folders = store
    path = session_file(claude_root, THREE_TURNS)
    before = path.read_bytes()
    monkeypatch.setattr(sys, "stdin", __import__("io").StringIO(message))
    status, out, err = run(capsys, "send", THREE_TURNS[:8], "--message-file", "-", "--json")
    assert status == 0, err
    [call] = fake()
    assert call["argv"] == SEND_ARGV[1:]
    assert call["stdin"] == message
    assert call["cwd"] == str(folders["alpha"])
    assert call["config_dir"] == str(claude_root)   # the client's own default root: left as it is
    assert path.read_bytes().startswith(before)   # Claude Code appended; Reprise wrote nothing there
    added = [json.loads(line) for line in path.read_bytes()[len(before):].splitlines()]
    sent = json.loads(out)
    assert sent["backend"] == "claude" and sent["status"] == "succeeded"
    assert sent["turn_id"] == added[0]["uuid"]
    assert sent["response"] == "Fake reply to: " + message.strip()
    assert sent["usage"]["input_tokens"] == 11 and sent["usage"]["cache_read_tokens"] == 3300
    assert sent["usage"]["context_tokens"] == 11 + 220 + 3300   # measured in the file after the turn
    assert sent["estimate_before_turn"] > 0
    assert any("3,531 tokens (measured" in note for note in sent["notes"])
    detail = Service.from_environment().show(SessionRef(workspace_key(folders["alpha"]), THREE_TURNS, "claude"))
    assert len(detail.transcript.turns) == 4
    assert detail.transcript.turns[-1].user_message == message


def test_a_claude_row_runs_its_own_send_command_whatever_agent_is_asked(store, fake, capsys):
    status, out, err = run(capsys, "send", THREE_TURNS, "--message", "hello there", "--agent", "echo")
    assert status == 0, err
    assert out.startswith("[succeeded] turn ") and "via claude" in out
    assert "Fake reply to: hello there" in out
    assert [call["argv"] for call in fake()] == [SEND_ARGV[1:]]


def test_tool_calls_claude_code_denied_are_shown_in_the_reply(store, fake, capsys, monkeypatch):
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "deny")
    status, out, _ = run(capsys, "send", THREE_TURNS, "--message", "clean up", "--json")
    assert status == 0
    response = json.loads(out)["response"]
    assert response.startswith("Fake reply to: clean up")
    assert "1 tool call(s) denied" in response
    assert 'Claude Code denied Bash: {"command":"rm -rf build"}' in response


def test_an_error_result_is_a_failed_turn_with_claude_codes_message(store, fake, capsys, monkeypatch):
    claude_root, _ = store
    before = session_file(claude_root, THREE_TURNS).read_bytes()
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "error")
    status, out, _ = run(capsys, "send", THREE_TURNS, "--message", "fail please", "--json")
    assert status == 1
    sent = json.loads(out)
    assert sent["status"] == "failed" and sent["turn_id"] is None
    assert "API Error: 500 the fake server failed" in sent["error"]
    assert session_file(claude_root, THREE_TURNS).read_bytes() == before


def test_a_session_whose_folder_is_gone_is_sent_from_here(store, fake, tmp_path, monkeypatch, capsys):
    claude_root, folders = store
    path = session_file(claude_root, THREE_TURNS)
    path.write_bytes(path.read_bytes().replace(str(folders["alpha"]).encode(), str(tmp_path / "gone").encode()))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    status, _, err = run(capsys, "send", THREE_TURNS, "--message", "from elsewhere")
    assert status == 0, err
    assert fake()[0]["cwd"] == str(here)


def test_a_session_in_another_root_is_sent_with_that_root(tmp_path, fake, monkeypatch, capsys):
    other = tmp_path / "other-claude"
    folders = copy_store(other, tmp_path / "work")
    (tmp_path / "config.toml").write_text(f'[sources.claude]\nroots = ["{other}"]\n')
    monkeypatch.chdir(folders["alpha"])
    status, _, err = run(capsys, "send", THREE_TURNS, "--message", "hi")
    assert status == 0, err
    assert fake()[0]["config_dir"] == str(other)


def test_a_session_a_claude_process_is_running_is_refused(store, fake):
    _, folders = store
    script = folders["alpha"].parent / "claude"   # a program named claude, running this session
    script.write_text("import time\ntime.sleep(60)\n")
    holder = subprocess.Popen([sys.executable, str(script), "--resume", THREE_TURNS])
    try:
        service = Service.from_environment()
        ref = service.resolve(THREE_TURNS)
        with pytest.raises(PendingTurnError, match="may be running"):
            service.send_turn(ref, "not now")
    finally:
        holder.kill()
        holder.wait()
    assert fake() == []


def test_an_interrupted_turn_ends_the_claude_process(store, fake, tmp_path, monkeypatch):
    monkeypatch.setenv("FAKE_CLAUDE_MODE", "sleep")
    started = tmp_path / "fake-started"
    service = Service.from_environment()
    ref = service.resolve(THREE_TURNS)
    cancel = threading.Event()

    def interrupt() -> None:
        while not started.exists():
            threading.Event().wait(0.05)
        cancel.set()
    threading.Thread(target=interrupt, daemon=True).start()
    result = service.send_turn(ref, "a long job", cancel=cancel)
    assert result.outcome.status == "interrupted"
    assert result.turn_id is None


def test_new_names_a_session_claude_then_writes_with_reprises_title(store, fake, capsys, monkeypatch):
    _, folders = store
    status, out, err = run(capsys, "new", "--agent", "claude", "--title", "My chosen title", "--json")
    assert status == 0, err
    place = json.loads(out)
    session_id = place["session_id"]
    assert place["command"] == ["claude", "--session-id", session_id]
    assert place["workspace_path"] == str(folders["alpha"])
    status, out, _ = run(capsys, "new", "--agent", "claude", "--print")
    assert status == 0 and out.startswith("claude --session-id ")
    started = subprocess.run(place["command"], cwd=place["workspace_path"], input="first words", text=True,
                             check=True)
    assert started.returncode == 0
    listing = Service.from_environment().list_sessions()
    row = next(row for row in listing.rows if row.file_id == session_id)
    assert row.source == "claude" and row.title == "My chosen title"


def test_new_hands_the_terminal_to_claude_in_this_folder(store, fake, capsys, monkeypatch):
    _, folders = store
    handed = []
    monkeypatch.setattr(agent_handoff, "exec_handoff", lambda argv, cwd: handed.append((argv, cwd)))
    status, _, err = run(capsys, "new", "--agent", "claude")
    assert status == 0
    [(argv, cwd)] = handed
    assert argv[:2] == ["claude", "--session-id"] and argv[2] in err
    assert cwd == str(folders["alpha"])


def test_new_asks_which_agent_when_two_are_enabled_and_none_is_configured(store, tmp_path, capsys):
    service = Service.from_environment()
    with pytest.raises(UsageError, match="Which agent"):
        service.new_agent()
    assert service.new_agent("fractal") == "fractal"
    (tmp_path / "config.toml").write_text('[sources]\nnew_agent = "claude"\n')
    assert Service.from_environment().new_agent() == "claude"


def test_new_defaults_to_the_only_enabled_agent(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    service = Service.from_environment()
    assert service.new_agent() == "fractal"
    with pytest.raises(UsageError, match="not enabled"):
        service.new_agent("claude")


def test_the_result_parser_reads_the_real_clients_output():
    steps = json.loads((Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "steps.json").read_text())
    output = steps[0]["output"]
    result = parse_result("some banner\n" + json.dumps(output) + "\n")
    assert result is not None
    assert result.text == output["result"] and result.session_id == output["session_id"]
    assert result.usage is not None and result.usage["input_tokens"] == output["usage"]["input_tokens"]
    assert result.usage["cost"] == output["total_cost_usd"] and not result.is_error
    assert parse_result("not json") is None
    assert denial_line({"tool_name": "Write", "tool_input": {"content": "y" * 1000}}).endswith("…")


def test_a_turn_over_the_window_is_refused_before_claude_runs_unless_confirmed(store, fake, tmp_path, capsys):
    (tmp_path / "config.toml").write_text('[[meter.models]]\npattern = "*"\nwindow = 1000\n')
    status, _, err = run(capsys, "send", THREE_TURNS, "--message", "too much")
    assert status != 0 and "over the 1,000-token window" in err
    assert fake() == []
    status, _, err = run(capsys, "send", THREE_TURNS, "--message", "too much", "--yes")
    assert status == 0, err
    assert len(fake()) == 1


def test_a_result_over_the_reply_cap_is_read_from_the_turn_claude_saved(store, fake, tmp_path, capsys):
    (tmp_path / "config.toml").write_text("[agent]\nmax_reply_bytes = 1024\n")
    message = "long " * 400
    status, out, err = run(capsys, "send", THREE_TURNS, "--message", message, "--json")
    assert status == 0, err
    sent = json.loads(out)
    assert sent["status"] == "succeeded"
    assert sent["response"] == "Fake reply to: " + message.strip()
    assert any("over [agent] max_reply_bytes" in note for note in sent["notes"])


def test_a_session_only_reprise_kept_cannot_be_sent_to(store, fake, capsys):
    claude_root, _ = store
    service = Service.from_environment()
    ref = service.resolve(THREE_TURNS)
    service.keep(ref)
    session_file(claude_root, THREE_TURNS).unlink()
    status, _, err = run(capsys, "send", THREE_TURNS, "--message", "hello")
    assert status != 0 and "deleted" in err
    assert fake() == []


def test_the_default_commands_bypass_no_permission_and_a_configured_one_is_used(store, fake, tmp_path, capsys):
    status, out, _ = run(capsys, "config", "--json")
    values = json.loads(out)["values"]
    assert values["sources.claude.send"]["value"] == [
        "claude", "--resume", "{session_id}", "-p", "--output-format", "json"]
    assert values["sources.claude.new"]["value"] == ["claude", "--session-id", "{session_id}"]
    assert not any("permission" in item or "dangerous" in item for item in SEND_ARGV)
    (tmp_path / "config.toml").write_text(
        '[sources.claude]\nsend = ["claude", "--resume", "{session_id}", "-p", "--output-format", "json", '
        '"--allowedTools", "Bash"]\n')
    status, _, err = run(capsys, "send", THREE_TURNS, "--message", "with a tool allowed")
    assert status == 0, err
    assert fake()[0]["argv"] == [*SEND_ARGV[1:], "--allowedTools", "Bash"]


def test_send_with_workspace_naming_a_gone_folder_runs_from_the_current_folder(store, fake, capsys, monkeypatch):
    _, folders = store
    gone = folders["alpha"]
    monkeypatch.chdir(folders["beta"])
    shutil.rmtree(gone)
    status, _, err = run(capsys, "--workspace", str(gone), "send", THREE_TURNS[:8], "--message", "hello")
    assert status == 0, err
    [call] = fake()
    assert call["cwd"] == str(folders["beta"])
