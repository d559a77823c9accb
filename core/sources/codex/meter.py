"""Codex's meter: what the next turn of a session will send.

The context in use now is measured: the input side of the newest `token_count`'s
`last_token_usage` (cached input is part of it), against the `model_context_window` Codex recorded
(258,400 for a 272,000-token model: it keeps 5% back). `total_token_usage` is cumulative and never
the context. The next turn sends that plus the draft, counted with o200k_base (the encoding of
OpenAI's current models) and labelled an estimate. A session with no `token_count` yet has nothing
measured: its fixed part is Codex's (about 61,300 characters in 0.171.0, captured from a resumed
turn: the tool list ~26,200, base instructions ~26,300, skills and multi-agent text ~6,700, the
environment ~600, the envelope ~1,500), estimated at four characters a token.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...config import MeterSettings
from ...meter import (
    CONFIGURED,
    COUNTED,
    MEASURED,
    SEND,
    DraftMeter,
    Measured,
    MeterResult,
    Part,
    TokenCounter,
)

ENCODING = "o200k_base"
FIXED_CHARS = 61_300      # a resumed turn's fixed request text before any history (Codex CLI 0.171.0)
CHARS_PER_TOKEN = 4
DEFAULT_MODEL = "gpt-5"


@dataclass(frozen=True, slots=True)
class ContextNow:
    """The measured context of a session, the window Codex recorded, and the model."""

    tokens: int | None      # None: no token_count recorded yet
    turn: int               # the turn (from 1) it was measured in
    window: int | None      # model_context_window as Codex recorded it
    model: str | None
    basis: str = "call"     # "compaction": Codex's estimate of the history a compaction left, before any call;
                            # "estimate": a fork Reprise wrote, before its first turn


class CodexMeter(DraftMeter):
    """The meter of one Codex session, with everything but the draft known."""

    def __init__(self, settings: MeterSettings, counter: TokenCounter, context: ContextNow, *,
                 model: str | None = None, via: str = SEND):
        super().__init__(settings, counter, model=model, recorded=(context.model, "the session's turn_context"),
                         default=(DEFAULT_MODEL, "default (no turn recorded yet)"), via=via)
        self.context = context

    def _context_part(self) -> Part:
        context = self.context
        if context.tokens is None:
            return Part("overhead", FIXED_CHARS // CHARS_PER_TOKEN, CONFIGURED, FIXED_CHARS,
                        note="nothing measured yet: Codex's fixed prompt (tools, base instructions, skills, "
                             "environment), about 61,300 characters, estimated")
        if context.basis == "estimate":
            return Part("measured", context.tokens, COUNTED,
                        note="an estimate: the measured context of the session this fork was trimmed from, minus "
                             f"what the fork leaves out, counted with {ENCODING}; measured again after its first turn")
        if context.basis == "compaction":
            return Part("measured", context.tokens, MEASURED,
                        note=f"the size of the history after the compaction in turn {context.turn}, as Codex "
                             "estimated it (total_tokens of its token_count); measured again at the next call")
        return Part("measured", context.tokens, MEASURED,
                    note=f"input tokens of the newest model call (turn {context.turn}, last_token_usage), "
                         "as Codex recorded them")

    def _window(self) -> tuple[int, str]:
        if self.context.window and self.model == (self.context.model or self.model):
            return self.context.window, "model_context_window, as Codex recorded it"
        return self.spec.input_budget, f"model table ({self.spec.pattern}): the input budget"

    def _result(self, message: str) -> MeterResult:
        draft = self.counter.count(message, ENCODING) if message else 0
        parts = (self._context_part(),
                 Part("message", draft, COUNTED, len(message), len(message),
                      note=f"the draft, estimated with {ENCODING}"))
        measured = Measured(self.context.turn, self.context.tokens) \
            if self.context.tokens is not None and self.context.basis != "estimate" else None
        window, window_source = self._window()
        return MeterResult(model=self.model, model_source=self.model_source, encoding=ENCODING, parts=parts,
                           window=window, warn_at=self.settings.warn, measured=measured, exact=False,
                           window_source=window_source, draft=draft, via=self.via)
