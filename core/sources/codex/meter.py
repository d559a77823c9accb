"""Codex's meter: the next request a turn of a session will send, part by part.

After a model call (next_request.py reads the rollout):
- `measured`: the input side of the newest call (`last_token_usage.input_tokens`; cached input is
  part of it, never added), as Codex recorded it: its tools, instructions and the whole history then;
- `reply`: that call's output items, which the next request sends and the call did not: their text
  (a message's, a tool call's name and input, a reasoning item's summary) counted with o200k_base
  with `ITEM_FRAME` tokens an item, and the reasoning tokens Codex recorded for the call
  (`reasoning_output_tokens`: reasoning items go back as `encrypted_content`);
- `since`: what was recorded after it (a tool output after the last call, a prompt never answered);
- `client`: what the way the turn is sent adds (next_request.py: the interactive TUI announces its
  `mcp__codex_tui` tools once, `codex exec` announces their removal);
- `message`: the draft with its framing.
After a compaction that no call has measured yet (a `/compact` typed in the TUI), the kept history
(`replacement_history`) is counted instead: `fixed` (its tools, developer instructions and
environment) and `history` (the prompts kept and the summary). A compaction Codex recorded without
its history leaves only Codex's own figure, labelled estimated. Before any call, the items recorded
are counted the same way; a rollout without any (older versions) gets Codex's fixed prompt at four
characters a token. A fork Reprise wrote keeps its estimate until its first turn.

The window is the `model_context_window` Codex recorded for the model (a user's `[[meter.models]]`
entry wins; a model Codex's catalog knows gets 95% of its window; any other: unknown), and
`compacts_at` the total at which Codex compacts on its own (windows.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...meter import COUNTED, ESTIMATED, MEASURED, RESUME, SEND, Measured, MeterResult, Part, TokenCounter, user_spec
from ..agent_meter import ENCODING, AgentMeter, fixed_prompt
from .next_request import DEFERRED_TEXT, REMOVED_TEXT, TUI_NAMESPACE, NextRequest, is_fixed
from .records import text_of
from .windows import catalog_window, compacts_at

if TYPE_CHECKING:
    from ...config import MeterSettings

ITEM_FRAME = 4            # tokens of framing each item of a Responses request takes beyond its text
FIXED_CHARS = 61_300      # a resumed turn's fixed request text before any history (Codex CLI 0.171.0)
DEFAULT_MODEL = "gpt-6.2-sol"   # Codex CLI 0.171.0's default model


@dataclass(frozen=True, slots=True)
class ContextNow:
    """The measured context of a session, the window Codex recorded, and the model."""

    tokens: int | None      # None: no token_count recorded yet
    turn: int               # the turn (from 1) it was measured in
    window: int | None      # model_context_window as Codex recorded it
    model: str | None
    basis: str = "call"     # "compaction": Codex's estimate of the history a compaction left, before any call;
                            # "estimate": a fork Reprise wrote, before its first turn


@dataclass(frozen=True, slots=True)
class CodexLimits:
    """What sets Codex's auto-compaction: its config.toml and the command line Reprise runs it with."""

    config: dict[str, Any] = field(default_factory=dict)
    argv: tuple[str, ...] = ()


def item_text(item: dict[str, Any]) -> str:
    """The text of one request item as the model reads it (tools are counted one by one, apart)."""
    kind = item.get("type", "message")
    if kind == "message":
        return text_of(item.get("content"))
    if kind in ("function_call", "custom_tool_call"):
        body = item.get("arguments") if kind == "function_call" else item.get("input")
        return f"{item.get('name', '')}\n{body if isinstance(body, str) else ''}"
    if kind in ("function_call_output", "custom_tool_call_output"):
        output = item.get("output")
        if isinstance(output, dict):
            return str(output.get("content", ""))
        return text_of(output) if isinstance(output, list) else str(output or "")
    if kind == "reasoning":
        return text_of(item.get("summary"))
    if kind == "additional_tools":
        return ""
    return json.dumps({key: value for key, value in item.items() if key != "id"}, sort_keys=True)


