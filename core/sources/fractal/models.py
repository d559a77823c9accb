"""Pydantic models of Fractal's session file, schema_version 1.

They validate exactly what Fractal validates, keep every field they do not know (at every
level, dumped after the known ones) and treat `trace` as opaque JSON, so a file read and
written back loses nothing.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...config import HISTORY_KEPT
from ...outcome import INTERRUPTED_ERROR as INTERRUPTED_ERROR
from ...times import parse_time as parse_time
from ...times import utc_now_iso as utc_now_iso

AgentStatus = Literal["succeeded", "failed", "max_iterations", "interrupted"]
HistoryStatus = Literal["pending", "succeeded", "failed", "max_iterations", "interrupted"]
STATUSES: tuple[str, ...] = ("pending", "succeeded", "failed", "max_iterations", "interrupted")
AGENT_STATUSES: tuple[AgentStatus, ...] = ("succeeded", "failed", "max_iterations", "interrupted")
SCHEMA_VERSION: Final = 1
FRACTAL_MAX_HISTORY = HISTORY_KEPT
MAX_ITERATIONS_ERROR = "Reached max iterations before SUBMIT; response came from fallback extraction."


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", validate_assignment=False, defer_build=True)  # built on first load

    def has_unknown_fields(self) -> bool:
        """True when this model or any model inside it carries fields Fractal would drop."""
        if self.model_extra:
            return True
        for name in type(self).model_fields:
            value = getattr(self, name)
            items = value if isinstance(value, list) else [value]
            if any(isinstance(item, _Model) and item.has_unknown_fields() for item in items):
                return True
        return False


class UserTurn(_Model):
    message: str


class TurnUsage(_Model):
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cost: float = Field(default=0.0, ge=0.0)
    duration_ms: int = Field(default=0, ge=0)
    iterations: int = Field(default=0, ge=0)
    context_tokens: int = Field(default=0, ge=0)


class AgentTurn(_Model):
    status: AgentStatus
    response: str = ""
    files_read_count: int = Field(default=0, ge=0)
    files_changed_count: int = Field(default=0, ge=0)
    commands_run_count: int = Field(default=0, ge=0)
    error: str | None = None
    usage: TurnUsage | None = None


class SummaryTurn(_Model):
    turn_id: str
    user: UserTurn
    agent: AgentTurn | None = None

    @property
    def status(self) -> str:
        return "pending" if self.agent is None else self.agent.status


class SessionSummary(_Model):
    turns: list[SummaryTurn] = Field(default_factory=list)


class HistoryTurn(_Model):
    turn_id: str
    user_message: str
    status: HistoryStatus
    files_read: list[str] = Field(default_factory=list)
    files_modified: list[str] = Field(default_factory=list)
    commands_run: list[str] = Field(default_factory=list)
    trace: Any = None
    error: str | None = None
    created_at: str
    updated_at: str


class SessionState(_Model):
    schema_version: Literal[1] = SCHEMA_VERSION
    session_id: str
    summary: SessionSummary = Field(default_factory=SessionSummary)
    history: list[HistoryTurn] = Field(default_factory=list)

    @property
    def turns(self) -> list[SummaryTurn]:
        return self.summary.turns


def usage_totals(state: SessionState) -> TurnUsage:
    """Fractal's totals: sums, with context_tokens the newest non-zero figure."""
    input_tokens = output_tokens = duration_ms = iterations = context_tokens = 0
    cost = 0.0
    for turn in state.turns:
        usage = turn.agent.usage if turn.agent is not None else None
        if usage is None:
            continue
        input_tokens += usage.input_tokens
        output_tokens += usage.output_tokens
        cost += usage.cost
        duration_ms += usage.duration_ms
        iterations += usage.iterations
        context_tokens = usage.context_tokens or context_tokens
    return TurnUsage(input_tokens=input_tokens, output_tokens=output_tokens, cost=cost, duration_ms=duration_ms,
                     iterations=iterations, context_tokens=context_tokens)


def last_measured_context(state: SessionState) -> tuple[int, int] | None:
    """(turn number from 1, context_tokens) of the newest turn that recorded a context size."""
    for index in range(len(state.turns) - 1, -1, -1):
        agent = state.turns[index].agent
        if agent is not None and agent.usage is not None and agent.usage.context_tokens:
            return index + 1, agent.usage.context_tokens
    return None


def agent_status(status: str) -> AgentStatus:
    """A turn outcome's status as the status Fractal records; a status it has no word for is an error
    (as `AgentTurn` itself rejects it), never written."""
    for known in AGENT_STATUSES:
        if status == known:
            return known
    raise ValueError(f"{status!r} is not a turn status Fractal records (one of {', '.join(AGENT_STATUSES)})")
