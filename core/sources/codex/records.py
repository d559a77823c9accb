"""A Codex rollout as records: `{timestamp, ordinal, type, payload}` JSON lines (`ordinal` is
new; old rollouts lack it), read tolerantly with the same line reader as Claude Code's files
(`claude/records.parse_lines`: complete lines only, a truncated last line left for the next read,
bad lines skipped with a warning naming the line, unknown types kept), and the few accessors every
reader of a record needs: its kind (`type`, and `payload.type` for `response_item` and
`event_msg`) and its payload.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..claude.records import Parsed, Record, parse_lines

SESSION_META = "session_meta"
TURN_CONTEXT = "turn_context"
RESPONSE_ITEM = "response_item"
EVENT = "event_msg"
COMPACTED = "compacted"
KNOWN_TYPES = frozenset({SESSION_META, TURN_CONTEXT, RESPONSE_ITEM, EVENT, COMPACTED, "token_usage_record",
                         "world_state"})

__all__ = ["COMPACTED", "EVENT", "KNOWN_TYPES", "RESPONSE_ITEM", "SESSION_META", "TURN_CONTEXT", "Parsed",
           "Record", "event_item", "integer", "kind_of", "parse_rollout", "payload_of", "prompt_of", "text_of"]


def parse_rollout(chunk: bytes, base_offset: int = 0, *, first_line: int = 1,
                  counted: Collection[str] | None = None) -> Parsed:
    """The records of the complete lines of `chunk` (which starts at `base_offset` in the file);
    `counted`: as `parse_lines` takes it (a listing's read)."""
    return parse_lines(chunk, base_offset, first_line=first_line, skim=False, counted=counted)


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
    if inner == "user_message":
        message = payload.get("message")
        return message if isinstance(message, str) else None
    if inner == "item_completed":
        kind, item = event_item(payload)
        if kind == "UserMessage":
            return text_of(item.get("content"))
    return None


def integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
