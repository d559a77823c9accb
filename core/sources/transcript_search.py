"""The texts a full-text search looks in, for a session read as the neutral transcript (Claude Code's
main chain, a Codex rollout with what a fork inherits): one set per turn, numbered from 1 as the
transcript numbers them.

Per turn: the prompt (`user`), the reply (`response`), the thinking or reasoning summaries
(`thinking`), the tool calls' inputs and outputs (`tool`) and the error (`error`), each bounded so
that a turn with a huge tool output does not fill the index.
"""

from __future__ import annotations

from ..transcript import Transcript
from .base import SearchRecord

SEARCH_CHARS = 100_000   # of one text; a tool output beyond it is not searched


def search_records(transcript: Transcript) -> list[SearchRecord]:
    found: list[SearchRecord] = []
    for number, turn in enumerate(transcript.turns, start=1):
        tools = "\n".join(part for call in turn.tool_calls for part in (call.input, call.result or "") if part)
        for field, text in (("user", turn.user_message), ("response", turn.reply), ("thinking", turn.thinking),
                            ("tool", tools), ("error", turn.error or "")):
            if text:
                found.append(SearchRecord(number, field, text[:SEARCH_CHARS]))
    return found
