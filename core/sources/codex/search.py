"""What a full-text search reads of a Codex rollout: its lines decoded by orjson where that gives
json's texts (`orjson_exact`, through `agent_json.loads_line`); the texts themselves come from the
neutral transcript (`core/sources/transcript_search.py`).
"""

from __future__ import annotations

from ..transcript_search import holds_float
from .fields import orjson_exact as listing_exact
from .records import RESPONSE_ITEM, SESSION_META, Record, payload_of
from .transcript import CALLS


def orjson_exact(record: Record) -> bool:
    """Whether orjson's value of a record gives json's search texts: a fork's ordinal as the listing
    reads it (what it inherits of its parent), and no float in a tool call's arguments, input or
    action (written into the text as JSON); every other text a search record holds is a string."""
    kind = record.get("type")
    if kind == SESSION_META:
        return listing_exact(record)
    if kind != RESPONSE_ITEM:
        return True
    payload = payload_of(record)
    if payload.get("type") not in CALLS:
        return True
    return not any(holds_float(payload.get(name)) for name in ("arguments", "input", "action"))
