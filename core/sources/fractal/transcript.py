"""A Fractal session as the neutral transcript.

Fractal keeps every turn's message, reply, status and usage in its summary, and the details
(files, commands, trace, times) of the newest 20 turns in its history. The files it read and
the commands it ran are observed by its host; `files_modified` is the model's own claim.
A trace is opaque JSON: its steps are read leniently as the turn's tool calls (code run,
output), and anything of another shape is left out of the transcript, never an error.
"""

from __future__ import annotations

from typing import Any

from ...transcript import Command, FileTouch, ToolCall, Transcript, Turn, Usage
from .models import FRACTAL_MAX_HISTORY, HistoryTurn, SessionState, TurnUsage

SOURCE = "fractal"


def transcript_of(state: SessionState) -> Transcript:
    details = {entry.turn_id: entry for entry in state.history}
    turns: list[Turn] = []
    for summary_turn in state.turns:
        agent = summary_turn.agent
        entry = details.pop(summary_turn.turn_id, None)
        turn = Turn(
            turn_id=summary_turn.turn_id,
            user_message=summary_turn.user.message,
            status=summary_turn.status,   # type: ignore[arg-type]  # Fractal's statuses are the neutral ones
            reply=agent.response if agent is not None else "",
            error=agent.error if agent is not None else None,
            usage=_usage(agent.usage) if agent is not None and agent.usage is not None else None,
            detailed=entry is not None,
            fact_counts=(None if entry is not None or agent is None else
                         (agent.files_read_count, agent.files_changed_count, agent.commands_run_count)),
        )
        if entry is not None:
            _add_details(turn, entry)
        turns.append(turn)
    for entry in details.values():   # a history entry whose summary turn is gone (a hand-edited file)
        turn = Turn(turn_id=entry.turn_id, user_message=entry.user_message, status=entry.status)
        _add_details(turn, entry)
        turns.append(turn)
    transcript = Transcript(SOURCE, state.session_id, turns, history_apart=True)
    kept = len(state.history)
    if kept < len(state.turns):
        transcript.notes.append(f"{kept} of {len(state.turns)} turns keep their details in the file (Fractal keeps "
                                f"the newest {FRACTAL_MAX_HISTORY}); the others have their message and reply only.")
    return transcript


def _usage(usage: TurnUsage) -> Usage:
    return Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens, cost=usage.cost,
                 context_tokens=usage.context_tokens or None, duration_ms=usage.duration_ms,
                 iterations=usage.iterations)


def _add_details(turn: Turn, entry: HistoryTurn) -> None:
    turn.started_at, turn.ended_at = entry.created_at, entry.updated_at
    turn.error = turn.error or entry.error
    turn.files_read = [FileTouch(path, "observed") for path in entry.files_read]
    turn.files_modified = [FileTouch(path, "reported") for path in entry.files_modified]
    turn.commands = [Command(command, "observed") for command in entry.commands_run]
    turn.tool_calls = _steps(entry.trace)


def _steps(trace: Any) -> list[ToolCall]:
    """The code each iteration ran and its output, from a RunTrace-shaped trace."""
    steps = trace.get("steps") if isinstance(trace, dict) else None
    if not isinstance(steps, list):
        return []
    calls = []
    for step in steps:
        if isinstance(step, dict) and isinstance(step.get("code"), str):
            output = step.get("output")
            calls.append(ToolCall("python", step["code"], output if isinstance(output, str) else None,
                                  step.get("error") is True))
    return calls


def trace_model(state: SessionState) -> str | None:
    """The model the newest traced turn ran on, when its trace says."""
    for entry in reversed(state.history):
        model = entry.trace.get("model") if isinstance(entry.trace, dict) else None
        if isinstance(model, str) and model:
            return model
    return None
