"""A new Fractal session from another agent's transcript (the native way of `reprise continue`), as the
bytes Fractal itself writes, so that the real Fractal loads and continues it unchanged.

Fractal puts its whole summary (every message, status, reply and the counts) into the prompt of each
turn, and hands its model the history (the newest 20 turns: files, commands, trace) as the
`session_history` variable the model reads from Python. So every turn goes into the summary, and the
newest 20 into the history with a trace whose steps are the source's tool calls: each call as marked
text in the step's `code` and its result in `output`, where Fractal's own steps keep the code its model
ran and what it printed. Pure: the session id and the time are given; turn ids derive from the session id.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Literal

from ...times import parse_time
from ...transcript import Command, FileTouch, ToolCall, Transcript, Turn, Usage
from ..session_writing import MARK, left_out_notes, prompt_only, tool_call_head, without_lone_surrogates
from .codec import encode
from .models import (
    FRACTAL_MAX_HISTORY,
    AgentStatus,
    AgentTurn,
    HistoryTurn,
    SessionState,
    SessionSummary,
    SummaryTurn,
    TurnUsage,
    UserTurn,
    agent_status,
)
from .trace import IterationStep, RunTrace

TARGET = "Fractal"
OUTPUT_SHOWN = 5000   # predict-rlm keeps a step's output to this many characters, the whole in untruncated_output

TraceStatus = Literal["in_progress", "completed", "max_iterations", "error"]
_TRACE_STATUS: dict[AgentStatus, TraceStatus] = {"succeeded": "completed", "max_iterations": "max_iterations",
                                                 "failed": "error", "interrupted": "error"}


def session_of(transcript: Transcript, *, session_id: str, agent: str,
               now: datetime) -> tuple[bytes, list[Turn], list[str]]:
    """The new session's file, the turns whose details it cannot keep (beyond Fractal's history, for
    the caller to archive) and what was left out or changed; `agent` names the transcript's agent."""
    turns = [_sound(turn) for turn in transcript.turns]
    agent = _mended(agent)
    kept_from = max(len(turns) - FRACTAL_MAX_HISTORY, 0)
    when = now.astimezone(UTC).isoformat()
    summary = [_summary_turn(turn, turn_id_for(session_id, index)) for index, turn in enumerate(turns)]
    history = [_history_turn(turns[index], turn_id_for(session_id, index), agent, when)
               for index in range(kept_from, len(turns))]
    state = SessionState(session_id=session_id, summary=SessionSummary(turns=summary), history=history)
    return encode(state), transcript.turns[:kept_from], _notes(transcript, turns, agent, kept_from)


def turn_id_for(session_id: str, index: int) -> str:
    """The id of the turn at `index` (from 0) in the session written as `session_id`: Fractal's form,
    `turn-` and 32 hex digits."""
    return "turn-" + hashlib.sha256(f"{session_id}/{index}".encode()).hexdigest()[:32]


def _sound(turn: Turn) -> Turn:
    """The turn with every text made encodable as UTF-8 (`_mended`); the same object when all of them are."""
    texts = [turn.user_message, turn.reply, turn.error or "", *(touch.path for touch in turn.files_read),
             *(touch.path for touch in turn.files_modified), *(command.command for command in turn.commands),
             *(text for call in turn.tool_calls for text in (call.name, call.input, call.result, call.shell) if text)]
    if all(_encodable(text) for text in texts):
        return turn
    return replace(turn, user_message=_mended(turn.user_message), reply=_mended(turn.reply),
                   error=_mended(turn.error) if turn.error is not None else None,
                   files_read=[FileTouch(_mended(touch.path), touch.provenance) for touch in turn.files_read],
                   files_modified=[FileTouch(_mended(touch.path), touch.provenance) for touch in turn.files_modified],
                   commands=[Command(_mended(command.command), command.provenance) for command in turn.commands],
                   tool_calls=[_sound_call(call) for call in turn.tool_calls])


def _sound_call(call: ToolCall) -> ToolCall:
    return ToolCall(_mended(call.name), _mended(call.input), _mended(call.result) if call.result is not None else None,
                    call.is_error, _mended(call.shell) if call.shell is not None else None)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_mended = without_lone_surrogates   # Fractal writes them to the file, then fails to build a prompt holding them


def _status(turn: Turn) -> AgentStatus:
    """A turn the source never finished is interrupted: a pending one would stay pending in Fractal."""
    return "interrupted" if turn.status == "pending" else agent_status(turn.status)


def _counts(turn: Turn) -> tuple[int, int, int]:
    if turn.fact_counts is not None:
        return turn.fact_counts
    return len(turn.files_read), len(turn.files_modified), len(turn.commands)


