"""What Fractal does to a history turn's `trace`: it validates it as predict-rlm's RunTrace
(schema of predict-rlm 0.7.0), drops keys that model does not know, and rejects the whole
session when a trace does not validate.

Reprise keeps traces as opaque JSON; this mirror is consulted only before a session is handed
to Fractal, to archive what Fractal's next save would lose. It is not on the listing path.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class _Traced(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built on first load

    def unknown_fields(self, where: str = "trace") -> list[str]:
        found = [f"{where}.{key}" for key in (self.model_extra or {})]
        for name in type(self).model_fields:
            value = getattr(self, name)
            items = value if isinstance(value, list) else [value]
            for index, item in enumerate(items):
                if isinstance(item, _Traced):
                    suffix = f"{name}[{index}]" if isinstance(value, list) else name
                    found.extend(item.unknown_fields(f"{where}.{suffix}"))
        return found


class TokenUsage(_Traced):
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    cache_hits: int = 0


class LMFinishMetadata(_Traced):
    finish_reason: str | None = None


class PredictCallDetail(_Traced):
    duration_ms: int
    usage: TokenUsage = Field(default_factory=TokenUsage)
    input: dict[str, Any] = Field(default_factory=dict)
    output: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    lm: LMFinishMetadata | None = None


class PredictCallGroup(_Traced):
    signature: str
    instructions: str | None = None
    model: str
    total_usage: TokenUsage = Field(default_factory=TokenUsage)
    calls: list[PredictCallDetail]


class ToolCall(_Traced):
    name: str
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None
    duration_ms: int


class LMUsage(_Traced):
    main: TokenUsage = Field(default_factory=TokenUsage)
    sub: TokenUsage = Field(default_factory=TokenUsage)


class IterationStep(_Traced):
    iteration: int
    reasoning: str
    code: str
    output: str
    untruncated_output: str
    error: bool = False
    duration_ms: int
    tool_calls: list[ToolCall] = Field(default_factory=list)
    predict_calls: list[PredictCallGroup] = Field(default_factory=list)
    lm: LMFinishMetadata | None = None
    usage: LMUsage = Field(default_factory=LMUsage)


class RunTrace(_Traced):
    status: Literal["in_progress", "completed", "max_iterations", "error"]
    model: str
    sub_model: str | None = None
    iterations: int
    max_iterations: int
    duration_ms: int
    usage: LMUsage = Field(default_factory=LMUsage)
    telemetry_ref: dict[str, Any] | None = None
    steps: list[IterationStep] = Field(default_factory=list)


def trace_losses(trace: Any) -> tuple[bool, list[str]]:
    """(Fractal rejects this trace and with it the whole session, keys Fractal would drop)."""
    if trace is None:
        return False, []
    try:
        parsed = RunTrace.model_validate(trace)
    except (ValidationError, RecursionError):
        return True, []
    return False, parsed.unknown_fields()
