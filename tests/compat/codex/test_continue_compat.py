"""A Claude Code session continued in the real Codex CLI the native way (issue 30): the rollout
`reprise continue ID --to codex` writes (`from_transcript.rollout_of`) from Reprise's transcript of a
real Claude Code session (the committed fixture store, its folder moved to this test's), in a fresh
CODEX_HOME, is resumed by `codex exec resume NEWID ...` as thread NEWID, whose request carries
every prompt, every reply, each shell command with its output and the other tool calls as marked
text, with Codex's own setup (tools, instructions, environment) injected once, after the history;
Codex appends to the new rollout, and the Claude Code file is untouched. `codex exec resume --last`
finds it too (Codex's own listing takes it as a thread with user turns)."""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript
from reprise.core.sources.codex.from_transcript import rollout_of, rollout_path, shell_script
from reprise.core.sources.codex.layout import CodexRoot
from reprise.core.sources.session_writing import tool_call_text
from reprise.core.tokens import count_tokens
from reprise.core.transcript import Transcript
from reprise.tui import cli

from ... import factories
from . import fake_openai
from .sessions import EXEC, LiveCodex, Step
from .test_codex_client import replies_sent, sent_prompts

pytestmark = pytest.mark.compat

CLAUDE = Path(__file__).resolve().parents[2] / "fixtures" / "claude-store" / "projects"
RECORDED_FOLDER = b"/tmp/reprise-claude-fixture/work/alpha"
AGENT = "Claude Code"
# the real Claude Code sessions continued: a Bash call; Read and Write calls; three turns
SOURCES = {"55555555": "01a2331b-0000-7000-8000-000000005555", "22222222": "01a2331b-0000-7000-8000-000000002222",
           "33333333": "01a2331b-0000-7000-8000-000000003333"}
NEXT = "Go on MARKcontinued"


def claude_file(prefix: str) -> Path:
    [path] = CLAUDE.glob(f"*/{prefix}*.jsonl")
    return path


def claude_transcript(path: Path) -> Transcript:
    transcript, _ = read_transcript(parse_lines(path.read_bytes(), 0, skim=False).records)
    return transcript


def write_rollout(live: LiveCodex, transcript: Transcript, session_id: str, folder: Path) -> Path:
    now = datetime.now(UTC)
    data, _ = rollout_of(transcript, session_id=session_id, folder=str(folder), cli_version="0.171.0", agent=AGENT,
                         now=now)
    path = rollout_path(CodexRoot(live.codex_home), session_id, now)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def expected_replies(transcript: Transcript) -> list[str]:
    return [text for turn in transcript.turns
            for text in [*(tool_call_text(call, AGENT) for call in turn.tool_calls if call.shell is None), turn.reply]]


def claude_sources(codex_bin: Path, tmp_path: Path, monkeypatch) -> tuple[LiveCodex, Path, Path]:
    """A fresh CODEX_HOME for the real client and Reprise, and a copy of the Claude Code fixture store
    with its recorded folder moved to `work` here (the folder the steps run in); (live, folder, root)."""
    live = LiveCodex(codex_bin, tmp_path / "live")
    folder = tmp_path / "work"
    folder.mkdir()
    claude = tmp_path / "claude"
    shutil.copytree(CLAUDE, claude / "projects")
    for path in claude.glob("projects/*/*.jsonl"):
        path.write_bytes(path.read_bytes().replace(RECORDED_FOLDER, str(folder).encode()))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    monkeypatch.setenv("CODEX_HOME", str(live.codex_home))
    (live.codex_home / "sessions").mkdir(parents=True, exist_ok=True)   # a Codex store Reprise enables
    monkeypatch.chdir(folder)
    return live, folder, claude


