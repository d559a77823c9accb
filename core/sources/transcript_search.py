"""The texts a full-text search looks in, for a session read as the neutral transcript (Claude Code's
main chain, a Codex rollout with what a fork inherits): one set per turn, numbered from 1 as the
transcript numbers them.

Per turn: the prompt (`user`), the reply (`response`), the thinking or reasoning summaries
(`thinking`), the tool calls' inputs and outputs (`tool`) and the error (`error`). Each is bounded
so that the index stays small (at most 5% of the store): a tool call's input and its output each
to their first `TOOL_CHARS`, any text to `SEARCH_CHARS`. A record so cut says so (`cut`), and a
search says that words only in the part left out are not found. Both ways of searching (the
index, the first search's scan) use these same records, so they find the same hits.
"""

from __future__ import annotations

from typing import Any

from ..transcript import Transcript
from .base import SearchRecord

SEARCH_CHARS = 100_000   # of one text; beyond it nothing is searched
TOOL_CHARS = 1_500       # of one tool call's input, and of its output (measured: the index stays under 5%)


def holds_float(value: Any) -> bool:
    """Whether a decoded JSON value holds a float at any depth: a tool call's input the transcript
    writes into its text with `json.dumps` is then decoded by json, not orjson (orjson reads an
    integer beyond 64 bits as a float, whose text differs). Walked without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            return True
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _tools_text(parts: list[str]) -> tuple[str, bool]:
    """The tool calls' inputs and outputs of one turn, each bounded; whether any was cut."""
    return "\n".join(part[:TOOL_CHARS] for part in parts), any(len(part) > TOOL_CHARS for part in parts)


def search_records(transcript: Transcript) -> list[SearchRecord]:
    found: list[SearchRecord] = []
    for number, turn in enumerate(transcript.turns, start=1):
        tools, tools_cut = _tools_text([part for call in turn.tool_calls for part in (call.input, call.result or "")
                                        if part])
        for field, text, cut in (("user", turn.user_message, False), ("response", turn.reply, False),
                                 ("thinking", turn.thinking, False), ("tool", tools, tools_cut),
                                 ("error", turn.error or "", False)):
            if text:
                found.append(SearchRecord(number, field, text[:SEARCH_CHARS], cut or len(text) > SEARCH_CHARS))
    return found
