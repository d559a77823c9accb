"""The texts a full-text search looks in, for one Claude Code session: each turn of its main chain,
as `core/sources/transcript_search.py` takes them from the neutral transcript; its lines decoded
by orjson where that gives json's texts (`orjson_exact`, through `agent_json.loads_line`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..base import SearchRecord
from ..transcript_search import SEARCH_CHARS, holds_float
from ..transcript_search import search_records as transcript_texts
from .messages import blocks
from .records import Record
from .transcript import read_transcript

__all__ = ["SEARCH_CHARS", "orjson_exact", "search_records"]


def orjson_exact(record: Record) -> bool:
    """Whether orjson's value of a record gives json's search texts: no float in a tool call's input
    (written into the text as JSON); every other text a search record holds is a string."""
    if record.get("type") != "assistant":
        return True
    return not any(block.get("type") == "tool_use" and holds_float(block.get("input")) for block in blocks(record))


def search_records(records: Iterable[Record]) -> list[SearchRecord]:
    transcript, _ = read_transcript(records)
    return transcript_texts(transcript)
