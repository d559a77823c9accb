"""Another agent's session written as a new Gemini CLI session file (issue 30, `from_transcript.py`):
read back by Reprise's own Gemini reader, the real Claude Code fixture sessions and a real Codex
rollout give the same prompts, replies, shell commands with their outputs, marked tool-call texts and
times; the file is in the client's byte form; endings, briefs, thinking and hostile text are carried
or said; the project folder is named and claimed as the client does; and through the service a
continuation is written, linked both ways and undone into the trash."""

from __future__ import annotations

import json
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reprise.core.paths import SessionRef, workspace_key
from reprise.core.service import Service
from reprise.core.session_links import described
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript as read_claude
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript as read_codex
from reprise.core.sources.gemini.from_transcript import mark_project, project_of, session_file_of, slugify
from reprise.core.sources.gemini.layout import GeminiRoot, project_hash
from reprise.core.sources.gemini.lines import chat_of_bytes
from reprise.core.sources.gemini.transcript import read_transcript as read_gemini
from reprise.core.sources.gemini.writer import line
from reprise.core.sources.session_writing import MARK, ending_text, tool_call_text
from reprise.core.transcript import ToolCall, Transcript, Turn

FIXTURES = Path(__file__).parents[2] / "fixtures"
CLAUDE = FIXTURES / "claude-store" / "projects"
CODEX = FIXTURES / "codex-store" / "sessions"
CODEX_ALPHA = "/tmp/reprise-codex-fixture/work/alpha"
CODEX_BASH = "01a2331b-cc0a-74b3-8c63-8c4e7c73f7a6"
FOLDER = "/tmp/reprise-gemini-target/work/alpha"
NEW_ID = "0b6c5b6e-2f2a-4a47-9d55-3f3f0d9c0001"
NOW = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)
AGENT = "Claude Code"


def claude_transcript(prefix: str) -> Transcript:
    [path] = CLAUDE.glob(f"*/{prefix}*.jsonl")
    transcript, _ = read_claude(parse_lines(path.read_bytes(), 0, skim=False).records)
    return transcript


def codex_transcript(session_id: str) -> Transcript:
    [path] = CODEX.glob(f"*/*/*/rollout-*-{session_id}.jsonl")
    transcript, _ = read_codex(parse_rollout(path.read_bytes()).records, session_id)
    return transcript


def written(transcript: Transcript, agent: str = AGENT) -> tuple[bytes, list[str]]:
    return session_file_of(transcript, session_id=NEW_ID, folder=FOLDER, agent=agent, now=NOW)


def read_back(data: bytes) -> Transcript:
    chat = chat_of_bytes(data)
    assert chat.warnings == [] and chat.session_id == NEW_ID and chat.end == len(data)
    back, notes = read_gemini(chat)
    assert notes == []
    return back


def expected_reply(turn: Turn, agent: str = AGENT) -> str:
    """What the reader joins of a written turn's model messages: the marked texts of the calls that are
    not shell commands, the reply, how the turn ended."""
    parts = [tool_call_text(call, agent) for call in turn.tool_calls if call.shell is None]
    return "\n\n".join(part for part in [*parts, turn.reply, ending_text(turn, agent)] if part) \
        or f"{MARK} no reply was recorded."


@pytest.mark.parametrize("prefix", ["55555555", "22222222", "33333333"])
def test_a_claude_code_session_read_back_from_its_gemini_file_has_the_same_turns(prefix):
    source = claude_transcript(prefix)
    back = read_back(written(source)[0])
    assert [t.user_message for t in back.turns] == [t.user_message for t in source.turns]
    assert [t.reply for t in back.turns] == [expected_reply(t) for t in source.turns]
    assert [(t.started_at, t.ended_at) for t in back.turns] == [(t.started_at, t.ended_at) for t in source.turns]
    assert [t.status for t in back.turns] == [t.status for t in source.turns] == ["succeeded"] * len(source.turns)
    for was, now in zip(source.turns, back.turns, strict=True):
        shells = [call for call in was.tool_calls if call.shell is not None]
        assert [(c.name, c.shell, c.result, c.is_error) for c in now.tool_calls] == \
            [("run_shell_command", c.shell, c.result, c.is_error) for c in shells]
        assert [c.command for c in now.commands] == [c.shell for c in shells]
        assert now.thinking == ""


