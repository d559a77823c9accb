"""Another agent's session written as a new Fractal session (core/sources/fractal/from_transcript.py),
checked against the real Fractal: it loads the file unchanged (its own save writes the same bytes),
the context of its next turn carries every prompt and reply, and a real turn (offline, in the live
harness's namespace) continues the session with the source's command output readable from Python."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from reprise.core import paths
from reprise.core.brief import HEADER
from reprise.core.paths import SessionRef
from reprise.core.sources.claude.records import parse_lines
from reprise.core.sources.claude.transcript import read_transcript as read_claude
from reprise.core.sources.codex.records import parse_rollout
from reprise.core.sources.codex.transcript import read_transcript as read_codex
from reprise.core.sources.fractal.codec import decode
from reprise.core.sources.fractal.from_transcript import session_of
from reprise.core.sources.fractal.store import Store
from reprise.core.transcript import Command, FileTouch, ToolCall, Transcript, Turn

from .live import conftest as live_harness
from .live.harness import Turn as LiveTurn

pytestmark = pytest.mark.compat
live, sandbox_python = live_harness.live, live_harness.sandbox_python   # the live harness's fixtures, used here

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLAUDE = FIXTURES / "claude-store" / "projects" / "-tmp-reprise-claude-fixture-work-alpha"
CODEX_EXEC = next((FIXTURES / "codex-store" / "sessions").rglob("rollout-*-01a2331b-cc0a-*.jsonl"))
NOW = datetime(2026, 12, 7, 9, 30, tzinfo=UTC)
HOSTILE = "\x00\x1b[2J \"q\" \\s\u2028 \U0001f680 \u202eevil\u202c \ud800 </script>"


def claude(name: str) -> Transcript:
    path = next(CLAUDE.glob(f"{name}*.jsonl"))
    return read_claude(parse_lines(path.read_bytes(), 0).records)[0]


def long_session() -> Transcript:
    """25 turns of every status but pending, with a shell call, a file and hostile text in each."""
    statuses = ("succeeded", "failed", "max_iterations", "interrupted")
    return Transcript("gemini", "long", [
        Turn(f"g{i}", f"prompt {i} MARKp{i} {HOSTILE}", statuses[i % 4], reply=f"reply {i} REPLYr{i} {HOSTILE}",
             error=f"error {i}" if i % 4 else None, started_at=f"2026-11-30T10:{i:02d}:00Z",
             tool_calls=[ToolCall("run_shell_command", "{}", f"OUT{i} {HOSTILE}", shell=f"echo OUT{i}")],
             files_read=[FileTouch(f"src/{i}.py", "observed")], commands=[Command(f"echo OUT{i}", "observed")])
        for i in range(25)])


SOURCES = {
    "claude-bash": (lambda: claude("5555"), "Claude Code"),
    "claude-read-write": (lambda: claude("2222"), "Claude Code"),
    "claude-three-turns": (lambda: claude("3333"), "Claude Code"),
    "codex-exec": (lambda: read_codex(parse_rollout(CODEX_EXEC.read_bytes()).records, CODEX_EXEC.stem[-36:])[0],
                   "Codex"),
    "gemini-long-hostile": (long_session, "Gemini CLI"),
    # a brief (`reprise continue --brief`): the one prompt no agent has answered yet
    "brief": (lambda: Transcript("claude", "b", [Turn("brief", f"{HEADER}\n\nThe user:\n> Start a plan MARKbrief",
                                                       "pending")]), "Claude Code"),
}


def squeezed(text: str) -> str:
    """`text` without whitespace (DSPy indents the instructions, the summary with them, line by line), and
    with the unpaired surrogate mended as the writer mends it (Fractal cannot build a prompt with one)."""
    return "".join(text.replace("\ud800", "\ufffd").split())


def write(root: Path, workspace: Path, name: str) -> tuple[str, bytes, Transcript]:
    """The converted session in the state root as Reprise's store writes a new file; (id, bytes, source)."""
    make, agent = SOURCES[name]
    source = make()
    session_id = f"{sorted(SOURCES).index(name):032x}"
    data, _, _ = session_of(source, session_id=session_id, agent=agent, now=NOW)
    Store(root).save_bytes(SessionRef(paths.workspace_key(workspace), session_id, "fractal"), data, expected=None)
    return session_id, data, source


