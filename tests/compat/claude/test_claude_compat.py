"""Reprise against real Claude Code sessions: the scenario's store (sessions.py), made by the
real client offline, read through the `reprise` command with `CLAUDE_CONFIG_DIR` pointing at it
(the default root of the Claude source), and a resume plan the real client then accepts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reprise.tui import cli

from . import fake_anthropic
from .sessions import (
    BASH_COMMAND,
    BASH_OUTPUT_WORD,
    INTERACTIVE,
    NAMED_TITLE,
    SCENARIO,
    SESSION_IDS,
    ClaudeStore,
    LiveClaude,
    Step,
)

pytestmark = pytest.mark.compat


def scenario_prompts(folders: dict[str, Path]) -> dict[str, list[str]]:
    """Each session's user prompts in order, as the scenario typed them (`/compact` is a command)."""
    prompts: dict[str, list[str]] = {}
    for label, session, _, args in SCENARIO:
        prompt = args[args.index("-p") + 1].format(**folders) if "-p" in args else INTERACTIVE[label]
        if session == "fork":
            prompts[session] = list(prompts["three"])
        if prompt != "/compact":
            prompts.setdefault(session, []).append(prompt)
    return prompts


TOOL_SESSIONS = {"bash": ["Bash"], "files": ["Read", "Write"], "agent": ["Agent"]}


def reply_to(prompt: str) -> str:
    words = fake_anthropic.marks(prompt)
    return " ".join(f"Noted MARK{w}; my answer word is REPLY{w}." for w in words)


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def measured_in_file(path: Path) -> int | None:
    """input + cache creation + cache read of the newest main-chain assistant record from the model
    (not the client's `<synthetic>` stand-in for an API error); None when there is none."""
    replies = [r for r in records(path) if r.get("type") == "assistant" and not r.get("isSidechain")
               and r["message"]["model"] != "<synthetic>"]
    if not replies:
        return None
    usage = replies[-1]["message"]["usage"]
    return usage["input_tokens"] + usage["cache_creation_input_tokens"] + usage["cache_read_input_tokens"]


def reprise(capsys, *argv: str) -> dict:
    status = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise {' '.join(argv)} exited {status}: {out}{err}"
    return json.loads(out)


@pytest.fixture
def store(claude_store, monkeypatch, tmp_path) -> ClaudeStore:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude_store.config_dir))
    monkeypatch.chdir(tmp_path)
    return claude_store


def test_list_all_lists_every_session_with_its_title_folder_turns_and_source(store, capsys):
    prompts = scenario_prompts(store.folders)
    listing = reprise(capsys, "list", "--all")
    rows = {row["session_id"]: row for row in listing["sessions"] if row["source"] == "claude"}
    assert sorted(rows) == sorted(SESSION_IDS.values())
    for session, session_id in SESSION_IDS.items():
        row = rows[session_id]
        expected_title = NAMED_TITLE if session == "named" else prompts[session][0]
        # the title shown: a row's `title` may be null when nothing named the session (then the
        # first message is shown, as for Fractal's rows)
        assert (row["title"] or row["first_message"], row["workspace_path"], row["turns"]) == (
            expected_title, str(store.folders[store.folder_of[session]]), len(prompts[session])), session
        assert row["problem"] is None and row["path"] == str(store.session_file(session))
        assert row["hidden_by_agent"] is (session != "typed"), session  # -p sessions are sdk-cli
        assert row["first_message"] == prompts[session][0] and row["last_message"] == prompts[session][-1]
        assert (row["last_status"] == "failed") is (session == "failed"), session
    only = reprise(capsys, "list", "--all", "--source", "claude")
    assert sorted(row["session_id"] for row in only["sessions"]) == sorted(SESSION_IDS.values())
    assert {row["source"] for row in only["sessions"]} == {"claude"}


def test_show_has_every_prompt_and_reply_in_order(store, capsys):
    prompts = scenario_prompts(store.folders)
    for session, session_id in SESSION_IDS.items():
        detail = reprise(capsys, "show", session_id)
        transcript = detail["transcript"]
        assert transcript["source"] == "claude" and transcript["session_id"] == session_id
        turns = transcript["turns"]
        assert [t["user_message"] for t in turns] == prompts[session], session
        if session in TOOL_SESSIONS:
            assert [c["name"] for t in turns for c in t["tool_calls"]] == TOOL_SESSIONS[session], session
            assert all(t["reply"].endswith("; REPLYtoolresult.") for t in turns), session
            assert {t["status"] for t in turns} == {"succeeded"}, session
        elif session == "failed":
            [turn] = turns
            assert turn["status"] == "failed" and "API Error: 400" in (turn["error"] or turn["reply"])
        else:
            assert [t["reply"] for t in turns] == [reply_to(p) for p in prompts[session]], session
            assert {t["status"] for t in turns} == {"succeeded"}, session


