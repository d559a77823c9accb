"""Recording a turn in Fractal's format, as Fractal does: a pending summary turn and history
turn before the agent runs, the outcome filled in after, history capped to the newest N.
Pure functions on a SessionState; the caller archives what `cap_history` evicts and saves."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from .models import (
    INTERRUPTED_ERROR,
    AgentTurn,
    HistoryTurn,
    SessionState,
    SummaryTurn,
    TurnUsage,
    UserTurn,
    parse_time,
)
from .trim import cap_marker


@dataclass(slots=True)
class TurnOutcome:
    """What an agent did in one turn."""

    status: str
    response: str = ""
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    commands_run: list[str] = field(default_factory=list)
    error: str | None = None
    usage: TurnUsage | None = None
    notes: list[str] = field(default_factory=list)
    output: Any = None  # the whole reply when it was over the cap (a processes.CapturedOutput), to archive
    unread: bool = False  # the agent's printed result was not read (over the cap): take the turn it saved


def cut_reply(head: str, chars_cut: int, archive_digest: str | None, why_not_archived: str | None = None) -> str:
    """A reply cut at the cap, with the marker trims leave; without an archive entry, the marker says why."""
    if archive_digest is not None:
        return head + cap_marker(chars_cut, archive_digest)
    return head + (f"\n[reprise: {chars_cut:,} characters cut; the whole output could not be archived: "
                   f"{why_not_archived}]")


def left_running_note(processes: list[str]) -> str:
    """The note on a turn whose agent exited while processes it started still held its output."""
    held = ", ".join(processes) if processes else "a process it started"
    return (f"The agent exited, but {held} still held its output; Reprise stopped reading "
            "and left it running.")


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
    summary_turn.agent = AgentTurn(
        status=outcome.status, response=outcome.response, files_read_count=len(outcome.files_read),
        files_changed_count=len(outcome.files_modified), commands_run_count=len(outcome.commands_run),
        error=outcome.error, usage=outcome.usage)
    entry = next((h for h in reversed(state.history) if h.turn_id == turn_id), None)
    if entry is not None:
        entry.status = outcome.status
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
    outcome.error, outcome.usage, outcome.unread = turn.agent.error, turn.agent.usage, False
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
