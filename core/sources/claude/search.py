"""The texts a full-text search looks in, for one Claude Code session: each turn of its main chain.

Per turn (numbered from 1, as the transcript numbers them): the prompt (`user`), the reply
(`response`), the thinking (`thinking`), the tool calls' inputs and outputs (`tool`) and the
error (`error`), each bounded so that a turn with a huge tool output does not fill the index.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base import SearchRecord
from .records import Record
from .transcript import read_transcript

SEARCH_CHARS = 100_000   # of one text; a tool output beyond it is not searched


def search_records(records: Iterable[Record]) -> list[SearchRecord]:
    transcript, _ = read_transcript(records)
    found: list[SearchRecord] = []
    for number, turn in enumerate(transcript.turns, start=1):
        tools = "\n".join(part for call in turn.tool_calls for part in (call.input, call.result or "") if part)
        for field, text in (("user", turn.user_message), ("response", turn.reply), ("thinking", turn.thinking),
                            ("tool", tools), ("error", turn.error or "")):
            if text:
                found.append(SearchRecord(number, field, text[:SEARCH_CHARS]))
    return found
