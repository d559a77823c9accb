"""A Claude Code session trimmed as a fork by `reprise trim ID --fork ... --json`, then resumed by the
real client (`claude --resume NEWID -p ...`): the request it sends holds exactly the kept turns, in
order, with no text of a dropped turn (or of a capped output) in the request or in the fork's file,
and the original file's bytes are unchanged. One fork per real session kind of the scenario (the
compacted one keeps Claude Code's summary, which names the earlier prompts' words: only the replies of
the dropped turns are checked gone there)."""

from __future__ import annotations

import json
import shutil

import pytest

from reprise.tui import cli

from . import fake_anthropic
from .sessions import BASH_OUTPUT_WORD, JSON_OUT, SESSION_IDS, LiveClaude, Step
from .test_claude_compat import scenario_prompts

pytestmark = pytest.mark.compat

# (session, trim arguments, the prompts kept (their indices), words that must be gone everywhere)
FORKS = [
    ("three", ["--drop", "2"], [0, 2], ["MARKsecond", "REPLYsecond"]),
    ("bash", ["--cap-replies", "5", "--spare", "0"], [0], [BASH_OUTPUT_WORD]),
    ("files", ["--keep-history", "1"], [1], ["MARKread", "REPLYread", "a file for the scenario"]),
    ("agent", ["--cap-replies", "8", "--spare", "0"], [0], ["REPLYsub"]),
    ("compact", ["--keep-history", "1"], [2], ["REPLYhexagon", "REPLYteal"]),
]
COMPACT_SUMMARY = "This session is being continued from a previous conversation"


@pytest.fixture
def live(claude_store, monkeypatch, tmp_path, isolated_paths) -> LiveClaude:
    """A copy of the scenario's store for the real client and Reprise, the Claude source able to fork."""
    copy = LiveClaude(claude_store.live.binary, tmp_path / "copy")
    shutil.rmtree(copy.config_dir)
    shutil.copytree(claude_store.config_dir, copy.config_dir, symlinks=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(copy.config_dir))
    monkeypatch.chdir(tmp_path)
    return copy


def _reprise(capsys, *argv: str) -> dict:
    status = cli.main([*argv, "--json"])
    out, err = capsys.readouterr()
    assert status == 0, f"reprise {' '.join(argv)} exited {status}: {out}{err}"
    return json.loads(out)


def test_each_kind_of_fork_resumes_with_exactly_its_kept_turns(claude_store, live, capsys):
    prompts = scenario_prompts(claude_store.folders)
    steps, expected = [], []
    for session, trim_args, kept, gone in FORKS:
        session_id = SESSION_IDS[session]
        original = next(live.config_dir.glob(f"projects/*/{session_id}.jsonl"))
        before = original.read_bytes()
        document = _reprise(capsys, "trim", session_id, "--fork", *trim_args)
        fork_id = document["session_id"]
        assert document["source_session_id"] == session_id and document["forked"] and document["applied"], session
        fork_file = original.parent / f"{fork_id}.jsonl"
        assert fork_file.is_file() and original.read_bytes() == before, session
        for word in gone:
            assert word.encode() not in fork_file.read_bytes(), (session, word)
        prompt = f"Go on with the fork MARKfork{session}"
        folder = claude_store.folders[claude_store.folder_of[session]]
        steps.append(Step(["--resume", fork_id, "-p", prompt, *JSON_OUT], folder, label=f"fork of {session}"))
        expected.append((session, fork_id, fork_file, original, before, [prompts[session][i] for i in kept] + [prompt],
                         gone))
    results = live.run(steps)
    for result, (session, fork_id, fork_file, original, before, sent_prompts, gone) in zip(results, expected,
                                                                                           strict=True):
        assert result.returncode == 0 and not result.output.get("is_error"), result.describe()
        assert result.output.get("session_id") == fork_id, result.describe()
        assert result.requests, result.describe()
        request = result.requests[-1]
        sent = [fake_anthropic.prompt_text(m) for m in request["messages"]
                if m["role"] == "user" and fake_anthropic.prompt_text(m)]
        if session == "compact":
            # After a compaction the client sends its summary, then what followed it: with the preserved
            # reply (turn 2) left out, the summary and the kept prompt are one user message.
            joined = "\n".join(sent)
            assert sent[0].startswith(COMPACT_SUMMARY) and sent[-1] == sent_prompts[-1], session
            assert sent_prompts[0] in joined and "REPLYhexagon" not in joined, session
        else:
            assert sent == sent_prompts, session
        every_request = json.dumps(result.requests, ensure_ascii=False)
        for word in gone:
            assert word not in every_request, (session, word)
            assert word.encode() not in fork_file.read_bytes(), (session, word)   # with the new turn
        assert original.read_bytes() == before, session
        assert f"MARKfork{session}".encode() in fork_file.read_bytes(), session   # the client appended to the fork
        if session in ("bash", "agent"):
            results_sent = [text for m in request["messages"] for text in fake_anthropic.tool_results(m)]
            assert results_sent and all("characters cut" in text for text in results_sent), session
