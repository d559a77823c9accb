"""Claude Code sessions continued in the real Gemini CLI the native way (issue 30): the session file
`reprise continue ID --to gemini` writes (`from_transcript.session_file_of`) from Reprise's transcript
of a real Claude Code session (the committed fixture store, its folder moved to this test's), in a
store where the client never ran in that folder (Reprise marks the project, the client adopts it and
records it in its projects.json), is resumed by `gemini --resume NEWID -p ...` as session NEWID,
whose request carries every prompt, every reply, each shell command as the client's own
`run_shell_command` call with its output, the other tool calls as marked text, and the new prompt
last; the client appends to the new file, and the Claude Code files are untouched. A brief is the
request's first user message; hostile text (newlines, NUL, U+2028, a lone surrogate, a prompt
starting with `/`), written into the project of a folder the client ran in first, reaches the model
as Reprise wrote it."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript
from reprise.core.sources.gemini.from_transcript import project_of, session_file_of
from reprise.core.sources.gemini.layout import GeminiRoot
from reprise.core.sources.gemini.writer import file_name
from reprise.core.sources.session_writing import MARK, tool_call_text
from reprise.core.transcript import ToolCall, Transcript, Turn
from reprise.tui import cli

from .sessions import LiveGemini, StepResult, prompt_step

pytestmark = pytest.mark.compat

CLAUDE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"
RECORDED_FOLDER = b"/tmp/reprise-claude-fixture/work/alpha"
AGENT = "Claude Code"
SOURCES = ("55555555", "22222222", "33333333")   # a Bash call; Read and Write calls; three turns
NEXT = "Go on MARKcontinued"
HOSTILE_ID = "0b6c5b6e-2f2a-4a47-9d55-3f3f0d9c00aa"


def claude_transcript(path: Path) -> Transcript:
    transcript, _ = read_transcript(parse_lines(path.read_bytes(), 0, skim=False).records)
    return transcript


def continued(capsys: pytest.CaptureFixture[str], session_id: str, *options: str) -> dict[str, Any]:
    """`reprise continue SESSION --to gemini --json`, run in this process."""
    status = cli.main(["continue", session_id, "--to", "gemini", *options, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise continue exited {status}: {out}{err}"
    return json.loads(out)


def contents(result: StepResult) -> list[dict[str, Any]]:
    """The last turn request's contents."""
    assert result.returncode == 0 and result.turns, result.describe()
    return result.turns[-1]["contents"]


def texts(items: list[dict[str, Any]], role: str) -> list[str]:
    """The text parts of the contents of `role` (the client's session context left out)."""
    return [part["text"] for item in items if item["role"] == role for part in item["parts"]
            if isinstance(part.get("text"), str) and not part["text"].startswith("<session_context>")]


def expected_replies(transcript: Transcript) -> list[str]:
    """The model's texts Reprise writes for each turn: the marked text of the calls before each shell
    command, then those after the last with the reply."""
    out = []
    for turn in transcript.turns:
        pending: list[str] = []
        for call in turn.tool_calls:
            if call.shell is None:
                pending.append(tool_call_text(call, AGENT))
            elif pending:
                out.append("\n\n".join(pending))
                pending = []
        out.append("\n\n".join([*pending, turn.reply]))
    return out


