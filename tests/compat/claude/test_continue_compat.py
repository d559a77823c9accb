"""Real Codex sessions continued natively in Claude Code (issue 30): `reprise continue ID --to claude`
writes a new Claude Code session from a rollout the real Codex CLI wrote (the committed fixture store,
tests/fixtures/codex-store, its folder moved to this test's), and the real `claude --resume NEW -p ...`
continues it: its request carries every prompt, every reply, the shell command as a `Bash` tool_use
with its output as the tool_result, in order, then the new prompt; the client appends to the new file,
and the rollouts' bytes never change."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reprise.core.paths import SessionRef
from reprise.core.service import Service
from reprise.core.sources.claude.layout import slug
from reprise.core.tokens import count_tokens
from reprise.tui import cli

from ... import factories
from . import fake_anthropic
from .sessions import JSON_OUT, LiveClaude, Step

pytestmark = pytest.mark.compat

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "codex-store"
RECORDED_FOLDER = b"/tmp/reprise-codex-fixture/work/alpha"
# (rollout id's tail, its prompts, words of its replies, the shell command and a word of its output)
SOURCES = [
    ("7c73f7a6", ["Please RUN: echo OUTWORD$((6*7)) && echo second line"], ["REPLYtoolresult"],
     ("echo OUTWORD$((6*7)) && echo second line", "OUTWORD42")),
    ("c14f3431", ["Start a plan MARKfirst", "Continue the plan MARKsecond", "Finish the plan MARKthird"],
     ["REPLYfirst", "REPLYsecond", "REPLYthird"], None),
    ("45d9fce8", ["Remember the colour MARKteal", "And the shape MARKhexagon BIGUSAGE", "What now? MARKaftercompact"],
     ["REPLYteal", "REPLYhexagon", "REPLYaftercompact"], None),
]


@pytest.fixture
def live(claude_bin, tmp_path, isolated_paths, monkeypatch) -> tuple[LiveClaude, Path, Path]:
    """An empty Claude Code config dir for the real client and Reprise, and a Codex home holding the
    fixture's rollouts with their folder moved to `alpha` here (the only bytes changed)."""
    folder = tmp_path / "alpha"
    folder.mkdir()
    codex_home = tmp_path / "codex"
    shutil.copytree(FIXTURE, codex_home)
    for rollout in codex_home.glob("sessions/*/*/*/*.jsonl"):
        rollout.write_bytes(rollout.read_bytes().replace(RECORDED_FOLDER, str(folder).encode()))
    live = LiveClaude(claude_bin, tmp_path / "live")
    (live.config_dir / "projects").mkdir()   # a Claude Code store Reprise enables (the client's first run makes it)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(live.config_dir))
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    monkeypatch.chdir(tmp_path)
    return live, folder, codex_home


def _reprise(capsys, *argv: str) -> dict:
    status = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise {' '.join(argv)} exited {status}: {out}{err}"
    return json.loads(out)


def _assistant_parts(messages: list[dict]) -> tuple[str, list[dict]]:
    """Every assistant text of a request, joined, and its tool_use blocks."""
    texts, uses = [], []
    for message in messages:
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            if block.get("type") == "text":
                texts.append(block["text"])
            elif block.get("type") == "tool_use":
                uses.append(block)
    return "\n".join(texts), uses


def test_codex_sessions_continued_in_claude_code_resume_with_their_whole_history(live, capsys):
    client, folder, codex_home = live
    rollouts = {tail: next(codex_home.glob(f"sessions/*/*/*/*{tail}.jsonl")) for tail, *_ in SOURCES}
    before = {tail: path.read_bytes() for tail, path in rollouts.items()}
    steps, expected = [], []
    for number, (tail, prompts, replies, shell) in enumerate(SOURCES):
        document = _reprise(capsys, "continue", tail, "--to", "claude")
        assert document["written"] and document["agent"] == "claude" and document["turns"] == len(prompts)
        new_id = document["session_id"]
        new_file = client.config_dir / "projects" / slug(str(folder)) / f"{new_id}.jsonl"
        assert Path(document["path"]) == new_file and new_file.is_file()
        prompt = f"Go on in Claude Code MARKcontinued{number}"
        steps.append(Step(["--resume", new_id, "-p", prompt, *JSON_OUT], folder, label=f"continue {tail}"))
        expected.append((tail, new_id, new_file, [*prompts, prompt], replies, shell))
    for result, (tail, new_id, new_file, prompts, replies, shell) in zip(client.run(steps), expected, strict=True):
        assert result.returncode == 0 and not result.output.get("is_error"), result.describe()
        assert result.output.get("session_id") == new_id, result.describe()
        messages = result.requests[-1]["messages"]
        sent = [text for m in messages if m["role"] == "user" and (text := fake_anthropic.prompt_text(m))]
        assert sent == prompts, (tail, sent)
        said, uses = _assistant_parts(messages)
        for word in replies:
            assert word in said, (tail, word)
        if shell is not None:
            command, output_word = shell
            assert [use["input"]["command"] for use in uses if use["name"] == "Bash"] == [command], tail
            results = [text for m in messages for text in fake_anthropic.tool_results(m)]
            assert any(output_word in text for text in results), (tail, results)
        assert prompts[-1].encode() in new_file.read_bytes(), tail   # the client appended its turn
        assert rollouts[tail].read_bytes() == before[tail], tail


