"""`reprise send` and `reprise new` against the real Claude Code (issue 14, "Checked against the real
client"). `reprise` itself runs inside the launcher's namespace (it starts the real client there),
with `[sources.claude] send` and `new` pointing at $REPRISE_CLAUDE_BIN, on a copy of the scenario's
store: a turn sent through Reprise (the message on stdin) is in the request the client sends and in
its file, and the next `claude --resume` continues after it; `reprise new` hands the terminal to
the client on an id Reprise chose, and the session it writes carries Reprise's title."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from reprise.tui import cli

from .sessions import JSON_OUT, SESSION_IDS, LiveClaude, Step, StepResult
from .test_claude_compat import records, reply_to, scenario_prompts

pytestmark = pytest.mark.compat

# `reprise` as the namespace runs it.
REPRISE = """
import sys
from reprise.tui.cli import main
sys.exit(main(sys.argv[1:]))
"""


class WithReprise(LiveClaude):
    """Runs steps whose args start with "reprise" as the `reprise` command, beside the real client."""

    def argv(self, step: Step, record: Path) -> list[str]:
        argv = super().argv(step, record)
        if step.args[:1] == ["reprise"]:
            at = argv.index(str(self.binary))
            argv[at:at + 2] = [sys.executable, "-c", REPRISE]
        return argv


@pytest.fixture
def live(claude_store, tmp_path, monkeypatch) -> WithReprise:
    """A copy of the scenario's store, and Reprise's config naming the real client for new and send."""
    live = WithReprise(claude_store.live.binary, tmp_path / "copy")
    shutil.rmtree(live.config_dir)
    shutil.copytree(claude_store.config_dir, live.config_dir, symlinks=True)
    binary = json.dumps(str(live.binary))
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.claude]\nsend = [{binary}, "--resume", "{{session_id}}", "-p", '
                      f'"--output-format", "json"]\nnew = [{binary}, "--session-id", "{{session_id}}"]\n')
    monkeypatch.setenv("REPRISE_CONFIG", str(config))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(live.config_dir))
    monkeypatch.chdir(tmp_path)
    return live


def turn_records(path: Path, prompt: str) -> list[dict]:
    """The main-chain records of the turn `prompt` started, up to the next prompt."""
    found: list[dict] = []
    for record in records(path):
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain"):
            continue
        content = record["message"]["content"]
        if record["type"] == "user" and isinstance(content, str) and not record.get("isMeta"):
            if found:
                break
            if content != prompt:
                continue
        if found or (record["type"] == "user" and record["message"]["content"] == prompt):
            found.append(record)
    return found


def user_prompts(result: StepResult) -> list[str]:
    from . import fake_anthropic

    messages = result.requests[-1]["messages"]
    return [fake_anthropic.prompt_text(m) for m in messages
            if m["role"] == "user" and fake_anthropic.prompt_text(m)]


def test_reprise_send_adds_a_turn_that_the_next_claude_resume_continues(live, claude_store, tmp_path, capsys):
    session_id = SESSION_IDS["three"]
    path = next(live.config_dir.glob(f"projects/*/{session_id}.jsonl"))
    before = path.read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # starts like an option: on stdin it is only the message
    message = "--not-an-option: sent through Reprise on stdin MARKviasend"
    after = "And after Reprise's turn MARKafterreprise"
    sent, resumed = live.run([
        Step(["reprise", "send", session_id[:8], "--message-file", "-", "--json"], elsewhere, stdin=message,
             label="reprise send"),
        Step(["--resume", session_id, "-p", after, *JSON_OUT], claude_store.folders["alpha"], label="resume")])
    assert sent.returncode == 0, sent.describe()
    document = json.loads(sent.stdout)
    assert document["backend"] == "claude" and document["status"] == "succeeded", sent.describe()
    assert document["response"] == reply_to(message)
    turn = turn_records(path, message)
    assert {r["cwd"] for r in turn} == {str(claude_store.folders["alpha"])}   # run in the session's folder
    usage = [r for r in turn if r["type"] == "assistant"][-1]["message"]["usage"]
    assert document["usage"]["context_tokens"] == (usage["input_tokens"] + usage["cache_creation_input_tokens"]
                                                   + usage["cache_read_input_tokens"])   # measured after it
    three = scenario_prompts(claude_store.folders)["three"]
    assert user_prompts(sent) == [*three, message]   # `-p` read the message from stdin, after the history
    assert resumed.returncode == 0 and resumed.output.get("is_error") is False, resumed.describe()
    assert user_prompts(resumed) == [*three, message, after]
    assert resumed.output["result"] == reply_to(after)
    data = path.read_bytes()
    assert data.startswith(before)   # Claude Code appended both turns; Reprise wrote nothing into its file
    prompts_in_file = [r["message"]["content"] for r in records(path) if r.get("type") == "user"
                       and isinstance(r["message"]["content"], str) and "MARK" in r["message"]["content"]]
    assert prompts_in_file[-2:] == [message, after]
    assert document["turn_id"] == turn[0]["uuid"]   # the prompt record of the turn sent
    status = cli.main(["show", session_id, "--json"])
    turns = json.loads(capsys.readouterr().out)["transcript"]["turns"]
    assert status == 0 and [t["user_message"] for t in turns] == [*three, message, after]


def test_reprise_new_gives_a_session_the_real_client_writes_under_the_chosen_id(live, tmp_path, capsys):
    folder = tmp_path / "project"
    folder.mkdir()
    live.trust(folder)
    title = "Started in Reprise"
    prompt = "The first words of a new session MARKnewsession"
    known = {p.stem for p in live.config_dir.glob("projects/*/*.jsonl")}
    [printed, started] = live.run([
        Step(["reprise", "new", "--agent", "claude", "--print", "--json"], folder, label="new --print"),
        Step(["reprise", "new", "--agent", "claude", "--title", title], folder, interactive=prompt, label="new")])
    assert printed.returncode == 0, printed.describe()
    place = json.loads(printed.stdout)
    assert place["command"] == [str(live.binary), "--session-id", place["session_id"]]
    assert place["workspace_path"] == str(folder)
    assert started.returncode == 0 and started.output.get("exit") == 0, started.describe()
    assert started.requests, started.describe()
    written = {p.stem: p for p in live.config_dir.glob("projects/*/*.jsonl") if p.stem not in known}
    [(session_id, path)] = written.items()
    assert f"new session {session_id}" in started.output["screen"]   # the id Reprise chose and announced
    assert {r.get("sessionId") for r in records(path) if "sessionId" in r} == {session_id}
    assert {r.get("cwd") for r in records(path) if "cwd" in r} == {str(folder)}
    assert session_id != place["session_id"] and place["session_id"] not in written
    assert cli.main(["list", "--all", "--json"]) == 0
    rows = {row["session_id"]: row for row in json.loads(capsys.readouterr().out)["sessions"]}
    assert rows[session_id]["title"] == title and rows[session_id]["source"] == "claude"
    assert rows[session_id]["first_message"] == prompt