def continued(capsys, session_id: str) -> dict:
    """`reprise continue SESSION --to codex --json`, run in this process."""
    status = cli.main(["continue", session_id, "--to", "codex", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise continue exited {status}: {out}{err}"
    return json.loads(out)


def test_claude_code_sessions_continued_by_reprise_are_resumed_by_the_real_codex(codex_bin, tmp_path, capsys,
                                                                               isolated_paths, monkeypatch):
    live, folder, claude = claude_sources(codex_bin, tmp_path, monkeypatch)
    sources = {prefix: next(claude.glob(f"projects/*/{prefix}*.jsonl")) for prefix in SOURCES}
    digests = {prefix: hashlib.sha256(path.read_bytes()).hexdigest() for prefix, path in sources.items()}
    transcripts = {prefix: claude_transcript(path) for prefix, path in sources.items()}
    documents = {prefix: continued(capsys, prefix) for prefix in SOURCES}
    ids = {prefix: document["session_id"] for prefix, document in documents.items()}
    written = {prefix: Path(document["path"]) for prefix, document in documents.items()}
    assert all(path.is_file() and path.is_relative_to(live.codex_home / "sessions") for path in written.values())
    before = {prefix: path.read_bytes() for prefix, path in written.items()}
    results = live.run([Step([*EXEC, "resume", session_id, NEXT], folder, label=prefix)
                        for prefix, session_id in ids.items()])
    for result, (prefix, session_id) in zip(results, ids.items(), strict=True):
        transcript = transcripts[prefix]
        assert result.returncode == 0 and result.thread_id == session_id, result.describe()
        assert sent_prompts(result) == [*(turn.user_message for turn in transcript.turns), NEXT]
        assert replies_sent(result) == expected_replies(transcript)
        request = result.responses[-1]
        items = request["input"]
        calls = [item for item in items if item.get("type") == "custom_tool_call"]
        outputs = [fake_openai.output_text(item) for item in items if item.get("type") == "custom_tool_call_output"]
        shells = [call for turn in transcript.turns for call in turn.tool_calls if call.shell is not None]
        assert [call["input"] for call in calls] == [shell_script(call.shell or "") for call in shells]
        assert outputs == [f"Script completed\nOutput:\n\n{call.result}" for call in shells]
        if prefix == "55555555":
            assert "OUTWORD42" in outputs[0] and "OUTWORD42" in json.dumps(request)
        # Codex's setup, which the rollout does not carry, sent once: after the history, before the new prompt
        kinds = [item.get("type") for item in items]
        setup = kinds.index("additional_tools")
        assert kinds.count("additional_tools") == 1
        assert fake_openai.user_messages({"input": items[:setup]}) == [turn.user_message for turn in transcript.turns]
        assert all(item.get("role") != "developer" for item in items[:setup])
        assert any(item.get("role") == "developer" for item in items[setup:])
        assert items[-1]["role"] == "user" and fake_openai.message_text(items[-1]) == NEXT
        path = written[prefix]
        after = path.read_bytes()
        assert after.startswith(before[prefix]) and NEXT.encode() in after[len(before[prefix]):]
    assert {prefix: hashlib.sha256(path.read_bytes()).hexdigest() for prefix, path in sources.items()} == digests


def test_codex_resume_last_finds_the_written_rollout(codex_bin, tmp_path):
    live = LiveCodex(codex_bin, tmp_path / "live")
    folder = tmp_path / "work"
    folder.mkdir()
    transcript = claude_transcript(claude_file("33333333"))
    session_id = SOURCES["33333333"]
    path = write_rollout(live, transcript, session_id, folder)
    result = live.one(Step([*EXEC, "resume", "--last", NEXT], folder, label="--last"))
    assert result.thread_id == session_id, result.describe()
    assert sent_prompts(result) == [*(turn.user_message for turn in transcript.turns), NEXT]
    assert NEXT.encode() in path.read_bytes()


def test_a_fractal_session_continued_in_codex_resumes_with_its_prompts_and_replies_and_comes_back(
        codex_bin, tmp_path, isolated_paths, monkeypatch, capsys):
    """A Fractal session (a factory one, three turns with their Python steps) continued in Codex: the
    real `codex exec resume` sends every prompt and reply; then back in Fractal with Codex's turn."""
    live = LiveCodex(codex_bin, tmp_path / "live")
    (live.codex_home / "sessions").mkdir(parents=True, exist_ok=True)
    folder = tmp_path / "work"
    folder.mkdir()
    session_id = "e" * 32
    factories.write_session(isolated_paths, folder, factories.session_bytes(session_id, turns=3, seed=9,
                                                                            statuses=("succeeded",)))
    source = next(isolated_paths.glob(f"workspaces/*/sessions/{session_id}.json"))
    before = source.read_bytes()
    monkeypatch.setenv("CODEX_HOME", str(live.codex_home))
    monkeypatch.chdir(folder)
    transcript = Service.from_environment(workspace=str(folder)).show(
        SessionRef(factories.workspace_key(folder), session_id, "fractal")).transcript
    document = continued(capsys, session_id)
    [result] = live.run([Step([*EXEC, "resume", document["session_id"], NEXT], folder, label="from fractal")])
    assert result.returncode == 0 and result.thread_id == document["session_id"], result.describe()
    assert sent_prompts(result) == [*(turn.user_message for turn in transcript.turns), NEXT]
    replies = "\n".join(replies_sent(result))
    assert all(turn.reply in replies for turn in transcript.turns)
    status = cli.main(["continue", document["session_id"], "--to", "fractal", "--json"])
    back = json.loads(capsys.readouterr().out)
    assert status == 0 and back["turns"] == 4 and back["agent"] == "fractal"
    assert source.read_bytes() == before


def test_a_brief_of_a_claude_code_session_reaches_codex_as_the_first_message_within_its_budget(
        codex_bin, tmp_path, capsys, isolated_paths, monkeypatch):
    """`--brief`: the rollout's one prompt is the brief; `codex exec resume` sends it verbatim (its
    tokens the brief's count), then the new prompt; the brief stays within its default budget."""
    live, folder, _ = claude_sources(codex_bin, tmp_path, monkeypatch)
    status = cli.main(["continue", "22222222", "--to", "codex", "--brief", "--json"])
    document = json.loads(capsys.readouterr().out)
    brief = document["brief"]
    assert status == 0 and brief["tokens"] <= brief["budget"] == 8_000
    assert "re-verify" in brief["text"] or "unchanged since" in brief["text"]   # the files it read and wrote
    [result] = live.run([Step([*EXEC, "resume", document["session_id"], NEXT], folder, label="brief")])
    assert result.returncode == 0 and result.thread_id == document["session_id"], result.describe()
    assert sent_prompts(result) == [brief["text"], NEXT]
    assert count_tokens(brief["text"], "o200k_base") == brief["tokens"]


def test_a_second_continuation_carries_the_first_with_codexs_own_turn_then_only_the_new_turns(
        codex_bin, tmp_path, isolated_paths, monkeypatch, capsys):
    """A Fractal session continued in Codex, a turn run there by the real client, a turn added to the
    Fractal session, then continued again: the new rollout is the first continuation (Codex's turn
    included) and then only the new Fractal turn; the real client sends exactly those prompts."""
    live = LiveCodex(codex_bin, tmp_path / "live")
    (live.codex_home / "sessions").mkdir(parents=True, exist_ok=True)
    folder = tmp_path / "work"
    folder.mkdir()
    session_id = "d" * 32
    factories.write_session(isolated_paths, folder, factories.session_bytes(session_id, turns=3, seed=11,
                                                                            statuses=("succeeded",)))
    monkeypatch.setenv("CODEX_HOME", str(live.codex_home))
    monkeypatch.chdir(folder)
    first = continued(capsys, session_id)
    in_codex = "A turn in Codex MARKcodexturn"
    [result] = live.run([Step([*EXEC, "resume", first["session_id"], in_codex], folder, label="codex turn")])
    assert result.returncode == 0, result.describe()
    factories.write_session(isolated_paths, folder, factories.session_bytes(session_id, turns=4, seed=11,
                                                                            statuses=("succeeded",)))
    source = Service.from_environment(workspace=str(folder)).show(
        SessionRef(factories.workspace_key(folder), session_id, "fractal")).transcript
    second = continued(capsys, session_id)
    assert second["session_id"] != first["session_id"] and second["turns"] == 5
    [result] = live.run([Step([*EXEC, "resume", second["session_id"], NEXT], folder, label="second")])
    assert result.returncode == 0 and result.thread_id == second["session_id"], result.describe()
    prompts = [turn.user_message for turn in source.turns]
    assert sent_prompts(result) == [*prompts[:3], in_codex, prompts[3], NEXT]
