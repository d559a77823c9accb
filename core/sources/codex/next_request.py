"""What Codex's next request holds beyond its newest measured call, read from the rollout.

Codex 0.171.0 records every item it sends as a `response_item` (its tools as an `additional_tools`
item, its instructions as developer messages, the environment as a user message, each prompt,
reply, reasoning item, tool call and tool output), and sends them all again on the next turn, in
order, reasoning items included (their `summary` and `encrypted_content`: requests ask for
`reasoning.context: all_turns`). A model call's reply items are recorded first, then its
`token_usage_record`, then the tool outputs that follow (before the call's `token_count` event):
the newest call measured everything before its reply. A `compacted` record's
`replacement_history` is the whole history from then on (instructions and tools included); after
a manual `/compact` no call has measured it yet. `world_state` records which deferred tool
namespaces the model was told of: the interactive TUI adds `mcp__codex_tui` (a developer message
saying so), `codex exec` removes it again (another one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .fields import token_figures
from .records import COMPACTED, EVENT, RESPONSE_ITEM, Record, integer, kind_of, payload_of, text_of

WORLD_STATE = "world_state"
USAGE_RECORD = "token_usage_record"
# the items a model call outputs (the rest are inputs: prompts, Codex's context, tool outputs)
OUTPUT_TYPES = frozenset({"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call",
                          "tool_search_call", "image_generation_call"})


def is_output(item: dict[str, Any]) -> bool:
    return item.get("type") in OUTPUT_TYPES or (item.get("type") == "message" and item.get("role") == "assistant")


def is_fixed(item: dict[str, Any]) -> bool:
    """Codex's own part of a history: its tools, its developer instructions, the environment it injects."""
    if item.get("type") == "additional_tools" or item.get("role") in ("developer", "system"):
        return True
    return item.get("role") == "user" and text_of(item.get("content")).lstrip().startswith("<environment_context>")


@dataclass(frozen=True, slots=True)
class NextRequest:
    """The rollout's history as the next request will send it, split at the newest measured call."""

    measured: int | None                  # input tokens of the newest call since the last compaction
    reasoning_tokens: int                 # that call's reasoning output tokens (sent back as encrypted content)
    reply: tuple[dict[str, Any], ...]     # that call's output items: in the next request, not in its input
    since: tuple[dict[str, Any], ...]     # items recorded after it (tool outputs, an unanswered prompt)
    history: tuple[dict[str, Any], ...]   # with nothing measured: every item the next request sends again
    compacted: bool                       # a compaction replaced the history (and nothing measured it since)
    compaction_estimate: int | None       # Codex's own figure for a compacted history it did not record
    namespaces: frozenset[str]            # the deferred tool namespaces the model was last told of
    deferred_text: str | None             # the developer message an interactive turn recorded for them


class RequestFold:
    """Folds a rollout's records, in order, into its `NextRequest`."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self.boundary: int | None = None
        self.recorded_usage = False
        self.measured: int | None = None
        self.reasoning = 0
        self.compacted = False
        self.estimate: int | None = None
        self.namespaces: frozenset[str] = frozenset()
        self.deferred_text: str | None = None

    def feed(self, records: Iterable[Record]) -> None:
        for record in records:
            kind, inner = kind_of(record)
            payload = payload_of(record)
            if kind == RESPONSE_ITEM:
                self._item(payload)
            elif kind == COMPACTED:
                self._compacted(payload)
            elif kind == USAGE_RECORD:
                if self._call(payload.get("usage")):
                    self.recorded_usage = True
            elif kind == EVENT and inner == "token_count":
                info = payload.get("info")
                usage = info.get("last_token_usage") if isinstance(info, dict) else None
                if not self._call(usage, moves=not self.recorded_usage):
                    figures = token_figures(usage)
                    if figures is not None and self.compacted and self.boundary is None:
                        self.estimate = integer(usage.get("total_tokens")) if isinstance(usage, dict) else None
                self.recorded_usage = False
            elif kind == WORLD_STATE:
                self._world_state(payload)

    def _item(self, item: dict[str, Any]) -> None:
        self.items.append(item)
        if item.get("role") == "developer" and self.deferred_text is None:
            text = text_of(item.get("content"))
            if text.startswith(DEFERRED_HEADER):
                self.deferred_text = text

    def _compacted(self, payload: dict[str, Any]) -> None:
        history = payload.get("replacement_history")
        self.items = [item for item in history if isinstance(item, dict)] if isinstance(history, list) else []
        self.compacted = True
        self.boundary, self.measured, self.estimate, self.reasoning = None, None, None, 0
        self.recorded_usage = False

    def _call(self, usage: Any, *, moves: bool = True) -> bool:
        """A model call's usage: it measured everything before its reply (True), or it is no call (False)."""
        figures = token_figures(usage)
        if figures is None or figures[0] <= 0:
            return False
        if not moves:
            return True       # the call's token_count after its usage record: the record said it all
        self.boundary = len(self.items)
        self.measured = figures[0]
        self.reasoning = integer(usage.get("reasoning_output_tokens")) or 0 if isinstance(usage, dict) else 0
        self.compacted = False
        return True

    def _world_state(self, payload: dict[str, Any]) -> None:
        state = payload.get("state")
        if not isinstance(state, dict):
            return
        if payload.get("full") is True or "tools" in state:
            tools = state.get("tools")
            self.namespaces = frozenset(tools) if isinstance(tools, dict) else frozenset()

    def result(self) -> NextRequest:
        if self.boundary is None or self.measured is None:
            return NextRequest(None, 0, (), (), tuple(self.items), self.compacted,
                               self.estimate if self.compacted else None, self.namespaces, self.deferred_text)
        start = self.boundary
        while start > 0 and is_output(self.items[start - 1]):
            start -= 1
        return NextRequest(self.measured, self.reasoning, tuple(self.items[start:self.boundary]),
                           tuple(self.items[self.boundary:]), (), False, None, self.namespaces, self.deferred_text)


def next_request(records: Iterable[Record]) -> NextRequest:
    fold = RequestFold()
    fold.feed(records)
    return fold.result()


# What the interactive TUI (`codex resume`) sends beyond `codex exec` (Codex CLI 0.171.0, checked by
# tests/compat/codex/test_meter_compat.py): one deferred tool namespace, announced in a developer
# message when the model was not told of it yet; `codex exec` announces its removal when it was.
TUI_NAMESPACE = "mcp__codex_tui"
DEFERRED_HEADER = "<tools>\nDeferred tool namespaces:"
DEFERRED_TEXT = f"{DEFERRED_HEADER}\n- {TUI_NAMESPACE}\n</tools>"
REMOVED_TEXT = (f"<tools>\nRemoved deferred tool namespaces:\n- {TUI_NAMESPACE}\n"
                "No deferred tool namespaces remain.\n</tools>")
