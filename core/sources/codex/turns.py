"""Codex's turns run by Reprise: `[sources.codex] send` (`codex exec --json ... resume ID -`) run by
the client runner (`client_runs.py`: the message on stdin, in the session's folder, CODEX_HOME
naming its root when it is not Codex's default), and its `--json` events read into an outcome (the
reply, the thread it wrote, an error). No option that bypasses Codex's approvals or sandbox is added.

Codex saves the turn in the session's own rollout; Reprise only reads it back (the turn's usage and
the measured context come from the rollout: the `usage` of `turn.completed` is the thread's total).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from ...outcome import TurnOutcome
from ...processes import Finished
from .. import agent_json
from ..client_runs import ClientSendBackend, client_env, stderr_tail


@dataclass(slots=True)
class ExecEvents:
    """What `codex exec --json` printed about its turn."""

    thread_id: str | None = None
    reply: str = ""
    completed: bool = False
    error: str | None = None


def parse_events(stdout: str) -> ExecEvents:
    """The thread id, the last agent message, and how the turn ended, from the JSON event lines."""
    found = ExecEvents()
    for line in stdout.splitlines():
        try:
            event = agent_json.loads(line)
        except (ValueError, RecursionError):
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("type")
        if kind == "thread.started" and isinstance(event.get("thread_id"), str):
            found.thread_id = event["thread_id"]
        elif kind == "item.completed":
            item = event.get("item")
            if isinstance(item, dict) and item.get("type") == "agent_message" and isinstance(item.get("text"), str):
                found.reply = item["text"]
        elif kind == "turn.completed":
            found.completed = True
        elif kind in ("turn.failed", "error"):
            error = event.get("error")
            message = error.get("message") if isinstance(error, dict) else event.get("message")
            found.error = message if isinstance(message, str) and message else found.error or "Codex reported an error."
    return found


def read_output(finished: Finished, session_id: str, notes: list[str]) -> TurnOutcome:
    """The outcome of one `codex exec` run from its JSON events (a run stopped, or over the cap, is
    `client_runs.unread_outcome`'s, and its reply is then read from the rollout)."""
    events = parse_events(finished.stdout.text())
    if events.thread_id is not None and events.thread_id != session_id:
        notes.append(f"Codex recorded this turn in session {events.thread_id}, not {session_id}.")
    if finished.status == 0 and events.completed and events.error is None:
        return TurnOutcome("succeeded", events.reply, notes=notes)
    why = events.error or stderr_tail(finished.stderr) or "Codex printed no turn.completed event."
    return TurnOutcome("failed", error=f"Exit status {finished.status}. {why}".strip(), notes=notes)


class CodexSendBackend(ClientSendBackend):
    """`[sources.codex] send`: Codex runs the turn and appends it to the session's rollout (CODEX_HOME
    names its root when that is not ~/.codex)."""

    def __init__(self, template: list[str], root: Path):
        super().__init__("codex", "Codex", template, partial(client_env, root, "CODEX_HOME", ".codex"), read_output)