def test_the_shell_command_of_the_bash_session_is_the_clients_own_tool_call_with_its_output():
    data, notes = written(claude_transcript("55555555"))
    assert notes == []
    records = [json.loads(raw) for raw in data.splitlines()]
    assert [r.get("type") for r in records] == [None, "user", "gemini", "gemini"]
    [call] = records[2]["toolCalls"]
    command = "echo OUTWORD$((6*7)) && echo second line"
    assert (call["name"], call["args"]) == ("run_shell_command", {"command": command})
    answer = {"id": call["id"], "name": "run_shell_command", "response": {"output": call["resultDisplay"]}}
    assert call["status"] == "success" and call["result"] == [{"functionResponse": answer}]
    assert "OUTWORD42\nsecond line" in call["resultDisplay"]
    assert records[2]["content"] == "" and records[3]["content"].endswith("REPLYtoolresult.")


def test_read_and_write_calls_are_marked_text_and_said():
    source = claude_transcript("22222222")
    data, notes = written(source)
    assert notes == [f"2 tool calls of {AGENT} that Gemini CLI has no tool for are carried as text marked {MARK}"]
    back = read_back(data)
    assert back.turns[0].reply.startswith(f"{MARK} {AGENT} tool call `Read`:") and back.turns[0].tool_calls == []
    assert back.turns[1].reply.startswith(f"{MARK} {AGENT} tool call `Write`:")


def test_a_codex_rollout_read_back_from_its_gemini_file_has_the_same_turns():
    source = codex_transcript(CODEX_BASH)
    back = read_back(written(source, "Codex")[0])
    assert [t.user_message for t in back.turns] == [t.user_message for t in source.turns]
    assert [t.reply for t in back.turns] == [expected_reply(t, "Codex") for t in source.turns]
    assert [t.started_at for t in back.turns] == [t.started_at for t in source.turns]
    [call] = back.turns[0].tool_calls
    [shell] = [c for c in source.turns[0].tool_calls if c.shell is not None]
    assert (call.shell, call.result) == (shell.shell, shell.result) and "OUTWORD42" in (call.result or "")


def test_the_file_is_flat_in_the_clients_byte_form_with_a_header_dated_now():
    data, _ = written(claude_transcript("33333333"))
    records = [json.loads(raw) for raw in data.splitlines()]
    assert [line(record) for record in records] == [raw + b"\n" for raw in data.splitlines()]   # JSON.stringify's
    assert records[0] == {"sessionId": NEW_ID, "projectHash": project_hash(FOLDER),
                          "startTime": "2026-12-07T09:00:00.000Z", "lastUpdated": "2026-12-07T09:00:00.000Z",
                          "kind": "main"}
    messages = records[1:]
    assert [m["type"] for m in messages] == ["user", "gemini"] * 3
    assert len({m["id"] for m in messages}) == 6 and all("tokens" not in m and "model" not in m for m in messages)
    assert written(claude_transcript("33333333"))[0] == data   # deterministic: ids derived from the session's


def test_endings_briefs_and_thinking_are_carried_as_marked_text_or_said():
    turns = [Turn("t1", "look around", "failed", error="rate limited", thinking="hmm",
                  tool_calls=[ToolCall("Grep", '{"pattern": "x"}', None),
                              ToolCall("Bash", "{}", "boom", is_error=True, shell="false")]),
             Turn("t2", "and then", "interrupted", reply="partly"),
             Turn("t3", "waiting", "pending", reply="so far"),
             Turn("brief", "the brief", "pending")]
    data, notes = written(Transcript("claude", "s", turns=turns))
    back = read_back(data)
    assert [t.user_message for t in back.turns] == ["look around", "and then", "waiting", "the brief"]
    failed, interrupted, pending, brief = back.turns
    assert (failed.status, failed.error) == ("failed", "rate limited")
    assert failed.reply == \
        f"{tool_call_text(turns[0].tool_calls[0], AGENT)}\n\n{MARK} this turn failed in {AGENT}: rate limited"
    [call] = failed.tool_calls
    assert call.is_error and call.result == "boom" and call.shell == "false"
    assert interrupted.reply == f"partly\n\n{MARK} this turn was interrupted in {AGENT}."
    assert pending.reply == f"so far\n\n{MARK} this turn had not ended in {AGENT} when it was copied."
    assert brief.reply == "" and brief.tool_calls == [] and data.splitlines()[-1].count(b'"type":"user"') == 1
    assert "the thinking of 1 turn is left out: Gemini CLI accepts only its own model's" in notes
    assert "4 turns without a recorded time are dated now" in notes
    assert all(json.loads(raw).get("timestamp", "2026-12-07T09:00:00.000Z") == "2026-12-07T09:00:00.000Z"
               for raw in data.splitlines())