class CodexMeter(AgentMeter):
    """The meter of one Codex session, with everything but the draft known."""

    def __init__(self, settings: MeterSettings, counter: TokenCounter, context: ContextNow,
                 request: NextRequest | None = None, *, model: str | None = None, via: str = SEND,
                 limits: CodexLimits | None = None):
        super().__init__(settings, counter, model=model, recorded=(context.model, "the session's turn_context"),
                         default=(DEFAULT_MODEL, "default (no turn recorded yet)"), via=via)
        self.context = context
        self.request = request
        self.limits = limits or CodexLimits()
        self._parts: tuple[Part, ...] | None = None

    # --- counting ----------------------------------------------------------------------------

    def _count(self, text: str) -> int:
        return self.counter.count(text, ENCODING) if text else 0

    def _tool_tokens(self, tool: Any) -> int:
        return self._count(json.dumps(tool, sort_keys=True, separators=(",", ":"))) + ITEM_FRAME

    def _items(self, items: Iterable[dict[str, Any]], reasoning_tokens: int = 0) -> tuple[int, int]:
        """(tokens, characters) of request items; `reasoning_tokens` stand for the encrypted reasoning."""
        tokens = chars = 0
        for item in items:
            text = item_text(item)
            tokens += self._count(text) + ITEM_FRAME
            chars += len(text)
            if item.get("type") == "additional_tools":
                tools = item.get("tools")
                tokens += sum(self._tool_tokens(tool) for tool in tools if isinstance(tool, dict)) \
                    if isinstance(tools, list) else 0
            if item.get("type") == "reasoning" and item.get("encrypted_content"):
                tokens += reasoning_tokens
                reasoning_tokens = 0   # one call's reasoning, however many items carry it
        return tokens, chars

    # --- the parts ---------------------------------------------------------------------------

    def _history_parts(self, request: NextRequest) -> tuple[Part, ...]:
        fixed = [item for item in request.history if is_fixed(item)]
        rest = [item for item in request.history if not is_fixed(item)]
        (fixed_tokens, fixed_chars), (rest_tokens, rest_chars) = self._items(fixed), self._items(rest)
        what = "the history the compaction kept (replacement_history), not measured by any call yet" \
            if request.compacted else "the items recorded so far, no call measured yet"
        setup = Part("fixed", fixed_tokens, COUNTED, fixed_chars,
                     note=f"Codex's tools, developer instructions and environment: {what}; counted with {ENCODING}")
        if not fixed and not request.compacted:   # a rollout written without them (a continuation): Codex adds its own
            setup = fixed_prompt(FIXED_CHARS, "none recorded: Codex adds its fixed prompt (tools, base instructions, "
                                              "skills, environment) when it resumes, about 61,300 characters, "
                                              "estimated")
        return (setup,
                Part("history", rest_tokens, COUNTED, rest_chars,
                     note=f"the prompts and replies in {what}; counted with {ENCODING}"))

    def _context_parts(self) -> tuple[Part, ...]:
        context, request = self.context, self.request
        if context.basis == "estimate" and context.tokens is not None:
            return (Part("measured", context.tokens, ESTIMATED,
                         note="an estimate: the measured context of the session this fork was trimmed from, minus "
                              f"what the fork leaves out, counted with {ENCODING}; measured again after its first "
                              "turn"),)
        if request is not None and request.measured is not None:
            reply_tokens, reply_chars = self._items(request.reply, request.reasoning_tokens)
            since_tokens, since_chars = self._items(request.since)
            return (Part("measured", request.measured, MEASURED,
                         note=f"input tokens of the newest model call (turn {context.turn}, last_token_usage), as "
                              "Codex recorded them: its tools, instructions and the history then"),
                    Part("reply", reply_tokens, COUNTED, reply_chars,
                         note=f"that call's reply, sent back next time: its text counted with {ENCODING}, and "
                              f"{request.reasoning_tokens:,} reasoning tokens as Codex recorded them"),
                    Part("since", since_tokens, COUNTED, since_chars,
                         note=f"what was recorded after that call (tool outputs), counted with {ENCODING}"))
        if request is not None and request.history:
            return self._history_parts(request)
        if request is not None and request.compaction_estimate is not None:
            return (Part("history", request.compaction_estimate, ESTIMATED,
                         note="Codex's own estimate of the history a compaction left (it recorded no history to "
                              "count); measured at the next call"),)
        if context.tokens is not None:
            basis = ESTIMATED if context.basis == "compaction" else MEASURED
            return (Part("measured", context.tokens, basis,
                         note=f"the newest context Codex recorded (turn {context.turn})"),)
        return (fixed_prompt(FIXED_CHARS, "nothing recorded yet: Codex's fixed prompt (tools, base instructions, "
                                          "skills, environment), about 61,300 characters, estimated"),)

    def _client_part(self) -> Part:
        request = self.request
        told = request is not None and TUI_NAMESPACE in request.namespaces
        if self.via == RESUME and not told:
            text = (request.deferred_text if request is not None else None) or DEFERRED_TEXT
            why = "the interactive TUI announces its own tools (mcp__codex_tui) in a developer message"
        elif self.via == SEND and told:
            text = REMOVED_TEXT
            why = "codex exec announces that the TUI's tools (mcp__codex_tui) are gone, in a developer message"
        else:
            return Part("client", 0, COUNTED, note=f"nothing: the model was already told of the tools {self.via} uses")
        return Part("client", self._count(text) + ITEM_FRAME, COUNTED, len(text),
                    note=f"{why}; counted with {ENCODING}")

    def _fixed_parts(self) -> tuple[Part, ...]:
        if self._parts is None:
            self._parts = (*self._context_parts(), self._client_part())
        return self._parts

    # --- the window --------------------------------------------------------------------------

    def _window(self) -> tuple[int | None, str]:
        spec = user_spec(self.model, self.settings.models)
        if spec is not None:
            return spec.input_budget, f"[[meter.models]] {spec.pattern}: the input budget"
        if self.context.window and self.model == (self.context.model or self.model):
            return self.context.window, "model_context_window, as Codex recorded it"
        known = catalog_window(self.model)
        if known is not None:
            return known, "Codex 0.171.0's catalog: 95% of the model's context window"
        return None, "unknown: Codex recorded no window for this model"

    def _result(self, message: str) -> MeterResult:
        draft = self._count(message) + ITEM_FRAME if message else 0
        parts = (*self._fixed_parts(),
                 Part("message", draft, COUNTED, len(message), len(message),
                      note=f"the draft as a user message, counted with {ENCODING} with {ITEM_FRAME} tokens of framing"))
        measured_tokens = self.request.measured if self.request is not None else None
        measured = Measured(self.context.turn, measured_tokens) \
            if measured_tokens is not None and self.context.basis != "estimate" else None
        window, window_source = self._window()
        limit, _ = compacts_at(self.limits.config, self.limits.argv, self.context.window, self.model)
        return self._agent_result(parts, draft=draft, measured=measured, window=window, window_source=window_source,
                                  compacts_at=limit)
