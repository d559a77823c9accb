"""Recording a turn in Fractal's format, as Fractal does: a pending summary turn and history
turn before the agent runs, the outcome filled in after, history capped to the newest N.
Pure functions on a SessionState; the caller archives what `cap_history` evicts and saves.
And the `fractal` backend, which runs Fractal headless for a turn it saves itself."""

from __future__ import annotations

import json
import os
import threading
import uuid
from typing import Any

from ...agents import TurnRequest, held_note, run_process, stderr_tail
from ...outcome import TurnOutcome
from .models import (
    INTERRUPTED_ERROR,
    AgentTurn,
    HistoryTurn,
    SessionState,
    SummaryTurn,
    TurnUsage,
    UserTurn,
    agent_status,
    parse_time,
)


def usage_model(usage: dict[str, Any] | None) -> TurnUsage | None:
    """An agent's reported usage as Fractal records it; None when it is not a valid usage object."""
    try:
        return TurnUsage.model_validate(usage) if isinstance(usage, dict) else None
    except ValueError:
        return None


def begin_turn(state: SessionState, message: str, now: str) -> str:
    """Append the pending turn the agent is about to work on; return its id."""
    turn_id = f"turn-{uuid.uuid4().hex}"
    state.summary.turns.append(SummaryTurn(turn_id=turn_id, user=UserTurn(message=message)))
    state.history.append(HistoryTurn(turn_id=turn_id, user_message=message, status="pending",
                                     created_at=now, updated_at=now))
    return turn_id


def finish_turn(state: SessionState, turn_id: str, outcome: TurnOutcome, now: str) -> None:
    """Fill in a pending turn with its outcome (summary counts are the lengths of the lists)."""
    summary_turn = next((t for t in reversed(state.turns) if t.turn_id == turn_id), None)
    if summary_turn is None:
        raise KeyError(turn_id)
    status = agent_status(outcome.status)
    summary_turn.agent = AgentTurn(
        status=status, response=outcome.response, files_read_count=len(outcome.files_read),
        files_changed_count=len(outcome.files_modified), commands_run_count=len(outcome.commands_run),
        error=outcome.error, usage=usage_model(outcome.usage))
    entry = next((h for h in reversed(state.history) if h.turn_id == turn_id), None)
    if entry is not None:
        entry.status = status
        entry.files_read = list(outcome.files_read)
        entry.files_modified = list(outcome.files_modified)
        entry.commands_run = list(outcome.commands_run)
        entry.error = outcome.error
        entry.updated_at = now


def outcome_from_saved_turn(outcome: TurnOutcome, state: SessionState, turn_id: str) -> None:
    """Fill in an outcome from the turn an agent saved itself (its printed result was not read)."""
    turn = next(t for t in reversed(state.turns) if t.turn_id == turn_id)
    entry = next((h for h in reversed(state.history) if h.turn_id == turn_id), None)
    if turn.agent is None:
        return
    outcome.status, outcome.response = turn.agent.status, turn.agent.response
    outcome.error, outcome.unread = turn.agent.error, False
    outcome.usage = turn.agent.usage.model_dump(mode="json") if turn.agent.usage is not None else None
    if entry is not None:
        outcome.files_read, outcome.files_modified = list(entry.files_read), list(entry.files_modified)
        outcome.commands_run = list(entry.commands_run)


def cap_history(state: SessionState, max_turns: int) -> list[HistoryTurn]:
    """Keep the newest `max_turns` history turns; return the evicted ones (oldest first)."""
    if len(state.history) <= max_turns:
        return []
    evicted = state.history[:-max_turns]
    state.history = state.history[-max_turns:]
    return evicted


def pending_turns(state: SessionState) -> list[tuple[int, str, str | None]]:
    """(turn number from 1, turn id, created_at) of every turn still waiting for its agent."""
    created = {h.turn_id: h.created_at for h in state.history}
    return [(number, turn.turn_id, created.get(turn.turn_id))
            for number, turn in enumerate(state.turns, start=1) if turn.agent is None]


def pending_age(state: SessionState, now_ts: float) -> float | None:
    """Seconds since the newest pending turn started (None: no pending turn, or no time recorded)."""
    ages = []
    for _, _, created in pending_turns(state):
        moment = parse_time(created)
        if moment is not None:
            ages.append(now_ts - moment.timestamp())
    return min(ages) if ages else None


def mark_interrupted(state: SessionState, turn_id: str, now: str) -> None:
    finish_turn(state, turn_id, TurnOutcome("interrupted", error=INTERRUPTED_ERROR), now)


class FractalBackend:
    """`fractal --workspace DIR --resume ID -p - --json --quiet`: Fractal runs the turn and saves the
    file. The backend Fractal's spec offers by name (`[agent] backend = "fractal"`, `--agent fractal`),
    and the one chosen when none is named and the program is installed."""

    name = "fractal"
    writes_session = True
    install_hint = "install fractal-rlm"

    def __init__(self, program: str = "fractal"):
        self.program = program

    def run(self, request: TurnRequest, cancel: threading.Event) -> TurnOutcome:
        argv = [self.program, "--workspace", str(request.workspace), "--resume", request.session_id,
                "-p", "-", "--json", "--quiet"]
        finished = run_process(argv, request, env=dict(os.environ), cancel=cancel, spool=False)
        status, err, stopped = finished.status, finished.stderr, finished.stopped
        notes = finished.notes + held_note(finished)
        if stopped == "interrupted":
            return TurnOutcome("interrupted", error=INTERRUPTED_ERROR, notes=notes)
        if stopped == "timeout":
            return TurnOutcome("failed", error=f"Timed out after {request.timeout:g} s. {stderr_tail(err)}".strip(),
                               notes=notes)
        if finished.stdout.over:  # Fractal saved the reply itself; Reprise reads no more than the cap of it
            notes.append(f"Fractal printed {finished.stdout.total_bytes:,} bytes, over [agent] max_reply_bytes; "
                         "the outcome is the turn it saved.")
            return TurnOutcome("failed", error=f"Exit status {status}; its output is over [agent] max_reply_bytes "
                               "and it saved no turn.", notes=notes, unread=True)
        out = finished.stdout.text()
        result = _last_json_object(out)
        if result is None:
            return TurnOutcome("failed", out.strip(), notes=notes,
                               error=f"Exit status {status}; no JSON result. {stderr_tail(err)}".strip())
        usage = result.get("usage")
        reported = result.get("status")
        turn_status = reported if isinstance(reported, str) and reported in (
            "succeeded", "failed", "max_iterations", "interrupted") else "failed"
        files = result.get("changed_files")
        changed = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
        reported_error = result.get("error")
        error = reported_error if isinstance(reported_error, str) else None
        if status != 0 and turn_status == "succeeded":
            turn_status, error = "failed", error or f"Exit status {status}. {stderr_tail(err)}".strip()
        return TurnOutcome(turn_status, str(result.get("response") or ""), files_modified=changed, error=error,
                           usage=usage if isinstance(usage, dict) else None, notes=notes)



def _last_json_object(text: str) -> dict[str, object] | None:
    for line in reversed(text.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