def test_a_prompt_the_client_would_pass_over_is_carried_as_marked_text():
    for prompt in ("/compact please", "? help", "   ", "<session_context>fake"):
        data, notes = written(Transcript("claude", "s", turns=[Turn("t", prompt, "succeeded", reply="ok",
                                                                    started_at="2026-12-01T10:00:00.000Z")]))
        [turn] = read_back(data).turns
        assert turn.user_message == f"{MARK} {AGENT} prompt:\n{prompt}" and turn.reply == "ok"
        assert notes == ["1 prompt that Gemini CLI would pass over (empty, or a command) is carried as text "
                         f"marked {MARK}"]


_TEXT = st.text(st.characters(codec=None, categories=None), max_size=40) | st.sampled_from(
    ["a\nb", "\u2028", "\x00", "\ud800", "x\udfffy", '"\\', "\r\n\t", "é😀"])


@settings(max_examples=150, deadline=None)
@given(prompt=_TEXT, reply=_TEXT, command=_TEXT, output=_TEXT)
def test_hostile_text_round_trips_or_is_said(prompt, reply, command, output):
    turn = Turn("t", "ask " + prompt, "succeeded", reply=reply, started_at="2026-12-01T10:00:00.000Z",
                tool_calls=[ToolCall("Bash", "{}", output, shell=command)])
    data, notes = written(Transcript("claude", "s", turns=[turn]))
    data.decode("utf-8")   # no raw surrogate
    [back] = read_back(data).turns

    def fixed(text: str) -> str:
        return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text)

    assert back.user_message == fixed(turn.user_message)
    [call] = back.tool_calls
    assert (call.shell, call.result) == (fixed(command), fixed(output))
    assert back.reply == (fixed(reply) if reply.strip() else f"{MARK} no reply was recorded.")
    held = any("\ud800" <= char <= "\udfff" for char in prompt + reply + command + output)
    assert held == any("lone surrogate" in note for note in notes)


# --- the project folder ---------------------------------------------------------------------------


def test_a_folder_the_client_never_ran_in_gets_a_new_slug_as_the_client_claims_one(tmp_path):
    root = GeminiRoot(tmp_path / ".gemini")
    assert slugify("My Project_2") == "my-project-2" and slugify("...") == "project"
    assert project_of(root, "/w/My Project") == ("my-project", True)
    mark_project(root, "my-project", "/w/My Project")
    assert (root.tmp / "my-project" / ".project_root").read_text() == "/w/My Project"
    assert project_of(root, "/w/My Project") == ("my-project", False)   # its marker is found again
    assert project_of(root, "/elsewhere/my-project") == ("my-project-1", True)   # the slug is another folder's
    (root.path / "history" / "my-project-1").mkdir(parents=True)
    (root.path / "history" / "my-project-1" / ".project_root").write_text("/third/my-project")
    assert project_of(root, "/elsewhere/my-project") == ("my-project-2", True)   # both marker folders count


def test_the_registrys_slug_is_used_and_a_slug_it_gives_another_folder_is_skipped(tmp_path):
    root = GeminiRoot(tmp_path / ".gemini")
    root.path.mkdir()
    root.projects.write_text(json.dumps({"projects": {"/w/alpha": "alpha-7", "/x/alpha": "alpha"}}))
    assert project_of(root, "/w/alpha") == ("alpha-7", True)
    assert project_of(root, "/y/alpha") == ("alpha-1", True)
    with pytest.raises(Exception, match="not a folder Gemini CLI records"):
        project_of(root, "relative/alpha")


# --- through the service ----------------------------------------------------------------------------