def _summary_turn(turn: Turn, turn_id: str) -> SummaryTurn:
    files_read, files_changed, commands_run = _counts(turn)
    agent = AgentTurn(status=_status(turn), response=turn.reply, files_read_count=files_read,
                      files_changed_count=files_changed, commands_run_count=commands_run, error=turn.error,
                      usage=_usage(turn.usage))
    return SummaryTurn(turn_id=turn_id, user=UserTurn(message=turn.user_message), agent=agent)


def _usage(usage: Usage | None) -> TurnUsage | None:
    """The figures Fractal records, where the source has them. Fractal's input is the whole prompt (cached
    tokens too); its context size is left at 0, since the source's measures another agent's prompt."""
    if usage is None:
        return None
    cost = usage.cost if usage.cost is not None and math.isfinite(usage.cost) and usage.cost > 0 else 0.0
    prompt = usage.input_tokens + usage.cache_read_tokens + usage.cache_creation_tokens
    return TurnUsage(input_tokens=_count(prompt), output_tokens=_count(usage.output_tokens), cost=cost,
                     duration_ms=_count(usage.duration_ms), iterations=_count(usage.iterations))


def _count(value: int | None) -> int:
    return max(value or 0, 0)


def _history_turn(turn: Turn, turn_id: str, agent: str, now: str) -> HistoryTurn:
    created = _time(turn.started_at) or _time(turn.ended_at) or now
    status = _status(turn)
    return HistoryTurn(turn_id=turn_id, user_message=turn.user_message, status=status,
                       files_read=[touch.path for touch in turn.files_read],
                       files_modified=[touch.path for touch in turn.files_modified],
                       commands_run=[command.command for command in turn.commands],
                       trace=trace_of(turn.tool_calls, agent, status, turn.usage), error=turn.error,
                       created_at=created, updated_at=_time(turn.ended_at) or created)


def _time(value: str | None) -> str | None:
    """A source's time stamp in Fractal's form (`datetime.isoformat()` in UTC)."""
    parsed = parse_time(value)
    return parsed.astimezone(UTC).isoformat() if parsed is not None else None


def trace_of(calls: list[ToolCall], agent: str, status: AgentStatus, usage: Usage | None) -> dict[str, Any] | None:
    """A predict-rlm RunTrace dump (every field, in its order) with one step per tool call; None without calls."""
    if not calls:
        return None
    steps = [_step(number, call, agent) for number, call in enumerate(calls, start=1)]
    trace = RunTrace(status=_TRACE_STATUS[status], model=agent, iterations=len(steps), max_iterations=len(steps),
                     duration_ms=_count(usage.duration_ms if usage is not None else None), steps=steps)
    return trace.model_dump(mode="json")


def _step(number: int, call: ToolCall, agent: str) -> IterationStep:
    result = call.result if call.result is not None else f"{MARK} no result was recorded."
    shown = result
    if len(result) > OUTPUT_SHOWN:
        shown = f"{result[:OUTPUT_SHOWN]}\n... (truncated to {OUTPUT_SHOWN}/{len(result):,} chars)"
    reasoning = f"{MARK} A tool call {agent} made in this turn, carried over by Reprise; Fractal did not run it."
    return IterationStep(iteration=number, reasoning=reasoning, code=tool_call_head(call, agent), output=shown,
                         untruncated_output=result, error=call.is_error, duration_ms=0)


def _notes(transcript: Transcript, turns: list[Turn], agent: str, kept_from: int) -> list[str]:
    """What was left out or changed; `turns` are the transcript's as written (`_sound`)."""
    notes = left_out_notes(transcript, agent, TARGET)
    if kept_from:
        notes.append(f"the oldest {_plural(kept_from, 'turn')} keep only their message, reply, status and counts: "
                     f"{TARGET} keeps the files, commands and tool calls of its newest {FRACTAL_MAX_HISTORY}")
    calls = sum(len(turn.tool_calls) for turn in turns[kept_from:])
    if calls:
        notes.append(f"kept as marked text in the traces of their turns: {_plural(calls, 'tool call')} of {agent} "
                     f"({TARGET} did not run them)")
    briefs = sum(1 for turn in turns if prompt_only(turn))
    if briefs:
        notes.append(f"the brief is {TARGET}'s first turn, marked interrupted since no agent has answered it: "
                     f"{TARGET}'s summary carries it into the prompt of its next turn")
    unfinished = sum(1 for turn in turns if turn.status == "pending") - briefs
    if unfinished:
        notes.append(f"{_plural(unfinished, 'turn')} {agent} had not finished are written as interrupted")
    if any(turn.usage is not None and turn.usage.context_tokens for turn in turns):
        notes.append(f"the context sizes {agent} measured are left out: they measure {agent}'s prompts, "
                     f"not {TARGET}'s")
    mended = sum(1 for turn, source in zip(turns, transcript.turns, strict=True) if turn is not source)
    if mended:
        notes.append(f"unpaired surrogates in the text of {_plural(mended, 'turn')} are replaced by U+FFFD: "
                     f"{TARGET} cannot put them in a prompt")
    return notes


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")
