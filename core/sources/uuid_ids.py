"""Session ids that are UUIDs (Claude Code's, Codex's): lower-case hex in 8-4-4-4-12 groups."""

from __future__ import annotations

import re

from ..errors import InvalidIdError

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_UUID = re.compile(UUID)


def is_uuid(text: str) -> bool:
    """Whether `text` is a UUID as the agents write them."""
    return _UUID.fullmatch(text) is not None


def checked_uuid(text: str, agent: str) -> str:
    """`text`, when it is a session id of `agent`, whose ids are UUIDs; else InvalidIdError."""
    if not is_uuid(text):
        shown = text[:40].encode("unicode_escape").decode("ascii")
        raise InvalidIdError(f"{shown!r} is not a {agent} session id (a UUID).")
    return text
