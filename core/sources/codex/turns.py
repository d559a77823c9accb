"""Codex's turns run by Reprise: `[sources.codex] send` (`codex exec --json ... resume ID -`) with the
message on stdin (never an argv item: a long one fails with E2BIG, one starting with `-` would be read
as an option), run in the session's folder with CODEX_HOME naming its root when it is not Codex's
default, and its `--json` events read into an outcome (the reply, the thread it wrote, an error). No
option that bypasses Codex's approvals or sandbox is added.

Codex saves the turn in the session's own rollout; Reprise only reads it back (the turn's usage and
the measured context come from the rollout: the `usage` of `turn.completed` is the thread's total).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from ...agents import TurnRequest
from ...outcome import INTERRUPTED_ERROR, TurnOutcome, left_running_note
from ...processes import Finished
from .. import agent_json
from ..claude.turns import client_env, run_client

STDERR_TAIL = 2000


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


def _tail(text: str) -> str:
    text = text.strip()
    return text if len(text) <= STDERR_TAIL else "…" + text[-STDERR_TAIL:]


def outcome_of(finished: Finished, session_id: str, timeout: float) -> TurnOutcome:
    """The outcome of one `codex exec` run; a reply over the cap is read from the rollout afterwards."""
    notes = list(finished.notes)
    if finished.output_held:
        notes.append(left_running_note([process.describe() for process in finished.left_running]))
    if finished.stopped == "interrupted":
        return TurnOutcome("interrupted", error=INTERRUPTED_ERROR, notes=notes)
    if finished.stopped == "timeout":
        return TurnOutcome("failed", error=f"Timed out after {timeout:g} s. {_tail(finished.stderr)}".strip(),
                           notes=notes)
    if finished.stdout.over:
        notes.append(f"Codex printed {finished.stdout.total_bytes:,} bytes, over [agent] max_reply_bytes; the reply "
                     "is the one it saved.")
        return TurnOutcome("succeeded" if finished.status == 0 else "failed", notes=notes, unread=True,
                           error=None if finished.status == 0 else f"Exit status {finished.status}.")
    events = parse_events(finished.stdout.text())
    if events.thread_id is not None and events.thread_id != session_id:
        notes.append(f"Codex recorded this turn in session {events.thread_id}, not {session_id}.")
    if finished.status == 0 and events.completed and events.error is None:
        return TurnOutcome("succeeded", events.reply, notes=notes)
    why = events.error or _tail(finished.stderr) or "Codex printed no turn.completed event."
    return TurnOutcome("failed", error=f"Exit status {finished.status}. {why}".strip(), notes=notes)


class CodexSendBackend:
    """`[sources.codex] send`: Codex runs the turn and appends it to the session's rollout."""

    name = "codex"
    writes_session = True

    def __init__(self, template: list[str], root: Path):
        self.template = template
        self.root = root

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        finished = run_client(self.template, request, cancel, client_env(self.root, "CODEX_HOME", ".codex"), "Codex",
                              "codex")
        return outcome_of(finished, request.session_id, request.timeout)
