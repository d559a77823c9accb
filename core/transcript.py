"""The neutral read model of one session, the same for every agent's store.

A source (`core/sources/`) turns its own file format into a `Transcript`; everything above
the sources (catalog, search, service, the CLI and the TUI) reads only this. Facts carry
their provenance: `observed` when the agent's host recorded what happened (a file it read, a
command it ran), `reported` when it is the model's own claim (Fractal's `files_modified`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["pending", "succeeded", "failed", "max_iterations", "interrupted"]
STATUSES: tuple[Status, ...] = ("pending", "succeeded", "failed", "max_iterations", "interrupted")
Provenance = Literal["observed", "reported"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token and cost figures as the agent recorded them; None where the source has no such figure."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost: float | None = None
    context_tokens: int | None = None
    duration_ms: int | None = None
    iterations: int | None = None   # the agent's model calls in the turn, where it counts them


@dataclass(frozen=True, slots=True)
class FileTouch:
    path: str
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class Command:
    command: str
    provenance: Provenance


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    input: str
    result: str | None = None
    is_error: bool = False
    shell: str | None = None   # the command line, when the call ran one through the agent's shell tool


@dataclass(slots=True)
class Turn:
    """One user message and what the agent did with it."""

    turn_id: str
    user_message: str
    status: Status
    reply: str = ""
    error: str | None = None
    usage: Usage | None = None
    started_at: str | None = None
    ended_at: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    files_read: list[FileTouch] = field(default_factory=list)
    files_modified: list[FileTouch] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)
    detailed: bool = True   # False when the store keeps only the message and the reply of this turn
    thinking: str = ""      # the model's own reasoning, where the store keeps it (shown folded, apart from the reply)
    # (files read, files changed, commands run) as the agent counted them, for a turn whose lists
    # the store no longer keeps (Fractal's older turns); None where the lists above are the record
    fact_counts: tuple[int, int, int] | None = None


@dataclass(frozen=True, slots=True)
class Compaction:
    """The agent compacted its context before turn `before_turn` (0-based index into `turns`)."""

    before_turn: int
    at: str | None = None
    tokens_after: int | None = None
    tokens_before: int | None = None


@dataclass(slots=True)
class Transcript:
    source: str
    session_id: str
    turns: list[Turn] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # what a reader should know (history kept, skipped records)
    recorded_cost: float | None = None   # the session's cost as the agent recorded it whole (Claude Code's cost-state)
    # The agent keeps a history of its turns apart from the conversation it sends its model (Fractal's
    # summary and history): the History tab shows that history whole. False: the file is one conversation.
    history_apart: bool = False

    def totals(self) -> Usage:
        """Sums over the turns, with `context_tokens` the newest recorded figure."""
        input_tokens = output_tokens = cache_read = cache_creation = duration = iterations = 0
        cost: float | None = None
        context: int | None = None
        for turn in self.turns:
            usage = turn.usage
            if usage is None:
                continue
            input_tokens += usage.input_tokens
            output_tokens += usage.output_tokens
            cache_read += usage.cache_read_tokens
            cache_creation += usage.cache_creation_tokens
            duration += usage.duration_ms or 0
            iterations += usage.iterations or 0
            if usage.cost is not None:
                cost = (cost or 0.0) + usage.cost
            context = usage.context_tokens or context
        if cost is None:
            cost = self.recorded_cost
        return Usage(input_tokens, output_tokens, cache_read, cache_creation, cost, context, duration, iterations)
