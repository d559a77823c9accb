"""The client runner of agents whose own client runs a turn (core/sources/client_runs.py): the
environment naming the agent's root only when it is not the default, the message on stdin in the
turn's folder, the outcomes of runs whose output is not read, and `ClientSendBackend`."""

from __future__ import annotations

import os
import sys
import threading

import pytest

from reprise.core.agents import TurnRequest
from reprise.core.errors import AgentError
from reprise.core.outcome import INTERRUPTED_ERROR, TurnOutcome
from reprise.core.processes import CapturedOutput, Finished
from reprise.core.sources.client_runs import (
    STDERR_TAIL,
    ClientSendBackend,
    client_env,
    run_notes,
    stderr_tail,
    unread_outcome,
)

# Prints what the turn's client was given: the message on stdin, its folder, the root variable, its argument.
ECHO = ("import os, sys; print(repr((sys.stdin.read(), os.getcwd(), os.environ.get('AGENT_HOME'), sys.argv[1])))")


def _finished(*, stopped: str | None = None, status: int | None = 0, out: bytes = b"", cap: int = 1000,
              stderr: str = "", notes: list[str] | None = None) -> Finished:
    output = CapturedOutput(out[:cap], len(out), len(out), "0" * 64, cap)
    return Finished(status, output, stderr, stopped=stopped, notes=list(notes or []))


def test_the_root_variable_is_set_only_when_the_root_is_not_the_clients_default(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("AGENT_HOME", raising=False)
    default = tmp_path / ".agent"
    assert "AGENT_HOME" not in client_env(default, "AGENT_HOME", ".agent")
    assert client_env(tmp_path / "elsewhere", "AGENT_HOME", ".agent")["AGENT_HOME"] == str(tmp_path / "elsewhere")
    monkeypatch.setenv("AGENT_HOME", str(tmp_path / "elsewhere"))
    assert client_env(tmp_path / "elsewhere", "AGENT_HOME", ".agent")["AGENT_HOME"] == str(tmp_path / "elsewhere")
    assert client_env(default, "AGENT_HOME", ".agent")["AGENT_HOME"] == str(default)   # the variable points away


def test_a_send_backend_runs_the_client_with_the_message_on_stdin_in_the_turns_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("AGENT_HOME", raising=False)
    made: list[dict[str, str]] = []
    seen: list[tuple[Finished, str, list[str]]] = []

    def env() -> dict[str, str]:
        made.append(client_env(tmp_path / "store", "AGENT_HOME", ".agent"))
        return made[-1]

    def read_output(finished: Finished, session_id: str, notes: list[str]) -> TurnOutcome:
        seen.append((finished, session_id, notes))
        return TurnOutcome("succeeded", finished.stdout.text().strip(), notes=notes)

    backend = ClientSendBackend("agent", "The Agent", [sys.executable, "-c", ECHO, "{session_id}"], env, read_output)
    assert made == []   # the environment is made when a turn starts
    workspace = tmp_path / "work"
    workspace.mkdir()
    message = "-rf / a message that looks like an option\nover two lines"
    outcome = backend.run(TurnRequest("s-1", workspace, message, "", 60.0), threading.Event())
    assert outcome.response == repr((message, str(workspace), str(tmp_path / "store"), "s-1"))
    assert len(made) == 1 and [(sid, notes) for _, sid, notes in seen] == [("s-1", [])]
    assert backend.name == "agent" and backend.writes_session
    cancel = threading.Event()
    cancel.set()   # stopped before it could print: the kit's outcome, the agent's reader is not asked
    stopped = backend.run(TurnRequest("s-1", workspace, message, "", 60.0), cancel)
    assert stopped.status == "interrupted" and len(seen) == 1


def test_a_missing_client_names_its_setting(tmp_path):
    backend = ClientSendBackend("agent", "The Agent", [str(tmp_path / "no-such-client")], lambda: dict(os.environ),
                                lambda finished, session_id, notes: TurnOutcome("succeeded"))
    with pytest.raises(AgentError) as raised:
        backend.run(TurnRequest("s-1", tmp_path, "hi", "", 60.0), threading.Event())
    assert raised.value.message == f"The The Agent program {str(tmp_path / 'no-such-client')!r} was not found."
    assert raised.value.hint == "install The Agent, or set [sources.agent] send"


def test_runs_whose_output_is_not_read_have_their_outcome_here():
    interrupted = unread_outcome(_finished(stopped="interrupted", status=None), 30, "The Agent", [])
    assert interrupted is not None and interrupted.status == "interrupted" and interrupted.error == INTERRUPTED_ERROR
    late = unread_outcome(_finished(stopped="timeout", status=None, stderr="x" * 5000 + "the end"), 30, "The Agent", [])
    assert late is not None and late.status == "failed"
    assert late.error == "Timed out after 30 s. …" + ("x" * 5000 + "the end")[-STDERR_TAIL:]
    notes = ["a note"]
    over = unread_outcome(_finished(out=b"y" * 1500), 30, "The Agent", notes)
    assert over is not None and over.status == "succeeded" and over.unread and over.error is None
    assert over.notes == notes == ["a note", "The Agent printed 1,500 bytes, over [agent] max_reply_bytes; "
                                              "the reply is the one it saved."]
    failed = unread_outcome(_finished(out=b"y" * 1500, status=2), 30, "The Agent", [])
    assert failed is not None and failed.status == "failed" and failed.error == "Exit status 2."
    assert unread_outcome(_finished(out=b"{}"), 30, "The Agent", []) is None


def test_the_notes_of_a_run_and_the_tail_of_its_stderr():
    assert run_notes(_finished(notes=["spooled"])) == ["spooled"]
    held = _finished()
    held.output_held = True
    assert run_notes(held)[0].startswith("The agent exited, but a process it started still held its output")
    assert stderr_tail("  short  ") == "short"
    assert stderr_tail("z" * (STDERR_TAIL + 1)) == "…" + "z" * STDERR_TAIL
