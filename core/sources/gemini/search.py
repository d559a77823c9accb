"""What a full-text search reads of a Gemini CLI session: its lines merged as the client loads them
(`lines.py`, so a rewound part is not searched), decoded by orjson where that gives json's texts
(`orjson_exact`, through `agent_json.loads_line`); the texts themselves come from the neutral
transcript (`core/sources/transcript_search.py`). No line is passed over by the byte scan: a
`$set.messages` snapshot may be the only line holding a message.
"""

from __future__ import annotations

from typing import Any

from ..base import SearchRecord
from ..transcript_search import holds_float, search_records
from .fields import orjson_exact as listing_exact
from .lines import Chat, Record
from .transcript import read_transcript


def orjson_exact(record: Record) -> bool:
    """Whether orjson's value of a line gives json's search texts: the figures as the listing reads
    them, and no float in a tool call's arguments or result (written into the text as JSON), in the
    line's message or in any message of a snapshot it carries."""
    if not listing_exact(record):
        return False
    update = record.get("$set")
    listed = update.get("messages") if isinstance(update, dict) else record.get("messages")
    messages = [record] if isinstance(record.get("id"), str) else listed if isinstance(listed, list) else []
    return not any(_calls_hold_float(message) for message in messages if isinstance(message, dict))


def _calls_hold_float(message: dict[str, Any]) -> bool:
    calls = message.get("toolCalls")
    return isinstance(calls, list) and any(
        isinstance(call, dict) and (holds_float(call.get("args")) or holds_float(call.get("result"))) for call in calls)


def chat_search_records(chat: Chat, session_id: str) -> list[SearchRecord]:
    """The texts a search looks in, turn by turn, of a session read whole."""
    transcript, _ = read_transcript(chat, session_id)
    return search_records(transcript)
