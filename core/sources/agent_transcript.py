"""What the transcripts of agents' JSON-lines sessions (Claude Code, Codex) read alike: a record's
time stamp, and a tool's input or output cut to TEXT_CHARS with its size said.
"""

from __future__ import annotations

from typing import Any

TEXT_CHARS = 20_000   # a tool input or output kept in the transcript; the rest is cut, with its size said


def cut(text: str, *, brackets: str = "()") -> str:
    """`text`, or its first TEXT_CHARS characters and how many more there were (in `brackets`)."""
    if len(text) <= TEXT_CHARS:
        return text
    return f"{text[:TEXT_CHARS]}… {brackets[0]}{len(text) - TEXT_CHARS:,} more characters{brackets[1]}"


def stamp_of(record: dict[str, Any]) -> str | None:
    """When the agent wrote a record (its `timestamp`), when it says."""
    stamp = record.get("timestamp")
    return stamp if isinstance(stamp, str) else None
