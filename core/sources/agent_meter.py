"""What the meters of agents that record the context they measured (Claude Code, Codex) share: the
tokenizer they count with (the models' own are not public), the agent's fixed prompt as a configured
estimate before anything is measured, and the result they give for a draft (`AgentMeter`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..meter import CONFIGURED, DraftMeter, Measured, MeterResult, Part

ENCODING = "o200k_base"
CHARS_PER_TOKEN = 4


def fixed_prompt(chars: int, note: str) -> Part:
    """The agent's fixed prompt (system prompt, tools, environment) of about `chars` characters, at
    CHARS_PER_TOKEN: what a session nothing measured yet sends before any history."""
    return Part("overhead", chars // CHARS_PER_TOKEN, CONFIGURED, chars, note=note)


class AgentMeter(DraftMeter):
    """A `DraftMeter` of an agent's session counted with ENCODING against the agent's measured context."""

    def _agent_result(self, parts: Sequence[Part], *, draft: int, measured: Measured | None, window: int | None,
                      window_source: str, compacts_at: int | None, calibration: float | None = None) -> MeterResult:
        """The next turn's meter of these parts (the draft's last) against this window."""
        return MeterResult(model=self.model, model_source=self.model_source, encoding=ENCODING, parts=tuple(parts),
                           window=window, warn_at=self.settings.warn, measured=measured, exact=False,
                           window_source=window_source, draft=draft, via=self.via, compacts_at=compacts_at,
                           calibration=calibration)