def test_a_fractal_session_continued_in_claude_code_resumes_with_its_prompts_replies_and_steps(
        claude_bin, tmp_path, isolated_paths, monkeypatch, capsys):
    """A Fractal session (a factory one: three turns, each with the Python steps of its trace) continued
    in Claude Code, then back in Fractal from there: the real client's request carries every prompt,
    every reply and each step as marked text; the second continuation holds the four turns."""
    folder = tmp_path / "alpha"
    folder.mkdir()
    session_id = "f" * 32
    factories.write_session(isolated_paths, folder, factories.session_bytes(session_id, turns=3, seed=7,
                                                                            statuses=("succeeded",)))
    source = Path(next(isolated_paths.glob(f"workspaces/*/sessions/{session_id}.json")))
    before = source.read_bytes()
    live = LiveClaude(claude_bin, tmp_path / "live")
    (live.config_dir / "projects").mkdir()
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(live.config_dir))
    monkeypatch.chdir(folder)
    transcript = Service.from_environment(workspace=str(folder)).show(
        SessionRef(factories.workspace_key(folder), session_id, "fractal")).transcript
    document = _reprise(capsys, "continue", session_id, "--to", "claude")
    new_id = document["session_id"]
    prompt = "Go on from Fractal MARKfromfractal"
    [result] = live.run([Step(["--resume", new_id, "-p", prompt, *JSON_OUT], folder, label="from fractal")])
    assert result.returncode == 0 and result.output.get("session_id") == new_id, result.describe()
    messages = result.requests[-1]["messages"]
    sent = [text for m in messages if m["role"] == "user" and (text := fake_anthropic.prompt_text(m))]
    assert sent == [*(turn.user_message for turn in transcript.turns), prompt]
    said, _ = _assistant_parts(messages)
    steps = [call for turn in transcript.turns for call in turn.tool_calls]
    assert steps and all(turn.reply in said for turn in transcript.turns)
    assert all(f"Fractal tool call `{call.name}`" in said and call.input in said for call in steps)
    back = _reprise(capsys, "continue", new_id, "--to", "fractal")   # and back, with Claude Code's turn
    assert back["turns"] == 4 and back["agent"] == "fractal"
    assert source.read_bytes() == before


def test_a_brief_of_a_codex_session_reaches_claude_code_as_the_first_message_within_its_budget(live, capsys):
    """`--brief --budget 1500`: the new session's first user record is the brief; the real client's
    first request on resume carries it verbatim (so its tokens are the brief's count, 0% apart), then
    the new prompt."""
    client, folder, _ = live
    document = _reprise(capsys, "continue", "c14f3431", "--to", "claude", "--brief", "--budget", "1500")
    brief = document["brief"]
    assert document["written"] and brief["tokens"] <= brief["budget"] == 1500
    prompt = "Start from the brief MARKbrief"
    [result] = client.run([Step(["--resume", document["session_id"], "-p", prompt, *JSON_OUT], folder,
                                label="brief")])
    assert result.returncode == 0 and result.output.get("session_id") == document["session_id"], result.describe()
    first = result.requests[0]["messages"]
    sent = "\n".join(text for m in first if m["role"] == "user" and (text := fake_anthropic.prompt_text(m)))
    assert brief["text"] in sent and sent.rstrip().endswith(prompt)
    assert count_tokens(brief["text"], "o200k_base") == brief["tokens"]
    assert "MARKfirst" in brief["text"] and "REPLYthird" in brief["text"]   # every prompt, the last turns whole