def store_of_claude(tmp_path: Path, folder: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the Claude Code fixture store with its sessions' folder replaced by `folder`."""
    claude = tmp_path / "claude"
    shutil.copytree(CLAUDE, claude / "projects")
    for path in claude.glob("projects/*/*.jsonl"):
        path.write_bytes(path.read_bytes().replace(RECORDED_FOLDER, str(folder).encode()))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    return claude


def hostile_transcript() -> Transcript:
    """A turn whose texts hold what a JSON line or the client's checks could trip on."""
    prompt = "/not a command\nline two\u2028after a line separator\x00after a NUL MARKhostile"
    call = ToolCall("Bash", '{"command": "printf x"}', "out\u2028put\x00end\nOUTWORDhostile", shell="printf 'a\nb'")
    return Transcript("claude", "h", turns=[
        Turn("t1", prompt, "succeeded", reply="lone \ud800 surrogate\nREPLYhostile", tool_calls=[call],
             started_at="2026-12-01T10:00:00.000Z", ended_at="2026-12-01T10:00:01.000Z")])


def test_claude_code_sessions_continued_by_reprise_are_resumed_by_the_real_gemini_cli(gemini_bin, tmp_path, capsys,
                                                                                     isolated_paths, monkeypatch):
    live = LiveGemini(gemini_bin, tmp_path / "live")
    folder = live.folder("alpha")
    claude = store_of_claude(tmp_path, folder, monkeypatch)
    monkeypatch.setenv("GEMINI_CLI_HOME", str(live.home))
    (live.store / "tmp").mkdir(parents=True, exist_ok=True)   # a Gemini CLI store Reprise enables
    beta = live.folder("beta")   # a folder the client ran in first: its own project takes the hostile session
    registered = live.one(prompt_step("Register the folder MARKbeta", beta))
    assert registered.returncode == 0, registered.describe()
    monkeypatch.chdir(folder)
    sources = {prefix: next(claude.glob(f"projects/*/{prefix}*.jsonl")) for prefix in SOURCES}
    digests = {prefix: hashlib.sha256(path.read_bytes()).hexdigest() for prefix, path in sources.items()}
    transcripts = {prefix: claude_transcript(path) for prefix, path in sources.items()}
    documents = {prefix: continued(capsys, prefix) for prefix in SOURCES}
    brief = continued(capsys, "22222222", "--brief", "--fresh")   # continued natively above
    ids = {prefix: document["session_id"] for prefix, document in documents.items()}
    written = {prefix: Path(document["path"]) for prefix, document in documents.items()}
    # the client never ran in this folder: Reprise marked a project for it as the client names one
    chats = live.store / "tmp" / "alpha" / "chats"
    assert (live.store / "tmp" / "alpha" / ".project_root").read_text() == str(folder)
    assert str(folder) not in json.loads((live.store / "projects.json").read_text())["projects"]
    assert all(path.parent == chats for path in [*written.values(), Path(brief["path"])])
    root = GeminiRoot(live.store)
    hostile = hostile_transcript()
    now = datetime.now(UTC)
    assert project_of(root, str(folder)) == ("alpha", False)
    assert project_of(root, str(beta)) == ("beta", False)   # the client's own, marked by it
    hostile_data, notes = session_file_of(hostile, session_id=HOSTILE_ID, folder=str(beta), agent=AGENT, now=now)
    assert any("lone surrogate" in note for note in notes) and any("pass over" in note for note in notes)
    hostile_path = live.store / "tmp" / "beta" / "chats" / file_name(HOSTILE_ID, now)
    hostile_path.write_bytes(hostile_data)
    before = {prefix: path.read_bytes() for prefix, path in written.items()}
    steps = [prompt_step(NEXT, folder, resume=session_id, label=prefix) for prefix, session_id in ids.items()]
    steps += [prompt_step(NEXT, folder, resume=brief["session_id"], label="brief"),
              prompt_step(NEXT, beta, resume=HOSTILE_ID, label="hostile")]
    *results, brief_run, hostile_run = live.run(steps)
    for result, (prefix, session_id) in zip(results, ids.items(), strict=True):
        transcript = transcripts[prefix]
        assert result.returncode == 0 and result.session_id == session_id, result.describe()
        items = contents(result)
        assert texts(items, "user") == [*(turn.user_message for turn in transcript.turns), NEXT]
        assert items[-1] == {"role": "user", "parts": [{"text": NEXT}]}
        assert texts(items, "model") == expected_replies(transcript)
        calls = [part["functionCall"] for item in items for part in item["parts"] if "functionCall" in part]
        answers = [part["functionResponse"] for item in items for part in item["parts"] if "functionResponse" in part]
        shells = [call for turn in transcript.turns for call in turn.tool_calls if call.shell is not None]
        assert [(call["name"], call["args"]) for call in calls] == \
            [("run_shell_command", {"command": call.shell}) for call in shells]
        assert [(answer["id"], answer["response"]) for answer in answers] == \
            [(call["id"], {"output": shell.result}) for call, shell in zip(calls, shells, strict=True)]
        if prefix == "55555555":
            assert "OUTWORD42" in answers[0]["response"]["output"]
        roles = [item["role"] for item in items]
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False)), roles   # the history alternates
        files = live.files_of(session_id)
        assert files, (prefix, session_id, result.describe(), {   # seen once in a whole run: say what was there
            str(path.relative_to(live.store)): path.read_bytes()[:300] for path in live.store.glob("tmp/*/chats/*")})
        assert files[0] == written[prefix] and files[0].read_bytes().startswith(before[prefix])
        assert any(NEXT.encode() in path.read_bytes()[len(before[prefix]) if path == files[0] else 0:]
                   for path in files)
    projects = json.loads((live.store / "projects.json").read_text())["projects"]
    assert projects == {str(beta): "beta", str(folder): "alpha"}
    assert {prefix: hashlib.sha256(path.read_bytes()).hexdigest() for prefix, path in sources.items()} == digests
    # the brief: the request's first user message (after the client's session context), then the new prompt
    assert brief_run.returncode == 0 and brief_run.session_id == brief["session_id"], brief_run.describe()
    assert texts(contents(brief_run), "user") == [brief["brief"]["text"], NEXT]
    # hostile text reaches the model as written: newlines, U+2028 and NUL as they are, the surrogate as U+FFFD
    assert hostile_run.returncode == 0 and hostile_run.session_id == HOSTILE_ID, hostile_run.describe()
    items = contents(hostile_run)
    [turn] = hostile.turns
    assert texts(items, "user") == [f"{MARK} {AGENT} prompt:\n{turn.user_message}", NEXT]
    assert texts(items, "model")[0] == "lone \ufffd surrogate\nREPLYhostile"
    [answer] = [part["functionResponse"] for item in items for part in item["parts"] if "functionResponse" in part]
    assert answer["response"] == {"output": turn.tool_calls[0].result}