def test_show_has_the_tool_calls_files_and_commands_of_a_turn(store, capsys):
    [bash] = reprise(capsys, "show", SESSION_IDS["bash"])["transcript"]["turns"]
    [call] = bash["tool_calls"]
    assert BASH_COMMAND in call["input"] and BASH_OUTPUT_WORD in call["result"] and not call["is_error"]
    assert bash["commands"] == [{"command": BASH_COMMAND, "provenance": "observed"}]
    read, write = reprise(capsys, "show", SESSION_IDS["files"])["transcript"]["turns"]
    alpha = store.folders["alpha"]
    assert read["files_read"] == [{"path": str(alpha / "notes.txt"), "provenance": "observed"}]
    assert write["files_modified"] == [{"path": str(alpha / "written.txt"), "provenance": "observed"}]
    assert not read["files_modified"] and not write["files_read"]


def test_show_marks_the_compaction_where_it_happened(store, capsys):
    detail = reprise(capsys, "show", SESSION_IDS["compact"])
    [boundary] = [r for r in records(store.session_file("compact")) if r.get("subtype") == "compact_boundary"]
    [compaction] = detail["transcript"]["compactions"]
    assert compaction["before_turn"] == 2  # after "MARKteal" and "MARKhexagon", before "MARKaftercompact"
    assert compaction["tokens_after"] == boundary["compactMetadata"]["postTokens"]


def test_search_finds_a_word_of_a_reply_and_a_word_of_a_bash_output(store, capsys):
    replies = reprise(capsys, "search", "REPLYsecond", "--all")["hits"]
    # the fork copied the three-turn chain, so its second turn holds the same reply
    assert {(h["session_id"], h["turn"], h["field"]) for h in replies} == {
        (SESSION_IDS["three"], 2, "response"), (SESSION_IDS["fork"], 2, "response")}
    assert all("[REPLYsecond]" in h["snippet"] for h in replies)
    output = reprise(capsys, "search", BASH_OUTPUT_WORD, "--all")["hits"]
    assert [(h["session_id"], h["turn"]) for h in output] == [(SESSION_IDS["bash"], 1)]
    assert output[0]["field"] != "user" and f"[{BASH_OUTPUT_WORD}]" in output[0]["snippet"]


def test_the_measured_context_equals_the_usage_in_the_file(store, capsys):
    rows = {row["session_id"]: row for row in reprise(capsys, "list", "--all")["sessions"]}
    for session, session_id in SESSION_IDS.items():
        expected = measured_in_file(store.session_file(session))
        assert rows[session_id]["context_tokens"] == expected, session
        if expected is None:  # the API error's session: no reply from the model, nothing measured
            continue
        meter = reprise(capsys, "meter", session_id)
        assert [p["tokens"] for p in meter["parts"] if p["name"] == "measured"] == [expected], session
        assert meter["total"] >= expected
    # (test_claude_client checks that the file's figure is the fake server's, request bytes // 4)


def test_resume_print_gives_the_argv_and_folder_of_the_session(store, capsys):
    for session, session_id in SESSION_IDS.items():
        plan = reprise(capsys, "resume", session_id, "--print")
        assert plan["argv"] == ["claude", "--resume", session_id], session
        assert plan["cwd"] == str(store.folders[store.folder_of[session]]), session


def test_the_real_client_accepts_the_resume_plan_and_sends_the_sessions_history(claude_store, capsys, monkeypatch,
                                                                               tmp_path, isolated_paths):
    live = LiveClaude(claude_store.live.binary, tmp_path / "copy")
    shutil.rmtree(live.config_dir)
    shutil.copytree(claude_store.config_dir, live.config_dir, symlinks=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(live.config_dir))
    config = tmp_path / "config.toml"
    config.write_text(f'[sources.claude]\nresume = [{json.dumps(str(live.binary))}, "--resume", "{{session_id}}"]\n')
    monkeypatch.setenv("REPRISE_CONFIG", str(config))
    monkeypatch.chdir(tmp_path)
    session_id = SESSION_IDS["three"]
    plan = reprise(capsys, "resume", session_id, "--print")
    assert plan["argv"][0] == str(live.binary) and plan["cwd"] == str(claude_store.folders["alpha"])
    prompt = "Resumed through Reprise MARKviareprise"
    [result] = live.run([Step(plan["argv"][1:], Path(plan["cwd"]), interactive=prompt)])
    assert result.returncode == 0 and result.output.get("exit") == 0, result.describe()
    assert result.requests, result.describe()
    messages = result.requests[-1]["messages"]
    sent = [fake_anthropic.prompt_text(m) for m in messages if m["role"] == "user" and fake_anthropic.prompt_text(m)]
    assert sent == [*scenario_prompts(claude_store.folders)["three"], prompt]
    assert reprise(capsys, "show", session_id)["transcript"]["turns"][-1]["user_message"] == prompt
