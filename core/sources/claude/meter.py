"""Claude Code's meter: what the next turn of a session will send.

The context in use now is measured: the input, cache-creation and cache-read tokens of the newest
main-chain reply, or the `postTokens` of a compaction newer than it (Claude Code's own figures, in
the file). The next turn sends that plus the draft, whose tokens are an estimate: Claude's
tokenizer is not public, so the draft is counted with a bundled one and labelled so. A session
with no reply yet has nothing measured: its fixed part (system prompt, tools, environment) is
Claude Code's, about 49,300 characters in 2.1.332, estimated at four characters a token.
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
FIXED_CHARS = 49_300      # a resumed turn's fixed request text before any history (Claude Code 2.1.332)
CHARS_PER_TOKEN = 4
DEFAULT_MODEL = "claude"


@dataclass(frozen=True, slots=True)
class ContextNow:
    """The measured context of a session and where the figure comes from."""

    tokens: int | None      # None: no reply or compaction recorded yet
    turn: int               # the turn (from 1) whose reply or compaction it was measured at
    source: str             # "reply", "compaction", or "estimate" (a fork Reprise wrote, before its first turn)
    model: str | None


class ClaudeMeter(DraftMeter):
    """The meter of one Claude Code session, with everything but the draft known."""

    def __init__(self, settings: MeterSettings, counter: TokenCounter, context: ContextNow, *,
                 model: str | None = None, via: str = SEND):
        super().__init__(settings, counter, model=model, recorded=(context.model, "the session's newest reply"),
                         default=(DEFAULT_MODEL, "default (no reply recorded yet)"), via=via)
        self.context = context

    def _context_part(self) -> Part:
        context = self.context
        if context.tokens is None:
            return Part("overhead", FIXED_CHARS // CHARS_PER_TOKEN, CONFIGURED, FIXED_CHARS,
                        note="nothing measured yet: Claude Code's fixed prompt (system prompt, tools, environment), "
                             "about 49,300 characters, estimated")
        if context.source == "estimate":
            return Part("measured", context.tokens, COUNTED,
                        note="an estimate: the measured context of the session this fork was trimmed from, minus "
                             f"what the fork leaves out, counted with {ENCODING}; measured again after its first turn")
        what = ("the compaction's postTokens" if context.source == "compaction" else
                "input + cache creation + cache read of the newest reply")
        return Part("measured", context.tokens, MEASURED,
                    note=f"{what} (turn {context.turn}), as Claude Code recorded it")

    def _result(self, message: str) -> MeterResult:
        draft = self.counter.count(message, ENCODING) if message else 0
        parts = [self._context_part(),
                 Part("message", draft, COUNTED, len(message), len(message),
                      note=f"the draft, estimated with {ENCODING}: Claude's tokenizer is not public")]
        measured = Measured(self.context.turn, self.context.tokens) \
            if self.context.tokens is not None and self.context.source != "estimate" else None
        return MeterResult(model=self.model, model_source=self.model_source, encoding=ENCODING, parts=tuple(parts),
                           window=self.spec.input_budget, warn_at=self.settings.warn, measured=measured, exact=False,
                           window_source=f"model table ({self.spec.pattern}): the input budget", draft=draft,
                           via=self.via)