@pytest.fixture
def workspace(tmp_path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_fractal_loads_every_converted_session_unchanged(fractal, workspace, isolated_paths):
    written = {name: write(isolated_paths, workspace, name) for name in SOURCES}
    results = fractal.run([{"op": "load", "workspace": str(workspace), "session_id": session_id}
                           for session_id, _, _ in written.values()])
    for (name, (session_id, data, source)), result in zip(written.items(), results, strict=True):
        assert "raised" not in result, (name, result)
        assert result["warnings"] == [] and result["session_id"] == session_id, name
        assert (result["turns"], result["history"]) == (len(source.turns), min(len(source.turns), 20)), name
        assert result["dump"].encode("latin-1") == data, name   # Fractal's own save would write these bytes


def test_the_context_of_fractal_s_next_turn_carries_every_prompt_and_reply(fractal, workspace, isolated_paths):
    written = {name: write(isolated_paths, workspace, name) for name in SOURCES}
    results = fractal.run([{"op": "context", "workspace": str(workspace), "session_id": session_id,
                            "message": "What next? MARKnext", "pending": True}
                           for session_id, _, _ in written.values()])
    for (name, (_, _, source)), result in zip(written.items(), results, strict=True):
        assert "raised" not in result and result["warnings"] == [], (name, result)
        text = squeezed("\n".join(message["content"] for message in result["messages"]))
        for number, turn in enumerate(source.turns, start=1):
            status = "interrupted" if turn.status == "pending" else turn.status
            reply = f"Agent response: {turn.reply}" if turn.reply else ""
            assert squeezed(f"Turn {number} (turn-") in text, name
            assert squeezed(f"User: {turn.user_message}\nAgent status: {status}\n{reply}") in text, name
        assert squeezed("User: What next? MARKnext\nAgent status: pending") in text, name
        assert "Variable:`session_history`" in text, name


SEARCH_HISTORY = ('```python\ntext = repr(session_history)\nfound = [w for w in ("OUTWORD42", "OUT24") if w in text]\n'
                  'SUBMIT(response=f"HISTORY {len(session_history)} " + " ".join(found), changed_files=[])\n```')
LIVE = {"claude-bash": "HISTORY 2 OUTWORD42", "gemini-long-hostile": "HISTORY 20 OUT24"}


@pytest.mark.slow
def test_a_real_fractal_turn_continues_converted_sessions_and_reads_the_command_output_from_python(fractal, live):
    """The fake model's code reads `session_history` in Fractal's REPL and answers with what it found there."""
    workspace = live.root / "ws-continue"
    workspace.mkdir()
    written = {name: write(live.state_home, workspace, name) for name in LIVE}
    results = live.run([LiveTurn(workspace, f"What did the commands print? MARKnext{index}", session_id)
                        for index, (session_id, _, _) in enumerate(written.values())],
                       server_env={"FAKE_REPLY": json.dumps({"code": SEARCH_HISTORY})})
    for (name, (session_id, data, source)), result in zip(written.items(), results, strict=True):
        assert result.returncode == 0 and result.output.get("status") == "succeeded", (name, result.describe())
        assert result.output["session_id"] == session_id and "warning" not in result.stderr.lower(), name
        assert result.output["response"] == LIVE[name], (name, result.describe())
        first = squeezed("\n".join(str(message.get("content")) for message in result.requests[0]["messages"]))
        for turn in source.turns:
            assert squeezed(f"User: {turn.user_message}\nAgent status: {turn.status}\n") in first, name
            assert squeezed(f"Agent response: {turn.reply}\n") in first, name
        assert squeezed(f"User: {result.turn.message}\nAgent status: pending") in first, name
        path = Store(live.state_home).paths.session_file(SessionRef(paths.workspace_key(workspace), session_id,
                                                                    "fractal"))
        before = decode(data, path="before", expected_id=session_id).state
        after = decode(path.read_bytes(), path=str(path), expected_id=session_id).state
        assert [t.model_dump() for t in after.turns[:-1]] == [t.model_dump() for t in before.turns], name
        kept = [h.model_dump() for h in before.history][-19:]   # Fractal keeps 20 with its own new turn
        assert [h.model_dump() for h in after.history[:-1]] == kept, name
        assert after.turns[-1].agent.status == after.history[-1].status == "succeeded", name
