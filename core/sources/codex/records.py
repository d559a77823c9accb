"""A Codex rollout as records: `{timestamp, ordinal, type, payload}` JSON lines (`ordinal` is
new; old rollouts lack it), read tolerantly with the line reader of every JSON-lines store
(`jsonl_lines.parse_lines`: complete lines only, a truncated last line left for the next read,
bad lines skipped with a warning naming the line, unknown types kept), and the few accessors every
reader of a record needs: its kind (`type`, and `payload.type` for `response_item` and
`event_msg`) and its payload. A listing's read stubs the lines its fold never looks into (`skimmed`)
and decodes every other line for only what the fold reads (`listing_records`); a line that decode
does not take is decoded whole.
"""

from __future__ import annotations

import re
from typing import Any

from ..agent_json import Exact
from ..jsonl_lines import Parsed, Record, parse_lines

SESSION_META = "session_meta"
TURN_CONTEXT = "turn_context"
RESPONSE_ITEM = "response_item"
EVENT = "event_msg"
COMPACTED = "compacted"
KNOWN_TYPES = frozenset({SESSION_META, TURN_CONTEXT, RESPONSE_ITEM, EVENT, COMPACTED, "token_usage_record",
                         "world_state"})

# The events the listing fold reads (`fields.ListingFold._event`); an item_completed only when it is a UserMessage.
LISTED_EVENTS = frozenset({b"task_started", b"user_message", b"item_completed", b"task_complete", b"turn_aborted",
                           b"aborted", b"error", b"token_count"})
_SKIMMED_HEAD = re.compile(
    rb'\{"timestamp":"([0-9T:.Z+-]{1,40})",(?:"ordinal":[0-9]{1,18},)?'
    rb'"type":"(response_item|token_usage_record|world_state|event_msg)","payload":\{'
    rb'(?:"type":"([A-Za-z0-9_]{1,64})"(?:,"thread_id":"[0-9A-Za-z-]{0,64}","turn_id":"[0-9A-Za-z-]{0,64}",'
    rb'"item":\{"type":"([A-Za-z0-9_]{1,64})")?)?')
_RECORD_HEAD = b'{"timestamp":"'

__all__ = ["COMPACTED", "EVENT", "KNOWN_TYPES", "RESPONSE_ITEM", "SESSION_META", "TURN_CONTEXT", "Parsed",
           "Record", "event_item", "integer", "kind_of", "parse_rollout", "payload_of", "prompt_in", "prompt_of",
           "text_of"]


def parse_rollout(chunk: bytes, base_offset: int = 0, *, first_line: int = 1,
                  exact: Exact | None = None, skim: bool = False, listed: bool = False) -> Parsed:
    """The records of the complete lines of `chunk` (which starts at `base_offset` in the file);
    `exact`: as `parse_lines` takes it, `skim`: the lines a listing never looks into are stubs
    (`skimmed`), and `listed`: every other line is decoded for only what the listing fold reads, a
    `listing_records.Line` (the reader's `decode`), all three for a listing's read."""
    if listed:
        from .listing_records import listing_record  # msgspec: imported by a read, not by a warm listing

        return parse_lines(chunk, base_offset, first_line=first_line, exact=exact,
                           skimmer=skimmed if skim else None, decode=listing_record)
    return parse_lines(chunk, base_offset, first_line=first_line, exact=exact, skimmer=skimmed if skim else None)


def skimmed(chunk: bytes, start: int, end: int) -> Record | None:
    """A stub (its timestamp, type and event type) for a line the listing fold never looks into (the
    model's items, usage records, world state, the events it does not count: most of a rollout's
    bytes), told from its head as Codex writes it; None to parse the line whole. The line must also
    end as such a record ends and hold no other record's head (two lines joined by a cut write are
    parsed, and refused, whole)."""
    head = _SKIMMED_HEAD.match(chunk, start, end)
    if head is None:
        return None
    stamp, kind, inner, item = head.groups()
    if kind == b"event_msg" and (inner is None or inner in LISTED_EVENTS and (
            inner != b"item_completed" or item in (None, b"UserMessage"))):
        return None   # an event the fold reads, or one whose type is not where Codex writes it
    if not chunk.endswith(b"}}", start, end) or chunk.find(_RECORD_HEAD, head.end(), end) != -1:
        return None
    stub: Record = {"timestamp": stamp.decode(), "type": kind.decode()}
    if inner is not None:
        stub["payload"] = {"type": inner.decode()}
    return stub


def payload_of(record: Record) -> dict[str, Any]:
    payload = record.get("payload")
    return payload if isinstance(payload, dict) else {}


def kind_of(record: Record) -> tuple[str, str]:
    """(the record's type, its payload's type for `response_item` and `event_msg`, else "")."""
    kind = str(record.get("type"))
    if kind in (RESPONSE_ITEM, EVENT):
        inner = payload_of(record).get("type")
        return kind, inner if isinstance(inner, str) else ""
    return kind, ""


def text_of(content: Any) -> str:
    """The text of a message's content: its `input_text`/`output_text`/`text` parts joined, or the
    content itself when it is a string."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [part.get("text") for part in content if isinstance(part, dict)
             and part.get("type") in ("input_text", "output_text", "text", "Text", "summary_text")]
    return "\n".join(part for part in parts if isinstance(part, str) and part)


def event_item(payload: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(the item's type, the item) of an `item_completed` event (0.171.0 writes its prompts, replies
    and commands so: `UserMessage`, `AgentMessage`, `CommandExecution`, `ContextCompaction`)."""
    item = payload.get("item")
    if not isinstance(item, dict) or not isinstance(item.get("type"), str):
        return "", {}
    return item["type"], item


def prompt_of(inner: str, payload: dict[str, Any]) -> str | None:
    """The prompt an event carries: a `user_message` event (older versions) or an `item_completed`
    `UserMessage` (0.171.0); never the `response_item` user messages, which also hold the context
    Codex injects."""
    return prompt_in(inner, payload.get("message"), payload.get("item"))


def prompt_in(inner: str, message: Any, item: Any) -> str | None:
    """`prompt_of` by the payload's `message` and `item` (each as decoded, or None)."""
    if inner == "user_message":
        return message if isinstance(message, str) else None
    if inner == "item_completed" and isinstance(item, dict) and item.get("type") == "UserMessage":
        return text_of(item.get("content"))
    return None


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
