"""Whole-file Gemini CLI sessions: `session-<minute>-<id8>.json`, one JSON document
`{sessionId, projectHash, startTime, lastUpdated, messages, summary?, kind?, directories?}` written
whole again at every change (`JSON.stringify(conversation, null, 2)`) by clients before JSON lines
(April 2026). Gemini CLI 0.61.0 still lists and resumes them: its loader reads a file whose lines
never name the session as one document holding a `sessionId`, and a resume moves it to a `.jsonl`
beside it. Such a file is read whole every time it changes (there is nothing to read on from).
"""

from __future__ import annotations

from typing import Any

from ..agent_json import loads
from .lines import Chat, first_prompt_of

SUFFIX = ".json"


def legacy_chat(data: bytes) -> Chat | None:
    """The session a whole JSON document holds, as the client's fallback reads it; None when the
    bytes are not such a document (not JSON, not an object, no `sessionId` key): the client then
    finds no session in the file."""
    try:
        document = loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(document, dict) or "sessionId" not in document:
        return None
    listed = document.get("messages")
    messages = [message for message in listed if isinstance(message, dict)] if isinstance(listed, list) else []
    warnings = []
    if isinstance(listed, list) and len(messages) < len(listed):
        warnings.append(f"{len(listed) - len(messages)} of its messages are not JSON objects")
    elif listed is not None and not isinstance(listed, list):
        warnings.append("its `messages` is not a list")
    metadata = {key: value for key, value in document.items() if key != "messages"}
    first = next((text for message in messages if (text := first_prompt_of(message)) is not None), None)
    return Chat(session_id=_text(document, "sessionId"), project_hash=_text(document, "projectHash"),
                start_time=_text(document, "startTime"), last_updated=_text(document, "lastUpdated"),
                kind=_text(document, "kind"), summary=_text(document, "summary") or None, messages=messages,
                metadata=metadata, rewound=False, first_prompt=first or None,
                warnings=warnings, legacy=True, end=len(data))


def _text(document: dict[str, Any], key: str) -> str | None:
    value = document.get(key)
    return value if isinstance(value, str) else None