@pytest.fixture
def codex_store() -> Path:
    shutil.copytree(CODEX, Path(os.environ["CODEX_HOME"]) / "sessions")
    gemini = Path(os.environ["GEMINI_CLI_HOME"]) / ".gemini"
    (gemini / "tmp").mkdir(parents=True)   # a Gemini CLI store Reprise enables
    os.makedirs(CODEX_ALPHA, exist_ok=True)
    return gemini


def test_continue_in_gemini_writes_links_and_undoes_without_touching_the_source(codex_store):
    svc = Service.from_environment(workspace=CODEX_ALPHA)
    ref = SessionRef(workspace_key(CODEX_ALPHA), CODEX_BASH, "codex")
    [rollout] = Path(os.environ["CODEX_HOME"]).glob(f"sessions/*/*/*/*{CODEX_BASH}.jsonl")
    before = rollout.read_bytes()
    dry = svc.continue_in(ref, "gemini", dry_run=True)
    assert not dry.written.written and not dry.written.path.exists() and not (codex_store / "tmp" / "alpha").exists()
    result = svc.continue_in(ref, "gemini")
    new = result.written.ref
    path = result.written.path
    assert result.written.written and path.read_bytes() == result.written.data
    assert path.parent == codex_store / "tmp" / "alpha" / "chats" and path.name.endswith(f"-{new.session_id[:8]}.jsonl")
    assert (codex_store / "tmp" / "alpha" / ".project_root").read_text() == CODEX_ALPHA
    assert not (codex_store / "projects.json").exists()   # the client's own file
    assert result.resume_argv[-1] == new.session_id or new.session_id in result.resume_argv
    meta = svc.sources["gemini"].read_meta(new)
    assert meta.title == "Please RUN: echo OUTWORD$((6*7)) && echo second line (from Codex)"
    origin = (meta.model_extra or {})["continued_from"]
    assert (origin["source"], origin["session_id"], origin["through_turn"]) == ("codex", CODEX_BASH, 1)
    links = (svc.sources["codex"].read_meta(ref).model_extra or {})["continued_in"]
    assert links == [{"source": "gemini", "session_id": new.session_id, "through_turn": 1, "at": meta.created_at}]
    assert [described(link) for link in svc.show(new).links] == \
        [f"Continued from Codex ← {CODEX_BASH} (through turn 1)"]
    assert [described(link) for link in svc.show(ref).links] == \
        [f"Continued in Gemini CLI → {new.session_id} (through turn 1)"]
    shown = svc.show(new).transcript
    assert [t.user_message for t in shown.turns] == [t.user_message for t in codex_transcript(CODEX_BASH).turns]
    again = svc.continue_in(ref, "gemini", fresh=True)   # the whole history again: a new session, same project
    assert again.written.ref != new and again.written.path.parent == path.parent and path.exists()
    assert [r.op for r in svc.audit_records() if r.op == "continue"] == ["continue", "continue"]
    undone = svc.restore(new)
    assert undone.applied and not path.exists() and again.written.path.exists()
    assert new in [entry.ref for entry in svc.trash_entries(all_workspaces=True)]
    assert rollout.read_bytes() == before


RESUMED = Path(__file__).parents[2] / "fixtures" / "gemini" / "resumed-tool-0.61.0"


def test_a_resumed_session_keeps_its_tool_calls_from_the_snapshots_function_calls():
    """After a resume the client rewrites the reply that ran a command as API parts (a `functionCall`,
    its result in the next user messages): the reader still gives the call, its command and output."""
    from reprise.core.sources.gemini.lines import chat_of_bytes
    from reprise.core.sources.gemini.transcript import read_transcript

    [path] = RESUMED.glob("session-*.jsonl")
    transcript, _ = read_transcript(chat_of_bytes(path.read_bytes()))
    first, second = transcript.turns
    [call] = first.tool_calls
    assert call.name == "run_shell_command" and call.shell == "printf 'OUTWORD%s\\n' 42 && echo second line"
    assert call.result is not None and "OUTWORD42\nsecond line" in call.result
    assert first.reply == "I will run it.\n\nThe command printed 5 lines; REPLYtoolresult."
    assert first.status == "succeeded" and [c.command for c in first.commands] == [call.shell]
    assert second.user_message == "Continue the plan MARKsecond" and not second.tool_calls
